"""The README's `azjax ...` commands, read from its shell code blocks and run as written with only their budgets
shrunk (tests/test_readme_commands.py).

`commands(text)` finds every command: each line of a ```bash block (a trailing backslash joins the next), split at
`&&`, whose program is `azjax`, or that starts one through a launcher (`srun ... azjax ...`, `gcloud ...
--command "azjax ..."`: the azjax command itself is what a CPU runs). `shrink(argv)` lowers what a command spends
(seconds, iterations, games, simulations, the GPU presets' game batch) and keeps every other word. `run(...)` runs
one in a pseudo-terminal or with its output to a file, with progress bars on as a user has them.
"""

from __future__ import annotations

import dataclasses
import os
import pty
import re
import select
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

LAUNCHERS = ("srun", "mpirun", "gcloud")


@dataclasses.dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]  # from "azjax" on
    section: str  # the README heading above it
    cwd: str = "."  # "examples": run from the directory that holds examples/hex5.py, as the README says

    @property
    def text(self) -> str:
        return shlex.join(self.argv)

    @property
    def subcommand(self) -> str:
        return self.argv[1] if len(self.argv) > 1 else ""

    @property
    def accelerator_sized(self) -> bool:
        """A GPU preset's run or one over several processes: minutes of a CPU even with its budgets shrunk."""
        return self.subcommand == "train" and ("gpu" in self.argv or "--process-id" in self.argv)


def commands(text: str) -> list[Command]:
    """Every `azjax` command of `text`'s ```bash blocks, in order, with the heading it stands under."""
    found, section, cwd = [], "", "."
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("#"):
            section = line.lstrip("# ").strip()
        if line.strip() == "```bash":
            block = []
            index += 1
            while lines[index].strip() != "```":
                block.append(lines[index])
                index += 1
            preceding = "\n".join(lines[max(0, index - len(block) - 4):index - len(block)])
            cwd = "examples" if "from the directory that holds it" in preceding else "."
            found.extend(Command(tuple(argv), section, cwd) for argv in _block_commands(block))
        index += 1
    unique = {(command.argv, command.cwd): command for command in reversed(found)}  # the first of repeated ones
    return [command for command in found if unique[command.argv, command.cwd] is command]


def _block_commands(block: list[str]) -> list[list[str]]:
    joined, pending = [], ""
    for line in block:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    found = []
    for line in joined:
        words = shlex.split(line, comments=True)
        for part in _split_at(words, "&&"):
            argv = _azjax_argv(part)
            if argv:
                found.append(argv)
    return found


def _split_at(words: list[str], separator: str) -> list[list[str]]:
    parts, current = [], []
    for word in words:
        if word == separator:
            parts.append(current)
            current = []
        else:
            current.append(word)
    return [*parts, current]


def _azjax_argv(words: list[str]) -> list[str] | None:
    if not words:
        return None
    if words[0] == "azjax":
        return words
    if words[0] in LAUNCHERS:
        if "--command" in words:
            inner = shlex.split(words[words.index("--command") + 1])
            return inner if inner and inner[0] == "azjax" else None
        if "azjax" in words:
            return words[words.index("azjax"):]
    return None


# Budgets: the option and what it shrinks to, for each subcommand.
TRAIN_BUDGETS = {"--eval-games": "2", "--search.num_simulations": "2", "--selfplay.num_games": "8",
                 "--train.num_sgd_steps": "2"}
EVAL_BUDGETS = {"--games": "2", "--simulations": "2"}
SPEC_SIMULATIONS = "2"


def shrink(command: Command, *, resumed: bool = False) -> list[str]:
    """`command`'s argv with its budgets shrunk: a training run trains an iteration (two when it resumes a run:
    `resumed`; a `--seconds` run 3 s and its final evaluation, 2 games a baseline), a match plays 2 games, every
    search spends 2 simulations (`mcts:N` a hundredth of N, `az:RUN:N` and the options), a GPU preset plays 8
    games. Options it lacks are added."""
    argv = list(command.argv)
    sub = command.subcommand
    if sub == "train" and "--help" not in argv:
        if "--seconds" in argv:  # a time budget alone ends the run, and its end evaluates the network
            budgets = {**TRAIN_BUDGETS, "--seconds": "3"}
        else:  # an iteration (evaluations come every --eval-every, 10, iterations)
            budgets = {**TRAIN_BUDGETS, "--iterations": "2" if resumed else "1"}
        argv = _set_options(argv, budgets)
    elif sub == "eval":
        argv = _set_options(argv, EVAL_BUDGETS)
    elif sub in ("play", "serve"):
        argv = _set_options(argv, {"--simulations": "2"})
    return [_shrink_spec(word) for word in argv]


