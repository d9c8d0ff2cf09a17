"""Helpers shared by the rules tests of the stone and disc games (test_tictactoe.py, test_connect_four.py,
test_gomoku.py, test_othello.py).

Batches of games are played in azjax under `jax.jit(jax.vmap(game.step))` inside one `lax.scan`, brought to the
host once, and replayed move by move in a plain-Python reference (reference.py, or the test module's own, with the
same interface); the comparisons are numpy over whole [T + 1, B] arrays, with a readable report of the first game
that differs.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import ClassVar

import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct
from hypothesis import HealthCheck, given, settings
from reference import ReferenceGame
from tiny import jit_optimised

from azjax.games import BoardState, Game, Symmetry, make

# The out-of-range actions tried besides the in-range ones: just off either end, and the int32 extremes.
OUT_OF_RANGE_EXTREMES = (-(2**31), 2**31 - 1)


@struct.dataclass
class Rollout:
    """A batch of games: states[0] is the start, states[t + 1] follows actions[t]."""

    actions: jax.Array  # [T, B] int32
    states: BoardState  # every field with leading axes [T + 1, B]
    observations: jax.Array  # [T + 1, B, H, W, 2] float32, observe(states[t, b])


def _stack_rollout(game: Game, first: BoardState, actions: jax.Array, later: BoardState) -> Rollout:
    states = jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, later)
    observations = jax.vmap(jax.vmap(game.observe))(states)
    return Rollout(actions=actions, states=states, observations=observations)


def play_random(key: jax.Array, illegal_prob: jax.Array, *, game: Game, num_games: int, num_steps: int) -> Rollout:
    """Plays `num_games` games of `num_steps` moves: a uniformly random legal action, except that with probability
    `illegal_prob` (and always once the game is over) the action is drawn from [-1, A], legal or not.

    All the randomness is drawn up front, so the key's generator is compiled once, outside the scan (threefry
    compiles slowly on CPU; the tests pass an "rbg" key). Un-jitted; callers jit it with the keywords bound.
    """
    init_key, score_key, wild_key, coin_key = jax.random.split(key, 4)
    first = jax.vmap(game.init)(jax.random.split(init_key, num_games))
    scores = jax.random.uniform(score_key, (num_steps, num_games, game.num_actions))  # argmax over legal: uniform
    wild = jax.random.randint(wild_key, (num_steps, num_games), -1, game.num_actions + 1)
    coin = jax.random.uniform(coin_key, (num_steps, num_games)) < illegal_prob

    def move(states: BoardState, xs: tuple[jax.Array, ...]) -> tuple[BoardState, tuple[jax.Array, BoardState]]:
        step_scores, step_wild, step_coin = xs
        legal = jnp.argmax(jnp.where(states.legal_action_mask, step_scores, -1.0), axis=-1)
        actions = jnp.where(states.terminated | step_coin, step_wild, legal).astype(jnp.int32)
        next_states = jax.vmap(game.step)(states, actions)
        return next_states, (actions, next_states)

    _, (actions, later) = jax.lax.scan(move, first, (scores, wild, coin))
    return _stack_rollout(game, first, actions, later)


def play_actions(actions: jax.Array, *, game: Game) -> Rollout:
    """Plays the given actions [T, B] (legal or not) from the start. Un-jitted; callers jit it."""
    first = jax.vmap(game.init)(jax.random.split(jax.random.key(0, impl="rbg"), actions.shape[1]))

    def move(states: BoardState, step_actions: jax.Array) -> tuple[BoardState, BoardState]:
        next_states = jax.vmap(game.step)(states, step_actions)
        return next_states, next_states

    _, later = jax.lax.scan(move, first, actions)
    return _stack_rollout(game, first, actions, later)


StepFn = Callable[[BoardState, jax.Array], BoardState]


@functools.cache
def jit_step(game: Game) -> StepFn:
    """`jax.jit(game.step)`, one per game for the whole session (eager steps compile op by op: slow)."""
    return jit_optimised(game.step)


@functools.cache
def jit_step_each(game: Game) -> StepFn:
    """Steps one state with each of a batch of actions: (State, actions [N]) -> State [N]."""
    return jit_optimised(jax.vmap(game.step, in_axes=(None, 0)))


@dataclasses.dataclass(frozen=True)
class Players:
    """The jitted batch players of one game; build once per test module (each compiles on first use)."""

    game: Game
    random: Callable[[jax.Array, jax.Array], Rollout]  # (key, illegal_prob) -> Rollout of B games
    actions: Callable[[np.ndarray], Rollout]  # (actions [T, B]) -> Rollout

    @classmethod
    def build(cls, game: Game, *, num_games: int) -> Players:
        return cls(
            game=game,
            random=jit_optimised(
                functools.partial(play_random, game=game, num_games=num_games, num_steps=game.max_length + 2)
            ),
            actions=jit_optimised(functools.partial(play_actions, game=game)),
        )


# --------------------------------------------------------------------------------------------------------------
# The reference replay and the comparison.


@dataclasses.dataclass(frozen=True)
class Expected:
    """What the reference says about every state of a rollout; numpy arrays with leading axes [T + 1, B]."""

    board: np.ndarray  # [T + 1, B, H * W] int8, azjax's encoding
    legal_action_mask: np.ndarray  # [T + 1, B, A] bool
    terminated: np.ndarray  # [T + 1, B] bool
    rewards: np.ndarray  # [T + 1, B, 2] float32
    current_player: np.ndarray  # [T + 1, B] int32
    forfeited: np.ndarray  # [T + 1, B] bool, the game ended on an illegal action
    ascii: list[str]  # [B], each game's final position, for reports
    features: np.ndarray | None = None  # [T + 1, B, H, W, k] the reference's feature planes, where it has them


def replay_in_reference(reference_class: type[ReferenceGame], actions: np.ndarray) -> Expected:
    """Replays actions [T, B] in fresh reference games, one game at a time."""
    num_steps, num_games = actions.shape
    probe = reference_class()
    expected = Expected(
        board=np.zeros((num_steps + 1, num_games, len(probe.board())), np.int8),
        legal_action_mask=np.zeros((num_steps + 1, num_games, probe.num_actions), bool),
        terminated=np.zeros((num_steps + 1, num_games), bool),
        rewards=np.zeros((num_steps + 1, num_games, 2), np.float32),
        current_player=np.zeros((num_steps + 1, num_games), np.int32),
        forfeited=np.zeros((num_steps + 1, num_games), bool),
        ascii=[],
    )
    for b, game_actions in enumerate(actions.T.tolist()):
        ref = reference_class()
        _record(expected, 0, b, ref)
        for t, action in enumerate(game_actions):
            expected.rewards[t + 1, b] = ref.play(action)
            _record(expected, t + 1, b, ref)
            if ref.terminated:  # absorbing from here on: the same position, zero rewards
                for name in ("board", "legal_action_mask", "terminated", "current_player", "forfeited"):
                    field = getattr(expected, name)
                    field[t + 2 :, b] = field[t + 1, b]
                break
        expected.ascii.append(ref.ascii())
    features = getattr(reference_class, "feature_planes", None)
    if features is not None:
        flat = features(expected.board.reshape(-1, expected.board.shape[-1]), expected.current_player.reshape(-1))
        expected = dataclasses.replace(expected, features=flat.reshape(*expected.board.shape[:2], *flat.shape[1:]))
    return expected


def _record(expected: Expected, t: int, b: int, ref: ReferenceGame) -> None:
    expected.board[t, b] = ref.board()
    expected.legal_action_mask[t, b, ref.legal_actions()] = True
    expected.terminated[t, b] = ref.terminated
    expected.current_player[t, b] = ref.to_move
    expected.forfeited[t, b] = ref.forfeited


@dataclasses.dataclass(frozen=True)
class Played:
    """A batch of random games played in azjax (on the host now) and the reference's replay of them."""

    rollout: Rollout
    expected: Expected


