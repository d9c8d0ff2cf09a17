"""The AlphaZero ResNet (Flax linen): a conv stem, residual blocks, a policy head and a value head.

Input: observations float32 [B, H, W, C] (from the side to move). Output: policy logits float32 [B, A] over all
actions (legal or not; callers mask) and a value float32 [B] in [-1, 1], the expected outcome *for the player to
move*. Observations of rank 1 ([B, D], e.g. from a pgx game with a flat observation) are treated as [B, 1, 1, D].

Batch normalisation statistics live in the "batch_stats" collection: pass `train=True` (and
`mutable=["batch_stats"]`) when fitting, `train=False` in self-play and evaluation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import linen as nn

from azjax.config import NetworkConfig


class ResidualBlock(nn.Module):
    """Two 3x3 convolutions with batch norm and a skip connection."""

    num_channels: int
    dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, x: jax.Array, train: bool) -> jax.Array:
        norm = lambda: nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=self.dtype)  # noqa: E731
        y = nn.Conv(self.num_channels, (3, 3), use_bias=False, dtype=self.dtype)(x)
        y = nn.relu(norm()(y))
        y = nn.Conv(self.num_channels, (3, 3), use_bias=False, dtype=self.dtype)(y)
        y = norm()(y)
        return nn.relu(x + y)


class AlphaZeroNetwork(nn.Module):
    """The policy/value ResNet; see the module docstring for shapes and the value's perspective."""

    num_actions: int
    num_blocks: int = 2
    num_channels: int = 32
    value_hidden: int = 64
    dtype: jnp.dtype = jnp.float32  # computation dtype; parameters stay float32

    @nn.compact
    def __call__(self, observation: jax.Array, train: bool = False) -> tuple[jax.Array, jax.Array]:
        x = observation.astype(self.dtype)
        if x.ndim == 2:
            x = x[:, None, None, :]
        norm = lambda: nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=self.dtype)  # noqa: E731
        x = nn.Conv(self.num_channels, (3, 3), use_bias=False, dtype=self.dtype)(x)
        x = nn.relu(norm()(x))
        for _ in range(self.num_blocks):
            x = ResidualBlock(self.num_channels, self.dtype)(x, train)

        policy = nn.Conv(2, (1, 1), use_bias=False, dtype=self.dtype)(x)
        policy = nn.relu(norm()(policy)).reshape(x.shape[0], -1)
        logits = nn.Dense(self.num_actions, dtype=self.dtype)(policy)

        value = nn.Conv(1, (1, 1), use_bias=False, dtype=self.dtype)(x)
        value = nn.relu(norm()(value)).reshape(x.shape[0], -1)
        value = nn.relu(nn.Dense(self.value_hidden, dtype=self.dtype)(value))
        value = jnp.tanh(nn.Dense(1, dtype=self.dtype)(value))[:, 0]
        return logits.astype(jnp.float32), value.astype(jnp.float32)


def make_network(config: NetworkConfig, num_actions: int) -> AlphaZeroNetwork:
    """The network for a game with `num_actions` actions, sized by `config`."""
    return AlphaZeroNetwork(
        num_actions=num_actions,
        num_blocks=config.num_blocks,
        num_channels=config.num_channels,
        value_hidden=config.value_hidden,
        dtype=jnp.bfloat16 if config.compute_dtype == "bfloat16" else jnp.float32,
    )


def init_variables(network: AlphaZeroNetwork, key: jax.Array, observation_shape: tuple[int, ...]) -> dict:
    """The network's variables {"params": ..., "batch_stats": ...} for observations of `observation_shape`."""
    dummy = jnp.zeros((1, *observation_shape), jnp.float32)
    return dict(network.init(key, dummy, train=False))
