"""The `azjax` command: a thin layer that parses arguments and calls the library.

    azjax train                                   # tic-tac-toe on the CPU, stops by itself
    azjax train --game connect_four --seconds 600 --out runs/c4
    azjax train --search.num_simulations 64 --train.learning_rate 3e-4
    azjax train --out runs/c4                      # resume a run where it stopped (Ctrl-C stops it safely)
    azjax export runs/c4 models/c4                 # a small inference-only copy for load_agent / eval / play
    azjax eval runs/ttt perfect mcts:1000 random   # a round robin with an Elo table (`azjax eval --help`)
    azjax play runs/ttt                            # play the trained agent in the terminal
    azjax serve runs/ttt                           # or on a web page at http://127.0.0.1:8000/
    azjax check hex5:make_hex5                     # check a game of your own (make_hex5 in ./hex5.py)
    azjax train --game hex5:make_hex5 --out runs/hex5    # then train it; eval / play / resume take runs/hex5
    azjax train --network examples/mlp_network.py:make_mlp    # a network of your own (azjax.networks' contract)

One module per command, each with `add_arguments(commands)` (its subparser) and `run(args)` (its exit status);
`common` holds what several share. At import time they import only the standard library and each other: the
application's modules are imported when a command runs, and jax's backend starts after `--devices` has set
XLA_FLAGS (`parallel.expose_cpu_cores`).
"""

from __future__ import annotations

import argparse
import sys

from azjax.cli import check, common, evaluate, export, play, pretrained, serve, train

# The commands by name, in the order `azjax --help` lists them.
_COMMANDS = {"train": train, "export": export, "eval": evaluate, "play": play, "serve": serve,
             "pretrained": pretrained, "check": check}


class _Parser(argparse.ArgumentParser):
    """Errors as one line that names the subcommand and where its options are listed, not a page of usage."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}; `{self.prog} --help` lists the options\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `azjax` and its subcommands."""
    # allow_abbrev=False: an option is taken only as spelt (--search.num_simulation is not --search.num_simulations).
    parser = _Parser(prog="azjax", description="AlphaZero in functional JAX.", allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in _COMMANDS.values():
        command.add_arguments(commands)
    return parser


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _reject_unknown(parser: argparse.ArgumentParser, command: str, unknown: list[str]) -> None:
    """Exits (status 2) with one line naming each unknown option and the nearest known one."""
    import difflib

    sub = _subcommands(parser)[command]
    known = [option for action in sub._actions for option in action.option_strings if option.startswith("--")]
    said: list[str] = []
    for word in unknown:
        option = word.split("=", 1)[0]
        if not option.startswith("-"):
            if not said or said[-1].startswith("unexpected"):  # not the value of an unknown option before it
                said.append(f"unexpected argument {word!r}")
            continue
        near = difflib.get_close_matches(option, known, n=1, cutoff=0.75)
        said.append(f"unknown option {option}" + (f" (did you mean {near[0]}?)" if near else ""))
    sub.error("; ".join(said))


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `azjax` command."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        _reject_unknown(parser, args.command, unknown)  # exits
    if args.command in ("train", "eval", "play", "serve"):
        common.use_compile_cache(args.no_compile_cache)
    from azjax.agent_specs import SpecError
    from azjax.errors import ConfigError
    from azjax.games import GameNotFoundError
    from azjax.games.pgx_adapter import MissingDependencyError
    from azjax.memory import MemoryBudgetError
    from azjax.rundir import CheckpointError

    try:
        return _COMMANDS[args.command].run(args)
    except (CheckpointError, ConfigError, SpecError, GameNotFoundError, MemoryBudgetError,
            MissingDependencyError) as error:
        # Fixable by the user: one line that says what to change, no traceback.
        print(f"azjax {args.command}: error: {error}", file=sys.stderr)
        return 2
    except RuntimeError as error:
        from azjax.solver.connect_four import SolveTimeout  # late: it imports numba, and only a match raises it

        if not isinstance(error, SolveTimeout):
            raise
        print(f"azjax {args.command}: error: {error}", file=sys.stderr)  # the message says what to do
        return 1
    except KeyboardInterrupt:
        print(f"azjax {args.command}: interrupted", file=sys.stderr)
        return 130
