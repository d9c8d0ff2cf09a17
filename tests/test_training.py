"""Training: the loss against its formula, SGD on a fixed batch, and TINY compiled iterations (determinism too)."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import traverse_util

from azjax import config as config_lib
from azjax.config import TrainConfig
from azjax.learning import TrainState, compute_loss
from azjax.networks import init_variables, make_network
from azjax.replay import Batch, wdl_target
from azjax.training import (
    budget_progress,
    init_run_state,
    learning_rate,
    loss_options,
    make_components,
    make_optimizer,
    make_train_iteration,
    train_step,
)

pytestmark = [
    pytest.mark.usefixtures("persistent_compile_cache"),
    # CPUs cannot reuse donated buffers; jax warns and copies.
    pytest.mark.filterwarnings("ignore:Some donated buffers were not usable"),
]

NUM_POSITIONS = 8


@pytest.fixture(scope="module")
def parts(tiny_config):
    return make_components(tiny_config)


@pytest.fixture(scope="module")
def variables(parts):
    return init_variables(parts.network, jax.random.key(0), parts.game.observation_shape)


@pytest.fixture(scope="module")
def batch(parts) -> Batch:
    """Hand-made positions: random stone planes, random policy targets (distributions) and values in [-1, 1]."""
    rng = np.random.default_rng(0)
    observation = rng.binomial(1, 0.3, (NUM_POSITIONS, *parts.game.observation_shape)).astype(np.float32)
    policy = rng.dirichlet(np.ones(parts.game.num_actions), NUM_POSITIONS).astype(np.float32)
    value = rng.uniform(-1, 1, NUM_POSITIONS).astype(np.float32)
    return Batch(jnp.asarray(observation), jnp.asarray(policy), jnp.asarray(value))


def _loss_and_raw_outputs(params, batch_stats, batch, *, network, config):
    loss, (metrics, new_stats) = compute_loss(params, batch_stats, batch, network=network, **loss_options(config))
    (logits, value), _ = network.apply(
        {"params": params, "batch_stats": batch_stats}, batch.observation, train=True, mutable=["batch_stats"]
    )
    return loss, metrics, new_stats, logits, value


def _loss_and_sown(network, config, variables, batch, name):
    """compute_loss's loss and metrics on `batch`, with the network's logits, value and the head output it sows
    as `name` (an extra head's), all on the host."""

    @jax.jit
    def run(params, batch_stats, batch):
        loss, (metrics, _) = compute_loss(params, batch_stats, batch, network=network, **loss_options(config))
        (logits, value), sown = network.apply({"params": params, "batch_stats": batch_stats}, batch.observation,
                                              train=True, mutable=["batch_stats", "intermediates"])
        return loss, metrics, logits, value, sown["intermediates"][name][0]

    return jax.device_get(run(variables["params"], variables["batch_stats"], batch))


def cross_entropy(logits, target):
    """Per row, in float64: -sum(target x log_softmax(logits))."""
    return -np.sum(np.asarray(target) * np.asarray(jax.nn.log_softmax(logits), np.float64), axis=-1)


def test_compute_loss_is_the_alphazero_formula(parts, variables, batch):
    config = TrainConfig(value_loss_weight=0.7, weight_decay=0.01)
    fn = jax.jit(functools.partial(_loss_and_raw_outputs, network=parts.network, config=config))
    loss, metrics, new_stats, logits, value = jax.device_get(
        fn(variables["params"], variables["batch_stats"], batch)
    )
    logits, value = np.asarray(logits, np.float64), np.asarray(value, np.float64)
    policy, target = np.asarray(batch.policy_target, np.float64), np.asarray(batch.value_target, np.float64)

    log_softmax = logits - logits.max(-1, keepdims=True)
    log_softmax -= np.log(np.exp(log_softmax).sum(-1, keepdims=True))
    cross_entropy = -np.mean(np.sum(policy * log_softmax, axis=-1))
    mse = np.mean((value - target) ** 2)
    flat = traverse_util.flatten_dict(jax.device_get(variables["params"]))
    l2 = sum(np.sum(np.square(np.asarray(x, np.float64))) for path, x in flat.items() if path[-1] == "kernel")
    everything = sum(np.sum(np.square(np.asarray(x, np.float64))) for x in flat.values())

    assert metrics["policy_loss"] == pytest.approx(cross_entropy, rel=1e-5)
    assert metrics["value_loss"] == pytest.approx(mse, rel=1e-5)
    assert metrics["l2"] == pytest.approx(l2, rel=1e-5)
    assert l2 < everything  # only kernels are penalised (not biases, nor batch-norm scales)
    expected = cross_entropy + 0.7 * mse + 0.01 * l2
    assert loss == pytest.approx(expected, rel=1e-5)
    assert metrics["loss"] == pytest.approx(expected, rel=1e-5)
    # The loss runs the network in training mode, which updates the batch-norm statistics.
    changed = [not np.allclose(a, b) for a, b in zip(jax.tree.leaves(variables["batch_stats"]),
                                                       jax.tree.leaves(new_stats), strict=True)]
    assert all(changed)


def test_positions_without_a_policy_target_count_for_nothing_in_the_policy_loss(parts, variables, batch):
    """A fast search's positions (playout-cap randomisation) have all-zero policy targets: the policy loss is the
    mean cross-entropy over the other positions, and the value loss still counts every position."""
    without = batch.replace(policy_target=batch.policy_target.at[::2].set(0.0))
    fn = jax.jit(functools.partial(_loss_and_raw_outputs, network=parts.network, config=TrainConfig()))
    _, metrics, _, logits, value = jax.device_get(fn(variables["params"], variables["batch_stats"], without))
    log_softmax = np.asarray(jax.nn.log_softmax(logits), np.float64)
    cross_entropy = -np.sum(np.asarray(without.policy_target) * log_softmax, axis=-1)[1::2]
    assert metrics["policy_loss"] == pytest.approx(np.mean(cross_entropy), rel=1e-5)
    assert metrics["value_loss"] == pytest.approx(np.mean((value - np.asarray(batch.value_target)) ** 2), rel=1e-5)


def test_the_reply_head_adds_its_weighted_cross_entropy(parts, variables, batch, tiny_config):
    """With train.reply_policy_weight w > 0 the network has an opponent-reply head, and the loss adds w x its
    cross-entropy against the reply targets, averaged over the positions that have one."""
    config = TrainConfig(reply_policy_weight=0.15, weight_decay=0.0)
    network = make_network(tiny_config.network, parts.game.num_actions, reply_head=True)
    plain_variables, variables = variables, init_variables(network, jax.random.key(0), parts.game.observation_shape)
    reply = jnp.asarray(np.random.default_rng(1).dirichlet(np.ones(parts.game.num_actions), NUM_POSITIONS),
                        jnp.float32).at[::3].set(0.0)  # a game's last move has no reply
    with_reply = batch.replace(reply_target=reply)

    loss, metrics, logits, value, reply_logits = _loss_and_sown(network, config, variables, with_reply, "reply_logits")
    has_reply = np.asarray(reply).sum(-1) > 0
    expected_reply = np.mean(cross_entropy(reply_logits, reply)[has_reply])
    expected_policy = np.mean(cross_entropy(logits, batch.policy_target))
    mse = np.mean((value - np.asarray(batch.value_target)) ** 2)
    assert metrics["reply_policy_loss"] == pytest.approx(expected_reply, rel=1e-5)
    assert loss == pytest.approx(expected_policy + mse + 0.15 * expected_reply, rel=1e-5)
    assert not np.allclose(reply_logits, logits)  # a head of its own
    assert "reply_head" in variables["params"] and "reply_head" not in plain_variables["params"]  # 0: no head


def test_the_wdl_head_is_trained_by_cross_entropy_and_its_value_is_win_minus_loss(parts, batch, tiny_config):
    """With network.value_head "wdl" the value head gives win/draw/loss logits for the player to move, the value is
    P(win) - P(loss), and the loss has the cross-entropy against `wdl_target` in the MSE's place ("value_loss"
    stays the MSE, for comparison with a scalar head)."""
    config = TrainConfig(weight_decay=0.0, value_target_mix=0.5)
    network_config = dataclasses.replace(tiny_config.network, value_head="wdl")
    network = make_network(network_config, parts.game.num_actions)
    variables = init_variables(network, jax.random.key(0), parts.game.observation_shape)
    outcome = jnp.asarray([1, -1, 0, 1, -1, 0, 1, 1], jnp.float32)
    share = np.random.default_rng(2).uniform(-1, 1, NUM_POSITIONS).astype(np.float32)
    with_outcome = batch.replace(value_target=0.5 * outcome + 0.5 * share, outcome=outcome)

    loss, metrics, logits, value, outcome_logits = _loss_and_sown(network, config, variables, with_outcome,
                                                                  "value_logits")
    probabilities = np.asarray(jax.nn.softmax(outcome_logits))
    np.testing.assert_allclose(value, probabilities[:, 0] - probabilities[:, 2], atol=1e-6)
    target = np.asarray(wdl_target(with_outcome.value_target, outcome, 0.5))
    value_cross_entropy = np.mean(cross_entropy(outcome_logits, target))
    policy = np.mean(cross_entropy(logits, batch.policy_target))
    assert metrics["value_cross_entropy"] == pytest.approx(value_cross_entropy, rel=1e-5)
    mse = np.mean((value - np.asarray(with_outcome.value_target)) ** 2)
    assert metrics["value_loss"] == pytest.approx(mse, rel=1e-5)
    assert loss == pytest.approx(policy + value_cross_entropy, rel=1e-5)
    assert "wdl_head" in variables["params"]


@pytest.mark.slow  # three options' programs together; each option's own tests stay in the default suite
def test_a_run_with_playout_caps_reply_targets_and_surprise_weighting_trains(tiny_config):
    """An iteration with playout-cap randomisation (half the steps fast), the opponent-reply head, policy
    surprise weighting, TD(lambda) value targets over kept unfinished games, deeper searches for the 3 games
    nearest their start and a win/draw/loss value head trains: its metrics are finite, the reply head learns, and
    replay holds the reply targets, each position's surprise (0 after a fast search, which has no policy target)
    and its game's outcome."""
    config = config_lib.with_overrides(tiny_config, {"selfplay.full_search_fraction": 0.5,
                                                     "selfplay.fast_search_simulations": 2,
                                                     "selfplay.keep_unfinished": True,
                                                     "selfplay.start_search_games": 3,
                                                     "selfplay.start_search_simulations": 8,
                                                     "train.reply_policy_weight": 0.15,
                                                     "train.policy_surprise_weight": 0.5,
                                                     "train.value_target_mix": 0.5,
                                                     "train.value_target_lambda": 0.8,
                                                     "network.value_head": "wdl"})
    start = init_run_state(config)
    state, metrics = jax.jit(make_train_iteration(config))(start)
    metrics = jax.device_get(metrics)
    assert int(state.iteration) == 1 and int(state.train_state.step) == config.train.num_sgd_steps
    assert all(np.isfinite(float(value)) for value in metrics.values())
    assert float(metrics["reply_policy_loss"]) > 0
    head = [state.train_state.params["reply_head"]["kernel"], start.train_state.params["reply_head"]["kernel"]]
    assert not np.allclose(*head)
    replies = np.asarray(state.replay.data.reply_target)[np.asarray(state.replay.ready)]
    assert replies.shape[0] > 0 and np.all((np.abs(replies.sum(-1) - 1) < 1e-5) | (replies.sum(-1) == 0))
    held = np.asarray(state.replay.ready)
    surprise = np.asarray(state.replay.data.surprise)[held]
    searched = np.asarray(state.replay.data.policy_target)[held].sum(-1) > 0
    assert np.all(surprise[~searched] == 0) and np.all(surprise >= -1e-6) and np.any(surprise[searched] > 0)
    assert float(metrics["policy_surprise"]) > 0
    # The WDL head's outcomes: each ready position's game outcome for its player to move, the one its blended value
    # target holds half of (the other half, the search's share, lies in [-1, 1]).
    outcome, target = np.asarray(state.replay.data.outcome)[held], np.asarray(state.replay.data.value_target)[held]
    assert set(np.unique(outcome)) <= {-1.0, 0.0, 1.0} and len(np.unique(outcome)) > 1
    assert np.all(np.abs(target - 0.5 * outcome) <= 0.5 + 1e-6)
    assert float(metrics["value_cross_entropy"]) > 0


def test_train_step_reduces_the_loss_on_a_fixed_batch(parts, variables, batch):
    config = TrainConfig(learning_rate=1e-2, warmup_steps=0, weight_decay=1e-4)
    optimizer = make_optimizer(config)
    state = TrainState(
        params=variables["params"],
        batch_stats=variables["batch_stats"],
        opt_state=optimizer.init(variables["params"]),
        step=jnp.int32(0),
    )
    step = jax.jit(functools.partial(train_step, network=parts.network, optimizer=optimizer, config=config))
    losses = []
    for _ in range(12):
        state, metrics = step(state, batch)
        losses.append(float(metrics["loss"]))
        assert np.isfinite(float(metrics["grad_norm"])) and float(metrics["grad_norm"]) > 0
    assert int(state.step) == 12
    assert losses[-1] < 0.8 * losses[0], losses
    assert not np.allclose(state.params["Dense_0"]["kernel"], variables["params"]["Dense_0"]["kernel"])


def test_learning_rate_warms_up_then_follows_the_budget():
    constant = TrainConfig(learning_rate=1e-3, warmup_steps=10)
    cosine = TrainConfig(learning_rate=1e-3, warmup_steps=10, lr_schedule="cosine")
    def rate(config, step, progress):
        return float(learning_rate(config, jnp.int32(step), jnp.float32(progress)))

    assert rate(constant, 0, 0.0) == pytest.approx(1e-4) and rate(constant, 4, 0.0) == pytest.approx(5e-4)
    assert rate(constant, 9, 0.9) == pytest.approx(1e-3) and rate(constant, 500, 1.0) == pytest.approx(1e-3)
    assert rate(cosine, 500, 0.0) == pytest.approx(1e-3)
    assert rate(cosine, 500, 0.5) == pytest.approx(1e-3 * (0.01 + 0.99 * 0.5))
    assert rate(cosine, 500, 1.0) == pytest.approx(1e-5) and rate(cosine, 500, 3.0) == pytest.approx(1e-5)


def test_budget_progress_is_the_further_of_iterations_and_time(tiny_config):
    state = init_run_state(tiny_config)
    assert float(budget_progress(state.replace(iteration=jnp.int32(5)), 20)) == pytest.approx(0.25)
    timed = state.replace(iteration=jnp.int32(5), time_progress=jnp.float32(0.6))
    assert float(budget_progress(timed, 20)) == pytest.approx(0.6)


def test_adamw_decays_kernels_outside_the_loss(parts, variables, batch):
    config = TrainConfig(optimizer="adamw", weight_decay=0.1)
    optimizer = make_optimizer(config)
    params = variables["params"]
    zero = jax.tree.map(jnp.zeros_like, params)
    updates, _ = optimizer.update(zero, optimizer.init(params), params)
    flat_params, flat_updates = (traverse_util.flatten_dict(jax.device_get(t)) for t in (params, updates))
    for path, update in flat_updates.items():  # at a unit learning rate: -weight_decay x kernel, 0 elsewhere
        expected = -0.1 * flat_params[path] if path[-1] == "kernel" else np.zeros_like(update)
        np.testing.assert_allclose(update, expected, rtol=1e-6, atol=1e-12)
    # The loss carries no L2 term with adamw; with adam the same weight is an L2 penalty in it.
    adamw_loss = compute_loss(params, variables["batch_stats"], batch, network=parts.network,
                              **loss_options(config))[0]
    adam = TrainConfig(optimizer="adam", weight_decay=0.1)
    adam_loss, (metrics, _) = compute_loss(params, variables["batch_stats"], batch, network=parts.network,
                                           **loss_options(adam))
    assert float(adam_loss - adamw_loss) == pytest.approx(0.1 * float(metrics["l2"]), rel=1e-4)


# --------------------------------------------------------------------------------------------------------------
# The compiled iteration


SELFPLAY_METRICS = {"games_finished", "positions_added", "positions_pending", "positions_lost", "game_length",
                    "player0_win_rate", "draw_rate", "resign_rate", "resign_false_positive_rate", "replay_size",
                    "policy_surprise"}
SGD_METRICS = {"loss", "policy_loss", "value_loss", "l2", "grad_norm", "sgd_steps"}


def params_copy(run_state) -> dict:
    return jax.tree.map(np.array, jax.device_get(run_state.train_state.params))


@pytest.fixture(scope="module")
def iterations(tiny_config):
    """Two iterations of a fresh run, then one of a second fresh run with the same seed and of another seed."""
    iteration = jax.jit(make_train_iteration(tiny_config), donate_argnums=0)
    state = init_run_state(tiny_config)
    initial_params = params_copy(state)
    records = []
    for _ in range(2):
        state, metrics = iteration(state)
        records.append({
            "metrics": {name: float(value) for name, value in jax.device_get(metrics).items()},
            "iteration": int(state.iteration),
            "sgd_steps": int(state.train_state.step),
            "replay_size": int(state.replay.num_ready),
            "pending": int(state.selfplay.pending.sum()),
            "params": params_copy(state),  # copied: the next call donates `state`
        })
    same_seed, _ = iteration(init_run_state(tiny_config))
    other_seed, _ = iteration(init_run_state(tiny_config, jax.random.key(tiny_config.seed + 1)))
    return {
        "initial_params": initial_params,
        "records": records,
        "same_seed_params": params_copy(same_seed),
        "other_seed_params": params_copy(other_seed),
    }


def test_iteration_counters_increment(iterations, tiny_config):
    records = iterations["records"]
    assert [r["iteration"] for r in records] == [1, 2]
    steps = tiny_config.train.num_sgd_steps
    assert [r["sgd_steps"] for r in records] == [steps, 2 * steps]


def test_iteration_metrics_are_finite_scalars(iterations, tiny_config):
    assert len(iterations["records"]) == 2
    for record in iterations["records"]:
        metrics = record["metrics"]
        assert SGD_METRICS | SELFPLAY_METRICS <= set(metrics)
        assert all(np.isfinite(value) for value in metrics.values()), metrics
        assert metrics["games_finished"] >= tiny_config.selfplay.num_games  # every game ends within 12 moves
        assert 5 <= metrics["game_length"] <= 9  # tic-tac-toe, no openings
        assert 0 <= metrics["player0_win_rate"] + metrics["draw_rate"] <= 1
        assert metrics["resign_rate"] == 0  # resign_threshold is None
        assert metrics["positions_lost"] == 0 and metrics["sgd_steps"] == tiny_config.train.num_sgd_steps


def test_replay_grows_by_the_positions_added(iterations, tiny_config):
    first, second = iterations["records"]
    added = [r["metrics"]["positions_added"] for r in (first, second)]
    assert first["replay_size"] == first["metrics"]["replay_size"] == added[0] > 0
    expected = min(added[0] + added[1], tiny_config.train.replay_capacity)
    assert second["replay_size"] == second["metrics"]["replay_size"] == expected > first["replay_size"]


def test_every_played_position_is_added_or_pending(iterations, tiny_config):
    # A ring larger than two iterations: every position played is in replay, ready or waiting for its game to
    # end (test_selfplay.py checks their targets against one long trajectory's).
    played = 2 * tiny_config.selfplay.num_games * tiny_config.selfplay.num_steps
    records = iterations["records"]
    added = sum(r["metrics"]["positions_added"] for r in records)
    assert added + records[-1]["pending"] == played
    assert records[-1]["metrics"]["positions_pending"] == records[-1]["pending"] > 0


def test_iterations_train_the_network(iterations):
    before = jax.tree.leaves(iterations["initial_params"])
    after = jax.tree.leaves(iterations["records"][0]["params"])
    assert any(not np.array_equal(a, b) for a, b in zip(before, after, strict=True))


def test_same_seed_gives_bitwise_identical_params(iterations):
    first = iterations["records"][0]["params"]
    same = iterations["same_seed_params"]
    assert jax.tree.structure(first) == jax.tree.structure(same)
    for a, b in zip(jax.tree.leaves(first), jax.tree.leaves(same), strict=True):
        np.testing.assert_array_equal(a, b)
    other = iterations["other_seed_params"]
    assert any(not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(first), jax.tree.leaves(other), strict=True))


