"""One run over two processes on loopback (jax.distributed, each process with one CPU device, talking through
gloo): `azjax train --coordinator-address ... --num-processes 2 --process-id I` in both equals one process over two
devices, its checkpoint resumes in a single process, a process that cannot reach its coordinator stops with a
clear error instead of hanging, and a killed process stops the other within about the timeout."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import jax
import numpy as np
import pytest
from tiny import TEST_XLA_FLAGS

from azjax import checkpointing, exports, rundir

COMMAND = [sys.executable, "-c", "import sys; from azjax.cli import main; sys.exit(main())"]
ITERATIONS = 3


@pytest.fixture(scope="module", autouse=True)
def shared_compile_cache(tmp_path_factory):
    """The module's processes share one persistent compilation cache (the CLI's, through AZJAX_COMPILE_CACHE): a run
    of the TINY config over two processes compiles its programs, and the later runs can load them."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AZJAX_COMPILE_CACHE", str(tmp_path_factory.mktemp("multihost_compile_cache")))
        yield


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def environment(devices: int) -> dict:
    # AZJAX_COMPILE_CACHE comes from os.environ: the module's shared cache (shared_compile_cache).
    return dict(os.environ, JAX_PLATFORMS="cpu",
                XLA_FLAGS=f"{TEST_XLA_FLAGS} --xla_force_host_platform_device_count={devices}")


def train_args(config_path, out, *extra: str, eval_every: int = 0) -> list[str]:
    # The evaluation against the random player and on the labelled positions only: what splits over the processes
    # is the same for every opponent, and each opponent's search is another program to compile in every process.
    return [*COMMAND, "train", "--config", str(config_path), "--out", str(out), "--iterations", str(ITERATIONS),
            "--eval-every", str(eval_every), "--eval-opponents", "random", "--checkpoint-every", "2", "--no-progress",
            *extra]


