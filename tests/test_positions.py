"""Labelled positions: the shipped Connect Four sets (checked against an independent reference and regenerated),
tic-tac-toe's positions, judging agents on them, and clear errors for damaged set files."""

from __future__ import annotations

import shutil

import jax
import numpy as np
import pytest
from test_connect_four_solver import _grid, _reference_move_scores

from azjax import agent_specs, bots, evaluation, games
from azjax.solver import connect_four as c4
from azjax.solver import connect_four_sets as sets
from azjax.solver import positions


@pytest.fixture(scope="module")
def labelled() -> positions.LabelledPositions:
    return positions.load("connect_four")


def test_the_shipped_sets_hold_1000_positions_per_stratum(labelled):
    assert labelled.strata == sets.STRATA
    assert np.bincount(labelled.stratum).tolist() == [1000] * 6
    assert not np.asarray(labelled.states.terminated).any()
    assert labelled.optimal_actions.any(axis=1).all()
    stones = np.count_nonzero(np.asarray(labelled.states.board), axis=1)
    for index, name in enumerate(labelled.strata):
        stage, level = name.split("-")
        chosen = labelled.stratum == index
        low, high = sets.STAGES[stage]
        assert low <= stones[chosen].min() and stones[chosen].max() <= high
        left = [c4.moves_left(int(s), int(n)) for s, n in zip(labelled.scores[chosen], stones[chosen], strict=True)]
        assert sets.DIFFICULTIES[level][0] <= min(left) and max(left) <= sets.DIFFICULTIES[level][1]
    # The exact scores agree with the outcomes; the positions are distinct.
    assert (np.sign(labelled.scores) == labelled.outcomes).all()
    boards = np.asarray(labelled.states.board)
    assert len(np.unique(boards, axis=0)) == labelled.num_positions


def test_action_outcomes_hold_only_the_contract_values(labelled):
    assert set(np.unique(labelled.action_outcomes).tolist()) == {positions.ILLEGAL, -1, 0, 1}
    legal = np.asarray(labelled.states.legal_action_mask)
    assert ((labelled.action_outcomes != positions.ILLEGAL) == legal).all()


def test_a_full_column_is_no_mistake(labelled):
    """A position whose legal moves are all equally good cannot be erred in, whatever columns are full."""
    legal = np.asarray(labelled.states.legal_action_mask)
    all_optimal = ~np.any(legal & ~labelled.optimal_actions, axis=1)
    full_and_all_optimal = all_optimal & ~legal.all(axis=1)
    assert full_and_all_optimal.sum() > 100
    assert not labelled.can_err[full_and_all_optimal].any()
    assert labelled.can_err.sum() == np.sum(~all_optimal)


def test_end_game_labels_match_exhaustive_minimax(labelled):
    rows = np.flatnonzero(labelled.stratum == sets.STRATA.index("end-easy"))[:60]
    moves, _, _ = sets.read(sets.DATA_DIR / "end-easy.txt")
    assert len(rows) == 60
    for row, line in zip(rows, moves[:60], strict=True):
        expected = _reference_move_scores(_grid(line), len(line), {})
        outcomes = [positions.ILLEGAL if s is None else int(np.sign(s)) for s in expected]
        assert labelled.action_outcomes[row].tolist() == outcomes
        assert labelled.scores[row] == max(s for s in expected if s is not None)


def test_regenerating_gives_the_shipped_files(tmp_path):
    """The first positions of every set, regenerated from the seed, byte for byte (a set's first k positions do
    not depend on its size)."""
    generated = sets.generate(seed=0, per_stratum=2, processes=1, chunk=8, log=lambda _: None)
    sets.write(generated, tmp_path, seed=0)
    assert len(sets.STRATA) == 6
    for name in sets.STRATA:
        shipped = (sets.DATA_DIR / f"{name}.txt").read_text().splitlines()
        fresh = (tmp_path / f"{name}.txt").read_text().splitlines()
        body = [line for line in fresh if not line.startswith("#")]
        assert body == [line for line in shipped if not line.startswith("#")][:2]


