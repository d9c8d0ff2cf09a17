"""`azjax play`: a person against an agent in the terminal, driven here by scripted input."""

from __future__ import annotations

import builtins
import itertools
import json
import operator
import random
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import agent_specs, bots, checkpointing, cli, games, network_bots, play, presets, rundir
from azjax import config as config_lib
from azjax.bots import Analysis
from azjax.training import init_run_state


class Script:
    """Scripted input: returns the lines in order, then raises EOFError; records the prompts."""

    def __init__(self, lines):
        self.lines = iter(lines)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        try:
            return next(self.lines)
        except StopIteration:
            raise EOFError from None


@pytest.fixture(scope="module")
def ttt():
    return games.make("tic_tac_toe")


@pytest.fixture(scope="module")
def onestep(ttt):
    return bots.onestep_bot(ttt)


def run(game, bot, lines, **kwargs):
    script, shown = Script(lines), []
    record = play.play_game(game, bot, input_fn=script, output_fn=shown.append, **kwargs)
    return record, "\n".join(shown), script


def test_malformed_and_illegal_moves_then_quit(ttt, onestep):
    # The person (X) takes b2; the agent answers; then a malformed move, an occupied cell, help, and quit.
    record, out, script = run(ttt, onestep, ["b2", "zz", "b2", "help", "quit", "a1"])
    assert record.outcome is None and record.moves[0] == "b2" and len(record.moves) == 2
    assert "Not a move: cannot read 'zz' as a move" in out
    assert "b2 is not legal here. Legal moves:" in out
    assert out.count("Legal moves:") == 2
    assert "You quit the game." in out
    assert len(script.prompts) == 5  # "a1" after quit is never read
    assert "  a b c\n1 . . ." in out  # the board with its coordinates


def test_end_of_input_quits_cleanly(ttt, onestep):
    record, out, _ = run(ttt, onestep, [])
    assert record.outcome is None and record.moves == [] and "You quit the game." in out


@pytest.mark.parametrize("human_player", [0, 1])
def test_full_game_to_the_end(ttt, onestep, human_player):
    # The person tries every cell in turn; occupied ones are refused and the next is tried.
    cells = [f"{c}{r}" for r in "123" for c in "abc"]
    record, out, _ = run(ttt, onestep, itertools.cycle(cells), human_player=human_player)
    assert record.outcome in (-1.0, 0.0, 1.0)
    assert bool(record.final_state.terminated)
    assert out.splitlines()[-1] in ("You win!", "The agent wins.", "Draw.")
    assert len(record.moves) == int(np.sum(np.asarray(record.final_state.board) != 0))
    assert "onestep plays" in out
    agent_first = out.index("onestep plays") < out.index("O to move")
    assert agent_first == (human_player == 1)
    assert ("moving second" if human_player else "moving first") in out.splitlines()[0]


def test_the_opening_has_the_moves_asked_for(ttt, onestep):
    """Six random moves could win on move 5; such moves are not drawn (the arena's `non_ending_moves`), so every
    opening has all six and the person (X) then moves."""
    for seed in range(12):
        record, out, _ = run(ttt, onestep, ["quit"], opening_moves=6, key=jax.random.key(seed))
        assert len(record.moves) == 6 and not bool(record.final_state.terminated), seed
        assert "Opening (6 random moves)" in out


