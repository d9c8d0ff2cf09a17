"""Search: the network's search, on mctx. mctx is called here and in one other place: azjax/tree_reuse.py, which
continues a kept tree for this search (the UCT bot, azjax/uct.py, searches with rollouts and a tree of its own,
without mctx).

`run_search(variables, key, states, *, game, apply_fn, num_simulations, ...)` searches a batch of game states
(mctx's style: arrays first, keyword-only hyperparameters); `make_search_fn(game, apply_fn, config)` binds a
`SearchConfig`'s fields onto it. The game itself is the model
(AlphaZero, not MuZero): the tree's embeddings are game states, and the recurrent function steps the game.

Sign conventions (mctx backs up `reward + discount * value`):
* The network's value is for the player to move at a node, in the game's units (`games.value_to_return`: its
  `return_bounds`; a two-player game's outcome, in [-1, 1]).
* The reward of an edge is what the player who moved *along that edge* received (`rewards[mover]`).
* The discount is -1 between two non-terminal nodes of different players to move: the child's value is for the
  opponent of the parent's mover, so it flips sign. Where the same player moves again (every move of a one-player
  game) it is +1: the rewards add up along the line of play. At a terminal child the discount and value are 0:
  only the reward of its edge counts.
Hence every Q-value and root value in the output is from the point of view of the player to move at the root.
The root value averages every simulation, also those that Gumbel's sequential halving or PUCT's exploration
spent on poor moves; `action_value`, the Q-value of the move played, is what that move is worth.

Tree reuse (`SearchConfig.reuse_tree`): the search takes the tree kept from the previous move (a
`tree_reuse.KeptTree` rooted at the searched positions) and returns its whole tree for the caller to `follow`
along the move played; see azjax/tree_reuse.py for how each policy treats the inherited visits.

Chance (`game.has_chance`): the search is Stochastic MuZero's (`mctx.stochastic_muzero_policy`, PUCT with
Dirichlet noise at the root), with the game as the model: after each move a chance node whose outcomes have the
game's exact probabilities (`chance_outcomes`), each leading to the position `step_outcome` gives. A chance node's
value, for the player who moved, starts as the expectation over its outcomes of the edge's reward plus the
(sign-flipped where the turn passes) network value of the position reached: one network call over every outcome
when the move is first expanded. Tree reuse is not offered there.

Illegal actions are masked at the root through mctx's `invalid_actions` (the inverse of `legal_action_mask`,
inverted once, here, for mctx's policies and tree reuse's alike) and inside the
tree by giving them the lowest prior logit; should the tree still pick one, the game's own rule (an illegal move
loses) makes it worthless.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import mctx
from flax import struct

from azjax import tree_reuse
from azjax.games import Game, State, value_to_return
from azjax.networks import ApplyFn

if TYPE_CHECKING:
    from azjax.config import SearchConfig


class SearchOutput(struct.PyTreeNode):
    """The result of searching a batch of B root states."""

    action: jax.Array
    """[B] int32, the move to play."""
    policy_target: jax.Array
    """[B, A] float32, the search's improved policy (zero on illegal actions)."""
    root_value: jax.Array
    """[B] float32, the search's value of the root, for the player to move there."""
    action_value: jax.Array
    """[B] float32, the search's value (Q) of `action`, for the player to move at the root."""
    network_value: jax.Array
    """[B] float32, the network's raw value of the root, for the player to move there."""
    network_logits: jax.Array
    """[B, A] float32, the network's prior logits at the root (illegal: the lowest float)."""
    visit_counts: jax.Array
    """[B, A] int32, the simulations spent on each move at the root."""
    action_values: jax.Array
    """[B, A] float32, the search's value (Q) of each visited move for the player to move at the root; NaN where
    unvisited."""
    tree: tree_reuse.KeptTree | None = None
    """With reuse_tree: the whole search tree, rooted at the searched states."""
    search_tree: mctx.Tree | None = None
    """With make_search_fn(..., return_tree=True): mctx's tree as its policy built it ([B, nodes, ...], node 0 the root,
    node i + 1 made by simulation i), with the policy's extra data (Gumbel: `extra_data.root_gumbel`)."""


def masked_logits(logits: jax.Array, legal_action_mask: jax.Array) -> jax.Array:
    """Logits [..., A] with illegal actions set to the lowest finite float32."""
    return jnp.where(legal_action_mask, logits, jnp.finfo(logits.dtype).min)