def test_a_random_agent_keeps_the_outcome_in_about_60_percent(labelled):
    legal = labelled.action_outcomes != positions.ILLEGAL
    expected = labelled.optimal_actions.sum(axis=1) / legal.sum(axis=1)  # its chance in each position
    for stage in ("begin", "middle", "end"):
        chosen = np.char.startswith(np.array(labelled.strata)[labelled.stratum], stage)
        assert 0.45 < expected[chosen].mean() < 0.75, stage
    can_err = labelled.can_err.mean()
    assert 0.3 < can_err < 0.8
    report = evaluation.judge_bot(jax.random.key(0), bots.random_bot(), labelled)
    assert report.moves["all"].rate == pytest.approx(expected.mean(), abs=0.02)
    assert report.values is None  # the random agent has no values


def test_the_perfect_player_is_always_right(labelled):
    later = labelled.only(["middle-easy", "middle-medium", "end-easy"])
    small = later.take(np.arange(0, later.num_positions, 10))
    report = evaluation.judge_bot(jax.random.key(0), agent_specs.make_bot("perfect", games.make("connect_four")), small,
                                  batch_size=128)
    assert report.moves["all"].hits == report.moves["all"].total == small.num_positions == 300
    assert report.values["all"].hits == 300


def test_judge_counts_per_stratum_with_intervals():
    game = games.make("connect_four")
    labelled = positions.LabelledPositions(
        states=positions.states_from_moves(game, [[3], [3, 3], [0]]),
        action_outcomes=np.array([[-1, 0, 1, 1, 1, 0, -1], [1] * 7, [-1, -1, -1, 0, -1, -1, -1]], np.int8),
        stratum=np.array([0, 0, 1], np.int32),
        strata=("a", "b"),
    )
    assert labelled.can_err.tolist() == [True, False, True]
    report = positions.judge(labelled, np.array([2, 0, 1]), np.array([0.9, 0.0, -0.2]))
    assert (report.moves["a"].hits, report.moves["a"].total) == (2, 2)
    assert (report.moves["b"].hits, report.moves["b"].total) == (0, 1)
    assert (report.moves_can_err["all"].hits, report.moves_can_err["all"].total) == (1, 2)
    assert (report.values["all"].hits, report.values["all"].total) == (2, 3)  # 0.0 calls a won position a draw
    low, high = report.moves["all"].interval
    assert low < 2 / 3 < high
    flat = report.to_dict("eval/")
    assert flat["eval/optimal_move_rate"] == pytest.approx(2 / 3)
    assert flat["eval/optimal_move_rate/b"] == 0.0
    assert "b" in report.format()


def test_only_keeps_the_named_strata_and_judges_them_alike(labelled):
    chosen = labelled.only(["end-easy", "begin-hard"])
    assert chosen.strata == ("begin-hard", "end-easy")  # the set's order, not the request's
    rows = np.flatnonzero(np.isin(labelled.stratum, [sets.STRATA.index("begin-hard"), sets.STRATA.index("end-easy")]))
    assert chosen.num_positions == len(rows) == 2000
    assert (np.asarray(chosen.states.board) == np.asarray(labelled.states.board)[rows]).all()
    assert (chosen.action_outcomes == labelled.action_outcomes[rows]).all()
    assert (chosen.scores == labelled.scores[rows]).all()
    assert [chosen.strata[index] for index in chosen.stratum] == [labelled.strata[index] for index in
                                                                  labelled.stratum[rows]]
    actions = np.random.default_rng(0).integers(0, 7, labelled.num_positions)
    whole, part = positions.judge(labelled, actions), positions.judge(chosen, actions[rows])
    for name in chosen.strata:
        assert part.moves[name] == whole.moves[name] and part.moves_can_err[name] == whole.moves_can_err[name]
    assert part.moves["all"].total == 2000
    alone = labelled.only(["middle-medium"])
    assert alone.strata == ("middle-medium",) and set(alone.stratum.tolist()) == {0}


