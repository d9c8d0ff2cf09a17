"""azjax.tree_reuse: a search that continues the subtree kept from the previous move, driven through mctx's own
policy (PUCT) with a loop over the kept tree. Pinned against mctx on a fresh tree; re-rooting keeps the chosen
child's statistics; new simulations add to them."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from azjax import games, search, tree_reuse
from azjax.config import NetworkConfig
from azjax.networks import inference_fn, init_variables, make_network

NUM_SIMULATIONS = 8
NUM_GAMES = 4


@pytest.fixture(scope="module")
def setting():
    game = games.make("tic_tac_toe")
    network = make_network(NetworkConfig(num_blocks=1, num_channels=8, value_hidden=8), game.num_actions)
    variables = init_variables(network, jax.random.key(0), game.observation_shape)
    apply_fn = inference_fn(network)
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(1), NUM_GAMES))
    states = jax.vmap(game.step)(states, jnp.array([0, 4, 8, 2]))  # one different move in each game
    return game, apply_fn, variables, states


def policy_kwargs(setting, states, key):
    game, apply_fn, variables, _ = setting
    logits, value = search.evaluate_states(apply_fn, variables, game, states)
    return dict(
        params=variables,
        rng_key=key,
        root=mctx.RootFnOutput(prior_logits=logits, value=value, embedding=states),
        recurrent_fn=functools.partial(search._recurrent_fn, game=game, apply_fn=apply_fn),
        num_simulations=NUM_SIMULATIONS,
        invalid_actions=~states.legal_action_mask,
        max_depth=game.max_length,
    )


def run(setting, states, key, *, kept=None, count=None, capacity):
    kwargs = policy_kwargs(setting, states, key)
    return tree_reuse.continue_search(mctx.muzero_policy, kept, count, capacity=capacity, **kwargs)


def test_a_fresh_search_equals_mctx_bit_for_bit(setting):
    states = setting[3]
    kwargs = policy_kwargs(setting, states, jax.random.key(2))
    plain = mctx.muzero_policy(**kwargs)
    same = tree_reuse.continue_search(mctx.muzero_policy, None, None, capacity=NUM_SIMULATIONS + 1, **kwargs)
    for a, b in zip(jax.tree.leaves(plain), jax.tree.leaves(same), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    roomier = tree_reuse.continue_search(mctx.muzero_policy, None, None, capacity=3 * NUM_SIMULATIONS, **kwargs)
    np.testing.assert_array_equal(roomier.action, plain.action)
    np.testing.assert_array_equal(roomier.action_weights, plain.action_weights)


def test_rerooting_keeps_the_chosen_childs_subtree(setting):
    game, states = setting[0], setting[3]
    capacity = 3 * NUM_SIMULATIONS
    tree = run(setting, states, jax.random.key(3), capacity=capacity).search_tree
    action = jnp.argmax(tree.children_visits[:, 0], axis=-1).astype(jnp.int32)
    kept, count = jax.device_get(tree_reuse.reroot(tree, action, NUM_SIMULATIONS))
    tree = jax.device_get(tree)
    for b in range(NUM_GAMES):
        child = int(tree.children_index[b, 0, action[b]])
        assert child > 0
        # The subtree: the child and every node whose chain of parents reaches it.
        members = [child]
        for node in range(tree.node_visits.shape[1]):
            if node > child and tree.parents[b, node] in members:
                members.append(node)
        assert int(count[b]) == len(members)
        for new, old in enumerate(members):  # old order kept, the child first
            assert kept.node_visits[b, new] == tree.node_visits[b, old]
            assert kept.node_values[b, new] == tree.node_values[b, old]
            np.testing.assert_array_equal(kept.children_visits[b, new], tree.children_visits[b, old])
            np.testing.assert_array_equal(kept.children_values[b, new], tree.children_values[b, old])
            for a in np.flatnonzero(tree.children_index[b, old] >= 0):
                assert members[kept.children_index[b, new, a]] == tree.children_index[b, old, a]
        assert kept.parents[b, 0] == mctx.Tree.NO_PARENT
        assert np.all(kept.node_visits[b, count[b]:] == 0)
    after = jax.vmap(game.step)(states, action)
    np.testing.assert_array_equal(kept.embeddings.board[:, 0], after.board)


def test_new_simulations_add_to_the_kept_tree(setting):
    game, states = setting[0], setting[3]
    capacity = 3 * NUM_SIMULATIONS
    first = run(setting, states, jax.random.key(4), capacity=capacity)
    action = first.action
    kept, count = tree_reuse.reroot(first.search_tree, action, NUM_SIMULATIONS)
    after = jax.vmap(game.step)(states, action)
    second = run(setting, after, jax.random.key(5), kept=kept, count=count, capacity=capacity).search_tree
    inherited = np.asarray(kept.node_visits[:, 0])
    np.testing.assert_array_equal(np.asarray(second.node_visits[:, 0]), inherited + NUM_SIMULATIONS)
    # The root's children account for every visit but the root's own first one.
    np.testing.assert_array_equal(np.asarray(second.children_visits[:, 0].sum(-1)),
                                  np.asarray(second.node_visits[:, 0]) - 1)
    # Every node's children point back at it.
    tree = jax.device_get(second)
    for b in range(NUM_GAMES):
        used = int(np.sum(tree.node_visits[b] > 0))
        for node in range(tree.node_visits.shape[1]):
            for a in np.flatnonzero(tree.children_index[b, node] >= 0):
                child = tree.children_index[b, node, a]
                assert tree.parents[b, child] == node and tree.action_from_parent[b, child] == a
        assert used >= int(count[b]) + 1


def test_gumbel_muzero_is_not_supported_yet(setting):
    kwargs = policy_kwargs(setting, setting[3], jax.random.key(6))
    with pytest.raises(NotImplementedError, match="PUCT"):
        tree_reuse.continue_search(mctx.gumbel_muzero_policy, None, None, capacity=NUM_SIMULATIONS + 1, **kwargs)