def _set_options(argv: list[str], values: dict[str, str]) -> list[str]:
    argv = list(argv)
    for option, value in values.items():
        if option in argv:
            argv[argv.index(option) + 1] = value
        else:
            argv += [option, value]
    return argv


def _shrink_spec(word: str) -> str:
    """`mcts:1600` -> `mcts:16` (a hundredth, 2 at least: a round robin's UCT agents stay distinct),
    `az:runs/c4:64:reuse` -> `az:runs/c4:2:reuse`; other words unchanged."""
    word = re.sub(r"^mcts:(\d+)$", lambda match: f"mcts:{max(2, int(match[1]) // 100)}", word)
    return re.sub(r"^(az:[^:]+(?::[^:]+)*?):\d+(:reuse|:fresh)?$", rf"\g<1>:{SPEC_SIMULATIONS}\g<2>", word)


@dataclasses.dataclass
class Result:
    argv: list[str]
    returncode: int
    output: str


def environment(cache_dir: Path) -> dict[str, str]:
    """A user's environment for the commands: the session's compilation cache and compiler settings, no other
    inherited XLA or JAX flags."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("XLA_", "JAX_", "PYTEST_")) and name != "AZJAX_COMPILE_CACHE"}
    env["AZJAX_COMPILE_CACHE"] = str(cache_dir)
    if os.environ.get("XLA_FLAGS"):  # the suite's compiler settings (conftest.TEST_XLA_FLAGS): the same results
        env["XLA_FLAGS"] = os.environ["XLA_FLAGS"]
    env["PYTHONFAULTHANDLER"] = "1"  # a crash in C++ shows its Python stack in the output
    env.setdefault("COLUMNS", "120")
    return env


def run(argv: list[str], *, cwd: Path, env: dict[str, str], terminal: bool, stdin: str = "",
        timeout: float = 600, serve_port: int | None = None) -> Result:
    """Runs `argv` (argv[0] "azjax": the installed entry point of this Python) in a pseudo-terminal (`terminal`)
    or with stdout and stderr to a file, `stdin` typed in. With `serve_port`, waits until the page answers there,
    then sends SIGINT (Ctrl-C) as a user stops the server."""
    argv = [str(Path(sys.executable).with_name("azjax")), *argv[1:]]
    if terminal:
        leader, follower = pty.openpty()
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=follower, stdout=follower, stderr=follower,
                                   start_new_session=True)
        os.close(follower)
        if stdin:
            os.write(leader, stdin.encode())
        output = _read_terminal(leader, process, timeout, serve_port)
        os.close(leader)
        return Result(argv, process.returncode, output)
    log = cwd / f".out-{time.monotonic_ns()}.txt"
    with log.open("w") as out:
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=out, stderr=out,
                                   start_new_session=True, text=True)
        assert process.stdin is not None
        process.stdin.write(stdin)
        process.stdin.close()
        if serve_port is not None:
            _stop_server_when_up(process, serve_port, timeout)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    output = log.read_text(errors="replace")
    log.unlink()
    return Result(argv, process.returncode, output)


def _read_terminal(leader: int, process: subprocess.Popen, timeout: float, serve_port: int | None) -> str:
    chunks, deadline, stopped = [], time.monotonic() + timeout, False
    while True:
        if serve_port is not None and not stopped and _answers(serve_port):
            process.send_signal(signal.SIGINT)
            stopped = True
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the terminal closed: every process holding it has exited
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
        if time.monotonic() > deadline:
            process.kill()
            chunks.append(b"\n[killed: past the test's timeout]\n")
            break
    process.wait()
    return b"".join(chunks).decode(errors="replace")


def _stop_server_when_up(process: subprocess.Popen, port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        if _answers(port):
            process.send_signal(signal.SIGINT)
            return
        time.sleep(0.2)


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
