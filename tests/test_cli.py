"""`azjax train` end to end on a TINY config: the run directory, resuming, `load_agent`, and argument errors.

One 2-iteration run is trained per module; tests that change a run work on a copy of it. The training iteration
is compiled once per session (see `persistent_compile_cache` in conftest.py).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import checkpointing, cli, games, rundir
from azjax import config as config_lib
from azjax.agent import load_agent
from azjax.cli import common, evaluate

pytestmark = [
    pytest.mark.usefixtures("persistent_compile_cache"),
    pytest.mark.filterwarnings("ignore:Some donated buffers were not usable"),
]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `azjax ARGV`; argparse's SystemExit becomes the exit code."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exit_:
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def tiny_args(tiny_overrides) -> list[str]:
    """The TINY settings as command-line options (the number of iterations is left to each call)."""
    args = []
    for key, value in tiny_overrides.items():
        if key != "num_iterations":
            args += [f"--{key}", str(value)]
    return args


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_args):
    """(exit code, stdout, stderr, run directory) of `azjax train --iterations 2` with TINY settings."""
    run_dir = tmp_path_factory.mktemp("cli") / "run"
    code, out, err = run_cli(["train", "--out", str(run_dir), "--iterations", "2", "--no-progress", *tiny_args])
    return code, out, err, run_dir


def read_records(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]


def test_train_exits_0_and_writes_the_run_directory(trained):
    code, out, err, run_dir = trained
    assert code == 0, err
    for name in ("config.json", "metrics.jsonl", "learning_curves.png"):
        assert (run_dir / name).is_file(), name
    for name in ("checkpoints", "tensorboard"):
        assert (run_dir / name).is_dir(), name
    assert (run_dir / "learning_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert any(p.name.startswith("events") for p in (run_dir / "tensorboard").rglob("*"))
    assert str(run_dir) in out


# Two timed runs; the default suite keeps --seconds in tests/test_checkpointing.py (the budget drives the schedule)
# and tests/test_interrupts.py.
@pytest.mark.slow
def test_seconds_alone_end_a_new_run_and_a_resumed_run_keeps_its_iterations(tmp_path, tiny_config, monkeypatch):
    """`--seconds` without `--iterations`: a new run trains for the time, past its config's num_iterations; a resumed
    run keeps its own iterations, which can end the session first, and the user hears it. The loop's clock is a
    fake one that advances a second per reading, so the test does not depend on the machine's speed."""
    from azjax import trainer

    monkeypatch.setattr(trainer, "_clock", itertools.count(start=0.0, step=1.0).__next__)
    rundir.write_config(tmp_path, config_lib.with_overrides(tiny_config, {"num_iterations": 1}))
    run = tmp_path / "run"
    code, out, err = run_cli(["train", "--config", str(tmp_path / "config.json"), "--out", str(run),
                              "--seconds", "20", "--eval-every", "0", "--no-progress"])
    assert code == 0, err
    assert f"Training {tiny_config.game} into {run} (20 s)" in out
    assert "Stopped (seconds)" in out and "ended the run before" not in out
    records = read_records(run)
    assert len(records) >= 2  # past the config's one iteration, on the time alone
    assert rundir.read_config(run).num_iterations == config_lib.TIME_BUDGET_ITERATIONS
    assert records[-1]["learning_rate"] <= records[0]["learning_rate"]

    # --iterations with --seconds: whichever ends first (here the iterations, long before 1000 s).
    code, out, err = run_cli(["train", "--config", str(tmp_path / "config.json"), "--out", str(tmp_path / "capped"),
                              "--iterations", "1", "--seconds", "1000", "--eval-every", "0", "--no-progress"])
    assert code == 0 and "Done (iterations): iteration 1" in out and "ended the run before" not in out, err

    # A run of 2 iterations that its --seconds stopped after one, resumed with --seconds alone: its own iterations
    # stay and end the session before the time, and the user hears how to train on.
    short = tmp_path / "short"
    code, out, err = run_cli(["train", "--config", str(tmp_path / "config.json"), "--out", str(short),
                              "--iterations", "2", "--seconds", "1", "--eval-every", "0", "--no-progress"])
    assert code == 0 and "Stopped (seconds): iteration 1" in out, (out, err)
    code, out, err = run_cli(["train", "--out", str(short), "--seconds", "1000", "--eval-every", "0", "--no-progress"])
    assert code == 0 and "Done (iterations): iteration 2" in out, (out, err)
    assert "Its 2 iterations (num_iterations: the resumed run's, not --seconds) ended the run before its 1000 s" in out


