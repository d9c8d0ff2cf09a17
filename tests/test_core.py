"""The core as a library: examples/own_loop.py learns tic-tac-toe from the exported parts and a stock optax
schedule; `import azjax` loads the core alone; no core module imports the application; `sgd_step` follows an optax
schedule; the built-in iteration is made of the same parts; the exported match evaluates an agent as the arena
does."""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import linen as nn

import azjax
from azjax import arena, core, results, search, selfplay, training

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "azjax"
# The layers, lowest first: a module may import its own layer and those below it, never one above.
BASE_MODULES = {"errors", "text"}  # below the games: no jax, no azjax
CORE_MODULES = {"bots", "core", "episodes", "learning", "matches", "networks", "replay", "search", "selfplay",
                "tree_reuse", "uct"}
HEAVY = ("orbax", "flask", "matplotlib", "tensorboardX", "azjax.solver", "azjax.trainer", "azjax.config",
         "azjax.checkpointing", "azjax.cli")

pytestmark = pytest.mark.usefixtures("persistent_compile_cache")


def _own_loop():
    spec = importlib.util.spec_from_file_location("own_loop", ROOT / "examples" / "own_loop.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_own_loop_learns_tic_tac_toe():
    """20 iterations (fixed, no clock): the MLP's top move optimal in >= 95% of the 4,520 solved positions (it
    reaches 97.9-99.2% at 20-40 iterations on seeds 0 and 1)."""
    lines: list[str] = []
    accuracy = _own_loop().train(num_iterations=20, seed=0, log=lines.append)
    assert accuracy >= 0.95, lines
    assert "4,520 positions" in lines[-1] and len(lines) == 3  # iterations 10 and 20, then the judgement


def test_the_own_loop_uses_only_the_core_and_a_stock_optax_schedule():
    tree = ast.parse((ROOT / "examples" / "own_loop.py").read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module == "azjax"
                for alias in node.names}
    assert imported <= {"core", "solver"}  # the solver only judges the result
    calls = {node.func.attr for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and isinstance(node.func.value, ast.Name) and node.func.value.id == "optax"}
    assert "warmup_cosine_decay_schedule" in calls and "adam" in calls


def test_import_azjax_loads_the_core_alone():
    probe = ("import json, sys, azjax, azjax.core; "
             f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
    # The application's names are still one attribute away, imported on first use.
    assert azjax.train.__module__ == "azjax.trainer" and azjax.Config.__module__ == "azjax.config"
    with pytest.raises(AttributeError, match="no attribute 'trian'"):
        azjax.trian  # noqa: B018


def _runtime_imports(path: Path) -> set[str]:
    """The azjax modules a file imports when it runs (not those under `if TYPE_CHECKING:`), by top-level name
    below azjax ("games", "config", ...)."""
    tree = ast.parse(path.read_text())
    checking = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING"
                for n in ast.walk(node)}
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in checking:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "azjax":
            parts = node.module.split(".")
            names.update([parts[1]] if len(parts) > 1 else [alias.name for alias in node.names])
        elif isinstance(node, ast.Import):
            names.update(a.name.split(".")[1] for a in node.names if a.name.startswith("azjax."))
    return names


def test_the_games_and_the_core_import_nothing_above_them():
    for name in sorted(BASE_MODULES):
        assert not _runtime_imports(PACKAGE / f"{name}.py") - BASE_MODULES, name
    for path in sorted((PACKAGE / "games").glob("*.py")):
        assert not _runtime_imports(path) - {"games"} - BASE_MODULES, path.name
    for name in sorted(CORE_MODULES):
        above = _runtime_imports(PACKAGE / f"{name}.py") - CORE_MODULES - {"games"} - BASE_MODULES
        assert not above, f"azjax/{name}.py imports {sorted(above)}, which are above the core"


def test_sgd_step_follows_an_optax_schedule():
    """With optax.sgd(schedule), each step moves a linear model's weight by -schedule(step) x its gradient."""

    class Linear(nn.Module):
        @nn.compact
        def __call__(self, x, train=False):
            del train
            return nn.Dense(3, use_bias=False)(x), jnp.zeros(x.shape[0])

    def loss_fn(params, batch_stats, batch):
        logits, _ = Linear().apply({"params": params}, batch.observation)
        loss = jnp.sum(logits)  # gradient: the observations' column sums, whatever the weights
        return loss, ({"loss": loss}, batch_stats)

    schedule = optax.piecewise_constant_schedule(0.1, {2: 0.5})  # 0.1 for steps 0, 1; 0.05 from step 2
    optimizer = optax.sgd(schedule)
    state = core.init_train_state(jax.random.key(0), Linear(), optimizer, observation_shape=(2,))
    batch = core.Batch(observation=jnp.array([[1.0, 2.0]]), policy_target=jnp.zeros((1, 3)),
                       value_target=jnp.zeros(1))
    step = jax.jit(functools.partial(core.sgd_step, loss_fn=loss_fn, optimizer=optimizer))
    kernel = np.asarray(state.params["Dense_0"]["kernel"])
    for rate in (0.1, 0.1, 0.05, 0.05):
        state, metrics = step(state, batch)
        kernel = kernel - rate * np.array([[1.0], [2.0]])
        np.testing.assert_allclose(state.params["Dense_0"]["kernel"], kernel, rtol=1e-6)
        assert float(metrics["grad_norm"]) == pytest.approx(np.sqrt(3 * 5.0))
    assert int(state.step) == 4


def test_the_built_in_iteration_is_made_of_the_exported_parts(tiny_config):
    parts = training.make_components(tiny_config)
    assert isinstance(parts.search_fn, functools.partial) and parts.search_fn.func is core.run_search
    assert parts.search_fn.keywords["num_simulations"] == tiny_config.search.num_simulations
    assert training.sgd_step is core.sgd_step and training.compute_loss is core.compute_loss
    assert selfplay.run_selfplay is core.run_selfplay and search.run_search is core.run_search
    # The config's fields are the parts' keyword hyperparameters, by the same names.
    assert set(selfplay.selfplay_options(tiny_config.selfplay)) <= set(core.run_selfplay.__kwdefaults__) | {
        "num_steps"}
    assert set(search.search_options(tiny_config.search)) <= set(core.run_search.__kwdefaults__) | {
        "num_simulations"}


def test_every_exported_function_and_class_has_a_docstring():
    documented = [name for name in core.__all__ if callable(getattr(core, name))
                  and hasattr(getattr(core, name), "__module__") and not name.endswith("Fn")]  # type aliases aside
    assert documented
    undocumented = [name for name in documented if not getattr(core, name).__doc__]
    assert not undocumented, undocumented


def _first_cell(key, states):
    """Deterministic: the lowest legal action."""
    del key
    return jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)


