"""Does Connect Four learn on the CPU? Train the small preset for 10 minutes, then play it against a uniformly
random player and against its own first checkpoint.

    python experiments/connect_four_learns.py --out runs/c4 --seconds 600

The first iteration's checkpoint is copied aside (OUT-first) before training continues, so the final agent can
play the agent it started from. Both play with search (the run's simulations, no root noise); results are from
the final agent's side, over --games games in each seat. Issue 3's bar: >= 95% wins against random, and clearly
ahead of the first checkpoint.
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import time
from pathlib import Path

import jax

from azjax import config as config_lib, evaluation, trainer
from azjax.agent import load_agent


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/connect_four-learns"), help="run directory")
    parser.add_argument("--seconds", type=float, default=600.0, help="training time after the first iteration")
    parser.add_argument("--games", type=int, default=200, help="games per seat in each match")
    parser.add_argument("--preset", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="config overrides")
    args = parser.parse_args(argv)

    config = config_lib.get_config("connect_four", args.preset)
    config = config_lib.with_overrides(config, dict(item.split("=", 1) for item in args.set))
    first_dir = args.out.with_name(args.out.name + "-first")
    if not first_dir.exists():
        trainer.train(config, args.out, max_seconds=0.0, progress=False)  # stops after one iteration
        shutil.copytree(args.out, first_dir)
    start = time.perf_counter()
    result = trainer.train(config, args.out, max_seconds=args.seconds, progress=True)
    trained_seconds = time.perf_counter() - start

    final, first = load_agent(args.out), load_agent(first_dir)
    key = jax.random.key(0)
    report = {
        "iterations": int(result.run_state.iteration),
        "training_seconds": round(trained_seconds, 1),
        "vs_random": evaluation.head_to_head(
            key, final.game, final.act, evaluation.random_agent, args.games
        ),
        "vs_first_checkpoint": evaluation.head_to_head(
            key, final.game, final.act, functools.partial(first.act), args.games
        ),
    }
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
