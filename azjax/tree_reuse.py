"""Keeping the searched subtree between moves (tree reuse), on top of mctx's public `search`.

mctx builds a fresh tree at every search. Its policies take a `loop_fn` (the loop over simulations, by default
`jax.lax.fori_loop`), which receives that fresh tree in its initial state: the loop here swaps in the tree kept
from the previous move, gives its root the fresh root's prior (so that root noise is drawn afresh at each new
root) and runs the new simulations on it. Everything stays inside jit: fixed-size trees (`capacity` nodes per
game), gathers to re-index, no host round-trips.

    kept = tree_reuse.empty(states, num_actions, capacity, num_simulations)   # B games, nothing kept yet
    output = tree_reuse.puct_policy(..., kept=kept, capacity=capacity)      # or gumbel_policy
    kept = tree_reuse.follow(tree_reuse.searched(output.search_tree, num_simulations), action)  # after any move
    kept = tree_reuse.forget(kept, game_ended)                             # a new game starts empty

A `KeptTree` is always rooted at its game's current position; `follow` moves the root along a move, whoever
played it, so an agent's tree also follows its opponent's moves.

Node indices. mctx gives the node a simulation creates the index `sim + 1`. A kept subtree occupies nodes
0 .. nodes - 1 of its game (the new root at 0, then its descendants in their old order, so parents stay before
children); the new simulations start after the largest kept subtree in the batch, so every game's new nodes are
free slots. A subtree larger than `capacity - num_simulations` nodes keeps its first nodes in creation order (the
shallow, often visited ones); a kept node whose child was cut off sees that child as unvisited again. `follow`
leaves that room for the `num_simulations` it was given; a kept tree that has less room for a search's simulations
(kept for a search with fewer, e.g. restored from a checkpoint of a run with fewer simulations) is forgotten by
that search: the game's search starts fresh.

Policies.
* PUCT (`mctx.muzero_policy`) accumulates visits naturally: the root's inherited visits count in its visit
  distribution, which is the move choice and the policy target.
* Gumbel MuZero's sequential halving schedules its simulations by the root's visit counts. `gumbel_policy` runs
  the halving over this search's new simulations only: the root's children's inherited visits are set aside
  (`InheritedGumbelData.inherited_visits`), so the fresh Gumbel sample, the considered actions and the rounds
  are exactly those of a fresh search with the same budget; but every value it reads is the whole tree's: the
  completed Q-values that rank the considered actions, choose the move and form the policy target
  softmax(prior + completed Q) count inherited visits too (which also makes their scale, which grows with the
  most visited child's count, larger: a sharper target). Below the root, Gumbel's deterministic selection uses
  the whole tree's visits, as usual. With nothing kept, it equals `mctx.gumbel_muzero_policy` bit for bit.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import mctx
from flax import struct

from azjax.games import State

UNVISITED = mctx.Tree.UNVISITED
NO_PARENT = mctx.Tree.NO_PARENT
ROOT = mctx.Tree.ROOT_INDEX


class KeptTree(struct.PyTreeNode):
    """For each of B games, the searched tree rooted at the game's current position (or nothing)."""

    tree: mctx.Tree
    """[B, capacity, ...]: nodes 0 .. nodes - 1 in use, node 0 the current position."""
    nodes: jax.Array
    """[B] int32, nodes in use; 0: nothing kept, the next search starts fresh."""
    num_simulations: int = struct.field(pytree_node=False)
    """The simulations of the next search: `follow` leaves it that much room."""

    @property
    def capacity(self) -> int:
        return self.tree.node_visits.shape[-1]


class InheritedGumbelData(struct.PyTreeNode):
    """The extra data of `gumbel_policy`'s tree: mctx's root Gumbel sample and the root's inherited visits."""

    root_gumbel: jax.Array  # [B, A] float32
    inherited_visits: jax.Array  # [B, A] int32, the root children's visits before this search


def empty(states: State, num_actions: int, capacity: int, num_simulations: int) -> KeptTree:
    """Nothing kept for a batch of B games `states` (whose state records shape the tree's embeddings)."""
    if capacity < num_simulations + 1:
        raise ValueError(f"a tree of {capacity} nodes cannot hold {num_simulations} simulations and its root")
    batch = states.current_player.shape[0]

    def nodes(dtype, fill, *trailing):
        return jnp.full((batch, capacity, *trailing), fill, dtype)

    tree = mctx.Tree(
        node_visits=nodes(jnp.int32, 0),
        raw_values=nodes(jnp.float32, 0),
        node_values=nodes(jnp.float32, 0),
        parents=nodes(jnp.int32, NO_PARENT),
        action_from_parent=nodes(jnp.int32, NO_PARENT),
        children_index=nodes(jnp.int32, UNVISITED, num_actions),
        children_prior_logits=nodes(jnp.float32, 0, num_actions),
        children_visits=nodes(jnp.int32, 0, num_actions),
        children_rewards=nodes(jnp.float32, 0, num_actions),
        children_discounts=nodes(jnp.float32, 0, num_actions),
        children_values=nodes(jnp.float32, 0, num_actions),
        embeddings=jax.tree.map(lambda x: jnp.broadcast_to(x[:, None], (batch, capacity, *x.shape[1:])), states),
        root_invalid_actions=jnp.zeros((batch, num_actions), bool),
        extra_data=None,
    )
    return KeptTree(tree, jnp.zeros(batch, jnp.int32), num_simulations)


