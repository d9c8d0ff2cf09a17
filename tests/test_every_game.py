"""Every native game (and one pgx game) through every command, as a user meets them: the CPU preset's first
iteration with its default evaluation opponents, `azjax eval` with the baseline agents and the trained agent (with
and without search), a piped `azjax play`, `export` and `check`. Sizes are shrunk (a tiny network, 2 simulations,
4 games, 2 evaluation games) but not the game, so a program whose memory grows with the game's actions or length
(Brandub's onestep asked for 209 GB) fails here first. Each game's commands run in one test, in order."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from azjax import checkpointing, cli, evaluation, games
from azjax.agent import load_agent

pytestmark = pytest.mark.filterwarnings("ignore:Some donated buffers were not usable")

SHRUNK = {
    "network.num_blocks": 1,
    "network.num_channels": 8,
    "network.value_hidden": 8,
    "search.num_simulations": 2,
    "search.max_num_considered_actions": 2,
    "selfplay.num_games": 4,
    "selfplay.num_steps": 4,
    "train.batch_size": 8,
    "train.num_sgd_steps": 1,
    "train.warmup_steps": 1,
    "train.replay_capacity": 64,
}

NATIVE = ["tic_tac_toe", "connect_four", "gomoku9", "gomoku", "othello6", "othello", "brandub", "brandub_document"]
PGX = "pgx:connect_four"
ONE_PLAYER = ["sliding_puzzle", "sliding_puzzle4"]  # their commands (episodes) run in tests/test_one_player.py
CHANCE = ["pig"]  # its commands (its own opponents: random and perfect) run in tests/games/test_pig.py
# The heaviest runs of the suite: -m slow runs them all (Brandub first: the most actions, 1176, and the longest
# games, 200 moves, whose evaluation broke). The default suite runs each command on tic-tac-toe's run in the other
# modules (tests/test_cli.py, test_evaluation.py, test_play.py, test_own_network.py, test_your_own_game.py).


def test_the_matrix_names_every_native_game():
    """Every game azjax.games registers (other tests register games of their own: not those)."""
    source = Path(games.__file__).read_text()
    assert sorted([*NATIVE, *ONE_PLAYER, *CHANCE]) == sorted(re.findall(r'^register\("(\w+)"', source, re.MULTILINE))


def run_cli(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `azjax ARGS` in this process, with `stdin` as standard input."""
    import sys

    out, err = io.StringIO(), io.StringIO()
    previous = sys.stdin
    sys.stdin = io.StringIO(stdin) if stdin is not None else previous
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main([str(a) for a in args])
            except SystemExit as exit_:
                code = exit_.code
    finally:
        sys.stdin = previous
    return code, out.getvalue(), err.getvalue()


def assert_ran(code: int, out: str, err: str) -> None:
    assert code == 0, f"exit {code}\n{out[-3000:]}\n{err[-3000:]}"
    assert "Traceback" not in out + err, err[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted([*NATIVE, PGX], key=lambda name: name != "brandub"))
def test_every_command_runs_on_every_game(name, tmp_path):
    if name.startswith("pgx:"):
        pytest.importorskip("pgx")
    game = games.make(name)
    run, export = tmp_path / "run", tmp_path / "export"
    overrides = [arg for field, value in SHRUNK.items() for arg in (f"--{field}", str(value))]

    # The CPU preset's first iteration, then its evaluation against the default opponents (2 games each).
    assert_ran(*run_cli("train", "--game", name, "--out", run, "--iterations", "1", "--eval-every", "1",
                        "--eval-games", "2", "--no-progress", "--no-compile-cache", "--devices", "1", *overrides))
    record = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
    for opponent in evaluation.default_opponents(game):
        assert 0.0 <= record["eval/" + opponent.replace(":", "")] <= 1.0, opponent
    assert checkpointing.CheckpointManager(run).steps() == [1]

    # The trained agent with search against onestep, and without search against UCT (and the perfect player where
    # the game has one): every baseline agent but random, which the evaluation above played.
    third = ["perfect"] if name == "tic_tac_toe" else []
    code, out, err = run_cli("eval", run, "onestep", "--games", "2", "--devices", "1", "--no-compile-cache")
    assert_ran(code, out, err)
    assert "Elo" in out
    assert_ran(*run_cli("eval", f"greedy:{run}", "mcts:2", *third, "--games", "2", "--devices", "1",
                        "--no-compile-cache"))

    # A piped game: the agent moves first, then the person quits.
    code, out, err = run_cli("play", run, "--first", "agent", "--no-compile-cache", "--seed", "0", stdin="quit\n")
    assert_ran(code, out, err)
    assert f"{run} plays " in out, out[-2000:]

    assert_ran(*run_cli("export", run, export))
    assert load_agent(export).game.name == game.name

    code, out, err = run_cli("check", name, "--games", "8")
    assert_ran(code, out, err)
