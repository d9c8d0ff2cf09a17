"""Training: the loss, the SGD step, and `make_train_iteration`, the one compiled unit of a run.

One iteration = self-play (B games x T moves with search) -> value targets -> replay insert -> (with Reanalyse,
replayed positions searched again: `reanalyse`) -> a `lax.scan` of SGD steps on positions sampled from the replay
buffer. `make_train_iteration(config)` returns it as a pure
function `RunState -> (RunState, metrics)`; jit it once with the run state donated::

    run_state = init_run_state(config)
    iteration = jax.jit(make_train_iteration(config), donate_argnums=0)
    for _ in range(config.num_iterations):
        run_state, metrics = iteration(run_state)

Nothing here assumes a single device: the game batch and the SGD batch are leading axes that can be sharded.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from flax import struct
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from azjax import games, parallel, replay, selfplay
from azjax.config import Config, ConfigError, TrainConfig
from azjax.learning import TrainState, compute_loss, init_train_state, kernels, sgd_step
from azjax.networks import check_network, inference_fn, network_of, value_head_of
from azjax.parallel import DATA_AXIS, replicate, split_batch
from azjax.search import make_search_fn


class RunState(struct.PyTreeNode):
    """Everything a run carries from one iteration to the next (and what a checkpoint holds)."""

    train_state: TrainState
    selfplay: selfplay.SelfPlayState
    replay: replay.ReplayBuffer
    key: jax.Array  # the run's random key
    iteration: jax.Array  # [] int32, iterations completed
    time_progress: jax.Array  # [] float32, the share of a time budget (--seconds) spent; 0 without one


@dataclasses.dataclass(frozen=True)
class Components:
    """The static objects a config determines: the game, the network, the optimizer and the search."""

    game: games.Game
    network: nn.Module  # the network contract: azjax.networks
    optimizer: optax.GradientTransformation
    search_fn: selfplay.SearchFn
    fast_search_fn: selfplay.SearchFn | None = None  # self-play's fast search (selfplay.full_search_fraction < 1)
    start_search_fn: selfplay.SearchFn | None = None  # self-play's deeper search near the start (start_search_games)
    reanalyse_search_fn: selfplay.SearchFn | None = None  # Reanalyse's search (train.reanalyse_positions > 0)


def make_components(config: Config, network: nn.Module | None = None) -> Components:
    """Builds the game, network, optimizer and search functions that `config` describes; `network` (default
    `network_of(config, game)`: the ResNet or `config.network.module`'s) is checked against the network contract.

    Raises:
      ConfigError: `config` is invalid; `networks.NetworkError`: the network breaks the contract.
    """
    config.validate()
    game = config.make_game()
    check_players(config, game)
    network = network if network is not None else network_of(config, game)
    check_network(network, game, reply_policy=config.train.reply_policy_weight > 0,
                  name=config.network.module or None)
    apply_fn = inference_fn(network)
    search_fn = make_search_fn(game, apply_fn, config.search)
    fast_search_fn = None
    if config.selfplay.full_search_fraction < 1.0:
        fast = dataclasses.replace(config.search, num_simulations=config.selfplay.fast_search_simulations)
        fast_search_fn = make_search_fn(game, apply_fn, fast)
    start_search_fn = None
    if config.selfplay.start_search_games:
        deep = dataclasses.replace(config.search, num_simulations=config.selfplay.start_search_simulations)
        start_search_fn = make_search_fn(game, apply_fn, deep)
    reanalyse_search_fn = None
    if config.train.reanalyse_positions:
        simulations = config.train.reanalyse_simulations or config.search.num_simulations
        again = dataclasses.replace(config.search, num_simulations=simulations, reuse_tree=False)
        reanalyse_search_fn = make_search_fn(game, apply_fn, again)
    return Components(game, network, make_optimizer(config.train), search_fn, fast_search_fn, start_search_fn,
                      reanalyse_search_fn)


def check_players(config: Config, game: games.Game) -> None:
    """Raises ConfigError for the settings a one-player game cannot take: resignation (there is no opponent to
    resign to) and a win/draw/loss value head (its returns are not outcomes); and for those a game with chance
    cannot: a search other than Stochastic MuZero's (search.policy puct) and tree reuse."""
    if game.has_chance and config.search.policy != "puct":
        raise ConfigError(f"{game.name} has chance events: it searches with Stochastic MuZero's chance nodes, which "
                          "mctx offers with PUCT only; set search.policy puct (--search.policy puct)")
    if game.has_chance and config.search.reuse_tree:
        raise ConfigError(f"{game.name} has chance events: a kept tree would hold one roll of the dice; leave "
                          "search.reuse_tree off")
    if game.num_players != 1:
        return
    if config.selfplay.resign_threshold is not None:
        raise ConfigError(f"{game.name} is a one-player game: it has no opponent to resign to; leave "
                          "selfplay.resign_threshold unset")
    if config.network.value_head == "wdl":
        raise ConfigError(f"{game.name} is a one-player game: its returns are not wins, draws and losses; use "
                          "network.value_head scalar")


def loss_options(config: TrainConfig) -> dict:
    """`learning.compute_loss`'s keyword hyperparameters for a run of `config` (no L2 term in the loss with adamw,
    which decays the weights outside it)."""
    return dict(value_loss_weight=config.value_loss_weight,
                weight_decay=0.0 if config.optimizer == "adamw" else config.weight_decay,
                reply_policy_weight=config.reply_policy_weight, value_target_mix=config.value_target_mix)


def make_optimizer(config: TrainConfig) -> optax.GradientTransformation:
    """The optimizer at a unit learning rate: `train_step` scales its updates by `learning_rate(...)`, which
    follows the run's budget rather than a step count fixed in advance.

    AdamW decays only the kernels (not biases or batch-norm scales), as the L2 penalty of adam and sgd does.
    """
    if config.optimizer == "sgd":
        return optax.sgd(1.0, momentum=0.9)
    if config.optimizer == "adamw":
        return optax.adamw(1.0, weight_decay=config.weight_decay, mask=kernels)
    return optax.adam(1.0)


def learning_rate(config: TrainConfig, step: jax.Array, progress: jax.Array) -> jax.Array:
    """The learning rate of SGD step `step` when a `progress` fraction (0 to 1) of the run's budget is spent:
    a linear warm-up over `warmup_steps`, times 1 ("constant") or a cosine from 1 to 0.01 over the budget."""
    warmup = jnp.minimum((step + 1) / max(config.warmup_steps, 1), 1.0)
    decay: jax.Array | float = 1.0
    if config.lr_schedule == "cosine":
        decay = 0.01 + 0.99 * 0.5 * (1.0 + jnp.cos(jnp.pi * jnp.clip(progress, 0.0, 1.0)))
    return (config.learning_rate * warmup * decay).astype(jnp.float32)


def ema_decay(config: TrainConfig, step: jax.Array) -> jax.Array:
    """The moving average's decay at SGD step `step` (0-based): `ema_decay`, but at most (1 + step) / (10 + step),
    so that the first steps' average follows the network instead of keeping the random initialisation (the warm-up
    of TensorFlow's ExponentialMovingAverage). The average after the step: decay x average + (1 - decay) x new."""
    return jnp.minimum(config.ema_decay, (1.0 + step) / (10.0 + step)).astype(jnp.float32)


def budget_progress(run_state: RunState, num_iterations: int) -> jax.Array:
    """The fraction of the run's budget spent before its next iteration: of its iterations, or of its time when
    the trainer runs it with --seconds (`RunState.time_progress`), whichever is further."""
    return jnp.maximum(run_state.iteration / num_iterations, run_state.time_progress).astype(jnp.float32)


def init_run_state(config: Config, key: jax.Array | None = None, *, network: nn.Module | None = None) -> RunState:
    """A fresh run: initial network, optimizer state, empty replay buffer and B new games (key: default from
    `config.seed`). `network`: any module with the network contract (default: `network_of(config, game)`).
    One compiled program, which jax's compilation cache keeps: run op by op, the initialisation compiled each of
    its ~100 small operations apart, ~5 s of every run's start on the CPU."""
    # The game's definition is part of the compiled program's key: a game registered anew under the same name (an
    # edited game, a notebook cell rerun) has the same config but may have another observation or start.
    key = jax.random.key(config.seed) if key is None else key
    return _init_run_state(config, games.definition(config.game), network, key)


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _init_run_state(config: Config, game_definition: object, network: nn.Module | None, key: jax.Array) -> RunState:
    del game_definition  # only a key of jit's cache
    parts = make_components(config, network)
    network_key, selfplay_key, run_key = jax.random.split(key, 3)
    train_state = init_train_state(network_key, parts.network, parts.optimizer,
                                   observation_shape=parts.game.observation_shape,
                                   average=config.train.ema_decay > 0)
    games_in_progress = selfplay.init_selfplay(selfplay_key, parts.game,
                                               **selfplay.init_options(config.selfplay, config.search))
    state_like = None
    if config.train.reanalyse_positions:
        state_like = jax.tree.map(lambda x: x[0], games_in_progress.game_state)
    return RunState(
        train_state=train_state,
        selfplay=games_in_progress,
        replay=replay.init_replay(parts.game, config.train.replay_capacity,
                                  reply_targets=config.train.reply_policy_weight > 0,
                                  surprise=config.train.policy_surprise_weight > 0,
                                  outcomes=value_head_of(parts.network) == "wdl", state_like=state_like),
        key=run_key,
        iteration=jnp.int32(0),
        time_progress=jnp.float32(0.0),
    )


def train_step(
    train_state: TrainState,
    batch: replay.Batch,
    *,
    network: nn.Module,
    optimizer: optax.GradientTransformation,
    config: TrainConfig,
    progress: jax.Array | float = 0.0,
    return_bounds: tuple[float, float] = (-1.0, 1.0),
    return_scaling: str = "linear",
) -> tuple[TrainState, dict]:
    """A run's SGD step (`learning.sgd_step` on `learning.compute_loss`) at the learning rate of `progress` (the
    share of the run's budget spent, see `learning_rate`; `optimizer` is `make_optimizer`'s, at a unit rate);
    returns the new state and the loss metrics, with "learning_rate". `return_bounds`, `return_scaling`: the game's
    (`Game.return_bounds`, `Game.return_scaling`), which map the value targets into the network's [-1, 1]."""
    rate = learning_rate(config, train_state.step, jnp.asarray(progress))
    loss_fn = functools.partial(compute_loss, network=network, return_bounds=return_bounds,
                                return_scaling=return_scaling, **loss_options(config))
    new_state, metrics = sgd_step(
        train_state, batch, loss_fn=loss_fn,
        optimizer=optimizer, update_scale=rate,
        ema_decay=ema_decay(config, train_state.step) if train_state.average is not None else None,
    )
    metrics["learning_rate"] = rate
    return new_state, metrics


def split_batches(config: Config) -> dict[str, int]:
    """The batches a run splits over its devices, by config field: the games, the SGD batch and, with Reanalyse,
    the positions it searches again."""
    batches = {"selfplay.num_games": config.selfplay.num_games, "train.batch_size": config.train.batch_size}
    if config.train.reanalyse_positions:
        batches["train.reanalyse_positions"] = config.train.reanalyse_positions
    return batches


def check_splits(config: Config, count: int) -> None:
    """Raises ConfigError unless the game batch and the SGD batch split evenly over `count` devices."""
    try:
        parallel.check_divisible(count, split_batches(config))
    except ValueError as error:
        raise ConfigError(str(error)) from None


def shard_run_state(run_state: RunState, mesh: Mesh) -> RunState:
    """Places a run state on `mesh`: the B games split along the data axis, everything else replicated."""
    placed = replicate(run_state.replace(selfplay=None), mesh)
    return placed.replace(selfplay=parallel.put(run_state.selfplay, NamedSharding(mesh, PartitionSpec(DATA_AXIS))))


def make_train_iteration(
    config: Config, *, mesh: Mesh | None = None, parts: Components | None = None, network: nn.Module | None = None
) -> Callable[[RunState], tuple[RunState, dict]]:
    """The whole training iteration as one pure function `RunState -> (RunState, metrics)`; jit it once.

    With a `mesh`, the game batch and the SGD batch are split along its data axis (place the run state with
    `shard_run_state`) and XLA inserts the gradient all-reduce: data parallelism through jit alone.

    Metrics are scalars: SGD losses averaged over the iteration's steps, and self-play statistics (games finished,
    positions added, mean game length, the share of games won by player 0 and drawn, resignations).

    `network`: any module with the network contract (default: `network_of(config, game)`), the one the run state
    was initialised with (`init_run_state(config, network=...)`). `parts` (default `make_components(config,
    network)`) lets an experiment swap another component; it must keep the shapes of the run state.
    """
    parts = parts if parts is not None else make_components(config, network)
    if mesh is not None:
        check_splits(config, mesh.size)
    return functools.partial(_train_iteration, parts=parts, config=config, mesh=mesh)


def _train_iteration(
    run_state: RunState, *, parts: Components, config: Config, mesh: Mesh | None
) -> tuple[RunState, dict]:
    selfplay_key, sgd_key, next_key = jax.random.split(run_state.key, 3)
    game = parts.game

    games_state, trajectory = selfplay.run_selfplay(
        selfplay_key,
        run_state.train_state.play_variables,
        split_batch(run_state.selfplay, mesh),
        game=game,
        search_fn=parts.search_fn,
        fast_search_fn=parts.fast_search_fn,
        start_search_fn=parts.start_search_fn,
        record_states=bool(config.train.reanalyse_positions),
        **selfplay.selfplay_options(config.selfplay),
    )
    games_state, trajectory = split_batch(games_state, mesh), split_batch(trajectory, mesh, batch_axis=1)
    buffer, stored = selfplay.store_positions(run_state.replay, trajectory, run_state.selfplay.pending,
                                              game.max_length, keep_unfinished=config.selfplay.keep_unfinished,
                                              value_target_mix=config.train.value_target_mix,
                                              value_target_lambda=config.train.value_target_lambda)
    if config.train.reanalyse_positions:
        # Its key by fold_in, so that the three-way split above, and with it every run without Reanalyse, stays.
        buffer, reanalysed = reanalyse(jax.random.fold_in(selfplay_key, 1), run_state.train_state.play_variables,
                                       buffer, parts=parts, config=config, mesh=mesh)
        stored.update(reanalysed)

    train_state, sgd_metrics = run_sgd_steps(
        sgd_key, run_state.train_state, buffer, parts=parts, config=config, mesh=mesh,
        progress=budget_progress(run_state, config.num_iterations),
    )

    taken = sgd_metrics.pop("taken")
    metrics: dict[str, jax.Array] = {name: jnp.sum(jnp.where(taken, values, 0.0)) / jnp.maximum(jnp.sum(taken), 1)
                                     for name, values in sgd_metrics.items()}
    metrics["sgd_steps"] = jnp.sum(taken)
    metrics.update(_selfplay_metrics(trajectory))
    metrics.update(stored)
    metrics["positions_pending"] = jnp.sum(games_state.pending) if config.selfplay.keep_unfinished else jnp.int32(0)
    metrics["replay_size"] = buffer.num_ready
    metrics["params_finite"] = jnp.all(jnp.array([jnp.isfinite(x).all() for x in jax.tree.leaves(train_state)]))
    new_state = run_state.replace(
        train_state=train_state,
        selfplay=games_state,
        replay=buffer,
        key=next_key,
        iteration=run_state.iteration + 1,
    )
    return new_state, metrics


def reanalyse(
    key: jax.Array, variables: dict, buffer: replay.ReplayBuffer, *, parts: Components, config: Config,
    mesh: Mesh | None = None,
) -> tuple[replay.ReplayBuffer, dict]:
    """Reanalyse (MuZero's, for a game whose rules are known): `train.reanalyse_positions` ready replay positions,
    drawn uniformly without repeats, are searched again from their stored game states with `variables` (the
    network self-play used this iteration) and `train.reanalyse_simulations`, and take the new search's policy
    target, its policy surprise, and with `train.value_target_mix` m > 0 the value target (1 - m) x their game's
    outcome + m x the new search's value of the move it would play, for the position's player to move (with
    `train.value_target_lambda` too: the lambda-return over the game's later values is not searched again).

    With `train.reanalyse_max_moves` only positions with at most that many moves played in their game are drawn
    (the opening, where the value is hardest to learn). The search runs as self-play's does at that position's move
    number, root noise included (the move it picks only names the value taken). Until that many positions are
    eligible, only the eligible ones are searched again.

    Returns the buffer and metrics: "reanalysed" (positions searched again) and "reanalyse_value_change" (their
    value targets' mean absolute change).
    """
    assert parts.reanalyse_search_fn is not None, "train.reanalyse_positions > 0 needs make_components' search"
    draw_key, search_key = jax.random.split(key)
    rows, valid = replay.draw_ready(draw_key, buffer, config.train.reanalyse_positions,
                                    max_moves=config.train.reanalyse_max_moves)
    assert buffer.replayable is not None
    drawn = split_batch(jax.tree.map(lambda x: x[rows], buffer.replayable), mesh)
    searched = parts.reanalyse_search_fn(variables, search_key, drawn.state, drawn.move_number)
    old_value = buffer.data.value_target[rows]
    surprise = None
    if buffer.data.surprise is not None:
        surprise = selfplay.policy_surprise(searched.policy_target, searched.network_logits)
    buffer = replay.refresh(buffer, rows, valid, searched.policy_target, searched.action_value,
                            mix=config.train.value_target_mix, surprise=surprise)
    count = jnp.sum(valid)
    change = jnp.sum(jnp.where(valid, jnp.abs(buffer.data.value_target[rows] - old_value), 0.0))
    return buffer, {"reanalysed": count, "reanalyse_value_change": change / jnp.maximum(count, 1)}


def run_sgd_steps(
    key: jax.Array,
    train_state: TrainState,
    buffer: replay.ReplayBuffer,
    *,
    parts: Components,
    config: Config,
    mesh: Mesh | None = None,
    progress: jax.Array | float = 0.0,
) -> tuple[TrainState, dict]:
    """An iteration's `train.num_sgd_steps` SGD steps at the learning rate of `progress` (see `learning_rate`),
    a `lax.scan` over batches sampled from `buffer`'s ready positions. Until it holds at least a batch of them
    (the first iterations of a game whose games outlast an iteration) the steps change nothing.

    Returns the new train state and the per-step metrics ([num_sgd_steps] each), with "taken" (bool: the step
    trained).
    """
    taken = buffer.num_ready >= config.train.batch_size

    def sgd_body(state: TrainState, step_key: jax.Array) -> tuple[TrainState, dict]:
        batch = replay.sample(step_key, buffer, config.train.batch_size, parts.game, augment=config.train.augment,
                              surprise_weight=config.train.policy_surprise_weight)
        new_state, metrics = train_step(
            state, split_batch(batch, mesh), network=parts.network, optimizer=parts.optimizer, config=config.train,
            progress=progress, return_bounds=parts.game.return_bounds, return_scaling=parts.game.return_scaling,
        )
        new_state = jax.tree.map(lambda new, old: jnp.where(taken, new, old), new_state, state)
        return new_state, {**metrics, "taken": taken}

    return jax.lax.scan(sgd_body, train_state, jax.random.split(key, config.train.num_sgd_steps))


def _selfplay_metrics(trajectory: selfplay.Trajectory) -> dict:
    done = trajectory.terminated
    num_done = jnp.sum(done)
    per_game = lambda x: jnp.sum(x) / jnp.maximum(num_done, 1)  # noqa: E731
    checked = jnp.sum(trajectory.would_have_resigned)
    searched_in_full = jnp.sum(trajectory.policy_target, axis=-1) > 0  # fast searches give no policy target
    return {
        "games_finished": num_done,
        "game_length": per_game(jnp.where(done, trajectory.move_number + 1, 0)),
        "player0_win_rate": per_game(done & (trajectory.rewards[..., 0] > 0)),
        "draw_rate": per_game(done & (trajectory.rewards[..., 0] == 0)),
        "resign_rate": per_game(trajectory.resigned),
        "resign_false_positive_rate": jnp.sum(trajectory.false_positive) / jnp.maximum(checked, 1),
        # How far the search moved from the network's prior (KL, nats), per fully searched position.
        "policy_surprise": jnp.sum(trajectory.policy_surprise) / jnp.maximum(jnp.sum(searched_in_full), 1),
    }
