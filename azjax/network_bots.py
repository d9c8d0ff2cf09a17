"""The bots of a trained network: its top move alone (`greedy_bot`), or with mctx search (`alphazero_bot`).

    agent = load_agent("runs/ttt")                      # or "pretrained:tic_tac_toe"
    greedy = greedy_bot(agent)                          # the network's top move, no search
    searching = alphazero_bot(agent, num_simulations=64, policy="puct")   # keeps its search tree between moves

Every value is for the player to move (see `bots.Analysis`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp

from azjax import tree_reuse
from azjax.agent import Agent
from azjax.bots import Analysis, Bot, Memory
from azjax.config import SearchConfig
from azjax.games import Game, State, lookahead
from azjax.networks import inference_fn
from azjax.search import SearchOutput, evaluate_states, make_search_fn


def greedy_analysis(variables: dict, key: jax.Array, states: State, *, agent: Agent) -> Analysis:
    """The network's top move; its policy and value, and each move's value as minus the network's value of the
    position after it (for a game where the turn passes; a terminal child is worth its reward)."""
    del key
    apply_fn = inference_fn(agent.network)
    game = agent.game
    logits, value = evaluate_states(apply_fn, variables, game, states)
    legal = states.legal_action_mask
    mover = states.current_player

    def value_after(children: State, actions: jax.Array) -> jax.Array:  # [B, C], for the player to move
        _, child_value = evaluate_states(apply_fn, variables, game, lookahead.flatten(children))
        reward = jnp.take_along_axis(children.rewards, mover[:, None, None], axis=2)[..., 0]
        sign = jnp.where(children.current_player == mover[:, None], 1.0, -1.0)
        return reward + jnp.where(children.terminated, 0.0, sign * child_value.reshape(actions.shape))

    # The legal moves' successors a few at a time (`games.lookahead`): Brandub has 1176 actions.
    move_value = lookahead.map_legal_moves(game, states, value_after, fill=jnp.nan)  # [B, A]
    return Analysis(
        action=jnp.argmax(logits, axis=-1).astype(jnp.int32),
        policy=jnp.where(legal, jax.nn.softmax(logits, axis=-1), 0.0),
        value=value.astype(jnp.float32),
        action_values=jnp.where(legal, move_value, jnp.nan).astype(jnp.float32),
    )


def alphazero_analysis(variables: dict, key: jax.Array, states: State, *, search_fn: Callable) -> Analysis:
    """The search's move, its improved policy (visit shares for PUCT), its value of the position, and each
    visited move's value and visits. The move is the most visited (Gumbel MuZero: the best of the moves that
    survived sequential halving, which have the most visits), not always the improved policy's first.

    The value of the position is the search's value (Q) of the move it plays, as resignation reads it: the root
    value averages in every simulation, and Gumbel MuZero's sequential halving spends many on moves it then
    drops, so the root value's sign misnames the outcome of many positions that the network's own value gets
    right (measured on tic-tac-toe's solved positions, commit ac149e3)."""
    return _analysis_of(search_fn(variables, key, states, jnp.zeros(states.current_player.shape, jnp.int32)))


def _analysis_of(output: SearchOutput) -> Analysis:
    return Analysis(
        action=output.action,
        policy=output.policy_target,
        value=jnp.where(jnp.isfinite(output.action_value), output.action_value, output.root_value),
        action_values=output.action_values,
        visits=output.visit_counts,
    )


def _search_memory(variables: dict, search_fn: Callable, game: Game, config: SearchConfig) -> Memory:
    """Tree reuse for a bot: its memory is a `tree_reuse.KeptTree` per game, rooted at the game's position."""

    def analyse(key: jax.Array, states: State, kept: tree_reuse.KeptTree) -> tuple[Analysis, tree_reuse.KeptTree]:
        output = search_fn(variables, key, states, jnp.zeros(states.current_player.shape, jnp.int32), kept)
        return _analysis_of(output), output.tree

    return Memory(
        init=lambda states: tree_reuse.empty(states, game.num_actions, config.capacity, config.num_simulations),
        analyse=analyse,
        follow=tree_reuse.follow,
    )


def alphazero_search_config(agent: Agent, *, num_simulations: int | None = None, policy: str | None = None,
                            reuse_tree: bool = False, tree_capacity: int | None = None) -> SearchConfig:
    """The agent's deterministic search config (no root noise, no temperature) with optional simulations, policy
    ("gumbel" or "puct") and tree reuse overrides (`tree_capacity` None: the default for the simulations)."""
    config = agent.search_config(num_simulations=num_simulations, deterministic=True)
    if policy is not None:
        if policy not in ("gumbel", "puct"):
            raise ValueError(f"search policy must be 'gumbel' or 'puct', got {policy!r}")
        config = dataclasses.replace(config, policy=policy)
    return dataclasses.replace(config, reuse_tree=reuse_tree, tree_capacity=tree_capacity)


def greedy_bot(agent: Agent, name: str = "greedy") -> Bot:
    """A trained network playing its top move without search."""
    return Bot(name, functools.partial(greedy_analysis, agent.variables, agent=agent))


def alphazero_bot(
    agent: Agent, *, num_simulations: int | None = None, policy: str | None = None, reuse_tree: bool | None = None,
    tree_capacity: int | None = None, name: str = "az",
) -> Bot:
    """A trained network with mctx search: the run's search config (or `policy`, "gumbel" or "puct"), with
    `num_simulations` (default: the run's) and no root noise, so it plays its best move. With `reuse_tree` (None:
    with PUCT, where it won at equal time; not with Gumbel MuZero, where it did not gain: docs/results/tree-reuse.md) it
    keeps its search tree between moves (in the arena and `azjax play`, which keep its `memory`), following its
    opponent's moves too, and continues it with `num_simulations` new simulations per move, in a tree of
    `tree_capacity` nodes (default `SearchConfig.capacity`'s); never in a game with chance."""
    if reuse_tree is None:  # a game with chance keeps no tree (a kept tree would hold one roll of the dice)
        reuse_tree = (policy or agent.config.search.policy) == "puct" and not agent.game.has_chance
    config = alphazero_search_config(agent, num_simulations=num_simulations, policy=policy, reuse_tree=reuse_tree,
                                     tree_capacity=tree_capacity)
    search_fn = make_search_fn(agent.game, inference_fn(agent.network), config)
    memory = _search_memory(agent.variables, search_fn, agent.game, config) if reuse_tree else None
    return Bot(name, functools.partial(alphazero_analysis, agent.variables, search_fn=search_fn), memory)
