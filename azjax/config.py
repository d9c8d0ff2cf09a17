"""Configuration: frozen dataclasses per concern and validation with clear errors. The presets per game are
azjax/presets.py (`presets.get_config`, also `azjax.get_config`), which imports this module.

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

from azjax.errors import ConfigError


class UnknownFieldError(ConfigError):
    """A config names a field this azjax does not have: a typo, or a config saved by a newer azjax."""


class UnknownGameError(ConfigError):
    """The config's game cannot be found or its module imported (the config itself may be fine); the message
    says which game, the error met and what to do."""


# num_iterations of a new run that its time budget alone ends (`azjax train --seconds S` without --iterations):
# more than any run reaches, and within the int32 of the run's iteration counter.
TIME_BUDGET_ITERATIONS = 10**9


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """The network: the built-in AlphaZero ResNet (a conv stem, residual blocks, a policy head and a value head)
    sized by these fields, or a module of your own (`module`), which the ResNet's fields do not touch."""

    # Recorded with the run, so that every later command and `load_agent` builds the network again.
    module: str = ""  # MODULE:FACTORY of a network of your own (azjax.networks' contract); "" = the ResNet

    num_blocks: int = 2  # residual blocks (two 3x3 convolutions each)
    num_channels: int = 32  # channels of the stem and every block
    value_channels: int = 1  # channels of the value head's 1x1 convolution (AlphaZero's 1; Connect Four's CPU preset 4)
    value_hidden: int = 64  # units of the value head's hidden layer (Connect Four's CPU preset 256)
    value_head: str = "scalar"  # "scalar": tanh, MSE (AlphaZero); "wdl": win/draw/loss probs, cross-entropy (Lc0)
    global_pooling: bool = False  # KataGo: blocks and the value head also see each channel's board mean and max
    compute_dtype: str = "float32"  # "bfloat16" computes in bf16 with float32 parameters (GPUs/TPUs, CPUs with AMX)


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
        room for the search and as many kept nodes (`search.nodes_per_tree`)."""
        from azjax.search import nodes_per_tree  # the search's rule; config stays importable without jax

        return nodes_per_tree(self.num_simulations, reuse_tree=self.reuse_tree, tree_capacity=self.tree_capacity)


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """Batched self-play: `num_games` games in parallel, `num_steps` moves each per iteration."""

    num_games: int = 256  # games played in parallel (the batch B); finished games restart at once
    num_steps: int = 32  # moves per game per iteration (T); games carry over between iterations
    opening_moves: int = 0  # each game starts after 0..k uniformly random moves (not recorded), for diversity
    resign_threshold: float | None = None  # resign when the chosen move's value (for the mover) is below; None: never
    resign_disabled_fraction: float = 0.1  # share of games that never resign, to measure false positives
    # Off by default, as it measured worse at a constant learning rate; the CPU presets but tic-tac-toe's keep them
    # with their cosine schedule (experiments/studies/presets/README.md,
    # experiments/studies/strength/results/).
    keep_unfinished: bool = False  # a game outlasting an iteration: its positions wait in replay (False: dropped)
    # Playout-cap randomisation (KataGo): only fully searched moves train the policy; all train the value.
    full_search_fraction: float = 1.0  # share of self-play steps searched in full, the rest fast; 1: all in full
    fast_search_simulations: int = 4  # simulations of a fast search (with full_search_fraction < 1)
    # Deeper searches near the start, for the value far from the end: at every step the k games
    # with the fewest moves played are searched with start_search_simulations, the others as usual.
    start_search_games: int = 0  # k games nearest their start searched deeper at each step; 0: none
    start_search_simulations: int = 64  # simulations of those searches (with start_search_games > 0)

    @property
    def positions_per_iteration(self) -> int:
        """Positions played in an iteration: num_games x num_steps."""
        return self.num_games * self.num_steps


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
    # The search's share of the value target above as the lambda-return of the search values along the rest of the
    # game (TD(lambda); selfplay.lambda_returns): 0 the move's own search value, 1 the outcome. Needs the mix > 0.
    value_target_lambda: float = 0.0  # > 0: the mix's search share is the lambda-return of later search values
    reply_policy_weight: float = 0.0  # > 0: a second policy head learns the opponent's reply (KataGo), this weight
    policy_surprise_weight: float = 0.0  # share of draws from replay weighted by policy surprise (KataGo: 0.5)
    weight_decay: float = 1e-4  # adam, sgd: L2 penalty weight in the loss; adamw: kernels shrink by lr x this per step
    # A moving average of the weights (KataGo's and Lc0's averaged networks), updated after every SGD step, plays in
    # self-play, Reanalyse and evaluation and is the network a checkpoint, an export and an agent load.
    ema_decay: float = 0.0  # > 0: play with a moving average of the weights, decaying this much per SGD step
    replay_capacity: int = 32768  # positions in the on-device ring buffer, also those whose game is still going on
    # Reanalyse (MuZero's): each iteration, before its SGD steps, this many ready replay positions (drawn uniformly,
    # without repeats) are searched again with the iteration's network and take the new search's policy target and,
    # with value_target_mix m > 0, (1 - m) x their game's outcome + m x its value of its move. The buffer then also
    # keeps each position's game state and outcome (training.reanalyse).
    reanalyse_positions: int = 0  # > 0: positions re-searched per iteration
    reanalyse_simulations: int | None = None  # simulations of those searches (None: search.num_simulations)
    reanalyse_max_moves: int | None = None  # draw only positions with at most this many moves played (None: any)
    augment: bool = True  # apply a random board symmetry to each sampled position


@dataclasses.dataclass(frozen=True)
class Config:
    """Everything a training run needs. `azjax train --help` lists every field, as does the reference's page
    "Every setting of a run"."""

    game: str = "tic_tac_toe"  # a registered game (azjax.games.names()), "pgx:<env_id>" or your own "MODULE:FACTORY"
    seed: int = 0  # the run's random seed
    num_iterations: int = 50  # iterations of self-play + training (`azjax train --seconds`: a new run's time)
    # Checkpoints record the version a network trained on; loading one whose game has moved on sets this field.
    observation_version: int | None = None  # the game's input planes (None: its current; connect_four 1: stones)
    network: NetworkConfig = dataclasses.field(default_factory=NetworkConfig)
    search: SearchConfig = dataclasses.field(default_factory=SearchConfig)
    selfplay: SelfPlayConfig = dataclasses.field(default_factory=SelfPlayConfig)
    train: TrainConfig = dataclasses.field(default_factory=TrainConfig)

    def make_game(self):
        """The `azjax.games.Game` this config trains and plays: its `game`, observing `observation_version`."""
        from azjax import games  # late: config must not build games at import time

        return games.make_observing(self.game, self.observation_version)

    def validate(self) -> Config:
        """Checks every field; returns self, or raises ConfigError naming the field and the fix."""
        _check_types(self)
        _check_finite(self)
        _check_run(self)
        _check_network(self.network)
        _check_search(self.search)
        _check_selfplay(self.selfplay, self.search)
        _check_train(self.train)
        _check_replay(self.train, self.selfplay)
        return self


def _check_run(config: Config) -> None:
    """The run's own fields: a game that can be found, its iterations, the observation version."""
    from azjax import games  # late: config must not build games at import time

    try:
        games.check_known(config.game)
    except games.GameNotFoundError as error:
        raise UnknownGameError(f"game: {error}") from None
    _positive(config, "num_iterations")
    # Whether the game can build that version is the game's to say, when it is built (`make_game`): a saved
    # network's config must load for its loader to say which version it needs (`rundir.fit_observation`).
    if config.observation_version is not None and config.observation_version < 1:
        raise ConfigError(f"observation_version must be >= 1 (or None: the game's current), got "
                          f"{config.observation_version}")


