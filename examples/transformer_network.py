"""A network of your own: a small transformer whose tokens are the board's cells.

Each cell's planes (observation [B, H, W, C], from the side to move) become a token, plus a learnt position
embedding; a few pre-norm self-attention blocks mix them; the policy reads the mean token and the value a learnt
summary token. Outputs as the network contract asks: logits [B, A] and a value [B] in [-1, 1], both float32 and
for the player to move. From the repository root::

    azjax train --game connect_four --network examples/transformer_network.py:make_transformer --out runs/c4-tf
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import linen as nn


class Block(nn.Module):
    """Pre-norm self-attention and an MLP, each with a residual connection."""

    width: int
    num_heads: int

    @nn.compact
    def __call__(self, tokens: jax.Array) -> jax.Array:
        attended = nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(nn.LayerNorm()(tokens))
        tokens = tokens + attended
        hidden = nn.gelu(nn.Dense(2 * self.width)(nn.LayerNorm()(tokens)))
        return tokens + nn.Dense(self.width)(hidden)


class CellTransformer(nn.Module):
    """Tokens [B, 1 + cells, width]: a summary token, then one per cell of the board."""

    num_actions: int
    width: int = 32
    num_blocks: int = 2
    num_heads: int = 4

    @nn.compact
    def __call__(self, observations: jax.Array, train: bool = False) -> tuple[jax.Array, jax.Array]:
        del train  # no batch norm, no dropout
        batch = observations.shape[0]
        cells = observations.reshape(batch, -1, observations.shape[-1]).astype(jnp.float32)  # [B, H*W, C]
        tokens = nn.Dense(self.width)(cells)
        tokens = tokens + self.param("position", nn.initializers.normal(0.02), tokens.shape[1:])
        summary = jnp.broadcast_to(self.param("summary", nn.initializers.normal(0.02), (1, 1, self.width)),
                                   (batch, 1, self.width))
        tokens = jnp.concatenate([summary, tokens], axis=1)
        for _ in range(self.num_blocks):
            tokens = Block(self.width, self.num_heads)(tokens)
        tokens = nn.LayerNorm()(tokens)
        logits = nn.Dense(self.num_actions)(tokens[:, 1:].mean(axis=1))
        value = jnp.tanh(nn.Dense(1)(nn.relu(nn.Dense(self.width)(tokens[:, 0]))))[:, 0]
        return logits, value


def make_transformer(*, num_actions: int, observation_shape: tuple[int, ...]) -> CellTransformer:
    """The factory `--network examples/transformer_network.py:make_transformer` names: one token per cell of
    observations [H, W, C]."""
    if len(observation_shape) != 3:
        raise ValueError(f"the cell transformer takes observations of shape [H, W, C], got {observation_shape}")
    return CellTransformer(num_actions=num_actions)