def play_and_replay(
    players: Players, reference_class: type[ReferenceGame], *, seed: int, illegal_prob: float
) -> Played:
    """Random games (`play_random`) from an "rbg" key of `seed`, and their replay in the reference."""
    key = jax.random.key(seed, impl="rbg")
    rollout = jax.device_get(players.random(key, jnp.float32(illegal_prob)))
    return Played(rollout, replay_in_reference(reference_class, np.asarray(rollout.actions)))


def expected_observations(expected: Expected, height: int, width: int, num_planes: int = 2) -> np.ndarray:
    """[T + 1, B, H, W, num_planes] float32: plane 0 the stones of the player to move, plane 1 the other player's,
    then, for more planes, the reference's `feature_planes` (`Expected.features`)."""
    mover_stone = (expected.current_player + 1)[..., None]
    other_stone = (2 - expected.current_player)[..., None]
    planes = np.stack([expected.board == mover_stone, expected.board == other_stone], axis=-1)
    stones = planes.reshape(*planes.shape[:2], height, width, 2).astype(np.float32)
    if num_planes == 2:
        return stones
    assert expected.features is not None, "the reference has no feature planes to compare the extra planes with"
    return np.concatenate([stones, expected.features], axis=-1)


def actual_field(rollout: Rollout, field: str) -> np.ndarray:
    if field == "observation":
        return np.asarray(rollout.observations)
    return np.asarray(getattr(rollout.states, field))


