"""Training: the loss, the SGD step, and `make_train_iteration`, the one compiled unit of a run.

One iteration = self-play (B games x T moves with search) -> value targets -> replay insert -> a `lax.scan` of
SGD steps on positions sampled from the replay buffer. `make_train_iteration(config)` returns it as a pure
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
from flax import struct
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from azjax import games, parallel, replay, selfplay
from azjax.config import Config, ConfigError, TrainConfig
from azjax.networks import AlphaZeroNetwork, init_variables, make_network
from azjax.parallel import DATA_AXIS, replicate, split_batch
from azjax.search import make_search_fn


@struct.dataclass
class TrainState:
    """The network's variables and the optimizer's state."""

    params: dict
    batch_stats: dict
    opt_state: optax.OptState
    step: jax.Array  # [] int32, SGD steps taken

    @property
    def variables(self) -> dict:
        """The network variables for `network.apply`."""
        return {"params": self.params, "batch_stats": self.batch_stats}


@struct.dataclass
class RunState:
    """Everything a run carries from one iteration to the next (and what a checkpoint holds)."""

    train_state: TrainState
    selfplay: selfplay.SelfPlayState
    replay: replay.ReplayBuffer
    key: jax.Array  # the run's random key
    iteration: jax.Array  # [] int32, iterations completed


@dataclasses.dataclass(frozen=True)
class Components:
    """The static objects a config determines: the game, the network, the optimizer and the search."""

    game: games.Game
    network: AlphaZeroNetwork
    optimizer: optax.GradientTransformation
    search_fn: selfplay.SearchFn


def make_components(config: Config) -> Components:
    """Builds the game, network, optimizer and search function that `config` describes."""
    config.validate()
    game = games.make(config.game)
    network = make_network(config.network, game.num_actions)
    apply_fn = functools.partial(network.apply, train=False)
    search_fn = make_search_fn(game, apply_fn, config.search)
    return Components(game, network, make_optimizer(config.train, config.num_iterations), search_fn)


def make_optimizer(config: TrainConfig, num_iterations: int) -> optax.GradientTransformation:
    """The optimizer with its learning-rate schedule (linear warm-up, then constant or cosine decay)."""
    total_steps = max(num_iterations * config.num_sgd_steps, config.warmup_steps + 1)
    if config.lr_schedule == "cosine":
        schedule = optax.warmup_cosine_decay_schedule(
            0.0, config.learning_rate, config.warmup_steps, total_steps, end_value=config.learning_rate * 0.01
        )
    else:
        schedule = optax.join_schedules(
            [optax.linear_schedule(0.0, config.learning_rate, config.warmup_steps),
             optax.constant_schedule(config.learning_rate)],
            [config.warmup_steps],
        )
    if config.optimizer == "sgd":
        return optax.sgd(schedule, momentum=0.9)
    return optax.adam(schedule)


def init_run_state(config: Config, key: jax.Array | None = None) -> RunState:
    """A fresh run: initial network, optimizer state, empty replay buffer and B new games."""
    parts = make_components(config)
    key = jax.random.key(config.seed) if key is None else key
    network_key, selfplay_key, run_key = jax.random.split(key, 3)
    variables = init_variables(parts.network, network_key, parts.game.observation_shape)
    train_state = TrainState(
        params=variables["params"],
        batch_stats=variables["batch_stats"],
        opt_state=parts.optimizer.init(variables["params"]),
        step=jnp.int32(0),
    )
    return RunState(
        train_state=train_state,
        selfplay=selfplay.init_selfplay(selfplay_key, parts.game, config.selfplay),
        replay=replay.init_replay(parts.game, config.train.replay_capacity),
        key=run_key,
        iteration=jnp.int32(0),
    )


def compute_loss(
    params: dict, batch_stats: dict, batch: replay.Batch, *, network: AlphaZeroNetwork, config: TrainConfig
) -> tuple[jax.Array, tuple[dict, dict]]:
    """The AlphaZero loss on a batch: policy cross-entropy + weighted value MSE + L2 on the kernels.

    Returns the total loss and (metrics, updated batch-norm statistics).
    """
    (logits, value), updates = network.apply(
        {"params": params, "batch_stats": batch_stats}, batch.observation, train=True, mutable=["batch_stats"]
    )
    policy_loss = jnp.mean(optax.softmax_cross_entropy(logits, batch.policy_target))
    value_loss = jnp.mean(jnp.square(value - batch.value_target))
    kernels = [x for path, x in jax.tree_util.tree_leaves_with_path(params) if "kernel" in jax.tree_util.keystr(path)]
    l2 = sum(jnp.sum(jnp.square(k)) for k in kernels)
    total = policy_loss + config.value_loss_weight * value_loss + config.weight_decay * l2
    metrics = {"loss": total, "policy_loss": policy_loss, "value_loss": value_loss, "l2": l2}
    return total, (metrics, updates["batch_stats"])


def train_step(
    train_state: TrainState,
    batch: replay.Batch,
    *,
    network: AlphaZeroNetwork,
    optimizer: optax.GradientTransformation,
    config: TrainConfig,
) -> tuple[TrainState, dict]:
    """One SGD step on `batch`; returns the new state and the loss metrics."""
    grad_fn = jax.grad(compute_loss, has_aux=True)
    grads, (metrics, batch_stats) = grad_fn(
        train_state.params, train_state.batch_stats, batch, network=network, config=config
    )
    updates, opt_state = optimizer.update(grads, train_state.opt_state, train_state.params)
    new_state = TrainState(
        params=optax.apply_updates(train_state.params, updates),
        batch_stats=batch_stats,
        opt_state=opt_state,
        step=train_state.step + 1,
    )
    metrics["grad_norm"] = optax.tree.norm(grads)
    return new_state, metrics


def split_batches(config: Config) -> dict[str, int]:
    """The batches a run splits over its devices, by config field: the games and the SGD batch."""
    return {"selfplay.num_games": config.selfplay.num_games, "train.batch_size": config.train.batch_size}


def check_divisible(config: Config, count: int) -> None:
    """Raises ConfigError unless the game batch and the SGD batch split evenly over `count` devices."""
    try:
        parallel.check_divisible(count, split_batches(config))
    except ValueError as error:
        raise ConfigError(str(error)) from None


def shard_run_state(run_state: RunState, mesh: Mesh) -> RunState:
    """Places a run state on `mesh`: the B games split along the data axis, everything else replicated."""
    placed = replicate(run_state, mesh)
    return placed.replace(selfplay=jax.device_put(run_state.selfplay, NamedSharding(mesh, PartitionSpec(DATA_AXIS))))


def make_train_iteration(
    config: Config, *, mesh: Mesh | None = None, parts: Components | None = None
) -> Callable[[RunState], tuple[RunState, dict]]:
    """The whole training iteration as one pure function `RunState -> (RunState, metrics)`; jit it once.

    With a `mesh`, the game batch and the SGD batch are split along its data axis (place the run state with
    `shard_run_state`) and XLA inserts the gradient all-reduce: data parallelism through jit alone.

    Metrics are scalars: SGD losses averaged over the iteration's steps, and self-play statistics (games finished,
    positions added, mean game length, the share of games won by player 0 and drawn, resignations).

    `parts` (default `make_components(config)`) lets an experiment swap a component, e.g. a network with another
    `conv_fn` (experiments/bench_train.py); it must keep the shapes `config` gives the run state.
    """
    parts = parts if parts is not None else make_components(config)
    if mesh is not None:
        check_divisible(config, mesh.size)
    return functools.partial(_train_iteration, parts=parts, config=config, mesh=mesh)


def _train_iteration(
    run_state: RunState, *, parts: Components, config: Config, mesh: Mesh | None
) -> tuple[RunState, dict]:
    selfplay_key, sgd_key, next_key = jax.random.split(run_state.key, 3)
    game = parts.game

    games_state, trajectory = selfplay.run_selfplay(
        selfplay_key,
        run_state.train_state.variables,
        split_batch(run_state.selfplay, mesh),
        game=game,
        search_fn=parts.search_fn,
        config=config.selfplay,
    )
    games_state, trajectory = split_batch(games_state, mesh), split_batch(trajectory, mesh, batch_axis=1)
    value_target, value_mask = selfplay.compute_value_targets(trajectory)
    flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731  [T, B, ...] -> [T * B, ...]
    positions = replay.Batch(
        observation=flat(trajectory.observation),
        policy_target=flat(trajectory.policy_target),
        value_target=flat(value_target),
    )
    buffer = replay.add(run_state.replay, positions, flat(value_mask))

    train_state, sgd_metrics = run_sgd_steps(
        sgd_key, run_state.train_state, buffer, parts=parts, config=config, mesh=mesh
    )

    metrics = {name: jnp.mean(values) for name, values in sgd_metrics.items()}
    metrics.update(_selfplay_metrics(trajectory, value_mask))
    metrics["replay_size"] = buffer.size
    metrics["params_finite"] = jnp.all(jnp.array([jnp.isfinite(x).all() for x in jax.tree.leaves(train_state)]))
    new_state = RunState(
        train_state=train_state,
        selfplay=games_state,
        replay=buffer,
        key=next_key,
        iteration=run_state.iteration + 1,
    )
    return new_state, metrics


def run_sgd_steps(
    key: jax.Array,
    train_state: TrainState,
    buffer: replay.ReplayBuffer,
    *,
    parts: Components,
    config: Config,
    mesh: Mesh | None = None,
) -> tuple[TrainState, dict]:
    """An iteration's `train.num_sgd_steps` SGD steps, a `lax.scan` over batches sampled from `buffer`.

    Returns the new train state and the per-step metrics ([num_sgd_steps] each).
    """

    def sgd_body(state: TrainState, step_key: jax.Array) -> tuple[TrainState, dict]:
        batch = replay.sample(step_key, buffer, config.train.batch_size, parts.game, augment=config.train.augment)
        return train_step(
            state, split_batch(batch, mesh), network=parts.network, optimizer=parts.optimizer, config=config.train
        )

    return jax.lax.scan(sgd_body, train_state, jax.random.split(key, config.train.num_sgd_steps))


def _selfplay_metrics(trajectory: selfplay.Trajectory, value_mask: jax.Array) -> dict:
    done = trajectory.terminated
    num_done = jnp.sum(done)
    per_game = lambda x: jnp.sum(x) / jnp.maximum(num_done, 1)  # noqa: E731
    checked = jnp.sum(trajectory.would_have_resigned)
    return {
        "games_finished": num_done,
        "positions_added": jnp.sum(value_mask),
        "game_length": per_game(jnp.where(done, trajectory.move_number + 1, 0)),
        "player0_win_rate": per_game(done & (trajectory.rewards[..., 0] > 0)),
        "draw_rate": per_game(done & (trajectory.rewards[..., 0] == 0)),
        "resign_rate": per_game(trajectory.resigned),
        "resign_false_positive_rate": jnp.sum(trajectory.false_positive) / jnp.maximum(checked, 1),
    }
