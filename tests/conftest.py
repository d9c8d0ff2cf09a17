"""Shared fixtures of the core tests: a TINY tic-tac-toe config that compiles quickly on a 2-core CPU."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pathlib
import sys

import jax
import pytest
from tiny import TINY_OVERRIDES

# The experiment scripts import their shared module (experiments/benchmark.py) as `benchmark`, as they do when run.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "experiments"))
# notebooks/execute.py, which runs the notebooks, is imported as `execute` by their tests.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "notebooks"))

from azjax import config as config_lib
from azjax import presets

# Start jax's backend now, with the one CPU device it gives by default: `azjax train` and `azjax eval` would
# otherwise make each core a device (XLA_FLAGS) when a test calls them first, and the tests' device count would
# depend on their order. Tests that need several devices run a subprocess (tests/test_data_parallel.py).
jax.devices()

# `azjax train`, `eval` and `play` turn on jax's persistent compilation cache in ~/.cache/azjax: not in tests (nor
# their subprocesses), which would write there and change jax's global settings mid-session; tests/test_cli.py
# checks the cache in a subprocess of its own.
os.environ.setdefault("AZJAX_COMPILE_CACHE", "off")



@pytest.fixture(scope="session")
def tiny_overrides() -> dict:
    """The TINY settings as {"section.field": value}; a fresh copy per session."""
    return dict(TINY_OVERRIDES)


@pytest.fixture(scope="session")
def tiny_config(tiny_overrides) -> config_lib.Config:
    """The tic-tac-toe CPU preset shrunk by `tiny_overrides`."""
    return config_lib.with_overrides(presets.get_config("tic_tac_toe", "cpu"), tiny_overrides)


@pytest.fixture(scope="session")
def compile_cache_dir(tmp_path_factory):
    """A persistent-compilation-cache directory shared by the modules that use `persistent_compile_cache`."""
    return tmp_path_factory.mktemp("jax_compile_cache")


@contextlib.contextmanager
def _compile_cache(path, min_compile_time_secs: float):
    """jax's persistent compilation cache in `path` for programs that took at least `min_compile_time_secs` to
    compile, then the previous settings."""
    from jax.experimental.compilation_cache import compilation_cache

    settings = {
        "jax_compilation_cache_dir": str(path),
        "jax_persistent_cache_min_compile_time_secs": min_compile_time_secs,
        "jax_persistent_cache_min_entry_size_bytes": 0,
    }
    previous = {name: getattr(jax.config, name) for name in settings}
    for name, value in settings.items():
        jax.config.update(name, value)
    compilation_cache.reset_cache()
    try:
        yield path
    finally:
        for name, value in previous.items():
            jax.config.update(name, value)
        compilation_cache.reset_cache()


@pytest.fixture(scope="module")
def persistent_compile_cache(compile_cache_dir):
    """Turns jax's persistent compilation cache on for one module (programs that took >= 1 s to compile), then
    restores the previous settings.

    Modules that compile the same TINY training iteration (test_training.py, and the `azjax train` runs of
    test_cli.py) then compile it once per session instead of once per run.
    """
    with _compile_cache(compile_cache_dir, 1.0) as path:
        yield path


@pytest.fixture(scope="module")
def compile_cache_everything(compile_cache_dir):
    """The session's persistent compilation cache for one module, caching every program (eager ops too, which a
    subprocess's first iteration is full of); the previous settings after."""
    with _compile_cache(compile_cache_dir, 0.0) as path:
        yield path


@contextlib.contextmanager
def _experiment(name: str):
    """experiments/<name>.py imported as the module `name` (experiments/ is on sys.path, as when a script runs),
    fresh for each use and forgotten afterwards."""
    sys.modules.pop(name, None)
    try:
        yield importlib.import_module(name)
    finally:
        sys.modules.pop(name, None)


@pytest.fixture(scope="session")
def load_experiment():
    """`with load_experiment("bench_games") as module: module.main(argv)`: an experiment script as a module."""
    return _experiment


# The modules that take minutes of one worker (from `--durations`), run first: under `pytest -n auto --dist
# loadfile` each module goes whole to one worker in collection order, and one of them started last keeps a worker
# busy after the other has finished everything else.
LONGEST_FIRST = ("test_readme_commands.py", "test_multihost.py", "test_data_parallel.py", "test_every_game.py",
                 "test_your_own_game.py", "test_interrupts.py", "test_own_network.py", "test_cli.py",
                 "test_checkpointing.py", "test_notebook_inside_the_search.py", "test_notebook_quickstart.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
