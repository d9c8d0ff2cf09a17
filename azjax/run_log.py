"""Where a training run's records and lines go: the metrics log, TensorBoard, the console beside a progress bar,
and the learning-curve plot drawn from the metrics log."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from azjax import rundir
from azjax.config import TIME_BUDGET_ITERATIONS

if TYPE_CHECKING:
    from tqdm import tqdm


def append_record(run_dir: Path, writer, record: dict) -> None:
    """Appends an iteration's record to the run's metrics log and, with a TensorBoard `writer`, its scalars."""
    with rundir.metrics_path(run_dir).open("a") as f:
        f.write(json.dumps(record) + "\n")
    if writer is not None:
        for name, value in record.items():
            if name != "iteration":
                writer.add_scalar(name, value, record["iteration"])
        writer.flush()


def tensorboard_writer(run_dir: Path, purge_step: int):
    """A TensorBoard writer under `run_dir/tensorboard`, or None where tensorboardX is not installed."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError:  # TensorBoard logs are a convenience; the JSONL log always exists
        return None
    # purge_step hides events a resumed run redoes (logged after its checkpoint by the interrupted session).
    return SummaryWriter(str(run_dir / "tensorboard"), purge_step=purge_step)


class Console:
    """Where the training loop's lines go: `log`, and while a progress bar shows, beside it.

    A line written while the bar shows clears the bar, goes to `log` and redraws the bar under it (tqdm's
    `external_write_mode`), so a custom `log` (a notebook's, a test's) gets every line either way. The bar is never
    asked for its truth value: a bar without a total (a run that its time budget alone ends) has none.
    """

    def __init__(self, log: Callable[[str], None]):
        self._log = log
        self._bar: tqdm | None = None

    def write(self, line: str) -> None:
        if self._bar is None:
            self._log(line)
            return
        with self._bar.external_write_mode():
            self._log(line)

    def show_bar(self, start: int, total: int) -> None:
        """A bar from iteration `start`, to `total` iterations unless time alone ends the run (it then counts)."""
        from tqdm import tqdm

        shown = None if total >= TIME_BUDGET_ITERATIONS else total
        self._bar = tqdm(total=shown, initial=start, desc="iterations", unit="it", dynamic_ncols=True)

    def advance(self, summary: str) -> None:
        """One iteration done: the bar moves on and shows `summary` (nothing without a bar)."""
        if self._bar is not None:
            self._bar.update(1)
            self._bar.set_postfix_str(summary)

    def close_bar(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def plot_learning_curves(run_dir: Path, *, num_players: int = 2) -> Path | None:
    """Writes `learning_curves.png` from the run's whole metrics log (of a game of `num_players`); returns its
    path."""
    records = rundir.read_metrics(run_dir)
    if not records:
        return None
    # A bare Figure, not pyplot: no global backend switch, so plots in a notebook that trains still show.
    from matplotlib.figure import Figure

    iterations = [r["iteration"] for r in records]
    panels = learning_curve_panels(records, num_players=num_players)
    # Wall-clock minutes since the run began; "time" restarts with each resumed session, so sessions are chained.
    minutes, offset, previous = [], 0.0, 0.0
    for r in records:
        if r.get("time", 0.0) < previous:
            offset += previous
        previous = r.get("time", 0.0)
        minutes.append((offset + previous) / 60.0)
    fig = Figure(figsize=(4.2 * len(panels), 3.4))
    axes = fig.subplots(1, len(panels))
    for ax, (title, names) in zip(axes, panels, strict=True):
        x_values, x_label = (minutes, "wall clock (minutes)") if "wall clock" in title else (iterations, "iteration")
        for name in names:
            points = [(x, r[name]) for x, r in zip(x_values, records, strict=True) if name in r]
            if points:
                marker = "." if title.startswith(("evaluation", "optimal")) else None
                ax.plot(*zip(*points, strict=True), label=name.removeprefix("eval/"), marker=marker)
        ax.set_title(title)
        ax.set_xlabel(x_label)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = run_dir / "learning_curves.png"
    fig.savefig(path, dpi=110)
    return path


def learning_curve_panels(records: list[dict], *, num_players: int = 2) -> list[tuple[str, list[str]]]:
    """The learning curves' panels: (title, the metrics it plots) for a metrics log. Self-play's outcomes are
    wins and draws in a two-player game, the episodes that ended in a one-player game (whose returns the
    evaluation's panels show)."""
    outcomes = (("self-play outcomes", ["player0_win_rate", "draw_rate"]) if num_players == 2 else
                ("self-play episodes ended", ["games_finished"]))
    panels = [
        ("loss", ["loss", "policy_loss", "value_loss"]),
        outcomes,
        ("game length (moves)" if num_players == 2 else "episode length (moves)", ["game_length"]),
        ("throughput (positions/s)", ["positions_per_second"]),
    ]
    evals = sorted({k for r in records for k in r if k.startswith("eval/")})
    judged = ("eval/optimal_move_rate", "eval/value_accuracy")  # on labelled positions: its own panel
    scores = [name for name in evals if not name.startswith(judged)]
    if scores:
        panels.append(("evaluation score", scores))
        panels.append(("evaluation score vs wall clock", scores))
    perfect_play = [name for name in evals if name.startswith(judged[0]) and "can_err" not in name]
    if perfect_play:
        panels.append(("optimal-move rate vs wall clock", perfect_play + [n for n in evals if n == judged[1]]))
    return panels
