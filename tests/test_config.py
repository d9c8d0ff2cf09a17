"""Config: presets, string overrides, validation errors that name the field, and the JSON round trip."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import azjax
from azjax import config as config_lib
from azjax import presets
from azjax.config import (
    Config,
    ConfigError,
    NetworkConfig,
    SearchConfig,
    SelfPlayConfig,
    TrainConfig,
    from_json,
    to_json,
    with_overrides,
)
from azjax.presets import get_config

PRESET_KEYS = sorted(presets.PRESETS)


# --------------------------------------------------------------------------------------------------------------
# Presets


@pytest.mark.parametrize(("game", "preset"), PRESET_KEYS)
def test_preset_is_valid_and_for_its_game(game, preset):
    config = get_config(game, preset)
    assert config.game == game
    assert config.validate() is config
    assert config.train.replay_capacity >= config.train.batch_size


# (cpu game, gpu game): Gomoku and Othello train on their small boards on a CPU, on the full ones on a GPU.
PRESET_PAIRS = [
    ("tic_tac_toe", "tic_tac_toe"),
    ("connect_four", "connect_four"),
    ("gomoku9", "gomoku"),
    ("othello6", "othello"),
]


def test_presets_cover_the_games_on_cpu_and_gpu():
    # A subset check: games added later bring their own presets (each validated above).
    assert {(c, "cpu") for c, _ in PRESET_PAIRS} | {(g, "gpu") for _, g in PRESET_PAIRS} <= set(PRESET_KEYS)


def test_gpu_presets_are_larger_than_cpu_presets():
    for cpu_game, gpu_game in PRESET_PAIRS:
        cpu, gpu = get_config(cpu_game, "cpu"), get_config(gpu_game, "gpu")
        assert gpu.selfplay.num_games > cpu.selfplay.num_games
        assert gpu.train.batch_size > cpu.train.batch_size


def test_presets_live_in_their_module_above_the_config():
    """azjax/presets.py holds the presets, validated; it imports azjax.config, which never imports it (no circle),
    and `azjax.get_config` is its `get_config`."""
    for game, preset in presets.PRESETS:
        config = presets.get_config(game, preset)
        assert isinstance(config, Config) and config.validate() is config
        assert config == presets.PRESETS[(game, preset)]()
        assert presets.preset_origin(game, preset) == f"{game}'s own {preset} preset"
    imports = [line for line in Path(config_lib.__file__).read_text().splitlines() if "import " in line]
    assert imports and not any("presets" in line for line in imports), imports
    assert azjax.get_config is presets.get_config
    with pytest.raises(AttributeError, match="get_config"):
        _ = config_lib.get_config


@pytest.mark.parametrize(("cpu_game", "gpu_game"), [*PRESET_PAIRS, ("brandub", "brandub")])
def test_gpu_presets_take_the_cpu_lessons(cpu_game, gpu_game):
    """CPU_TRAIN's training in larger batches, unfinished games kept, the CPU preset's random openings."""
    cpu, gpu = get_config(cpu_game, "cpu"), get_config(gpu_game, "gpu")
    assert gpu.train == dataclasses.replace(presets.CPU_TRAIN, batch_size=gpu.train.batch_size,
                                            num_sgd_steps=gpu.train.num_sgd_steps,
                                            replay_capacity=gpu.train.replay_capacity)
    assert gpu.selfplay.keep_unfinished and gpu.selfplay.opening_moves == cpu.selfplay.opening_moves


@pytest.mark.parametrize(("game", "preset"), PRESET_KEYS)
def test_presets_that_keep_unfinished_games_have_room_for_them(game, preset):
    """A kept position waits in replay until its game ends: room for every game's moves of an iteration and of its
    longest game, so that none is overwritten first."""
    from azjax import games

    config = get_config(game, preset)
    if config.selfplay.keep_unfinished:
        play = config.selfplay
        assert config.train.replay_capacity >= play.num_games * (play.num_steps + games.make(game).max_length)


def test_unknown_preset_is_an_error():
    with pytest.raises(ConfigError, match="preset"):
        get_config("tic_tac_toe", "tpu")


def test_unknown_game_in_get_config_is_an_error_naming_the_game():
    with pytest.raises(ConfigError, match="chess"):
        get_config("chess")


# --------------------------------------------------------------------------------------------------------------
# Overrides: strings from the command line become the field's type


@pytest.mark.parametrize(
    ("key", "raw", "expected"),
    [
        ("network.num_channels", "64", 64),
        ("train.learning_rate", "3e-4", 3e-4),
        ("train.augment", "true", True),
        ("train.augment", "False", False),
        ("selfplay.resign_threshold", "none", None),
        ("selfplay.resign_threshold", "-0.9", -0.9),
        ("selfplay.resign_threshold", -0.8, -0.8),
        ("search.policy", "puct", "puct"),
        ("search.gumbel_scale", "0", 0.0),
        ("seed", "7", 7),
        ("num_iterations", "5", 5),
        ("game", "connect_four", "connect_four"),
    ],
)
def test_with_overrides_converts_to_the_field_type(key, raw, expected):
    config = with_overrides(Config(), {key: raw})
    section, _, name = key.rpartition(".")
    value = getattr(getattr(config, section) if section else config, name)
    assert value == expected
    assert type(value) is type(expected)


def test_with_overrides_leaves_the_original_and_the_overrides_alone():
    base = get_config("tic_tac_toe")
    overrides = {"search.num_simulations": "64", "train.batch_size": "128"}
    changed = with_overrides(base, overrides)
    assert (changed.search.num_simulations, changed.train.batch_size) == (64, 128)
    assert base == get_config("tic_tac_toe")
    assert overrides == {"search.num_simulations": "64", "train.batch_size": "128"}
    # Untouched fields keep the base config's values, not the generic defaults.
    assert changed.network == base.network and changed.selfplay == base.selfplay


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"search.num_simulation": "4"}, "search.num_simulation"),  # typo
        ({"colour": "red"}, "colour"),
        ({"network.num_blocks": "two"}, "network.num_blocks"),
        ({"network.num_blocks": "2.5"}, "network.num_blocks"),
        ({"selfplay.num_games": True}, "selfplay.num_games"),
        ({"train.augment": "maybe"}, "train.augment"),
        ({"train.learning_rate": "fast"}, "train.learning_rate"),
        ({"game": "chess"}, "game"),
        ({"search.num_simulations": "0"}, "search.num_simulations"),
        ({"search.max_num_considered_actions": 0}, "search.max_num_considered_actions"),
        ({"network.num_channels": -8}, "network.num_channels"),
        ({"network.compute_dtype": "float16"}, "network.compute_dtype"),
        ({"network.value_head": "categorical"}, "network.value_head"),
        ({"search.policy": "alphabeta"}, "search.policy"),
        ({"search.dirichlet_fraction": 1.5}, "search.dirichlet_fraction"),
        ({"search.value_scale": 0}, "search.value_scale"),
        ({"search.gumbel_moves": -1}, "search.gumbel_moves"),
        ({"selfplay.num_games": 0}, "selfplay.num_games"),
        ({"selfplay.num_steps": 0}, "selfplay.num_steps"),
        ({"selfplay.opening_moves": -1}, "selfplay.opening_moves"),
        ({"selfplay.resign_disabled_fraction": 1.5}, "selfplay.resign_disabled_fraction"),
        ({"selfplay.full_search_fraction": 0}, "selfplay.full_search_fraction"),
        ({"selfplay.full_search_fraction": 0.25, "search.num_simulations": 4,
          "selfplay.fast_search_simulations": 4}, "must be fewer than search.num_simulations"),
        ({"selfplay.full_search_fraction": 0.25, "selfplay.fast_search_simulations": 0},
         "selfplay.fast_search_simulations"),
        ({"selfplay.full_search_fraction": 0.25, "search.reuse_tree": True}, "does not work with search.reuse_tree"),
        ({"train.replay_capacity": 16, "train.batch_size": 32}, "train.replay_capacity"),
        ({"train.replay_capacity": 1024, "selfplay.num_games": 64, "selfplay.num_steps": 32}, "one iteration's"),
        ({"train.learning_rate": 0}, "train.learning_rate"),
        # NaN passes comparisons such as `x < 0`: every float field must be finite.
        ({"train.learning_rate": "inf"}, "train.learning_rate must be a finite number"),
        ({"train.learning_rate": "nan"}, "train.learning_rate must be a finite number"),
        ({"train.weight_decay": "nan"}, "train.weight_decay must be a finite number"),
        ({"train.reply_policy_weight": "nan"}, "train.reply_policy_weight must be a finite number"),
        ({"selfplay.resign_threshold": "nan"}, "selfplay.resign_threshold must be a finite number"),
        ({"train.value_loss_weight": -1}, "train.value_loss_weight must be >= 0"),
        ({"train.ema_decay": 1.0}, "train.ema_decay must be in [0, 1)"),  # an average that never moves
        ({"train.ema_decay": -0.5}, "train.ema_decay must be in [0, 1)"),
        ({"search.dirichlet_alpha": 0}, "search.dirichlet_alpha must be > 0"),  # NaN noise, even at fraction 0
        ({"search.dirichlet_alpha": -1}, "search.dirichlet_alpha must be > 0"),
        ({"search.pb_c_init": -5}, "search.pb_c_init must be > 0"),
        ({"search.pb_c_base": 0}, "search.pb_c_base must be > 0"),
        ({"search.gumbel_scale": -1}, "search.gumbel_scale must be >= 0"),
        ({"train.lr_schedule": "linear"}, "train.lr_schedule"),
        ({"train.optimizer": "rmsprop"}, "train.optimizer"),
        ({"train.num_sgd_steps": 0}, "train.num_sgd_steps"),
        ({"num_iterations": 0}, "num_iterations"),
    ],
)
def test_bad_override_raises_config_error_naming_the_field(overrides, field):
    with pytest.raises(ConfigError) as info:
        with_overrides(get_config("tic_tac_toe"), overrides)
    assert field in str(info.value)
    assert isinstance(info.value, ValueError)


def test_field_without_its_section_suggests_the_full_name():
    with pytest.raises(ConfigError, match=r"did you mean 'search\.num_simulations'"):
        with_overrides(Config(), {"num_simulations": 8})


@pytest.mark.parametrize(
    ("config", "field"),
    [
        (Config(game="chess"), "game"),
        (Config(search=SearchConfig(num_simulations=0)), "search.num_simulations"),
        (Config(search=SearchConfig(num_simulations=2.5)), "search.num_simulations"),  # type: ignore[arg-type]
        (Config(network=NetworkConfig(num_blocks=True)), "network.num_blocks"),
        (Config(selfplay=SelfPlayConfig(num_games=0)), "selfplay.num_games"),
        (Config(train=TrainConfig(batch_size=64, replay_capacity=32)), "train.replay_capacity"),
        (Config(train=TrainConfig(value_target_mix=1.5)), "train.value_target_mix"),
        (Config(train=TrainConfig(value_target_mix=-0.1)), "train.value_target_mix"),
        (Config(train=TrainConfig(value_target_mix=0.5, value_target_lambda=1.5)), "train.value_target_lambda"),
        (Config(train=TrainConfig(value_target_lambda=0.8)), "set train.value_target_mix > 0"),
        (Config(selfplay=SelfPlayConfig(num_games=8, start_search_games=8)), "selfplay.start_search_games"),
        (Config(search=SearchConfig(num_simulations=64), selfplay=SelfPlayConfig(start_search_games=8)),
         "selfplay.start_search_simulations"),
        (Config(search=SearchConfig(reuse_tree=True), selfplay=SelfPlayConfig(start_search_games=8)),
         "does not work with search.reuse_tree"),
        (Config(train=TrainConfig(policy_surprise_weight=1.0)), "train.policy_surprise_weight"),
        (Config(train=TrainConfig(policy_surprise_weight=-0.5)), "train.policy_surprise_weight"),
    ],
)
def test_validate_names_the_bad_field_of_a_built_config(config, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        config.validate()


def test_validate_rejects_a_string_learning_rate_with_config_error():
    config = Config(train=TrainConfig(learning_rate="3e-4"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"train\.learning_rate"):
        config.validate()


@pytest.mark.parametrize(
    "config",
    [
        Config(train=TrainConfig(augment="no")),  # type: ignore[arg-type]
        Config(selfplay=SelfPlayConfig(resign_threshold="0.5")),  # type: ignore[arg-type]
    ],
    ids=["augment", "resign_threshold"],
)
def test_validate_rejects_wrong_types_of_bool_and_optional_fields(config):
    with pytest.raises(ConfigError, match="must be"):
        config.validate()


# --------------------------------------------------------------------------------------------------------------
# JSON


@pytest.mark.parametrize(("game", "preset"), PRESET_KEYS)
def test_json_round_trip_of_presets(game, preset):
    config = get_config(game, preset)
    text = to_json(config)
    assert json.loads(text)["game"] == game
    assert from_json(text) == config


def test_json_round_trip_keeps_optional_and_changed_fields():
    config = with_overrides(
        get_config("connect_four"),
        {"selfplay.resign_threshold": "-0.9", "train.augment": "false", "search.policy": "puct", "seed": "3"},
    )
    restored = from_json(to_json(config))
    assert restored == config
    assert restored.selfplay.resign_threshold == -0.9 and restored.train.augment is False
    none_threshold = dataclasses.replace(config, selfplay=dataclasses.replace(config.selfplay, resign_threshold=None))
    assert from_json(to_json(none_threshold)).selfplay.resign_threshold is None


def test_from_json_accepts_a_subset_and_fills_in_defaults():
    config = from_json('{"game": "connect_four", "search": {"num_simulations": 8}}')
    assert config.game == "connect_four" and config.search.num_simulations == 8
    assert config.train == TrainConfig() and config.network == NetworkConfig()


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"search": {"num_simulation": 4}}', "search.num_simulation"),
        ('{"colour": "red"}', "colour"),
        ('{"train": {"batch_size": "many"}}', "train.batch_size"),
        ('{"train": {"learning_rate": [0.1]}}', "train.learning_rate"),
        ('{"network": {"num_blocks": 1.5}}', "network.num_blocks"),
        ('{"game": 5}', "game"),
        ('{"search": 5}', "search"),
        ('{"search": {"num_simulations": 0}}', "search.num_simulations"),
        ('{"train": {"learning_rate": NaN}}', "train.learning_rate must be a finite number"),  # json.loads takes it
        ('{"train": {"weight_decay": Infinity}}', "train.weight_decay must be a finite number"),
    ],
)
def test_from_json_rejects_unknown_fields_and_wrong_types_by_name(text, field):
    with pytest.raises(ConfigError) as info:
        from_json(text)
    assert field in str(info.value)


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '"tic_tac_toe"'])
def test_from_json_rejects_what_is_not_a_json_object(text):
    with pytest.raises(ConfigError):
        from_json(text)


def test_every_field_has_help_text():
    paths = config_lib.field_paths()
    assert "search.num_simulations" in paths and "game" in paths
    missing = [path for path, (_, _, help_text) in paths.items() if not help_text]
    assert missing == []
    # The listed defaults are the generic ones, and the types are the annotated ones.
    assert paths["search.num_simulations"][:2] == (int, SearchConfig().num_simulations)
    assert paths["train.learning_rate"][0] is float


def test_validation_does_not_read_the_source(monkeypatch):
    """Only the help text comes from the field comments in the source, which an install may not ship: checking,
    overriding and loading configs work without it (and never pay for reading it)."""
    import inspect

    def no_source(obj):
        raise OSError("could not get source code")

    monkeypatch.setattr(inspect, "getsource", no_source)
    config_lib._field_comments.cache_clear()
    try:
        config = with_overrides(get_config("tic_tac_toe"), {"search.num_simulations": "8"})
        assert from_json(to_json(config)) == config
        assert config_lib.field_paths()["search.num_simulations"] == (int, 32, "")  # no help without the source
    finally:
        config_lib._field_comments.cache_clear()  # read again, from the source, by the next caller


@pytest.mark.parametrize("preset", ["cpu", "gpu"])
@pytest.mark.parametrize("game", ["tic_tac_toe", "connect_four", "gomoku", "gomoku9", "othello", "othello6", "brandub"])
def test_every_preset_trains_the_measured_samples_per_played_position(game, preset):
    """The ratio measured on the CPU presets, kept on the GPU ones
    (experiments/studies/presets/results/presets-cpu-2026-11-24-replay_ratio.md): 2 samples per played position where
    unfinished games are dropped, 4 where they are kept (about twice the positions reach replay: the same samples per
    position there, as measured on Connect Four)."""
    config = get_config(game, preset)
    samples = config.train.num_sgd_steps * config.train.batch_size
    expected = 4 if config.selfplay.keep_unfinished else 2
    assert presets.samples_per_played_position(config.selfplay) == expected
    assert samples == expected * config.selfplay.num_games * config.selfplay.num_steps