def searched(tree: mctx.Tree, num_simulations: int) -> KeptTree:
    """A search's whole tree (`PolicyOutput.search_tree`), rooted at the searched positions, ready to `follow`."""
    used = jnp.sum(tree.node_visits > 0, axis=1).astype(jnp.int32)  # every created node has been visited
    return KeptTree(_plain(tree), used, num_simulations)


def forget(kept: KeptTree, mask: jax.Array) -> KeptTree:
    """Nothing kept for the games where `mask` [B] (a game that ended and restarted)."""
    return kept.replace(nodes=jnp.where(mask, 0, kept.nodes))


def follow(kept: KeptTree, action: jax.Array, moved: jax.Array | None = None) -> KeptTree:
    """Each game's subtree under `action` [B] at its root, re-rooted at node 0, where `moved` [B] (default: all);
    the other games keep their tree. A game whose move was never searched keeps nothing (its next search starts
    fresh). At most capacity - num_simulations nodes are kept, room for the next search.

    The kept nodes keep everything mctx stores (visits, values, priors, rewards, discounts, embeddings).
    """
    tree = kept.tree
    batch, capacity = tree.node_visits.shape
    limit = capacity - kept.num_simulations
    child = tree.children_index[jnp.arange(batch), ROOT, action]
    new_root = jnp.where(kept.nodes > 0, child, UNVISITED)  # [B]
    rerooted, count = jax.vmap(functools.partial(_reroot_one, limit=limit))(tree, new_root)
    if moved is None:
        return KeptTree(rerooted, count, kept.num_simulations)
    chosen = jax.tree.map(lambda new, old: jnp.where(_expand(moved, new), new, old), rerooted, tree)
    return KeptTree(chosen, jnp.where(moved, count, kept.nodes), kept.num_simulations)


def _reroot_one(tree: mctx.Tree, new_root: jax.Array, *, limit: int) -> tuple[mctx.Tree, jax.Array]:
    """One game's subtree under node `new_root` (UNVISITED: none), re-indexed from 0, at most `limit` nodes."""
    capacity = tree.node_visits.shape[0]
    nodes = jnp.arange(capacity)
    inside = _descendants(tree.parents, new_root) & (new_root != UNVISITED)
    rank = jnp.cumsum(inside) - 1  # new index of each kept node, in old order
    keep = inside & (rank < limit)
    count = jnp.sum(keep).astype(jnp.int32)
    # old index of each new slot: the kept nodes in order, then (unused) slot 0 repeated.
    source = jnp.zeros(capacity, jnp.int32).at[jnp.where(keep, rank, capacity)].set(nodes, mode="drop")
    used = nodes < count
    new_index = jnp.where(keep, rank, UNVISITED)  # old -> new (UNVISITED if dropped)

    def remap(old):  # an array of old node indices -> new ones
        return jnp.where(old >= 0, new_index[jnp.clip(old, 0, capacity - 1)], old)

    def take(x, fill):  # [capacity, ...] in old order -> new order, unused slots filled
        mask = used.reshape((capacity,) + (1,) * (x.ndim - 1))
        return jnp.where(mask, x[source], jnp.asarray(fill, x.dtype))

    children_index = take(remap(tree.children_index), UNVISITED)
    # Children cut off by the limit are unvisited again: their statistics go with them.
    cut = children_index == UNVISITED
    kept = tree.replace(
        node_visits=take(tree.node_visits, 0),
        raw_values=take(tree.raw_values, 0),
        node_values=take(tree.node_values, 0),
        parents=take(remap(tree.parents), NO_PARENT).at[0].set(NO_PARENT),
        action_from_parent=take(tree.action_from_parent, NO_PARENT).at[0].set(NO_PARENT),
        children_index=children_index,
        children_prior_logits=take(tree.children_prior_logits, 0),
        children_visits=jnp.where(cut, 0, take(tree.children_visits, 0)),
        children_rewards=jnp.where(cut, 0, take(tree.children_rewards, 0)),
        children_discounts=jnp.where(cut, 0, take(tree.children_discounts, 0)),
        children_values=jnp.where(cut, 0, take(tree.children_values, 0)),
        embeddings=jax.tree.map(lambda x: take(x, 0), tree.embeddings),
    )
    return kept, count


