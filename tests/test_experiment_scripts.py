"""What every script under experiments/ (benchmarks/, studies/NAME/, tools/) shares: its `if __name__ ==
"__main__":` goes through `benchmark.run_main`, so that Ctrl-C prints one line and exits with status 130 (a stand-in
script interrupted in a subprocess: in Python, inside a call that never returns to Python, after a handler of its own
kept the first Ctrl-C; marked slow, search_curve.py itself), and no default output of a script is a file that git
tracks."""

from __future__ import annotations

import argparse
import ast
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
EXPERIMENTS = REPO / "experiments"
SCRIPTS = sorted(path for path in EXPERIMENTS.rglob("*.py") if "def main(" in path.read_text())

# A script as the experiments are: its main notes what it writes, prints without flushing, says it has started (a
# file), then waits, either in Python (a sleep, which the signal interrupts) or with SIGINT blocked in the main thread
# (as inside a long compilation: the Python handler cannot run, the watching thread must stop it).
STAND_IN = textwrap.dedent("""
    import pathlib, signal, sys, time
    sys.path.insert(0, {experiments!r})
    import benchmark

    def main():
        benchmark.note_written("runs/stand-in/rows.md")
        if sys.argv[1] == "own":  # a handler of its own for the first Ctrl-C, as trainer.train installs
            handled = []
            previous = signal.signal(signal.SIGINT, lambda signum, frame: handled.append(signum))
            pathlib.Path(sys.argv[2] + "-own").touch()
            while not handled:
                time.sleep(0.01)
            signal.signal(signal.SIGINT, previous)
            pathlib.Path(sys.argv[2] + "-handled").touch()
        if sys.argv[1] == "blocked":
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
        print("a line not flushed", end="")
        pathlib.Path(sys.argv[2]).touch()
        time.sleep(120)
        return 0

    if __name__ == "__main__":
        benchmark.run_main(main)
""")


def wait_for(path: pathlib.Path, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while not path.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists(), process.communicate()


@pytest.mark.parametrize("waits", ["python", "blocked", "own"])
def test_ctrl_c_prints_one_line_and_exits_130(tmp_path, waits):
    """In Python, in a call that never returns to Python (SIGINT blocked in the main thread) and after a handler of
    the script's own has kept the first Ctrl-C (the watching thread leaves that one alone)."""
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN.format(experiments=str(EXPERIMENTS)))
    started = tmp_path / "started"
    process = subprocess.Popen([sys.executable, str(script), waits, str(started)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        if waits == "own":
            wait_for(tmp_path / "started-own", process)
            process.send_signal(signal.SIGINT)
            wait_for(tmp_path / "started-handled", process)
        wait_for(started, process)
        time.sleep(0.2)
        assert process.poll() is None
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130
    assert stderr == "Interrupted: written so far: runs/stand-in/rows.md\n"
    assert stdout == "a line not flushed"  # flushed before the process ended
    assert "Traceback" not in stdout + stderr


def test_the_line_says_what_was_written():
    import benchmark  # experiments/ is on the path (conftest.py)

    benchmark._written.clear()
    assert benchmark.interrupted_line() == "Interrupted."
    benchmark.note_written(pathlib.Path("runs/a"))
    benchmark.note_written("runs/b.md")
    benchmark.note_written("runs/a")
    assert benchmark.interrupted_line() == "Interrupted: written so far: runs/a, runs/b.md"
    benchmark._written.clear()


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_every_script_runs_its_main_through_run_main(script):
    """The last `if __name__ == "__main__":` block of each script is `run_main(main)` (after an import of it)."""
    tree = ast.parse(script.read_text())
    blocks = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) ==
              "__name__ == '__main__'"]
    assert blocks, f"{script.name} has no `if __name__ == '__main__':`"
    assert ast.unparse(blocks[-1].body[-1]) == "run_main(main)", script.name


class _Parser(Exception):
    """Raised in place of parsing: carries the parser a script's main built."""

    def __init__(self, parser: argparse.ArgumentParser):
        super().__init__()
        self.parser = parser