def _check_network(network: NetworkConfig) -> None:
    """The network's sizes, precision and value head."""
    _positive(network, "num_blocks", "network.")
    _positive(network, "num_channels", "network.")
    _positive(network, "value_channels", "network.")
    _positive(network, "value_hidden", "network.")
    _choice(network.compute_dtype, ("float32", "bfloat16"), "network.compute_dtype")
    _choice(network.value_head, ("scalar", "wdl"), "network.value_head")


def _check_search(search: SearchConfig) -> None:
    """The search policy, its simulations, its root noise and exploration constants, the kept trees' capacity."""
    _choice(search.policy, ("gumbel", "puct"), "search.policy")
    _positive(search, "num_simulations", "search.")
    _positive(search, "max_num_considered_actions", "search.")
    if search.tree_capacity is not None and search.tree_capacity < search.num_simulations + 1:
        raise ConfigError(
            f"search.tree_capacity ({search.tree_capacity}) must hold the root and search.num_simulations "
            f"({search.num_simulations}) new nodes: at least {search.num_simulations + 1}, or None for "
            f"{2 * search.num_simulations + 1}"
        )
    if search.gumbel_moves is not None and search.gumbel_moves < 0:
        raise ConfigError(
            "search.gumbel_moves must be >= 0 (or None: Gumbel noise on every move), "
            f"got {search.gumbel_moves}"
        )
    if not search.value_scale > 0:
        raise ConfigError(f"search.value_scale must be > 0 (mctx's default is 0.1), got {search.value_scale}")
    if not search.gumbel_scale >= 0:
        raise ConfigError(f"search.gumbel_scale must be >= 0 (0: no root noise), got {search.gumbel_scale}")
    # mctx draws the Dirichlet noise even when its fraction is 0, and a concentration <= 0 makes it NaN.
    if not search.dirichlet_alpha > 0:
        raise ConfigError(f"search.dirichlet_alpha must be > 0 (AlphaZero: 0.3 for chess, 0.03 for Go), got "
                          f"{search.dirichlet_alpha}")
    if not 0.0 <= search.dirichlet_fraction <= 1.0:
        raise ConfigError("search.dirichlet_fraction must lie in [0, 1]")
    # PUCT's exploration weight is pb_c_init + log((N + pb_c_base + 1) / pb_c_base): positive only with both > 0.
    for name in ("pb_c_init", "pb_c_base"):
        if not getattr(search, name) > 0:
            raise ConfigError(f"search.{name} must be > 0 (AlphaZero's {getattr(SearchConfig, name)}), got "
                              f"{getattr(search, name)}")


