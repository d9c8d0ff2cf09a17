"""Configuration: frozen dataclasses per concern, presets per game, and validation with clear errors.

A `Config` is plain data, built explicitly and passed in: nothing is parsed or built at import time. Derive a
variant with `dataclasses.replace` or `with_overrides(config, {"search.num_simulations": 64})`, which is what the
command line's `--search.num_simulations 64` does.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import types
import typing
from typing import Any


class ConfigError(ValueError):
    """A config value is invalid; the message names the field and what to do."""


class UnknownFieldError(ConfigError):
    """A config names a field this azjax does not have: a typo, or a config saved by a newer azjax."""


class UnknownGameError(ConfigError):
    """The config's game cannot be found or its module imported (the config itself may be fine); the message
    says which game, the error met and what to do."""


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """The AlphaZero ResNet: a conv stem, residual blocks, a policy head and a value head."""

    num_blocks: int = 2  # residual blocks (two 3x3 convolutions each)
    num_channels: int = 32  # channels of the stem and every block
    value_channels: int = 1  # channels of the value head's 1x1 convolution (AlphaZero's 1; 4: level in Connect Four)
    value_hidden: int = 64  # units of the value head's hidden layer
    global_pooling: bool = False  # KataGo: blocks and the value head also see each channel's board mean and max
    compute_dtype: str = "float32"  # "bfloat16" computes in bf16 with float32 parameters (use on GPUs/TPUs)


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """mctx search: Gumbel MuZero (default) or PUCT (`muzero_policy`)."""

    policy: str = "gumbel"  # "gumbel" (Gumbel MuZero) or "puct" (AlphaZero's PUCT with Dirichlet noise)
    num_simulations: int = 32  # simulations per move
    max_num_considered_actions: int = 16  # gumbel: actions sampled at the root for sequential halving
    gumbel_scale: float = 1.0  # gumbel: scale of the root Gumbel noise (0 = deterministic)
    gumbel_moves: int | None = None  # gumbel: root noise for a game's first k moves only, then none; None: always
    value_scale: float = 0.1  # gumbel: weight of the Q-values against the prior logits (mctx's qtransform default)
    dirichlet_alpha: float = 0.3  # puct: Dirichlet noise concentration at the root
    dirichlet_fraction: float = 0.25  # puct: weight of the noise in the root prior
    pb_c_init: float = 1.25  # puct: exploration constant
    pb_c_base: float = 19652.0  # puct: exploration constant's visit-count scale
    temperature_moves: int = 10  # puct: sample moves from visit counts for a game's first k moves, then greedy
    reuse_tree: bool = False  # keep the chosen move's subtree for the next search (azjax/tree_reuse.py)
    tree_capacity: int | None = None  # reuse_tree: nodes per game's tree, >= num_simulations + 1; None: 2 x sims + 1

    @property
    def capacity(self) -> int:
        """Nodes per game's search tree: num_simulations + 1, or with `reuse_tree` `tree_capacity`, by default
        room for the search and as many kept nodes. A search costs more in a larger tree (mctx's backward pass
        carries the whole tree through each step): at 64 simulations, trees of 4 x sims + 1 nodes made a Connect
        Four self-play move cost 2.3-3 x, these 1.4-1.7 x, for +88 against +53 Elo with PUCT and nothing with
        Gumbel (experiments/results/tree_reuse_connect_four_cpu.md)."""
        if not self.reuse_tree:
            return self.num_simulations + 1
        return self.tree_capacity if self.tree_capacity is not None else 2 * self.num_simulations + 1


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """Batched self-play: `num_games` games in parallel, `num_steps` moves each per iteration."""

    num_games: int = 256  # games played in parallel (the batch B); finished games restart at once
    num_steps: int = 32  # moves per game per iteration (T); games carry over between iterations
    opening_moves: int = 0  # each game starts after 0..k uniformly random moves (not recorded), for diversity
    resign_threshold: float | None = None  # resign when the chosen move's value (for the mover) is below; None: never
    resign_disabled_fraction: float = 0.1  # share of games that never resign, to measure false positives
    # Off by default: at equal time, keeping scored worse in Connect Four (two seeds, a constant learning rate) and
    # Brandub (one); with a cosine over the budget and twice the SGD steps it was level on the labelled positions and
    # ahead against UCT-400, and the CPU presets (but tic-tac-toe's) keep them with CPU_TRAIN
    # (experiments/results/connect_four_strength_cpu.txt, learns_cpu.txt).
    keep_unfinished: bool = False  # a game outlasting an iteration: its positions wait in replay (False: dropped)
    # Playout-cap randomisation (KataGo): only fully searched moves train the policy; all train the value.
    full_search_fraction: float = 1.0  # share of self-play steps searched in full, the rest fast; 1: all in full
    fast_search_simulations: int = 4  # simulations of a fast search (with full_search_fraction < 1)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """The optimisation: loss weights, optimizer, replay buffer."""

    batch_size: int = 256  # positions per SGD step
    num_sgd_steps: int = 16  # SGD steps per iteration
    learning_rate: float = 1e-3  # peak learning rate
    warmup_steps: int = 100  # linear warm-up of the learning rate (SGD steps)
    lr_schedule: str = "constant"  # "constant" after warm-up, or "cosine" to 0.01 x at the end (iterations, --seconds)
    optimizer: str = "adam"  # "adam", "adamw" (weight decay decoupled from Adam) or "sgd" (momentum 0.9)
    value_loss_weight: float = 1.0  # weight of the value MSE in the loss
    value_target_mix: float = 0.0  # value target = (1 - m) x game outcome + m x the search's value of the move played
    reply_policy_weight: float = 0.0  # > 0: a second policy head learns the opponent's reply (KataGo), this weight
    policy_surprise_weight: float = 0.0  # share of draws from replay weighted by policy surprise (KataGo: 0.5)
    weight_decay: float = 1e-4  # adam, sgd: L2 penalty weight in the loss; adamw: kernels shrink by lr x this per step
    replay_capacity: int = 32768  # positions in the on-device ring buffer, also those whose game is still going on
    augment: bool = True  # apply a random board symmetry to each sampled position


@dataclasses.dataclass(frozen=True)
class Config:
    """Everything a training run needs. `azjax train --help` lists every field."""

    game: str = "tic_tac_toe"  # a registered game (azjax.games.names()), "pgx:<env_id>" or your own "MODULE:FACTORY"
    seed: int = 0  # the run's random seed
    num_iterations: int = 50  # iterations of self-play + training; `azjax train` may stop earlier on --seconds
    network: NetworkConfig = dataclasses.field(default_factory=NetworkConfig)
    search: SearchConfig = dataclasses.field(default_factory=SearchConfig)
    selfplay: SelfPlayConfig = dataclasses.field(default_factory=SelfPlayConfig)
    train: TrainConfig = dataclasses.field(default_factory=TrainConfig)

    def validate(self) -> Config:
        """Checks every field; returns self, or raises ConfigError naming the field and the fix."""
        from azjax import games  # late: config must not build games at import time

        _check_types(self)
        _check_finite(self)
        try:
            games.check_known(self.game)
        except games.GameNotFoundError as error:
            raise UnknownGameError(f"game: {error}") from None
        _positive(self, "num_iterations")
        _positive(self.network, "num_blocks", "network.")
        _positive(self.network, "num_channels", "network.")
        _positive(self.network, "value_channels", "network.")
        _positive(self.network, "value_hidden", "network.")
        _choice(self.network.compute_dtype, ("float32", "bfloat16"), "network.compute_dtype")
        _choice(self.search.policy, ("gumbel", "puct"), "search.policy")
        _positive(self.search, "num_simulations", "search.")
        _positive(self.search, "max_num_considered_actions", "search.")
        if self.search.tree_capacity is not None and self.search.tree_capacity < self.search.num_simulations + 1:
            raise ConfigError(
                f"search.tree_capacity ({self.search.tree_capacity}) must hold the root and search.num_simulations "
                f"({self.search.num_simulations}) new nodes: at least {self.search.num_simulations + 1}, or None for "
                f"{2 * self.search.num_simulations + 1}"
            )
        if self.search.gumbel_moves is not None and self.search.gumbel_moves < 0:
            raise ConfigError(
                "search.gumbel_moves must be >= 0 (or None: Gumbel noise on every move), "
                f"got {self.search.gumbel_moves}"
            )
        if not self.search.value_scale > 0:
            raise ConfigError(f"search.value_scale must be > 0 (mctx's default is 0.1), got {self.search.value_scale}")
        if not self.search.gumbel_scale >= 0:
            raise ConfigError(f"search.gumbel_scale must be >= 0 (0: no root noise), got {self.search.gumbel_scale}")
        # mctx draws the Dirichlet noise even when its fraction is 0, and a concentration <= 0 makes it NaN.
        if not self.search.dirichlet_alpha > 0:
            raise ConfigError(f"search.dirichlet_alpha must be > 0 (AlphaZero: 0.3 for chess, 0.03 for Go), got "
                              f"{self.search.dirichlet_alpha}")
        if not 0.0 <= self.search.dirichlet_fraction <= 1.0:
            raise ConfigError("search.dirichlet_fraction must lie in [0, 1]")
        # PUCT's exploration weight is pb_c_init + log((N + pb_c_base + 1) / pb_c_base): positive only with both > 0.
        for name in ("pb_c_init", "pb_c_base"):
            if not getattr(self.search, name) > 0:
                raise ConfigError(f"search.{name} must be > 0 (AlphaZero's {getattr(SearchConfig, name)}), got "
                                  f"{getattr(self.search, name)}")
        _positive(self.selfplay, "num_games", "selfplay.")
        _positive(self.selfplay, "num_steps", "selfplay.")
        if self.selfplay.opening_moves < 0:
            raise ConfigError(f"selfplay.opening_moves must be >= 0, got {self.selfplay.opening_moves}")
        if not 0.0 <= self.selfplay.resign_disabled_fraction <= 1.0:
            raise ConfigError("selfplay.resign_disabled_fraction must lie in [0, 1]")
        if not 0.0 < self.selfplay.full_search_fraction <= 1.0:
            raise ConfigError(
                "selfplay.full_search_fraction must lie in (0, 1] (1: every move searched in full), "
                f"got {self.selfplay.full_search_fraction}"
            )
        if self.selfplay.full_search_fraction < 1.0:
            _positive(self.selfplay, "fast_search_simulations", "selfplay.")
            if self.selfplay.fast_search_simulations >= self.search.num_simulations:
                raise ConfigError(
                    f"selfplay.fast_search_simulations ({self.selfplay.fast_search_simulations}) must be fewer than "
                    f"search.num_simulations ({self.search.num_simulations}), or set selfplay.full_search_fraction 1"
                )
            if self.search.reuse_tree:
                raise ConfigError(
                    "selfplay.full_search_fraction < 1 does not work with search.reuse_tree yet: turn one of them off"
                )
        _positive(self.train, "batch_size", "train.")
        _positive(self.train, "num_sgd_steps", "train.")
        _positive(self.train, "replay_capacity", "train.")
        if not self.train.learning_rate > 0:
            raise ConfigError(f"train.learning_rate must be > 0, got {self.train.learning_rate}")
        _choice(self.train.lr_schedule, ("constant", "cosine"), "train.lr_schedule")
        _choice(self.train.optimizer, ("adam", "adamw", "sgd"), "train.optimizer")
        if not 0.0 <= self.train.value_target_mix <= 1.0:
            raise ConfigError(
                "train.value_target_mix must be in [0, 1] (0: the game's outcome alone), "
                f"got {self.train.value_target_mix}"
            )
        if not self.train.value_loss_weight >= 0:
            raise ConfigError(f"train.value_loss_weight must be >= 0, got {self.train.value_loss_weight}")
        if not self.train.reply_policy_weight >= 0:
            raise ConfigError(
                "train.reply_policy_weight must be >= 0 (0: no opponent-reply head), "
                f"got {self.train.reply_policy_weight}"
            )
        if not 0.0 <= self.train.policy_surprise_weight < 1.0:
            raise ConfigError(
                "train.policy_surprise_weight must be in [0, 1) (0: positions drawn uniformly; KataGo uses 0.5), "
                f"got {self.train.policy_surprise_weight}"
            )
        if not self.train.weight_decay >= 0:
            raise ConfigError(f"train.weight_decay must be >= 0, got {self.train.weight_decay}")
        if self.train.replay_capacity < self.train.batch_size:
            raise ConfigError(
                f"train.replay_capacity ({self.train.replay_capacity}) must be at least train.batch_size "
                f"({self.train.batch_size})"
            )
        per_iteration = self.selfplay.num_games * self.selfplay.num_steps
        if self.train.replay_capacity < per_iteration:
            raise ConfigError(
                f"train.replay_capacity ({self.train.replay_capacity}) must hold at least one iteration's positions, "
                f"selfplay.num_games x selfplay.num_steps = {per_iteration} (better: num_games x (num_steps + the "
                "game's length), so that no position is overwritten before its game ends)"
            )
        return self


def _check_types(config: Config) -> None:
    """Every field holds a value of its declared type (ints are accepted where a float is declared)."""
    for path, kind in _field_types().items():
        value = _value(config, path)
        allowed = typing.get_args(kind) if typing.get_origin(kind) in (typing.Union, types.UnionType) else (kind,)
        ok = any(
            (value is None and a is type(None))
            or (a is float and isinstance(value, int | float) and not isinstance(value, bool))
            or (a is int and isinstance(value, int) and not isinstance(value, bool))
            or (a in (str, bool) and isinstance(value, a))
            for a in allowed
        )
        if not ok:
            expected = " or ".join("None" if a is type(None) else a.__name__ for a in allowed)
            raise ConfigError(f"{path} must be {expected}, got {value!r} ({type(value).__name__})")


def _check_finite(config: Config) -> None:
    """Every number is finite: a NaN passes comparisons such as `x < 0` unnoticed, and then poisons training."""
    for path in _field_types():
        value = _value(config, path)
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{path} must be a finite number, got {value}")


def _value(config: Config, path: str) -> Any:
    """The value of a field named "section.name" (or "name" for a top-level field)."""
    section, _, name = path.rpartition(".")
    return getattr(getattr(config, section) if section else config, name)


def _positive(section: Any, name: str, prefix: str = "") -> None:
    value = getattr(section, name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{prefix}{name} must be a whole number >= 1, got {value!r}")


def _choice(value: str, allowed: tuple[str, ...], name: str) -> None:
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")


# ------------------------------------------------------------------------------------------------------------
# Presets


# The GPU presets train 2 samples per played position, as every CPU preset that drops unfinished games does (the
# setting measured there); on an accelerator self-play dominates, so that costs little: 4-9% of an iteration's
# network evaluations (forward equivalents, a backward pass counted as two). experiments/results/replay_ratio.md has
# the arithmetic. The CPU presets but tic-tac-toe's keep unfinished games, so that every played position reaches
# replay instead of about half (Connect Four), and train twice as many (the same samples per position in replay).
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
# outcome and half the search's value, half of each batch drawn by policy surprise. The presets but tic-tac-toe's
# pair it with selfplay.keep_unfinished, all with `samples_per_played_position`'s SGD steps.
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


def _preset_tic_tac_toe_gpu() -> Config:
    return Config(
        game="tic_tac_toe",
        num_iterations=100,
        network=NetworkConfig(num_blocks=4, num_channels=64),
        search=SearchConfig(num_simulations=64),
        selfplay=SelfPlayConfig(num_games=2048, num_steps=16),
        train=TrainConfig(batch_size=1024, num_sgd_steps=64, replay_capacity=262144),
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
    # Keeping unfinished games cost 0.6 points on the labelled positions and won against UCT-400 and on the empty
    # board (its centre with 0.98-0.99 of the prior in every seed); the openings of 0-10 moves won most on the hard
    # positions near the start (begin-hard 83.4-84.5% against 80.6-82.2%). The cosine's "before" had two seeds, the
    # five pairs of 0-14 two runs at equal iterations. The rows are of different days and machines: compare within
    # a row.
    return Config(
        game="connect_four",
        num_iterations=300,
        network=NetworkConfig(num_blocks=2, num_channels=32),
        search=SearchConfig(num_simulations=16),
        selfplay=SelfPlayConfig(num_games=128, num_steps=32, opening_moves=14, keep_unfinished=True),
        train=dataclasses.replace(CPU_TRAIN, num_sgd_steps=128, replay_capacity=65536),
    )


def _preset_connect_four_gpu() -> Config:
    # On one H200 (2026-11-26; experiments/results/gpu-nvidia-h200-2026-11-26.md): about 30 s an iteration
    # (8.4-9.3k positions/s), and after 7 iterations (229 s) 91.4% optimal top moves from the network, 97.1% from
    # its search on the labelled positions. Not yet tuned on an accelerator: at 32 simulations self-play runs 6 times
    # as fast (60.6k positions/s), and on the CPU keeping unfinished games and a cosine over the budget won.
    return Config(
        game="connect_four",
        num_iterations=400,
        network=NetworkConfig(num_blocks=6, num_channels=128, compute_dtype="bfloat16"),
        search=SearchConfig(num_simulations=128),
        selfplay=SelfPlayConfig(num_games=4096, num_steps=64),
        train=TrainConfig(batch_size=2048, num_sgd_steps=256, learning_rate=2e-3, replay_capacity=1_048_576),
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


def _preset_gomoku_gpu() -> Config:
    # 15 x 15 Gomoku: 225 actions; a deeper network sees the whole board; fewer simulations than Connect Four's,
    # since every simulation evaluates a 15 x 15 board.
    return Config(
        game="gomoku",
        num_iterations=400,
        network=NetworkConfig(num_blocks=8, num_channels=96, compute_dtype="bfloat16"),
        search=SearchConfig(num_simulations=64, max_num_considered_actions=32),
        selfplay=SelfPlayConfig(num_games=1024, num_steps=64),
        train=TrainConfig(batch_size=2048, num_sgd_steps=64, learning_rate=2e-3, replay_capacity=1_048_576),
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


def _preset_othello_gpu() -> Config:
    # 8 x 8 Othello: 65 actions (the pass included), games last about 60 moves.
    return Config(
        game="othello",
        num_iterations=400,
        network=NetworkConfig(num_blocks=6, num_channels=128, compute_dtype="bfloat16"),
        search=SearchConfig(num_simulations=64),
        selfplay=SelfPlayConfig(num_games=2048, num_steps=64),
        train=TrainConfig(batch_size=2048, num_sgd_steps=128, learning_rate=2e-3, replay_capacity=1_048_576),
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


def _preset_brandub_gpu() -> Config:
    # The search tree holds [B, simulations + 1, 1176] arrays and a replay position takes ~6 KB (its 1176-way
    # policy), so fewer games and simulations than Connect Four's keep the tree near 2 GB and the buffer near 3 GB.
    return Config(
        game="brandub",
        num_iterations=400,
        network=NetworkConfig(num_blocks=6, num_channels=128, compute_dtype="bfloat16"),
        search=SearchConfig(num_simulations=64, max_num_considered_actions=32),
        selfplay=SelfPlayConfig(num_games=1024, num_steps=64),
        train=TrainConfig(batch_size=2048, num_sgd_steps=64, learning_rate=2e-3, replay_capacity=524_288),
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
    unfinished games kept: 4 SGD samples per played position (`samples_per_played_position`). "gpu" follows the
    catalog's GPU presets: a 6 x 128 bfloat16 ResNet, 64 simulations, 2048 games (512 with more than 512
    actions) of 64 moves, SGD batches of 2048 at a constant 2e-3, unfinished games dropped: 2 samples per played
    position. The replay buffer holds every game's moves of an iteration and of its longest game, as a power of
    two.
    """
    from azjax import games  # late: config must not build games at import time

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
    from azjax import games  # late: config must not build games at import time

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
        return with_overrides(derived, dict(given)), (
            f"the {preset} preset registered with {game}: {_sizes_text(derived)} with its overrides"
        )
    return derived.validate(), (
        f"{game} has no {preset} preset of its own, so one derived from its sizes (azjax.config.derived_preset): "
        f"{_sizes_text(derived)}; register presets with games.register(..., presets=...) or pass --config FILE"
    )