def _descendants(parents: jax.Array, node: jax.Array) -> jax.Array:
    """[N] bool: which nodes are `node` or below it, by pointer jumping (log2 N rounds of gathers): after round
    k, `reached` says whether `node` is among a node's first 2^k ancestors (itself included) and `up` is its
    2^k-th ancestor (NO_PARENT past the root)."""
    num_nodes = parents.shape[0]
    reached = jnp.arange(num_nodes) == node
    up = parents
    for _ in range(max(1, math.ceil(math.log2(num_nodes)))):
        valid = up != NO_PARENT
        safe = jnp.clip(up, 0, num_nodes - 1)
        reached = reached | (valid & reached[safe])
        up = jnp.where(valid, up[safe], NO_PARENT)
    return reached


# --------------------------------------------------------------------------------------------------------------
# Searches that continue a kept tree


def puct_policy(*, kept: KeptTree | None, capacity: int, **policy_kwargs: Any) -> mctx.PolicyOutput:
    """`mctx.muzero_policy(**policy_kwargs)` continuing `kept` (None: every game starts fresh) in a tree of
    `capacity` nodes. `root` must be the positions that `kept`'s roots stand for. With nothing kept and capacity
    num_simulations + 1 the result equals mctx's bit for bit. A game whose kept tree leaves no room for the
    simulations starts fresh (see the module docstring)."""
    kept = _with_room(kept, capacity, policy_kwargs["num_simulations"])
    loop = _loop_fn(kept, capacity, policy_kwargs["num_simulations"])
    return mctx.muzero_policy(**policy_kwargs, loop_fn=loop)


def gumbel_policy(
    params: Any,
    rng_key: jax.Array,
    root: mctx.RootFnOutput,
    recurrent_fn: mctx.RecurrentFn,
    num_simulations: int,
    invalid_actions: jax.Array,
    max_depth: int | None = None,
    *,
    kept: KeptTree | None,
    capacity: int,
    max_num_considered_actions: int = 16,
    gumbel_scale: float | jax.Array = 1.0,  # a scalar, or per game [B, 1] (search.gumbel_moves)
    qtransform: Callable = mctx.qtransform_completed_by_mix_value,
) -> mctx.PolicyOutput:
    """Gumbel MuZero (the arguments of `mctx.gumbel_muzero_policy`) continuing `kept` in a tree of `capacity`
    nodes: sequential halving over the new simulations, values from the whole tree (see the module docstring).
    With nothing kept and capacity num_simulations + 1 the result equals `mctx.gumbel_muzero_policy`'s bit for
    bit. A game whose kept tree leaves no room for the simulations starts fresh (see the module docstring)."""
    kept = _with_room(kept, capacity, num_simulations)
    prior_logits = _mask_invalid(root.prior_logits, invalid_actions)
    root = root.replace(prior_logits=prior_logits)
    rng_key, gumbel_key = jax.random.split(rng_key)
    gumbel = gumbel_scale * jax.random.gumbel(gumbel_key, prior_logits.shape, prior_logits.dtype)
    inherited = jnp.zeros(prior_logits.shape, jnp.int32)
    if kept is not None:
        inherited = jnp.where(kept.nodes[:, None] > 0, kept.tree.children_visits[:, ROOT], 0)
    tree = mctx.search(
        params=params,
        rng_key=rng_key,
        root=root,
        recurrent_fn=recurrent_fn,
        root_action_selection_fn=functools.partial(
            _halving_on_new_visits, num_simulations=num_simulations,
            max_num_considered_actions=max_num_considered_actions, qtransform=qtransform),
        interior_action_selection_fn=functools.partial(
            mctx.gumbel_muzero_interior_action_selection, qtransform=qtransform),
        num_simulations=num_simulations,
        max_depth=max_depth,
        invalid_actions=invalid_actions,
        extra_data=InheritedGumbelData(root_gumbel=gumbel, inherited_visits=inherited),
        loop_fn=_loop_fn(kept, capacity, num_simulations),
    )
    # The move: among the actions that survived the halving (the most new visits), the best by
    # gumbel + prior + completed Q, as mctx's `gumbel_muzero_policy` chooses it.
    new_visits = tree.summary().visit_counts - inherited
    completed_q = jax.vmap(qtransform, in_axes=[0, None])(tree, ROOT)
    considered = new_visits == jnp.max(new_visits, axis=-1, keepdims=True)
    normalised = prior_logits - jnp.max(prior_logits, axis=-1, keepdims=True)
    score = jnp.maximum(-1e9, gumbel + normalised + completed_q) + jnp.where(considered, 0, -jnp.inf)
    action = jnp.argmax(jnp.where(invalid_actions, -jnp.inf, score), axis=-1).astype(jnp.int32)
    weights = jax.nn.softmax(_mask_invalid(prior_logits + completed_q, invalid_actions))
    return mctx.PolicyOutput(action=action, action_weights=weights, search_tree=tree)


