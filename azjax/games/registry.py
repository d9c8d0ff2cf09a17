"""The game registry: `make(name, **options)`, `names()`, and `register` for users' own games."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from azjax.games.base import Game

_FACTORIES: dict[str, Callable[..., Game]] = {}


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


def make(name: str, **options) -> Game:
    """Builds the registered game `name` with its options, e.g. `make("tic_tac_toe")`.

    Raises:
      ValueError: for an unknown name (the message lists the known ones) or options the game does not take.
    """
    if name not in _FACTORIES:
        raise ValueError(f"unknown game {name!r}; registered games: {', '.join(names())}")
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