def _sizes_text(config: Config) -> str:
    net, search, play = config.network, config.search, config.selfplay
    return (f"a {net.num_blocks} x {net.num_channels} network, {search.num_simulations} simulations, "
            f"{play.num_games} games x {play.num_steps} moves, {config.train.num_sgd_steps} SGD steps of "
            f"{config.train.batch_size}, {config.num_iterations} iterations")


# ------------------------------------------------------------------------------------------------------------
# Overrides and JSON


def field_paths(config: Config | None = None) -> dict[str, tuple[type, Any, str]]:
    """Every overridable field as {"section.name": (type, default, help)}; top-level fields have no section.

    The help is the comment beside the field in this module's source (empty where the source is not shipped)."""
    config = config or Config()
    comments = _field_comments()
    return {path: (kind, _value(config, path), comments.get(path, "")) for path, kind in _field_types().items()}


def with_overrides(config: Config, overrides: dict[str, Any]) -> Config:
    """A copy of `config` with dotted fields replaced, e.g. {"search.num_simulations": 64}; validated.

    String values (from a command line or a JSON file) are converted to the field's type.
    """
    paths = _field_types()
    sections: dict[str, dict[str, Any]] = {}
    top: dict[str, Any] = {}
    for key, raw in overrides.items():
        if key not in paths:
            close = [p for p in paths if p.split(".")[-1] == key.split(".")[-1]]
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UnknownFieldError(f"unknown config field {key!r}{hint} (`azjax train --help` lists them)")
        value = convert(raw, paths[key], key)
        if "." in key:
            section, name = key.split(".")
            sections.setdefault(section, {})[name] = value
        else:
            top[key] = value
    for section, changes in sections.items():
        top[section] = dataclasses.replace(getattr(config, section), **changes)
    return dataclasses.replace(config, **top).validate()


