"""Presets: the configs `get_config(game, preset)` gives, "cpu" (a 2-core CPU) and "gpu" (one accelerator), per
game of the catalog (`PRESETS`), and the preset derived for any other game from its sizes (`derived_preset`).

Each preset's comment says what it is for; its measurements are in experiments/studies/presets/README.md. This module
imports `azjax.config`; `azjax.config` never imports it. `azjax.get_config` is `get_config`.
"""

from __future__ import annotations

import dataclasses
import functools
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

# SGD samples per played position where unfinished games are dropped; twice it where they are kept, as then every
# played position reaches replay instead of about half (measured: experiments/studies/presets/README.md).
SAMPLES_PER_POSITION = 2


def samples_per_played_position(selfplay: SelfPlayConfig) -> int:
    """The SGD samples per played position that the presets take (`num_sgd_steps x batch_size / (num_games x
    num_steps)`): SAMPLES_PER_POSITION when unfinished games are dropped (about half the played positions reach
    replay in Connect Four), twice it when they are kept (all of them do), which keeps the samples per position in
    replay alike."""
    return SAMPLES_PER_POSITION * (2 if selfplay.keep_unfinished else 1)


# The training every CPU preset and the derived one take (the levers Connect Four's preset arrived at, which won
# on the other games too: experiments/studies/presets/README.md): batches of 128, a cosine from 6e-3 over the run's
# budget, value targets half outcome and half search value, half of each batch drawn by policy surprise.
CPU_TRAIN = TrainConfig(batch_size=128, learning_rate=6e-3, lr_schedule="cosine", value_target_mix=0.5,
                        policy_surprise_weight=0.5)


def _preset_tic_tac_toe_cpu() -> Config:
    # Near-perfect play within the default run's budget on a 2-core CPU; random openings cover the positions after
    # blunders (measured: experiments/studies/presets/README.md).
    return Config(
        game="tic_tac_toe",
        num_iterations=60,
        network=NetworkConfig(num_blocks=2, num_channels=16),
        search=SearchConfig(num_simulations=16),
        selfplay=SelfPlayConfig(num_games=256, num_steps=32, opening_moves=6),
        train=dataclasses.replace(CPU_TRAIN, num_sgd_steps=128, replay_capacity=32768),
    )


def _preset_connect_four_cpu() -> Config:
    # Each lever was measured against the preset before it at 10 minutes of training, three seeds each
    # (experiments/studies/presets/README.md).
    return Config(
        game="connect_four",
        num_iterations=300,
        network=NetworkConfig(num_blocks=2, num_channels=32, value_channels=4, value_hidden=256),
        search=SearchConfig(num_simulations=16),
        selfplay=SelfPlayConfig(num_games=128, num_steps=32, opening_moves=14, keep_unfinished=True),
        train=dataclasses.replace(CPU_TRAIN, num_sgd_steps=128, replay_capacity=65536),
    )


def _preset_gomoku9_cpu() -> Config:
    # 9 x 9 Gomoku: 81 actions, random games last about 55 moves; CPU_TRAIN with unfinished games kept
    # (measured: experiments/studies/presets/README.md).
    return Config(
        game="gomoku9",
        num_iterations=200,
        network=NetworkConfig(num_blocks=2, num_channels=32),
        search=SearchConfig(num_simulations=32),
        selfplay=SelfPlayConfig(num_games=128, num_steps=32, keep_unfinished=True),
        train=dataclasses.replace(CPU_TRAIN, num_sgd_steps=128, replay_capacity=65536),
    )


def _preset_othello6_cpu() -> Config:
    # 6 x 6 Othello: 37 actions (the pass included), games last about 32 moves; CPU_TRAIN with unfinished games
    # kept (measured: experiments/studies/presets/README.md).
    return Config(
        game="othello6",
        num_iterations=200,
        network=NetworkConfig(num_blocks=2, num_channels=32),
        search=SearchConfig(num_simulations=32),
        selfplay=SelfPlayConfig(num_games=128, num_steps=32, keep_unfinished=True),
        train=dataclasses.replace(CPU_TRAIN, num_sgd_steps=128, replay_capacity=65536),
    )


def _preset_pig_cpu() -> Config:
    # Pig to 100: 2 actions, a die after every roll; games of sensible players last about 85 decisions. PUCT over
    # Stochastic MuZero's chance nodes (each expansion values the 6 faces at once). 4 simulations: more made the
    # same network's decisions worse (mean backups undervalue rolling, which keeps the turn, against holding, which
    # passes it); a value head of 32 channels (the observation is one cell: 1 channel squeezed the value through one
    # number). Measured: experiments/studies/pig/README.md. CPU_TRAIN, unfinished games kept.
    return Config(
        game="pig",
        num_iterations=500,
        network=NetworkConfig(num_blocks=2, num_channels=32, value_channels=32),
        search=SearchConfig(num_simulations=4, policy="puct", temperature_moves=0),
        selfplay=SelfPlayConfig(num_games=128, num_steps=32, keep_unfinished=True),
        train=dataclasses.replace(CPU_TRAIN, num_sgd_steps=64, replay_capacity=65536),
    )