def assert_field_matches(
    game: Game, rollout: Rollout, expected: Expected, field: str, *, where: np.ndarray | None = None
) -> None:
    """Asserts that a state field (or "observation") equals the reference's at every [t, b] where `where`."""
    actual = actual_field(rollout, field)
    if field == "observation":
        wanted = expected_observations(expected, *game.observation_shape)
    else:
        wanted = getattr(expected, field)
    assert actual.shape == wanted.shape, (field, actual.shape, wanted.shape)
    differs = (actual != wanted).reshape(*actual.shape[:2], -1).any(axis=-1)  # [T + 1, B]
    if where is not None:
        differs &= where
    if differs.any():
        raise AssertionError(describe_mismatch(game, rollout, expected, field, differs, actual, wanted))


def describe_mismatch(
    game: Game,
    rollout: Rollout,
    expected: Expected,
    field: str,
    differs: np.ndarray,
    actual: np.ndarray,
    wanted: np.ndarray,
) -> str:
    """A report of the first game (by index) where `field` differs: its moves, both values and both boards."""
    num_bad = int(differs.any(axis=0).sum())
    b = int(np.argmax(differs.any(axis=0)))
    t = int(np.argmax(differs[:, b]))
    actions = np.asarray(rollout.actions)[:t, b].tolist()
    state = jax.tree.map(lambda x: np.asarray(x)[t, b], rollout.states)
    return (
        f"{field} differs from the reference in {num_bad} of {differs.shape[1]} games; first: game {b} at step {t}"
        f" after actions {actions}\n  azjax:     {actual[t, b].tolist()}\n  reference: {wanted[t, b].tolist()}\n"
        f"azjax position:\n{game.render(state)}\nreference board (top row first) {expected.board[t, b].tolist()};"
        f" final reference position:\n{expected.ascii[b]}"
    )


def assert_matches_reference(game: Game, rollout: Rollout, expected: Expected, field: str) -> None:
    """Compares one field; the player to move (and so the observation) is compared except after a forfeit,
    where the rules name no next player."""
    where = None if field not in ("current_player", "observation") else ~expected.forfeited
    assert_field_matches(game, rollout, expected, field, where=where)


