"""Shipped agents (`azjax.pretrained`): packaging a run as one, loading it by `pretrained:GAME` everywhere (specs,
`azjax play GAME`, `azjax pretrained`), `--init-from` and its refusals, the observation version every saved network
records, and every agent shipped in the package beating a random player."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import sys

import jax
import numpy as np
import pytest
from flax import serialization
from tiny import cli_args

import azjax
from azjax import (
    agent_specs,
    arena,
    bots,
    checkpointing,
    cli,
    config,
    evaluation,
    exports,
    games,
    network_bots,
    presets,
    pretrained,
    rundir,
    trainer,
    training,
    warm_start,
)
from azjax.cli import train as train_command
from azjax.games import registry

pytestmark = [pytest.mark.usefixtures("persistent_compile_cache"),
              pytest.mark.filterwarnings("ignore:Some donated buffers were not usable")]

NATIVE = ("tic_tac_toe", "connect_four", "gomoku9", "othello6", "brandub")  # each ships an agent


def run_cli(argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        real_stdin, sys.stdin = sys.stdin, io.StringIO(stdin)
        try:
            code = cli.main([str(a) for a in argv])
        except SystemExit as exit_:
            code = exit_.code
        finally:
            sys.stdin = real_stdin
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def run(tmp_path_factory, tiny_overrides):
    """A TINY tic-tac-toe run (2 iterations: the program other modules compile, from the session's cache)."""
    root = tmp_path_factory.mktemp("pretrained")
    args = cli_args(tiny_overrides)
    code, _, err = run_cli(["train", "--out", root / "run", "--iterations", "2", "--eval-every", "0",
                            "--no-progress", "--no-compile-cache", *args])
    assert code == 0, err
    return root / "run"


@pytest.fixture()
def shipped(run, tmp_path, monkeypatch):
    """A package directory of shipped agents holding the TINY run as tic-tac-toe's."""
    monkeypatch.setattr(pretrained, "DIRECTORY", tmp_path)
    config_, variables = exports.restore_model(run)
    pretrained.write(tmp_path / "tic_tac_toe", config_, variables,
                     {"observation_version": 1, "training": {"iterations": 2}, "strength": []})
    return tmp_path


def test_a_packaged_run_plays_exactly_as_the_run(run, shipped):
    card = pretrained.card("tic_tac_toe")
    assert card["format"] == pretrained.CARD_FORMAT and card["observation_version"] == 1
    data = (shipped / "tic_tac_toe" / pretrained.MODEL_FILE).read_bytes()
    assert card["model_bytes"] == len(data) and data[:1] != b"\x80"  # msgpack, not a pickle (protocol 2+ opcode)
    ours, theirs = azjax.load_agent(run), azjax.load_agent("pretrained:tic_tac_toe")
    states = jax.vmap(ours.game.init)(jax.random.split(jax.random.key(0), 4))
    states = jax.vmap(ours.game.step)(states, jax.numpy.array([0, 4, 8, 2]))
    for a, b in zip(ours.policy_value(states), theirs.policy_value(states), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert card["parameters"] == sum(np.size(x) for x in jax.tree.leaves(ours.variables["params"]))


def test_damaged_or_misfitting_weights_are_refused(shipped):
    path = shipped / "tic_tac_toe" / pretrained.MODEL_FILE
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(checkpointing.CheckpointError, match="does not match its model card's checksum"):
        pretrained.restore("pretrained:tic_tac_toe")
    # Whole and checksummed, but the arrays of another network (the preset's, wider than the TINY config's).
    template = pretrained.model_template(presets.get_config("tic_tac_toe"))
    new = serialization.msgpack_serialize(jax.tree.map(lambda s: np.zeros(s.shape, s.dtype), template))
    path.write_bytes(new)
    card_path = shipped / "tic_tac_toe" / pretrained.CARD_FILE
    card = json.loads(card_path.read_text())
    card["sha256"] = hashlib.sha256(new).hexdigest()
    card_path.write_text(json.dumps(card))
    with pytest.raises(checkpointing.CheckpointError,
                       match=r"does not fit its config: parameter params/\w+/\w+ has shape \(16,\) there and "
                             r"\(8,\) here"):
        pretrained.restore("pretrained:tic_tac_toe")


def test_a_game_name_or_pretrained_spec_means_the_shipped_agent(shipped):
    assert agent_specs.shipped_game("pretrained:tic_tac_toe") == "tic_tac_toe"
    assert agent_specs.shipped_game("tic_tac_toe") == "tic_tac_toe"
    assert agent_specs.shipped_game("random") is None and agent_specs.shipped_game("mcts:8") is None
    assert agent_specs.game_of_spec("tic_tac_toe") == "tic_tac_toe"
    assert agent_specs.game_of_spec("az:pretrained:tic_tac_toe:8") == "tic_tac_toe"
    with pytest.raises(agent_specs.SpecError, match=r"no trained agent ships with azjax for connect_four .shipped: "
                                             r"tic_tac_toe.; train one with `azjax train --game connect_four`"):
        agent_specs.game_of_spec("connect_four")
    game = games.make("tic_tac_toe")
    assert agent_specs.make_bot("greedy:tic_tac_toe", game).name == "greedy:pretrained:tic_tac_toe"  # named as loaded
    with pytest.raises(agent_specs.SpecError, match="was trained on tic_tac_toe, not connect_four"):
        agent_specs.make_bot("pretrained:tic_tac_toe", games.make("connect_four"))
    with pytest.raises(checkpointing.CheckpointError, match="one shipped network; it has no other iterations"):
        azjax.load_agent("pretrained:tic_tac_toe", iteration=3)


def test_the_listing_names_no_run_directory_of_the_machine_that_measured_an_agent():
    """A card's opponent that is a run directory (runs/lever-base-s0) is a path on another machine: neither the
    shipped cards' summaries (the README's table) nor `azjax pretrained` name it; experiments/tools/pretrain.py calls
    its --reference by --reference-name."""
    assert pretrained.names()
    for game in pretrained.names():
        for figure in pretrained.card(game)["strength"]:
            opponent = figure.get("result", {}).get("name_b", "")
            assert not figure["summary"].startswith(f"vs {opponent}:") or "/" not in opponent, (game, figure["summary"])
        assert "runs/" not in pretrained.describe(game)


def test_the_command_line_lists_and_plays_the_shipped_agents(shipped):
    code, out, _ = run_cli(["pretrained"])
    assert code == 0 and out.startswith("pretrained:tic_tac_toe: ")
    assert "strength not measured yet" in out and "No agent ships for brandub, brandub_document, connect_four" in out
    code, out, err = run_cli(["play", "--seed", "1"], stdin="quit\n")  # no agent: tic-tac-toe's shipped one
    assert code == 0, err
    assert "Loading pretrained:tic_tac_toe" in out
    code, _, err = run_cli(["play", "othello6"])
    assert code == 2 and "no trained agent ships with azjax for othello6" in err


def test_init_from_starts_from_the_sources_weights_and_refuses_what_does_not_fit(run, shipped, tmp_path,
                                                                               tiny_config):
    weights = warm_start.warm_start_weights(tiny_config, "pretrained:tic_tac_toe", log=lambda _: None)
    source = exports.restore_model(run)[1]
    for a, b in zip(jax.tree.leaves(weights), jax.tree.leaves(source), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    wider = config.with_overrides(tiny_config, {"network.num_channels": 16})
    with pytest.raises(checkpointing.CheckpointError, match=r"cannot start from .*: parameter params/.* has "
                       r"shape .* there and .* here; its network differs in network.num_channels \(8 there, 16 here\): "
                       "pass --network.num_channels 8"):
        warm_start.warm_start_weights(wider, run)
    other = config.with_overrides(tiny_config, {"game": "connect_four"})
    with pytest.raises(checkpointing.CheckpointError, match="trained on tic_tac_toe, and this run plays connect_four"):
        warm_start.warm_start_weights(other, run)
    with pytest.raises(checkpointing.CheckpointError, match=r"--init-from starts a new run, but .* holds one"):
        trainer.train(tiny_config, run, init_from="pretrained:tic_tac_toe")


def test_train_init_from_on_the_command_line(run, shipped, tmp_path, tiny_overrides):
    args = cli_args(tiny_overrides)
    code, out, err = run_cli(["train", "--init-from", "pretrained:tic_tac_toe", "--out", tmp_path / "warm",
                              "--iterations", "2", "--eval-every", "0", "--no-progress", "--no-compile-cache", *args])
    assert code == 0, err
    assert "Starting from the network of pretrained:tic_tac_toe" in out
    code, _, err = run_cli(["train", "--init-from", "pretrained:tic_tac_toe", "--out", tmp_path / "wide",
                            "--iterations", "1", "--no-compile-cache", *args, "--network.num_channels", "16"])
    assert code == 2 and "pass --network.num_channels 8" in err and "Traceback" not in err


def test_init_from_fits_the_preset_to_its_source_and_keeps_what_the_options_set(run, shipped, tiny_overrides):
    """`azjax train --init-from` takes the source's network shape (not its precision) and warms the learning rate up
    until the replay first fills; --network.* and --train.warmup_steps given on the command line win."""
    source, _ = exports.restore_model(run)
    plain = {name: value for name, value in tiny_overrides.items()
             if not name.startswith("network.") and name != "train.warmup_steps"}

    def config_of(*extra):
        args = cli.build_parser().parse_known_args(["train", "--init-from", str(run), *cli_args(plain), *extra])[0]
        return train_command.config_from_args(args)

    preset = presets.get_config("tic_tac_toe")
    assert preset.network != source.network  # the TINY run's network is not the preset's
    fitted, origin = config_of()
    assert fitted.network == source.network
    assert fitted.train.warmup_steps == preset.train.warmup_steps  # the TINY replay fills within the warm-up
    assert "replay buffer first fills" not in origin
    fitted, origin = config_of("--train.replay_capacity", "65536")
    per_iteration = fitted.selfplay.num_games * fitted.selfplay.num_steps
    fill = -(-fitted.train.replay_capacity // per_iteration) * fitted.train.num_sgd_steps
    assert fitted.train.warmup_steps == fill > preset.train.warmup_steps
    assert f"for a start from {run}: the source's network" in origin and f"train.warmup_steps={fill}" in origin
    fitted, origin = config_of("--network.num_blocks", "3", "--train.warmup_steps", "5")
    assert fitted.network.num_blocks == 3 and fitted.network.num_channels == source.network.num_channels
    assert fitted.train.warmup_steps == 5 and "warmup_steps=5" in origin and "replay buffer first fills" not in origin
    bf16 = config.with_overrides(preset, {"network.compute_dtype": "bfloat16"})  # e.g. a GPU preset's precision
    fitted, _ = warm_start.warm_start_config(bf16, source)
    assert fitted.network == dataclasses.replace(source.network, compute_dtype="bfloat16") != source.network
    resumed = config.with_overrides(preset, {"game": "connect_four"})
    assert warm_start.warm_start_config(resumed, source) == (resumed, [])  # another game: train() refuses it


@pytest.mark.slow  # the default suite keeps test_train_init_from_on_the_command_line
def test_a_warm_started_run_plays_as_well_as_its_source_after_one_iteration(tmp_path):
    """The issue's bar on the real shipped tic-tac-toe agent and the preset: one iteration of self-play and 128 SGD
    steps later the network still plays the optimal move in (nearly) every labelled position. At the preset's own
    warm-up of 100 steps it fell from 100% to 98.8% here (54 of the 4520 positions): the check fails without
    warm_start_config."""
    source = pretrained.restore("pretrained:tic_tac_toe")[0]
    assert pretrained.card("tic_tac_toe")["strength"][0]["result"]["network"]["optimal_move_rate"] == 1.0
    preset = config.with_overrides(presets.get_config("tic_tac_toe"), {"num_iterations": 1})
    fitted, _ = warm_start.warm_start_config(preset, source)
    result = trainer.train(fitted, tmp_path / "warm", init_from="pretrained:tic_tac_toe", eval_every=1,
                           eval_opponents=("random",), progress=False, log=lambda _: None)
    assert result.history[0]["eval/optimal_move_rate"] >= 0.997, result.history[0]


def test_every_saved_network_records_its_observation_version(run, shipped, tmp_path, monkeypatch):
    manager = checkpointing.CheckpointManager(run)
    assert manager.meta(manager.latest_step())["observation_version"] == 1
    info = exports.export_model(run, tmp_path / "export")
    assert info["observation_version"] == 1
    # The game's observe changed, and it cannot build the planes these networks read: each refuses to load.
    changed = dataclasses.replace(games.make("tic_tac_toe"), observation_version=2)
    monkeypatch.setitem(registry._REGISTRY, "tic_tac_toe", registry._Entry(lambda: changed, {}))
    for source in (run, tmp_path / "export", "pretrained:tic_tac_toe"):
        with pytest.raises(checkpointing.CheckpointError, match="was trained on observation version 1 of "
                           "tic_tac_toe, but tic_tac_toe observes version 2 today and cannot build version 1"):
            exports.restore_model(source)
    with pytest.raises(checkpointing.CheckpointError, match="observes version 2 today and cannot build version 1"):
        trainer.train(config.with_overrides(rundir.read_config(run), {"num_iterations": 3}), run, progress=False,
                      log=lambda _: None)


def test_a_network_of_an_older_observation_reads_the_planes_it_was_trained_on():
    """Connect Four observes version 2 (the stones and three feature planes); the shipped agent was trained on
    version 1 (the stones): it loads with the game that builds those, and plays games of today's game."""
    today = games.make("connect_four")
    assert today.observation_version == 2 and pretrained.card("connect_four")["observation_version"] == 1
    agent = azjax.load_agent("pretrained:connect_four")
    assert agent.config.observation_version == 1 and agent.game.observation_shape == (6, 7, 2)
    match = arena.play(jax.random.key(0), today, network_bots.greedy_bot(agent), bots.random_bot(), 8, opening_moves=1)
    assert match.score >= 0.9, match
    # A new run observes today's planes; one started from the agent, the agent's (the command line's choice wins).
    preset = presets.get_config("connect_four")
    assert preset.observation_version is None and preset.make_game().observation_shape == (6, 7, 5)
    fitted, changes = warm_start.warm_start_config(preset, agent.config)
    assert fitted.observation_version == 1 and any("observation_version=1" in line for line in changes)
    kept, _ = warm_start.warm_start_config(preset, agent.config, keep=frozenset({"observation_version"}))
    assert kept.observation_version is None
    with pytest.raises(checkpointing.CheckpointError, match=r"its network differs in observation_version \(1 there, "
                       r"2 here\): pass --observation_version 1"):
        warm_start.warm_start_weights(dataclasses.replace(fitted, observation_version=2), "pretrained:connect_four")
    code, _, err = run_cli(["train", "--game", "connect_four", "--observation_version", "3", "--out", "unused"])
    assert code == 2 and "--observation_version 3: connect_four observes version 2 today and cannot produce " \
        "version 3" in err, err


def test_a_run_resumes_on_the_observation_its_checkpoint_was_trained_on(tiny_config, tmp_path):
    """A run's checkpoint of Connect Four's version 1 resumes on version 1 when the config leaves the version to
    the game (as one saved before Connect Four's version 2 does), and a new run observes today's."""
    v1 = dataclasses.replace(config.with_overrides(tiny_config, {"game": "connect_four"}), observation_version=1)
    manager = checkpointing.CheckpointManager(tmp_path / "run")
    manager.save(training.init_run_state(v1), v1)
    unstated = dataclasses.replace(v1, observation_version=None)
    resumed, fitted = trainer._check_run_dir(tmp_path / "run", unstated, manager, lambda _: None)
    assert (resumed, fitted) == (0, v1)
    with pytest.raises(checkpointing.CheckpointError, match="observation_version: 1 -> 2"):
        trainer._check_run_dir(tmp_path / "run", dataclasses.replace(v1, observation_version=2), manager,
                               lambda _: None)
    new = checkpointing.CheckpointManager(tmp_path / "new")
    assert trainer._check_run_dir(tmp_path / "new", unstated, new, lambda _: None) == (None, unstated)  # today's


# Brandub's and Othello 6x6's matches, the largest: -m slow plays them.
@pytest.mark.parametrize("game_name", [name if name not in ("brandub", "othello6") else
                                       pytest.param(name, marks=pytest.mark.slow) for name in NATIVE])
def test_every_native_game_ships_an_agent_that_beats_random(game_name):
    assert game_name in pretrained.names(), pretrained.missing_message(game_name)
    card = pretrained.card(game_name)
    assert card["game"] == game_name and card["training"]["command"].startswith(f"azjax train --game {game_name}")
    agent = azjax.load_agent(f"pretrained:{game_name}")
    match = arena.play(jax.random.key(0), agent.game, network_bots.greedy_bot(agent), bots.random_bot(), 16,
                       opening_moves=1)
    assert match.score >= 0.9, match  # the network alone, no search


def test_a_run_stops_once_an_evaluation_finds_perfect_play(tiny_config, tmp_path):
    calls = []

    def evaluator(key, variables):  # perfect from the second evaluation on; one of 4520 positions missed before
        calls.append(1)
        perfect = len(calls) >= 2
        return {"eval/perfect": 0.5, "eval/optimal_move_rate": 1.0 if perfect else 4519 / 4520}

    config_ = config.with_overrides(tiny_config, {"num_iterations": 4})
    lines: list[str] = []
    result = trainer.train(config_, tmp_path / "run", eval_every=1, evaluator=evaluator, progress=False,
                           log=lines.append)
    assert result.stop_reason == "perfect" and [r["iteration"] for r in result.history] == [1, 2]
    assert any("the network plays perfectly" in line for line in lines)
    assert checkpointing.latest_iteration(tmp_path / "run") == 2  # saved where it stopped
    # The rate below 1 is logged as below 1 (not 1.000, rounded, beside a run that goes on), the perfect one as 1.
    evaluated = [line for line in lines if " evaluation: " in line]
    assert "optimal_move_rate 0.9998 (" in evaluated[0] and "optimal_move_rate 1.000 (" in evaluated[1]
    result = trainer.train(config_, tmp_path / "on", eval_every=1, evaluator=evaluator, progress=False,
                           log=lines.append, stop_when_perfect=False)
    assert result.stop_reason == "iterations" and len(result.history) == 4
    assert not trainer.plays_perfectly({"eval/optimal_move_rate": 1.0})  # no perfect player: not judged


def test_a_shipped_agent_plays_with_its_cards_search(run, shipped):
    config_, variables = exports.restore_model(run)
    pretrained.write(shipped / "tic_tac_toe", config_, variables,
                     {"observation_version": 1, "training": {}, "play": {"search.num_simulations": 7},
                      "strength": []})
    agent = azjax.load_agent("pretrained:tic_tac_toe")
    assert agent.config.search.num_simulations == 7 and config_.search.num_simulations != 7
    assert pretrained.describe("tic_tac_toe").startswith("pretrained:tic_tac_toe (plays with search.num_simulations 7)")


def test_the_shipped_puzzle_agent_solves_the_boards_its_judge_draws():
    """pretrained:sliding_puzzle plays with its card's 128 simulations (it trained with 16); its network alone
    already solves most uniformly random boards, which random play never does within 40 moves."""
    card = pretrained.card("sliding_puzzle")
    assert card["play"] == {"search.num_simulations": 128}
    assert card["training"]["command"].startswith("azjax train --game sliding_puzzle --seconds")
    agent = azjax.load_agent("pretrained:sliding_puzzle")
    assert agent.config.search.num_simulations == 128
    judged = evaluation.judge_episodes(jax.random.key(0), agent.game, network_bots.greedy_bot(agent), 64)
    randomly = evaluation.judge_episodes(jax.random.key(0), agent.game, bots.random_bot(), 64)
    assert judged["solved"] >= 0.4 and randomly["solved"] <= 0.05, (judged, randomly)
    code, out, err = run_cli(["play", "sliding_puzzle", "--seed", "1"], stdin="quit\n")  # the person solves it
    assert code == 0, err
    assert "with hints from pretrained:sliding_puzzle" in out and "hint: " in out, out
