"""A trained agent loaded from a run directory: `load_agent(run_dir)`.

    agent = azjax.load_agent("runs/tic_tac_toe-...")                 # the latest checkpoint
    strong = azjax.load_agent("pretrained:connect_four")              # the agent shipped for a game
    early = azjax.load_agent("runs/tic_tac_toe-...", iteration=10)   # or any kept one; or best_metric="eval/score"
    states = jax.vmap(agent.game.init)(jax.random.split(key, 8))
    logits, value = agent.policy_value(states)        # [8, A] masked logits, [8] value for the mover, return units
    actions = agent.act(key, states)                   # with search (the run's search config)
    actions = agent.act(key, states, search=False)     # the network's top move
    chances = agent.outcome_probabilities(states)     # [8, 3] win/draw/loss, a network with --network.value_head wdl
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import jax
import jax.numpy as jnp
from flax import linen as nn

from azjax import exports, games
from azjax.config import Config, SearchConfig
from azjax.networks import inference_fn, network_of, outcome_probabilities
from azjax.search import evaluate_states, make_search_fn


@dataclasses.dataclass(frozen=True, eq=False)
class Agent:
    """A network with its game and search settings. Methods take batched states [B] and are jitted."""

    config: Config
    """The run's settings: its game, its network's architecture, and the search it plays with."""
    game: games.Game
    """The game it plays."""
    network: nn.Module
    """The network: any module with the network contract of `azjax.networks`."""
    variables: dict
    """The network's variables ("params", and "batch_stats" where it has batch norm)."""

    def policy_value(self, states: games.State) -> tuple[jax.Array, jax.Array]:
        """The network on a batch of states: logits [B, A] (illegal actions at the float minimum) and the value
        [B] for each state's player to move, in the game's return units: in [-1, 1] in a two-player game, within
        `game.return_bounds` in a one-player game (the return still to come, `games.value_to_return`)."""
        _check_batch(states, "policy_value")
        return _policy_value(self.network, self.game, self.variables, states)

    def outcome_probabilities(self, states: games.State) -> jax.Array:
        """The chances [B, 3] of a win, a draw and a loss for each state's player to move (in that order), of an
        agent whose network has a win/draw/loss value head (`--network.value_head wdl`); win - loss is its value.

        Raises:
          ValueError: the agent's value head is a scalar one (no draw share to give).
        """
        _check_batch(states, "outcome_probabilities")
        return _outcome_probabilities(self.network, self.game, self.variables, states)

    def act(
        self,
        key: jax.Array,
        states: games.State,
        *,
        search: bool = True,
        num_simulations: int | None = None,
        deterministic: bool = True,
    ) -> jax.Array:
        """Moves [B] int32 for a batch of non-terminal states.

        Args:
          key: randomness for the search (and for sampling when not deterministic).
          states: batched game states.
          search: search with mctx (the run's search config) rather than take the network's top move.
          num_simulations: overrides the run's simulations per move.
          deterministic: no root noise (Gumbel scale 0, no Dirichlet noise, no temperature); with
            `search=False`, False samples from the network's policy instead of taking its top move.
        """
        _check_batch(states, "act")
        if not search:
            logits, _ = self.policy_value(states)
            if deterministic:
                return jnp.argmax(logits, axis=-1).astype(jnp.int32)
            return jax.random.categorical(key, logits).astype(jnp.int32)
        search_config = self.search_config(num_simulations=num_simulations, deterministic=deterministic)
        return _search_action(self.network, self.game, search_config, self.variables, key, states)

    def search_config(self, *, num_simulations: int | None = None, deterministic: bool = True) -> SearchConfig:
        """The run's search config, adjusted for play: optionally more simulations, optionally no noise."""
        changes: dict = {}
        if num_simulations is not None:
            changes.update(num_simulations=num_simulations, tree_capacity=None)  # a kept tree's default for them
        if deterministic:
            changes.update(gumbel_scale=0.0, dirichlet_fraction=0.0, temperature_moves=0)
        return dataclasses.replace(self.config.search, **changes)


def _check_batch(states: games.State, method: str) -> None:
    """Refuses a single state (or a batch of batches) before it reaches the jitted functions, where vmap would
    fail with a message about axes."""
    shape = jnp.shape(states.current_player)
    if len(shape) != 1:
        raise ValueError(
            f"Agent.{method} takes a batch of states [B]; these have current_player of shape {shape}: batch one "
            "state with jax.tree.map(lambda x: x[None], state), or make B of them with "
            "jax.vmap(agent.game.init)(jax.random.split(key, B))")


@functools.partial(jax.jit, static_argnums=(0, 1))
def _policy_value(network, game, variables, states):
    apply_fn = inference_fn(network)
    return evaluate_states(apply_fn, variables, game, states)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _outcome_probabilities(network, game, variables, states):
    return outcome_probabilities(network, variables, jax.vmap(game.observe)(states))


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _search_action(network, game, search_config, variables, key, states):
    search_fn = make_search_fn(game, inference_fn(network), search_config)
    move_number = jnp.zeros(states.current_player.shape, jnp.int32)
    return search_fn(variables, key, states, move_number).action


def make_agent(config: Config, variables: dict, network: nn.Module | None = None) -> Agent:
    """An agent from a config and network variables ({"params", "batch_stats"}) of `network` (default:
    `network_of(config, game)`, the ResNet or `config.network.module`'s)."""
    game = config.make_game()
    return Agent(config=config, game=game, network=network if network is not None else network_of(config, game),
                 variables=variables)


def load_agent(run_dir: str | Path, *, iteration: int | None = None, best_metric: str | None = None,
               network: nn.Module | None = None) -> Agent:
    """The agent of a run directory's latest checkpoint, or of another one.

    Args:
      run_dir: a run directory (`azjax train --out`), one of its `checkpoints/<iteration>` directories, an
        export (`azjax export`), or "pretrained:GAME": the agent shipped for GAME (`azjax.pretrained`).
      iteration: the run's checkpoint of this iteration instead of the latest (a run directory keeps its last
        few checkpoints and its best; the error lists those it has).
      best_metric: the run's checkpoint with the highest value of this metric instead, e.g. "eval/score".
      network: the module the run trained, where it was given to `train` in Python rather than recorded in the
        config (`--network MODULE:FACTORY` is, and is built again from it).
    Raises:
      rundir.CheckpointError: the directory, its config or the checkpoint asked for cannot be used (the
        message says which and what to do).
    """
    config, variables = exports.restore_model(Path(run_dir), iteration=iteration, best_metric=best_metric,
                                              network=network)
    return make_agent(config, variables, network)