def _check_selfplay(selfplay: SelfPlayConfig, search: SearchConfig) -> None:
    """The games in parallel, their openings and resignation, and the searches that differ from `search`'s."""
    _positive(selfplay, "num_games", "selfplay.")
    _positive(selfplay, "num_steps", "selfplay.")
    if selfplay.opening_moves < 0:
        raise ConfigError(f"selfplay.opening_moves must be >= 0, got {selfplay.opening_moves}")
    if not 0.0 <= selfplay.resign_disabled_fraction <= 1.0:
        raise ConfigError("selfplay.resign_disabled_fraction must lie in [0, 1]")
    if not 0.0 < selfplay.full_search_fraction <= 1.0:
        raise ConfigError(
            "selfplay.full_search_fraction must lie in (0, 1] (1: every move searched in full), "
            f"got {selfplay.full_search_fraction}"
        )
    if selfplay.full_search_fraction < 1.0:
        _positive(selfplay, "fast_search_simulations", "selfplay.")
        if selfplay.fast_search_simulations >= search.num_simulations:
            raise ConfigError(
                f"selfplay.fast_search_simulations ({selfplay.fast_search_simulations}) must be fewer than "
                f"search.num_simulations ({search.num_simulations}), or set selfplay.full_search_fraction 1"
            )
        if search.reuse_tree:
            raise ConfigError(
                "selfplay.full_search_fraction < 1 does not work with search.reuse_tree yet: turn one of them off"
            )
    if selfplay.start_search_games:
        if not 0 < selfplay.start_search_games < selfplay.num_games:
            raise ConfigError(
                f"selfplay.start_search_games must lie in [0, selfplay.num_games) = [0, {selfplay.num_games})"
                f" (0: no deeper searches), got {selfplay.start_search_games}"
            )
        if selfplay.start_search_simulations <= search.num_simulations:
            raise ConfigError(
                f"selfplay.start_search_simulations ({selfplay.start_search_simulations}) must be more than "
                f"search.num_simulations ({search.num_simulations}), or set selfplay.start_search_games 0"
            )
        if search.reuse_tree:
            raise ConfigError(
                "selfplay.start_search_games > 0 does not work with search.reuse_tree yet: turn one of them off"
            )


