"""What every benchmark script here shares: the machine description, timing a jitted function and its record
(`Measurement`), pgx where installed, tables, configs from the command line, the JSON record, and the entry point
(`run_main`: Ctrl-C as one line and exit status 130), and a module of azjax as an earlier commit had it
(`module_at_revision`: the reference of a speed-up, timed in the same run). A new benchmark is its measurement
and a few lines of these.

The scripts in benchmarks/, studies/NAME/ and tools/ import it as `benchmark`: each puts this folder on sys.path
before the import (the tests' `load_experiment` puts it there too).
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.metadata
import importlib.util
import json
import os
import pathlib
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import jax
import jax.numpy as jnp

from azjax import config as config_lib
from azjax import interrupts, presets


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit() -> str | None:
    """The commit of the azjax checkout this script sits in (with "+dirty" for local changes), if any."""
    here = pathlib.Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=here, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+dirty" if dirty.strip() else "")


def module_at_revision(module_name: str, revision: str) -> types.ModuleType | None:
    """The azjax module `module_name` (e.g. "azjax.games.brandub") as git `revision` of this checkout had it,
    imported under a name of its own beside today's (its imports are today's modules); None when its source there
    is today's. Raises ValueError naming the revision and file when git cannot show it."""
    root = pathlib.Path(__file__).resolve().parent.parent
    relative = pathlib.Path(*module_name.split(".")).with_suffix(".py")
    shown = subprocess.run(["git", "show", f"{revision}:{relative.as_posix()}"], cwd=root, capture_output=True,
                           text=True)
    if shown.returncode != 0:
        raise ValueError(f"git cannot show {relative} at {revision!r}: {shown.stderr.strip()}")
    if shown.stdout == (root / relative).read_text():
        return None
    name = f"{module_name}@{revision}"
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / relative.name
        path.write_text(shown.stdout)
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and pickling look a module up by name
        spec.loader.exec_module(module)
    return module


def machine_info() -> dict[str, Any]:
    """The facts about this machine and software that the figures depend on."""
    usable_cores: int | None
    try:
        usable_cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable_cores = os.cpu_count()
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": _cpu_model(),
        "cpu_cores": os.cpu_count(),
        "usable_cores": usable_cores,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
        "azjax": _azjax_version(),
        "azjax_commit": _git_commit(),
    }


def _azjax_version() -> str:
    try:
        return importlib.metadata.version("azjax")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree on PYTHONPATH, not installed
        return "source tree (not installed)"


def device_name() -> str:
    """This machine's first device as record names give it: "cpu" on a CPU, else <platform>-<device kind>
    (e.g. "gpu-nvidia-h200")."""
    device = jax.devices()[0]
    kind = device.device_kind if device.device_kind.lower() != device.platform.lower() else ""
    name = re.sub(r"[^A-Za-z0-9]+", "-", f"{device.platform}-{kind}").strip("-").lower()
    return name


def results_stem(subject: str, variant: str = "") -> str:
    """The name (without its extension) of a record this machine writes today, as experiments/README.md names
    them: <subject>-<device>-<date>[-<variant>], the subject a game or a benchmark, the device `device_name()`'s,
    e.g. "connect_four-gpu-nvidia-h200-DATE" or "selfplay_breakdown-cpu-DATE-connect_four"."""
    return "-".join(part for part in (subject, device_name(), datetime.date.today().isoformat(), variant) if part)


