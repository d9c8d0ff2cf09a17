"""Strength against training budget: the picture of issue 42's curve, from the judgements `azjax eval --positions`
wrote for runs of several budgets.

    python experiments/studies/budget_curve/budget_curve.py   # the recorded curve again, into runs/budget_curve
    python experiments/studies/budget_curve/budget_curve.py \
        --point "2 x 32 (preset)" 30 experiments/studies/budget_curve/budget/c4-30m-positions.json runs/c4-30m-base \
        --point "3 x 48" 30 experiments/studies/budget_curve/budget/c4-30m-positions.json runs/c4-30m-3x48 \
        --point "3 x 48" 60 experiments/studies/budget_curve/budget/c4-60m-positions.json runs/c4-60m-3x48 \
        --out runs/c4-curve

Without --point, the points of the picture recorded as
experiments/studies/budget_curve/results/connect_four-cpu-2026-11-27-curve.png (the judgements committed in
experiments/studies/budget_curve/budget/); without --out, runs/budget_curve (`--out
experiments/studies/budget_curve/results/connect_four-cpu-2026-11-27-curve` rewrites the record). Each --point is LABEL
MINUTES JSON AGENT: AGENT's network (`greedy:AGENT` in the JSON) and its search (`AGENT`, at the --simulations the
judgement used) on the labelled positions of the JSON, as one point of LABEL's line at MINUTES of training. Points of
one label are joined in order of their minutes. Draws the share of optimal moves over all the positions and over one
stratum (--stratum, by default begin-hard: the positions far from the end), the network's solid and its search's dashed,
with the issue's bars as grey lines (--bar ALL STRATUM, per cent), and writes the picture (OUT.png) and the table it
draws (OUT.md). No JAX, no training: it reads what the evaluations wrote.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import sys
from typing import Any

# experiments/, for the shared benchmark module (imported late, where it is used)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

REPO = pathlib.Path(__file__).resolve().parents[3]
# The judgements of the recorded curve, relative to the repository (this study's budget/ folder).
BUDGET = "experiments/studies/budget_curve/budget"
# The recorded curve (this study's results/connect_four-cpu-2026-11-27-curve.png and .md): LABEL MINUTES JSON AGENT.
DEFAULT_POINTS = (
    ("2 x 32 (the preset)", "10", f"{BUDGET}/c4-10m-levers-positions.json", "runs/lever-base-s0"),
    ("2 x 32 (the preset)", "30", f"{BUDGET}/c4-30m-positions.json", "runs/c4-30m-base"),
    ("2 x 32 (the preset)", "60", f"{BUDGET}/c4-60m-2x32-positions.json", "runs/c4-60m-2x32"),
    ("2 x 32 (the preset)", "120", f"{BUDGET}/c4-120m-2x32-positions.json", "runs/c4-120m-2x32"),
    ("3 x 48", "30", f"{BUDGET}/c4-30m-positions.json", "runs/c4-30m-3x48"),
    ("3 x 48", "60", f"{BUDGET}/c4-60m-positions.json", "runs/c4-60m-3x48"),
)
DEFAULT_OUT = "runs/budget_curve"


def read_point(label: str, minutes: str, path: str, agent: str) -> dict[str, Any]:
    """One point: the network's and the search's rates over all positions and per stratum, from `path`'s judgement
    of `greedy:agent` and `agent`. Raises SystemExit naming what is missing."""
    try:
        judged = json.loads(pathlib.Path(path).read_text())["positions"]
    except (OSError, ValueError, KeyError) as error:
        raise SystemExit(f"--point {label!r}: {path} is not an `azjax eval --positions --json` file ({error})") \
            from None
    rates = {}
    for part, name in (("network", f"greedy:{agent}"), ("search", agent)):
        if name not in judged:
            raise SystemExit(f"--point {label!r}: {path} judged no agent {name!r}; it has {sorted(judged)}")
        rates[part] = judged[name]
    try:
        budget = float(minutes)
    except ValueError:
        raise SystemExit(f"--point {label!r}: MINUTES must be a number, got {minutes!r}") from None
    return {"label": label, "minutes": budget, "source": path, "agent": agent, **rates}


def rate(point: dict[str, Any], part: str, stratum: str | None) -> float:
    """`part`'s ("network", "search") share of optimal moves, in per cent, over all positions or `stratum`'s."""
    key = "optimal_move_rate" if stratum is None else f"optimal_move_rate/{stratum}"
    if key not in point[part]:
        raise SystemExit(f"{point['source']} has no {key!r} for {point['agent']}: pick a --stratum it judged")
    return 100.0 * point[part][key]


def table(points: list[dict[str, Any]], stratum: str) -> str:
    lines = [f"| run | minutes | all: network / search | {stratum}: network / search | judged in |",
             "|---|---|---|---|---|"]
    for point in points:
        lines.append(
            f"| {point['label']} | {point['minutes']:g} | {rate(point, 'network', None):.1f} / "
            f"{rate(point, 'search', None):.1f} | {rate(point, 'network', stratum):.1f} / "
            f"{rate(point, 'search', stratum):.1f} | {point['source']} |")
    return "\n".join(lines) + "\n"


def draw(points: list[dict[str, Any]], stratum: str, bars: tuple[float, float] | None, path: pathlib.Path) -> None:
    from matplotlib.figure import Figure  # late: --help without matplotlib's import time

    lines: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for point in points:
        lines[point["label"]].append(point)
    figure = Figure(figsize=(10, 4.2))
    for column, (title, which) in enumerate((("all labelled positions", None), (stratum, stratum))):
        axes = figure.add_subplot(1, 2, column + 1)
        for index, (label, series) in enumerate(lines.items()):
            series = sorted(series, key=lambda point: point["minutes"])
            minutes = [point["minutes"] for point in series]
            colour = f"C{index}"
            axes.plot(minutes, [rate(point, "network", which) for point in series], "o-", color=colour,
                      label=f"{label}: network")
            axes.plot(minutes, [rate(point, "search", which) for point in series], "s--", color=colour,
                      label=f"{label}: search")
        if bars is not None:
            axes.axhline(bars[column], color="grey", linewidth=0.8)
        axes.set_title(f"optimal moves, {title}")
        axes.set_xlabel("training minutes")
        axes.set_ylabel("% of positions")
        axes.grid(alpha=0.3)
    figure.axes[0].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--point", nargs=4, action="append", metavar=("LABEL", "MINUTES", "JSON", "AGENT"),
                        help="one run's judgement (see above; default: the recorded curve's, DEFAULT_POINTS)")
    parser.add_argument("--stratum", default="begin-hard", help="the second panel's stratum (default: begin-hard)")
    parser.add_argument("--bar", nargs=2, type=float, metavar=("ALL", "STRATUM"), default=(97.0, 92.0),
                        help="grey lines at these per cents (default: issue 42's 97 and 92)")
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"writes OUT.png and OUT.md (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    if args.point:
        points = [read_point(*point) for point in args.point]
    else:  # read from the repository wherever this runs, shown as the record shows them
        points = [{**read_point(label, minutes, str(REPO / path), agent), "source": path}
                  for label, minutes, path, agent in DEFAULT_POINTS]
    for point in points:
        rate(point, "network", args.stratum)  # a missing stratum is named before anything is written
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    draw(points, args.stratum, tuple(args.bar), out.with_suffix(".png"))
    out.with_suffix(".md").write_text(table(points, args.stratum))
    print(table(points, args.stratum) + f"Wrote {out.with_suffix('.png')} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    from benchmark import run_main

    run_main(main)
