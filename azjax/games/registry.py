"""The game registry: `make(name, **options)`, `names()`, and `register` for users' own games.

A game is named in one of four forms, told apart in this order:

* a registered name, e.g. "connect_four" (the catalog's games and those a program registered with `register`);
* "pgx:<env_id>", e.g. "pgx:go_9x9": a pgx environment through `azjax.games.pgx_adapter.from_pgx`, which needs
  the optional pgx package;
* a name offered by an installed package through the entry-point group "azjax.games" (in its pyproject.toml:
  `[project.entry-points."azjax.games"] hex5 = "my_games.hex:make_hex5"`), loaded when first asked for;
* "MODULE:FACTORY", e.g. "hex5:make_hex5" or "games/hex5.py:make_hex5": MODULE is imported (a dotted module from
  the current directory, PYTHONPATH or an installed package, or a .py file) and FACTORY, a callable in it, is
  called with the game's options (none from the command line). A run records this source in its config.json, so
  that later commands and processes import the game again by themselves: run them where the module can be
  imported (a .py file is recorded by its absolute path, see `canonical`).

A module that calls `register(name, factory, presets=...)` when imported gives its presets to "MODULE:FACTORY" too:
they belong to the factory, under whichever name it is asked for.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import sys
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from azjax.games.base import Game

PGX_PREFIX = "pgx:"
ENTRY_POINT_GROUP = "azjax.games"


class GameNotFoundError(ValueError):
    """A game name or source cannot be resolved: unknown, or its module cannot be imported or lacks the factory.
    The message names what was looked for, the error met, and what to do."""


@dataclasses.dataclass(frozen=True)
class _Entry:
    factory: Callable[..., Game]
    presets: Mapping[str, Any]  # "cpu" / "gpu" -> a Config, or a dict of config overrides (see presets.get_config)


_REGISTRY: dict[str, _Entry] = {}


def register(
    name: str,
    factory: Callable[..., Game],
    *,
    presets: Mapping[str, Any] | None = None,
    overwrite: bool = False,
) -> None:
    """Registers a game so that `make(name, **options)` builds it with `factory(**options)`.

    A registration lives in the Python process that made it. For the `azjax` command to see a game of your own,
    name it by its source (`--game my_module:make_my_game`), whose module may call `register` to attach presets,
    or offer it from an installed package through the "azjax.games" entry points (see the module docstring).

    Args:
      name: the name users pass to `make` and, in the same process, to `azjax.cli.main(["train", "--game", name])`.
      factory: a callable taking the game's options as keyword arguments and returning a `Game`.
      presets: the game's own presets by preset name ("cpu", "gpu"): each an `azjax.config.Config`, or a dict of
        config overrides (e.g. {"search.num_simulations": 16}) applied to the preset derived from the game's
        sizes. Presets not given are derived (`azjax.presets.derived_preset`).
      overwrite: replace a game already registered under `name` by another factory (otherwise that is an error;
        the same factory defined again, as when its module is imported anew or a notebook cell rerun, replaces it).
    """
    if not overwrite and name in _REGISTRY and not _same_definition(_REGISTRY[name].factory, factory):
        raise ValueError(f"a game named {name!r} is already registered; pass overwrite=True to replace it")
    unknown = set(presets or ()) - {"cpu", "gpu"}
    if unknown:
        raise ValueError(f"presets of {name!r}: unknown preset names {sorted(unknown)}; use 'cpu' and 'gpu'")
    _REGISTRY[name] = _Entry(factory, dict(presets or {}))


def _same_definition(old: Callable, new: Callable) -> bool:
    """Whether `new` is `old` or its definition run again (a module imported anew, a notebook cell rerun)."""
    name = getattr(new, "__qualname__", None)
    same = (getattr(new, "__module__", None), name) == (getattr(old, "__module__", None),
                                                        getattr(old, "__qualname__", None))
    return new is old or (same and name is not None and "<lambda>" not in name)


def names() -> list[str]:
    """The registered game names and those installed packages offer (entry points), sorted."""
    return sorted(set(_REGISTRY) | set(_entry_points()))


def is_source(name: str) -> bool:
    """Whether `name` has the "MODULE:FACTORY" form (a ':' that is not the "pgx:" prefix)."""
    return ":" in name and not name.startswith(PGX_PREFIX)


def is_known(name: str) -> bool:
    """Whether `make(name)` can build the game (see `check_known`, which says why not)."""
    try:
        check_known(name)
    except GameNotFoundError:
        return False
    return True


def check_known(name: str) -> None:
    """Raises GameNotFoundError, saying why and what to do, unless `make(name)` can find the game. For a
    "pgx:<env_id>" name it checks that the adapter supports the environment; `make` checks that pgx is installed."""
    _resolve(name)


def describe_known() -> str:
    """The names to suggest in an error message: the registered ones, the pgx form and a game of one's own."""
    return (f"{', '.join(names())}, pgx:<env_id> (e.g. pgx:go_9x9, with pip install 'azjax[pgx]'), or a game of "
            "your own as MODULE:FACTORY (e.g. hex5:make_hex5 for make_hex5 in ./hex5.py)")


