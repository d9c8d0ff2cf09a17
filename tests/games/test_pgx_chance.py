"""pgx's 2048 and backgammon with their chance events split out (azjax.games.pgx_chance): random games replayed
through pgx's own `step` and through the split with the outcomes pgx drew give the same states; the probabilities
are the rules'; the games pass the checker, and train.

Every test that needs pgx asks for the `pgx` fixture, which skips when pgx is not installed.
"""

from __future__ import annotations

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny import TINY_OVERRIDES, cli_args, jit_optimised, run_cli

from azjax import games
from azjax.games import check_game, from_pgx, make
from azjax.games.pgx_chance import DICE_PAIRS, max_return_2048

NUM_GAMES = 64
NUM_MOVES = 160


@pytest.fixture(scope="module")
def pgx():
    return pytest.importorskip("pgx")


@functools.cache
def chance_game(name: str) -> games.Game:
    return make(name)


def _drawn_outcome_2048(before, after, action, game):
    """The outcome pgx's step drew: the cell where a tile appeared that the slide alone did not put there, and
    whether it is a 4."""
    import pgx.play2048 as rules

    from azjax.games.pgx_chance import _slide_2048

    slid, _ = _slide_2048(before._board, action, rules=rules)
    cell = jnp.argmax(after._board != slid)
    return (2 * cell + (after._board[cell] - 1)).astype(jnp.int32)


def _drawn_outcome_backgammon(before, after, action, game):
    """The outcome pgx's step drew: the dice of the new turn, smaller first (outcome 0 where the turn goes on)."""
    dice = jnp.sort(after._dice)
    index = jnp.argmax(jnp.all(jnp.asarray(DICE_PAIRS, jnp.int32) == dice, axis=-1))
    return jnp.where(after._turn != before._turn, index, 0).astype(jnp.int32)


def _canonical(pgx_state, env_id: str):
    """Backgammon's dice in the order the split keeps them (smaller first); 2048's state as it is."""
    if env_id != "backgammon":
        return pgx_state
    import pgx.backgammon as rules

    dice = jnp.sort(pgx_state._dice)
    fresh = pgx_state._played_dice_num == 0  # nothing played yet: the playable dice are the thrown ones
    playable = jnp.where(fresh, rules._set_playable_dice(dice), pgx_state._playable_dice)
    return pgx_state.replace(_dice=dice, _playable_dice=playable)


def _replay(env, game, env_id: str, keys: jax.Array, num_moves: int):
    """Plays random games [B] with pgx's step (its own keys) and, side by side, with the split and the outcome
    pgx drew; returns per move [T, B]: whether the two states differ anywhere, the split's probability of the drawn
    outcome, and whether the game was in play."""
    drawn_outcome = _drawn_outcome_2048 if env_id == "2048" else _drawn_outcome_backgammon

    def one_game(key):
        init_key, play_key = jax.random.split(key)
        state = game.init(init_key)

        def body(state, move_key):
            pick_key, step_key = jax.random.split(move_key)
            logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
            action = jax.random.categorical(pick_key, logits).astype(jnp.int32)
            in_play = ~state.terminated
            action = jnp.where(in_play, action, 0)
            by_pgx = env.step(state.pgx_state, action, step_key)
            outcome = drawn_outcome(state.pgx_state, by_pgx, action, game)
            probability = game.chance_outcomes(state, action)[outcome]
            split = game.step_outcome(state, action, outcome)
            ours, theirs = _canonical(split.pgx_state, env_id), _canonical(by_pgx, env_id)
            pairs = zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True)
            differs = jnp.any(jnp.stack([jnp.any(a != b) for a, b in pairs]))
            following = jax.tree.map(lambda new, old: jnp.where(in_play, new, old), split, state)
            return following, (differs & in_play, probability, in_play)

        _, record = jax.lax.scan(body, state, jax.random.split(play_key, num_moves))
        return record

    return jit_optimised(jax.vmap(one_game))(keys)


@pytest.mark.parametrize("env_id", ["2048", "backgammon"])
def test_random_games_through_the_split_match_pgx_s_step(pgx, env_id: str) -> None:
    game = chance_game(f"pgx:{env_id}")
    env = pgx.make(env_id)
    differs, probability, in_play = (np.asarray(x) for x in _replay(env, game, env_id, jax.random.split(
        jax.random.key(7), NUM_GAMES), NUM_MOVES))
    assert in_play.sum() > NUM_GAMES * NUM_MOVES // 2  # the games were played, most of the moves in play
    assert not differs.any(), f"{int(differs.sum())} states differ from pgx's"
    assert np.all(probability[in_play] > 0)  # every outcome pgx drew is one the split gives a chance


