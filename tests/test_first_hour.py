"""A new user's mistakes, every subcommand: each gets one line on stderr that names what is wrong and what to do,
exit status 2 (1 for a failed check), and no traceback. Unknown names, misspellings, missing files and
directories, wrong types and ranges, a missing optional package, interrupted and damaged runs, runs of another
game or version. One TINY run is trained for the module; nothing else compiles (each mistake is caught first)."""

from __future__ import annotations

import json
import re
import shutil
import sys

import pytest
from tiny import cli_args, run_cli

from azjax import checkpointing
from azjax.manifest import write_manifest

pytestmark = [pytest.mark.usefixtures("persistent_compile_cache"),
              pytest.mark.filterwarnings("ignore:Some donated buffers were not usable")]


@pytest.fixture(scope="module")
def place(tmp_path_factory, tiny_overrides):
    """A directory with a TINY tic-tac-toe run (RUN), a damaged copy, an interrupted one (config.json only), one
    written by a newer azjax, a file, a bad JSON config, and a folder my_game/ that shadows a module of that
    name."""
    root = tmp_path_factory.mktemp("first_hour")
    args = cli_args(tiny_overrides)
    # 2 iterations: the program test_cli.py and test_memory.py compile, from the session's compilation cache.
    code, _, err = run_cli(["train", "--out", root / "run", "--iterations", "2", "--eval-every", "0",
                            "--no-progress", "--no-compile-cache", *args])
    assert code == 0, err
    step = str(checkpointing.latest_iteration(root / "run"))
    damaged = shutil.copytree(root / "run", root / "damaged")
    (damaged / "checkpoints" / step / "meta" / "metadata").write_text("{not json")
    interrupted = root / "interrupted"
    interrupted.mkdir()
    shutil.copy(root / "run" / "config.json", interrupted / "config.json")
    newer = shutil.copytree(root / "run", root / "newer")
    meta_path = newer / "checkpoints" / step / "meta" / "metadata"
    meta = json.loads(meta_path.read_text())
    meta["version"] = 999
    meta_path.write_text(json.dumps(meta))
    write_manifest(newer / "checkpoints" / step)  # a consistent checkpoint, of a future format
    (root / "afile").write_text("not a directory\n")
    (root / "bad.json").write_text("{not json")
    (root / "my_game").mkdir()  # not hex5: another test module imports the example hex5 in this process
    return root