def evaluate_states(apply_fn: ApplyFn, variables: dict, game: Game, states: State) -> tuple[jax.Array, jax.Array]:
    """The network on a batch of states: masked logits [B, A] and the value [B] for each state's player to move,
    in the game's units (`games.value_to_return`: the network's [-1, 1] onto the game's `return_bounds`)."""
    observations = jax.vmap(game.observe)(states)
    logits, value = apply_fn(variables, observations)
    returns = value_to_return(game.return_bounds, value, game.return_scaling)
    return masked_logits(logits, states.legal_action_mask), returns


def _recurrent_fn(
    variables: dict, key: jax.Array, action: jax.Array, states: State, *, game: Game, apply_fn: ApplyFn
) -> tuple[mctx.RecurrentFnOutput, State]:
    del key  # the games are deterministic
    next_states = jax.vmap(game.step)(states, action)
    logits, value = evaluate_states(apply_fn, variables, game, next_states)
    reward, discount, value = _transition_values(next_states, states.current_player, value)
    output = mctx.RecurrentFnOutput(reward=reward, discount=discount, prior_logits=logits, value=value)
    return output, next_states


def _transition_values(next_states: State, mover: jax.Array, value: jax.Array) -> tuple[jax.Array, ...]:
    """mctx's reward and discount of the edges to `next_states` from positions where `mover` moved, and the value
    of the position reached (0 where terminal); see the module docstring's sign conventions."""
    reward = jnp.take_along_axis(next_states.rewards, mover[:, None], axis=1)[:, 0]
    terminal = next_states.terminated
    same_player = next_states.current_player == mover
    discount = jnp.where(terminal, 0.0, jnp.where(same_player, 1.0, -1.0))
    return reward, discount, jnp.where(terminal, 0.0, value)


class Afterstate(struct.PyTreeNode):
    """A chance node's embedding in a game with chance: the positions and the moves made there (the chance event's
    outcome, chosen by the search, then gives the next position through `game.step_outcome`)."""

    states: State
    """[B] the positions the moves were made in."""
    action: jax.Array
    """[B] int32, the moves."""


CHANCE_TIE_NOISE = 1e-4  # the scale of the noise on a chance node's log-probabilities that breaks its ties


def _decision_fn(
    variables: dict, key: jax.Array, action: jax.Array, states: State, *, game: Game, apply_fn: ApplyFn
) -> tuple[mctx.DecisionRecurrentFnOutput, Afterstate]:
    """A chance game's move: the chance node after it, its outcomes' log-probabilities and its value for the mover
    (the expectation over the outcomes of reward + discount x value of the position reached)."""
    chance_outcomes, step_outcome = game.chance_outcomes, game.step_outcome
    assert chance_outcomes is not None and step_outcome is not None  # a game with chance has both
    batch, num_outcomes = action.shape[0], game.num_chance_outcomes
    probabilities = jax.vmap(chance_outcomes)(states, action)  # [B, C]
    outcomes = jnp.arange(num_outcomes, dtype=jnp.int32)
    reached = jax.vmap(lambda s, a: jax.vmap(lambda c: step_outcome(s, a, c))(outcomes))(states, action)
    flat = jax.tree.map(lambda x: x.reshape(batch * num_outcomes, *x.shape[2:]), reached)
    _, value = evaluate_states(apply_fn, variables, game, flat)
    mover = jnp.repeat(states.current_player, num_outcomes)
    reward, discount, value = _transition_values(flat, mover, value)
    backed_up = (reward + discount * value).reshape(batch, num_outcomes)
    # mctx visits a chance node's outcomes by argmax(p / (n + 1)), ties to the lowest index, so equally likely
    # outcomes would always be visited in one order (Pig's bust first): a tiny noise breaks the ties at random.
    tie_break = CHANCE_TIE_NOISE * jax.random.gumbel(key, probabilities.shape)
    output = mctx.DecisionRecurrentFnOutput(
        chance_logits=jnp.log(probabilities) + tie_break,
        afterstate_value=jnp.sum(jnp.where(probabilities > 0, probabilities * backed_up, 0.0), axis=-1),
    )
    return output, Afterstate(states=states, action=action)