# --------------------------------------------------------------------------------------------------------------
# A moving average of the weights (train.ema_decay)


def test_the_moving_average_follows_each_sgd_step_with_its_warmed_up_decay(parts, variables, batch):
    config = TrainConfig(learning_rate=1e-2, warmup_steps=0, ema_decay=0.9)
    optimizer = make_optimizer(config)
    state = TrainState(params=variables["params"], batch_stats=variables["batch_stats"],
                       opt_state=optimizer.init(variables["params"]), step=jnp.int32(0),
                       average=jax.tree.map(jnp.copy, dict(variables)))
    step = jax.jit(functools.partial(train_step, network=parts.network, optimizer=optimizer, config=config))
    expected = jax.device_get(dict(variables))
    for k in range(6):
        state, _ = step(state, batch)
        decay = min(0.9, (1 + k) / (10 + k))  # the first steps' decays are 0.1, 0.18, ...: the average follows
        expected = jax.tree.map(lambda old, new, d=decay: d * old + (1 - d) * new, expected,
                                jax.device_get(state.variables))
        for got, want in zip(jax.tree.leaves(state.average), jax.tree.leaves(expected), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # The average lags the trained weights, batch statistics included, and is what plays.
    assert not np.allclose(state.average["params"]["Dense_0"]["kernel"], state.params["Dense_0"]["kernel"])
    assert any(not np.allclose(a, b) for a, b in zip(jax.tree.leaves(state.average["batch_stats"]),
                                                      jax.tree.leaves(state.batch_stats), strict=True))
    assert state.play_variables is state.average
    assert state.replace(average=None).play_variables["params"] is state.params
    # A warm start replaces the average too, so that it does not average towards the random initialisation.
    warm = state.with_variables(variables)
    for leaf, start in zip(jax.tree.leaves(warm.average), jax.tree.leaves(dict(variables)), strict=True):
        np.testing.assert_array_equal(leaf, start)


def test_the_iteration_hands_self_play_and_reanalyse_the_average(tiny_config, monkeypatch):
    """Traced only (no compilation): the variables self-play and Reanalyse get are the average's arrays."""
    from azjax import selfplay, training

    config = config_lib.with_overrides(tiny_config, {"train.ema_decay": 0.9, "train.reanalyse_positions": 8})
    handed = {}

    def spy(name, original):
        def call(key, variables, *args, **kwargs):
            handed[name] = variables
            return original(key, variables, *args, **kwargs)
        return call

    monkeypatch.setattr(selfplay, "run_selfplay", spy("selfplay", selfplay.run_selfplay))
    monkeypatch.setattr(training, "reanalyse", spy("reanalyse", training.reanalyse))
    iteration = make_train_iteration(config)

    def traced(state):
        seen["average"], seen["trained"] = state.train_state.average, state.train_state.variables
        return iteration(state)

    seen = {}
    jax.eval_shape(traced, init_run_state(config))
    for name in ("selfplay", "reanalyse"):
        leaves = jax.tree.leaves(handed[name])
        assert all(a is b for a, b in zip(leaves, jax.tree.leaves(seen["average"]), strict=True)), name
        assert not any(a is b for a, b in zip(leaves, jax.tree.leaves(seen["trained"]), strict=True)), name


@pytest.mark.slow
def test_self_play_plays_the_average_and_sgd_trains_the_weights(tiny_config):
    config = config_lib.with_overrides(tiny_config, {"train.ema_decay": 0.9})
    iteration = jax.jit(make_train_iteration(config))
    state = init_run_state(config)
    trained, average = state.train_state.variables, state.train_state.average
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(trained), jax.tree.leaves(average), strict=True))
    noise = lambda tree, seed: jax.tree.map(  # noqa: E731
        lambda x: x + jax.random.normal(jax.random.key(seed), x.shape, x.dtype), tree)
    # Other trained weights under the same average: the same games. Another average: other games.
    other_weights = state.replace(train_state=state.train_state.replace(params=noise(trained["params"], 1)))
    other_average = state.replace(train_state=state.train_state.replace(
        average={**average, "params": noise(average["params"], 2)}))
    after = {name: jax.device_get(iteration(s)[0])
             for name, s in (("same", state), ("weights", other_weights), ("average", other_average))}
    same = jax.tree.leaves(after["same"].selfplay)
    assert all(np.array_equal(a, b) for a, b in zip(same, jax.tree.leaves(after["weights"].selfplay), strict=True))
    assert any(not np.array_equal(a, b) for a, b in zip(same, jax.tree.leaves(after["average"].selfplay),
                                                        strict=True))
    after = after["same"]
    assert int(after.train_state.step) == config.train.num_sgd_steps
    moved = [not np.allclose(a, b) for a, b in zip(jax.tree.leaves(after.train_state.average["params"]),
                                                   jax.tree.leaves(after.train_state.params), strict=True)]
    assert any(moved)  # the average lags what SGD trained