def script_parser(module, monkeypatch) -> argparse.ArgumentParser:
    """The argument parser `module.main` builds (stopped where it would parse)."""

    def capture(self, *args, **kwargs):
        raise _Parser(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    with pytest.raises(_Parser) as caught:
        module.main([])
    monkeypatch.undo()
    return caught.value.parser


def tracked_files() -> set[pathlib.Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return {pathlib.Path(name) for name in listed.split("\0") if name}


def in_repo(path: pathlib.Path | str) -> pathlib.Path:
    """`path` relative to the repository, where a script run from the repository's root writes it."""
    path = pathlib.Path(path)
    return (path if path.is_absolute() else REPO / path).resolve().relative_to(REPO)


def written_over(path: pathlib.Path | str, tracked: set[pathlib.Path]) -> list[pathlib.Path]:
    """The tracked files that writing `path` (a file, or a directory of files) would replace."""
    where = in_repo(path)
    return sorted(file for file in tracked if file == where or where in file.parents)


# The options that name what a script writes (files, or directories it fills with files of its own names).
OUTPUT_OPTIONS = {"out", "out_dir", "results_dir", "runs_dir", "run_dir", "json", "trace"}
# The directories where scripts write new dated records (<subject>-<device>-<date>[-<variant>], today's date):
# never a committed file's name.
DATED_RECORDS = {pathlib.Path("experiments/benchmarks/results"), pathlib.Path("experiments/studies/strength/results"),
                 pathlib.Path("experiments/studies/gpu_sweep/results")}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_no_default_output_is_a_committed_file(script, load_experiment, monkeypatch):
    tracked = tracked_files()
    with load_experiment(script.stem) as module:
        parser = script_parser(module, monkeypatch)
    defaults = {action.dest: action.default for action in parser._actions if action.dest in OUTPUT_OPTIONS}
    if not defaults:
        pytest.skip(f"{script.name} has no output option")
    # A default of None is computed from the other arguments: test_computed_default_outputs_are_not_committed_files.
    over = {dest: written_over(default, tracked) for dest, default in defaults.items()
            if isinstance(default, str | pathlib.PurePath) and in_repo(default) not in DATED_RECORDS}
    assert not any(over.values()), (script.name, over)


def test_computed_default_outputs_are_not_committed_files(load_experiment):
    """The defaults that depend on other arguments: search_curve's per game, set and device, pretrain's per game."""
    from azjax.solver import positions

    tracked = tracked_files()
    # What the defaults were: the committed records (the check sees them).
    assert written_over("experiments/studies/search_curve/results/connect_four-cpu-2026-11-27.md", tracked)
    assert written_over(REPO / "azjax" / "pretrained" / "connect_four", tracked)
    with load_experiment("search_curve") as search_curve:
        for game in ("tic_tac_toe", "connect_four"):
            for position_set in (None, *positions.set_names(game)):
                for device in ("cpu", "gpu-nvidia-h200", "tpu-tpu-v5-lite"):
                    out = search_curve.default_out(game, position_set, device)
                    assert not written_over(out, tracked) and not written_over(out.with_suffix(".json"), tracked)
    with load_experiment("pretrain") as pretrain:
        for game in pretrain.GAMES:
            assert not written_over(pretrain.default_out(game), tracked), game


@pytest.mark.slow  # a real script's first row (the shipped Connect Four network judged): ~20 s on 2 cores
def test_ctrl_c_stops_a_real_script_during_its_next_search(tmp_path):
    """search_curve.py interrupted after its first row, while its 512-simulation search compiles or runs: one line
    naming what it wrote, exit status 130, and the row it finished on disk."""
    out = tmp_path / "curve.md"
    process = subprocess.Popen([sys.executable, str(EXPERIMENTS / "studies/search_curve/search_curve.py"),
                                "pretrained:connect_four",
                                "--simulations", "512", "--out", str(out)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        for line in process.stdout:
            if line.startswith("pretrained:connect_four network:"):
                break
        time.sleep(1.0)  # into the next row's compilation
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 130
    assert stderr.splitlines()[-1] == f"Interrupted: written so far: {out}, {out.with_suffix('.json')}"
    assert "Traceback" not in stdout + stderr
    assert "| pretrained:connect_four | network alone |" in out.read_text()
