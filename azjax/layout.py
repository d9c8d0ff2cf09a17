"""The devices a training run uses: as many as split its batches evenly, but one CPU device where the network is
too small for the split to pay."""

from __future__ import annotations

import math

import jax

from azjax import parallel
from azjax.config import Config, ConfigError
from azjax.training import split_batches

# Splitting a CPU run over one jax device per core pays only when each batched network evaluation is large, as
# XLA already spreads one device's convolutions over the cores (measured:
# experiments/benchmarks/results/, bench_layout).
CPU_SPLIT_MIN_MACS = 100e6


def evaluation_macs(config: Config, board_cells: int) -> float:
    """Multiply-adds of the network's 3x3 convolutions in one evaluation of all `selfplay.num_games` positions
    (the stem and two per residual block; the heads are small beside them), on a board of `board_cells` cells."""
    net = config.network
    return config.selfplay.num_games * board_cells * 9 * net.num_channels**2 * (2 * net.num_blocks + 1)


def default_layout(config: Config, devices: list[jax.Device] | None = None, *,
                   own_network: bool = False) -> tuple[list[jax.Device], str]:
    """The devices a run uses when none are asked for, and why: of `devices` (default `jax.devices()`), as many
    as divide the batches evenly; on a CPU, one device when the network's evaluations are too small to gain from
    the split (below CPU_SPLIT_MIN_MACS multiply-adds, measured by experiments/benchmarks/bench_layout.py), and for a
    network of one's own (`config.network.module`, or `own_network`: one given to `train`), whose cost the rule does not
    know."""
    chosen = parallel.most_devices(*split_batches(config).values(), devices=devices)
    platform = chosen[0].platform
    if len(chosen) == 1:
        return chosen, f"one {platform} device"
    if platform != "cpu":
        return chosen, f"{len(chosen)} {platform} devices, the games and the SGD batch split over them"
    if own_network or config.network.module:
        return chosen[:1], ("one CPU device: XLA spreads one device's work over the cores, and the rule that splits "
                            "a CPU run knows the ResNet's cost, not your network's; --devices N splits it")

    cells = math.prod(config.make_game().observation_shape[:-1])
    macs = evaluation_macs(config, cells)
    if macs < CPU_SPLIT_MIN_MACS:
        return chosen[:1], (
            f"one CPU device: a network evaluation of the {config.selfplay.num_games} games is "
            f"{macs / 1e6:.0f}M multiply-adds, below the {CPU_SPLIT_MIN_MACS / 1e6:.0f}M at which splitting over "
            "the cores pays (XLA spreads one device's convolutions over them); --devices overrides"
        )
    return chosen, (
        f"{len(chosen)} CPU devices (one per core): a network evaluation of the {config.selfplay.num_games} games is "
        f"{macs / 1e6:.0f}M multiply-adds, enough for the split to pay; --devices overrides"
    )


def run_devices(config: Config, num_devices: int | None = None) -> list[jax.Device]:
    """The devices a run uses: `num_devices` of `jax.devices()`, or (None) `default_layout(config)`'s.

    Raises:
      ConfigError: `num_devices` is < 1, more than there are, or does not divide `selfplay.num_games` and
        `train.batch_size`.
    """
    if num_devices is None:
        return default_layout(config)[0]
    try:
        return parallel.choose_devices(num_devices, split_batches(config))
    except ValueError as error:
        raise ConfigError(str(error)) from None

