"""The pgx adapter: pgx environments pass check_game, follow azjax's conventions, and play tic-tac-toe and Connect
Four exactly as azjax's own games do (same actions, same masks, outcomes and observations).

Every test that needs pgx asks for the `pgx` fixture, which skips when pgx is not installed; the errors for
environments azjax cannot play, and for a missing pgx, are checked without it.
"""

from __future__ import annotations

import functools
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rules_harness as harness
from tiny import jit_optimised

from azjax import config as config_lib
from azjax import games, presets
from azjax.games import check_game, from_pgx, make
from azjax.games.pgx_adapter import supported_envs

NUM_GAMES = 256


@pytest.fixture(scope="module")
def pgx():
    return pytest.importorskip("pgx")


@functools.cache
def pgx_game(env_id: str, **options) -> games.Game:
    return from_pgx(env_id, **options)


# --------------------------------------------------------------------------------------------------------------
# check_game


@pytest.mark.parametrize("env_id", ["tic_tac_toe", "connect_four", "othello", "hex"])
def test_check_game_passes(pgx, env_id: str) -> None:
    report = check_game(pgx_game(env_id), num_games=8)
    assert report.game == f"pgx:{env_id}"


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["go_9x9", "animal_shogi", "gardner_chess", "chess"])
def test_check_game_passes_slow_to_compile(pgx, env_id: str) -> None:
    check_game(pgx_game(env_id), num_games=8)


# --------------------------------------------------------------------------------------------------------------
# The same games as azjax's own tic-tac-toe and Connect Four


def _play_actions(keys: jax.Array, actions: jax.Array, *, game: games.Game):
    """The states [T + 1, B] (common fields and observations) of the given actions [T, B] from init(keys)."""
    first = jax.vmap(game.init)(keys)

    def view(states):
        obs = jax.vmap(game.observe)(states)
        return states.current_player, states.legal_action_mask, states.terminated, states.rewards, obs

    def move(states, step_actions):
        next_states = jax.vmap(game.step)(states, step_actions)
        return next_states, view(next_states)

    _, later = jax.lax.scan(move, first, actions)
    return tuple(jnp.concatenate([a[None], b]) for a, b in zip(view(first), later, strict=True)), first


@pytest.mark.parametrize("env_id", ["tic_tac_toe", "connect_four"])
def test_random_games_match_azjax_own_game(pgx, env_id: str) -> None:
    native = make(env_id, observation_version=1) if env_id == "connect_four" else make(env_id)  # pgx's: the stones
    # Random legal moves, with illegal and out-of-range ones now and then (and any action once a game is over).
    players = harness.Players.build(native, num_games=NUM_GAMES)
    rollout = jax.device_get(players.random(jax.random.key(0, impl="rbg"), jnp.float32(0.05)))
    actions = np.asarray(rollout.actions)
    keys = jax.random.split(jax.random.key(1), NUM_GAMES)
    play = jit_optimised(functools.partial(_play_actions, game=pgx_game(env_id)))
    (player, mask, terminated, rewards, obs), first = jax.device_get(play(keys, actions))
    swapped = np.asarray(first.seats_swapped)
    assert swapped.any() and not swapped.all(), "both of pgx's seatings should occur"
    states = rollout.states
    np.testing.assert_array_equal(terminated, states.terminated)
    np.testing.assert_array_equal(rewards, states.rewards)
    np.testing.assert_array_equal(mask, states.legal_action_mask)
    np.testing.assert_array_equal(obs, rollout.observations)
    np.testing.assert_array_equal(player, states.current_player)
    final = rewards.sum(0)  # not vacuous: both players win games, and some games end on an illegal move
    assert (final[:, 0] > 0).any() and (final[:, 1] > 0).any() and _forfeits(actions, states).any()


def _forfeits(actions: np.ndarray, states) -> np.ndarray:
    """[T + 1, B] bool: the game ended at step t on an illegal action."""
    mask = np.asarray(states.legal_action_mask)[:-1]  # [T, B, A]
    live = ~np.asarray(states.terminated)[:-1]
    in_range = (actions >= 0) & (actions < mask.shape[-1])
    legal = np.take_along_axis(mask, np.clip(actions, 0, mask.shape[-1] - 1)[..., None], -1)[..., 0]
    return np.concatenate([np.zeros_like(live[:1]), live & ~(in_range & legal)])


# --------------------------------------------------------------------------------------------------------------
# The protocol's conventions


def step(game: games.Game, state, action: int):
    return harness.jit_step(game)(state, jnp.int32(action))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_player_zero_moves_first_whatever_pgx_draws(pgx, seed: int) -> None:
    game = pgx_game("tic_tac_toe")
    state = game.init(jax.random.key(seed))
    assert int(state.current_player) == 0 and not bool(state.terminated)
    for action in (0, 3, 1, 4):  # X a1, O a2, X b1, O b2
        state = step(game, state, action)
    state = step(game, state, 2)  # X c1: row 1
    np.testing.assert_array_equal(state.rewards, [1.0, -1.0])
    assert bool(state.terminated) and not np.asarray(state.legal_action_mask).any()  # pgx's mask is all True


