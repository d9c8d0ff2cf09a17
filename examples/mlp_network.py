"""A network of your own: a small MLP over the flattened observation, the simplest module azjax trains.

The network contract: a Flax module whose `__call__(observations, train=False)` maps observations
[B, *observation_shape] (from the side to move) to policy logits [B, A] (float32, every action: azjax masks the
illegal ones) and a value [B] (float32, in [-1, 1]: the expected outcome for the player to move). The factory
takes the game's sizes as keywords and returns the module. From the repository root::

    azjax train --game tic_tac_toe --network examples/mlp_network.py:make_mlp --out runs/ttt-mlp
    azjax eval runs/ttt-mlp random perfect          # the run recorded its network: nothing else to name
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import linen as nn


class MLP(nn.Module):
    """Dense layers with layer norm over the flattened board, a policy head and a tanh value head."""

    num_actions: int
    hidden: Sequence[int] = (128, 128)

    @nn.compact
    def __call__(self, observations: jax.Array, train: bool = False) -> tuple[jax.Array, jax.Array]:
        del train  # no batch norm, no dropout: the same in training and in play
        x = observations.reshape(observations.shape[0], -1).astype(jnp.float32)
        for width in self.hidden:
            x = nn.relu(nn.LayerNorm()(nn.Dense(width)(x)))
        logits = nn.Dense(self.num_actions)(x)
        value = jnp.tanh(nn.Dense(1)(x))[:, 0]
        return logits, value


def make_mlp(*, num_actions: int, observation_shape: tuple[int, ...]) -> MLP:
    """The factory `--network examples/mlp_network.py:make_mlp` names: an MLP for a game of these sizes."""
    del observation_shape  # Dense layers take their input size from the first batch
    return MLP(num_actions=num_actions, hidden=(128, 128))
