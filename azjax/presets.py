"""Presets: the configs `get_config(game, preset)` gives, "cpu" (a 2-core CPU) and "gpu" (one accelerator), per
game of the catalog (`PRESETS`), and the preset derived for any other game from its sizes (`derived_preset`).

Each preset's comment says what it was measured against, or that it was not. This module imports `azjax.config`;
`azjax.config` never imports it. `azjax.get_config` is `get_config`.
"""

from __future__ import annotations

import dataclasses
import math
import typing

from azjax.config import (
    Config,
    ConfigError,
    NetworkConfig,
    SearchConfig,
    SelfPlayConfig,
    TrainConfig,
    UnknownGameError,
    with_overrides,
)
from azjax.text import counted

# Every preset trains SAMPLES_PER_POSITION SGD samples per played position where it drops unfinished games, the
# ratio measured on the CPU (experiments/results/replay_ratio.md), and twice it where it keeps them: then every
# played position reaches replay instead of about half (Connect Four), and the samples per position in replay stay
# alike. The GPU presets and the CPU presets but tic-tac-toe's keep them. An SGD sample costs about three network
# evaluations (a backward pass counted as two) against a played position's S + 1 in self-play: with 4 samples at 32
# simulations about a quarter of an iteration's evaluations (12 of 45), with 2 at 128 simulations 4%.
SAMPLES_PER_POSITION = 2


def samples_per_played_position(selfplay: SelfPlayConfig) -> int:
    """The SGD samples per played position that the presets take (`num_sgd_steps x batch_size / (num_games x
    num_steps)`): SAMPLES_PER_POSITION when unfinished games are dropped (about half the played positions reach
    replay in Connect Four), twice it when they are kept (all of them do), which keeps the samples per position in
    replay alike."""
    return SAMPLES_PER_POSITION * (2 if selfplay.keep_unfinished else 1)


# The training Connect Four's CPU preset arrived at (its comment has each lever's measurement), which also won on
# Othello 6 x 6, Gomoku 9 x 9, Brandub and tic-tac-toe (their presets' comments) and which every CPU preset and the
# derived one take: SGD batches of 128, a cosine from 6e-3 over the run's budget, value targets half the game's
# outcome and half the search's value, half of each batch drawn by policy surprise. The CPU presets but
# tic-tac-toe's pair it with selfplay.keep_unfinished, all with `samples_per_played_position`'s SGD steps; the GPU
# presets take it in larger batches (GPU_TRAIN).
CPU_TRAIN = TrainConfig(batch_size=128, learning_rate=6e-3, lr_schedule="cosine", value_target_mix=0.5,
                        policy_surprise_weight=0.5)


def _preset_tic_tac_toe_cpu() -> Config:
    # Tuned for `azjax train` on a 2-core CPU: near-perfect play within the 3-minute budget. Random openings cover
    # the positions after blunders; 128 SGD steps of 128 per iteration train on each position ~2 times. CPU_TRAIN
    # (unfinished games still dropped: a game of at most 9 moves rarely outlasts an iteration) against batches of 256
    # at a constant 1e-3, 60 iterations each (82 s against 83 s): the network's move optimal in 100% and 99.93% of
    # the 4520 positions against 99.45% and 99.23% (seeds 0, 1; experiments/results/learns_cpu.txt).
    return Config(
        game="tic_tac_toe",
        num_iterations=60,
        network=NetworkConfig(num_blocks=2, num_channels=16),
        search=SearchConfig(num_simulations=16),
        selfplay=SelfPlayConfig(num_games=256, num_steps=32, opening_moves=6),
        train=dataclasses.replace(CPU_TRAIN, num_sgd_steps=128, replay_capacity=32768),
    )