def _preset_sliding_puzzle_cpu() -> Config:
    # The 8-puzzle: 4 actions, episodes of at most 40 moves, starts at every distance from the solution (the
    # game's random walks). A value head of 32 channels and 256 units (the value is the moves to go, a function of
    # every tile's place); value targets the search's own values (an unsolved episode's outcome says nothing of the
    # way); 8 SGD samples per played position from a replay of 16 iterations. Self-play searches with 16
    # simulations; the trained agent solves more boards with more (`azjax eval az:RUN:128`): the search decides
    # the last share solved. Measured: experiments/studies/sliding_puzzle/README.md.
    return Config(
        game="sliding_puzzle",
        num_iterations=300,
        network=NetworkConfig(num_blocks=2, num_channels=32, value_channels=32, value_hidden=256),
        search=SearchConfig(num_simulations=16),
        selfplay=SelfPlayConfig(num_games=128, num_steps=32, keep_unfinished=True),
        train=dataclasses.replace(CPU_TRAIN, value_target_mix=1.0, num_sgd_steps=256, replay_capacity=65536),
    )


def _preset_sliding_puzzle4_cpu() -> Config:
    # The 15-puzzle: the 8-puzzle's preset (its replay has room for 128 episodes of up to 120 moves, 4 times over).
    return _for_game(_preset_sliding_puzzle_cpu, "sliding_puzzle4")


def _preset_pgx_2048_cpu() -> Config:
    # pgx's 2048: one player, 4 moves, a tile drawn after each (32 outcomes, every one valued by the network when a
    # move is expanded, so a simulation costs 33 evaluations); games of hundreds of moves that pay thousands of
    # points. PUCT over the chance nodes at 8 simulations; unfinished games kept until they end (a game's positions
    # wait for its return), room for every game to its move limit. Measured: experiments/studies/pgx_chance/README.md.
    return Config(
        game="pgx:2048",
        num_iterations=300,
        network=NetworkConfig(num_blocks=2, num_channels=32, value_channels=4),
        search=SearchConfig(num_simulations=8, policy="puct"),
        selfplay=SelfPlayConfig(num_games=64, num_steps=32, keep_unfinished=True),
        train=dataclasses.replace(CPU_TRAIN, num_sgd_steps=64, replay_capacity=131072),
    )


def _preset_pgx_backgammon_cpu() -> Config:
    # pgx's backgammon: 156 micro-moves (a checker by one die), two to four a turn, the dice (21 rolls) thrown when
    # the turn ends; a game between random players lasts about 200 micro-moves (experiments/studies/pgx_chance/
    # results/). The observation is one cell of 34 features, so a value head of 32 channels (as Pig's); PUCT over the
    # chance nodes at 8 simulations; unfinished games kept. Measured: experiments/studies/pgx_chance/README.md.
    return Config(
        game="pgx:backgammon",
        num_iterations=300,
        network=NetworkConfig(num_blocks=2, num_channels=64, value_channels=32),
        search=SearchConfig(num_simulations=8, policy="puct"),
        selfplay=SelfPlayConfig(num_games=128, num_steps=32, keep_unfinished=True),
        train=dataclasses.replace(CPU_TRAIN, num_sgd_steps=128, replay_capacity=262144),
    )


def _preset_brandub_cpu() -> Config:
    # Brandub: 1176 actions (from-square x direction x distance), random games last about 50 moves, 200 at most;
    # CPU_TRAIN with unfinished games kept (measured: experiments/studies/presets/README.md).
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


# CPU_TRAIN in batches of 1024, the GPU presets' training; its peak learning rate is the CPU's
# (experiments/studies/presets/README.md).
# `python experiments/studies/gpu_sweep/gpu_sweep.py --set train.learning_rate=3e-3` tries another.
GPU_TRAIN = dataclasses.replace(CPU_TRAIN, batch_size=1024)

# The GPU presets take the CPU's lessons at an accelerator's batch: GPU_TRAIN, unfinished games kept, the CPU
# preset's random openings where it has them, and short iterations (32 simulations, 16 moves a game) so that the
# network is refreshed every second or two, as fresher networks won at equal time on the CPU. Sized from one
# accelerator's measured throughput (experiments/studies/presets/README.md);
# `python experiments/studies/gpu_sweep/gpu_sweep.py` measures variants.