# (argv with {root} for the module's directory, exit status, a fragment of the one line).
MISTAKES = [
    # train
    ("train --game nosuch", 2, "unknown game 'nosuch'; choose one of"),
    ("train --game tictactoe", 2, "unknown game 'tictactoe'"),
    ("train --game pgx:nosuch", 2, "unknown pgx environment 'nosuch'"),
    ("train --seconds -5", 2, "--seconds must be a finite number > 0"),
    ("train --seconds nan", 2, "--seconds must be a finite number > 0"),
    ("train --iterations many", 2, "argument --iterations: invalid int value: 'many'"),
    ("train --preset tpu", 2, "invalid choice: 'tpu'"),
    ("train --config {root}/no-such.json", 2, "no such file"),
    ("train --config {root}/bad.json", 2, "not valid JSON"),
    ("train --out {root}/afile", 2, "is a file, not a run directory"),
    ("train --search.num_simulatons 8", 2, "unknown option --search.num_simulatons (did you mean "
                                           "--search.num_simulations?)"),
    ("train --search.num_simulation 8", 2, "unknown option --search.num_simulation"),
    ("train --init-from {root}/no-such", 2, "is no run directory, export or shipped agent"),
    ("train --init-from pretrained:nosuch", 2, "no trained agent ships with azjax for nosuch"),
    ("train --init-from {root}/run --network.num_channels 999", 2, "--network.num_channels 8"),
    ("eval pretrained:nosuch random", 2, "no trained agent ships with azjax for nosuch"),
    ("train --iteration 3", 2, "unknown option --iteration (did you mean --iterations?)"),
    ("train --network.num_blocks -1", 2, "network.num_blocks must be a whole number >= 1"),
    ("train --search.num_simulations abc", 2, "search.num_simulations must be an int, got 'abc'"),
    ("train --selfplay.keep_unfinished maybe", 2, "selfplay.keep_unfinished must be a bool"),
    ("train --eval-games 3", 2, "--eval-games must be even and >= 2"),
    ("train --eval-every -1", 2, "--eval-every must be >= 0"),
    ("train --eval-opponents bogus", 2, "'bogus' is not a baseline"),
    ("train --eval-opponents mcts:0", 2, "not a whole number of simulations"),
    ("train --eval-opponents perfect --game othello6", 2, "out of reach for othello6"),
    ("train --checkpoint-every 0", 2, "--checkpoint-every and --keep must be >= 1"),
    ("train --game nosuchmodule:make_it", 2, "no module named 'nosuchmodule'"),
    ("train --game my_game:make_my_game", 2, "my_game is found as the folder"),
    ("train --out {root}/run --game connect_four", 2, "is a checkpoint of another game"),
    ("train --out {root}/run --network.num_channels 16", 2, "network.num_channels: 8 -> 16"),
    ("train --out {root}/newer", 2, "written by a newer azjax"),
    ("train --out {root}/damaged", 2, "damaged"),
    # eval
    ("eval {root}/nope perfect", 2, "nope does not exist; pass a training run's directory"),
    ("eval runs/my-run perfect", 2, "runs/my-run does not exist"),
    ("eval random", 2, "give at least two agents"),
    ("eval random onestep --games 3", 2, "--games must be even and >= 2"),
    ("eval random bogus", 2, "cannot read agent 'bogus'"),
    ("eval random mcts:0", 2, "not a whole number of simulations"),
    ("eval random mcts:lots", 2, "not a whole number of simulations"),
    ("eval random onestep --game nosuch", 2, "unknown game 'nosuch'"),
    ("eval {root}/run random --game connect_four", 2, "was trained on tic_tac_toe, not connect_four"),
    ("eval random perfect --game connect_four", 2, "give --opening-moves 10"),
    ("eval random perfect --game othello6", 2, "out of reach for othello6"),
    ("eval random onestep --opening-moves -1", 2, "--opening-moves must be >= 0"),
    ("eval random onestep --simulations 0", 2, "--simulations must be >= 1"),
    ("eval random onestep --search-policy uct", 2, "invalid choice: 'uct'"),
    ("eval greedy: random", 2, "no run directory given"),
    ("eval --positions random --game othello6", 2, "othello6 has no labelled positions"),
    ("eval {root}/damaged random", 2, "damaged"),
    ("eval {root}/interrupted random", 2, "no checkpoint"),
    ("eval {root}/afile random", 2, "afile"),
    ("eval random onestep --gmaes 4", 2, "unknown option --gmaes (did you mean --games?)"),
    # play
    ("play {root}/nope", 2, "nope does not exist; pass a training run's directory"),
    ("play bogus", 2, "cannot read agent 'bogus'"),
    ("play --game nosuch", 2, "unknown game 'nosuch'"),
    ("play random --simulations 0", 2, "--simulations must be >= 1"),
    ("play perfect --game connect_four", 2, "give --opening-moves 10"),
    ("play --opening-moves -1", 2, "--opening-moves must be >= 0"),
    ("play --first me", 2, "invalid choice: 'me'"),
    ("play {root}/newer", 2, "written by a newer azjax"),
    # export
    ("export {root}/nope {root}/out", 2, "does not exist or is not a directory"),
    ("export {root}/run {root}/out --iteration 99", 2, "no checkpoint of iteration 99"),
    ("export {root}/run {root}/afile", 2, "is a file"),
    ("export {root}/interrupted {root}/out", 2, "no checkpoint"),
    ("export {root}/run", 2, "the following arguments are required: OUT"),
    # check
    ("check nosuch", 2, "unknown game 'nosuch'"),
    ("check my_game:make_my_game", 2, "my_game is found as the folder"),
    ("check nomodule:make_it", 2, "no module named 'nomodule'"),
    ("check tic_tac_toe --positions nomodule:POSITIONS", 2, "no module named 'nomodule'"),
    ("check tic_tac_toe --games 0", 2, "--games must be >= 2"),
    ("check", 2, "the following arguments are required: GAME"),
    # the command itself
    ("frob", 2, "invalid choice: 'frob'"),
]