def convert(raw: Any, kind: Any, key: str) -> Any:
    """Converts `raw` (a string from the command line, or a JSON value) to the field type `kind`."""
    optional = typing.get_origin(kind) in (typing.Union, types.UnionType) and type(None) in typing.get_args(kind)
    if optional:
        if raw is None or (isinstance(raw, str) and raw.lower() in ("none", "null", "")):
            return None
        kind = next(a for a in typing.get_args(kind) if a is not type(None))
    try:
        if kind is bool:
            if isinstance(raw, bool):
                return raw
            if str(raw).lower() in ("true", "1", "yes"):
                return True
            if str(raw).lower() in ("false", "0", "no"):
                return False
            raise ValueError
        if kind is int:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError
            return int(raw)
        if kind is float:
            if isinstance(raw, bool):
                raise ValueError
            return float(raw)
        if kind is str:
            if not isinstance(raw, str):
                raise ValueError
            return raw
    except (TypeError, ValueError):
        pass
    else:
        raise ConfigError(f"{key}: unsupported field type {kind}")
    name = getattr(kind, "__name__", str(kind))
    raise ConfigError(f"{key} must be {'a' if name != 'int' else 'an'} {name}, got {raw!r}")


def to_dict(config: Config) -> dict[str, Any]:
    """The config as nested plain data (for JSON)."""
    return dataclasses.asdict(config)


