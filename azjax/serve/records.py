"""Recorded games for `azjax serve`: the files `azjax eval --record PATH` writes, read back and checked.

A file is one JSON object (`results.RECORD_FORMAT`, version `results.RECORD_VERSION`)::

    {"format": "azjax-games", "version": 1, "game": "tic_tac_toe", "agents": ["random", "mcts:200"],
     "games": [{"players": ["random", "mcts:200"], "moves": [4, 0, 8], "opening_moves": 0, "outcome": -1.0}, ...]}

`players` are by seat (the first moved first), `moves` the action indices in order (the opening's first) and
`outcome` the result for the player who moved first (+1 won, 0 draw, -1 lost). Whether the moves are legal is
checked when a game is opened, against the game itself.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from azjax import results

MAX_GAMES_PER_RECORD = 100_000


class RecordError(ValueError):
    """A record that cannot be read; the message is one line that says why."""


@dataclasses.dataclass(frozen=True)
class RecordedGame:
    """One game of a record."""

    players: tuple[str, str]
    """By seat: players[0] moved first."""
    moves: tuple[int, ...]
    """Action indices, in order."""
    opening_moves: int
    """How many of `moves` were the opening's."""
    outcome: float
    """For players[0]: +1 won, 0 draw, -1 lost."""


@dataclasses.dataclass(frozen=True)
class Record:
    """A file of recorded games."""

    name: str
    """What the page calls it: the file's name."""
    game: str
    """The game's name, as `games.make` takes it."""
    agents: tuple[str, ...]
    """The agents that played, by their specs."""
    games: tuple[RecordedGame, ...]
    """The games, in the file's order."""

    def summary(self) -> dict:
        return {"name": self.name, "game": self.game, "agents": list(self.agents), "num_games": len(self.games)}


def read_record(path: str | Path) -> Record:
    """The record in the file `path`. Raises RecordError for a file that is missing, unreadable or no record."""
    path = Path(path)
    try:
        document = json.loads(path.read_text())
    except OSError as error:
        raise RecordError(f"cannot read the record {path}: {error.strerror or error}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RecordError(f"{path} is not a record of games (not JSON: {error})") from None
    try:
        return parse_record(document, name=path.name)
    except RecordError as error:
        raise RecordError(f"{path}: {error}") from None


def parse_record(document: Any, *, name: str) -> Record:
    """A record from its JSON document (see the module docstring). Raises RecordError naming the first fault."""
    if not isinstance(document, dict) or document.get("format") != results.RECORD_FORMAT:
        raise RecordError(f"not a record of games (expected a JSON object with \"format\": "
                          f"\"{results.RECORD_FORMAT}\", as `azjax eval --record` writes)")
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version > results.RECORD_VERSION:
        raise RecordError(f"record version {version!r} is not one this azjax reads (up to {results.RECORD_VERSION})")
    game = document.get("game")
    if not isinstance(game, str) or not game:
        raise RecordError("\"game\" must be the game's name")
    agents = document.get("agents", [])
    if not isinstance(agents, list) or not all(isinstance(agent, str) for agent in agents):
        raise RecordError("\"agents\" must be a list of names")
    games = document.get("games")
    if not isinstance(games, list) or not games:
        raise RecordError("\"games\" must be a non-empty list of games")
    if len(games) > MAX_GAMES_PER_RECORD:
        raise RecordError(f"{len(games)} games is more than the {MAX_GAMES_PER_RECORD} a record may hold")
    return Record(name=name, game=game, agents=tuple(agents),
                  games=tuple(_parse_game(entry, number) for number, entry in enumerate(games)))


def _parse_game(entry: Any, number: int) -> RecordedGame:
    where = f"game {number}"
    if not isinstance(entry, dict):
        raise RecordError(f"{where} is not a JSON object")
    players = entry.get("players")
    if not isinstance(players, list) or len(players) != 2 or not all(isinstance(p, str) for p in players):
        raise RecordError(f"{where}: \"players\" must be the two players' names, the first to move first")
    moves = entry.get("moves")
    if not isinstance(moves, list) or not all(isinstance(m, int) and not isinstance(m, bool) for m in moves):
        raise RecordError(f"{where}: \"moves\" must be a list of action indices")
    opening = entry.get("opening_moves", 0)
    if not isinstance(opening, int) or isinstance(opening, bool) or not 0 <= opening <= len(moves):
        raise RecordError(f"{where}: \"opening_moves\" must be a count of moves between 0 and {len(moves)}")
    outcome = entry.get("outcome")
    if not isinstance(outcome, (int, float)) or isinstance(outcome, bool) or not math.isfinite(outcome) \
            or not -1 <= outcome <= 1:
        raise RecordError(f"{where}: \"outcome\" must be a number in [-1, 1], for the player who moved first")
    return RecordedGame(players=(players[0], players[1]), moves=tuple(moves), opening_moves=opening,
                        outcome=float(outcome))