def assert_protocol_invariants(rollout: Rollout) -> None:
    """The protocol's promises, checked without the reference, over every state of a rollout."""
    states = jax.tree.map(np.asarray, rollout.states)
    terminated, rewards, mask = states.terminated, states.rewards, states.legal_action_mask
    ended_now = terminated[1:] & ~terminated[:-1]  # [T, B]
    assert not terminated[0].any(), "the start position is terminal"
    assert not (terminated[:-1] & ~terminated[1:]).any(), "a terminated game came back to life"
    assert np.isin(rewards, (-1.0, 0.0, 1.0)).all(), "rewards other than -1, 0, +1"
    assert (rewards.sum(axis=-1) == 0).all(), "rewards are not zero-sum"
    assert not rewards[0].any(), "the start position pays rewards"
    paid = rewards[1:].any(axis=-1)
    assert not (paid & ~ended_now).any(), "rewards paid on a step that did not end the game"
    assert not mask[terminated].any(), "a legal action in a terminated state"
    assert mask[~terminated].any(axis=-1).all(), "a live state without a legal action"
    for name in ("board", "current_player", "legal_action_mask", "terminated"):
        field = getattr(states, name)
        stuck = terminated[:-1].reshape(terminated[:-1].shape + (1,) * (field.ndim - 2))
        assert (np.where(stuck, field[1:] == field[:-1], True)).all(), f"{name} changed after the end"
    live_to_live = ~terminated[1:]
    alternated = states.current_player[1:] == 1 - states.current_player[:-1]
    assert alternated[live_to_live].all(), "the player to move did not alternate"


def assert_outcomes_match(rollout: Rollout, expected: Expected, max_length: int) -> None:
    """Every game ended within max_length moves and paid, in total, what the reference's game paid."""
    states = jax.tree.map(np.asarray, rollout.states)
    assert states.terminated[max_length].all(), "a game ran past max_length"
    np.testing.assert_array_equal(states.rewards.sum(axis=0), expected.rewards.sum(axis=0))


# --------------------------------------------------------------------------------------------------------------
# States, positions, symmetries.


def take(states: BoardState, *index: int) -> BoardState:
    """One (unbatched) state of a batch of states."""
    return jax.tree.map(lambda x: x[index], states)


def assert_states_equal(actual: BoardState, wanted: BoardState) -> None:
    """Every field equal, with the same dtype and shape."""
    assert type(actual) is type(wanted)
    for field in dataclasses.fields(wanted):
        a, w = np.asarray(getattr(actual, field.name)), np.asarray(getattr(wanted, field.name))
        assert a.dtype == w.dtype and a.shape == w.shape, (field.name, a.dtype, a.shape, w.dtype, w.shape)
        np.testing.assert_array_equal(a, w, err_msg=field.name)


def assert_round_trips(game: Game, rollout: Rollout, *, num_positions: int, seed: int) -> int:
    """from_ascii(render(s)) == s for random positions of a rollout reached by legal play: live positions and
    those just ended (a position stepped after its end pays zero, which a board cannot show). Returns how many
    distinct boards were tried."""
    states = jax.tree.map(np.asarray, rollout.states)
    was_live = np.concatenate([np.ones_like(states.terminated[:1]), ~states.terminated[:-1]])
    candidates = np.argwhere(was_live)
    rng = np.random.default_rng(seed)
    picked = candidates[rng.choice(len(candidates), size=min(num_positions, len(candidates)), replace=False)]
    seen = set()
    for t, b in picked:
        state = take(states, t, b)
        if state.board.tobytes() in seen:
            continue
        seen.add(state.board.tobytes())
        text = game.render(state)
        assert_states_equal(game.from_ascii(text), state)
    return len(seen)


def symmetric_action_batch(game: Game, actions: np.ndarray) -> np.ndarray:
    """[T, (1 + S) * B]: in-range actions [T, B], then their images under each symmetry (Symmetry.map_action)."""
    batches = [actions] + [np.asarray(sym.map_action(jnp.asarray(actions))) for sym in game.symmetries]
    return np.concatenate(batches, axis=1).astype(np.int32)


@functools.cache
def _jit_symmetry(sym: Symmetry) -> Callable[[np.ndarray, np.ndarray], tuple[jax.Array, jax.Array]]:
    """(observations [T, B, H, W, C], masks [T, B, A]) -> both carried into the symmetric position."""
    return jit_optimised(lambda obs, mask: (jax.vmap(jax.vmap(sym.transform))(obs), sym.apply_to_actions(mask)))


