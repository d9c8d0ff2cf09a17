"""Memory known before it is spent: compile a program ahead, read XLA's memory analysis of it, and refuse to run
one that cannot fit, with one line that names the program, what it needs, what there is and what lowers it.

    compiled = compile_within_memory(jax.jit(fn).lower(*args), what="the evaluation", lower_it="fewer games")

A program that asks for more than the device has would otherwise fail while running, with an allocator's
traceback (`RESOURCE_EXHAUSTED: Out of memory allocating 209432563296 bytes`), after the work before it was spent.

The memory a device has: on a GPU or TPU, what its allocator has left (`Device.memory_stats`: bytes_limit minus
bytes_in_use); on the CPU, the host's available memory (/proc/meminfo's MemAvailable), shared by every CPU
device of the process. `AZJAX_MEMORY_LIMIT` (bytes, or a size such as 2G or 500M, per device) sets it instead:
to keep a run within a share of a machine, and to try this path on a machine of any size.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax

MEMORY_LIMIT_ENV = "AZJAX_MEMORY_LIMIT"
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


class MemoryBudgetError(RuntimeError):
    """A compiled program needs more memory than its device has; the message is one line that names the program,
    both sizes and the option that lowers the need. Nothing ran."""

    def __init__(self, message: str, *, what: str, needed: int, available: int):
        super().__init__(message)
        self.what = what
        self.needed = needed
        self.available = available


def parse_size(text: str) -> int:
    """Bytes from "1234", "500M", "2G", "1.5GB", "2 GiB" (powers of 1024).

    Raises:
      ValueError: not a size.
    """
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(?:I?B)?\s*", text.upper())
    if match is None:
        raise ValueError(f"{MEMORY_LIMIT_ENV}={text!r} is not a size: give bytes or e.g. 500M, 2G")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def format_size(num_bytes: float) -> str:
    """'1.5 GB', '209.4 GB', '37 MB': decimal units, as users read them."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if num_bytes >= scale:
            value = num_bytes / scale
            return f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{num_bytes:.0f} bytes"


def available_memory(device: jax.Device) -> int | None:
    """Bytes a new program may use on `device` (see the module's docstring); None where nothing says."""
    setting = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if setting:
        return parse_size(setting)
    if device.platform != "cpu":
        stats = device.memory_stats() or {}
        if "bytes_limit" in stats:
            return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
        return None
    return _host_available()


def _host_available() -> int | None:
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        pass
    else:
        found = re.search(r"^MemAvailable:\s+(\d+) kB", text, re.MULTILINE)
        if found:
            return int(found.group(1)) * 1024
    try:  # not Linux: all of the physical memory
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def needed_memory(compiled: jax.stages.Compiled) -> int | None:
    """Bytes a compiled program allocates when it runs, on each of its devices: its temporaries, its outputs
    (less those that reuse a donated input) and its code, by XLA's memory analysis; None where the backend gives
    none. Its arguments are not counted: they are in memory already."""
    analysis = compiled.memory_analysis()
    if analysis is None:
        return None
    if isinstance(analysis, Sequence):  # one per device on some backends: the largest
        analyses = [a for a in analysis if a is not None]
        if not analyses:
            return None
        return max(_needed(a) for a in analyses)
    return _needed(analysis)


def _needed(analysis: Any) -> int:
    return int(analysis.temp_size_in_bytes + analysis.output_size_in_bytes - analysis.alias_size_in_bytes
               + analysis.generated_code_size_in_bytes)


def check_fits(compiled: jax.stages.Compiled, *, what: str, lower_it: str,
               devices: Sequence[jax.Device] | None = None) -> int | None:
    """Raises `MemoryBudgetError` if `compiled` needs more than its devices have; else returns what it needs
    (bytes per device, None where unknown).

    Args:
      compiled: an ahead-of-time compiled program (`jax.jit(f).lower(...).compile()`).
      what: the program, as the user knows it ("the evaluation during training (64 games against ...)").
      lower_it: what to change to need less ("pass fewer games with --eval-games").
      devices: the devices it runs on (default: the first of `jax.devices()`). CPU devices share the host's
        memory, so there each one's need counts once per device.
    """
    devices = list(devices) if devices else jax.devices()[:1]
    needed = needed_memory(compiled)
    available = available_memory(devices[0])
    if needed is None or available is None:
        return needed
    shared = sum(device.platform == "cpu" for device in devices) if devices[0].platform == "cpu" else 1
    total = needed * max(shared, 1)
    if total > available:
        place = "the host" if devices[0].platform == "cpu" else f"each {devices[0].device_kind}"
        raise MemoryBudgetError(
            f"{what} would need {format_size(total)} of memory, and {place} has {format_size(available)} free"
            f"{' (' + MEMORY_LIMIT_ENV + ')' if os.environ.get(MEMORY_LIMIT_ENV, '').strip() else ''}; "
            f"nothing was run. To need less: {lower_it}",
            what=what, needed=total, available=available)
    return needed


def compile_within_memory(lowered: jax.stages.Lowered, *, what: str, lower_it: str,
                          devices: Sequence[jax.Device] | None = None) -> jax.stages.Compiled:
    """A lowered program (`jax.jit(f).lower(*args)`) compiled, after `check_fits`: call it with arguments of the
    shapes it was lowered for (static arguments left out).

    Raises:
      MemoryBudgetError: it would need more memory than its devices have.
    """
    compiled = lowered.compile()
    check_fits(compiled, what=what, lower_it=lower_it, devices=devices)
    return compiled