def _last_cell(key, states):
    """Deterministic: the highest legal action."""
    del key
    return (states.legal_action_mask.shape[-1] - 1
            - jnp.argmax(states.legal_action_mask[:, ::-1], axis=-1)).astype(jnp.int32)


def test_the_exported_match_evaluates_an_agent_as_the_arena_does():
    """`core.play_match` on tic-tac-toe: one-ply tactics beat random by a clear margin, in the very games the arena
    plays for the same key (`arena.run_games` builds on it); two deterministic agents' outcomes are zero-sum from
    both seats (swapping the agents negates each game's outcome in the other half)."""
    game = core.make_game("tic_tac_toe")
    key = jax.random.key(0)
    init_key, play_key = jax.random.split(key)  # as arena.run_games splits its key, without openings
    states = jax.vmap(game.init)(jax.random.split(init_key, 32))
    states = jax.tree.map(lambda x: jnp.concatenate([x, x]), states)  # 32 pairs, each start once per seat
    onestep = core.onestep_bot(game)
    match = jax.jit(functools.partial(core.play_match, game=game, agent_a=onestep, agent_b=core.random_agent))
    played = jax.device_get(match(play_key, states))
    assert played.start is None
    np.testing.assert_array_equal(played.seat, [0] * 32 + [1] * 32)
    assert set(np.unique(played.outcome)) <= {-1.0, 0.0, 1.0}
    counted = results.summarize(played, "onestep", "random")
    assert counted.games == 64 and counted.score > 0.8, counted
    in_arena = jax.device_get(arena.play_games(key, game, onestep, core.random_agent, 64))
    for field in ("outcome", "seat", "length", "moves", "opening_length"):
        np.testing.assert_array_equal(getattr(played, field), getattr(in_arena, field), err_msg=field)

    def deterministic(agent_a, agent_b):
        return jax.device_get(jax.jit(functools.partial(core.play_match, game=game, agent_a=agent_a,
                                                        agent_b=agent_b))(play_key, states))

    forward, backward = deterministic(_first_cell, _last_cell), deterministic(_last_cell, _first_cell)
    np.testing.assert_array_equal(forward.outcome, [1.0] * 32 + [-1.0] * 32)  # the first to move takes a row
    np.testing.assert_array_equal(backward.outcome, -np.roll(forward.outcome, 32))
    np.testing.assert_array_equal(backward.moves, np.roll(forward.moves, 32, axis=0))