def losses(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_config):
    """The same TINY run over two processes (one device each) and in one process over two devices, both
    evaluated at their last iteration."""
    root = tmp_path_factory.mktemp("multihost")
    rundir.write_config(root, tiny_config)
    config_path = root / "config.json"
    port = free_port()
    processes = [
        subprocess.Popen(train_args(config_path, root / "two", "--coordinator-address", f"localhost:{port}",
                                    "--num-processes", "2", "--process-id", str(i), "--distributed-timeout", "60",
                                    eval_every=ITERATIONS),
                         env=environment(1), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for i in range(2)
    ]
    outputs = [process.communicate(timeout=600)[0] for process in processes]
    for process, output in zip(processes, outputs, strict=True):
        assert process.returncode == 0, output
    single = subprocess.run(train_args(config_path, root / "one", "--devices", "2", eval_every=ITERATIONS),
                            env=environment(2),
                            capture_output=True, text=True, timeout=600)
    assert single.returncode == 0, single.stdout + single.stderr
    return root, config_path, outputs


# Two processes under a coordinator's deadline; the default suite keeps the split over two devices of one process
# (tests/test_data_parallel.py).
@pytest.mark.slow
def test_two_processes_equal_one_process_over_two_devices(runs):
    root, _, outputs = runs
    assert "2 cpu devices over 2 processes" in outputs[0] and "Devices" not in outputs[1]  # process 0 talks
    two, one = losses(root / "two"), losses(root / "one")
    assert [r["iteration"] for r in two] == list(range(1, ITERATIONS + 1))
    for a, b in zip(two, one, strict=True):
        for name in ("loss", "policy_loss", "value_loss", "game_length", "player0_win_rate", "positions_added"):
            np.testing.assert_allclose(a[name], b[name], rtol=1e-4, atol=1e-5, err_msg=name)
    # The evaluation's games were split over both processes: the same games as over one process's two devices.
    evaluated = [name for name in two[-1] if name.startswith("eval/")]
    assert "eval/random" in evaluated and "eval/optimal_move_rate" in evaluated
    for name in evaluated:
        np.testing.assert_allclose(two[-1][name], one[-1][name], atol=1e-6, err_msg=name)
    _, two_model = exports.restore_model(root / "two")
    _, one_model = exports.restore_model(root / "one")
    for a, b in zip(jax.tree.leaves(two_model), jax.tree.leaves(one_model), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-3, atol=1e-5)


@pytest.mark.slow  # see test_two_processes_equal_one_process_over_two_devices
def test_a_two_process_run_resumes_in_one_process(runs):
    root, _, _ = runs
    resumed = subprocess.run([*COMMAND, "train", "--out", str(root / "two"), "--iterations", str(ITERATIONS + 1),
                              "--eval-every", "0", "--no-progress", "--devices", "1"], env=environment(1),
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"from iteration {ITERATIONS}" in resumed.stdout
    assert losses(root / "two")[-1]["iteration"] == ITERATIONS + 1


def test_an_unreachable_coordinator_is_a_clear_error(tmp_path, tiny_config):
    rundir.write_config(tmp_path, tiny_config)
    lonely = subprocess.run(train_args(tmp_path / "config.json", tmp_path / "run", "--coordinator-address",
                                       f"localhost:{free_port()}", "--num-processes", "2", "--process-id", "1",
                                       "--distributed-timeout", "5"),
                            env=environment(1), capture_output=True, text=True, timeout=300)
    assert lonely.returncode == 1
    assert "could not join the other processes" in lonely.stderr and "check that process 0 runs" in lonely.stderr


def test_the_three_flags_go_together(tmp_path, tiny_config):
    rundir.write_config(tmp_path, tiny_config)
    partial = subprocess.run(train_args(tmp_path / "config.json", tmp_path / "run", "--num-processes", "2"),
                             env=environment(1), capture_output=True, text=True, timeout=300)
    assert partial.returncode == 2 and "together" in partial.stderr


@pytest.mark.slow  # 67 s on 2 cores; the default suite keeps the two-process run's equality and its resume
def test_a_dead_process_stops_the_other_and_the_checkpoint_stays(tmp_path, tiny_config):
    """Process 1 is killed mid-run: process 0 stops within about the timeout (jax's heartbeat; it says that a task
    died), never hangs, and the last checkpoint resumes in one process."""
    rundir.write_config(tmp_path, tiny_config)
    port, out = free_port(), tmp_path / "run"
    processes = [
        subprocess.Popen([*train_args(tmp_path / "config.json", out, "--coordinator-address", f"localhost:{port}",
                                      "--num-processes", "2", "--process-id", str(i), "--distributed-timeout", "10"),
                          "--iterations", "1000000"],
                         env=environment(1), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for i in range(2)
    ]
    deadline = time.monotonic() + 300
    while checkpointing.latest_iteration(out) is None and time.monotonic() < deadline:
        time.sleep(1)
    assert checkpointing.latest_iteration(out) is not None, "no checkpoint within 300 s"
    processes[1].kill()
    killed = time.monotonic()
    output = processes[0].communicate(timeout=120)[0]
    processes[1].communicate()
    assert processes[0].returncode != 0 and time.monotonic() - killed < 60
    assert "another task died" in output or "heartbeat timeout" in output
    last = checkpointing.latest_iteration(out)
    resumed = subprocess.run([*COMMAND, "train", "--out", str(out), "--iterations", str(last + 1), "--eval-every",
                              "0", "--no-progress", "--devices", "1"], env=environment(1), capture_output=True,
                             text=True, timeout=600)
    assert resumed.returncode == 0 and f"from iteration {last}" in resumed.stdout, resumed.stdout + resumed.stderr


@pytest.mark.slow  # 34 s on 2 cores; the default suite keeps the two-process run's equality and its resume
def test_a_stop_asked_of_one_process_stops_both_at_the_same_iteration(tmp_path, tiny_config):
    """SIGTERM to process 1 alone, in a run bounded by --seconds: both stop after the same iteration (every
    process follows process 0's clock and any one's stop request), exit 0 and leave a checkpoint of it; without
    that agreement one would wait for the other until the heartbeat timeout."""
    rundir.write_config(tmp_path, tiny_config)
    port, out = free_port(), tmp_path / "run"
    processes = [
        subprocess.Popen([*train_args(tmp_path / "config.json", out, "--coordinator-address", f"localhost:{port}",
                                      "--num-processes", "2", "--process-id", str(i), "--distributed-timeout", "10"),
                          "--iterations", "1000000", "--seconds", "600"],
                         env=environment(1), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for i in range(2)
    ]
    deadline = time.monotonic() + 300
    while checkpointing.latest_iteration(out) is None and time.monotonic() < deadline:
        time.sleep(1)
    processes[1].send_signal(signal.SIGTERM)
    outputs = [process.communicate(timeout=120)[0] for process in processes]
    assert [process.returncode for process in processes] == [0, 0], outputs
    last = losses(out)[-1]["iteration"]
    assert f"Stopped (interrupted): iteration {last}" in outputs[0]
    assert checkpointing.latest_iteration(out) == last


@pytest.mark.slow  # the arena's split over two devices of one process: tests/test_data_parallel.py (-m slow too)
def test_azjax_eval_over_two_processes_plays_the_same_games_as_one_process(runs):
    """`azjax eval` with the three flags splits its games over both processes' devices: the same table as one
    process over two devices; process 0 alone prints and writes --json."""
    root, _, _ = runs
    agents = [f"az:{root / 'two'}", "random", "onestep"]
    port = free_port()
    processes = [
        subprocess.Popen([*COMMAND, "eval", *agents, "--games", "8", "--opening-moves", "1",
                          "--json", str(root / f"eval{i}.json"), "--coordinator-address", f"localhost:{port}",
                          "--num-processes", "2", "--process-id", str(i), "--distributed-timeout", "60"],
                         env=environment(1), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for i in range(2)
    ]
    outputs = [process.communicate(timeout=600)[0] for process in processes]
    assert [process.returncode for process in processes] == [0, 0], outputs
    single = subprocess.run([*COMMAND, "eval", *agents, "--games", "8", "--opening-moves", "1", "--devices", "2",
                             "--json", str(root / "eval_one.json")],
                            env=environment(2), capture_output=True, text=True, timeout=600)
    assert single.returncode == 0, single.stdout + single.stderr
    assert "on 2 cpu devices" in outputs[0] and "Elo" in outputs[0] and "Elo" not in outputs[1]
    assert not (root / "eval1.json").exists()
    two, one = (json.loads((root / name).read_text()) for name in ("eval0.json", "eval_one.json"))
    assert two["matches"] == one["matches"] and len(two["matches"]) == 3
