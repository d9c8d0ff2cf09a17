"""Shared fixtures of the core tests: a TINY tic-tac-toe config that compiles quickly on a 2-core CPU."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pathlib
import sys

import jax
import pytest
from tiny import TEST_XLA_FLAGS, TINY_OVERRIDES

# The experiment scripts import their shared module (experiments/benchmark.py) as `benchmark`, as they do when run.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "experiments"))
# notebooks/execute.py, which runs the notebooks, is imported as `execute` by their tests.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "notebooks"))

from azjax import config as config_lib
from azjax import presets

# XLA compiles the tests' programs without LLVM's optimisations and with its elemental fusion emitter
# (tests/tiny.py's TEST_XLA_FLAGS): faster to compile, slower to run. Set before the backend starts; the `azjax`
# processes the tests start inherit it (tests/readme_commands.py passes it on, and the modules that set their own
# XLA_FLAGS add it).
os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {TEST_XLA_FLAGS}".strip()

# Start jax's backend now, with the one CPU device it gives by default: `azjax train` and `azjax eval` would
# otherwise make each core a device (XLA_FLAGS) when a test calls them first, and the tests' device count would
# depend on their order. Tests that need several devices run a subprocess (tests/test_data_parallel.py).
jax.devices()

# One persistent compilation cache for the whole run, shared by the xdist workers and the `azjax` processes the
# tests start (their environment names it in AZJAX_COMPILE_CACHE): a program that several modules, workers or
# subprocesses build again (the TINY training iteration above all) compiles once per run. It lives in the run's
# temporary directory, so every run starts without one. Tests that examine the cache itself (tests/test_cli.py)
# or compilation (tests/test_interrupts.py) name their own directory or --no-compile-cache.
SESSION_CACHE_MIN_COMPILE_SECS = 0.2
os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = str(SESSION_CACHE_MIN_COMPILE_SECS)  # for subprocesses



@pytest.fixture(scope="session")
def tiny_overrides() -> dict:
    """The TINY settings as {"section.field": value}; a fresh copy per session."""
    return dict(TINY_OVERRIDES)


@pytest.fixture(scope="session")
def tiny_config(tiny_overrides) -> config_lib.Config:
    """The tic-tac-toe CPU preset shrunk by `tiny_overrides`."""
    return config_lib.with_overrides(presets.get_config("tic_tac_toe", "cpu"), tiny_overrides)


@pytest.fixture(scope="session", autouse=True)
def compile_cache_dir(tmp_path_factory):
    """The run's persistent-compilation-cache directory, on for every test (programs that took at least
    SESSION_CACHE_MIN_COMPILE_SECS to compile) and for the `azjax` processes the tests start."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the workers' base directories share a parent: the run's
        base = base.parent
    path = base / "jax_compile_cache"
    path.mkdir(exist_ok=True)
    os.environ["AZJAX_COMPILE_CACHE"] = str(path)
    with _compile_cache(path, SESSION_CACHE_MIN_COMPILE_SECS):
        yield path


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
    """The run's persistent compilation cache (on for every module): modules that compile the same TINY training
    iteration (test_training.py, and the `azjax train` runs of test_cli.py) compile it once per run."""
    return compile_cache_dir


@pytest.fixture(scope="module")
def compile_cache_everything(compile_cache_dir):
    """The session's persistent compilation cache for one module, caching every program (eager ops too, which a
    subprocess's first iteration is full of); the previous settings after."""
    with _compile_cache(compile_cache_dir, 0.0) as path:
        yield path


EXPERIMENTS = pathlib.Path(__file__).resolve().parents[1] / "experiments"


def experiment_path(name: str) -> pathlib.Path:
    """The script <name>.py anywhere under experiments/ (benchmark.py, benchmarks/, studies/NAME/, tools/); script
    names are unique there."""
    found = sorted(EXPERIMENTS.rglob(f"{name}.py"))
    assert len(found) == 1, f"experiments/ should hold exactly one {name}.py, found {found}"
    return found[0]


@contextlib.contextmanager
def _experiment(name: str):
    """experiments/.../<name>.py imported as the module `name`, with its own folder first on sys.path and
    experiments/ after it (as when the script runs: its siblings and the shared benchmark module import by name),
    fresh for each use and forgotten afterwards, the modules it imported from its folder and the path included."""
    folder = str(experiment_path(name).parent)
    siblings = {path.stem for path in experiment_path(name).parent.glob("*.py")}
    path_before = list(sys.path)
    for module in siblings:
        sys.modules.pop(module, None)
    sys.path[:0] = [folder, str(EXPERIMENTS)]
    try:
        yield importlib.import_module(name)
    finally:
        sys.path[:] = path_before
        for module in siblings:
            sys.modules.pop(module, None)


@pytest.fixture(scope="session")
def load_experiment():
    """`with load_experiment("bench_games") as module: module.main(argv)`: an experiment script as a module, found by
    its name anywhere under experiments/."""
    return _experiment


# The modules that take the most of a worker's time (from `--durations`), run first: under `pytest -n auto --dist
# loadfile` each module goes whole to one worker in collection order, and one of them started last keeps a worker
# busy after the other has finished everything else.
LONGEST_FIRST = ("test_pgx_chance.py", "test_checkpointing.py", "test_tree_reuse.py", "test_evaluation.py",
                 "test_selfplay.py", "test_pig.py", "test_gomoku.py", "test_othello.py", "test_bots.py",
                 "test_your_own_game.py", "test_one_player.py", "test_pretrained.py", "test_core.py",
                 "test_data_parallel.py", "test_search.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
