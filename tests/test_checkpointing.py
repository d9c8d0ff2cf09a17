"""Checkpoints: exact resume, safe stopping (SIGTERM, SIGKILL mid-save), non-finite values, clear loading errors.

Runs are TINY (1 block x 8 channels, 4 simulations, 8 games) and share module-scoped fixtures. The persistent
compilation cache lets later runs and the subprocesses reuse the first run's compiled programs instead of
compiling them again.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny import TINY_OVERRIDES

import azjax
from azjax import checkpointing, cli, compatibility, exports, interrupts, memory, presets, rundir, trainer, training
from azjax import config as config_lib
from azjax.manifest import write_manifest
from azjax.training import RunState

N = 2  # iterations of the short run; the long run does 2N

# Shorter self-play and a small replay buffer than the shared TINY settings: cheaper runs to save and restore. A
# constant learning rate: the run of N iterations resumed to 2N must retrace the straight run of 2N, and a cosine
# spans each run's own budget, so theirs differ by design (the schedule's resume has tests of its own below).
TINY = {
    **TINY_OVERRIDES,
    "selfplay.num_steps": 4,
    "train.batch_size": 16,
    "train.replay_capacity": 64,
    "train.warmup_steps": 2,
    "train.lr_schedule": "constant",
}


def run_config(num_iterations: int = 2 * N, **changes) -> config_lib.Config:
    base = presets.get_config("tic_tac_toe", "cpu")
    return config_lib.with_overrides(base, {**TINY, "num_iterations": num_iterations, **changes})


def subprocess_env(cache: Path) -> dict:
    return dict(
        os.environ,
        JAX_COMPILATION_CACHE_DIR=str(cache),
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
        JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0",
        JAX_PLATFORMS="cpu",
        PYTHONUNBUFFERED="1",
    )


def quiet(_: str) -> None:
    pass


@pytest.fixture(scope="module")
def runs(compile_cache_everything, tmp_path_factory):
    """A run of 2N iterations straight, and a run of N iterations resumed to 2N; "programs", the text of each
    run's training iteration as it went to the compiler (what the compilation cache knows it by)."""
    root = tmp_path_factory.mktemp("runs")
    programs: list[str] = []
    compile_within_memory = memory.compile_within_memory

    def recording(lowered, **kwargs):
        programs.append(lowered.as_text())
        return compile_within_memory(lowered, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(memory, "compile_within_memory", recording)
        straight = trainer.train(run_config(2 * N), root / "straight", checkpoint_every=N, progress=False, log=quiet)
        first = trainer.train(run_config(N), root / "resumed", checkpoint_every=N, progress=False, log=quiet)
        messages: list[str] = []
        resumed = trainer.train(
            run_config(2 * N), root / "resumed", checkpoint_every=N, progress=False, log=messages.append
        )
    return {"root": root, "straight": straight, "first": first, "resumed": resumed, "messages": messages,
            "programs": programs}


def leaves(run_state: RunState) -> list[tuple[str, np.ndarray]]:
    """Every array of a run state with its path (the key as its raw bits)."""
    state = run_state.replace(key=jax.random.key_data(run_state.key))
    return [(jax.tree_util.keystr(p), np.asarray(x)) for p, x in jax.tree_util.tree_leaves_with_path(state)]


def assert_bitwise_equal(a: RunState, b: RunState) -> None:
    left, right = leaves(a), leaves(b)
    assert [p for p, _ in left] == [p for p, _ in right]
    for (path, x), (_, y) in zip(left, right, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape, path
        assert np.array_equal(x, y), f"{path} differs"


def run_cli(*args: str) -> tuple[int, str, str]:
    """`azjax ARGS` in this process: (exit code, stdout, stderr)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def assert_one_line_error(code: int, err: str, *fragments: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# ------------------------------------------------------------------------------------------------------------
# Resume


def test_resumed_run_is_bitwise_identical_to_a_straight_run(runs):
    straight, resumed = runs["straight"], runs["resumed"]
    assert runs["first"].resumed_from is None and int(runs["first"].run_state.iteration) == N
    assert resumed.resumed_from == N
    assert [r["iteration"] for r in resumed.history] == list(range(N + 1, 2 * N + 1))
    assert any(f"Resuming {runs['root'] / 'resumed'} from iteration {N}" in m for m in runs["messages"])
    # Parameters, batch statistics, optimizer state, replay buffer, games in progress, key and counters.
    assert_bitwise_equal(straight.run_state, resumed.run_state)
    # And the checkpoints on disk agree with each other and with the states in memory.
    config = run_config(2 * N)
    on_disk = [checkpointing.CheckpointManager(runs["root"] / name).restore(config) for name in ("straight", "resumed")]
    assert_bitwise_equal(on_disk[0], on_disk[1])
    assert_bitwise_equal(on_disk[0], straight.run_state)


def test_a_resumed_run_compiles_the_program_of_a_straight_one(runs):
    """The same program for the straight run, the shorter first run (a constant learning rate does not read the
    number of iterations: jax leaves it out) and its resumption from a checkpoint (placed on the device as a fresh
    state is): the compilation cache serves the later runs."""
    assert len(runs["programs"]) == 3
    assert runs["programs"][1] == runs["programs"][0], "the run of fewer iterations compiled another program"
    assert runs["programs"][2] == runs["programs"][0], "the resumed run compiled another program"


def test_metrics_log_has_each_iteration_once(runs):
    records = rundir.read_metrics(runs["root"] / "resumed")
    assert [r["iteration"] for r in records] == list(range(1, 2 * N + 1))
    assert all(r["params_finite"] == 1.0 for r in records)


def test_config_is_readable_json_beside_the_checkpoints(runs):
    run_dir = runs["root"] / "straight"
    assert config_lib.from_json((run_dir / "config.json").read_text()) == run_config(2 * N)
    meta = json.loads((run_dir / "checkpoints" / str(2 * N) / "meta" / "metadata").read_text())
    assert meta["iteration"] == 2 * N and meta["config"] == config_lib.to_dict(run_config(2 * N))
    manifest = json.loads((run_dir / "checkpoints" / str(2 * N) / "manifest.json").read_text())["files"]
    assert {name.split("/")[0] for name in manifest} >= {"model", "run", "meta"}


def test_a_finished_run_has_nothing_to_do(runs, tmp_path):
    run_dir = tmp_path / "done"
    shutil.copytree(runs["root"] / "straight", run_dir)
    messages: list[str] = []
    result = trainer.train(run_config(2 * N), run_dir, progress=False, log=messages.append)
    assert result.history == [] and result.resumed_from == 2 * N and result.last_checkpoint == 2 * N
    assert any("already trained" in m for m in messages)


def test_resume_keeps_structure_but_may_change_other_settings(runs, tmp_path):
    run_dir = runs["root"] / "straight"
    with pytest.raises(checkpointing.CheckpointError, match=r"network\.num_channels: 8 -> 16"):
        trainer.train(run_config(2 * N + 1, **{"network.num_channels": 16}), run_dir, progress=False, log=quiet)
    with pytest.raises(checkpointing.CheckpointError, match="game"):
        checkpointing.CheckpointManager(run_dir).restore(presets.get_config("connect_four"))
    structural, other = compatibility.compare_configs(run_config(), run_config(**{"train.learning_rate": 1e-4}))
    assert structural == [] and other == [f"train.learning_rate: {run_config().train.learning_rate} -> 0.0001"]


@pytest.mark.parametrize(
    ("change", "line"),
    [
        # A second policy head and the replay's reply targets; the replay's policy surprise (TINY draws by it).
        ({"train.reply_policy_weight": 0.5}, "train.reply_policy_weight: 0.0 -> 0.5"),
        ({"train.policy_surprise_weight": 0.0}, "train.policy_surprise_weight: 0.5 -> 0.0"),
        # A win/draw/loss value head: three outputs for one, and the replay keeps each position's outcome.
        ({"network.value_head": "wdl"}, "network.value_head: 'scalar' -> 'wdl'"),
        # A moving average of the weights: the trained weights join the run's arrays.
        ({"train.ema_decay": 0.99}, "train.ema_decay: 0.0 -> 0.99"),
    ],
)
def test_settings_that_change_the_checkpoints_arrays_are_a_clear_error(runs, change, line):
    """Structural means: the checkpoint's arrays (structure, shapes, dtypes) differ. Resuming is refused before
    any work, and restoring alike, naming the field."""
    run_dir = runs["root"] / "straight"
    with pytest.raises(checkpointing.CheckpointError, match=f"array layout \\({line}, as checkpoint"):
        trainer.train(run_config(2 * N + 1, **change), run_dir, progress=False, log=quiet)
    with pytest.raises(checkpointing.CheckpointError, match=line):
        checkpointing.CheckpointManager(run_dir).restore(run_config(**change))
    assert checkpointing.latest_iteration(run_dir) == 2 * N


def with_a_nan(params):
    """`params` with a NaN in the first entry of every array: a network that must not be saved."""
    return jax.tree.map(lambda x: x.at[(0,) * x.ndim].set(jnp.nan), params)


def test_a_run_with_a_moving_average_saves_it_as_the_model_and_resumes_both(tmp_path):
    """With train.ema_decay the checkpoint's model (what agents, exports and warm starts load) is the average, and
    the trained weights go with the run, so that training resumes exactly; its decay may change on resume."""
    config = run_config(**{"train.ema_decay": 0.9})
    state = training.init_run_state(config)
    trained = jax.tree.map(lambda x: x + 0.5, state.train_state.variables)  # apart from the average
    state = state.replace(train_state=state.train_state.replace(params=trained["params"],
                                                                batch_stats=trained["batch_stats"]))
    manager = checkpointing.CheckpointManager(tmp_path / "run")
    manager.save(state, config)
    assert_bitwise_equal(manager.restore(config), state)
    assert_bitwise_equal(manager.restore(run_config(**{"train.ema_decay": 0.999})), state)
    _, model = exports.restore_model(tmp_path / "run")
    for got, average in zip(jax.tree.leaves(model), jax.tree.leaves(state.train_state.average), strict=True):
        np.testing.assert_array_equal(got, average)
    agent = azjax.load_agent(tmp_path / "run")
    for got, average in zip(jax.tree.leaves(agent.variables), jax.tree.leaves(state.train_state.average),
                            strict=True):
        np.testing.assert_array_equal(got, average)
    # The trained weights are checked for NaN as the model is: a finite average does not save a broken run.
    broken = with_a_nan(state.train_state.params)
    with pytest.raises(checkpointing.CheckpointError, match="not finite"):
        manager.save(state.replace(train_state=state.train_state.replace(params=broken), iteration=jnp.int32(7)),
                     config)
    assert manager.steps() == [int(state.iteration)]


def test_compute_dtype_may_change_on_resume(runs):
    """float32 and bfloat16 networks keep float32 parameters: a run may go on in bfloat16 on an accelerator."""
    run_dir = runs["root"] / "straight"
    bf16 = run_config(**{"network.compute_dtype": "bfloat16"})
    messages: list[str] = []
    manager = checkpointing.CheckpointManager(run_dir)
    assert trainer._check_run_dir(run_dir, bf16, manager, messages.append) == (2 * N, bf16)
    assert any("network.compute_dtype: 'float32' -> 'bfloat16'" in m for m in messages), messages
    assert_bitwise_equal(manager.restore(bf16), runs["straight"].run_state)


def test_pending_counts_of_a_run_that_dropped_unfinished_games_are_not_restored(runs, tmp_path):
    """An azjax before commit 934dcbe counted the positions of games in progress even where it did not keep them
    (selfplay.keep_unfinished off): resumed with it on, those counts would settle rows never stored."""
    state = runs["straight"].run_state
    old = state.replace(selfplay=state.selfplay.replace(pending=jnp.full_like(state.selfplay.pending, 3)))
    config = run_config(2 * N, **{"selfplay.keep_unfinished": False})
    manager = checkpointing.CheckpointManager(tmp_path / "old")
    manager.save(old, config)
    restored = manager.restore(run_config(2 * N, **{"selfplay.keep_unfinished": True}))
    assert np.asarray(restored.selfplay.pending).tolist() == [0] * config.selfplay.num_games


def test_a_game_whose_observation_changed_since_the_checkpoint_is_a_clear_error(tmp_path):
    """A user edits their game's observation after training: its checkpoints no longer fit the network the config
    builds. The error says so (not "report this"), and the checkpoint stays. (It also checks that the compiled
    start of a run is not reused for a game registered anew under the same name.)"""
    base = azjax.games.make("tic_tac_toe")

    def two_planes():
        return base

    def three_planes():
        return dataclasses.replace(base, observation_shape=(3, 3, 3), observe=lambda s: jnp.concatenate(
            [base.observe(s), jnp.zeros((3, 3, 1))], axis=-1))

    azjax.games.register("edited_game", two_planes, overwrite=True)
    config = run_config(**{"game": "edited_game"})
    manager = checkpointing.CheckpointManager(tmp_path / "run")
    manager.save(training.init_run_state(config), config)
    azjax.games.register("edited_game", three_planes, overwrite=True)
    with pytest.raises(checkpointing.CheckpointError, match=r"other shapes .* observation_shape .* keep it"):
        checkpointing.CheckpointManager(tmp_path / "run").restore_model()
    assert checkpointing.latest_iteration(tmp_path / "run") == 0


# ------------------------------------------------------------------------------------------------------------
# The checkpoint manager


def test_keeps_the_last_k_and_the_best(runs, tmp_path):
    config = run_config()
    state = runs["straight"].run_state
    manager = checkpointing.CheckpointManager(tmp_path / "run", keep=2, best_metric="eval/score")
    scores = {1: 0.5, 2: 0.9, 3: 0.1, 4: None, 5: 0.2, 6: 0.3}
    best = -1.0
    for iteration, score in scores.items():
        metrics = {"loss": 1.0} if score is None else {"loss": 1.0, "eval/score": score}
        assert manager.is_new_best(metrics) == (score is not None and score > best)
        best = max(best, score or -1.0)
        manager.save(state.replace(iteration=jnp.int32(iteration)), config, metrics)
    assert manager.steps() == [2, 5, 6] and manager.best_step() == 2
    assert manager.is_new_best({"eval/score": 0.95}) and not manager.is_new_best({"loss": 0.0})
    # Without the metric, only the last k remain; a reader sees complete checkpoints only.
    plain = checkpointing.CheckpointManager(tmp_path / "plain", keep=2, best_metric="eval/score")
    for iteration in (1, 2, 3):
        plain.save(state.replace(iteration=jnp.int32(iteration)), config, {"loss": 1.0})
    assert plain.steps() == [2, 3] and plain.best_step() is None
    assert sorted(p.name for p in (tmp_path / "plain" / "checkpoints").iterdir()) == ["2", "3"]
    with pytest.raises(checkpointing.CheckpointError, match="already saved"):
        plain.save(state.replace(iteration=jnp.int32(3)), config)


def test_training_saves_a_new_best_at_once_and_keeps_it(runs, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(runs["root"] / "straight", run_dir)
    scores = {2 * N + 1: 0.9, 2 * N + 2: 0.1, 2 * N + 3: 0.2}
    calls = iter(scores.values())
    trainer.train(
        run_config(2 * N + 3), run_dir, checkpoint_every=100, keep_checkpoints=1, eval_every=1,
        evaluator=lambda key, variables: {"eval/score": next(calls)}, progress=False, log=quiet,
    )
    manager = checkpointing.CheckpointManager(run_dir)
    assert manager.steps() == [2 * N + 1, 2 * N + 3] and manager.best_step() == 2 * N + 1
    assert manager.meta(2 * N + 1)["metrics"]["eval/score"] == 0.9
    config, _ = exports.restore_model(run_dir, best_metric="eval/score")
    assert config == run_config(2 * N + 3)


def test_refuses_to_save_non_finite_parameters(runs, tmp_path):
    state = runs["straight"].run_state
    params = with_a_nan(state.train_state.params)
    bad = state.replace(train_state=state.train_state.replace(params=params), iteration=jnp.int32(99))
    manager = checkpointing.CheckpointManager(tmp_path / "run")
    with pytest.raises(checkpointing.CheckpointError, match="not finite"):
        manager.save(bad, run_config())
    assert manager.steps() == []


def test_loading_never_unpickles(runs, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a checkpoint was unpickled")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse)
    run_dir = runs["root"] / "straight"
    checkpointing.CheckpointManager(run_dir).restore(run_config())
    config, variables = exports.restore_model(run_dir)
    assert config == run_config() and set(variables) == {"params", "batch_stats"}


# ------------------------------------------------------------------------------------------------------------
# Stopping


SAVE_THEN_SAVE_BIG = textwrap.dedent(
    """
    import sys
    import jax, numpy as np
    from azjax import checkpointing, config as config_lib
    from azjax.training import init_run_state

    run_dir, config = sys.argv[1], config_lib.from_json(open(sys.argv[2]).read())
    template = jax.eval_shape(lambda: init_run_state(config))
    def concrete(s, rng=None):
        if jax.dtypes.issubdtype(s.dtype, jax.dtypes.prng_key):
            return jax.random.wrap_key_data(jax.device_put(np.zeros(2, np.uint32)))
        if rng is not None and s.dtype == np.float32 and s.size > 1_000_000:
            return jax.device_put(rng.standard_normal(s.shape, dtype=np.float32))  # incompressible: slow to write
        return jax.device_put(np.zeros(s.shape, s.dtype))
    manager = checkpointing.CheckpointManager(run_dir)
    manager.save(jax.tree.map(concrete, template).replace(iteration=jax.device_put(np.int32(1))), config)
    rng = np.random.default_rng(0)
    big = jax.tree.map(lambda s: concrete(s, rng), template).replace(iteration=jax.device_put(np.int32(2)))
    print("saving", flush=True)
    manager.save(big, config)
    print("saved", flush=True)
    """
)


def test_sigkill_while_saving_leaves_the_previous_checkpoint_loadable(compile_cache_everything, tmp_path):
    config = run_config(**{"train.replay_capacity": 1_500_000})
    (tmp_path / "config.json").write_text(config_lib.to_json(config))
    run_dir = tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, "-c", SAVE_THEN_SAVE_BIG, str(run_dir), str(tmp_path / "config.json")],
        stdout=subprocess.PIPE,
        env=subprocess_env(compile_cache_everything),
        text=True,
    )
    try:
        assert process.stdout.readline().strip() == "saving"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if any(".orbax-checkpoint-tmp" in p.name for p in (run_dir / "checkpoints").iterdir()):
                break  # orbax is writing checkpoint 2
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=60)
    manager = checkpointing.CheckpointManager(run_dir)
    state = manager.restore(config)  # verifies every array against its checksum
    assert int(state.iteration) == manager.latest_step() in (1, 2)
    if process.returncode == -signal.SIGKILL:
        assert manager.steps() == [1], "a half-written checkpoint is never listed"
    # Training goes on: the next save cleans up what the killed one left behind.
    manager.save(state.replace(iteration=jnp.int32(3)), config)
    assert manager.steps()[-1] == 3
    assert not [p for p in (run_dir / "checkpoints").iterdir() if not p.name.isdigit()]


def test_sigterm_finishes_the_iteration_saves_and_exits_0(compile_cache_everything, tmp_path):
    config = run_config(100_000)
    (tmp_path / "tiny.json").write_text(config_lib.to_json(config))
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "azjax.cli", "train", "--config", str(tmp_path / "tiny.json"), "--out",
               str(run_dir), "--no-progress", "--checkpoint-every", "100000", "--eval-every", "0", "--devices", "1"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=subprocess_env(compile_cache_everything), text=True
    )
    try:
        deadline = time.monotonic() + 240
        while not rundir.read_metrics(run_dir) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.poll() is None, process.communicate()
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=240)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "Traceback" not in err
    assert "SIGTERM received" in out
    assert f"Resume with: azjax train --out {run_dir}" in out
    last = rundir.read_metrics(run_dir)[-1]["iteration"]
    assert checkpointing.latest_iteration(run_dir) == last >= 1
    resumed = trainer.train(run_config(last + 1), run_dir, progress=False, log=quiet)
    assert resumed.resumed_from == last and int(resumed.run_state.iteration) == last + 1


def test_stop_request_between_iterations(runs, tmp_path):
    """The handler only sets a flag; the loop stops before the next iteration and saves."""
    run_dir = tmp_path / "run"
    shutil.copytree(runs["root"] / "straight", run_dir)
    messages: list[str] = []

    def log(message: str) -> None:
        messages.append(message)
        if message.startswith("Resuming"):
            os.kill(os.getpid(), signal.SIGINT)  # arrives before the first iteration of this session

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
    try:
        result = trainer.train(run_config(2 * N + 5), run_dir, progress=False, log=log)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result.stop_reason == "interrupted" and result.history == [] and result.last_checkpoint == 2 * N
    assert any("SIGINT received" in m for m in messages)


@pytest.mark.slow  # the default suite keeps test_a_time_budget_drives_the_schedule_and_is_saved
def test_a_time_budget_spreads_what_remains_of_the_schedule(runs, tmp_path, monkeypatch):
    """A --seconds session of a run halfway through its iterations goes on from half its schedule, never back to
    the start of it: the share of the budget it saves is at least the half its iterations had spent."""
    config = run_config(1000, **{"train.lr_schedule": "cosine"})  # as the test below: its compiled iteration
    run_dir = tmp_path / "run"
    rundir.write_config(run_dir, config)
    checkpointing.CheckpointManager(run_dir).save(runs["straight"].run_state.replace(iteration=jnp.int32(500)), config)
    monkeypatch.setattr(trainer, "_clock", itertools.count(start=0.0, step=1.0).__next__)  # a second per reading
    result = trainer.train(config, run_dir, max_seconds=4.0, progress=False, log=quiet)
    assert result.stop_reason == "seconds" and [r["iteration"] for r in result.history] == [501]
    saved = checkpointing.CheckpointManager(run_dir).restore(config)
    assert 0.5 < float(saved.time_progress) < 1.0  # 0.5 and a share of the other half (before the fix: 0.25)


@pytest.mark.parametrize("max_seconds", [0, -1.0, float("nan"), float("inf")])
def test_max_seconds_must_be_a_finite_positive_number(tmp_path, max_seconds):
    with pytest.raises(config_lib.ConfigError, match="max_seconds must be a finite number of seconds > 0"):
        trainer.train(run_config(), tmp_path / "run", max_seconds=max_seconds, progress=False, log=quiet)
    assert not (tmp_path / "run").exists()


def test_a_time_budget_drives_the_schedule_and_is_saved(runs, tmp_path, monkeypatch):
    """With --seconds, a cosine learning rate decays over the time budget (not the 1000 configured iterations),
    and the share of it spent is checkpointed, so that a resumed run continues the schedule from there. The loop's
    clock is a fake one that advances a second per reading, so that the test does not depend on the machine's
    speed."""
    run_dir = tmp_path / "run"
    shutil.copytree(runs["root"] / "straight", run_dir)  # already 2N iterations: no new compilation of the state
    config = run_config(1000, **{"train.lr_schedule": "cosine"})
    monkeypatch.setattr(trainer, "_clock", itertools.count(start=0.0, step=1.0).__next__)
    messages: list[str] = []
    result = trainer.train(config, run_dir, max_seconds=20.0, progress=False, log=messages.append)
    # Resuming the 2N-iteration run: 2N of 1000 iterations (0%) spent, so the session starts near the peak.
    before = checkpointing.CheckpointManager(runs["root"] / "straight").restore(config)
    start = f"{training.learning_rate(config.train, before.train_state.step, jnp.float32(2 * N / 1000)):.2g}"
    expected = f"The cosine learning-rate schedule is 0% spent: this session starts at {start} "
    assert any(m.startswith(expected) for m in messages), messages
    assert result.stop_reason == "seconds" and len(result.history) >= 3
    rates = [r["learning_rate"] for r in result.history]
    assert rates[-1] < rates[0] and all(b <= a for a, b in itertools.pairwise(rates))
    peak = config.train.learning_rate
    assert rates[-1] < 0.5 * peak  # iterations alone would have spent about 1% of the schedule
    saved = checkpointing.CheckpointManager(run_dir).restore(config)
    assert 0.5 < float(saved.time_progress) < 1.0

    # Resumed where the schedule left off (no iteration to run, so nothing compiles): the note gives the share spent
    # and the rate this session would start at, which is the one the saved schedule dictates.
    messages.clear()
    done = run_config(int(saved.iteration), **{"train.lr_schedule": "cosine"})
    trainer.train(done, run_dir, progress=False, log=messages.append)
    (note,) = [m for m in messages if m.startswith("The cosine learning-rate schedule")]
    assert "is 100% spent" in note and "Little of it is left" in note  # its iterations, all done
    floor = f"{training.learning_rate(config.train, saved.train_state.step, 1.0):.2g}"
    assert f"this session starts at {floor} " in note


def test_a_second_signal_stops_at_once():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    on_term = signal.getsignal(signal.SIGTERM)
    try:
        with interrupts.StopSignals(quiet) as stop:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)  # Python runs the handler between bytecodes
            assert stop.requested == "SIGINT"
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.getsignal(signal.SIGTERM) == on_term
    finally:
        signal.signal(signal.SIGINT, previous)


# ------------------------------------------------------------------------------------------------------------
# Non-finite values


def test_non_finite_loss_stops_training_and_keeps_the_last_checkpoint(runs, tmp_path):
    config = run_config(2 * N)
    state = runs["straight"].run_state
    # Finite but enormous weights: the next iteration's activations, and so its loss, overflow.
    params = jax.tree.map(lambda x: x * 1e30, state.train_state.params)
    state = state.replace(train_state=state.train_state.replace(params=params))
    run_dir = tmp_path / "run"
    rundir.write_config(run_dir, config)
    checkpointing.CheckpointManager(run_dir).save(state, config)
    before = sorted(p.name for p in (run_dir / "checkpoints" / str(2 * N)).rglob("*"))

    code, out, err = run_cli("train", "--out", run_dir, "--iterations", 2 * N + 3, "--no-progress", "--eval-every", 0)
    assert code == 1, out + err
    assert "Traceback" not in err
    assert f"iteration {2 * N + 1}:" in err and "loss is nan" in err
    assert f"The last good checkpoint, iteration {2 * N}, is kept" in err
    manager = checkpointing.CheckpointManager(run_dir)
    assert manager.steps() == [2 * N]
    assert sorted(p.name for p in (run_dir / "checkpoints" / str(2 * N)).rglob("*")) == before
    manager.restore(config)  # still loadable, checksums intact
    assert all(r["iteration"] <= 2 * N for r in rundir.read_metrics(run_dir))


def test_params_finite_metric_sees_nan_parameters(runs):
    config = run_config()
    state = runs["straight"].run_state
    params = with_a_nan(state.train_state.params)
    nan_state = jax.tree.map(jnp.copy, state.replace(train_state=state.train_state.replace(params=params)))
    iteration = jax.jit(azjax.make_train_iteration(config), donate_argnums=0)
    _, metrics = iteration(nan_state)
    assert float(metrics["params_finite"]) == 0.0
    _, metrics = iteration(jax.tree.map(jnp.copy, state))
    assert float(metrics["params_finite"]) == 1.0


# ------------------------------------------------------------------------------------------------------------
# Loading errors: one clear line, never a traceback


def largest_data_file(directory: Path) -> Path:
    """The biggest file of array data (not metadata) under an orbax item's directory."""
    files = [p for p in directory.rglob("*") if p.is_file() and p.parent.name == "d"]
    return max(files, key=lambda p: p.stat().st_size)


def directory_size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_checkpoint_is_a_clear_error(runs, tmp_path, damage):
    run_dir = tmp_path / "run"
    shutil.copytree(runs["root"] / "straight", run_dir)
    path = largest_data_file(run_dir / "checkpoints" / str(2 * N) / "model")
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        path.write_bytes(bytes(data[: len(data) // 2]))
    else:
        data[len(data) // 2] ^= 0x10
        path.write_bytes(bytes(data))
    previous = f"damaged or truncated.*previous checkpoint .iteration {N}."
    with pytest.raises(checkpointing.CheckpointError, match=previous):
        azjax.load_agent(run_dir)
    code, _, err = run_cli("export", run_dir, tmp_path / "out")
    assert_one_line_error(code, err, "damaged or truncated", f"delete {run_dir / 'checkpoints' / str(2 * N)}")
    # Deleting the damaged checkpoint, as the message says, makes the run usable again.
    shutil.rmtree(run_dir / "checkpoints" / str(2 * N))
    assert azjax.load_agent(run_dir).config == run_config()


def test_missing_or_foreign_directories_are_clear_errors(tmp_path):
    with pytest.raises(checkpointing.CheckpointError, match="does not exist"):
        azjax.load_agent(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(checkpointing.CheckpointError, match="neither a training run directory"):
        azjax.load_agent(tmp_path / "empty")
    rundir.write_config(tmp_path / "fresh", run_config())
    with pytest.raises(checkpointing.CheckpointError, match="no checkpoint yet"):
        azjax.load_agent(tmp_path / "fresh")
    code, _, err = run_cli("export", tmp_path / "nowhere", tmp_path / "out")
    assert_one_line_error(code, err, "does not exist")


def test_other_game_or_network_shape_is_a_clear_error(runs):
    run_dir = runs["root"] / "straight"
    code, _, err = run_cli("train", "--out", run_dir, "--game", "connect_four", "--no-progress")
    assert_one_line_error(code, err, "game: 'tic_tac_toe' -> 'connect_four'", "pass a new --out")
    code, _, err = run_cli("train", "--out", run_dir, "--network.num_channels", "16", "--no-progress")
    assert_one_line_error(code, err, "network.num_channels: 8 -> 16")


def test_checkpoint_of_an_older_format_plays_but_does_not_resume(runs, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(runs["root"] / "straight", run_dir)
    for step_dir in (run_dir / "checkpoints").iterdir():
        if step_dir.name.isdigit():
            meta_file = step_dir / "meta" / "metadata"
            meta_file.write_text(json.dumps({**json.loads(meta_file.read_text()), "version": 1}))
            write_manifest(step_dir)  # as that azjax wrote it, consistent with its files
    code, _, err = run_cli("train", "--out", run_dir, "--iterations", str(3 * N), "--no-progress")
    assert_one_line_error(code, err, "older azjax (format 1)", "cannot resume training", "--out")
    assert azjax.load_agent(run_dir).config == run_config()  # its network still loads


def copy_with_saved_search_field(runs, tmp_path: Path, name: str, value) -> tuple[Path, Path]:
    """A copy of the straight run whose last checkpoint was saved with search.`name` = `value`, consistent with
    its manifest (as an azjax that wrote it so would leave it): (run directory, checkpoint directory)."""
    run_dir = tmp_path / "run"
    shutil.copytree(runs["root"] / "straight", run_dir)
    step_dir = run_dir / "checkpoints" / str(2 * N)
    meta_file = step_dir / "meta" / "metadata"
    meta = json.loads(meta_file.read_text())
    meta["config"]["search"][name] = value
    meta_file.write_text(json.dumps(meta))
    write_manifest(step_dir)
    return run_dir, step_dir


def test_checkpoint_of_a_newer_azjax_is_kept_and_names_the_upgrade(runs, tmp_path):
    """A checkpoint whose saved config has a field this azjax lacks (a newer azjax added it) is intact: the error
    says to upgrade, and never to delete it."""
    run_dir, step_dir = copy_with_saved_search_field(runs, tmp_path, "a_field_from_the_future", 1)
    with pytest.raises(checkpointing.CheckpointError, match="newer azjax") as caught:
        azjax.load_agent(run_dir)
    assert "a_field_from_the_future" in str(caught.value) and "delete" not in str(caught.value)
    assert step_dir.is_dir()
    # The same field in the run's config.json: fix the file, or upgrade.
    config_file = run_dir / "config.json"
    saved = json.loads(config_file.read_text())
    config_file.write_text(json.dumps({**saved, "search": {**saved["search"], "a_field_from_the_future": 1}}))
    with pytest.raises(checkpointing.CheckpointError, match="or upgrade azjax if a newer one wrote it"):
        rundir.read_config(run_dir)


def test_checkpoint_whose_config_this_azjax_rejects_is_kept(runs, tmp_path):
    """A checkpoint whose saved config fails this azjax's checks (an azjax that allowed the value wrote it) is
    intact: the error says to keep it, never that it is damaged or to delete it."""
    run_dir, _ = copy_with_saved_search_field(runs, tmp_path, "dirichlet_alpha", 0.0)
    with pytest.raises(checkpointing.CheckpointError, match="this azjax rejects") as caught:
        azjax.load_agent(run_dir)
    message = str(caught.value)
    assert "search.dirichlet_alpha" in message and "untouched: keep it" in message
    assert "damaged" not in message and "delete" not in message


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ({"network": {"num_chanels": 8}}, "unknown config field 'network.num_chanels'"),
        ({"train": {"learning_rate": "fast"}}, "train.learning_rate must be a float"),
        ("{not json", "not valid JSON"),
    ],
)
def test_bad_config_files_are_clear_errors(tmp_path, content, fragment):
    path = tmp_path / "config.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    code, _, err = run_cli("train", "--config", path, "--out", tmp_path / "run", "--no-progress")
    assert_one_line_error(code, err, str(path), fragment)
    # The same file as a run's config.json: resuming it, or loading it, names the file too.
    code, _, err = run_cli("train", "--out", tmp_path, "--no-progress")
    assert_one_line_error(code, err, str(path), fragment)
    with pytest.raises(checkpointing.CheckpointError, match=fragment):
        rundir.read_config(tmp_path)


def test_cli_best_metric_default_matches_the_library():
    args = cli.build_parser().parse_args(["train"])
    assert args.best_metric == checkpointing.DEFAULT_BEST_METRIC
    assert dataclasses.fields(trainer.TrainResult)[-1].name == "last_checkpoint"


# ------------------------------------------------------------------------------------------------------------
# Export


def test_export_loads_like_the_run(runs, tmp_path):
    run_dir, out = runs["root"] / "straight", tmp_path / "model"
    code, stdout, err = run_cli("export", run_dir, out)
    assert code == 0, err
    assert f"Exported iteration {2 * N} of {run_dir} to {out}" in stdout
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "export.json", "manifest.json", "model"]
    assert directory_size(out) < directory_size(run_dir / "checkpoints" / str(2 * N)) / 2  # no optimizer, no replay
    from_run, from_export = azjax.load_agent(run_dir), azjax.load_agent(out)
    assert from_export.config == from_run.config == run_config()
    for a, b in zip(jax.tree.leaves(from_run.variables), jax.tree.leaves(from_export.variables), strict=True):
        np.testing.assert_array_equal(a, b)
    states = jax.vmap(from_export.game.init)(jax.random.split(jax.random.key(0), 2))
    np.testing.assert_array_equal(from_export.policy_value(states)[0], from_run.policy_value(states)[0])


def test_export_options_and_errors(runs, tmp_path):
    run_dir, out = runs["root"] / "straight", tmp_path / "model"
    assert run_cli("export", run_dir, out)[0] == 0
    code, _, err = run_cli("export", run_dir, out)
    assert_one_line_error(code, err, "already exists", "--force")
    code, _, err = run_cli("export", run_dir, out, "--force", "--iteration", N)
    assert code == 0, err
    assert json.loads((out / "export.json").read_text())["iteration"] == N
    _, at_n = exports.restore_model(run_dir / "checkpoints" / str(N))  # a run's checkpoint directory loads too
    _, exported = exports.restore_model(out)
    for a, b in zip(jax.tree.leaves(at_n), jax.tree.leaves(exported), strict=True):
        np.testing.assert_array_equal(a, b)
    code, _, err = run_cli("export", run_dir, tmp_path / "other", "--iteration", 3)
    assert_one_line_error(code, err, "no checkpoint of iteration 3", f"it has {N}, {2 * N}")
    code, _, err = run_cli("export", run_dir, tmp_path / "other", "--best")
    assert_one_line_error(code, err, "'eval/score'")
    code, _, err = run_cli("train", "--out", out, "--no-progress")
    assert_one_line_error(code, err, "is an exported model")
    assert not (tmp_path / "other").exists() and not list(tmp_path.glob(".*"))  # nothing half-written left


def test_a_sources_config_is_read_without_its_weights(runs, tmp_path, monkeypatch):
    """`restore_config` gives `restore_model`'s config for every kind of source (run, one of its checkpoints, export,
    shipped agent, agent directory) and reads none of the network's arrays (`azjax train --init-from` reads the
    source's config first, then its weights once)."""
    import orbax.checkpoint as ocp
    from flax import serialization

    from azjax import pretrained

    run_dir, out = runs["root"] / "straight", tmp_path / "model"
    exports.export_model(run_dir, out)
    sources = [(run_dir, {}), (run_dir, {"iteration": N}), (run_dir / "checkpoints" / str(N), {}), (out, {}),
               ("pretrained:connect_four", {}), (pretrained._directory("connect_four"), {})]
    expected = [exports.restore_model(source, **options)[0] for source, options in sources]
    assert expected[4].search.num_simulations == pretrained.card("connect_four")["play"]["search.num_simulations"]

    def no_arrays(*args, **kwargs):
        raise AssertionError("the network's arrays were read")

    monkeypatch.setattr(ocp.Checkpointer, "restore", no_arrays)
    monkeypatch.setattr(serialization, "msgpack_restore", no_arrays)
    # The patches do stop a load of the weights (an export's loader names it as damage).
    with pytest.raises(checkpointing.CheckpointError, match="arrays were read"):
        exports.restore_model(out)
    with pytest.raises(AssertionError, match="arrays were read"):
        exports.restore_model("pretrained:connect_four")
    for (source, options), config in zip(sources, expected, strict=True):
        assert exports.restore_config(source, **options) == config, source


def test_damaged_export_is_a_clear_error(runs, tmp_path):
    out = tmp_path / "model"
    exports.export_model(runs["root"] / "straight", out)
    path = largest_data_file(out / "model")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(checkpointing.CheckpointError, match=r"export .* is damaged or truncated.*export it again"):
        azjax.load_agent(out)
    (out / "config.json").write_text('{"network": {"num_blocks": "two"}}')
    with pytest.raises(checkpointing.CheckpointError, match=r"network\.num_blocks must be an int"):
        azjax.load_agent(out)


def test_load_agent_takes_an_earlier_iteration_or_the_best(runs):
    run_dir = runs["root"] / "straight"
    latest, early = azjax.load_agent(run_dir), azjax.load_agent(run_dir, iteration=N)
    _, expected = exports.restore_model(run_dir, iteration=N)
    assert jax.tree.all(jax.tree.map(np.array_equal, early.variables, expected))
    assert not jax.tree.all(jax.tree.map(np.array_equal, early.variables, latest.variables))
    with pytest.raises(checkpointing.CheckpointError, match=f"no checkpoint of iteration 99; it has {N}, {2 * N}"):
        azjax.load_agent(run_dir, iteration=99)
    with pytest.raises(checkpointing.CheckpointError, match="has the metric 'no/such'"):
        azjax.load_agent(run_dir, best_metric="no/such")