def _preset_connect_four_cpu() -> Config:
    # Each lever against the preset before it, three seeds each at 10 minutes of training unless said (every row:
    # experiments/results/connect_four_strength_cpu.txt). Optimal top moves on the labelled positions, then the
    # score against UCT-400, each as after | before:
    #   value targets half outcome, half the search's value, lr 2e-3
    #     (from outcomes alone and 1e-3; 230 iterations)             87.1-87.8% | 82.4-84.8%   0.80-0.83 | 0.70-0.75
    #   half of each batch drawn by policy surprise                  88.7-89.1% | 86.7%        0.80-0.83 | 0.75
    #   lr 3e-3 over 2e-3                                            89.2-90.0% | 88.7-89.2%   0.825-0.855 | 0.795-0.833
    #   a cosine over the run's budget from 6e-3 (from a constant)   91.4-92.1% | 90.2-90.3%   0.875-0.940 | 0.845-0.875
    #   unfinished games kept (every played position to replay,
    #     100% trained on against 48-49%), twice the SGD steps       89.7-90.6% | 90.4-91.2%   0.853-0.882 | 0.812-0.873
    #   games start after 0-10 random moves (from 0-4)               92.2-92.9% | 90.1-90.9%   0.882-0.930 | 0.870-0.885
    #   0-14 random moves (from 0-10; five pairs)                    92.9-93.6% | 92.2-92.8%   0.875-0.925 | 0.877-0.930
    #   batches of 128 in 128 SGD steps (from 256 in 64: the same
    #     samples and time per iteration, twice the updates)         93.9-94.5% | 93.1-93.6%   0.892-0.927 | 0.875-0.925
    #   a value head of 4 channels and 256 units (from 1 and 64;
    #     86 iterations against 91, an iteration costing 1.06 x:
    #     600 s of a 2-core Xeon; the last column head to head
    #     against the preset run of the same seed, 200 games)        93.9-94.5% | 93.9-94.1%   0.547-0.562
    # Keeping unfinished games cost 0.6 points on the labelled positions and won against UCT-400 and on the empty
    # board (its centre with 0.98-0.99 of the prior in every seed); the openings of 0-10 moves won most on the hard
    # positions near the start (begin-hard 83.4-84.5% against 80.6-82.2%). The cosine's "before" had two seeds, the
    # five pairs of 0-14 two runs at equal iterations. The larger value head is level on the positions (begin-hard
    # 82.8-83.8% against 82.8-84.5%) and won every match, 0.554 [0.513, 0.595] of the three together (at equal
    # iterations too: 0.535-0.580; experiments/results/connect_four_budget_cpu.md). Its cost, 1.06 x beside another
    # training, was 1.00 x alone in turns (6.82 s against 6.85 s); one seed at 600 s each, one run after the other,
    # lost 0.390 in 71 iterations against 87 that the machine's changing speed gave it. The rows are of different days
    # and machines: compare within a row.
    return Config(
        game="connect_four",
        num_iterations=300,
        network=NetworkConfig(num_blocks=2, num_channels=32, value_channels=4, value_hidden=256),
        search=SearchConfig(num_simulations=16),
        selfplay=SelfPlayConfig(num_games=128, num_steps=32, opening_moves=14, keep_unfinished=True),
        train=dataclasses.replace(CPU_TRAIN, num_sgd_steps=128, replay_capacity=65536),
    )


def _preset_gomoku9_cpu() -> Config:
    # 9 x 9 Gomoku: 81 actions, random games last about 55 moves. CPU_TRAIN with unfinished games kept, against the
    # preset before (batches of 256, a constant 1e-3, games dropped), 5 minutes each, head to head from the same
    # seed: 0.740 [0.675, 0.796] and 0.980 [0.950, 0.992] (seeds 0, 1); against UCT-400 0.990 against 0.970 (seed 0;
    # experiments/results/learns_cpu.txt).
    return Config(
        game="gomoku9",
        num_iterations=200,
        network=NetworkConfig(num_blocks=2, num_channels=32),
        search=SearchConfig(num_simulations=32),
        selfplay=SelfPlayConfig(num_games=128, num_steps=32, keep_unfinished=True),
        train=dataclasses.replace(CPU_TRAIN, num_sgd_steps=128, replay_capacity=65536),
    )


def _preset_othello6_cpu() -> Config:
    # 6 x 6 Othello: 37 actions (the pass included), games last about 32 moves. CPU_TRAIN with unfinished games kept,
    # against the preset before (batches of 256, a constant 1e-3, games dropped), 5 minutes each, head to head from
    # the same seed: 0.740 [0.671, 0.799] and 0.757 [0.689, 0.815] (seeds 0, 1); against UCT-400 0.828 against 0.657
    # (seed 0; experiments/results/learns_cpu.txt).
    return Config(
        game="othello6",
        num_iterations=200,
        network=NetworkConfig(num_blocks=2, num_channels=32),
        search=SearchConfig(num_simulations=32),
        selfplay=SelfPlayConfig(num_games=128, num_steps=32, keep_unfinished=True),
        train=dataclasses.replace(CPU_TRAIN, num_sgd_steps=128, replay_capacity=65536),
    )


