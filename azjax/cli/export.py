"""`azjax export`: a small inference-only copy of a run's checkpoint."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(commands) -> None:
    export = commands.add_parser(
        "export",
        allow_abbrev=False,
        help="write a small inference-only copy of a run's checkpoint",
        description="Write the network's parameters and the config needed to rebuild it (no optimizer state or "
        "replay buffer) from a run's checkpoint to OUT, which azjax.load_agent, `azjax eval` and `azjax play` load "
        "like a run directory.",
    )
    export.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="the --out directory of `azjax train`")
    export.add_argument("out", type=Path, metavar="OUT", help="the directory to write")
    which = export.add_mutually_exclusive_group()
    which.add_argument("--iteration", type=int, help="export this iteration's checkpoint (default: the latest)")
    which.add_argument("--best", action="store_true", help="export the checkpoint with the highest --best-metric")
    export.add_argument("--best-metric", default="eval/score", help="the metric --best maximises")
    export.add_argument("--force", action="store_true", help="replace OUT if it is an earlier export")


def run(args: argparse.Namespace) -> int:
    from azjax import exports

    info = exports.export_model(
        args.run_dir,
        args.out,
        iteration=args.iteration,
        best_metric=args.best_metric if args.best else None,
        overwrite=args.force,
    )
    size = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file())
    print(
        f"Exported iteration {info['iteration']} of {args.run_dir} to {args.out} ({size / 1024:,.0f} KiB: the "
        f"network's parameters and config.json). Load it with azjax.load_agent({str(args.out)!r}), or pass it to "
        "`azjax eval` or `azjax play`."
    )
    return 0