def assert_symmetric_play(game: Game, rollout: Rollout, num_games: int) -> None:
    """Checks a rollout of `symmetric_action_batch` output: for each symmetry, the mapped games' observations
    are the transformed observations, their legal masks the permuted masks, and the rest is equal."""
    states = jax.tree.map(np.asarray, rollout.states)
    observations = np.asarray(rollout.observations)
    base = slice(0, num_games)
    for i, sym in enumerate(game.symmetries, start=1):
        mapped = slice(i * num_games, (i + 1) * num_games)
        transformed, permuted = _jit_symmetry(sym)(observations[:, base], states.legal_action_mask[:, base])
        np.testing.assert_array_equal(observations[:, mapped], transformed, err_msg=f"{sym.name}: observations")
        np.testing.assert_array_equal(states.legal_action_mask[:, mapped], permuted, err_msg=f"{sym.name}: masks")
        for name in ("terminated", "rewards", "current_player"):
            np.testing.assert_array_equal(
                getattr(states, name)[:, mapped], getattr(states, name)[:, base], err_msg=f"{sym.name}: {name}"
            )


def action_sequences(num_actions: int, length: int) -> st.SearchStrategy[list[int]]:
    """Fixed-length action lists, about 80% in range (legal or not), the rest just off the range or extreme."""
    wild = (-1, num_actions, *OUT_OF_RANGE_EXTREMES)

    def pick(v: int) -> int:
        return v % num_actions if v < 4 * num_actions else wild[v % len(wild)]

    return st.lists(st.integers(0, 5 * num_actions - 1).map(pick), min_size=length, max_size=length)


def assert_follows_reference(players: Players, reference_class: type[ReferenceGame], actions: list[int]) -> None:
    """One action sequence (legal or not) played in azjax agrees with the reference everywhere."""
    rollout = jax.device_get(players.actions(np.asarray(actions, np.int32)[:, None]))
    expected = replay_in_reference(reference_class, np.asarray(actions)[:, None])
    assert_protocol_invariants(rollout)
    for field in ("board", "legal_action_mask", "terminated", "rewards", "current_player", "observation"):
        assert_matches_reference(players.game, rollout, expected, field)


def assert_absorbing(game: Game, terminal: BoardState) -> None:
    """Every action (in range or not) leaves a terminated state as it is and pays zero, twice over."""
    assert bool(terminal.terminated)
    actions = jnp.asarray([-1, *range(game.num_actions), game.num_actions, *OUT_OF_RANGE_EXTREMES], jnp.int32)
    once = jit_step_each(game)(terminal, actions)
    twice = jax.vmap(jit_step(game))(once, actions[::-1])
    wanted = terminal.replace(rewards=jnp.zeros(2, jnp.float32))
    for i in range(len(actions)):
        assert_states_equal(take(once, i), wanted)
        assert_states_equal(take(twice, i), wanted)


def assert_forfeits(game: Game, state: BoardState, action: int) -> None:
    """An illegal `action` ends the game at once: the mover gets -1, the opponent +1, the board stays."""
    assert not bool(state.terminated)
    mover = int(state.current_player)
    after = jit_step(game)(state, jnp.int32(action))
    assert bool(after.terminated), action
    np.testing.assert_array_equal(after.rewards, [-1.0, 1.0] if mover == 0 else [1.0, -1.0])
    np.testing.assert_array_equal(after.board, state.board)
    assert not np.asarray(after.legal_action_mask).any()
    assert_absorbing(game, after)


# --------------------------------------------------------------------------------------------------------------
# The tests every stone game here shares; a test module subclasses this with the game's name and reference.

_FIELDS = ("board", "legal_action_mask", "terminated", "rewards", "current_player", "observation")


