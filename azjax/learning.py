"""Learning: the network's training state, the AlphaZero loss and one SGD step with any optax optimizer.

A loop that trains a network calls, per step, `sgd_step(train_state, batch, loss_fn=..., optimizer=...)`, where
`loss_fn(params, batch_stats, batch) -> (loss, (metrics, batch_stats))` is `compute_loss` with its network and
weights bound (`functools.partial`) or a loss of one's own, and `optimizer` any `optax.GradientTransformation`,
its learning-rate schedule included (`optax.adam(optax.cosine_decay_schedule(...))`). Value targets are for the
player to move at each position (`replay.Batch`), as the network's value is.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from flax import struct

from azjax import replay
from azjax.games import return_to_value
from azjax.networks import init_variables, value_head_of

LossFn = Callable[[dict, dict, replay.Batch], tuple[jax.Array, tuple[dict, dict]]]
"""(params, batch_stats, batch) -> (loss [], (metrics {name: []}, the updated batch_stats))."""


class TrainState(struct.PyTreeNode):
    """The network's variables and the optimizer's state, and optionally a moving average of the variables
    (`average`), which is then the network that plays (self-play, Reanalyse, evaluation, checkpoints' model)."""

    params: dict
    """The network's parameters (flax's "params" collection)."""
    batch_stats: dict
    """The batch-norm statistics (flax's "batch_stats" collection)."""
    opt_state: optax.OptState
    """The optimizer's state."""
    step: jax.Array
    """[] int32, SGD steps taken."""
    average: dict | None = None
    """{"params", "batch_stats"}: their exponential moving average, or None: not kept."""

    @property
    def variables(self) -> dict:
        """The trained network variables for `network.apply` (what SGD updates)."""
        return {"params": self.params, "batch_stats": self.batch_stats}

    @property
    def play_variables(self) -> dict:
        """The variables of the network that plays: the moving average where one is kept, else `variables`."""
        return self.average if self.average is not None else self.variables

    def with_variables(self, variables: dict) -> TrainState:
        """This state with the network's variables replaced (a warm start), its moving average, if kept, too."""
        average = None if self.average is None else jax.tree.map(jnp.copy, variables)
        return self.replace(params=variables["params"], batch_stats=variables["batch_stats"], average=average)


def init_train_state(key: jax.Array, network: nn.Module, optimizer: optax.GradientTransformation, *,
                     observation_shape: tuple[int, ...], average: bool = False) -> TrainState:
    """A fresh network (`networks.init_variables` for observations of `observation_shape`) and the optimizer's
    state for it; with `average`, a moving average of the variables starts at them (`sgd_step`'s `ema_decay`)."""
    variables = init_variables(network, key, observation_shape)
    return TrainState(
        params=variables["params"],
        batch_stats=variables["batch_stats"],
        opt_state=optimizer.init(variables["params"]),
        step=jnp.int32(0),
        average=jax.tree.map(jnp.copy, dict(variables)) if average else None,
    )


def kernels(params: dict) -> dict:
    """True for the convolution and dense kernels of a parameter tree: what weight decay and the L2 term act on."""
    return jax.tree_util.tree_map_with_path(lambda path, _: "kernel" in jax.tree_util.keystr(path), params)


def compute_loss(
    params: dict,
    batch_stats: dict,
    batch: replay.Batch,
    *,
    network: nn.Module,
    value_loss_weight: float = 1.0,
    weight_decay: float = 0.0,
    reply_policy_weight: float = 0.0,
    value_target_mix: float = 0.0,
    return_bounds: tuple[float, float] = (-1.0, 1.0),
    return_scaling: str = "linear",
) -> tuple[jax.Array, tuple[dict, dict]]:
    """The AlphaZero loss on a batch [N]: policy cross-entropy + `value_loss_weight` x value MSE + `weight_decay` x
    the L2 norm of the kernels (leave it 0 with an optimizer that decays weights itself, such as adamw).

    A network with a win/draw/loss value head (`networks.value_head_of(network) == "wdl"`) has the cross-entropy
    of its win/draw/loss logits against `replay.wdl_target` (with `value_target_mix`, the mix the value targets
    were made with) in the MSE's place (the metric "value_loss" stays the MSE of its value, "value_cross_entropy"
    is the term). With `reply_policy_weight` > 0 that weight x the cross-entropy of the opponent-reply head
    against `batch.reply_target` is added. Each policy term averages over the positions that have its target: a
    fast search's (playout-cap randomisation) is all zeros and counts for nothing, as does the reply target of a
    game's last move.

    Value targets are returns in the game's units; `return_bounds` and `return_scaling` (`Game.return_bounds`,
    `Game.return_scaling`) map them into the network's [-1, 1] (`games.return_to_value`) before the MSE, which is
    then in the network's units.

    Returns the total loss and (metrics, updated batch-norm statistics: {} for a network without batch norm).
    """
    reply = reply_policy_weight > 0
    wdl = value_head_of(network) == "wdl"
    (logits, value), updates = network.apply(
        {"params": params, "batch_stats": batch_stats}, batch.observation, train=True,
        mutable=["batch_stats", "intermediates"] if reply or wdl else ["batch_stats"],
    )
    policy_loss = policy_cross_entropy(logits, batch.policy_target)
    value_loss = jnp.mean(jnp.square(value - return_to_value(return_bounds, batch.value_target, return_scaling)))
    value_term = value_loss
    kernel_leaves = jax.tree.leaves(jax.tree.map(lambda x, is_kernel: x if is_kernel else None, params,
                                                 kernels(params)))
    l2 = sum(jnp.sum(jnp.square(k)) for k in kernel_leaves)
    metrics = {"policy_loss": policy_loss, "value_loss": value_loss, "l2": l2}
    if wdl:
        (outcome_logits,) = updates["intermediates"]["value_logits"]
        if batch.outcome is None:
            raise ValueError("a win/draw/loss value head needs a replay made with outcomes=True")
        target = replay.wdl_target(batch.value_target, batch.outcome, value_target_mix)
        value_term = metrics["value_cross_entropy"] = jnp.mean(optax.softmax_cross_entropy(outcome_logits, target))
    total = policy_loss + value_loss_weight * value_term + weight_decay * l2
    metrics["loss"] = total
    if reply:
        (reply_logits,) = updates["intermediates"]["reply_logits"]
        if batch.reply_target is None:
            raise ValueError("reply_policy_weight > 0 needs a replay made with reply_targets=True")
        metrics["reply_policy_loss"] = policy_cross_entropy(reply_logits, batch.reply_target)
        total = total + reply_policy_weight * metrics["reply_policy_loss"]
        metrics["loss"] = total
    return total, (metrics, updates.get("batch_stats", batch_stats))


def policy_cross_entropy(logits: jax.Array, target: jax.Array) -> jax.Array:
    """The cross-entropy of `logits` [N, A] against `target` [N, A], averaged over the rows with a target (all-zero
    rows have none); when all have one, the factor is exactly 1 (the plain mean)."""
    cross_entropy = optax.softmax_cross_entropy(logits, target)  # 0 where there is no target
    with_target = jnp.sum(jnp.sum(target, axis=-1) > 0)
    return jnp.mean(cross_entropy) * (cross_entropy.shape[0] / jnp.maximum(with_target, 1))


def sgd_step(
    train_state: TrainState,
    batch: replay.Batch,
    *,
    loss_fn: LossFn,
    optimizer: optax.GradientTransformation,
    update_scale: jax.Array | float | None = None,
    ema_decay: jax.Array | float | None = None,
) -> tuple[TrainState, dict]:
    """One step of `optimizer` on the gradient of `loss_fn` on `batch`.

    Args:
      train_state: the network's variables and `optimizer`'s state (`init_train_state`).
      batch: the positions [N] (`replay.sample`).
      loss_fn: `(params, batch_stats, batch) -> (loss, (metrics, batch_stats))`: `compute_loss` with its keyword
        arguments bound, or one's own.
      optimizer: any optax transformation; its own schedules set the learning rate.
      update_scale: multiplies the optimizer's updates (the built-in loop runs its optimizer at a unit learning
        rate and scales by a schedule over its budget, `training.learning_rate`); None: the updates as they are.
      ema_decay: with a moving average kept (`TrainState.average`), its decay at this step: the average becomes
        decay x average + (1 - decay) x the new variables.
    Returns:
      The new state and the loss's metrics, with "grad_norm".
    """
    grads, (metrics, batch_stats) = jax.grad(loss_fn, has_aux=True)(train_state.params, train_state.batch_stats,
                                                                     batch)
    updates, opt_state = optimizer.update(grads, train_state.opt_state, train_state.params)
    if update_scale is not None:
        updates = jax.tree.map(lambda u: (update_scale * u).astype(u.dtype), updates)
    new_state = TrainState(
        params=optax.apply_updates(train_state.params, updates),
        batch_stats=batch_stats,
        opt_state=opt_state,
        step=train_state.step + 1,
    )
    if train_state.average is not None:
        if ema_decay is None:
            raise ValueError("this train state keeps a moving average: pass sgd_step its ema_decay")
        new_state = new_state.replace(average=optax.incremental_update(
            new_state.variables, train_state.average, 1.0 - ema_decay))
    metrics["grad_norm"] = optax.tree.norm(grads)
    return new_state, metrics