def _chance_fn(
    variables: dict, key: jax.Array, outcome: jax.Array, afterstate: Afterstate, *, game: Game, apply_fn: ApplyFn
) -> tuple[mctx.ChanceRecurrentFnOutput, State]:
    """A chance node's outcome: the position reached, with the network's prior and value there."""
    del key
    assert game.step_outcome is not None
    states, action = afterstate.states, afterstate.action
    next_states = jax.vmap(game.step_outcome)(states, action, outcome)
    logits, value = evaluate_states(apply_fn, variables, game, next_states)
    reward, discount, value = _transition_values(next_states, states.current_player, value)
    output = mctx.ChanceRecurrentFnOutput(action_logits=logits, value=value, reward=reward, discount=discount)
    return output, next_states


def nodes_per_tree(num_simulations: int, *, reuse_tree: bool = False, tree_capacity: int | None = None) -> int:
    """Nodes per game's search tree: `num_simulations` + 1, or with `reuse_tree` `tree_capacity`, by default
    2 x `num_simulations` + 1 (room for the search and as many kept nodes). A larger tree costs more per search
    (mctx's backward pass carries the whole tree through each step); measured in
    experiments/studies/tree_reuse/results/."""
    if not reuse_tree:
        return num_simulations + 1
    return tree_capacity if tree_capacity is not None else 2 * num_simulations + 1


def _gumbel_scale(gumbel_scale: float, gumbel_moves: int | None, move_number: jax.Array) -> float | jax.Array:
    """The root Gumbel noise's scale: `gumbel_scale`, or per game [B, 1] with `gumbel_moves` (none once a game has
    played that many moves: the search then plays its best action, the argmax of prior logits + sigma(Q) after
    sequential halving)."""
    if gumbel_moves is None:
        return gumbel_scale
    return jnp.where(move_number < gumbel_moves, gumbel_scale, 0.0)[:, None]


def run_search(
    variables: dict,
    key: jax.Array,
    states: State,
    move_number: jax.Array | None = None,
    kept: tree_reuse.KeptTree | None = None,
    *,
    game: Game,
    apply_fn: ApplyFn,
    num_simulations: int,
    policy: str = "gumbel",
    max_num_considered_actions: int = 16,
    gumbel_scale: float = 1.0,
    gumbel_moves: int | None = None,
    value_scale: float = 0.1,
    dirichlet_alpha: float = 0.3,
    dirichlet_fraction: float = 0.25,
    pb_c_init: float = 1.25,
    pb_c_base: float = 19652.0,
    temperature_moves: int = 10,
    reuse_tree: bool = False,
    tree_capacity: int | None = None,
    return_tree: bool = False,
) -> SearchOutput:
    """Searches a batch of B non-terminal game states with the network: Gumbel MuZero or PUCT, on mctx.

    Args:
      variables: the network's variables, passed to `apply_fn`.
      key: the search's randomness (root noise, PUCT's move sampling).
      states: [B] game states, none terminal.
      move_number: int32 [B], the moves already played in each game (default: 0 for every game). PUCT samples its
        move from the visit counts for a game's first `temperature_moves` moves, then plays the most visited;
        Gumbel adds root noise for the first `gumbel_moves` moves only (None: always).
      kept: with `reuse_tree`, the tree kept for these states (`tree_reuse.KeptTree` of `tree_capacity` nodes;
        None: start every game fresh); the output's `tree` is then the whole search tree, for `tree_reuse.follow`.
      game: the game whose states are searched; it is the model (AlphaZero, not MuZero).
      apply_fn: the network, (variables, observations [B, ...]) -> (logits [B, A], value [B] for the player to
        move).
      num_simulations: simulations per search.
      policy: "gumbel" (Gumbel MuZero: `max_num_considered_actions`, `gumbel_scale`, `value_scale`) or "puct"
        (AlphaZero's PUCT: `dirichlet_alpha`, `dirichlet_fraction`, `pb_c_init`, `pb_c_base`,
        `temperature_moves`); the hyperparameters are mctx's. A game with chance takes "puct" only (Stochastic
        MuZero's search, with the same hyperparameters).
      reuse_tree / tree_capacity: keep and continue trees across moves (`tree_capacity` as `nodes_per_tree`).
      return_tree: also return mctx's tree in `SearchOutput.search_tree` ([B, nodes, A] arrays: leave it off where
        the output leaves jit in bulk).
    Returns:
      `SearchOutput`, every value for the player to move at the root. Pure and un-jitted: callers jit it (or the
      loop around it).
    """
    if kept is not None and not reuse_tree:
        raise ValueError("a kept tree was passed to a search without reuse_tree")
    if policy not in ("gumbel", "puct"):
        raise ValueError(f"policy {policy!r}: use 'gumbel' or 'puct'")
    if game.has_chance and (policy != "puct" or reuse_tree):
        raise ValueError(f"{game.name} has chance events: its search is Stochastic MuZero's, policy 'puct' without "
                         f"tree reuse (got policy {policy!r}, reuse_tree {reuse_tree})")
    if move_number is None:
        move_number = jnp.zeros(states.current_player.shape, jnp.int32)
    logits, value = evaluate_states(apply_fn, variables, game, states)
    root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=states)
    common: dict[str, Any] = dict(
        params=variables,
        rng_key=key,
        root=root,
        recurrent_fn=functools.partial(_recurrent_fn, game=game, apply_fn=apply_fn),
        num_simulations=num_simulations,
        invalid_actions=~states.legal_action_mask,
        max_depth=game.max_length,
    )
    capacity = nodes_per_tree(num_simulations, reuse_tree=reuse_tree, tree_capacity=tree_capacity)
    if reuse_tree:
        common.update(kept=kept, capacity=capacity)
    if policy == "gumbel":
        gumbel_policy = tree_reuse.gumbel_policy if reuse_tree else mctx.gumbel_muzero_policy
        output = gumbel_policy(
            **common,
            max_num_considered_actions=max_num_considered_actions,
            gumbel_scale=_gumbel_scale(gumbel_scale, gumbel_moves, move_number),
            qtransform=functools.partial(mctx.qtransform_completed_by_mix_value, value_scale=value_scale),
        )
        action = output.action
    else:
        if game.has_chance:
            del common["recurrent_fn"]
            common.update(decision_recurrent_fn=functools.partial(_decision_fn, game=game, apply_fn=apply_fn),
                          chance_recurrent_fn=functools.partial(_chance_fn, game=game, apply_fn=apply_fn),
                          max_depth=2 * game.max_length)
            puct_policy = mctx.stochastic_muzero_policy
        else:
            puct_policy = tree_reuse.puct_policy if reuse_tree else mctx.muzero_policy
        output = puct_policy(
            **common,
            dirichlet_fraction=dirichlet_fraction,
            dirichlet_alpha=dirichlet_alpha,
            pb_c_init=pb_c_init,
            pb_c_base=pb_c_base,
            temperature=1.0,
        )
        # Temperature schedule: mctx sampled from the visit counts; past the opening, play the most visited.
        most_visited = jnp.argmax(output.action_weights, axis=-1)
        action = jnp.where(move_number < temperature_moves, output.action, most_visited)
    return _search_output(output, action.astype(jnp.int32), logits, value, num_simulations, reuse_tree=reuse_tree,
                          return_tree=return_tree)


