"""Every `azjax ...` command of the README's code blocks (and the docs' pages') runs as written, budgets shrunk,
progress bars on, in a pseudo-terminal and with its output to a file: exit status 0, no traceback, no crash. A
command added to the README is run here without anyone writing a test for it (tests/readme_commands.py reads
them).

The default suite parses every command with azjax's own parser (every option exists and takes its value) and runs
the README's first page (the commands above its "Train" section, the first ones a user types: set up and train, play
and list the shipped agents, a match) in a terminal, as a user first meets them. The slow suite (`pytest -m slow`)
runs every command, in a terminal and with its output to a file, and the commands of an accelerator's size (the GPU
presets' runs, a run over two processes) with their output to a file, as a batch job runs them: minutes of the CPU
each. What the commands do is tested
module by module (tests/test_cli.py and the others); here, that the documented spelling of each still runs.

The commands run in README order in one directory per way of running, so that a later command finds the runs an
earlier one trained (`runs/my-run`, `runs/c4`; `runs/hex5` from examples/, where the README runs hex5's). The two
processes of the several-hosts example run together on this machine (the coordinator on 127.0.0.1); `srun` and a
TPU pod's `gcloud ... --command` run the azjax command they launch, as one process on a CPU.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
from readme_commands import Command, commands, environment, free_port, run, shrink

from azjax.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
# The docs' pages too, after the README, in their order: their commands run from the repository root likewise.
DOCUMENTED = "\n".join([README, *(page.read_text() for page in sorted((ROOT / "docs").rglob("*.md")))])
CRASHES = ("Traceback (most recent call last)", "Fatal Python error", "Segmentation fault", "core dumped",
           "Check failure stack trace")

pytestmark = pytest.mark.filterwarnings("ignore")


def test_the_readme_commands_are_found():
    found = commands(README)
    subcommands = {command.subcommand for command in found}
    assert {"train", "eval", "play", "export", "pretrained", "serve", "check"} <= subcommands, subcommands
    assert len(found) >= 30
    texts = [command.text for command in found]
    assert "azjax train" in texts  # the README's first command, after its `pip install -e . &&`
    assert any("--process-id 1" in text for text in texts)  # the second host of the several-hosts example
    assert any(command.cwd == "examples" for command in found)  # hex5's, from the directory that holds it


def test_shrink_keeps_every_word_but_the_budgets():
    command = Command(("azjax", "eval", "pretrained:connect_four", "mcts:1600", "--games", "200", "--opening-moves",
                       "4"), "")
    assert shrink(command) == ["azjax", "eval", "pretrained:connect_four", "mcts:16", "--games", "2",
                               "--opening-moves", "4", "--simulations", "2"]
    train = Command(("azjax", "train", "--game", "connect_four", "--seconds", "600"), "")
    shrunk = shrink(train)
    assert shrunk[:6] == ["azjax", "train", "--game", "connect_four", "--seconds", "3"]
    assert "--iterations" not in shrunk  # the time alone ends it, as the README's run
    reuse = Command(("azjax", "play", "az:runs/c4:64:reuse"), "")
    assert shrink(reuse)[2] == "az:runs/c4:2:reuse"


def _prepare(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "examples", root / "examples", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "runs"))  # a checkout's examples/, as a user has it


def _argv_here(command: Command, root: Path, coordinator: str | None) -> list[str]:
    trained = {"runs/my-run", "runs/c4", "runs/hex5"}
    resumed = command.subcommand == "train" and "--out" in command.argv and (
        command.argv[command.argv.index("--out") + 1] in trained
        and (root / command.cwd / command.argv[command.argv.index("--out") + 1]).exists())
    argv = shrink(command, resumed=resumed)
    argv = [word.replace("/shared/", str(root / "shared") + "/") for word in argv]
    if coordinator is not None:
        argv[argv.index("--coordinator-address") + 1] = coordinator
        argv += ["--distributed-timeout", "120"]
    return argv


def _run_all(root: Path, cache: Path, terminal: bool, *, accelerator_sized: bool,
             found: list[Command] | None = None) -> list[str]:
    """Runs the documented commands in `root` (`found`, or every one of an accelerator's size or every other);
    one line per failure (its command, status and output's tail)."""
    _prepare(root)
    env = environment(cache)
    failures, seconds = [], []
    if found is None:
        found = [command for command in commands(DOCUMENTED) if command.accelerator_sized == accelerator_sized]
    index = 0
    while index < len(found):
        command = found[index]
        group = [command]
        if "--process-id" in command.argv:  # the processes of one run start together
            while index + len(group) < len(found) and "--process-id" in found[index + len(group)].argv:
                group.append(found[index + len(group)])
        index += len(group)
        coordinator = f"127.0.0.1:{free_port()}" if len(group) > 1 else None
        tick = time.monotonic()
        if len(group) > 1:
            results = _run_together([_argv_here(c, root, coordinator) for c in group], root / command.cwd, env,
                                    terminal)
        else:
            argv = _argv_here(command, root, None)
            port = None
            if command.subcommand == "serve":
                port = free_port()
                argv += ["--port", str(port)]
            stdin = "quit\n" if command.subcommand == "play" else ""
            results = [run(argv, cwd=root / command.cwd, env=env, terminal=terminal, stdin=stdin, serve_port=port)]
        seconds.append((time.monotonic() - tick, command.text))
        for result in results:
            crashed = [sign for sign in CRASHES if sign in result.output]
            if result.returncode != 0 or crashed:
                failures.append(f"{' '.join(result.argv[1:])} (from {command.cwd}): exit {result.returncode}"
                                f"{', ' + crashed[0] if crashed else ''}\n{result.output[-3000:]}")
    print("\n".join(f"{spent:6.1f} s  {text}" for spent, text in seconds))  # shown by pytest -rP
    return failures


def _run_together(argvs: list[list[str]], cwd: Path, env: dict[str, str], terminal: bool) -> list:
    """The processes of one run, each in its own thread (a run waits for all of them to join)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(argvs)) as pool:
        futures = [pool.submit(run, argv, cwd=cwd, env=env, terminal=terminal) for argv in argvs]
        return [future.result() for future in futures]


def opening_commands() -> list[Command]:
    """The README's first page, the commands above its "Train" section: the two opening commands' `azjax train`,
    and the shipped agents played, listed and matched. -m slow runs the rest (every README command)."""
    found = commands(README)
    opening = [command for command in found[:next(index for index, command in enumerate(found)
                                                   if command.section == "Train")]]
    assert opening, "the README should have commands above its Train section"
    return opening


def test_every_documented_command_parses(capsys):
    """Each command of the README and the docs, parsed by `azjax`'s parser: its subcommand and every option exist
    (spelt in full) and take the values written (`--help` prints the help and exits 0)."""
    parser = build_parser()
    documented = commands(DOCUMENTED)
    assert documented
    for command in documented:
        try:
            args, unknown = parser.parse_known_args(list(command.argv[1:]))
        except SystemExit as error:
            if error.code == 0 and "--help" in command.argv:
                continue
            pytest.fail(f"{command.text} (in {command.section!r}): azjax's parser exits {error.code}: "
                        f"{capsys.readouterr().err}")
        assert not unknown, f"{command.text} (in {command.section!r}): unknown {unknown}"
        assert args.command == command.subcommand


def test_the_opening_commands_run_in_a_terminal(tmp_path, compile_cache_dir):
    """As a user types them first: stdin, stdout and stderr a terminal, progress bars and lines drawn."""
    opening = opening_commands()
    assert [command.subcommand for command in opening[:2]] == ["train", "play"], opening  # set up and train, play
    failures = _run_all(tmp_path / "user", compile_cache_dir, terminal=True, accelerator_sized=False,
                        found=opening)
    assert not failures, "\n\n".join(failures)


@pytest.mark.slow
def test_every_readme_command_runs_in_a_terminal(tmp_path, compile_cache_dir):
    """As a user types them: stdin, stdout and stderr a terminal, progress bars and lines drawn."""
    failures = _run_all(tmp_path / "user", compile_cache_dir, terminal=True, accelerator_sized=False)
    assert not failures, "\n\n".join(failures)


@pytest.mark.slow
def test_every_readme_command_runs_with_its_output_to_a_file(tmp_path, compile_cache_dir):
    """As in a log or a batch job: `azjax ... > log 2>&1`, the progress bars written into the file."""
    failures = _run_all(tmp_path / "user", compile_cache_dir, terminal=False, accelerator_sized=False)
    assert not failures, "\n\n".join(failures)


@pytest.mark.slow
def test_the_readme_commands_of_an_accelerators_size_run_on_a_cpu(tmp_path, compile_cache_dir):
    """The GPU presets' runs and the run over two processes (on one machine, the coordinator on 127.0.0.1):
    their shapes, a few minutes of a CPU even shrunk. Once, with the output to a file, as a batch job runs them
    (the tests above draw the progress bars both ways)."""
    failures = _run_all(tmp_path / "user", compile_cache_dir, terminal=False, accelerator_sized=True)
    assert not failures, "\n\n".join(failures)


def test_azjax_is_the_installed_entry_point():
    """The commands run the `azjax` script of this Python, as a user's shell finds it after `pip install`."""
    found = shutil.which("azjax")
    assert found is not None
    assert subprocess.run([found, "--help"], capture_output=True, text=True, check=False).returncode == 0
