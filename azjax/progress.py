"""Progress on a terminal: one line rewritten in place as matches play (`MatchProgress`) or any long loop runs
(`show_progress`, `clear_progress`)."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any


class MatchProgress:
    """Shows how far running matches have got on a terminal: after each step of a match
    (`arena.run_games(progress=...)`) the games finished and the time spent, on one line of `stream` (default:
    stderr) rewritten at most every `every` seconds. `start` each match and `done` after it; pass the same
    instance to every match, as it is a static argument of the compiled match (a new one compiles the match anew).

    The report is a host callback inside the compiled match, and JAX keeps no program with host callbacks in its
    persistent compilation cache: a match shown this way compiles anew in each process (`azjax eval` shows it only
    on a terminal). Thread-safe: with a mesh each device reports its own games."""

    def __init__(self, stream: Any = None, *, every: float = 1.0) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._every = every
        self._lock = threading.Lock()
        self._label, self._num_games, self._devices = "", 0, 1
        self._live: dict[int, int] = {}
        self._started = self._shown = 0.0
        self._steps = 0
        self.lines = 0  # reports shown so far

    def start(self, label: str, num_games: int, devices: int = 1) -> None:
        """A new match of `num_games` over `devices` devices, shown as `label`."""
        with self._lock:
            self._label, self._num_games, self._devices = label, num_games, devices
            self._live, self._steps = {}, 0
            self._started = self._shown = time.perf_counter()

    def update(self, device: Any, step: Any, live: Any) -> None:
        """A device's step `step` left `live` of its games playing (the host callback)."""
        with self._lock:
            self._live[int(device)] = int(live)
            self._steps = max(self._steps, int(step))
            now = time.perf_counter()
            if now - self._shown < self._every:
                return
            self._shown = now
            per_device = self._num_games // max(self._devices, 1)
            playing = sum(self._live.get(d, per_device) for d in range(self._devices))
            show_progress(self._stream, f"{self._label}: {self._num_games - playing} of {self._num_games} games "
                          f"finished, step {self._steps}", self._started)
            self.lines += 1

    def done(self) -> None:
        """Clears the line, if one was shown."""
        with self._lock:
            if self.lines:
                clear_progress(self._stream)


def show_progress(stream: Any, text: str, started: float) -> None:
    """Rewrites the current line of a terminal `stream` with `text` and the time since `started` (perf_counter)."""
    minutes, seconds = divmod(int(time.perf_counter() - started), 60)
    stream.write(f"\r{text}, {minutes}:{seconds:02d} elapsed\x1b[K")
    stream.flush()


def clear_progress(stream: Any) -> None:
    """Clears the line `show_progress` wrote."""
    stream.write("\r\x1b[K")
    stream.flush()
