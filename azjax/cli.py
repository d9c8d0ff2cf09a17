"""The `azjax` command: a thin layer that parses arguments and calls the library.

    azjax train                                   # tic-tac-toe on the CPU, stops by itself
    azjax train --game connect_four --seconds 600 --out runs/c4
    azjax train --search.num_simulations 64 --train.learning_rate 3e-4
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path


def _add_config_options(parser: argparse.ArgumentParser) -> None:
    from azjax import config as config_lib

    groups: dict[str, argparse._ArgumentGroup] = {}
    for path, (kind, default, help_text) in config_lib.field_paths().items():
        if path in ("game", "num_iterations"):
            continue  # --game picks the preset and --iterations sets num_iterations: their own options
        section = path.split(".")[0] if "." in path else "run"
        group = groups.setdefault(section, parser.add_argument_group(f"config: {section}"))
        metavar = getattr(kind, "__name__", "VALUE").upper() if isinstance(kind, type) else "VALUE"
        group.add_argument(
            f"--{path}",
            dest=f"config:{path}",
            metavar=metavar,
            default=None,
            help=f"{help_text} (default: the preset's; generic default {default!r})",
        )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `azjax` and its subcommands."""
    parser = argparse.ArgumentParser(prog="azjax", description="AlphaZero in functional JAX.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    train = commands.add_parser(
        "train",
        help="train an agent by self-play",
        description="Train an AlphaZero agent by self-play. With no arguments: tic-tac-toe, small CPU preset, "
        "stopping by itself after the preset's iterations. Every config field can be overridden below.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    train.add_argument("--game", default="tic_tac_toe", help="the game to train (see --list-games)")
    train.add_argument("--preset", default="cpu", choices=["cpu", "gpu"], help="the game's preset config")
    train.add_argument("--config", type=Path, help="start from this config.json (e.g. a run's) instead of a preset")
    train.add_argument("--out", type=Path, help="the run directory (default: runs/GAME-DATE-TIME); resumes if it "
                       "holds a checkpoint of the same config")
    train.add_argument("--iterations", type=int, help="stop after this many iterations in total "
                       "(sets num_iterations; default: the preset's)")
    train.add_argument("--seconds", type=float, help="stop after this many seconds of training (wall clock)")
    train.add_argument("--checkpoint-every", type=int, default=10, help="checkpoint every N iterations")
    train.add_argument("--no-progress", action="store_true", help="no progress bar (for logs)")
    train.add_argument("--list-games", action="store_true", help="list the registered games and exit")
    _add_config_options(train)
    return parser


def _config_from_args(args: argparse.Namespace):
    from azjax import config as config_lib

    if args.config is not None:
        if not args.config.is_file():
            raise config_lib.ConfigError(f"--config {args.config}: no such file")
        config = config_lib.from_json(args.config.read_text())
    else:
        config = config_lib.get_config(args.game, args.preset)
    overrides = {
        key.split(":", 1)[1]: value
        for key, value in vars(args).items()
        if key.startswith("config:") and value is not None
    }
    if args.iterations is not None:
        overrides["num_iterations"] = args.iterations
    return config_lib.with_overrides(config, overrides)


def _train(args: argparse.Namespace) -> int:
    from azjax import checkpointing, config as config_lib, games, trainer

    if args.list_games:
        print("\n".join(games.names()))
        return 0
    try:
        if args.game not in games.names():
            raise config_lib.ConfigError(f"unknown game {args.game!r}; choose one of {', '.join(games.names())}")
        config = _config_from_args(args)
    except config_lib.ConfigError as error:
        print(f"azjax train: error: {error}", file=sys.stderr)
        return 2
    if args.seconds is not None and args.seconds <= 0:
        print("azjax train: error: --seconds must be > 0", file=sys.stderr)
        return 2
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = args.out or Path("runs") / f"{config.game}-{stamp}"
    print(f"Training {config.game} into {run_dir} ({config.num_iterations} iterations"
          + (f", at most {args.seconds:g} s" if args.seconds else "") + ")")
    try:
        result = trainer.train(
            config,
            run_dir,
            max_seconds=args.seconds,
            checkpoint_every=args.checkpoint_every,
            progress=not args.no_progress,
        )
    except checkpointing.CheckpointError as error:
        print(f"azjax train: error: {error}", file=sys.stderr)
        return 2
    last = result.history[-1] if result.history else None
    if last is not None:
        print(
            f"Done ({result.stop_reason}): iteration {last['iteration']}, {last['time']:.0f} s, "
            f"loss {last['loss']:.3f}, {last['positions_per_second']:,.0f} positions/s."
        )
    print(f"Run directory: {run_dir} (config.json, metrics.jsonl, tensorboard/, checkpoints/, learning_curves.png)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `azjax` command."""
    args = build_parser().parse_args(argv)
    if args.command == "train":
        return _train(args)
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    sys.exit(main())