def _check_train(train: TrainConfig) -> None:
    """The optimisation: batch, steps, learning rate, optimizer, value targets, loss weights, moving average."""
    _positive(train, "batch_size", "train.")
    _positive(train, "num_sgd_steps", "train.")
    _positive(train, "replay_capacity", "train.")
    if not train.learning_rate > 0:
        raise ConfigError(f"train.learning_rate must be > 0, got {train.learning_rate}")
    _choice(train.lr_schedule, ("constant", "cosine"), "train.lr_schedule")
    _choice(train.optimizer, ("adam", "adamw", "sgd"), "train.optimizer")
    if not 0.0 <= train.value_target_mix <= 1.0:
        raise ConfigError(
            "train.value_target_mix must be in [0, 1] (0: the game's outcome alone), "
            f"got {train.value_target_mix}"
        )
    if not 0.0 <= train.value_target_lambda <= 1.0:
        raise ConfigError(
            "train.value_target_lambda must be in [0, 1] (0: the search's value of the move played, 1: the "
            f"game's outcome), got {train.value_target_lambda}"
        )
    if train.value_target_lambda and not train.value_target_mix:
        raise ConfigError(
            f"train.value_target_lambda={train.value_target_lambda} acts on the search's share of the value "
            "target, which train.value_target_mix=0 leaves out: set train.value_target_mix > 0 too (1: the "
            "lambda-returns alone), or train.value_target_lambda=0"
        )
    if not train.value_loss_weight >= 0:
        raise ConfigError(f"train.value_loss_weight must be >= 0, got {train.value_loss_weight}")
    if not train.reply_policy_weight >= 0:
        raise ConfigError(
            "train.reply_policy_weight must be >= 0 (0: no opponent-reply head), "
            f"got {train.reply_policy_weight}"
        )
    if not 0.0 <= train.policy_surprise_weight < 1.0:
        raise ConfigError(
            "train.policy_surprise_weight must be in [0, 1) (0: positions drawn uniformly; KataGo uses 0.5), "
            f"got {train.policy_surprise_weight}"
        )
    if not train.weight_decay >= 0:
        raise ConfigError(f"train.weight_decay must be >= 0, got {train.weight_decay}")
    if not 0.0 <= train.ema_decay < 1.0:
        raise ConfigError(
            f"train.ema_decay must be in [0, 1) (0: no moving average; 0.99 averages about the last 100 SGD "
            f"steps), got {train.ema_decay}"
        )


def _check_replay(train: TrainConfig, selfplay: SelfPlayConfig) -> None:
    """Reanalyse, and a replay buffer that holds a batch and an iteration's positions."""
    if train.reanalyse_positions < 0:
        raise ConfigError(
            f"train.reanalyse_positions must be >= 0 (0: no Reanalyse), got {train.reanalyse_positions}")
    if train.reanalyse_positions > train.replay_capacity:
        raise ConfigError(
            f"train.reanalyse_positions ({train.reanalyse_positions}) must be at most train.replay_capacity "
            f"({train.replay_capacity}): each iteration re-searches that many distinct replay positions")
    if train.reanalyse_simulations is not None:
        _positive(train, "reanalyse_simulations", "train.")
    if train.reanalyse_max_moves is not None and train.reanalyse_max_moves < 0:
        raise ConfigError(f"train.reanalyse_max_moves must be >= 0 (None: positions at any move), got "
                          f"{train.reanalyse_max_moves}")
    if train.replay_capacity < train.batch_size:
        raise ConfigError(
            f"train.replay_capacity ({train.replay_capacity}) must be at least train.batch_size "
            f"({train.batch_size})"
        )
    per_iteration = selfplay.positions_per_iteration
    if train.replay_capacity < per_iteration:
        raise ConfigError(
            f"train.replay_capacity ({train.replay_capacity}) must hold at least one iteration's positions, "
            f"selfplay.num_games x selfplay.num_steps = {per_iteration} (better: num_games x (num_steps + the "
            "game's length), so that no position is overwritten before its game ends)"
        )


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
