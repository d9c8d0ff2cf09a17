"""Memory known before it is spent (azjax.memory): programs too large for the machine are refused in one line
before they run, through the arena, the evaluation during training and the training iteration; an evaluation that
fails never costs the training (a checkpoint is written before the first one, and training goes on)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny import cli_args

from azjax import arena, bots, checkpointing, cli, evaluation, games, memory, trainer


def test_sizes_read_and_written():
    assert memory.parse_size("1234") == 1234
    assert memory.parse_size("500M") == 500 * 2**20
    assert memory.parse_size("2G") == memory.parse_size("2 GiB") == memory.parse_size("2gb") == 2 * 2**30
    assert memory.parse_size("1.5K") == 1536
    with pytest.raises(ValueError, match="AZJAX_MEMORY_LIMIT='lots' is not a size"):
        memory.parse_size("lots")
    assert memory.format_size(209432563296) == "209 GB"
    assert memory.format_size(1.5e9) == "1.5 GB"
    assert memory.format_size(37e6) == "37.0 MB"


def test_available_memory_is_the_limit_when_set_else_the_hosts(monkeypatch):
    cpu = jax.devices("cpu")[0]
    monkeypatch.setenv(memory.MEMORY_LIMIT_ENV, "3G")
    assert memory.available_memory(cpu) == 3 * 2**30
    monkeypatch.delenv(memory.MEMORY_LIMIT_ENV)
    host = memory.available_memory(cpu)
    assert host is not None and 2**26 < host < 2**50


class FakeDevice:
    """A GPU as `memory.available_memory` sees one: its allocator's statistics."""

    platform = "gpu"
    device_kind = "NVIDIA H100"

    def __init__(self, stats):
        self.stats = stats

    def memory_stats(self):
        return self.stats


def test_an_accelerators_memory_is_what_its_allocator_has_left(monkeypatch):
    monkeypatch.delenv(memory.MEMORY_LIMIT_ENV, raising=False)
    assert memory.available_memory(FakeDevice({"bytes_limit": 80 * 10**9, "bytes_in_use": 30 * 10**9})) == 50 * 10**9
    assert memory.available_memory(FakeDevice(None)) is None  # a backend that says nothing: no check


def compiled_ones(size: int) -> jax.stages.Compiled:
    return jax.jit(lambda x: jnp.ones((size,), jnp.float32) * x).lower(1.0).compile()


def test_check_fits_refuses_in_one_line_naming_the_program_and_the_fix(monkeypatch):
    compiled = compiled_ones(10**6)  # 4 MB of output
    needed = memory.needed_memory(compiled)
    assert needed is not None and needed >= 4 * 10**6
    monkeypatch.setenv(memory.MEMORY_LIMIT_ENV, "1M")
    with pytest.raises(memory.MemoryBudgetError) as raised:
        memory.check_fits(compiled, what="the planted program", lower_it="use a smaller planted program")
    message = str(raised.value)
    assert len(message.splitlines()) == 1
    assert "the planted program would need 4.0 MB" in message and "1.0 MB free (AZJAX_MEMORY_LIMIT)" in message
    assert message.endswith("To need less: use a smaller planted program")
    assert raised.value.needed == needed and raised.value.available == 2**20
    monkeypatch.setenv(memory.MEMORY_LIMIT_ENV, "8M")
    assert memory.check_fits(compiled, what="x", lower_it="y") == needed
    # On an accelerator, the device's own memory decides (the limit unset), and the message names the device.
    monkeypatch.delenv(memory.MEMORY_LIMIT_ENV)
    with pytest.raises(memory.MemoryBudgetError, match=r"each NVIDIA H100 has 1\.0 MB free"):
        memory.check_fits(compiled, what="x", lower_it="y", devices=[FakeDevice({"bytes_limit": 10**6})])


def test_cpu_devices_share_the_hosts_memory(monkeypatch):
    compiled = compiled_ones(10**6)
    monkeypatch.setenv(memory.MEMORY_LIMIT_ENV, "6M")
    cpu = jax.devices("cpu")[0]
    memory.check_fits(compiled, what="x", lower_it="y", devices=[cpu])
    with pytest.raises(memory.MemoryBudgetError, match=r"8\.0 MB"):  # two CPU devices: twice the need, one host
        memory.check_fits(compiled, what="x", lower_it="y", devices=[cpu, cpu])


def test_a_match_too_large_is_refused_before_it_runs(monkeypatch):
    game = games.make("tic_tac_toe")
    monkeypatch.setenv(memory.MEMORY_LIMIT_ENV, "1K")
    with pytest.raises(memory.MemoryBudgetError, match=r"the match random against onestep \(64 games of "
                                                        r"tic_tac_toe at once per device\).*azjax eval --games"):
        arena.play(jax.random.key(0), game, bots.random_bot(), bots.onestep_bot(game), 64)
    monkeypatch.delenv(memory.MEMORY_LIMIT_ENV)
    result = arena.play(jax.random.key(0), game, bots.random_bot(), bots.onestep_bot(game), 64)
    assert result.games == 64


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def test_azjax_eval_too_large_is_one_line(monkeypatch):
    monkeypatch.setenv(memory.MEMORY_LIMIT_ENV, "1K")
    code, _, err = run_cli("eval", "random", "onestep", "--games", "8", "--devices", "1", "--no-compile-cache")
    assert code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert "the match random against onestep" in err and "--games" in err


@pytest.fixture(scope="module")
def cached(persistent_compile_cache):
    """The TINY iteration compiled once for the module (and with the other modules that compile it)."""
    return persistent_compile_cache


