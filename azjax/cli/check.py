"""`azjax check`: check that a game follows the protocol, before training on it."""

from __future__ import annotations

import argparse
import sys

from azjax.cli import common


def add_arguments(commands) -> None:
    check = commands.add_parser(
        "check",
        allow_abbrev=False,
        help="check that a game follows the protocol (before training on it)",
        description="Play random games of GAME under jit and vmap and check every rule of the game protocol "
        "(azjax.games.check_game: shapes, dtypes, tracing, terminal and illegal moves, zero-sum rewards, "
        "symmetries, ...), and the test positions given with --positions. Prints the report and its warnings; "
        "exits 1 when a check fails.",
    )
    check.add_argument("game", metavar="GAME", help=common.GAME_HELP)
    check.add_argument("--positions", metavar="MODULE:NAME", help="your own test positions: a list of "
                       "azjax.games.Position in a module, e.g. hex5:TEST_POSITIONS")
    check.add_argument("--games", type=int, default=64, help="random games played at once (default: 64)")
    check.add_argument("--seed", type=int, default=0, help="the seed of the random games (default: 0)")


def run(args: argparse.Namespace) -> int:
    from azjax import games
    from azjax.text import counted

    if args.games < 2:
        print(f"azjax check: error: --games must be >= 2 (two batches of random games are compared), got "
              f"{args.games}", file=sys.stderr)
        return 2
    game_name = games.canonical(args.game)
    game = games.make(game_name)
    positions = None
    if args.positions is not None:
        positions = games.load_positions(games.canonical(args.positions))
    print(f"Checking {game.name} ({args.games} random games"
          + (f", {counted(len(positions), 'test position')}" if positions else "") + ") ...", flush=True)
    try:
        report = games.check_game(game, num_games=args.games, seed=args.seed, positions=positions)
    except games.GameCheckError as error:
        print(f"FAILED: {error}", file=sys.stderr)
        return 1
    print(report)
    return 0