@pytest.mark.parametrize(("argv", "status", "fragment"), MISTAKES, ids=[m[0] for m in MISTAKES])
def test_a_mistake_is_one_line_naming_the_fix(place, monkeypatch, argv, status, fragment):
    monkeypatch.chdir(place)
    code, out, err = run_cli(argv.format(root=place).split())
    lines = err.strip().splitlines()
    assert code == status, (code, out[-2000:], err[-2000:])
    assert "Traceback" not in out + err
    assert len(lines) == 1, err
    assert fragment in lines[0], lines[0]
    assert lines[0].startswith(f"azjax {argv.split()[0]}: error: ") or argv == "frob", lines[0]


def test_the_catalogue_holds_forty_mistakes_across_the_subcommands():
    commands = {argv.split()[0] for argv, _, _ in MISTAKES}
    assert len(MISTAKES) >= 40 and {"train", "eval", "play", "export", "check"} <= commands


@pytest.mark.parametrize("argv", ["train --game pgx:go_9x9 --iterations 1", "check pgx:go_9x9",
                                  "eval random onestep --game pgx:go_9x9"])
def test_a_missing_optional_package_is_one_line(place, monkeypatch, argv):
    """Without pgx installed (hidden here), a pgx game is one line with the install command."""
    monkeypatch.chdir(place)
    monkeypatch.setitem(sys.modules, "pgx", None)  # `import pgx` raises ImportError
    code, out, err = run_cli(argv.split())
    assert code == 2 and "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "pip install 'azjax[pgx]'" in lines[0], err


def test_nothing_a_mistake_touches_is_written(place, monkeypatch):
    """The run, the damaged and the interrupted directories are as they were after their mistakes."""
    monkeypatch.chdir(place)
    before = {path: path.stat().st_mtime_ns for path in place.rglob("*") if path.is_file()}
    for argv, _, _ in MISTAKES:
        if argv.startswith(("train --out", "export")):
            run_cli(argv.format(root=place).split())
    after = {path: path.stat().st_mtime_ns for path in place.rglob("*") if path.is_file()}
    assert after == before
    assert not (place / "out").exists()


def test_an_iteration_without_sgd_says_why(tiny_overrides, tmp_path):
    """Iterations too short for any game to end take no SGD step: the run says so and why, and its last line
    shows no made-up loss (pgx:go_9x9's first iteration printed 'loss 0.000')."""
    overrides = {**tiny_overrides, "selfplay.num_steps": 2}  # no tic-tac-toe game ends within 2 moves
    args = cli_args(overrides)
    code, out, err = run_cli(["train", "--out", tmp_path / "run", "--iterations", "2", "--eval-every", "0",
                              "--no-progress", "--no-compile-cache", *args])
    assert code == 0, err
    notes = [line for line in out.splitlines() if "took no SGD step" in line]
    assert len(notes) == 1 and re.match(r"iteration 1 took no SGD step: the replay holds \d+ positions of finished "
                                        r"games, fewer than a batch of 32; \d+ positions wait", notes[0]), notes
    assert "Compiling the training iteration" in out
    done = next(line for line in out.splitlines() if line.startswith("Done"))
    assert "no SGD step taken" in done and "loss" not in done