def test_a_training_iteration_too_large_is_refused_in_one_line(cached, tiny_overrides, tmp_path, monkeypatch):
    monkeypatch.setenv(memory.MEMORY_LIMIT_ENV, "1K")
    code, out, err = run_cli("train", "--out", tmp_path / "run", "--iterations", "2", "--no-progress",
                             "--no-compile-cache", "--devices", "1", *cli_args(tiny_overrides))
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "the training iteration of tic_tac_toe" in err and "--selfplay.num_games" in err
    assert "Compiling the training iteration" in out


@pytest.fixture(scope="module")
def failed_run(cached, tiny_config, tmp_path_factory):
    """A TINY run of 2 iterations (the program the other tests compile) whose evaluation of iteration 1 fails: the
    evaluator's calls and the log."""
    calls, lines = [], []

    def evaluator(key, variables):
        calls.append(key)
        raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 209432563296 bytes.\nmore detail")

    run = tmp_path_factory.mktemp("failed") / "run"
    config = tiny_config
    result = trainer.train(config, run, eval_every=1, checkpoint_every=100, evaluator=evaluator, progress=False,
                           log=lines.append)
    return dict(run=run, config=config, result=result, calls=calls, lines=lines)


def test_a_failing_evaluation_never_loses_training(failed_run):
    """The run was checkpointed before its first evaluation, the failure is one line, and training went on to
    its last iteration without evaluating again."""
    result = failed_run["result"]
    assert result.stop_reason == "iterations" and int(result.run_state.iteration) == 2
    assert len(failed_run["calls"]) == 1
    failed = [line for line in failed_run["lines"] if "evaluation failed" in line]
    assert failed == [
        "iteration 1 evaluation failed, so training goes on without evaluations (the run is saved at iteration "
        "1): RuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating 209432563296 bytes. (--eval-every 0 skips "
        "them)"]
    assert checkpointing.CheckpointManager(failed_run["run"]).steps() == [1, 2]


@pytest.mark.slow  # the default suite keeps the refusals before a run (the match and the iteration too large)
def test_the_planted_blow_up_an_evaluation_with_far_too_many_games(cached, tiny_config, tmp_path):
    """An evaluation of far more games than the machine holds: refused in one line naming the program and the
    option before anything runs, a checkpoint on disk, and the run finishes its iterations."""
    lines = []
    evaluator = evaluation.make_evaluator(tiny_config, opponents=("random",), num_games=2**26)
    result = trainer.train(tiny_config, tmp_path / "run", eval_every=1, evaluator=evaluator, progress=False,
                           log=lines.append)
    assert int(result.run_state.iteration) == tiny_config.num_iterations == 2
    failed = [line for line in lines if "evaluation failed" in line]
    assert len(failed) == 1
    assert failed[0].startswith("iteration 1 evaluation failed, so training goes on without evaluations (the run "
                                f"is saved at iteration 1): the evaluation of tic_tac_toe ({2**26} games against "
                                "each of random) would need ")
    assert "--eval-games" in failed[0] and "Traceback" not in failed[0]
    assert checkpointing.CheckpointManager(tmp_path / "run").steps() == [1, 2]


@pytest.mark.slow
def test_the_planted_blow_up_through_the_cli(tiny_overrides, tmp_path):
    """The same through `azjax train --eval-games`, with the default opponents (their compilation is slow), in a
    process of its own with a user's compiler settings: with the suite's (tests/tiny.py), XLA's elemental emitter
    refuses the evaluation's scatter of 2^28 x 9 indices as it compiles, before the memory check could."""
    env = {**os.environ, "XLA_FLAGS": "--xla_backend_optimization_level=0", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-m", "azjax.cli", "train", "--out", str(tmp_path / "run"), "--iterations", "2",
         "--eval-every", "1", "--eval-games", str(2**26), "--no-progress", "--no-compile-cache", "--devices", "1",
         *cli_args(tiny_overrides)], capture_output=True, text=True, env=env, timeout=600)
    code, out, err = done.returncode, done.stdout, done.stderr
    assert code == 0, err
    assert "Traceback" not in out + err
    failed = [line for line in out.splitlines() if "evaluation failed" in line]
    assert len(failed) == 1 and "(the run is saved at iteration 1)" in failed[0]
    assert f"the evaluation of tic_tac_toe ({2**26} games against each of random, onestep, mcts:100, perfect)" \
        in failed[0] and "--eval-games" in failed[0]
    assert checkpointing.CheckpointManager(tmp_path / "run").steps() == [1, 2]
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [1, 2] and not any("eval/score" in r for r in records)


def test_a_replacing_save_killed_midway_keeps_the_checkpoint(failed_run, tmp_path):
    """A checkpoint set aside by a replacing save (the new one not yet in place) comes back at the next save;
    a replacing save puts its own in place of the old."""
    run = shutil.copytree(failed_run["run"], tmp_path / "run")
    config, state = failed_run["config"], failed_run["result"].run_state
    manager = checkpointing.CheckpointManager(run, keep=5)
    assert manager.steps() == [1, 2]
    (run / "checkpoints" / "2").rename(run / "checkpoints" / ".2.replaced")  # killed between the two renames
    assert manager.steps() == [1]
    manager.save(state.replace(iteration=jnp.int32(3)), config)
    assert manager.steps() == [1, 2, 3]
    np.testing.assert_array_equal(np.asarray(manager.restore(config, step=2).iteration), 2)
    manager.save(state, config, {"eval/score": 0.5}, replace=True)  # replaces iteration 2
    assert manager.steps() == [1, 2, 3] and manager.meta(2)["metrics"]["eval/score"] == 0.5
    assert not list((run / "checkpoints").glob(".*"))