def test_run_directory_holds_the_config_metrics_and_last_checkpoint(trained, tiny_config):
    _, _, _, run_dir = trained
    assert rundir.read_config(run_dir) == tiny_config
    records = read_records(run_dir)
    assert [r["iteration"] for r in records] == [1, 2]
    for record in records:
        assert math.isfinite(record["loss"]) and record["positions_added"] > 0
    assert checkpointing.latest_iteration(run_dir) == 2


@pytest.fixture(scope="module")
def agent(trained):
    assert trained[0] == 0, trained[2]
    return load_agent(trained[3])


@pytest.fixture(scope="module")
def positions():
    """Tic-tac-toe positions [4] with 9, 7, 3 and 1 legal moves."""
    game = games.make("tic_tac_toe")
    boards = ["...\n...\n...", "X..\n.O.\n...", "XOX\nOXO\n...", "XOX\nXOO\nO.X"]
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *[game.from_ascii(b) for b in boards])


def test_loaded_agent_gives_policy_logits_and_values(agent, positions):
    assert agent.game.name == "tic_tac_toe"
    logits, value = agent.policy_value(positions)
    assert logits.shape == (4, 9) and value.shape == (4,)
    assert logits.dtype == jnp.float32 and value.dtype == jnp.float32
    assert np.all(np.abs(np.asarray(value)) <= 1)
    legal = np.asarray(positions.legal_action_mask)
    assert np.all(np.asarray(logits)[legal] > np.asarray(logits)[~legal].max())  # illegal moves masked out


@pytest.mark.parametrize("search", [True, False])
def test_loaded_agent_plays_legal_moves(agent, positions, search):
    legal = np.asarray(positions.legal_action_mask)
    for seed in range(3):
        actions = np.asarray(agent.act(jax.random.key(seed), positions, search=search))
        assert actions.shape == (4,)
        assert np.all(legal[np.arange(4), actions]), actions
    assert int(agent.act(jax.random.key(0), positions, search=search)[3]) == 7  # the only legal move