def _preset_brandub_cpu() -> Config:
    # Brandub: 1176 actions (from-square x direction x distance), random games last about 50 moves, 200 at most.
    # CPU_TRAIN with unfinished games kept, against the preset before (batches of 256, a constant 1e-3, games
    # dropped), 5 minutes each, head to head from the same seed: 0.895 [0.845, 0.930] and 0.805 [0.745, 0.854] (seeds
    # 0, 1); over random 198/0/2 and 193/0/7 against 177/2/21 and 186/1/13, over the first checkpoint 188/6/6 and
    # 172/6/22 against 139/0/61 and 152/14/34 (experiments/results/learns_cpu.txt).
    return Config(
        game="brandub",
        num_iterations=200,
        network=NetworkConfig(num_blocks=3, num_channels=32),
        search=SearchConfig(num_simulations=32),
        selfplay=SelfPlayConfig(num_games=64, num_steps=32, keep_unfinished=True),
        train=dataclasses.replace(CPU_TRAIN, num_sgd_steps=64, replay_capacity=32768),
    )


# ------------------------------------------------------------------------------------------------------------
# GPU presets


# CPU_TRAIN in batches of 1024, the GPU presets' training: a cosine from 6e-3 over the run's budget, value targets
# half the game's outcome and half the search's value, half of each batch drawn by policy surprise. Not yet measured
# on an accelerator: the batch is 8 x the CPU's, since an iteration here plays 16k-66k positions (512-2048 SGD
# steps of 128 at 4 samples each); the peak learning rate is the CPU's (batch-normalised layers; on the CPU 8e-3
# was no better and a constant 2e-3 or 3e-3 worse). `python experiments/gpu_sweep.py --set
# train.learning_rate=3e-3` tries another.
GPU_TRAIN = dataclasses.replace(CPU_TRAIN, batch_size=1024)

# The GPU presets take the CPU's lessons at an accelerator's batch: GPU_TRAIN, unfinished games kept (so 4 SGD
# samples per played position, `samples_per_played_position`), the CPU preset's random openings where it has them,
# and short iterations: 32 simulations and 16 moves a game, so that the network is refreshed every second or two
# (fresher networks won at equal time on the CPU) instead of every ~30 s as with Connect Four's preset before.
# Measured on one H200 (2026-11-27, experiments/results/gpu-nvidia-h200-2026-11-27.md): 1.82 s an iteration for
# Connect Four, 1.60 Othello, 1.42 Gomoku, 1.10 Brandub, each compiled in 23-27 s; tic-tac-toe's is not measured.
# They were chosen by estimates (below, each preset's) from the figures of one H200
# (experiments/results/gpu-nvidia-h200-2026-11-26.md; Connect Four, 6 x 128 bfloat16, Gumbel): self-play of 4096
# games at 32 simulations 60.6k positions/s (so 1.08 s for 4096 games x 16 moves, the suite's own call), of 1024
# games 29.1k, of 4096 games at 128 simulations 9.9k; 120 MFLOP per network evaluation, of which self-play achieved
# 115 TFLOP/s with 1024 games and 240 with 4096; SGD 285.6 steps/s in batches of 2048 (585k samples/s, a sample
# about three evaluations). Other boards and networks are scaled by their FLOPs per evaluation (blocks x channels^2
# x cells against 6 x 128^2 x 42) between those two achieved rates, and a step of 1024 takes between half a step of
# 2048 and a whole one; the search's own work over many actions (Gomoku's 225, Brandub's 1176) is not in the
# estimate. `python experiments/gpu_sweep.py` measures a preset against variants of it on an accelerator.


