"""Tree reuse (azjax.tree_reuse, `search.reuse_tree`): a search that continues the subtree kept from the previous
move, through mctx's own search loop. Pinned against mctx on a fresh tree (both policies); following a move keeps
the chosen child's statistics; new simulations add to them (Gumbel: the halving runs over the new ones); the
trees follow self-play's games and checkpoints; bots keep them through a match and a game in `azjax play`."""

from __future__ import annotations

import dataclasses
import functools
import itertools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from azjax import (
    agent_specs,
    arena,
    bots,
    checkpointing,
    cli,
    games,
    matches,
    play,
    rundir,
    search,
    training,
    tree_reuse,
)
from azjax import config as config_lib
from azjax.config import ConfigError, NetworkConfig, SearchConfig
from azjax.networks import inference_fn, init_variables, make_network

NUM_SIMULATIONS = 8
NUM_GAMES = 4
POLICIES = ("puct", "gumbel")


@pytest.fixture(scope="module")
def setting():
    game = games.make("tic_tac_toe")
    network = make_network(NetworkConfig(num_blocks=1, num_channels=8, value_hidden=8), game.num_actions)
    variables = init_variables(network, jax.random.key(0), game.observation_shape)
    apply_fn = inference_fn(network)
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(1), NUM_GAMES))
    states = jax.vmap(game.step)(states, jnp.array([0, 4, 8, 2]))  # one different move in each game
    return game, apply_fn, variables, states


def policy_kwargs(setting, states, key, policy):
    game, apply_fn, variables, _ = setting
    logits, value = search.evaluate_states(apply_fn, variables, game, states)
    kwargs = dict(
        params=variables,
        rng_key=key,
        root=mctx.RootFnOutput(prior_logits=logits, value=value, embedding=states),
        recurrent_fn=functools.partial(search._recurrent_fn, game=game, apply_fn=apply_fn),
        num_simulations=NUM_SIMULATIONS,
        invalid_actions=~states.legal_action_mask,
        max_depth=game.max_length,
    )
    if policy == "gumbel":
        kwargs.update(max_num_considered_actions=4, gumbel_scale=1.0)
    return kwargs


def run(setting, states, key, policy, *, kept=None, capacity):
    reusing = tree_reuse.gumbel_policy if policy == "gumbel" else tree_reuse.puct_policy
    return reusing(kept=kept, capacity=capacity, **policy_kwargs(setting, states, key, policy))


def node_arrays(tree: mctx.Tree) -> list:
    return [getattr(tree, name) for name in tree_reuse.NODE_FIELDS] + jax.tree.leaves(tree.embeddings)