def _python_slide(board: list[list[int]], action: int) -> list[list[int]]:
    """2048's slide in plain Python (tiles as exponents, 0 empty): 0 left, 1 up, 2 right, 3 down."""
    lines = [list(row) for row in board] if action in (0, 2) else [list(col) for col in zip(*board, strict=True)]
    if action in (2, 3):
        lines = [line[::-1] for line in lines]
    slid = []
    for line in lines:
        tiles, merged = [v for v in line if v], []
        while tiles:
            if len(tiles) > 1 and tiles[0] == tiles[1]:
                merged.append(tiles[0] + 1)
                tiles = tiles[2:]
            else:
                merged.append(tiles.pop(0))
        slid.append(merged + [0] * (4 - len(merged)))
    if action in (2, 3):
        slid = [line[::-1] for line in slid]
    return slid if action in (0, 2) else [list(row) for row in zip(*slid, strict=True)]


def test_2048_s_tile_probabilities_are_the_rules_(pgx) -> None:
    game = chance_game("pgx:2048")
    step = jax.jit(game.step)
    state, checked = game.init(jax.random.key(1)), 0
    while not bool(state.terminated) and checked < 40:  # positions along a game, fuller as it goes
        board = np.asarray(state.pgx_state._board).reshape(4, 4).tolist()
        for action in np.flatnonzero(np.asarray(state.legal_action_mask)):
            empty = np.asarray(_python_slide(board, int(action))).ravel() == 0
            p = np.asarray(game.chance_outcomes(state, jnp.int32(action))).reshape(16, 2)
            want = np.where(empty[:, None], np.asarray([0.9, 0.1]) / empty.sum(), 0.0)
            np.testing.assert_allclose(p, want, rtol=1e-6, atol=1e-7)
            checked += 1
        state = step(state, jnp.int32(int(np.flatnonzero(np.asarray(state.legal_action_mask))[-1])))
    assert checked >= 40


def test_backgammon_s_dice_are_thrown_only_when_the_turn_ends(pgx) -> None:
    game = chance_game("pgx:backgammon")
    state = game.init(jax.random.key(3))
    first = int(np.flatnonzero(np.asarray(state.legal_action_mask))[0])
    assert np.asarray(game.chance_outcomes(state, jnp.int32(first))).tolist() == [1.0] + [0.0] * 20  # one die left
    middle = game.step_outcome(state, jnp.int32(first), jnp.int32(0))
    assert int(middle.current_player) == int(state.current_player)
    second = int(np.flatnonzero(np.asarray(middle.legal_action_mask))[0])
    rolls = np.asarray(game.chance_outcomes(middle, jnp.int32(second)))
    doubles = [a == b for a, b in DICE_PAIRS]
    np.testing.assert_allclose(rolls, np.where(doubles, 1 / 36, 2 / 36), rtol=1e-6)
    passed = game.step_outcome(middle, jnp.int32(second), jnp.int32(DICE_PAIRS.index((2, 4))))
    assert int(passed.current_player) != int(state.current_player)
    assert np.asarray(passed.pgx_state._dice).tolist() == [2, 4]


def test_2048_s_illegal_move_takes_back_the_score_and_its_return_stays_in_bounds(pgx) -> None:
    game = chance_game("pgx:2048")
    state = game.init(jax.random.key(0))
    step = jax.jit(game.step)
    paid = 0.0
    while float(state.score) == 0.0:  # play until some points are on the board
        state = step(state, jnp.int32(int(np.flatnonzero(np.asarray(state.legal_action_mask))[0])))
        paid += float(state.rewards[0])
    assert float(state.score) == paid > 0
    illegal = np.flatnonzero(~np.asarray(state.legal_action_mask))
    action = int(illegal[0]) if illegal.size else 7  # out of range where every move is legal
    after = step(state, jnp.int32(action))
    assert bool(after.terminated) and float(after.rewards[0]) == -paid and float(after.score) == 0.0
    assert game.return_bounds == (0.0, max_return_2048(game.max_length))


def test_backgammon_pays_one_point_for_a_gammon(pgx) -> None:
    game = chance_game("pgx:backgammon")
    state = game.init(jax.random.key(0))
    # Black with one checker left on its last point and none of white's borne off: the win is a gammon in pgx.
    board = jnp.zeros(28, jnp.int32).at[23].set(1).at[26].set(14).at[0].set(-15)
    pgx_state = state.pgx_state.replace(_board=board, _dice=jnp.int32([0, 1]),
                                        _playable_dice=jnp.int32([0, 1, -1, -1]), _played_dice_num=jnp.int32(0))
    import pgx.backgammon as rules

    pgx_state = pgx_state.replace(legal_action_mask=rules._legal_action_mask(board, pgx_state._playable_dice))
    state = state.replace(pgx_state=pgx_state, legal_action_mask=pgx_state.legal_action_mask)
    action = int(np.flatnonzero(np.asarray(state.legal_action_mask))[0])
    won = game.step_outcome(state, jnp.int32(action), jnp.int32(0))
    mover = int(state.current_player)
    assert bool(won.terminated) and np.asarray(won.pgx_state.rewards).max() == 2.0  # pgx: a gammon
    assert np.asarray(won.rewards).tolist() == [1.0, -1.0] if mover == 0 else [-1.0, 1.0]