def _gpu_train(selfplay: SelfPlayConfig, replay_capacity: int) -> TrainConfig:
    """GPU_TRAIN with `samples_per_played_position`'s SGD steps for `selfplay`, and `replay_capacity`."""
    samples = samples_per_played_position(selfplay) * selfplay.num_games * selfplay.num_steps
    return dataclasses.replace(GPU_TRAIN, num_sgd_steps=max(1, samples // GPU_TRAIN.batch_size),
                               replay_capacity=replay_capacity)


def _preset_tic_tac_toe_gpu() -> Config:
    # The CPU preset's openings of 0-6 random moves; unfinished games kept, unlike on the CPU (not measured there
    # with them kept), since 16 moves an iteration cut more games short than its 32. Estimate (see above): a 2 x 32
    # network on 9 cells is 1/200 of the measured FLOPs, so the search's fixed costs decide; taken at most those of
    # the measured 1024 games, self-play of 1024 x 16 moves <= 0.56 s and 64 SGD steps <= 0.22 s: <= 0.8 s an
    # iteration, the 300 iterations within 4 minutes.
    selfplay = SelfPlayConfig(num_games=1024, num_steps=16, opening_moves=6, keep_unfinished=True)
    return Config(
        game="tic_tac_toe",
        num_iterations=300,
        network=NetworkConfig(num_blocks=2, num_channels=32),
        search=SearchConfig(num_simulations=32),
        selfplay=selfplay,
        train=_gpu_train(selfplay, replay_capacity=32768),  # 1024 x (16 + 9) = 25,600 positions may wait
    )


def _preset_connect_four_gpu() -> Config:
    # The preset before (6 x 128, 128 simulations, 4096 games x 64 moves, 256 SGD steps of 2048 at a constant 2e-3,
    # unfinished games dropped), on one H200 (2026-11-26): 28-31 s an iteration, after 7 iterations (229 s) 91.4%
    # optimal top moves from the network and 97.1% from its search on the labelled positions, no faster per second
    # than the CPU preset on 2 cores; it is experiments/gpu_sweep.py's variant "old". This one keeps the network and
    # the CPU preset's openings of 0-14 random moves. Its estimate (see above): self-play of 4096 games x
    # 16 moves at 32 simulations is the measured call, 1.08 s; 256 SGD steps of 1024 (262,144 samples) 0.45-0.90 s;
    # about 1.5-2 s an iteration, 150-200 in 5 minutes (the preset before: 10), the 400 iterations 10-13 minutes.
    # Measured on one H200 (2026-11-27, experiments/results/gpu-nvidia-h200-2026-11-27.md): 1.82 s an iteration,
    # 144 in `--seconds 300` (compiled in 25 s): the network's top move optimal in 97.2% of the labelled positions,
    # its search's (32 simulations) in 98.6%, the centre first; 0.762 over 200 games against the shipped agent of
    # 43 minutes on 2 CPU cores. At 45 s each it beat the preset before 95-0-5, and "short" (8 moves an iteration)
    # was even with it (gpu_sweep.py; ...-sweep-connect_four.md), so it stays.
    selfplay = SelfPlayConfig(num_games=4096, num_steps=16, opening_moves=14, keep_unfinished=True)
    return Config(
        game="connect_four",
        num_iterations=400,
        network=NetworkConfig(num_blocks=6, num_channels=128, compute_dtype="bfloat16"),
        search=SearchConfig(num_simulations=32),
        selfplay=selfplay,
        # 4096 x (16 + 42) = 237,568 positions may wait for their game's end; twice that, 8 iterations' worth.
        train=_gpu_train(selfplay, replay_capacity=524_288),
    )


def _preset_gomoku_gpu() -> Config:
    # Measured (one H200, 2026-11-27): 1.42 s an iteration, compiled in 23 s; strength not yet measured there.
    # 15 x 15 Gomoku: 225 actions, games of up to 225 moves. Its estimate (see above): a 6 x 96 network
    # on 225 cells is 3.0 x the measured FLOPs per evaluation; self-play of 1024 games x 16 moves at 32 simulations
    # (196 TFLOP) 0.8-1.7 s, 64 SGD steps of 1024 0.34-0.67 s: 1.1-2.4 s an iteration without the search's work
    # over 225 actions, the 400 iterations 8-16 minutes.
    selfplay = SelfPlayConfig(num_games=1024, num_steps=16, keep_unfinished=True)
    return Config(
        game="gomoku",
        num_iterations=400,
        network=NetworkConfig(num_blocks=6, num_channels=96, compute_dtype="bfloat16"),
        search=SearchConfig(num_simulations=32),
        selfplay=selfplay,
        train=_gpu_train(selfplay, replay_capacity=262_144),  # 1024 x (16 + 225) = 246,784 may wait
    )


def _preset_othello_gpu() -> Config:
    # Measured (one H200, 2026-11-27): 1.60 s an iteration, compiled in 27 s; strength not yet measured there.
    # 8 x 8 Othello: 65 actions (the pass included), games last about 60 moves, 120 at most. Its estimate
    # (see above): a 6 x 128 network on 64 cells is 1.5 x the measured FLOPs per evaluation; self-play of 2048
    # games x 16 moves at 32 simulations (198 TFLOP) 0.8-1.7 s, 128 SGD steps of 1024 0.34-0.68 s: 1.2-2.4 s an
    # iteration, the 400 iterations 8-16 minutes.
    selfplay = SelfPlayConfig(num_games=2048, num_steps=16, keep_unfinished=True)
    return Config(
        game="othello",
        num_iterations=400,
        network=NetworkConfig(num_blocks=6, num_channels=128, compute_dtype="bfloat16"),
        search=SearchConfig(num_simulations=32),
        selfplay=selfplay,
        train=_gpu_train(selfplay, replay_capacity=524_288),  # 2048 x (16 + 120) = 278,528 may wait
    )


def _preset_brandub_gpu() -> Config:
    # Measured (one H200, 2026-11-27): 1.10 s an iteration, compiled in 23 s; strength not yet measured there.
    # Brandub: 1176 actions, games of up to 200 moves. The search tree holds [B, simulations + 1, 1176] arrays
    # (about 160 MB each here) and a replay position takes ~6 KB (its 1176-way policy): 1024 games and a buffer of
    # 262,144 positions (1.6 GB). Its estimate (see above): a 6 x 128 network on 49 cells is 1.2 x the
    # measured FLOPs per evaluation; self-play of 1024 games x 16 moves at 32 simulations (76 TFLOP) 0.3-0.7 s, 64
    # SGD steps of 1024 0.13-0.26 s: 0.5-0.9 s an iteration without the search's work over 1176 actions, which may
    # well be the larger part.
    selfplay = SelfPlayConfig(num_games=1024, num_steps=16, keep_unfinished=True)
    return Config(
        game="brandub",
        num_iterations=400,
        network=NetworkConfig(num_blocks=6, num_channels=128, compute_dtype="bfloat16"),
        search=SearchConfig(num_simulations=32),
        selfplay=selfplay,
        train=_gpu_train(selfplay, replay_capacity=262_144),  # 1024 x (16 + 200) = 221,184 may wait
    )


PRESETS: dict[tuple[str, str], typing.Callable[[], Config]] = {
    ("tic_tac_toe", "cpu"): _preset_tic_tac_toe_cpu,
    ("tic_tac_toe", "gpu"): _preset_tic_tac_toe_gpu,
    ("connect_four", "cpu"): _preset_connect_four_cpu,
    ("connect_four", "gpu"): _preset_connect_four_gpu,
    ("brandub", "cpu"): _preset_brandub_cpu,
    ("brandub", "gpu"): _preset_brandub_gpu,
    ("gomoku9", "cpu"): _preset_gomoku9_cpu,
    ("gomoku", "gpu"): _preset_gomoku_gpu,
    ("othello6", "cpu"): _preset_othello6_cpu,
    ("othello", "gpu"): _preset_othello_gpu,
}


def get_config(game: str = "tic_tac_toe", preset: str = "cpu") -> Config:
    """The preset config of a game: "cpu" (small, trains on a laptop) or "gpu" (thousands of parallel games).

    The catalog's games have presets of their own; a game registered with `presets=` gets those; any other game
    (or preset not given) gets `derived_preset`, built from the game's sizes. `preset_origin` says which.
    """
    return _preset(game, preset)[0]


def preset_origin(game: str, preset: str = "cpu") -> str:
    """Where `get_config(game, preset)` comes from, in words, for a run to print."""
    return _preset(game, preset)[1]


def derived_preset(game: str, preset: str = "cpu") -> Config:
    """A preset for a game without one, from its declared sizes (board cells, actions, maximum length).

    "cpu" aims at an iteration of a few seconds on a 2-core CPU, like the catalog's CPU presets: a 2 x 32 ResNet,
    16 simulations (32 on boards of more than 64 cells), 128 games (64 with more than 512 actions, whose search
    tree and replay policies are large) of 32 moves, 100 iterations, and their training (`CPU_TRAIN`: SGD batches of
    128, a cosine from 6e-3, value targets half outcome and half search value, policy-surprise draws) with
    unfinished games kept: 4 SGD samples per played position (`samples_per_played_position`). "gpu" keeps the shape
    the catalog's GPU presets had before they took the CPU's lessons (experiments/gpu_sweep.py sets the two against
    each other on Connect Four): a 6 x 128 bfloat16 ResNet, 64 simulations, 2048 games (512 with more than 512
    actions) of 64 moves, SGD batches of 2048 at a constant 2e-3, unfinished games dropped: 2 samples per played
    position. The replay buffer holds every game's moves of an iteration and of its longest game, as a power of
    two.
    """
    from azjax import games  # late: presets must not build games at import time

    built = games.make(game)
    cells = int(math.prod(built.observation_shape[:-1])) if len(built.observation_shape) > 1 else 1
    many_actions = built.num_actions > 512
    if preset == "gpu":
        num_games, num_steps = (512 if many_actions else 2048), 64
        network = NetworkConfig(num_blocks=6, num_channels=128, compute_dtype="bfloat16")
        search = SearchConfig(num_simulations=64, max_num_considered_actions=min(32, built.num_actions))
        train = TrainConfig(batch_size=2048, learning_rate=2e-3)
        num_iterations = 400
    else:
        num_games, num_steps = (64 if many_actions else 128), 32
        network = NetworkConfig(num_blocks=2, num_channels=32)
        search = SearchConfig(num_simulations=16 if cells <= 64 else 32)
        train = CPU_TRAIN
        num_iterations = 100
    capacity = max(2 ** math.ceil(math.log2(num_games * (num_steps + built.max_length))), 4 * train.batch_size)
    selfplay = SelfPlayConfig(num_games=num_games, num_steps=num_steps, keep_unfinished=preset != "gpu")
    sgd_steps = max(1, samples_per_played_position(selfplay) * num_games * num_steps // train.batch_size)
    return Config(
        game=game,
        num_iterations=num_iterations,
        network=network,
        search=search,
        selfplay=selfplay,
        train=dataclasses.replace(train, replay_capacity=capacity, num_sgd_steps=sgd_steps),
    )


def _preset(game: str, preset: str) -> tuple[Config, str]:
    from azjax import games  # late: presets must not build games at import time

    if preset not in ("cpu", "gpu"):
        raise ConfigError(f"preset must be 'cpu' or 'gpu', got {preset!r}")
    factory = PRESETS.get((game, preset))
    if factory is not None:
        return factory().validate(), f"{game}'s own {preset} preset"
    try:
        given = games.presets(game).get(preset)
    except games.GameNotFoundError as error:
        raise UnknownGameError(f"game: {error}") from None
    if isinstance(given, Config):
        return dataclasses.replace(given, game=game).validate(), f"the {preset} preset registered with {game}"
    derived = derived_preset(game, preset)
    if given is not None:
        config = with_overrides(derived, dict(given))  # the sizes named are these, what the run trains
        changes = ", ".join(f"{name}={value}" for name, value in dict(given).items())
        return config, (
            f"the {preset} preset registered with {game}: {_sizes_text(config)} (its overrides {changes} "
            f"on the preset derived from its sizes)"
        )
    return derived.validate(), (
        f"{game} has no {preset} preset of its own, so one derived from its sizes (azjax.presets.derived_preset): "
        f"{_sizes_text(derived)}; register presets with games.register(..., presets=...) or pass --config FILE"
    )


def _sizes_text(config: Config) -> str:
    net, search, play = config.network, config.search, config.selfplay
    return (f"a {net.num_blocks} x {net.num_channels} network, {counted(search.num_simulations, 'simulation')}, "
            f"{counted(play.num_games, 'game')} x {counted(play.num_steps, 'move')}, "
            f"{counted(config.train.num_sgd_steps, 'SGD step')} of {config.train.batch_size}, "
            f"{counted(config.num_iterations, 'iteration')}")
