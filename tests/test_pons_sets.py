"""Pascal Pons's benchmark sets: read from his files, labelled move by move by azjax's solver (resuming where a
labelling stopped, his scores checked against it), shipped as they are labelled, and judged on by
`azjax eval --positions --position-set pons`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from azjax import cli
from azjax.solver import connect_four_sets as sets
from azjax.solver import positions

# Positions of his end-easy and middle-easy files (cheap to label), with his scores.
END = [("2252576253462244111563365343671351441", -1), ("7422341735647741166133573473242566", 1)]
MIDDLE = [("5554224333234511764415115", 4), ("52753311433677442422121", 8)]


def _source(tmp_path, rows_by_stratum):
    source = tmp_path / "source"
    source.mkdir()
    for name, rows in rows_by_stratum.items():
        (source / sets.PONS_FILES[name]).write_text("".join(f"{moves} {score}\n" for moves, score in rows))
    return source


def _quiet(_):
    return None


def test_labelling_writes_his_positions_with_every_moves_outcome(tmp_path):
    source = _source(tmp_path, {"end-easy": END, "middle-easy": MIDDLE})
    done = sets.label_pons(source, tmp_path / "out", strata=("middle-easy", "end-easy"), log=_quiet)
    assert done == {"middle-easy": True, "end-easy": True}
    assert sets.pons_strata(tmp_path / "out") == ("middle-easy", "end-easy")
    moves, scores, outcomes = sets.read(tmp_path / "out" / "end-easy.txt")
    assert [sets.moves_text(line) for line in moves] == [m for m, _ in END]  # his order
    assert scores.tolist() == [s for _, s in END]
    assert (outcomes.max(axis=1) == np.sign(scores)).all()
    solver = sets.c4.Solver()
    for line, row in zip(moves, outcomes, strict=True):
        assert row.tolist() == solver.move_scores(line, weak=True).tolist()
    assert not list((tmp_path / "out").glob("*.partial"))
    labelled = positions.load_connect_four_sets(tmp_path / "out", ("middle-easy", "end-easy"))
    assert labelled.strata == ("middle-easy", "end-easy") and labelled.num_positions == 4


def test_labelling_resumes_from_what_a_stopped_one_kept(tmp_path):
    """A `.partial` file's positions are taken as labelled: a made-up label there (true: .....--) is what the set
    gets, while the other position is labelled afresh; a kept label that contradicts his score is refused."""
    source = _source(tmp_path, {"end-easy": END})
    out = tmp_path / "out"
    out.mkdir()
    (out / "end-easy.partial").write_text("0 ......-\n")
    sets.label_pons(source, out, strata=("end-easy",), log=_quiet)
    _, _, outcomes = sets.read(out / "end-easy.txt")
    assert outcomes[0].tolist() == [sets.c4.ILLEGAL] * 6 + [-1]
    assert outcomes[1].tolist() == sets.c4.Solver().move_scores(sets.parse_moves(END[1][0]), weak=True).tolist()
    (out / "end-easy.txt").unlink()
    (out / "end-easy.partial").write_text("0 ......+\n")  # a win where he says the mover loses
    with pytest.raises(ValueError, match=f"position {END[0][0]} has Pons's score -1"):
        sets.label_pons(source, out, strata=("end-easy",), log=_quiet)


def test_few_stone_positions_take_their_outcomes_from_their_childrens(tmp_path):
    """Below `leaf_stones` a position's outcome is the best of its children's negated, not one search: with the
    threshold two stones past his middle-easy position, its label comes from searches two moves on, and matches
    the direct one."""
    moves = sets.parse_moves(MIDDLE[0][0])
    source = _source(tmp_path, {"middle-easy": [MIDDLE[0]]})
    calls = []
    sets.label_pons(source, tmp_path / "out", strata=("middle-easy",), log=calls.append,
                    leaf_stones=len(moves) + 2)
    _, _, outcomes = sets.read(tmp_path / "out" / "middle-easy.txt")
    assert outcomes[0].tolist() == sets.c4.Solver().move_scores(moves, weak=True).tolist()
    assert any(f"of {len(moves) + 2} stones" in line for line in calls)  # searched two moves on
    assert not any(f"of {len(moves) + 1} stones" in line for line in calls)
    assert not (tmp_path / "out" / "middle-easy.values").exists()  # gone with the .partial once the set is done


def test_a_stopped_labelling_keeps_its_solved_outcomes_and_their_mirror_images(tmp_path):
    """The `.values` file is what the next labelling starts from: a made-up outcome there for the mirror image of
    the position after a losing move is what that column gets (the true label has a loss there), and a malformed
    line is named; a line cut off while it was written is dropped."""
    moves = sets.parse_moves(END[1][0])  # his score 1: the mover wins
    true = sets.c4.Solver().move_scores(moves, weak=True)
    column = int(np.flatnonzero(true == -1)[0])
    mirrored = "".join(str(7 - m) for m in (*moves, column))
    source = _source(tmp_path, {"end-easy": [END[1]]})
    out = tmp_path / "out"
    out.mkdir()
    # the mover after the column loses: a win for him; then a line cut off by a stopped labelling, dropped
    (out / "end-easy.values").write_text(f"{mirrored} -\n2252")
    labelled = sets.label_pons(source, out, strata=("end-easy",), log=_quiet)
    assert labelled == {"end-easy": True}
    _, _, outcomes = sets.read(out / "end-easy.txt")
    expected = true.copy()
    expected[column] = 1
    assert outcomes[0].tolist() == expected.tolist()
    (out / "end-easy.values").write_text(f"{mirrored} -\n2252")
    assert len(sets._Outcomes(out / "end-easy.values", leaf_stones=4).known) == 1
    assert (out / "end-easy.values").read_text() == f"{mirrored} -\n"  # appending goes on from a whole line
    (out / "end-easy.txt").unlink()
    (out / "end-easy.values").write_text("2252 x\n")
    with pytest.raises(ValueError, match=r"end-easy\.values, line 1: not 'moves outcome'"):
        sets.label_pons(source, out, strata=("end-easy",), log=_quiet)


def test_his_score_disagreeing_with_the_solver_is_refused_by_position(tmp_path):
    source = _source(tmp_path, {"end-easy": [(END[0][0], 1)]})  # his score is -1: the mover loses
    with pytest.raises(ValueError, match=f"position {END[0][0]} has Pons's score 1"):
        sets.label_pons(source, tmp_path / "out", strata=("end-easy",), log=_quiet)


def test_a_malformed_or_missing_file_names_itself(tmp_path):
    source = _source(tmp_path, {"end-easy": [("2252x", 1)]})
    with pytest.raises(ValueError, match="Test_L3_R1, line 1"):
        sets.read_pons(source / "Test_L3_R1")
    with pytest.raises(ValueError, match="no such file"):
        sets.read_pons(source / "Test_L1_R1")


def test_the_command_line_given_an_empty_folder_says_what_it_takes_in_one_line(tmp_path, capsys):
    assert sets.main(["--pons", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert "error:" in captured.err and "--pons takes the folder of Pascal Pons's files" in captured.err


def test_the_shipped_pons_sets_agree_with_his_scores():
    strata = sets.pons_strata()
    assert strata == sets.STRATA, f"Pons's six sets are not all shipped in {sets.PONS_DIR}: only {strata}"
    assert not list(sets.PONS_DIR.glob("*.partial")) + list(sets.PONS_DIR.glob("*.values"))  # nothing half-done
    labelled = positions.load("connect_four", "pons")
    assert labelled.strata == strata and labelled.num_positions == 1000 * len(strata)
    assert (np.sign(labelled.scores) == labelled.outcomes).all()
    stones = np.count_nonzero(np.asarray(labelled.states.board), axis=1)
    for index, name in enumerate(strata):  # his stages: begin <= 14 stones, middle 15-28, end > 28
        chosen = stones[labelled.stratum == index]
        stage = name.split("-")[0]
        assert {"begin": chosen.max() <= 14, "middle": 15 <= chosen.min() <= chosen.max() <= 28,
                "end": chosen.min() > 28}[stage]


def test_an_unknown_set_is_named_with_those_there_are():
    with pytest.raises(ValueError, match="no set of labelled positions named 'bogus'; it has pons"):
        positions.load("connect_four", "bogus")
    assert positions.set_names("connect_four") == ["pons"] and positions.set_names("tic_tac_toe") == []


def test_eval_judges_on_the_pons_sets(tmp_path, capsys):
    path = tmp_path / "judged.json"
    assert cli.main(["eval", "--positions", "--position-set", "pons", "onestep", "--game", "connect_four",
                     "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "of the set pons" in out
    judged = json.loads(path.read_text())
    assert judged["position_set"] == "pons"
    report = judged["positions"]["onestep"]
    for name in sets.pons_strata():
        assert 0.0 <= report[f"optimal_move_rate/{name}"] <= 1.0


def test_eval_judges_some_strata_only(tmp_path, capsys):
    path = tmp_path / "judged.json"
    assert cli.main(["eval", "onestep", "--positions", "--position-set", "pons", "--strata", "end-easy",
                     "begin-hard", "--game", "connect_four", "--json", str(path)]) == 0
    assert "judged on 2000 solved positions of the set pons (begin-hard, end-easy)" in capsys.readouterr().out
    judged = json.loads(path.read_text())
    assert judged["strata"] == ["begin-hard", "end-easy"]
    report = judged["positions"]["onestep"]
    assert {"optimal_move_rate/begin-hard", "optimal_move_rate/end-easy"} <= set(report)
    assert not any(key.endswith("medium") or key.endswith("begin-easy") for key in report)


@pytest.mark.parametrize("arguments, message", [
    (["--position-set", "pons", "onestep", "random"], "give --positions too"),
    (["--positions", "--position-set", "bogus", "onestep"], "--position-set: connect_four has no set"),
    (["onestep", "random", "--strata", "begin-hard"], "--strata names the strata that --positions judges"),
    (["onestep", "--positions", "--strata", "begin-hardest"], "--strata: no stratum named 'begin-hardest'; the "
                                                               "strata are begin-easy"),
])
def test_eval_refuses_a_set_without_positions_or_an_unknown_one(arguments, message, capsys):
    assert cli.main(["eval", "--game", "connect_four", *arguments]) == 2
    assert message in capsys.readouterr().err


def test_the_shipped_end_game_labels_match_a_plain_minimax():
    """His end-easy positions, labelled by azjax's solver, against the tests' own plain-Python minimax."""
    from test_connect_four_solver import _grid, _reference_move_scores

    if "end-easy" not in sets.pons_strata():
        pytest.skip("Pons's end-easy set is not labelled yet")
    moves, scores, outcomes = sets.read(sets.PONS_DIR / "end-easy.txt")
    assert len(moves) >= 40
    for line, score, row in zip(moves[:40], scores[:40], outcomes[:40], strict=True):
        expected = _reference_move_scores(_grid(line), len(line), {})
        assert row.tolist() == [sets.c4.ILLEGAL if s is None else int(np.sign(s)) for s in expected]
        assert score == max(s for s in expected if s is not None)  # his exact score, too