def test_illegal_and_out_of_range_actions_lose_and_leave_the_position(pgx) -> None:
    game = pgx_game("tic_tac_toe")
    start = step(game, game.init(jax.random.key(0)), 4)  # X in the centre; O to move
    for action in (4, -1, 9, *harness.OUT_OF_RANGE_EXTREMES):
        after = step(game, start, action)
        assert bool(after.terminated), action
        np.testing.assert_array_equal(after.rewards, [1.0, -1.0])  # O (player 1) loses
        assert not np.asarray(after.legal_action_mask).any()
        for old, new in zip(jax.tree.leaves(start.pgx_state), jax.tree.leaves(after.pgx_state), strict=True):
            np.testing.assert_array_equal(old, new)  # pgx would have played the move; azjax leaves the board


def test_finished_games_are_absorbing(pgx) -> None:
    game = pgx_game("tic_tac_toe")
    state = game.init(jax.random.key(0))
    for action in (0, 3, 1, 4, 2):
        state = step(game, state, action)
    actions = jnp.asarray([-1, *range(9), 9], jnp.int32)
    after = jax.device_get(harness.jit_step_each(game)(state, actions))
    wanted = state.replace(rewards=jnp.zeros(2, jnp.float32))
    for old, new in zip(jax.tree.leaves(wanted), jax.tree.leaves(after), strict=True):
        np.testing.assert_array_equal(np.broadcast_to(old, new.shape), new)


def test_truncation_ends_the_game(pgx) -> None:
    game = pgx_game("tic_tac_toe")
    state = game.init(jax.random.key(0))
    truncated = state.replace(pgx_state=state.pgx_state.replace(truncated=jnp.bool_(True)))
    after = step(game, truncated, 4)
    assert bool(after.terminated)
    np.testing.assert_array_equal(after.rewards, [0.0, 0.0])


def test_max_length_ends_longer_games_as_draws(pgx) -> None:
    game = pgx_game("connect_four", max_length=10)
    assert game.max_length == 10 and game.name == "pgx:connect_four(max_length=10)"
    state = game.init(jax.random.key(0))
    for number, column in enumerate([0, 1, 2, 3, 4, 5, 6, 0, 1, 2], start=1):  # no four in a row
        state = step(game, state, column)
        assert bool(state.terminated) == (number == 10)
    np.testing.assert_array_equal(state.rewards, [0.0, 0.0])
    assert not np.asarray(state.legal_action_mask).any()


def test_no_two_state_leaves_share_a_buffer(pgx) -> None:
    # A training iteration donates the game states; a donated buffer may appear only once in them.
    game = pgx_game("tic_tac_toe")
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(0), 4))  # eager, as self-play starts its games
    pointers = [leaf.unsafe_buffer_pointer() for leaf in jax.tree.leaves(states)]
    assert len(set(pointers)) == len(pointers)


def test_static_facts_render_and_move_names(pgx) -> None:
    game = make("pgx:tic_tac_toe")
    facts = (game.name, game.num_actions, game.observation_shape, game.max_length)
    assert facts == ("pgx:tic_tac_toe", 9, (3, 3, 2), 9)
    assert game.symmetries == ()
    state = game.init(jax.random.key(0))
    assert game.observe(state).dtype == jnp.float32
    assert game.render(state).startswith("pgx tic_tac_toe after 0 moves: player 0 to move; legal actions: [0, 1")
    assert [game.action_to_string(a) for a in range(3)] == ["0", "1", "2"]
    assert game.string_to_action(" 7 ") == 7
    for text in ["x", "9", "-1", ""]:
        with pytest.raises(ValueError, match="action number 0-8"):
            game.string_to_action(text)
    go = make("pgx:go_9x9")
    assert (go.num_actions, go.observation_shape, go.max_length) == (82, (9, 9, 17), 162)


# --------------------------------------------------------------------------------------------------------------
# Names, the registry, config validation and errors (these need no pgx)


@pytest.mark.parametrize(
    ("env_id", "message"),
    [
        ("kuhn_poker", "hidden information"),
        ("bridge_bidding", "four players"),
        ("minatar-breakout", "sticky actions"),
        ("no_such_game", "unknown pgx environment"),
    ],
)
def test_environments_azjax_cannot_play_are_rejected(env_id: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make(f"pgx:{env_id}")


def test_bad_max_length_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_length"):
        from_pgx("tic_tac_toe", max_length=0)


def test_missing_pgx_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pgx", None)  # `import pgx` now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'azjax\[pgx\]'"):
        make("pgx:tic_tac_toe")


def test_pgx_names_are_known_and_validate() -> None:
    for env_id in supported_envs():
        assert games.is_known(f"pgx:{env_id}")
    assert games.is_known("pgx:backgammon") and games.is_known("pgx:2048")
    assert games.is_known("brandub") and not games.is_known("pgx:kuhn_poker") and not games.is_known("chess")
    config = config_lib.with_overrides(presets.get_config("pgx:tic_tac_toe"), {"selfplay.num_games": 8})
    assert config.game == "pgx:tic_tac_toe"
    with pytest.raises(config_lib.ConfigError, match=r"pgx:<env_id>"):
        config_lib.Config(game="pgx:kuhn_poker").validate()


@pytest.mark.slow
def test_a_training_iteration_runs(pgx, tiny_overrides) -> None:
    from azjax import training

    config = config_lib.with_overrides(presets.get_config("pgx:tic_tac_toe"), tiny_overrides)
    run_state = training.init_run_state(config)
    iteration = jax.jit(training.make_train_iteration(config), donate_argnums=0)
    run_state, metrics = iteration(run_state)
    assert np.isfinite(float(metrics["loss"]))