def _halving_on_new_visits(rng_key, tree: mctx.Tree, node_index, *, num_simulations, max_num_considered_actions,
                           qtransform):
    """mctx's Gumbel root selection, scheduled by the root's new visits, ranking by the whole tree's values."""
    inherited = tree.extra_data.inherited_visits
    whole_tree_q = lambda _, node: qtransform(tree, node)  # noqa: E731
    new = tree.replace(children_visits=tree.children_visits.at[node_index].add(-inherited))
    return mctx.gumbel_muzero_root_action_selection(
        rng_key, new, node_index, num_simulations=num_simulations,
        max_num_considered_actions=max_num_considered_actions, qtransform=whole_tree_q)


def _mask_invalid(logits: jax.Array, invalid_actions: jax.Array) -> jax.Array:
    """mctx's masking of a policy's root logits: shifted to a maximum of 0, invalid ones the lowest float."""
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    return jnp.where(invalid_actions, jnp.finfo(logits.dtype).min, logits)


def _with_room(kept: KeptTree | None, capacity: int, num_simulations: int) -> KeptTree | None:
    """`kept` less the games whose tree is too large to take `num_simulations` new nodes in `capacity`: the new
    simulations start after the largest kept tree, and past the last node mctx's writes would be dropped and its
    reads clamped, a corrupted tree."""
    if kept is None:
        return None
    return forget(kept, kept.nodes > capacity - num_simulations)


def _loop_fn(kept: KeptTree | None, capacity: int, num_simulations: int) -> Callable:
    if capacity < num_simulations + 1:
        raise ValueError(f"a tree of {capacity} nodes cannot hold {num_simulations} simulations and its root")
    if kept is not None and kept.capacity != capacity:
        raise ValueError(f"the kept tree has {kept.capacity} nodes, not the capacity {capacity}")
    return functools.partial(_loop_on_kept_tree, kept=kept, capacity=capacity)


def _loop_on_kept_tree(lower, upper, body, init, *, kept: KeptTree | None, capacity: int):
    """mctx's simulation loop, run on `kept` (with the fresh tree's root prior) instead of the fresh tree."""
    rng_key, fresh = init
    tree = _pad_tree(fresh, capacity)  # the fresh tree (only its root filled), padded with empty nodes
    if kept is None:
        return jax.lax.fori_loop(lower, upper, body, (rng_key, tree))
    # Games with a kept tree keep its nodes, with the new root prior (noise drawn afresh by the policy); the
    # others (nodes 0) take the fresh root.
    reused = kept.nodes > 0  # [B]
    old = kept.tree.replace(root_invalid_actions=tree.root_invalid_actions, extra_data=tree.extra_data)
    tree = jax.tree.map(lambda k, f: jnp.where(_expand(reused, f), k.astype(f.dtype), f), old, tree)
    tree = tree.replace(children_prior_logits=tree.children_prior_logits.at[:, ROOT].set(
        fresh.children_prior_logits[:, ROOT]))
    start = jnp.maximum(jnp.max(kept.nodes), 1) - 1  # simulation s creates node s + 1
    return jax.lax.fori_loop(start, start + (upper - lower), body, (rng_key, tree))


# The tree's per-node arrays, [B, capacity, ...] (besides the embeddings).
NODE_FIELDS = ("node_visits", "raw_values", "node_values", "parents", "action_from_parent", "children_index",
                "children_prior_logits", "children_visits", "children_rewards", "children_discounts", "children_values")


def _pad_tree(fresh: mctx.Tree, capacity: int) -> mctx.Tree:
    """A fresh tree (only its root filled) with `capacity` nodes: the added ones are copies of its last node, which
    no simulation has filled yet (empty)."""

    def pad(x: jax.Array) -> jax.Array:
        missing = capacity - x.shape[1]
        if missing == 0:
            return x
        return jnp.concatenate([x, jnp.broadcast_to(x[:, -1:], (x.shape[0], missing, *x.shape[2:]))], axis=1)

    return fresh.replace(**{name: pad(getattr(fresh, name)) for name in NODE_FIELDS},
                         embeddings=jax.tree.map(pad, fresh.embeddings))


def _plain(tree: mctx.Tree) -> mctx.Tree:
    """A tree without what only its own search used (the policy's extra data, the root's invalid actions), so
    that kept trees of every policy have one structure and hold nothing stale."""
    return tree.replace(extra_data=None, root_invalid_actions=jnp.zeros_like(tree.root_invalid_actions))


def _expand(mask: jax.Array, like: jax.Array) -> jax.Array:
    return mask.reshape(mask.shape + (1,) * (like.ndim - mask.ndim))