def canonical(name: str) -> str:
    """The form of `name` to record in a run's config: a source whose module is a .py file gets the file's absolute
    path, so that the run reopens from any directory; every other name is returned as it is."""
    if is_source(name):
        module, factory = name.rsplit(":", 1)
        if module.endswith(".py"):
            return f"{Path(module).resolve()}:{factory}"
    return name


def presets(name: str) -> Mapping[str, Any]:
    """The presets a game's registration attached (by preset name), {} if none; GameNotFoundError if unknown."""
    entry = _resolve(name)
    return {} if entry is None else entry.presets


def definition(name: str) -> Callable[..., Game] | None:
    """The factory that `make(name)` calls today (None for a pgx environment): a token of the game's definition,
    which changes when a game is registered anew (a notebook cell rerun with an edited game), for caches keyed by
    a config, whose game is only a name."""
    entry = _resolve(name)
    return None if entry is None else entry.factory


def make(name: str, **options) -> Game:
    """Builds the game `name` (any form of the module docstring) with its options, e.g. `make("tic_tac_toe")`,
    `make("pgx:go_9x9")`, `make("hex5:make_hex5")`.

    Raises:
      GameNotFoundError (a ValueError): the game cannot be found or its module imported; the message says why.
      ValueError: options the game does not take.
      ImportError: for a "pgx:" name when pgx is not installed (the message says how to install it).
    """
    entry = _resolve(name)
    if entry is None:
        from azjax.games import pgx_adapter

        factory: Callable[..., Game] = functools.partial(pgx_adapter.from_pgx, name[len(PGX_PREFIX):])
    else:
        factory = entry.factory
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as error:
        accepted = list(inspect.signature(factory).parameters) or "none"
        raise ValueError(f"bad options {options} for game {name!r} ({error}); it accepts: {accepted}") from None
    game = factory(**options)
    if not isinstance(game, Game):
        raise TypeError(f"the factory of game {name!r} returned {type(game).__name__}, not an azjax.games.Game")
    return game


class ObservationVersionError(ValueError):
    """A network was trained on an observation version that its game no longer produces; the message names the
    game, both versions and what to do."""


def make_observing(name: str, version: int | None) -> Game:
    """The game `name` producing observation `version` (None: the game's current one, as `make(name)`).

    A game keeps producing an older observation when its factory takes the option `observation_version` (Connect
    Four: 1, its stones only; 2, also the playable and threat planes): networks trained on the old planes (runs,
    exports, shipped agents) then keep working. ObservationVersionError (a ValueError) otherwise.
    """
    game = make(name)
    if version is None or version == game.observation_version:
        return game
    entry = _resolve(name)
    if entry is not None and "observation_version" in inspect.signature(entry.factory).parameters:
        try:
            older = entry.factory(observation_version=version)
        except ValueError:
            older = None
        if isinstance(older, Game) and older.observation_version == version:
            return older
    raise ObservationVersionError(
        f"{name} observes version {game.observation_version} today and cannot produce version {version}: a network "
        f"trained on version {version} would read input planes it never saw; use it with the azjax (or the game's "
        "code) that trained it, or train a new network"
    )


# ------------------------------------------------------------------------------------------------------------
# Resolution