@pytest.mark.parametrize("policy", ["puct", pytest.param("gumbel", marks=pytest.mark.slow)])
def test_a_fresh_search_equals_mctx_bit_for_bit(setting, policy):
    game, states = setting[0], setting[3]
    kwargs = policy_kwargs(setting, states, jax.random.key(2), policy)
    plain = (mctx.gumbel_muzero_policy if policy == "gumbel" else mctx.muzero_policy)(**kwargs)
    empty = tree_reuse.empty(states, game.num_actions, NUM_SIMULATIONS + 1, NUM_SIMULATIONS)
    for kept in (None, empty):
        same = run(setting, states, jax.random.key(2), policy, kept=kept, capacity=NUM_SIMULATIONS + 1)
        np.testing.assert_array_equal(same.action, plain.action)
        np.testing.assert_array_equal(same.action_weights, plain.action_weights)
        for a, b in zip(node_arrays(plain.search_tree), node_arrays(same.search_tree), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    roomier = run(setting, states, jax.random.key(2), policy, capacity=3 * NUM_SIMULATIONS)
    np.testing.assert_array_equal(roomier.action, plain.action)
    np.testing.assert_array_equal(roomier.action_weights, plain.action_weights)


def subtree(tree, b: int, root: int) -> list[int]:
    """Plain Python: the nodes of game b under `root` (itself first), in creation order."""
    members = [root]
    for node in range(root + 1, tree.node_visits.shape[1]):
        if tree.parents[b, node] in members:
            members.append(node)
    return members


@pytest.mark.parametrize("policy", POLICIES)
def test_following_a_move_keeps_the_chosen_childs_subtree(setting, policy):
    game, states = setting[0], setting[3]
    capacity = 3 * NUM_SIMULATIONS
    output = run(setting, states, jax.random.key(3), policy, capacity=capacity)
    action = output.action
    kept = jax.device_get(tree_reuse.follow(tree_reuse.searched(output.search_tree, NUM_SIMULATIONS), action))
    tree = jax.device_get(output.search_tree)
    for b in range(NUM_GAMES):
        child = int(tree.children_index[b, 0, action[b]])
        assert child > 0
        members = subtree(tree, b, child)
        assert int(kept.nodes[b]) == len(members)
        new_tree = kept.tree
        for new, old in enumerate(members):  # old order kept, the child first
            assert new_tree.node_visits[b, new] == tree.node_visits[b, old]
            assert new_tree.node_values[b, new] == tree.node_values[b, old]
            assert new_tree.raw_values[b, new] == tree.raw_values[b, old]
            for name in ("children_visits", "children_values", "children_prior_logits", "children_rewards"):
                np.testing.assert_array_equal(getattr(new_tree, name)[b, new], getattr(tree, name)[b, old])
            for a in np.flatnonzero(tree.children_index[b, old] >= 0):
                assert members[new_tree.children_index[b, new, a]] == tree.children_index[b, old, a]
        assert new_tree.parents[b, 0] == mctx.Tree.NO_PARENT
        # Signs: the new root's value is for its player to move, the opponent of the old root's: minus the old
        # root's Q-value of the move (no reward yet, the game goes on).
        old_q = np.asarray(output.search_tree.qvalues(jnp.zeros(NUM_GAMES, jnp.int32)))[b, action[b]]
        np.testing.assert_allclose(new_tree.node_values[b, 0], -old_q, rtol=1e-6)
        assert np.all(new_tree.node_visits[b, kept.nodes[b]:] == 0)
    after = jax.vmap(game.step)(states, action)
    np.testing.assert_array_equal(kept.tree.embeddings.board[:, 0], after.board)


def test_the_capacity_keeps_the_first_nodes_and_cuts_the_rest(setting):
    states = setting[3]
    output = run(setting, states, jax.random.key(3), "puct", capacity=3 * NUM_SIMULATIONS)
    tree = jax.device_get(output.search_tree)
    limit = 2
    # Room for 3 * NUM_SIMULATIONS - limit new nodes leaves `limit` kept ones.
    roomy = tree_reuse.searched(output.search_tree, 3 * NUM_SIMULATIONS - limit)
    kept = jax.device_get(tree_reuse.follow(roomy, output.action))
    for b in range(NUM_GAMES):
        members = subtree(tree, b, int(tree.children_index[b, 0, output.action[b]]))
        assert int(kept.nodes[b]) == min(limit, len(members))
        for new in range(int(kept.nodes[b])):
            for a in range(tree.children_index.shape[2]):
                index = kept.tree.children_index[b, new, a]
                if index == mctx.Tree.UNVISITED:  # cut off (or never visited): no statistics left
                    assert kept.tree.children_visits[b, new, a] == 0
                else:
                    assert index < kept.nodes[b]


def test_a_move_never_searched_or_not_made_keeps_nothing_or_everything(setting):
    states = setting[3]
    output = run(setting, states, jax.random.key(3), "puct", capacity=3 * NUM_SIMULATIONS)
    tree = tree_reuse.searched(output.search_tree, NUM_SIMULATIONS)
    unvisited = jnp.argmin(jnp.where(states.legal_action_mask, tree.tree.children_visits[:, 0], 99), axis=-1)
    assert np.all(np.asarray(tree.tree.children_visits[jnp.arange(NUM_GAMES), 0, unvisited]) == 0)
    assert np.all(np.asarray(tree_reuse.follow(tree, unvisited).nodes) == 0)
    moved = jnp.array([True, False, True, False])
    partly = tree_reuse.follow(tree, output.action, moved)
    for a, b in zip(node_arrays(partly.tree), node_arrays(tree.tree), strict=True):
        np.testing.assert_array_equal(np.asarray(a)[1::2], np.asarray(b)[1::2])
    np.testing.assert_array_equal(partly.nodes[1::2], tree.nodes[1::2])
    assert np.all(np.asarray(tree_reuse.forget(partly, jnp.ones(NUM_GAMES, bool)).nodes) == 0)


@pytest.mark.parametrize("policy", POLICIES)
def test_new_simulations_add_to_the_kept_tree(setting, policy):
    game, states = setting[0], setting[3]
    capacity = 3 * NUM_SIMULATIONS
    first = run(setting, states, jax.random.key(4), policy, capacity=capacity)
    kept = tree_reuse.follow(tree_reuse.searched(first.search_tree, NUM_SIMULATIONS), first.action)
    after = jax.vmap(game.step)(states, first.action)
    second = run(setting, after, jax.random.key(5), policy, kept=kept, capacity=capacity).search_tree
    inherited = np.asarray(kept.tree.node_visits[:, 0])
    assert np.any(inherited > 1)
    np.testing.assert_array_equal(np.asarray(second.node_visits[:, 0]), inherited + NUM_SIMULATIONS)
    # The root's children account for every visit but the root's own first one.
    np.testing.assert_array_equal(np.asarray(second.children_visits[:, 0].sum(-1)),
                                  np.asarray(second.node_visits[:, 0]) - 1)
    tree = jax.device_get(second)
    for b in range(NUM_GAMES):  # every node's children point back at it
        for node in range(tree.node_visits.shape[1]):
            for a in np.flatnonzero(tree.children_index[b, node] >= 0):
                child = tree.children_index[b, node, a]
                assert tree.parents[b, child] == node and tree.action_from_parent[b, child] == a


def test_gumbel_halving_runs_over_the_new_simulations(setting):
    """Sequential halving's schedule depends only on the budget and the considered actions: the new visits of a
    continued search come in exactly the counts of a fresh search's visits; its policy target is softmax(prior +
    completed Q) over the whole tree, and its move one of the most visited among the new simulations."""
    game, states = setting[0], setting[3]
    capacity = 3 * NUM_SIMULATIONS
    first = run(setting, states, jax.random.key(4), "gumbel", capacity=capacity)
    kept = tree_reuse.follow(tree_reuse.searched(first.search_tree, NUM_SIMULATIONS), first.action)
    after = jax.vmap(game.step)(states, first.action)
    fresh = run(setting, after, jax.random.key(6), "gumbel", capacity=capacity)
    continued = run(setting, after, jax.random.key(6), "gumbel", kept=kept, capacity=capacity)
    inherited = np.asarray(kept.tree.children_visits[:, 0])
    assert inherited.sum() > 0
    new = np.asarray(continued.search_tree.children_visits[:, 0]) - inherited
    np.testing.assert_array_equal(np.sort(new, axis=-1), np.sort(np.asarray(fresh.search_tree.children_visits[:, 0]),
                                                                 axis=-1))
    rows = np.arange(NUM_GAMES)
    assert np.all(new[rows, np.asarray(continued.action)] == new.max(axis=-1))
    q = jax.vmap(mctx.qtransform_completed_by_mix_value, in_axes=[0, None])(continued.search_tree, 0)
    prior = continued.search_tree.children_prior_logits[:, 0]
    expected = jax.nn.softmax(jnp.where(~after.legal_action_mask, jnp.finfo(jnp.float32).min, prior + q))
    np.testing.assert_allclose(continued.action_weights, expected, rtol=1e-6)


def test_a_kept_tree_must_have_the_capacity(setting):
    game, states = setting[0], setting[3]
    kept = tree_reuse.empty(states, game.num_actions, 2 * NUM_SIMULATIONS, NUM_SIMULATIONS)
    with pytest.raises(ValueError, match="capacity"):
        run(setting, states, jax.random.key(0), "puct", kept=kept, capacity=3 * NUM_SIMULATIONS)
    with pytest.raises(ValueError, match="cannot hold"):
        run(setting, states, jax.random.key(0), "puct", capacity=NUM_SIMULATIONS)


@pytest.mark.parametrize("policy", ["puct", pytest.param("gumbel", marks=pytest.mark.slow)])
def test_a_kept_tree_without_room_for_the_simulations_is_forgotten(setting, policy):
    """A tree kept for a search with fewer simulations (a checkpoint resumed with more, tree_capacity fixed) may
    leave less room than this search's simulations need: those games start fresh, the others continue theirs."""
    game, states = setting[0], setting[3]
    capacity = 3 * NUM_SIMULATIONS
    first = run(setting, states, jax.random.key(4), policy, capacity=capacity)
    # Game 0 follows its least visited move (a small subtree), the others their most visited.
    visits = np.where(np.asarray(states.legal_action_mask), np.asarray(first.search_tree.children_visits[:, 0]), 0)
    action = np.argmax(visits, axis=-1)
    action[0] = np.argmin(np.where(visits[0] > 0, visits[0], 99))
    kept = tree_reuse.follow(tree_reuse.searched(first.search_tree, NUM_SIMULATIONS), jnp.asarray(action))
    nodes = np.asarray(kept.nodes)
    room = int(nodes.min())
    too_large = nodes > room
    assert too_large.any() and room >= 1
    after = jax.vmap(game.step)(states, jnp.asarray(action))
    simulations = capacity - room  # more than the NUM_SIMULATIONS the tree was kept for
    kwargs = policy_kwargs(setting, after, jax.random.key(5), policy)
    kwargs["num_simulations"] = simulations
    reusing = tree_reuse.gumbel_policy if policy == "gumbel" else tree_reuse.puct_policy
    tree = jax.device_get(reusing(kept=kept, capacity=capacity, **kwargs).search_tree)
    inherited = np.asarray(kept.tree.node_visits[:, 0])
    np.testing.assert_array_equal(tree.node_visits[:, 0], np.where(too_large, 0, inherited) + simulations + too_large)
    # Every simulation made a node of its own, none past the last one (where writes would be dropped), and every
    # node's children point back at it.
    np.testing.assert_array_equal(np.sum(tree.node_visits > 0, axis=1), np.where(too_large, 1, nodes) + simulations)
    for b in range(NUM_GAMES):
        for node in range(capacity):
            for a in np.flatnonzero(tree.children_index[b, node] >= 0):
                child = tree.children_index[b, node, a]
                assert child < capacity and tree.parents[b, child] == node and tree.action_from_parent[b, child] == a


# --------------------------------------------------------------------------------------------------------------
# The search function, the config, self-play and checkpoints


@pytest.mark.parametrize("policy", ["puct", pytest.param("gumbel", marks=pytest.mark.slow)])
def test_reuse_with_nothing_kept_searches_as_without(setting, policy):
    game, apply_fn, variables, states = setting
    config = SearchConfig(num_simulations=NUM_SIMULATIONS, max_num_considered_actions=4, policy=policy)
    plain = search.make_search_fn(game, apply_fn, config)
    reusing = search.make_search_fn(game, apply_fn, dataclasses.replace(config, reuse_tree=True))
    moves = jnp.zeros(NUM_GAMES, jnp.int32)
    a = plain(variables, jax.random.key(7), states, moves)
    b = reusing(variables, jax.random.key(7), states, moves)
    assert a.tree is None and b.tree is not None and b.tree.capacity == 2 * NUM_SIMULATIONS + 1
    for name in ("action", "visit_counts"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    # Two programs: under the suite's compiler settings (tests/tiny.py) their floats may differ in the last bit.
    for name in ("policy_target", "root_value"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="reuse_tree"):
        plain(variables, jax.random.key(7), states, moves, b.tree)


def test_config_fields(tiny_config):
    config = config_lib.with_overrides(tiny_config, {"search.reuse_tree": "true", "search.tree_capacity": "9"})
    assert config.search.reuse_tree and config.search.capacity == 9
    assert config_lib.with_overrides(config, {"search.tree_capacity": "none"}).search.capacity == 2 * 4 + 1
    assert dataclasses.replace(config.search, reuse_tree=False).capacity == 5
    with pytest.raises(ConfigError, match=r"search.tree_capacity \(4\) must hold the root"):
        config_lib.with_overrides(config, {"search.tree_capacity": "4"})


# PUCT's run: -m slow (its search with tree reuse is tested above in this process, and Gumbel's run here).
@pytest.fixture(scope="module", params=[pytest.param("puct", marks=pytest.mark.slow), "gumbel"])
def reusing_run(request, tiny_config):
    """A TINY config with tree reuse, its compiled iteration, and the run state after one iteration."""
    config = config_lib.with_overrides(tiny_config, {"search.reuse_tree": "true", "search.policy": request.param,
                                                     "search.num_simulations": "8"})
    iteration = jax.jit(training.make_train_iteration(config))
    state, _ = iteration(training.init_run_state(config))
    return config, iteration, state


def test_selfplay_trees_follow_the_games(reusing_run):
    config, _, state = reusing_run
    kept, games_now = jax.device_get((state.selfplay.tree, state.selfplay.game_state))
    assert kept.capacity == config.search.capacity
    held = kept.nodes > 0
    assert held.any() and (kept.nodes == 0).any()  # kept trees, and games that just restarted
    roots = jax.tree.map(lambda x: x[:, 0], kept.tree.embeddings)
    for root, now in zip(jax.tree.leaves(roots), jax.tree.leaves(games_now), strict=True):
        np.testing.assert_array_equal(root[held], now[held])
    assert np.all(kept.nodes[state.selfplay.move_number == 0] == 0)  # a new game keeps nothing
    assert np.all(kept.tree.node_visits[held, 0] >= 1)


# The trees saved in a checkpoint and restored: -m slow. The default suite keeps the self-play trees following the
# games (above) and the bitwise resume of a run without trees (tests/test_checkpointing.py).
@pytest.mark.slow
def test_a_checkpoint_resumes_with_the_same_trees(reusing_run, tmp_path):
    config, iteration, state = reusing_run
    manager = checkpointing.CheckpointManager(tmp_path)
    manager.save(state, config)
    back = manager.restore(config)
    leaves = lambda s: [x for x in jax.tree.leaves(s) if not jnp.issubdtype(x.dtype, jax.dtypes.prng_key)]  # noqa: E731
    for a, b in zip(leaves(state), leaves(back), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    went_on, _ = iteration(state)
    resumed, _ = iteration(back)
    for a, b in zip(leaves(went_on), leaves(resumed), strict=True):  # bitwise on the CPU
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # Other search settings: the games go on with empty trees; without reuse, with none.
    other = manager.restore(config_lib.with_overrides(config, {"search.num_simulations": "4"}))
    assert other.selfplay.tree.capacity == 9 and not np.any(np.asarray(other.selfplay.tree.nodes))
    assert manager.restore(config_lib.with_overrides(config, {"search.reuse_tree": "false"})).selfplay.tree is None


# --------------------------------------------------------------------------------------------------------------
# Bots: the arena and `azjax play` keep a bot's tree


@pytest.mark.parametrize("compact", [pytest.param(False, marks=pytest.mark.slow), True])
def test_the_arena_lets_a_memory_follow_every_move(setting, compact):
    """A spy bot remembers the position by following the moves it is told about, and plays an illegal move (which
    the arena records) the moment its memory differs from the game it is asked about; also when the last games
    move to a smaller batch (`compact`), memories with them."""
    game = setting[0]

    def analyse(key, states, memory):
        same = jnp.all(memory.board.reshape(memory.board.shape[0], -1) == states.board.reshape(
            states.board.shape[0], -1), axis=1)
        legal = bots.random_analysis(key, states)
        illegal = jnp.argmin(states.legal_action_mask, axis=-1).astype(jnp.int32)
        return legal.replace(action=jnp.where(same, legal.action, illegal)), memory

    def follow(memory, actions, moved):
        stepped = jax.vmap(game.step)(memory, actions)
        return jax.tree.map(lambda new, old: jnp.where(matches.expand_to(moved, new), new, old), stepped, memory)

    spy = bots.Bot("spy", lambda key, states: bots.random_analysis(key, states),
                   bots.Memory(init=lambda states: states, analyse=analyse, follow=follow))
    games_played = jax.device_get(arena.play_games(jax.random.key(0), game, spy, bots.random_bot(), 40,
                                                   opening_moves=2, compact=compact))
    assert len(games_played.moves) == 40
    for moves in games_played.moves:
        state = game.init(jax.random.key(0))
        for action in moves[moves >= 0]:
            assert bool(state.legal_action_mask[action]), "the spy's memory lost track of the game"
            state = game.step(state, action)


@pytest.fixture(scope="module")
def untrained_run(tmp_path_factory, tiny_config):
    path = tmp_path_factory.mktemp("untrained")
    rundir.write_config(path, tiny_config)
    run_state = training.init_run_state(tiny_config)
    checkpointing.CheckpointManager(path).save(run_state.replace(iteration=jnp.int32(1)), tiny_config)
    return path


def test_reuse_specs(setting, untrained_run):
    game = setting[0]
    bot = agent_specs.make_bot(f"az:{untrained_run}:6:reuse", game)
    assert bot.memory is not None and bot.name == f"az:{untrained_run}:6:reuse"
    assert agent_specs.make_bot(f"az:{untrained_run}:reuse", game).memory is not None
    assert agent_specs.make_bot(f"az:{untrained_run}:6", game).memory is None  # the run searches with Gumbel MuZero
    assert agent_specs.make_bot(f"az:{untrained_run}:6", game, policy="puct").memory is not None  # by default with PUCT
    assert agent_specs.make_bot(f"az:{untrained_run}:fresh", game, policy="puct").memory is None
    assert agent_specs.make_bot(str(untrained_run), game, policy="puct").memory is not None
    assert agent_specs.game_of_spec(f"az:{untrained_run}:fresh") == "tic_tac_toe"
    assert agent_specs.game_of_spec(f"az:{untrained_run}:6:reuse") == "tic_tac_toe"
    result = arena.play(jax.random.key(1), game, bot, bots.random_bot(), 8)
    assert result.games == 8
    # A kept tree holds the search of the position it is about: its root saw the new simulations on top.
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(2), 2))
    analyse, follow = jax.jit(bot.memory.analyse), jax.jit(bot.memory.follow)  # as the matches call them
    memory = bot.memory.init(states)
    analysis, memory = analyse(jax.random.key(3), states, memory)
    memory = follow(memory, analysis.action, jnp.ones(2, bool))
    inherited = np.asarray(memory.tree.node_visits[:, 0])
    analysis, after = analyse(jax.random.key(4), jax.vmap(game.step)(states, analysis.action), memory)
    np.testing.assert_array_equal(np.asarray(after.tree.node_visits[:, 0]), inherited + 6)


def test_play_against_a_reusing_bot(setting, untrained_run, monkeypatch, capsys):
    cells = [f"{c}{r}" for r in "123" for c in "abc"]
    game = setting[0]
    bot = agent_specs.make_bot(f"az:{untrained_run}:6:reuse", game)
    script = iter(itertools.cycle(cells))
    shown: list[str] = []
    record = play.play_game(game, bot, input_fn=lambda prompt: next(script), output_fn=shown.append,
                            human_player=1)
    assert record.outcome is not None and len(record.moves) >= 5
    monkeypatch.setattr("builtins.input", lambda prompt: next(script))
    assert cli.main(["play", f"az:{untrained_run}:6:reuse", "--seed", "1"]) == 0
    assert "plays" in capsys.readouterr().out