@pytest.mark.parametrize("env_id", ["2048", "backgammon"])
def test_the_checker_passes_them(pgx, env_id: str) -> None:
    # 60 moves: the checker plays every game to max_length (the game's own, 2,000 and 1,000, in the slow test)
    report = check_game(from_pgx(env_id, max_length=60), num_games=8)
    assert report.game == f"pgx:{env_id}(max_length=60)"


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["2048", "backgammon"])
def test_the_checker_passes_them_at_their_full_length(pgx, env_id: str) -> None:
    check_game(chance_game(f"pgx:{env_id}"), num_games=16)


@pytest.mark.parametrize("env_id", ["2048", pytest.param("backgammon", marks=pytest.mark.slow)])
def test_they_train_evaluate_and_resume(pgx, tmp_path, env_id: str) -> None:
    """`azjax train --game pgx:ENV --iterations 2` at the TINY sizes, evaluated at its end, resumed for one more
    iteration, and `azjax eval` of the run."""
    run = tmp_path / "run"
    common = ["--game", f"pgx:{env_id}", "--out", run, "--eval-every", "2", "--eval-games", "2", "--no-progress",
              "--devices", "1", *cli_args(TINY_OVERRIDES)]
    code, out, err = run_cli(["train", "--iterations", "2", *common])
    assert code == 0, err[-3000:]
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    baseline = "eval/return/random" if env_id == "2048" else "eval/random"  # one player: the random player's return
    assert [r["iteration"] for r in records if baseline in r] == [2]
    code, out, err = run_cli(["train", "--iterations", "3", *common])
    assert code == 0 and "Resuming" in out + err, (out + err)[-3000:]
    code, out, err = run_cli(["eval", run, "random", "--games", "2", "--devices", "1"])
    assert code == 0 and "random" in out, err[-3000:]


def test_the_one_ply_greedy_players_beat_random(pgx) -> None:
    """"oneply": 2048's (most points merged) scores more than random over the same 64 starts; backgammon's (best
    pip count) scores over 0.6 in 16 games against random, both seats."""
    from azjax import agent_specs, arena, episodes

    game = chance_game("pgx:2048")
    starts = jax.vmap(game.init)(jax.random.split(jax.random.key(0), 64))
    play = jax.jit(episodes.play_episodes, static_argnames=("game", "agent"))
    greedy = play(jax.random.key(1), starts, game=game, agent=agent_specs.make_bot("oneply", game))
    random = play(jax.random.key(1), starts, game=game, agent=agent_specs.make_bot("random", game))
    assert float(np.mean(greedy.returns)) > 1.2 * float(np.mean(random.returns)) > 0
    backgammon = chance_game("pgx:backgammon")
    result = arena.play(jax.random.key(2), backgammon, agent_specs.make_bot("oneply", backgammon),
                        agent_specs.make_bot("random", backgammon), 16)  # 0.881 over 1,100 (the study's record)
    assert result.score > 0.6, result


def test_oneply_plays_these_two_games_only(pgx) -> None:
    from azjax import agent_specs

    with pytest.raises(agent_specs.SpecError, match=r"oneply.*pgx:2048.*not pig"):
        agent_specs.make_bot("oneply", make("pig"))
    from azjax.evaluation import default_opponents

    assert default_opponents("pgx:2048") == ("random", "oneply")
    assert default_opponents("pgx:backgammon") == ("random", "oneply")


def test_backgammon_is_told_with_its_board_and_dice(pgx) -> None:
    from azjax.cli.play import _untrained_agent

    game = chance_game("pgx:backgammon")
    state = game.init(jax.random.key(0))
    text = game.render(state)
    dice = sorted(int(d) + 1 for d in np.asarray(state.pgx_state._dice))
    assert f"dice to play {dice}" in text and "0:X2" in text and "23:O2" in text, text
    assert _untrained_agent(game) == "oneply" and _untrained_agent(chance_game("pgx:2048")) == "oneply"


def test_2048_maps_its_points_through_the_sqrt_scaling_unless_told_otherwise(pgx) -> None:
    game = chance_game("pgx:2048")
    assert game.return_scaling == "sqrt" and game.return_bounds == (0.0, 95_834.0)
    linear = from_pgx("2048", return_scaling="linear")
    assert linear.name == "pgx:2048(return_scaling=linear)" and linear.return_scaling == "linear"
    with pytest.raises(ValueError, match="return_scaling is an option of 2048"):
        from_pgx("backgammon", return_scaling="sqrt")


@pytest.mark.slow
def test_the_study_scripts_report_lengths_and_2048_s_tiles(pgx, load_experiment, capsys) -> None:
    """experiments/studies/pgx_chance: random games' lengths against the move limits, and 2048's judge."""
    with load_experiment("pgx_game_lengths") as script:
        script.main(["--games", "8"])
    with load_experiment("judge_2048") as script:
        script.main(["--agents", "oneply", "random", "--games", "4"])
    out = capsys.readouterr().out
    assert "pgx:2048: max_length 2000" in out and "pgx:backgammon: max_length 1000" in out, out
    assert "at the limit 0" in out and out.count("ended on their own 8 of 8") == 2, out
    assert "oneply" in out and "random" in out and "512" in out, out