class GenericRulesTests:
    """Random play against the reference, protocol invariants, round trips, symmetries and move names."""

    game_name: str
    reference_class: type[ReferenceGame]
    num_games: int = 2000
    game_options: ClassVar[dict[str, object]] = {}  # passed to make(game_name, **game_options)
    num_symmetric_games: int = 256  # games per symmetry in the symmetric-play test

    @pytest.fixture(scope="class")
    @classmethod
    def game(cls) -> Game:
        return make(cls.game_name, **cls.game_options)

    @pytest.fixture(scope="class")
    @classmethod
    def players(cls, game: Game) -> Players:
        return Players.build(game, num_games=cls.num_games)

    @pytest.fixture(scope="class")
    @classmethod
    def legal(cls, players: Players) -> Played:
        return play_and_replay(players, cls.reference_class, seed=0, illegal_prob=0.0)

    @pytest.fixture(scope="class")
    @classmethod
    def with_illegal(cls, players: Players) -> Played:
        return play_and_replay(players, cls.reference_class, seed=1, illegal_prob=0.1)

    @pytest.fixture(params=["legal", "with_illegal"])
    def played(self, request: pytest.FixtureRequest) -> Played:
        return request.getfixturevalue(request.param)

    @pytest.mark.parametrize("field", _FIELDS)
    def test_random_play_matches_reference(self, game: Game, played: Played, field: str) -> None:
        assert_matches_reference(game, played.rollout, played.expected, field)

    def test_random_play_keeps_the_protocol(self, played: Played) -> None:
        assert_protocol_invariants(played.rollout)

    def test_random_play_ends_as_in_reference(self, game: Game, played: Played) -> None:
        assert_outcomes_match(played.rollout, played.expected, game.max_length)

    def test_random_play_reaches_every_kind_of_ending(self, legal: Played, with_illegal: Played) -> None:
        # Guards the comparisons above against being vacuous.
        final = legal.expected.rewards.sum(axis=0)  # [B, 2]
        assert (final[:, 0] > 0).any() and (final[:, 1] > 0).any() and (final == 0).all(axis=-1).any()
        forfeited = with_illegal.expected.forfeited[-1]
        losers = with_illegal.expected.rewards.sum(axis=0)[forfeited].argmin(axis=-1)
        assert set(losers.tolist()) == {0, 1}, "random illegal moves should have cost both players a game"

    def test_observation_shape_and_dtype(self, game: Game, legal: Played) -> None:
        assert legal.rollout.observations.shape[2:] == game.observation_shape
        assert legal.rollout.observations.dtype == np.float32

    def test_render_from_ascii_round_trip(self, game: Game, legal: Played) -> None:
        num_tried = assert_round_trips(game, legal.rollout, num_positions=400, seed=0)
        assert num_tried > 100

    def test_symmetry_action_index_is_a_permutation(self, game: Game) -> None:
        assert game.symmetries
        for sym in game.symmetries:
            assert sorted(sym.action_index) == list(range(game.num_actions)), sym.name
            assert sym.action_index != tuple(range(game.num_actions)), f"{sym.name} is the identity"

    def test_symmetric_games_give_transformed_observations_and_masks(
        self, game: Game, players: Players, legal: Played
    ) -> None:
        num_games = self.num_symmetric_games
        actions = np.clip(legal.rollout.actions[:, :num_games], 0, game.num_actions - 1)  # after the end: any
        rollout = jax.device_get(players.actions(symmetric_action_batch(game, actions)))
        assert_symmetric_play(game, rollout, num_games)

    def test_every_action_name_round_trips(self, game: Game) -> None:
        names = [game.action_to_string(a) for a in range(game.num_actions)]
        assert len(set(names)) == game.num_actions
        assert [game.string_to_action(name) for name in names] == list(range(game.num_actions))
        assert [game.string_to_action(f" {name.upper()} ") for name in names] == list(range(game.num_actions))

    # Each game's test class runs these methods, which Hypothesis flags as "differing executors"; harmless here,
    # since the examples live in no database and the methods keep no state.
    @settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.differing_executors])
    @given(data=st.data())
    def test_any_action_sequence_follows_reference(self, game: Game, players: Players, data: st.DataObject) -> None:
        actions = data.draw(action_sequences(game.num_actions, game.max_length + 2), label="actions")
        assert_follows_reference(players, self.reference_class, actions)

    @settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.differing_executors])
    @given(data=st.data())
    def test_any_in_range_sequence_commutes_with_symmetries(
        self, game: Game, players: Players, data: st.DataObject
    ) -> None:
        # Illegal moves on occupied cells or full columns included: they map to illegal moves.
        length = game.max_length + 2
        actions = data.draw(st.lists(st.integers(0, game.num_actions - 1), min_size=length, max_size=length))
        batch = symmetric_action_batch(game, np.asarray(actions, np.int32)[:, None])
        assert_symmetric_play(game, jax.device_get(players.actions(batch)), 1)