def _resolve(name: str) -> _Entry | None:
    """The registry entry of `name` (None for a supported pgx environment); GameNotFoundError otherwise."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name.startswith(PGX_PREFIX):
        from azjax.games import pgx_adapter  # late: the adapter imports no pgx until a game is built

        try:
            pgx_adapter.check_env_id(name[len(PGX_PREFIX):])
        except ValueError as error:
            raise GameNotFoundError(f"{error} (as pgx:<env_id>)") from None
        return None
    offered = _entry_points()
    if name in offered:
        try:
            factory = offered[name].load()
        except Exception as error:
            raise GameNotFoundError(
                f"game {name!r} is offered by an installed package ({offered[name].value}), which failed to load: "
                f"{type(error).__name__}: {error}; reinstall or fix that package"
            ) from error
        return _entry_of(name, factory)
    if is_source(name):
        return _entry_of(name, load_source(name))
    hint = ""
    if name.endswith(".py") or Path(name).exists():
        hint = f"; for a game defined in a file, name its factory too: --game {name}:make_my_game"
    raise GameNotFoundError(f"unknown game {name!r}{hint}; choose one of {describe_known()}")


def _entry_of(name: str, factory: Callable[..., Game]) -> _Entry:
    """The entry of a factory found outside the registry: a registration of the same factory lends its presets."""
    for entry in _REGISTRY.values():
        if entry.factory is factory:
            return entry
    if not callable(factory):
        raise GameNotFoundError(f"game {name!r}: {factory!r} is not callable; name a function that returns a Game")
    return _Entry(factory, {})


def load_positions(source: str) -> list:
    """The test positions (a sequence of `azjax.games.Position`) named "MODULE:NAME", e.g. "hex5:TEST_POSITIONS",
    for `azjax check --positions`; GameNotFoundError if they cannot be found."""
    from azjax.games.checker import Position

    found = load_source(source, what="test positions", example="hex5:TEST_POSITIONS")
    items = list(found) if isinstance(found, list | tuple) else None
    if items is None or not all(isinstance(item, Position) for item in items):
        raise GameNotFoundError(f"test positions {source!r}: expected a list of azjax.games.Position, got "
                                f"{type(found).__name__}")
    return items


def load_source(source: str, *, what: str = "game", example: str = "hex5:make_hex5"):
    """Imports MODULE of "MODULE:NAME" and returns its attribute NAME."""
    module_name, factory_name = source.rsplit(":", 1) if ":" in source else (source, "")
    if not module_name or not factory_name:
        raise GameNotFoundError(f"{what} {source!r}: expected MODULE:NAME, e.g. {example}")
    try:
        module = _import_file(module_name) if module_name.endswith(".py") else _import_module(module_name)
    except GameNotFoundError as error:
        raise GameNotFoundError(f"{what} {source!r}: {error}") from None
    except Exception as error:
        raise GameNotFoundError(
            f"{what} {source!r}: importing {module_name} failed with {type(error).__name__}: {error}; fix that module "
            f"(python -c 'import {module_name.removesuffix('.py')}' shows the whole traceback)"
        ) from error
    factory = getattr(module, factory_name, None)
    if factory is None and getattr(module, "__file__", None) is None:  # a folder without __init__.py
        folders = ", ".join(str(Path(p).resolve()) for p in getattr(module, "__path__", [])) or module_name
        raise GameNotFoundError(
            f"{what} {source!r}: {module_name} is found as the folder {folders} (a run directory, say), which "
            f"shadows your {module_name}.py; give the file's path instead, e.g. --game ./{module_name}.py:"
            f"{factory_name}, or run the command from another directory"
        )
    if factory is None:
        found = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_") and n.startswith("make")]
        suggestion = f" (it has {', '.join(found)})" if found else ""
        raise GameNotFoundError(f"{what} {source!r}: module {module_name} has no {factory_name!r}{suggestion}")
    return factory


def _import_module(module_name: str):
    """Imports a dotted module, looking in the current directory too (a console script's path omits it)."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name and not module_name.startswith(f"{error.name}."):
            raise  # the module exists but imports a missing one: reported by the caller as an import failure
        raise GameNotFoundError(
            f"no module named {module_name!r} in the current directory ({cwd}), on "
            "PYTHONPATH or among the installed packages; run the command where the module's file is, add its "
            "directory to PYTHONPATH, or install its package"
        ) from None


def _import_file(path_text: str):
    """Imports a .py file as a module named after the file (kept in sys.modules, so it is imported once)."""
    path = Path(path_text).resolve()
    if not path.is_file():
        raise GameNotFoundError(f"no file {path}; check the path (relative to {os.getcwd()})")
    module_name = f"azjax_user_game_{path.stem}_{zlib.crc32(str(path).encode()):08x}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """The games installed packages offer, by name (registered names win over them)."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name not in _REGISTRY}
