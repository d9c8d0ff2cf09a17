"""The game registry: `make(name, **options)`, `names()`, and `register` for users' own games.

Names of the form "pgx:<env_id>" (e.g. "pgx:go_9x9") are not registered one by one: `make` builds them with
`azjax.games.pgx_adapter.from_pgx(env_id, **options)`, which needs the optional pgx package.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from azjax.games.base import Game

_FACTORIES: dict[str, Callable[..., Game]] = {}
PGX_PREFIX = "pgx:"


def register(name: str, factory: Callable[..., Game], *, overwrite: bool = False) -> None:
    """Registers a game so that `make(name, **options)` builds it with `factory(**options)`.

    Args:
      name: the name users pass to `make` and to `azjax train --game`.
      factory: a callable taking the game's options as keyword arguments and returning a `Game`.
      overwrite: replace a game already registered under `name` (otherwise that is an error).
    """
    if not overwrite and name in _FACTORIES:
        raise ValueError(f"a game named {name!r} is already registered; pass overwrite=True to replace it")
    _FACTORIES[name] = factory


def names() -> list[str]:
    """The registered game names, sorted."""
    return sorted(_FACTORIES)


def is_known(name: str) -> bool:
    """Whether `make(name)` can build the game: a registered name, or "pgx:<env_id>" for a pgx environment the
    adapter supports (whether pgx is installed is checked by `make`, which says how to install it)."""
    from azjax.games import pgx_adapter  # late: the adapter imports no pgx until a game is built

    if name in _FACTORIES:
        return True
    return name.startswith(PGX_PREFIX) and name[len(PGX_PREFIX):] in pgx_adapter.SUPPORTED_ENVS


def describe_known() -> str:
    """The names to suggest in an error message: the registered ones and the pgx form."""
    return f"{', '.join(names())}, or pgx:<env_id> (e.g. pgx:go_9x9, with pip install 'azjax[pgx]')"


def make(name: str, **options) -> Game:
    """Builds the registered game `name` with its options, e.g. `make("tic_tac_toe")`, or the pgx environment
    named "pgx:<env_id>" through `from_pgx`, e.g. `make("pgx:go_9x9")`.

    Raises:
      ValueError: for an unknown name (the message lists the known ones) or options the game does not take.
      ImportError: for a "pgx:" name when pgx is not installed (the message says how to install it).
    """
    if name not in _FACTORIES and name.startswith(PGX_PREFIX):
        from azjax.games import pgx_adapter

        return pgx_adapter.from_pgx(name[len(PGX_PREFIX):], **options)
    if name not in _FACTORIES:
        raise ValueError(f"unknown game {name!r}; registered games: {describe_known()}")
    factory = _FACTORIES[name]
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as error:
        accepted = list(inspect.signature(factory).parameters) or "none"
        raise ValueError(f"bad options {options} for game {name!r} ({error}); it accepts: {accepted}") from None
    game = factory(**options)
    if not isinstance(game, Game):
        raise TypeError(f"the factory registered for {name!r} returned {type(game).__name__}, not a Game")
    return game