def _search_output(output: mctx.PolicyOutput, action: jax.Array, logits: jax.Array, value: jax.Array,
                   num_simulations: int, *, reuse_tree: bool, return_tree: bool) -> SearchOutput:
    """`run_search`'s output from mctx's: the move `action` (int32 [B]) and the network's `logits` [B, A] and
    `value` [B] at the roots, every value for the player to move there."""
    summary = output.search_tree.summary()
    return SearchOutput(
        action=action,
        policy_target=output.action_weights,
        root_value=summary.value,
        # The chosen move was always visited (Gumbel plays a considered action; PUCT a visited one).
        action_value=jnp.take_along_axis(summary.qvalues, action[:, None], axis=1)[:, 0],
        network_value=value,
        network_logits=logits,
        visit_counts=summary.visit_counts.astype(jnp.int32),  # mctx's summary gives the value dtype
        action_values=jnp.where(summary.visit_counts > 0, summary.qvalues, jnp.nan),
        tree=tree_reuse.searched(output.search_tree, num_simulations) if reuse_tree else None,
        search_tree=output.search_tree if return_tree else None,
    )


def search_options(config: SearchConfig) -> dict[str, Any]:
    """A search config's fields as `run_search`'s keyword hyperparameters (they have the same names)."""
    return {field.name: getattr(config, field.name) for field in dataclasses.fields(config)}


def make_search_fn(
    game: Game, apply_fn: ApplyFn, config: SearchConfig, *, return_tree: bool = False
) -> Callable[..., SearchOutput]:
    """`run_search` with the game, the network and a search config's hyperparameters bound: `search(variables,
    key, states, move_number=None, kept=None) -> SearchOutput`. `config` is a `config.SearchConfig`, or any
    dataclass whose fields are `run_search`'s keyword hyperparameters."""
    return functools.partial(run_search, game=game, apply_fn=apply_fn, return_tree=return_tree,
                             **search_options(config))