def to_json(config: Config) -> str:
    """The config as indented JSON, readable and loadable with `from_json`."""
    return json.dumps(to_dict(config), indent=2, sort_keys=True)


def from_dict(data: dict[str, Any]) -> Config:
    """Builds a validated Config from nested plain data, rejecting unknown fields and wrong types by name."""
    if not isinstance(data, dict):
        raise ConfigError(f"a config must be a JSON object, got {type(data).__name__}")
    flat: dict[str, Any] = {}
    sections = {f.name for f in dataclasses.fields(Config) if dataclasses.is_dataclass(f.default_factory)}
    for key, value in data.items():
        if key in sections:
            if not isinstance(value, dict):
                raise ConfigError(f"config section {key!r} must be an object, got {value!r}")
            flat.update({f"{key}.{name}": v for name, v in value.items()})
        else:
            flat[key] = value
    return with_overrides(Config(), flat)


def from_json(text: str) -> Config:
    """Parses `to_json`'s output (or a hand-written subset of it) into a validated Config."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"the config is not valid JSON: {error}") from None
    return from_dict(data)


@functools.cache
def _field_types() -> dict[str, Any]:
    """Every field's declared type as {"section.name": type}, in declaration order; top-level fields have no
    section. Read from the annotations (not the source), once."""
    paths: dict[str, Any] = {}
    hints = typing.get_type_hints(Config)
    for field in dataclasses.fields(Config):
        kind = hints[field.name]
        if dataclasses.is_dataclass(kind):
            section_hints = typing.get_type_hints(kind)
            paths.update({f"{field.name}.{sub.name}": section_hints[sub.name] for sub in dataclasses.fields(kind)})
        else:
            paths[field.name] = kind
    return paths


@functools.cache
def _field_comments() -> dict[str, str]:
    """The one-line comment beside each field in this module's source: the help text of `--section.field`. Read
    once, and only for help; {} where the source is not shipped (e.g. a zipped or compiled install)."""
    import inspect

    comments: dict[str, str] = {}
    for cls, prefix in (
        (Config, ""),
        (NetworkConfig, "network."),
        (SearchConfig, "search."),
        (SelfPlayConfig, "selfplay."),
        (TrainConfig, "train."),
    ):
        try:
            source = inspect.getsource(cls)
        except (OSError, TypeError):
            return {}
        for line in source.splitlines():
            stripped = line.strip()
            if ":" in stripped and "  # " in stripped and not stripped.startswith("#"):
                name = stripped.split(":")[0].strip()
                comments[prefix + name] = stripped.split("  # ", 1)[1]
    return comments