def test_train_again_on_the_same_out_resumes(trained, tiny_args, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(trained[3], run_dir)
    code, out, err = run_cli(["train", "--out", str(run_dir), "--iterations", "3", "--no-progress", *tiny_args])
    assert code == 0, err
    assert "Resuming" in out
    records = read_records(run_dir)
    assert [r["iteration"] for r in records] == [1, 2, 3]  # one more record
    assert checkpointing.latest_iteration(run_dir) == 3
    assert rundir.read_config(run_dir).num_iterations == 3


def test_resume_with_another_seed_is_refused(trained, tiny_args, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(trained[3], run_dir)
    argv = ["train", "--out", str(run_dir), "--iterations", "3", "--no-progress", *tiny_args, "--seed", "1"]
    code, _, err = run_cli(argv)
    assert code == 2
    assert "error" in err and str(run_dir) in err
    assert [r["iteration"] for r in read_records(run_dir)] == [1, 2]
    assert checkpointing.latest_iteration(run_dir) == 2


def test_a_finished_run_keeps_its_config_json(trained, tmp_path):
    """Fewer --iterations than a run has trained: nothing to do, and its config.json still says what it trained."""
    run_dir = tmp_path / "run"
    shutil.copytree(trained[3], run_dir)
    before = (run_dir / "config.json").read_text()
    code, out, err = run_cli(["train", "--out", str(run_dir), "--iterations", "1", "--no-progress"])
    assert code == 0, err
    assert "already trained 2 iterations" in out
    assert "learning-rate schedule" not in out  # "200% spent" would mean nothing here
    assert (run_dir / "config.json").read_text() == before


def test_a_run_without_config_json_resumes_with_its_checkpoints_config(trained, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(trained[3], run_dir)
    (run_dir / "config.json").unlink()
    code, out, err = run_cli(["train", "--out", str(run_dir), "--no-progress"])
    assert code == 0, err
    assert "Config: the run's own, from its checkpoint of iteration 2" in out  # not the tic-tac-toe preset
    assert "already trained 2 iterations" in out


def test_out_that_is_a_file_is_refused_before_any_work(tmp_path, tiny_args):
    path = tmp_path / "run"
    path.write_text("notes\n")
    code, _, err = run_cli(["train", "--out", str(path), "--iterations", "1", "--no-progress", *tiny_args])
    assert code == 2, err
    assert f"{path} is a file, not a run directory" in err and "Traceback" not in err
    assert path.read_text() == "notes\n"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--game", "chess"], "unknown game 'chess'"),
        (["--search.num_simulations", "0"], "search.num_simulations"),
        (["--network.num_blocks", "two"], "network.num_blocks"),
        (["--train.replay_capacity", "8"], "train.replay_capacity"),
        (["--seconds", "0"], "--seconds"),
        (["--seconds", "nan"], "--seconds must be a finite number > 0"),
        (["--seconds", "inf"], "--seconds must be a finite number > 0"),
        (["--config", "no-such-config.json"], "no such file"),
        (["--search.num_simulatoins", "4"],  # a typo
         "unknown option --search.num_simulatoins (did you mean --search.num_simulations?)"),
        (["--search.num_simulation", "4"], "unknown option --search.num_simulation"),  # no abbreviations
        (["--preset", "tpu"], "invalid choice: 'tpu'"),
        (["--iterations", "many"], "invalid int value: 'many'"),
    ],
)
def test_bad_arguments_exit_2_with_a_message_and_write_nothing(tmp_path, tiny_args, extra, message):
    run_dir = tmp_path / "run"
    code, _out, err = run_cli(["train", "--out", str(run_dir), "--no-progress", *tiny_args, *extra])
    assert code == 2
    assert message in err, err
    assert "Traceback" not in err
    assert not run_dir.exists()


def test_help_mentions_every_config_field(monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    code, out, _ = run_cli(["train", "--help"])
    assert code == 0
    flat = " ".join(out.split())
    for path, (_, _, help_text) in config_lib.field_paths().items():
        if path == "game":
            assert "--game" in out
        elif path == "num_iterations":
            assert "--iterations" in out and "num_iterations" in flat
        else:
            assert f"--{path}" in out, path
            assert " ".join(help_text.split()) in flat, path


def test_every_help_prints_percent_signs_once():
    """argparse %-formats help strings but not descriptions: a description's "95%%" would print as written."""
    commands = ["train", "eval", "play", "export", "check", "serve", "pretrained"]
    for command in commands:
        code, out, _ = run_cli([command, "--help"])
        assert code == 0 and "%%" not in out, command
    code, out, _ = run_cli(["eval", "--help"])
    assert "mean return with a 95% interval" in " ".join(out.split())


def test_list_games(tmp_path):
    code, out, _ = run_cli(["train", "--list-games", "--out", str(tmp_path / "run")])
    assert code == 0
    assert {"tic_tac_toe", "connect_four", "brandub", "gomoku", "othello"} <= set(out.split())
    assert "pgx:<env_id>" in out and "go_9x9" in out
    assert not (tmp_path / "run").exists()


# Three runs that compile without the run's shared cache; every default run of the suite goes through the cache.
@pytest.mark.slow
def test_compile_cache_is_on_by_default_and_can_be_turned_off(tmp_path, tiny_args, monkeypatch):
    import os
    import subprocess
    import sys

    cache = tmp_path / "cache"
    env = {**os.environ, "AZJAX_COMPILE_CACHE": str(cache), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
    command = [sys.executable, "-m", "azjax.cli", "train", "--out", str(tmp_path / "run"), "--iterations", "1",
               "--eval-every", "0", "--no-progress", "--devices", "1", *tiny_args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert cache.is_dir() and any(cache.iterdir())  # the compiled iteration, for the next run to reuse
    monkeypatch.setenv("AZJAX_COMPILE_CACHE", "off")
    assert common.use_compile_cache() is None
    monkeypatch.setenv("AZJAX_COMPILE_CACHE", str(tmp_path / "other"))
    assert common.use_compile_cache(disabled=True) is None  # --no-compile-cache


def test_a_perfect_player_that_gives_up_is_one_line_not_a_traceback(monkeypatch, capsys):
    """Connect Four's perfect player may give up on a slow position mid-match (SolveTimeout): one line that says
    what to do, exit 1; any other runtime error keeps its traceback."""
    from azjax.solver.connect_four import SolveTimeout

    def give_up(args):
        raise SolveTimeout("gave up after 60 s; start its games after openings of 10 or more moves")

    monkeypatch.setattr(evaluate, "run", give_up)
    assert cli.main(["eval", "random", "perfect", "--game", "connect_four"]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["azjax eval: error: gave up after 60 s; start its games after openings of 10 "
                                        "or more moves"]

    def fail(args):
        raise RuntimeError("something else")

    monkeypatch.setattr(evaluate, "run", fail)
    with pytest.raises(RuntimeError, match="something else"):
        cli.main(["eval", "random", "perfect", "--game", "connect_four"])
