"""`azjax pretrained`: list the trained agents shipped with azjax and their measured strength."""

from __future__ import annotations

import argparse


def add_arguments(commands) -> None:
    commands.add_parser(
        "pretrained",
        allow_abbrev=False,
        help="list the trained agents shipped with azjax and their measured strength",
        description="List the trained agents that ship inside the package, one per game, with how each was "
        "trained and its strength as measured (each figure's command is in its model card, "
        "azjax/pretrained/GAME/card.json). Use one as pretrained:GAME (or the game's name) wherever an agent "
        "goes: azjax play connect_four, azjax eval pretrained:connect_four mcts:1600, "
        "azjax train --init-from pretrained:connect_four.",
    )


def run(args: argparse.Namespace) -> int:
    from azjax import games, pretrained

    del args  # the command takes no options
    shipped = pretrained.names()
    for name in shipped:
        print(pretrained.describe(name))
    missing = [name for name in games.names() if name not in shipped]
    if missing:
        print(f"No agent ships for {', '.join(missing)}: train one with azjax train --game GAME.")
    return 0
