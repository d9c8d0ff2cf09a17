"""Keeping the searched subtree between moves, on top of mctx's public `search` (the first step of tree reuse).

mctx builds a fresh tree at every search. Its policies take a `loop_fn` (the loop over simulations, by default
`jax.lax.fori_loop`), which receives that fresh tree in its initial state: `continue_search` passes a loop that
swaps in the tree kept from the previous move (re-rooted by `reroot`), gives its root the fresh root's prior
(so that root noise is drawn afresh) and runs the new simulations on it. Everything stays inside jit: fixed-size
trees (`capacity` nodes per game), gathers to re-index, no host round-trips.

Node indices. mctx gives the node a simulation creates the index `sim + 1`. A kept subtree occupies nodes
0 .. count - 1 of its game (the new root at 0, then its descendants in their old order, so parents stay before
children); the new simulations start after the largest count in the batch, so every game's new nodes are free
slots. A subtree larger than `capacity - num_simulations` nodes keeps its first nodes in creation order (the
shallow, often visited ones); a kept node whose child was cut off sees that child as unvisited again.

Policies. PUCT (`mctx.muzero_policy`) accumulates visits naturally: the root's inherited visits count in its
visit distribution, which is the move choice and the policy target. Gumbel MuZero's sequential halving schedules
its simulations by the root's visit count and so needs its own treatment of inherited visits; it is not supported
here yet.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import mctx

UNVISITED = mctx.Tree.UNVISITED
NO_PARENT = mctx.Tree.NO_PARENT


def reroot(tree: mctx.Tree, action: jax.Array, num_simulations: int) -> tuple[mctx.Tree, jax.Array]:
    """Each game's subtree under `action` [B] at the root, re-indexed so that its root is node 0, in a tree of the
    same capacity; and the number of nodes kept per game [B] (0 where `action` was never expanded: that game's
    next search starts fresh). At most capacity - `num_simulations` nodes are kept, room for the next search.

    The kept nodes keep everything mctx stores (visits, values, priors, rewards, discounts, embeddings); the root's
    prior is replaced by the next search's.
    """
    num_nodes = capacity = tree.node_visits.shape[1]
    limit = capacity - num_simulations
    new_root = tree.children_index[jnp.arange(tree.node_visits.shape[0]), mctx.Tree.ROOT_INDEX, action]  # [B]

    def per_game(tree: mctx.Tree, new_root: jax.Array) -> tuple[mctx.Tree, jax.Array]:
        nodes = jnp.arange(num_nodes)
        # Membership in the subtree: a node is in it if it is the new root or its parent is (parents come first).
        inside = (nodes == new_root) & (new_root != UNVISITED)

        def spread(_, inside):
            parent_inside = inside[jnp.clip(tree.parents, 0, num_nodes - 1)] & (tree.parents != NO_PARENT)
            return inside | parent_inside

        inside = jax.lax.fori_loop(0, num_nodes, spread, inside)  # depth <= num_nodes
        rank = jnp.cumsum(inside) - 1  # new index of each kept node, in old order
        keep = inside & (rank < limit)
        count = jnp.sum(keep).astype(jnp.int32)
        # old index of each new slot: the kept nodes in order, then (unused) slot 0 repeated.
        source = jnp.zeros(capacity, jnp.int32).at[jnp.where(keep, rank, capacity)].set(nodes, mode="drop")
        used = jnp.arange(capacity) < count
        new_index = jnp.where(keep, rank, UNVISITED)  # old -> new (UNVISITED if dropped)

        def remap(old):  # an array of old node indices -> new ones
            return jnp.where(old >= 0, new_index[jnp.clip(old, 0, num_nodes - 1)], old)

        def take(x, fill):  # [N, ...] -> [capacity, ...], unused slots filled
            picked = x[source]
            mask = used.reshape((capacity,) + (1,) * (x.ndim - 1))
            return jnp.where(mask, picked, jnp.asarray(fill, x.dtype))

        children_index = take(remap(tree.children_index), UNVISITED)
        parents = take(remap(tree.parents), NO_PARENT).at[0].set(NO_PARENT)
        action_from_parent = take(tree.action_from_parent, NO_PARENT).at[0].set(NO_PARENT)
        # Children cut off by the capacity are unvisited again: their statistics go with them.
        cut = children_index == UNVISITED
        kept = mctx.Tree(
            node_visits=take(tree.node_visits, 0),
            raw_values=take(tree.raw_values, 0),
            node_values=take(tree.node_values, 0),
            parents=parents,
            action_from_parent=action_from_parent,
            children_index=children_index,
            children_prior_logits=take(tree.children_prior_logits, 0),
            children_visits=jnp.where(cut, 0, take(tree.children_visits, 0)),
            children_rewards=jnp.where(cut, 0, take(tree.children_rewards, 0)),
            children_discounts=jnp.where(cut, 0, take(tree.children_discounts, 0)),
            children_values=jnp.where(cut, 0, take(tree.children_values, 0)),
            embeddings=jax.tree.map(lambda x: take(x, 0), tree.embeddings),
            root_invalid_actions=tree.root_invalid_actions,
            extra_data=tree.extra_data,
        )
        return kept, count

    return jax.vmap(per_game)(tree, new_root)


def continue_search(
    policy: Callable[..., mctx.PolicyOutput],
    kept: mctx.Tree | None,
    count: jax.Array | None,
    *,
    capacity: int,
    **policy_kwargs: Any,
) -> mctx.PolicyOutput:
    """Runs an mctx policy (`mctx.muzero_policy`) whose search continues `kept` (count [B] nodes per game, from
    `reroot`; 0: a fresh search) instead of starting from an empty tree; `kept=None`: every game starts fresh.
    `policy_kwargs` are the policy's own arguments (params, rng_key, root, recurrent_fn, num_simulations, ...);
    `root` must be the positions that `kept`'s roots stand for. The returned `search_tree` has `capacity` nodes
    (>= num_simulations + 1), the capacity of `kept`.

    With no kept nodes and capacity = num_simulations + 1 the result equals `policy(**policy_kwargs)`.
    """
    if policy is mctx.gumbel_muzero_policy:
        raise NotImplementedError("tree reuse supports PUCT (mctx.muzero_policy) so far; see the module docstring")
    num_simulations = policy_kwargs["num_simulations"]
    if capacity < num_simulations + 1:
        raise ValueError(f"a tree of {capacity} nodes cannot hold {num_simulations} simulations and its root")
    if kept is not None and kept.node_visits.shape[1] != capacity:
        raise ValueError(f"the kept tree has {kept.node_visits.shape[1]} nodes, not the capacity {capacity}")
    loop = functools.partial(_loop_on_kept_tree, kept=kept, count=count, capacity=capacity)
    return policy(**policy_kwargs, loop_fn=loop)


def _loop_on_kept_tree(lower, upper, body, init, *, kept: mctx.Tree | None, count: jax.Array | None, capacity: int):
    """mctx's simulation loop, run on `kept` (with the fresh tree's root prior) instead of the fresh tree."""
    rng_key, fresh = init
    # The fresh tree (only its root filled), padded to the capacity with empty nodes.
    tree = _pad_tree(fresh, capacity)
    if kept is None or count is None:
        return jax.lax.fori_loop(lower, upper, body, (rng_key, tree))
    # Kept games keep their nodes, with the new root prior (noise drawn afresh by the policy); fresh ones (count 0)
    # take the fresh root.
    reused = count > 0  # [B]
    tree = jax.tree.map(lambda k, f: jnp.where(_expand(reused, k), k, f), kept, tree)
    tree = tree.replace(
        children_prior_logits=tree.children_prior_logits.at[:, mctx.Tree.ROOT_INDEX].set(
            fresh.children_prior_logits[:, mctx.Tree.ROOT_INDEX]),
        root_invalid_actions=fresh.root_invalid_actions,
        extra_data=fresh.extra_data,
    )
    start = jnp.maximum(jnp.max(count), 1) - 1  # simulation s creates node s + 1
    return jax.lax.fori_loop(start, start + (upper - lower), body, (rng_key, tree))


_NODE_FIELDS = ("node_visits", "raw_values", "node_values", "parents", "action_from_parent", "children_index",
                "children_prior_logits", "children_visits", "children_rewards", "children_discounts", "children_values")


def _pad_tree(fresh: mctx.Tree, capacity: int) -> mctx.Tree:
    """A fresh tree (only its root filled) with `capacity` nodes: the added ones are copies of its last node, which
    no simulation has filled yet (empty)."""

    def pad(x: jax.Array) -> jax.Array:
        missing = capacity - x.shape[1]
        if missing == 0:
            return x
        return jnp.concatenate([x, jnp.broadcast_to(x[:, -1:], (x.shape[0], missing, *x.shape[2:]))], axis=1)

    return fresh.replace(**{name: pad(getattr(fresh, name)) for name in _NODE_FIELDS},
                         embeddings=jax.tree.map(pad, fresh.embeddings))


def _expand(mask: jax.Array, like: jax.Array) -> jax.Array:
    return mask.reshape(mask.shape + (1,) * (like.ndim - 1))