def _gpu_train(selfplay: SelfPlayConfig, replay_capacity: int) -> TrainConfig:
    """GPU_TRAIN with `samples_per_played_position`'s SGD steps for `selfplay`, and `replay_capacity`."""
    samples = samples_per_played_position(selfplay) * selfplay.num_games * selfplay.num_steps
    return dataclasses.replace(GPU_TRAIN, num_sgd_steps=max(1, samples // GPU_TRAIN.batch_size),
                               replay_capacity=replay_capacity)


def _preset_tic_tac_toe_gpu() -> Config:
    # The CPU preset's openings of 0-6 random moves; unfinished games kept, since 16 moves an iteration cut more
    # games short than the CPU's 32 (experiments/studies/presets/README.md).
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
    # The CPU preset's openings of 0-14 random moves, at an accelerator's batch; it beat the preset before it
    # and a variant of 8 moves an iteration was even with it (experiments/studies/presets/README.md).
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
    # 15 x 15 Gomoku: 225 actions, games of up to 225 moves (experiments/studies/presets/README.md).
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
    # 8 x 8 Othello: 65 actions (the pass included), games last about 60 moves, 120 at most
    # (experiments/studies/presets/README.md).
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
    # Brandub: 1176 actions, games of up to 200 moves. The search tree holds [B, simulations + 1, 1176] arrays and a
    # replay position takes ~6 KB (its 1176-way policy): 1024 games and a buffer of 262,144 positions (1.6 GB)
    # (experiments/studies/presets/README.md).
    selfplay = SelfPlayConfig(num_games=1024, num_steps=16, keep_unfinished=True)
    return Config(
        game="brandub",
        num_iterations=400,
        network=NetworkConfig(num_blocks=6, num_channels=128, compute_dtype="bfloat16"),
        search=SearchConfig(num_simulations=32),
        selfplay=selfplay,
        train=_gpu_train(selfplay, replay_capacity=262_144),  # 1024 x (16 + 200) = 221,184 may wait
    )


def _for_game(preset: typing.Callable[[], Config], game: str) -> Config:
    # A variant of a catalog game with its sizes (board, actions, length): that game's preset, for it.
    return dataclasses.replace(preset(), game=game)


PRESETS: dict[tuple[str, str], typing.Callable[[], Config]] = {
    ("tic_tac_toe", "cpu"): _preset_tic_tac_toe_cpu,
    ("tic_tac_toe", "gpu"): _preset_tic_tac_toe_gpu,
    ("connect_four", "cpu"): _preset_connect_four_cpu,
    ("connect_four", "gpu"): _preset_connect_four_gpu,
    ("brandub", "cpu"): _preset_brandub_cpu,
    ("brandub", "gpu"): _preset_brandub_gpu,
    ("brandub_document", "cpu"): functools.partial(_for_game, _preset_brandub_cpu, "brandub_document"),
    ("brandub_document", "gpu"): functools.partial(_for_game, _preset_brandub_gpu, "brandub_document"),
    ("gomoku9", "cpu"): _preset_gomoku9_cpu,
    ("gomoku", "gpu"): _preset_gomoku_gpu,
    ("othello6", "cpu"): _preset_othello6_cpu,
    ("othello", "gpu"): _preset_othello_gpu,
    ("pig", "cpu"): _preset_pig_cpu,
    ("sliding_puzzle", "cpu"): _preset_sliding_puzzle_cpu,
    ("sliding_puzzle4", "cpu"): _preset_sliding_puzzle4_cpu,
    ("pgx:2048", "cpu"): _preset_pgx_2048_cpu,
    ("pgx:backgammon", "cpu"): _preset_pgx_backgammon_cpu,
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
    the catalog's GPU presets had before they took the CPU's lessons (experiments/studies/gpu_sweep/gpu_sweep.py sets
    the two against each other on Connect Four): a 6 x 128 bfloat16 ResNet, 64 simulations, 2048 games (512 with
    more than 512 actions) of 64 moves, SGD batches of 2048 at a constant 2e-3, unfinished games dropped: 2 samples
    per played position. The replay buffer holds every game's moves of an iteration and of its longest game, as a
    power of two.
    """
    from azjax import games  # late: presets must not build games at import time

    built = games.make(game)
    cells = int(math.prod(built.observation_shape[:-1])) if len(built.observation_shape) > 1 else 1
    many_actions = built.num_actions > 512
    policy = "puct" if built.has_chance else "gumbel"  # chance nodes: Stochastic MuZero's search is PUCT
    if preset == "gpu":
        num_games, num_steps = (512 if many_actions else 2048), 64
        network = NetworkConfig(num_blocks=6, num_channels=128, compute_dtype="bfloat16")
        search = SearchConfig(num_simulations=64, max_num_considered_actions=min(32, built.num_actions), policy=policy)
        train = TrainConfig(batch_size=2048, learning_rate=2e-3)
        num_iterations = 400
    else:
        num_games, num_steps = (64 if many_actions else 128), 32
        network = NetworkConfig(num_blocks=2, num_channels=32)
        search = SearchConfig(num_simulations=16 if cells <= 64 else 32, policy=policy)
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
