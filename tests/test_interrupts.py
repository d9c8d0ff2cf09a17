"""Stopping `azjax train` as a user does, with the progress bar on in a terminal: SIGINT or SIGTERM mid-run and the
same command again (it resumes and finishes, `--seconds` runs through their final evaluation), Ctrl-C twice while
it compiles (exit 130 at once, no crash), and a run over several processes whose other processes never come (one
line, no abort from C++)."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from readme_commands import environment, free_port
from tiny import cli_args

from azjax import checkpointing, interrupts, rundir

CRASHES = ("Traceback", "Fatal Python error", "Segmentation fault", "Check failure")


class Terminal:
    """`azjax ARGS` in a pseudo-terminal of its own (stdin, stdout and stderr), read as it runs."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path):
        self._leader, follower = pty.openpty()
        azjax = str(Path(sys.executable).with_name("azjax"))
        self.process = subprocess.Popen([azjax, *map(str, args)], stdin=follower, stdout=follower, stderr=follower,
                                        env=env, cwd=cwd, start_new_session=True)
        os.close(follower)
        self.output = ""

    def read(self, timeout: float = 0.2) -> None:
        ready, _, _ = select.select([self._leader], [], [], timeout)
        if ready:
            try:
                self.output += os.read(self._leader, 65536).decode(errors="replace")
            except OSError:  # closed: the process has exited
                pass

    def wait_for(self, condition, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while not condition() and self.process.poll() is None and time.monotonic() < deadline:
            self.read()
        assert condition(), f"exit {self.process.poll()}:\n{self.output[-3000:]}"

    def finish(self, timeout: float = 300) -> int:
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            self.read()
        if self.process.poll() is None:
            self.process.kill()
        for _ in range(20):  # what is still in the terminal after the exit
            self.read(0.05)
        os.close(self._leader)
        return self.process.wait()


@pytest.fixture(scope="module")
def env(compile_cache_dir):
    return environment(compile_cache_dir)


def tiny_train(tmp_path: Path, tiny_overrides: dict, budget: list[str]) -> list[str]:
    return ["train", "--out", tmp_path / "run", *budget, "--eval-games", "2", "--eval-opponents", "random",
            "--devices", "1", *cli_args(tiny_overrides)]


SECONDS, ITERATIONS = ["--seconds", "6"], ["--iterations", "40", "--eval-every", "20"]


@pytest.mark.parametrize(("budget", "signum"), [
    # A run stopped and resumed in two processes each: -m slow. The default suite keeps a process stopped by
    # SIGTERM, saved and resumed (tests/test_checkpointing.py, test_sigterm_finishes_the_iteration_saves_and_exits_0),
    # and Ctrl-C twice below.
    pytest.param(SECONDS, signal.SIGINT, marks=pytest.mark.slow),
    pytest.param(ITERATIONS, signal.SIGTERM, marks=pytest.mark.slow),
    pytest.param(SECONDS, signal.SIGTERM, marks=pytest.mark.slow),
    pytest.param(ITERATIONS, signal.SIGINT, marks=pytest.mark.slow),
], ids=["seconds-SIGINT", "iterations-SIGTERM", "seconds-SIGTERM", "iterations-SIGINT"])
def test_a_stopped_run_resumes_with_the_same_command(tmp_path, tiny_overrides, env, budget, signum):
    command = tiny_train(tmp_path, tiny_overrides, budget)
    first = Terminal(command, env, tmp_path)
    first.wait_for(lambda: rundir.read_metrics(tmp_path / "run"))  # an iteration done
    first.process.send_signal(signum)
    assert first.finish() == 0, first.output[-3000:]
    assert f"{signal.Signals(signum).name} received" in first.output
    assert not [sign for sign in CRASHES if sign in first.output], first.output[-3000:]
    stopped_at = checkpointing.latest_iteration(tmp_path / "run")
    assert stopped_at is not None and stopped_at >= 1

    again = Terminal(command, env, tmp_path)
    assert again.finish() == 0, again.output[-3000:]
    assert not [sign for sign in CRASHES if sign in again.output], again.output[-3000:]
    assert f"from iteration {stopped_at}" in again.output  # "Resuming ... from iteration N" or "Resuming with"
    records = rundir.read_metrics(tmp_path / "run")
    assert records[-1]["iteration"] > stopped_at
    assert any("eval/random" in record for record in records if record["iteration"] > stopped_at), \
        "the resumed session evaluated"
    if "--iterations" in budget:
        assert records[-1]["iteration"] == 40
        assert "Done (iterations)" in again.output


def test_ctrl_c_twice_while_compiling_stops_at_once(tmp_path, tiny_overrides, env):
    run = Terminal([*tiny_train(tmp_path, tiny_overrides, ["--iterations", "5"]), "--no-compile-cache"], env,
                   tmp_path)
    run.wait_for(lambda: "Compiling the training iteration" in run.output)
    run.process.send_signal(signal.SIGINT)
    run.wait_for(lambda: "SIGINT received" in run.output)
    run.process.send_signal(signal.SIGINT)
    code = run.finish()
    assert code == 130, run.output[-3000:]
    assert "Stopped at once; no checkpoint was written. Resume with: azjax train --out" in run.output
    assert not [sign for sign in CRASHES if sign in run.output], run.output[-3000:]


def test_a_second_ctrl_c_while_jax_traces_waits_for_it_in_the_library():
    """Through `train` in Python (a notebook), a second Ctrl-C while JAX traces raises KeyboardInterrupt only once
    the tracing is done: raised inside it, the interpreter crashes at exit."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with interrupts.StopSignals(lambda _: None) as stop:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)  # Python runs the handler between bytecodes
            assert stop.requested == "SIGINT"
            finished = False
            with pytest.raises(KeyboardInterrupt):
                with stop.holding():
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(0.3)
                    finished = True
            assert finished
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_second_signal_goes_to_the_handler_before(tmp_path):
    """`azjax train` installs a handler that exits at once: the second signal reaches it, not a KeyboardInterrupt."""
    seen = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        with interrupts.StopSignals(lambda _: None) as stop, stop.holding():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
            assert seen == [signal.SIGINT]  # at once, inside the held section too
    finally:
        signal.signal(signal.SIGINT, previous)


def test_process_0_whose_others_never_join_says_so_in_one_line(tmp_path, env):
    port = free_port()
    result = subprocess.run(
        [str(Path(sys.executable).with_name("azjax")), "train", "--out", str(tmp_path / "run"),
         "--coordinator-address", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", "0",
         "--distributed-timeout", "3"],
        capture_output=True, text=True, env=env, timeout=120, check=False)
    assert result.returncode == 1, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith("azjax train: error: not all 2 processes joined through the coordinator at "
                               f"127.0.0.1:{port} within 3 s")
    assert not (tmp_path / "run").exists()