def test_take_keeps_each_position_with_its_labels(labelled):
    rows = np.array([5999, 0, 2500])
    taken = labelled.take(rows)
    assert taken.strata == labelled.strata and taken.num_positions == 3
    assert (np.asarray(taken.states.board) == np.asarray(labelled.states.board)[rows]).all()
    assert (taken.action_outcomes == labelled.action_outcomes[rows]).all()
    assert taken.stratum.tolist() == labelled.stratum[rows].tolist() == [5, 0, 2]
    assert (taken.scores == labelled.scores[rows]).all()


@pytest.mark.parametrize("rows, message", [
    (np.array([0, 6000]), r"rows must lie in \[0, 6000\)"),
    (np.array([-1]), r"rows must lie in \[0, 6000\)"),
    (np.array([True, False]), "rows must be a 1-D array of position indices"),
    (np.zeros((2, 2), np.int32), "rows must be a 1-D array of position indices"),
])
def test_take_refuses_rows_that_are_not_positions(labelled, rows, message):
    with pytest.raises(ValueError, match=message):
        labelled.take(rows)


@pytest.mark.parametrize("names, message", [
    (["begin-hard", "bogus"], "no stratum named 'bogus'; the strata are begin-easy, begin-medium, begin-hard"),
    ([], "no stratum named given"),
])
def test_only_names_the_strata_there_are(labelled, names, message):
    with pytest.raises(ValueError, match=message):
        labelled.only(names)


def test_value_accuracy_leaves_out_positions_without_an_estimate():
    """A NaN value is no estimate: not a guess of a draw (the drawn position 1 would count as a hit), and not in
    the total."""
    game = games.make("connect_four")
    labelled = positions.LabelledPositions(
        states=positions.states_from_moves(game, [[3], [3, 3], [0]]),
        action_outcomes=np.array([[-1, 0, 1, 1, 1, 0, -1], [0] * 7, [-1, -1, -1, 0, -1, -1, -1]], np.int8),
        stratum=np.zeros(3, np.int32),
        strata=("all",),
    )
    values = np.array([0.9, np.nan, np.nan])
    assert np.asarray(positions.value_hits(labelled, values)).tolist() == [True, False, False]
    report = positions.judge(labelled, np.array([2, 0, 3]), values)
    assert (report.values["all"].hits, report.values["all"].total) == (1, 1)


def test_tic_tac_toe_positions_are_every_reachable_position():
    labelled = positions.load("tic_tac_toe")
    assert labelled.num_positions == 4520 and labelled.strata == ("all",)
    assert set(np.unique(labelled.outcomes)) == {-1, 0, 1}
    assert positions.load("gomoku9") is None and not positions.has_positions("gomoku9")


@pytest.mark.parametrize("damage, message", [
    ("missing", "the file is missing"),
    ("truncated", "it is truncated"),
    ("format", "not a file of format"),
    ("line", "line 6 is not"),
    ("game", "does not fit the game"),
])
def test_a_damaged_set_file_names_itself_and_the_command(tmp_path, damage, message):
    shutil.copytree(sets.DATA_DIR, tmp_path / "sets")
    path = tmp_path / "sets" / "middle-easy.txt"
    lines = path.read_text().splitlines()
    if damage == "missing":
        path.unlink()
    elif damage == "truncated":
        path.write_text("\n".join(lines[:-10]) + "\n")
    elif damage == "format":
        path.write_text("\n".join(["# some other format", *lines[1:]]) + "\n")
    elif damage == "line":
        lines[5] = "12x4 3 +++++++"
        path.write_text("\n".join(lines) + "\n")
    else:  # a position whose legal columns differ from the file's
        moves, score, outcomes = lines[5].split()
        column = next(k for k, char in enumerate(outcomes) if char != ".")
        lines[5] = f"{moves} {score} {outcomes[:column]}.{outcomes[column + 1:]}"
        path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=message) as error:
        positions.load_connect_four_sets(tmp_path / "sets", sets.STRATA)
    assert "middle-easy.txt" in str(error.value) and sets.REGENERATE in str(error.value)
