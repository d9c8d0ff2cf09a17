"""A game of one's own, end to end: examples/hex5.py through the `azjax` command, each step in a fresh process
(check, train, eval, play, export, resume), the checker's warnings and test positions, game sources and presets,
and the errors when the game's module cannot be imported."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from tiny import TINY_OVERRIDES

from azjax import agent as agent_lib
from azjax import checkpointing, games, presets
from azjax import config as config_lib
from azjax.games import registry

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "hex5.py"
TINY_ARGS = [arg for key, value in TINY_OVERRIDES.items() if key != "num_iterations"
             for arg in (f"--{key}", str(value))]


def azjax(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """`azjax ARGS` in a fresh process started in `cwd`, which, as for the console script, is not on sys.path
    (python -P), so that the game is found the way a user's shell finds it."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    env.pop("PYTHONPATH", None)
    return subprocess.run([sys.executable, "-P", "-m", "azjax.cli", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def flow(tmp_path_factory) -> dict:
    """The README's flow for a game of one's own, its first commands run once (check, train, eval, and eval from a
    folder where the game's module is not found): each command's completed process by name."""
    home = tmp_path_factory.mktemp("user")
    shutil.copy(EXAMPLE, home / "hex5.py")
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    run = home / "runs" / "hex5"
    steps = {
        "home": home, "elsewhere": elsewhere, "run": run,
        "check": azjax(home, "check", "hex5:make_hex5", "--positions", "hex5:TEST_POSITIONS", "--games", "16"),
        "train": azjax(home, "train", "--game", "hex5:make_hex5", "--out", str(run), "--iterations", "2",
                       "--eval-every", "0", "--no-progress", "--devices", "1", *TINY_ARGS),
    }
    steps["config"] = json.loads((run / "config.json").read_text()) if (run / "config.json").is_file() else None
    steps["eval"] = azjax(home, "eval", str(run), "random", "--games", "4", "--devices", "1")
    steps["elsewhere_eval"] = azjax(elsewhere, "eval", str(run), "random", "--games", "4", "--devices", "1")
    return steps


@pytest.fixture(scope="module")
def later_flow(flow) -> dict:
    """The rest of the flow on the same run, each in a fresh process: play, export, resume, and resume from a
    folder where the game's module is not found."""
    home, run = flow["home"], flow["run"]
    return {
        "play": azjax(home, "play", str(run), "--first", "you", "--no-analysis", "--seed", "1", stdin="c3\nquit\n"),
        "export": azjax(home, "export", str(run), str(home / "exported")),
        "resume": azjax(home, "train", "--out", str(run), "--iterations", "3", "--eval-every", "0", "--no-progress",
                        "--devices", "1"),
        "elsewhere_resume": azjax(flow["elsewhere"], "train", "--out", str(run), "--iterations", "4",
                                  "--no-progress"),
    }


def test_azjax_check_runs_the_checker_and_the_test_positions(flow):
    done = flow["check"]
    assert done.returncode == 0, done.stderr
    assert "hex5: 16 random games" in done.stdout and "3 test positions; all checks passed" in done.stdout


def test_a_game_named_by_its_source_trains_and_its_run_records_the_source(flow):
    assert flow["train"].returncode == 0, flow["train"].stderr
    assert flow["config"]["game"] == "hex5:make_hex5"
    assert "Config: the cpu preset registered with hex5:make_hex5" in flow["train"].stdout


def test_a_later_command_finds_the_game_from_the_run_alone(flow):
    assert flow["eval"].returncode == 0, flow["eval"].stderr
    assert "hex5: 2 agents" in flow["eval"].stdout


@pytest.mark.slow  # four more processes; the default suite keeps eval's finding the game from the run alone
def test_later_commands_find_the_game_from_the_run_alone(later_flow):
    for step in ("play", "export", "resume"):
        assert later_flow[step].returncode == 0, (step, later_flow[step].stderr)
    assert "Your move: c3\n" in later_flow["play"].stdout  # moves read from a pipe are echoed
    assert "Resuming" in later_flow["resume"].stdout


def assert_says_the_module_is_not_found(done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "no module named 'hex5'" in done.stderr and "PYTHONPATH" in done.stderr, done.stderr
    assert "delete" not in done.stderr and "damaged" not in done.stderr
    assert "Traceback" not in done.stderr


def test_an_intact_run_whose_game_cannot_be_imported_says_so_and_never_advises_deleting(flow):
    assert_says_the_module_is_not_found(flow["elsewhere_eval"])
    assert (flow["run"] / "checkpoints" / "2").is_dir()  # nothing was lost


@pytest.mark.slow  # see test_later_commands_find_the_game_from_the_run_alone
def test_a_resume_whose_game_cannot_be_imported_says_so_and_loses_nothing(flow, later_flow):
    assert_says_the_module_is_not_found(later_flow["elsewhere_resume"])
    assert (flow["run"] / "checkpoints" / "3").is_dir()  # resumed to iteration 3, and nothing was lost


def test_load_agent_without_the_game_module_gives_the_import_message(flow, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # hex5.py is not here, nor on sys.path
    with pytest.raises(checkpointing.CheckpointError, match="no module named 'hex5'") as caught:
        agent_lib.load_agent(flow["run"])
    assert "delete" not in str(caught.value) and "damaged" not in str(caught.value)


# ------------------------------------------------------------------------------------------------------------
# Game sources, entry points, presets (in this process)


@pytest.fixture()
def on_path(monkeypatch):
    """examples/ importable, and the registry as it was afterwards."""
    monkeypatch.syspath_prepend(str(EXAMPLE.parent))
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    yield
    sys.modules.pop("hex5", None)


def test_a_source_is_imported_and_its_registered_presets_apply(on_path):
    game = games.make("hex5:make_hex5")
    assert game.name == "hex5" and game.num_actions == 25
    config = presets.get_config("hex5:make_hex5", "cpu")
    assert config.game == "hex5:make_hex5"
    assert config.num_iterations == 60 and config.selfplay.opening_moves == 2  # the registered overrides
    assert config.network.num_blocks == 2 and config.search.num_simulations == 16  # on the derived preset
    origin = presets.preset_origin("hex5:make_hex5")
    assert "registered with hex5:make_hex5" in origin
    assert "60 iterations" in origin and "100 iterations" not in origin  # what the run trains, not the derived


def test_a_file_source_is_recorded_by_its_absolute_path(monkeypatch, on_path):
    monkeypatch.chdir(EXAMPLE.parent.parent)
    name = games.canonical("examples/hex5.py:make_hex5")
    assert name == f"{EXAMPLE}:make_hex5"
    assert games.make(name).name == "hex5"
    assert games.canonical("connect_four") == "connect_four" and games.canonical("pgx:go_9x9") == "pgx:go_9x9"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("hex5", "unknown game 'hex5'.*MODULE:FACTORY"),
        ("no_such_module:make", "no module named 'no_such_module'.*PYTHONPATH"),
        ("hex5:make_hex6", "module hex5 has no 'make_hex6' .it has make_hex5"),
        ("missing/file.py:make", "no file .*file.py"),
        ("pgx:no_such_env", "unknown pgx environment .no_such_env.; supported"),
    ],
)
def test_a_game_that_cannot_be_found_says_why(on_path, name, message):
    with pytest.raises(games.GameNotFoundError, match=message):
        games.make(name)
    with pytest.raises(config_lib.UnknownGameError, match=message):
        config_lib.Config(game=name).validate()


def test_an_error_inside_the_users_module_is_reported_as_such(tmp_path, monkeypatch):
    (tmp_path / "broken_game.py").write_text("import numpy\nraise RuntimeError('my bug')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(games.GameNotFoundError, match="importing broken_game failed with RuntimeError: my bug"):
        games.make("broken_game:make")


def test_installed_packages_offer_games_through_entry_points(on_path, monkeypatch):
    offered = importlib.metadata.EntryPoint(name="hex5_installed", value="hex5:make_hex5", group="azjax.games")
    monkeypatch.setattr(registry, "_entry_points", lambda: {"hex5_installed": offered})
    assert "hex5_installed" in games.names()
    assert games.make("hex5_installed").name == "hex5"
    assert presets.get_config("hex5_installed").num_iterations == 60  # the module registered presets


def test_a_game_without_presets_gets_one_derived_from_its_sizes(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    games.register("big_actions", lambda: dataclasses.replace(games.make("connect_four"), num_actions=7))
    cpu, gpu = presets.get_config("big_actions", "cpu"), presets.get_config("big_actions", "gpu")
    assert (cpu.network.num_blocks, cpu.search.num_simulations, cpu.selfplay.num_games) == (2, 16, 128)
    assert (gpu.network.num_channels, gpu.selfplay.num_games, gpu.network.compute_dtype) == (128, 2048, "bfloat16")
    assert cpu.train.replay_capacity >= cpu.selfplay.num_games * (cpu.selfplay.num_steps + 42)
    # The CPU training measured on three games (presets.CPU_TRAIN) with unfinished games kept, 4 samples per played
    # position; the derived GPU preset keeps the earlier GPU presets' training (measured on no accelerator): dropped, 2.
    assert cpu.train.lr_schedule == "cosine" and cpu.train.value_target_mix == 0.5 and cpu.selfplay.keep_unfinished
    assert cpu.train.num_sgd_steps * cpu.train.batch_size == 4 * cpu.selfplay.num_games * cpu.selfplay.num_steps
    assert gpu.train.lr_schedule == "constant" and not gpu.selfplay.keep_unfinished
    assert gpu.train.num_sgd_steps * gpu.train.batch_size == 2 * gpu.selfplay.num_games * gpu.selfplay.num_steps
    assert "no cpu preset of its own, so one derived from its sizes" in presets.preset_origin("big_actions")
    assert presets.preset_origin("connect_four") == "connect_four's own cpu preset"
    with pytest.raises(ValueError, match="unknown preset names"):
        games.register("bad_presets", lambda: games.make("connect_four"), presets={"tpu": {}})


# ------------------------------------------------------------------------------------------------------------
# The checker's blind spots


@pytest.fixture(scope="module")
def hex5(tmp_path_factory):
    sys.path.insert(0, str(EXAMPLE.parent))
    try:
        import hex5 as module
    finally:
        sys.path.remove(str(EXAMPLE.parent))
    return module


def test_the_example_and_the_catalog_raise_no_warning(hex5):
    assert games.check_game(hex5.make_hex5(), num_games=16, positions=hex5.TEST_POSITIONS).warnings == ()
    assert games.check_game(games.make("connect_four"), num_games=16).warnings == ()


def test_a_winner_paid_minus_one_is_warned_about(hex5):
    game = hex5.make_hex5()

    def flipped_step(state, action):
        after = game.step(state, action)
        return after.replace(rewards=-after.rewards)  # the planted bug: the winner gets -1

    # An illegal move must still cost its mover: flip only the rewards of legal moves, the bug as users write it.
    def planted(state, action):
        legal = state.legal_action_mask[jnp.clip(action, 0, game.num_actions - 1)] & ~state.terminated
        return jax.tree.map(lambda a, b: jnp.where(legal, a, b), flipped_step(state, action), game.step(state, action))

    with pytest.warns(games.GameCheckWarning, match="final move lost all .* decisive random games"):
        report = games.check_game(dataclasses.replace(game, step=planted), num_games=16)
    assert "reward's sign flipped" in report.warnings[0] and "warning:" in str(report)


def test_a_wrong_test_position_is_caught_with_the_field_named(hex5):
    game = hex5.make_hex5()
    board = hex5.TEST_POSITIONS[0].board
    for position, message in (
        (games.Position(board, move="a5", winner=1), "after a5: winner should be 1, got 0"),
        (games.Position(board, move="b5", terminated=True), "after b5: terminated should be True, got False"),
        (games.Position(board, legal=["a5"]), "b5, c5, d5, e5 should not be legal but is"),
        (games.Position(board, to_move=1), "current_player should be 1, got 0"),
        (games.Position(board, move="a5", rewards=(-1.0, 1.0)), "rewards should be"),
        (games.Position("X X\n", legal=[]), "from_ascii failed: ValueError"),
        (games.Position(board, move="z9"), "string_to_action.'z9'. failed"),
    ):
        with pytest.raises(games.GameCheckError, match=message) as caught:
            games.check_game(game, num_games=2, positions=[position])
        assert caught.value.check == "positions"


def test_a_symmetry_failure_names_the_first_field_that_differs(hex5):
    game = hex5.make_hex5()
    rot180 = game.symmetries[0]
    wrong = dataclasses.replace(rot180, action_index=tuple(range(25)))  # the board turns, the actions do not
    with pytest.raises(games.GameCheckError, match=r"first differing element is observation\[\d, \d, \d\]: [01] in the "
                       r"mirror game, [01] in transform"):
        games.check_game(dataclasses.replace(game, symmetries=(wrong,)), num_games=4)


def test_azjax_check_exits_1_on_a_failure(tmp_path):
    (tmp_path / "bad_hex.py").write_text(
        EXAMPLE.read_text() + "\nBAD = [games.Position(TEST_POSITIONS[0].board, move='a5', winner=1)]\n"
    )
    done = azjax(tmp_path, "check", "bad_hex:make_hex5", "--positions", "bad_hex:BAD", "--games", "4")
    assert done.returncode == 1
    assert "FAILED" in done.stderr and "winner should be 1, got 0" in done.stderr