def timed(fn: Callable, args: tuple, repeats: int) -> tuple[float, list[float]]:
    """Compile seconds and the wall-clock seconds of each of `repeats` calls of the jitted `fn(*args)` (after one
    untimed call, which allocates)."""
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - start
    jax.block_until_ready(compiled(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - start)
    return compile_s, times


def median(times: Sequence[float]) -> float:
    return statistics.median(times)


@dataclasses.dataclass(frozen=True)
class Measurement:
    """The timings of one implementation in one setting (a game and batch size; a search and batch size)."""

    compile_s: float  # lowering + compilation of the jitted call
    times_s: list[float]  # one per timed call
    num_games: int  # games finished during the timed calls

    def rate(self, per_call: int) -> float:
        """`per_call` (steps, positions) per second over the median timed call."""
        return per_call / median(self.times_s)

    def best_rate(self, per_call: int) -> float:
        """`per_call` per second over the fastest timed call."""
        return per_call / min(self.times_s)


def free_network(num_actions: int) -> Callable[[dict, jax.Array], tuple[jax.Array, jax.Array]]:
    """A network that costs nothing, for timing a search without its network: uniform logits [B, num_actions] and
    zero values [B], tied to the observations by a zero factor (so that XLA still computes the observations the
    search would feed a network; a NaN there shows through)."""

    def apply(variables: dict, observation: jax.Array) -> tuple[jax.Array, jax.Array]:
        del variables
        tie = 0.0 * jnp.sum(observation.reshape(observation.shape[0], -1), axis=-1)  # [B]
        return jnp.zeros((observation.shape[0], num_actions)) + tie[:, None], tie

    return apply


def import_pgx() -> Any | None:
    """pgx, or None where it is not installed (the benchmarks then time azjax alone)."""
    try:
        import pgx  # type: ignore[import-untyped]
    except ImportError:
        return None
    return pgx


def format_rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:,.0f}"


class Table:
    """A fixed-width table printed as rows arrive: `Table([("game", "14s"), ("iteration s", "11.3f")])`, then
    `print(table.header())` and `print(table.row(game=..., ...))` with each column's key (its title, spaces
    as underscores, "/" dropped) or positionally."""

    def __init__(self, columns: Sequence[tuple[str, str]]):
        self.columns = list(columns)

    def header(self) -> str:
        return " ".join(f"{title:{_width(spec, title)}s}" if spec.endswith("s") else f"{title:>{_width(spec, title)}s}"
                        for title, spec in self.columns)

    def row(self, *values: Any) -> str:
        return " ".join(f"{value:{_width(spec, title)}{spec.lstrip('0123456789')}}"
                        for (title, spec), value in zip(self.columns, values, strict=True))


def _width(spec: str, title: str) -> int:
    digits = re.match(r"\d+", spec)
    return max(int(digits.group()) if digits else 0, len(title))


def preset_config(game: str, preset: str, overrides: Sequence[str]) -> config_lib.Config:
    """A game's preset with command-line overrides, each "field=value" (`--set network.num_channels=64 ...`)."""
    return config_lib.with_overrides(presets.get_config(game, preset),
                                     dict(item.split("=", 1) for item in overrides))


def write_json(path: pathlib.Path | str | None, results: dict) -> None:
    """Writes the results (machine description included) as indented JSON, if a path is given."""
    if path is not None:
        pathlib.Path(path).write_text(json.dumps(results, indent=2) + "\n")


# What the running script has written so far (files, run directories), for the line Ctrl-C prints; `run_main`
# empties it, `note_written` adds to it.
_written: list[str] = []


def note_written(path: pathlib.Path | str) -> None:
    """Records that the running script has written (or is writing) `path`: Ctrl-C's line then names it."""
    if str(path) not in _written:
        _written.append(str(path))


def interrupted_line() -> str:
    """The one line Ctrl-C prints: what the script has written so far, where it said (`note_written`)."""
    return f"Interrupted: written so far: {', '.join(_written)}" if _written else "Interrupted."


def run_main(main: Callable[[], object]) -> NoReturn:
    """What each script's `if __name__ == "__main__":` calls: `main()`, then exit with the status it returns (0 for
    anything but an int); Ctrl-C (SIGINT) prints one line on stderr (`interrupted_line`) and exits with status 130
    at once, no traceback (`azjax.interrupts.exit_at_once`, as `azjax train` does). While `trainer.train` runs,
    its first Ctrl-C stops the run after the iteration and the second reaches this one.
    """
    _written.clear()
    with interrupts.exit_at_once(interrupted_line):
        status = main()
    sys.exit(status if isinstance(status, int) else 0)