class Person:
    """Asks for 'help', then plays a random one of the legal moves it lists."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.shown: list[str] = []

    def input(self, prompt: str) -> str:
        last = self.shown[-1] if self.shown else ""
        if last.startswith("Legal moves: "):
            return self.rng.choice(last.removeprefix("Legal moves: ").split(" ('quit'")[0].split())
        return "help"

    def output(self, text: str) -> None:
        self.shown.append(text)


@pytest.mark.parametrize("name", [name for name in games.names() if games.make(name).num_players == 2])
def test_every_registered_game(name):
    """(A one-player game is played alone: tests/test_one_player.py.)"""
    game = games.make(name)
    person = Person(seed=0)
    record = play.play_game(game, bots.random_bot(), key=jax.random.key(1), input_fn=person.input,
                            output_fn=person.output)
    out = "\n".join(person.shown)
    assert record.outcome in (-1.0, 0.0, 1.0) and bool(record.final_state.terminated)
    assert "random plays" in out and "its value of the position: no estimate" in out
    assert "Not a move" not in out and "not legal here" not in out


def test_describe_move(ttt):
    analysis = Analysis(
        action=jnp.array([4]),
        policy=jnp.array([[0.1, 0, 0, 0, 0.6, 0, 0, 0, 0.3]]),
        value=jnp.array([0.25]),
        action_values=jnp.array([[0.5, jnp.nan, jnp.nan, jnp.nan, 0.25, jnp.nan, jnp.nan, jnp.nan, jnp.nan]]),
    )
    text = play.describe_move(ttt, "az", analysis)
    assert text.splitlines() == [
        "az plays b2.",
        "  its value of the position: +0.25 (+1 it wins, -1 it loses)",
        "  top moves: b2 60% (value +0.25), c3 30%, a1 10% (value +0.50)",
    ]
    assert play.describe_move(ttt, "az", analysis, show_analysis=False) == "az plays b2."


# --------------------------------------------------------------------------------------------------------------
# The command


@pytest.fixture(scope="module")
def untrained_run(tmp_path_factory, tiny_config):
    """A run directory holding an untrained TINY network (no training needed to test loading and playing)."""
    path = tmp_path_factory.mktemp("untrained")
    rundir.write_config(path, tiny_config)
    run_state = jax.jit(init_run_state, static_argnums=0)(tiny_config)  # one compile beats many eager ops
    checkpointing.CheckpointManager(path).save(run_state.replace(iteration=jnp.int32(1)), tiny_config)
    return path


def scripted_input(monkeypatch, lines):
    script = Script(lines)
    monkeypatch.setattr(builtins, "input", script)
    return script


def test_cli_play_against_a_network(monkeypatch, capsys, untrained_run):
    cells = [f"{c}{r}" for r in "123" for c in "abc"]
    scripted_input(monkeypatch, itertools.cycle(cells))
    assert cli.main(["play", f"greedy:{untrained_run}", "--first", "agent", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert f"greedy:{untrained_run} plays" in out and "top moves:" in out and "Moves: " in out
    assert any(line in out for line in ("You win!", "The agent wins.", "Draw."))


def test_cli_play_quits_cleanly(monkeypatch, capsys):
    scripted_input(monkeypatch, ["b7", "quit"])
    assert cli.main(["play", "perfect", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "row 7 is off the board" in out and "You quit the game." in out


def test_cli_play_connect_four(monkeypatch, capsys):
    scripted_input(monkeypatch, ["x", "9", "d", "quit"])
    assert cli.main(["play", "onestep", "--game", "connect_four", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert out.count("Not a move:") == 2 and "onestep plays" in out and "1 . . . X" in out


def test_a_games_name_plays_its_shipped_agent_named_as_such(monkeypatch, capsys):
    scripted_input(monkeypatch, ["quit"])
    assert cli.main(["play", "connect_four", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "Loading pretrained:connect_four ..." in out and "against pretrained:connect_four." in out
    assert not re.findall(r"(?<!pretrained:)\bconnect_four\b(?!: you)", out), out  # the agent: never the bare name
    assert agent_specs.make_bot("connect_four", games.make("connect_four")).name == "pretrained:connect_four"
    assert [agent_specs.bot_name(spec) for spec in ("greedy:connect_four", "az:connect_four:64:reuse", "mcts:400")] == [
        "greedy:pretrained:connect_four", "az:pretrained:connect_four:64:reuse", "mcts:400"]


@pytest.mark.parametrize("arguments", [["RUN"], ["RUN", "--game", "nosuchmodule:make_it"],
                                       ["--game", "nosuchmodule:make_it"], ["nosuchmodule:make_it"]])
def test_a_missing_game_module_is_advised_on_once(arguments, tmp_path, capsys):
    """A run whose config names a game module that is not importable here, or that module named directly."""
    config = json.loads(config_lib.to_json(presets.get_config("tic_tac_toe")))
    (tmp_path / "config.json").write_text(json.dumps(dict(config, game="nosuchmodule:make_it")))
    assert cli.main(["play", *(str(tmp_path) if a == "RUN" else a for a in arguments)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.count("run the command where") <= 1 and "make the game importable" not in err
    if "no module named" in err:
        assert err.count("run the command where the module's file is, add its directory to PYTHONPATH") == 1


def test_cli_play_bad_agent(capsys):
    assert cli.main(["play", "mcts:-3"]) == 2
    assert "not a whole number" in capsys.readouterr().err


def test_cli_play_connect_four_perfect_after_an_opening(monkeypatch, capsys):
    scripted_input(monkeypatch, ["quit"])
    assert cli.main(["play", "perfect", "--game", "connect_four", "--opening-moves", "10", "--first", "agent",
                     "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "Opening (10 random moves): " in out and "perfect plays" in out
    assert "You quit the game." in out or "The agent wins." in out  # a random opening may leave a win in one
    assert len(out.split("Opening (10 random moves): ")[1].split("\n")[0].split()) == 10


def test_cli_play_connect_four_perfect_needs_an_opening(capsys):
    assert cli.main(["play", "perfect", "--game", "connect_four"]) == 2
    err = capsys.readouterr().err
    assert "--opening-moves 10" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("dtype", [jnp.int32, jnp.float32])  # counts, whatever dtype a search gives them in
def test_describe_move_shows_what_decided_a_search(ttt, dtype):
    analysis = Analysis(
        action=jnp.array([8]),
        policy=jnp.array([[0.1, 0, 0, 0, 0.6, 0, 0, 0, 0.3]]),
        value=jnp.array([0.25]),
        action_values=jnp.array([[0.5, jnp.nan, jnp.nan, jnp.nan, -0.25, jnp.nan, jnp.nan, jnp.nan, 0.75]]),
        visits=jnp.array([[2, 0, 0, 0, 2, 0, 0, 0, 4]], dtype),
    )
    assert play.describe_move(ttt, "az", analysis).splitlines()[2] == (
        "  most searched: c3 4 visits, value +0.75, policy 30%; b2 2 visits, value -0.25, policy 60%; "
        "a1 2 visits, value +0.50, policy 10%"
    )
    one = analysis.replace(action=jnp.array([0]), visits=jnp.array([[1, 0, 0, 0, 0, 0, 0, 0, 0]], dtype))
    assert play.describe_move(ttt, "az", one).splitlines()[2].startswith("  most searched: a1 1 visit, value")


def test_a_searching_agent_shows_the_move_it_plays_first(tiny_overrides):
    """Gumbel MuZero plays the best move that survived sequential halving, which is not always the improved
    policy's first: the display lists the search's moves by visits, so its first is the move played."""
    from azjax import config as config_lib
    from azjax.agent import make_agent
    from azjax.networks import init_variables, make_network

    config = config_lib.with_overrides(presets.get_config("connect_four"), {**tiny_overrides,
                                                                               "search.num_simulations": 8})
    game, num_positions = games.make("connect_four"), 64
    network = make_network(config.network, game.num_actions)
    agent = make_agent(config, init_variables(network, jax.random.key(1), game.observation_shape))
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(0), num_positions))
    step = jax.jit(jax.vmap(game.step))
    for move in range(6):  # random openings of 6 moves (Connect Four cannot end sooner)
        keys = jax.random.split(jax.random.key(move + 10), num_positions)
        actions = jax.vmap(lambda k, m: jax.random.categorical(k, jnp.where(m, 0.0, -jnp.inf)))(
            keys, states.legal_action_mask)
        states = step(states, actions)
    analysis = jax.device_get(jax.jit(network_bots.alphazero_bot(agent).analyse)(jax.random.key(2), states))
    disagree = 0
    for b in range(num_positions):
        one = jax.tree.map(operator.itemgetter(slice(b, b + 1)), analysis)
        shown = play.describe_move(game, "az", one).splitlines()
        played = game.action_to_string(int(one.action[0]))
        assert shown[0] == f"az plays {played}." and shown[2].startswith(f"  most searched: {played} ")
        disagree += int(np.argmax(one.policy[0])) != int(one.action[0])
    assert disagree > 0  # positions where the improved policy's first move is not the one played exist


# --------------------------------------------------------------------------------------------------------------
# Pig: the dice shown as they fall


def test_cli_play_pig_shows_every_roll(monkeypatch, capsys):
    # The person (X) rolls twice and holds (or loses the turn to a 1 first); hold:20 plays its turn; quit.
    scripted_input(monkeypatch, ["roll", "r", "hold", "quit"])
    assert cli.main(["play", "hold:20", "--game", "pig", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^X rolls a ([2-6]: turn total \d+|1: turn lost)$", out, re.M), out
    assert re.search(r"^O rolls a ([2-6]: turn total \d+|1: turn lost)$", out, re.M), out
    rolls = re.findall(r"^[XO] rolls a (\d)", out, re.M)
    assert len(rolls) == re.search(r"^Moves: (.*)$", out, re.M)[1].split().count("roll") > 2  # every roll shown
    assert "You quit the game." in out and "Traceback" not in out


def test_cli_play_a_game_without_a_shipped_agent_says_what_to_play(monkeypatch, capsys):
    from azjax.cli import play as play_command

    assert cli.main(["play", "gomoku"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "no trained agent ships with azjax for gomoku" in err and "`azjax play mcts:1000 --game gomoku`" in err
    assert play_command._untrained_agent(games.make("pig")) == "perfect"  # UCT cannot look ahead through dice
    scripted_input(monkeypatch, ["quit"])
    assert cli.main(["play", "--game", "pig", "--seed", "0"]) == 0  # no agent named: Pig's shipped one
    out = capsys.readouterr().out
    assert "Loading pretrained:pig" in out and "You quit the game." in out
