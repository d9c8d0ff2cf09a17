"""Brandub rules: random games against a plain-Python reference, then hand-made positions for every rule.

The first half of this file is the reference, written from the rules in words and sharing no code with azjax.
Boards in the tests are written rank 7 first, files a-g left to right; the castle is d4, the corners a1, a7,
g1, g7. Batches are played under `jax.jit` in one `lax.scan` (one compile for the random games and the symmetric
replays), brought to the host once and replayed move by move in the reference.
"""

from __future__ import annotations

import dataclasses
import functools
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rules_harness as harness
from flax import struct
from tiny import jit_optimised

from azjax.games import BrandubState, Game, check_game, make
from azjax.games.brandub import DOCUMENT_RULES, BrandubRules, legal_moves

# ==============================================================================================================
# The reference: plain Python, no azjax.
#
# Pieces live in a dict {(file, rank): "A" | "D" | "K"} with file 0 = a and rank 0 = rank 1 (the bottom). The rule
# set and its options are the ones azjax documents; the action encoding is azjax's: square * 24 + direction * 6 +
# distance - 1, square = row * 7 + col with row 0 at the top (rank 7), directions north, east, south, west.

SIZE = 7
CASTLE = (3, 3)
CORNERS = frozenset({(0, 0), (0, 6), (6, 0), (6, 6)})
STEPS = ((0, 1), (1, 0), (0, -1), (-1, 0))  # north (up a rank), east, south, west, as (file, rank) steps
NUM_ACTIONS = 49 * 24
CODES = {"A": 1, "D": 2, "K": 3}
START_ROWS = ("...A...", "...A...", "...D...", "AADKDAA", "...D...", "...A...", "...A...")


def pieces_from_rows(rows) -> dict[tuple[int, int], str]:
    """Rows of 'A', 'D', 'K', '.' or '+' (rank 7 first, spaces ignored) as {(file, rank): piece}."""
    rows = [row.replace(" ", "") for row in rows]
    return {(f, SIZE - 1 - r): ch for r, row in enumerate(rows) for f, ch in enumerate(row) if ch in CODES}


def encode(square: tuple[int, int], direction: int, distance: int) -> int:
    file, rank = square
    return ((SIZE - 1 - rank) * SIZE + file) * 24 + direction * 6 + distance - 1


def decode(action: int) -> tuple[tuple[int, int], int, int]:
    """(from square, direction, distance)."""
    number, rest = divmod(action, 24)
    row, file = divmod(number, SIZE)
    direction, distance = divmod(rest, 6)
    return (file, SIZE - 1 - row), direction, distance + 1


def on_board(square: tuple[int, int]) -> bool:
    return 0 <= square[0] < SIZE and 0 <= square[1] < SIZE


def undo_action(action: int) -> int:
    """The action that moves the piece back, or -1 if the action leaves the board."""
    (file, rank), direction, distance = decode(action)
    target = (file + distance * STEPS[direction][0], rank + distance * STEPS[direction][1])
    return encode(target, (direction + 2) % 4, distance) if on_board(target) else -1


class Reference:
    """One game of Brandub, with the protocol's conventions (illegal moves lose, finished games ignore moves)."""

    def __init__(self, pieces=None, to_move=0, moves_played=0, *, king_armed=True,
                 monarch_capture="four_near_castle", castle_passable=True, max_moves=200, repetitions=3,
                 history_size=64) -> None:
        self.pieces = dict(pieces) if pieces is not None else pieces_from_rows(START_ROWS)
        self.to_move, self.moves_played = to_move, moves_played
        self.king_armed, self.monarch_capture, self.castle_passable = king_armed, monarch_capture, castle_passable
        self.max_moves, self.repetitions, self.history_size = max_moves, repetitions, history_size
        self.outcome: str | None = None  # "attackers", "defenders" or "draw"
        self.forfeited = False
        self.positions = [self._key()]  # every position so far, the current one last
        self._legal = self._moves(to_move)  # the side to move's moves (the game may still be over)

    @property
    def terminated(self) -> bool:
        return self.outcome is not None

    def _key(self):
        return frozenset(self.pieces.items()), self.to_move

    def _moves(self, player: int) -> list[int]:
        found = []
        for square, piece in self.pieces.items():
            if (piece == "A") != (player == 0):
                continue
            for direction, (df, dr) in enumerate(STEPS):
                for distance in range(1, SIZE):
                    target = (square[0] + distance * df, square[1] + distance * dr)
                    if not on_board(target) or target in self.pieces:
                        break
                    if target == CASTLE and piece != "K":
                        if self.castle_passable:
                            continue  # through, but not onto
                        break
                    if target in CORNERS and piece != "K":
                        break
                    found.append(encode(square, direction, distance))
        return sorted(found)

    def legal_actions(self) -> list[int]:
        return [] if self.terminated else self._legal

    def repetition_count(self) -> int:
        """How often the current position occurred among the history_size - 1 positions before it."""
        earlier = self.positions[:-1][-(self.history_size - 1):] if self.history_size > 1 else []
        return earlier.count(self.positions[-1])

    def board(self) -> list[int]:
        """azjax's encoding: 49 cells, row 0 at the top (rank 7); 0 empty, 1 A, 2 D, 3 K."""
        return [CODES.get(self.pieces.get((f, SIZE - 1 - r)), 0) for r in range(SIZE) for f in range(SIZE)]

    def ascii(self) -> str:
        return "\n".join(" ".join(self.pieces.get((f, SIZE - 1 - r), ".") for f in range(SIZE)) for r in range(SIZE))

    def _hostile(self, square) -> bool:
        return square in CORNERS or (square == CASTLE and square not in self.pieces)

    def _capture_pawns(self, mover: int, target, piece: str) -> None:
        if piece == "K" and not self.king_armed:
            return
        enemy = "D" if mover == 0 else "A"
        friends = ("A",) if mover == 0 else ("D", "K") if self.king_armed else ("D",)
        for df, dr in STEPS:
            victim, anvil = (target[0] + df, target[1] + dr), (target[0] + 2 * df, target[1] + 2 * dr)
            if self.pieces.get(victim) == enemy and on_board(anvil) and (
                self.pieces.get(anvil) in friends or self._hostile(anvil)
            ):
                del self.pieces[victim]

    def _monarch_taken(self, target) -> bool:
        monarch = next((sq for sq, piece in self.pieces.items() if piece == "K"), None)
        if monarch is None or abs(monarch[0] - target[0]) + abs(monarch[1] - target[1]) != 1:
            return False

        def against(square) -> bool:
            return on_board(square) and (self.pieces.get(square) == "A" or self._hostile(square))

        surrounded = all(against((monarch[0] + df, monarch[1] + dr)) for df, dr in STEPS)
        pinned = against((2 * monarch[0] - target[0], 2 * monarch[1] - target[1]))
        if self.monarch_capture == "four":
            return surrounded
        if self.monarch_capture == "two":
            return pinned
        near_castle = abs(monarch[0] - CASTLE[0]) + abs(monarch[1] - CASTLE[1]) <= 1
        return surrounded if near_castle else pinned

    def play(self, action: int) -> list[float]:
        """Makes `action` for the side to move; returns the rewards [attackers, defenders]."""
        if self.terminated:
            return [0.0, 0.0]
        mover = self.to_move
        win = [1.0, -1.0] if mover == 0 else [-1.0, 1.0]
        if action not in self._legal:
            self.forfeited = True
            self.outcome = ("attackers", "defenders")[1 - mover]
            return [-x for x in win]
        square, direction, distance = decode(action)
        target = (square[0] + distance * STEPS[direction][0], square[1] + distance * STEPS[direction][1])
        piece = self.pieces.pop(square)
        self.pieces[target] = piece
        self._capture_pawns(mover, target, piece)
        taken = mover == 0 and self._monarch_taken(target)
        if taken:
            self.pieces = {sq: p for sq, p in self.pieces.items() if p != "K"}
        self.to_move = 1 - mover
        self.moves_played += 1
        self.positions.append(self._key())
        self._legal = self._moves(self.to_move)
        if taken or (piece == "K" and target in CORNERS) or not self._legal:
            self.outcome = ("attackers", "defenders")[mover]
            return win
        earlier = self.positions[:-1][-self.history_size:] if self.history_size else []
        if earlier.count(self.positions[-1]) >= self.repetitions - 1 or self.moves_played >= self.max_moves:
            self.outcome = "draw"
        return [0.0, 0.0]


# ==============================================================================================================
# Batched random play in azjax, and its replay in the reference.

VARIANT = {"king_armed": False, "monarch_capture": "two", "castle_passable": False, "max_moves": 90,
           "repetitions": 2, "history_size": 8}
UNDO = np.array([undo_action(a) for a in range(NUM_ACTIONS)], np.int32)
NUM_GAMES = 512
NUM_VARIANT_GAMES = 256
NUM_SYMMETRIC_GAMES = NUM_GAMES // 8  # replayed under the identity and the 7 symmetries: one full batch


@functools.cache
def brandub(**options) -> Game:
    """One Game object per set of options, so that jitted functions are cached per game."""
    return make("brandub", **options)


@struct.dataclass
class Rollout:
    """B games of T moves in compact form; index t is the state after t moves."""

    actions: jax.Array  # [T, B] int32
    board: jax.Array  # [T + 1, B, 49] int8
    current_player: jax.Array  # [T + 1, B] int32
    terminated: jax.Array  # [T + 1, B] bool
    rewards: jax.Array  # [T + 1, B, 2] float32
    packed_mask: jax.Array  # [T + 1, B, 147] uint8, the legal masks packed by jnp.packbits
    piece_planes: jax.Array  # [T + 1, B, 7, 7, 5] bool, observation planes 0-4
    scalar_planes: jax.Array  # [T + 1, B, 2] float32, observation planes 5 and 6 (constant over the board)
    well_formed: jax.Array  # [T + 1, B] bool, planes 0-4 hold 0 or 1 and planes 5-6 are constant
    move_count: jax.Array  # [T + 1, B] int32


def _compact(game: Game, states) -> tuple[jax.Array, ...]:
    obs = jax.vmap(game.observe)(states)
    scalars = obs[:, 0, 0, 5:]
    well_formed = jnp.all((obs[..., :5] == 0) | (obs[..., :5] == 1), axis=(1, 2, 3)) & jnp.all(
        obs[..., 5:] == scalars[:, None, None, :], axis=(1, 2, 3)
    )
    mask = jnp.packbits(states.legal_action_mask, axis=-1)
    return (states.board, states.current_player, states.terminated, states.rewards, mask, obs[..., :5] > 0.5,
            scalars, well_formed, states.move_count)


def play(key: jax.Array, forced: jax.Array, use_forced: jax.Array, *, game: Game) -> Rollout:
    """Plays B games of T = forced.shape[0] moves: `forced` [T, B] where `use_forced` [B]; elsewhere a random
    legal move, or with a per-game probability the move that undoes the mover's last one (to make repetitions),
    or rarely a random action in [-1, A] (legal or not, always once the game is over)."""
    num_steps, num_games = forced.shape
    b = jnp.arange(num_games)
    undo_prob = jnp.asarray([0.0, 0.0, 0.3, 0.7])[b % 4]
    wild_prob = jnp.where(b % 8 == 7, 0.02, 0.0)
    first = jax.vmap(game.init)(jax.random.split(key, num_games))

    def move(carry, xs):
        states, last, before_last = carry
        step_key, step_forced = xs
        score_key, undo_key, wild_key, coin_key = jax.random.split(step_key, 4)
        mask = states.legal_action_mask
        # The r-th legal action for r uniform below their count: a uniform legal move from B random numbers.
        count = jnp.sum(mask, axis=-1)
        rank = jnp.floor(jax.random.uniform(score_key, (num_games,)) * count).astype(jnp.int32)
        legal = jnp.argmax(jnp.cumsum(mask, axis=-1) > rank[:, None], axis=-1)
        undo = jnp.asarray(UNDO)[jnp.maximum(before_last, 0)]
        undo_ok = (before_last >= 0) & (undo >= 0) & mask[b, jnp.maximum(undo, 0)]
        action = jnp.where(undo_ok & (jax.random.uniform(undo_key, (num_games,)) < undo_prob), undo, legal)
        wild = jax.random.randint(wild_key, (num_games,), -1, game.num_actions + 1)
        go_wild = states.terminated | (jax.random.uniform(coin_key, (num_games,)) < wild_prob)
        action = jnp.where(go_wild, wild, action)
        action = jnp.where(use_forced, step_forced, action).astype(jnp.int32)
        next_states = jax.vmap(game.step)(states, action)
        return (next_states, action, last), (action, _compact(game, next_states))

    no_action = jnp.full(num_games, -1, jnp.int32)
    keys = jax.random.split(key, num_steps)
    _, (actions, later) = jax.lax.scan(move, (first, no_action, no_action), (keys, forced))
    fields = [jnp.concatenate([a[None], b]) for a, b in zip(_compact(game, first), later, strict=True)]
    return Rollout(actions, *fields)


@functools.cache
def jit_play(game: Game):
    return jit_optimised(functools.partial(play, game=game))


def random_games(game: Game, seed: int, num_games: int) -> Rollout:
    forced = np.zeros((game.max_length + 2, num_games), np.int32)
    rollout = jit_play(game)(jax.random.key(seed, impl="rbg"), forced, np.zeros(num_games, bool))
    return jax.device_get(rollout)


@dataclasses.dataclass
class Expected:
    """What the reference says about every state of a rollout, [T + 1, B] leading axes."""

    board: np.ndarray
    packed_mask: np.ndarray
    terminated: np.ndarray
    rewards: np.ndarray
    current_player: np.ndarray
    repetition_count: np.ndarray
    moves_played: np.ndarray
    outcomes: list[tuple[str, bool]]  # per game: (outcome, forfeited)


def replay(actions: np.ndarray, options: dict) -> Expected:
    steps, games = actions.shape
    ex = Expected(
        board=np.zeros((steps + 1, games, 49), np.int8),
        packed_mask=np.zeros((steps + 1, games, 147), np.uint8),
        terminated=np.zeros((steps + 1, games), bool),
        rewards=np.zeros((steps + 1, games, 2), np.float32),
        current_player=np.zeros((steps + 1, games), np.int32),
        repetition_count=np.zeros((steps + 1, games), np.int32),
        moves_played=np.zeros((steps + 1, games), np.int32),
        outcomes=[],
    )
    for b in range(games):
        ref = Reference(**options)
        for t in range(steps + 1):
            mask = np.zeros(NUM_ACTIONS, bool)
            mask[ref.legal_actions()] = True
            ex.board[t, b] = ref.board()
            ex.packed_mask[t, b] = np.packbits(mask)
            ex.terminated[t, b] = ref.terminated
            ex.current_player[t, b] = ref.to_move
            ex.repetition_count[t, b] = ref.repetition_count()
            ex.moves_played[t, b] = ref.moves_played
            if ref.terminated:  # absorbing from here on
                for name in ("board", "packed_mask", "terminated", "current_player", "repetition_count",
                             "moves_played"):
                    getattr(ex, name)[t + 1:, b] = getattr(ex, name)[t, b]
                break
            ex.rewards[t + 1, b] = ref.play(int(actions[t, b]))
        ex.outcomes.append((ref.outcome, ref.forfeited))
    return ex


def expected_planes(ex: Expected) -> np.ndarray:
    """[T + 1, B, 7, 7, 5] bool: attackers, defenders, monarch, attackers to move, castle and corners."""
    board = ex.board.reshape(*ex.board.shape[:2], SIZE, SIZE)
    to_move = np.broadcast_to((ex.current_player == 0)[..., None, None], board.shape)
    special = np.zeros((SIZE, SIZE), bool)
    special[3, 3] = special[0, 0] = special[0, 6] = special[6, 0] = special[6, 6] = True
    return np.stack([board == 1, board == 2, board == 3, to_move, np.broadcast_to(special, board.shape)], -1)


def first_difference(actual: np.ndarray, wanted: np.ndarray, rollout: Rollout, field: str) -> str:
    differs = (actual != wanted).reshape(*actual.shape[:2], -1).any(-1)
    t, b = (int(i) for i in np.argwhere(differs)[0])
    return (f"{field} differs in {int(differs.any(0).sum())} games; first game {b} at step {t} after actions "
            f"{rollout.actions[:t, b].tolist()}")


@dataclasses.dataclass(frozen=True)
class Played:
    rollout: Rollout
    expected: Expected
    options: dict


@pytest.fixture(scope="module")
def default_games() -> Played:
    rollout = random_games(brandub(), seed=0, num_games=NUM_GAMES)
    return Played(rollout, replay(np.asarray(rollout.actions), {}), {})


@pytest.fixture(scope="module")
def variant_games() -> Played:
    rollout = random_games(brandub(**VARIANT), seed=1, num_games=NUM_VARIANT_GAMES)
    return Played(rollout, replay(np.asarray(rollout.actions), VARIANT), VARIANT)


@pytest.fixture(params=["default_games", "variant_games"])
def played(request: pytest.FixtureRequest) -> Played:
    return request.getfixturevalue(request.param)


@pytest.mark.parametrize("field", ["board", "packed_mask", "terminated", "rewards", "current_player"])
def test_random_games_match_the_reference(played: Played, field: str) -> None:
    actual, wanted = np.asarray(getattr(played.rollout, field)), getattr(played.expected, field)
    if field == "current_player":  # after a forfeit the rules name no next player
        forfeits = np.asarray([f for _, f in played.expected.outcomes])
        actual, wanted = actual[:, ~forfeits], wanted[:, ~forfeits]
    assert actual.shape == wanted.shape
    assert np.array_equal(actual, wanted), first_difference(actual, wanted, played.rollout, field)


def test_random_games_observe_the_reference_position(played: Played) -> None:
    rollout, ex = played.rollout, played.expected
    live = ~ex.terminated | np.concatenate([np.ones_like(ex.terminated[:1]), ~ex.terminated[:-1]])
    forfeits = np.asarray([f for _, f in ex.outcomes])
    live &= ~forfeits[None, :]  # a forfeit leaves the old position with no next player
    assert rollout.well_formed.all()
    planes = expected_planes(ex)
    assert np.array_equal(rollout.piece_planes[live], planes[live])
    options = {**dict(repetitions=3, max_moves=200), **played.options}
    scalars = np.stack([ex.repetition_count / (options["repetitions"] - 1), ex.moves_played / options["max_moves"]],
                       -1).astype(np.float32)
    np.testing.assert_allclose(rollout.scalar_planes[live], scalars[live], rtol=1e-6)


def test_random_games_keep_the_protocol(played: Played) -> None:
    rollout = played.rollout
    states = harness.Rollout(actions=rollout.actions, states=_states_view(rollout), observations=None)
    harness.assert_protocol_invariants(states)
    max_length = played.options.get("max_moves", 200)
    assert rollout.terminated[max_length].all()


def _states_view(rollout: Rollout):
    """The fields `assert_protocol_invariants` reads, with the masks unpacked."""
    mask = np.unpackbits(rollout.packed_mask, axis=-1)[..., :NUM_ACTIONS].astype(bool)
    return harness.BoardState(current_player=rollout.current_player, legal_action_mask=mask,
                              terminated=rollout.terminated, rewards=rollout.rewards, board=rollout.board)


def test_random_games_reach_every_ending(played: Played) -> None:
    # Guards the comparisons against being vacuous: every way a game ends occurs in the batch.
    outcomes = played.expected.outcomes
    moves = played.expected.moves_played[-1]
    max_moves = played.options.get("max_moves", 200)
    for outcome in ("attackers", "defenders"):
        assert (outcome, False) in outcomes and (outcome, True) in outcomes, outcome
    draws = [m for (o, f), m in zip(outcomes, moves, strict=True) if o == "draw"]
    assert any(m < max_moves for m in draws), "no repetition draw"
    assert any(m == max_moves for m in draws), "no move-limit draw"
    boards = played.expected.board
    assert (np.sum(boards[-1] == 3, -1) == 0).any(), "no monarch captured"
    assert (np.sum(boards[-1] == 1, -1) < 8).any() and (np.sum(boards[-1] == 2, -1) < 4).any(), "no captures"


def test_render_from_ascii_round_trips(default_games: Played) -> None:
    game = brandub()
    r = default_games.rollout
    was_live = np.concatenate([np.ones_like(r.terminated[:1]), ~r.terminated[:-1]])
    forfeits = np.asarray([f for _, f in default_games.expected.outcomes])
    candidates = np.argwhere(was_live & ~forfeits[None, :])  # positions reached by legal play, ends included
    picked = candidates[np.random.default_rng(0).choice(len(candidates), size=150, replace=False)]
    for t, b in picked:
        mask = np.unpackbits(r.packed_mask[t, b])[:NUM_ACTIONS].astype(bool)
        state = BrandubState(current_player=r.current_player[t, b], legal_action_mask=mask,
                             terminated=r.terminated[t, b], rewards=r.rewards[t, b], board=r.board[t, b],
                             move_count=r.move_count[t, b], history=np.zeros(64, np.uint32), num_history=np.int32(0))
        parsed = game.from_ascii(game.render(state))
        for name in ("board", "current_player", "legal_action_mask", "terminated", "rewards", "move_count"):
            np.testing.assert_array_equal(getattr(parsed, name), getattr(state, name), err_msg=name)


def test_symmetric_games_give_transformed_observations_and_masks(default_games: Played) -> None:
    game = brandub()
    base = np.clip(default_games.rollout.actions[:, :NUM_SYMMETRIC_GAMES], 0, NUM_ACTIONS - 1)
    batch = harness.symmetric_action_batch(game, base)  # [T, 8 * n]: the games, then their images
    assert batch.shape[1] == NUM_GAMES
    rollout = jax.device_get(jit_play(game)(jax.random.key(0, impl="rbg"), batch, np.ones(NUM_GAMES, bool)))
    assert np.array_equal(rollout.actions, batch)
    mask = np.unpackbits(rollout.packed_mask, axis=-1)[..., :NUM_ACTIONS].astype(bool)
    # Planes 5 and 6 are constant over the board, so the symmetries leave them alone.
    planes = rollout.piece_planes
    n = NUM_SYMMETRIC_GAMES
    for i, sym in enumerate(game.symmetries, start=1):
        mapped = slice(i * n, (i + 1) * n)
        board_first = np.moveaxis(planes[:, :n], (2, 3), (0, 1))  # the maps act on the two leading axes
        transformed = np.moveaxis(np.asarray(sym.transform(board_first)), (0, 1), (2, 3))
        assert np.array_equal(planes[:, mapped], transformed), sym.name
        assert np.array_equal(mask[:, mapped], sym.apply_to_actions(mask[:, :n])), sym.name
        for name in ("terminated", "rewards", "current_player", "scalar_planes"):
            assert np.array_equal(getattr(rollout, name)[:, mapped], getattr(rollout, name)[:, :n]), (sym.name, name)


NUM_RANDOM_BOARDS = 3000


def random_boards(seed: int, num_boards: int) -> tuple[np.ndarray, np.ndarray]:
    """int8 [N, 49] boards of up to 8 attackers, 4 defenders and the monarch (pawns off the castle and corners, the
    monarch anywhere, crowded or sparse), and the side to move int32 [N]."""
    rng = np.random.default_rng(seed)
    special = {0, 6, 24, 42, 48}
    boards = np.zeros((num_boards, 49), np.int8)
    for board in boards:
        squares = rng.permutation([c for c in range(49) if c not in special])
        num_attackers, num_defenders = rng.integers(0, 9), rng.integers(0, 5)
        board[squares[:num_attackers]] = 1
        board[squares[num_attackers:num_attackers + num_defenders]] = 2
        if rng.random() < 0.9:
            free = np.flatnonzero(board == 0)
            board[rng.choice(free)] = 3
    return boards, rng.integers(0, 2, num_boards).astype(np.int32)


def reference_mask(board: np.ndarray, player: int, *, castle_passable: bool, monarch_enters_castle: bool) -> np.ndarray:
    pieces = {(cell % SIZE, SIZE - 1 - cell // SIZE): "ADK"[code - 1] for cell, code in enumerate(board) if code}
    ref = Reference(pieces, to_move=player, castle_passable=castle_passable)
    mask = np.zeros(NUM_ACTIONS, bool)
    for action in ref.legal_actions():
        (file, rank), direction, distance = decode(action)
        target = (file + distance * STEPS[direction][0], rank + distance * STEPS[direction][1])
        mask[action] = monarch_enters_castle or target != CASTLE  # else the castle is no piece's destination
    return mask


@pytest.mark.parametrize("castle_passable", [True, False])
@pytest.mark.parametrize("monarch_enters_castle", [True, False])
def test_legal_moves_on_random_boards(castle_passable: bool, monarch_enters_castle: bool) -> None:
    # Random boards reach what random play rarely does (crowded lines, pieces beside the corners and the castle).
    rules = BrandubRules(castle_passable=castle_passable, monarch_enters_castle=monarch_enters_castle)
    boards, players = random_boards(seed=int(castle_passable) + 2 * int(monarch_enters_castle),
                                    num_boards=NUM_RANDOM_BOARDS)
    masks = np.asarray(jit_optimised(jax.vmap(functools.partial(legal_moves, rules=rules)))(boards, players))
    assert len(masks) == NUM_RANDOM_BOARDS
    for board, player, mask in zip(boards, players, masks, strict=True):
        wanted = reference_mask(board, int(player), castle_passable=castle_passable,
                                monarch_enters_castle=monarch_enters_castle)
        assert np.array_equal(mask, wanted), (
            f"player {player}, azjax only {np.flatnonzero(mask & ~wanted).tolist()}, reference only "
            f"{np.flatnonzero(wanted & ~mask).tolist()} on\n{board.reshape(SIZE, SIZE)}")


# ==============================================================================================================
# Hand-made positions. Each case: options, the position, the move, the board after it and the outcome; checked
# in azjax and in the reference.


def position(rows: str, status: str) -> str:
    return textwrap.dedent(rows).strip() + "\n" + status


EMPTY = "......."


@dataclasses.dataclass(frozen=True)
class Case:
    rows: tuple[str, ...]  # 7 rows, rank 7 first
    to_move: str  # "attackers" or "defenders"
    move: str
    after: tuple[str, ...]
    outcome: str  # "live", "attackers win", "defenders win" or "draw"
    options: tuple[tuple[str, object], ...] = ()


def case(rows: str, to_move: str, move: str, after: str, outcome: str = "live", **options) -> Case:
    def split(text: str) -> tuple[str, ...]:
        lines = tuple(line.strip() for line in textwrap.dedent(text).strip().splitlines())
        assert len(lines) == 7 and all(len(line) == 7 for line in lines), text
        return lines

    return Case(split(rows), to_move, move, split(after), outcome, tuple(sorted(options.items())))


CASES = {
    "a defender between two attackers, along a rank": case(
        "...A...\n.......\n.AD....\n...K...\n.......\n.......\n.......", "attackers", "d7-d5",
        ".......\n.......\n.A.A...\n...K...\n.......\n.......\n......."),
    "a defender between two attackers, along a file": case(
        ".......\n..A....\n..D....\nA......\n.......\n.....K.\n.......", "attackers", "a4-c4",
        ".......\n..A....\n.......\n..A....\n.......\n.....K.\n......."),
    "an attacker between two defenders": case(
        ".......\n.DA..D.\n.......\n.......\n......A\n.....K.\n.......", "defenders", "f6-d6",
        ".......\n.D.D...\n.......\n.......\n......A\n.....K.\n......."),
    "the armed monarch captures": case(
        ".......\n.DA....\n...K...\n.......\n......A\n.......\n.......", "defenders", "d5-d6",
        ".......\n.D.K...\n.......\n.......\n......A\n.......\n......."),
    # VARIANT: the monarch unarmed, captured by two, the castle closed to pawns (and short games).
    "the unarmed monarch does not capture": case(
        ".......\n.DA....\n...K...\n.......\n......A\n.......\n.......", "defenders", "d5-d6",
        ".......\n.DAK...\n.......\n.......\n......A\n.......\n.......", **VARIANT),
    "the armed monarch is an anvil": case(
        "...D...\n.......\n.KA....\n.......\n......A\n.......\n.......", "defenders", "d7-d5",
        ".......\n.......\n.K.D...\n.......\n......A\n.......\n......."),
    "the unarmed monarch is no anvil": case(
        "...D...\n.......\n.KA....\n.......\n......A\n.......\n.......", "defenders", "d7-d5",
        ".......\n.......\n.KAD...\n.......\n......A\n.......\n.......", **VARIANT),
    "a defender against a corner": case(
        ".D..A..\n.......\n.......\n.......\n.....K.\n.......\n.......", "attackers", "e7-c7",
        "..A....\n.......\n.......\n.......\n.....K.\n.......\n......."),
    "an attacker against a corner": case(
        ".......\n....K..\n......A\n.......\n..D....\nA......\n.......", "defenders", "c3-a3",
        ".......\n....K..\n......A\n.......\nD......\n.......\n......."),
    "a defender against the empty castle": case(
        "...A...\n.......\n...D...\n.......\n.......\n.K.....\n.......", "attackers", "d7-d6",
        ".......\n...A...\n.......\n.......\n.......\n.K.....\n......."),
    "an attacker against the empty castle": case(
        ".......\n.D...K.\n.......\n..A....\n.......\n......A\n.......", "defenders", "b6-b4",
        ".......\n.....K.\n.......\n.D.....\n.......\n......A\n......."),
    "no defender against the monarch's castle": case(
        "...A...\n.......\n...D...\n...K...\n.......\n.......\n.......", "attackers", "d7-d6",
        ".......\n...A...\n...D...\n...K...\n.......\n.......\n......."),
    "an attacker against the armed monarch on its castle": case(
        ".......\n.D.....\n.......\n..AK...\n.......\n......A\n.......", "defenders", "b6-b4",
        ".......\n.......\n.......\n.D.K...\n.......\n......A\n......."),
    "no attacker against the unarmed monarch's castle": case(
        ".......\n.D.....\n.......\n..AK...\n.......\n......A\n.......", "defenders", "b6-b4",
        ".......\n.......\n.......\n.DAK...\n.......\n......A\n.......", **VARIANT),
    "two captures at once": case(
        "...A...\n.......\n.AD.DA.\n...K...\n.......\n.......\n.......", "attackers", "d7-d5",
        ".......\n.......\n.A.A.A.\n...K...\n.......\n.......\n......."),
    "moving between two enemies is safe": case(
        "..D....\n.......\n.A.A...\n.......\n.......\n.....K.\n.......", "defenders", "c7-c5",
        ".......\n.......\n.ADA...\n.......\n.......\n.....K.\n......."),
    "the monarch on the castle, four attackers": case(
        ".......\n.......\n...A...\n..AKA..\n.......\n.......\n...A...", "attackers", "d1-d3",
        ".......\n.......\n...A...\n..A.A..\n...A...\n.......\n.......", "attackers win"),
    "the monarch on the castle, three attackers and a defender": case(
        ".......\n.......\n...A...\n..AKD..\n.......\n.......\n...A...", "attackers", "d1-d3",
        ".......\n.......\n...A...\n..AKD..\n...A...\n.......\n......."),
    "the monarch beside the castle, three attackers and the castle": case(
        "...A...\n.......\n..AKA..\n.......\n.......\n.......\n.......", "attackers", "d7-d6",
        ".......\n...A...\n..A.A..\n.......\n.......\n.......\n.......", "attackers win"),
    "the monarch beside the castle, two attackers": case(
        ".......\n.......\nA..KA..\n.......\n.......\n.......\n.......", "attackers", "a5-c5",
        ".......\n.......\n..AKA..\n.......\n.......\n.......\n......."),
    "the monarch beside the castle, two attackers, rule two": case(
        ".......\n.......\nA..KA..\n.......\n.......\n.......\n.......", "attackers", "a5-c5",
        ".......\n.......\n..A.A..\n.......\n.......\n.......\n.......", "attackers win", **VARIANT),
    "the monarch beside the castle, one attacker and the castle, rule two": case(
        "...A...\n.......\n...K...\n.......\n.......\n......A\n.......", "attackers", "d7-d6",
        ".......\n...A...\n.......\n.......\n.......\n......A\n.......", "attackers win", **VARIANT),
    "the monarch beside the castle, one attacker and the castle": case(
        "...A...\n.......\n...K...\n.......\n.......\n......A\n.......", "attackers", "d7-d6",
        ".......\n...A...\n...K...\n.......\n.......\n......A\n......."),
    "the monarch elsewhere, two attackers": case(
        ".......\n.A.....\n.K.....\n.......\n.......\n.A.....\n.......", "attackers", "b2-b4",
        ".......\n.A.....\n.......\n.A.....\n.......\n.......\n.......", "attackers win"),
    "the monarch elsewhere, two attackers, rule four": case(
        ".......\n.A.....\n.K.....\n.......\n.......\n.A.....\n.......", "attackers", "b2-b4",
        ".......\n.A.....\n.K.....\n.A.....\n.......\n.......\n.......", monarch_capture="four"),
    "the monarch elsewhere, four attackers, rule four": case(
        ".......\n.A.....\nAKA....\n.......\n.......\n.A.....\n.......", "attackers", "b2-b4",
        ".......\n.A.....\nA.A....\n.A.....\n.......\n.......\n.......", "attackers win", monarch_capture="four"),
    "the monarch on the edge, rule four": case(
        ".......\nA......\nKA.....\n.......\n.......\nA...D..\n.......", "attackers", "a2-a4",
        ".......\nA......\nKA.....\nA......\n.......\n....D..\n.......", monarch_capture="four"),
    "the monarch on the edge, two attackers": case(
        ".......\nA......\nKA.....\n.......\n.......\nA...D..\n.......", "attackers", "a2-a4",
        ".......\nA......\n.A.....\nA......\n.......\n....D..\n.......", "attackers win"),
    "the monarch against a corner": case(
        ".K..A..\n.......\n.......\n.......\n.......\n.......\n.......", "attackers", "e7-c7",
        "..A....\n.......\n.......\n.......\n.......\n.......\n.......", "attackers win"),
    "the monarch between two attackers at right angles": case(
        ".......\n.A.....\n.K..A..\n.......\n.......\n.......\n.......", "attackers", "e5-c5",
        ".......\n.A.....\n.KA....\n.......\n.......\n.......\n......."),
    "the monarch moves safely between two attackers": case(
        ".......\n.A.....\n....K..\n.A.....\n.......\n.......\n.......", "defenders", "e5-b5",
        ".......\n.A.....\n.K.....\n.A.....\n.......\n.......\n......."),
    "a lone monarch between attackers is captured only by the mover": case(
        ".......\n.A.....\n.K.....\n.A.....\n.......\n.......\n.....A.", "attackers", "f1-f2",
        ".......\n.A.....\n.K.....\n.A.....\n.......\n.....A.\n......."),
    "the monarch escapes": case(
        "..K....\n.......\n.......\n.......\n......A\n.......\n.......", "defenders", "c7-a7",
        "K......\n.......\n.......\n.......\n......A\n.......\n.......", "defenders win"),
    "the monarch passes through the empty castle": case(
        ".......\n...K...\n.......\n.......\n.......\n.......\n.A.....", "defenders", "d6-d2",
        ".......\n.......\n.......\n.......\n.......\n...K...\n.A.....", **VARIANT),
    "the attackers cannot move and lose": case(
        ".DAD...\n.......\n..D....\n.......\n....K..\n.......\n.......", "defenders", "c5-c6",
        ".DAD...\n..D....\n.......\n.......\n....K..\n.......\n.......", "defenders win"),
    "capturing the last attacker wins": case(
        ".......\nA......\n..D....\n.......\n....K..\n.......\n.......", "defenders", "c5-a5",
        ".......\n.......\nD......\n.......\n....K..\n.......\n.......", "defenders win"),
    "the defenders cannot move and lose": case(
        ".......\n.......\n.......\n.......\n.......\nA......\n.AKA...", "attackers", "a2-c2",
        ".......\n.......\n.......\n.......\n.......\n..A....\n.AKA...", "attackers win"),
}


def _status(to_move: str, moves: int | None = None) -> str:
    return f"{to_move} to move" + ("" if moves is None else f"; {moves} moves played")


def _expected_board(rows: tuple[str, ...]) -> np.ndarray:
    return np.asarray(Reference(pieces_from_rows(rows)).board(), np.int8)


def _outcome_of(state) -> str:
    if not bool(state.terminated):
        return "live"
    rewards = np.asarray(state.rewards)
    return "attackers win" if rewards[0] > 0 else "defenders win" if rewards[1] > 0 else "draw"


@pytest.mark.parametrize("name", list(CASES))
def test_hand_made_positions(name: str) -> None:
    c = CASES[name]
    options = dict(c.options)
    game = brandub(**options)
    before = game.from_ascii("\n".join(c.rows) + "\n" + _status(c.to_move))
    action = game.string_to_action(c.move)
    assert bool(before.legal_action_mask[action]), f"{c.move} should be legal"
    after = step(game, before, action)
    np.testing.assert_array_equal(after.board, _expected_board(c.after), err_msg=game.render(after))
    assert _outcome_of(after) == c.outcome, game.render(after)
    mover = 0 if c.to_move == "attackers" else 1
    wanted_rewards = {"live": [0, 0], "draw": [0, 0], "attackers win": [1, -1], "defenders win": [-1, 1]}[c.outcome]
    np.testing.assert_array_equal(after.rewards, wanted_rewards)
    assert int(after.current_player) == 1 - mover
    # The reference agrees (the case checks the reference too).
    ref = Reference(pieces_from_rows(c.rows), mover, mover, **options)
    assert ref.play(action) == wanted_rewards
    assert ref.board() == _expected_board(c.after).tolist()
    assert {None: "live", "draw": "draw", "attackers": "attackers win", "defenders": "defenders win"}[
        ref.outcome] == c.outcome
    # And the position after the move reads back from its rendering.
    parsed = game.from_ascii(game.render(after))
    for field in ("board", "current_player", "legal_action_mask", "terminated", "rewards", "move_count"):
        np.testing.assert_array_equal(getattr(parsed, field), getattr(after, field), err_msg=field)


@pytest.fixture(scope="module")
def game() -> Game:
    return brandub()


def step(game: Game, state, move: str | int):
    """One move, run eagerly: op by op, but with the ops compiled once for every set of options (a jitted step
    would compile once per set, which costs more here than the few dozen moves these tests make)."""
    action = game.string_to_action(move) if isinstance(move, str) else move
    return game.step(state, jnp.int32(action))


def legal(game: Game, state, move: str) -> bool:
    return bool(state.legal_action_mask[game.string_to_action(move)])


_STATE_FIELDS = ("board", "current_player", "legal_action_mask", "terminated", "rewards", "move_count", "history",
                 "num_history")


def assert_absorbing(game: Game, terminal) -> None:
    """Every action, in range or not, leaves a finished game as it is and pays zero (one batched step)."""
    assert bool(terminal.terminated)
    actions = jnp.asarray([-1, *range(NUM_ACTIONS), NUM_ACTIONS, *harness.OUT_OF_RANGE_EXTREMES], jnp.int32)
    after = jax.device_get(harness.jit_step_each(game)(terminal, actions))
    wanted = terminal.replace(rewards=jnp.zeros(2, jnp.float32))
    for name in _STATE_FIELDS:
        field, value = np.asarray(getattr(after, name)), np.asarray(getattr(wanted, name))
        assert field.dtype == value.dtype and np.array_equal(field, np.broadcast_to(value, field.shape)), name


def assert_forfeits(game: Game, state, actions: list[int]) -> None:
    """Each illegal action ends the game at once: -1 for the mover, +1 for the other side; the board stays."""
    assert not bool(state.terminated)
    mover = int(state.current_player)
    after = jax.device_get(harness.jit_step_each(game)(state, jnp.asarray(actions, jnp.int32)))
    assert after.terminated.all() and not after.legal_action_mask.any()
    np.testing.assert_array_equal(after.rewards, np.broadcast_to([-1.0, 1.0] if mover == 0 else [1.0, -1.0],
                                                                 after.rewards.shape))
    np.testing.assert_array_equal(after.board, np.broadcast_to(np.asarray(state.board), after.board.shape))
    np.testing.assert_array_equal(after.move_count, int(state.move_count))


CASTLE_ROWS = ".......\n...D...\n.......\n.......\n.......\n.A.....\n.K....."  # d6 D, b2 A, b1 K


@pytest.mark.parametrize("options", [{}, VARIANT], ids=["passable", "closed"])
def test_passing_through_the_castle(options: dict) -> None:
    game = brandub(**options)
    passable = options.get("castle_passable", True)
    defenders = game.from_ascii(position(CASTLE_ROWS, "defenders to move"))
    assert legal(game, defenders, "d6-d5")
    assert not legal(game, defenders, "d6-d4"), "a pawn stops on the castle"
    assert legal(game, defenders, "d6-d3") == passable and legal(game, defenders, "d6-d1") == passable
    attackers = game.from_ascii(position(CASTLE_ROWS.replace("D", "A", 1), "attackers to move"))
    assert not legal(game, attackers, "d6-d4")
    assert legal(game, attackers, "d6-d2") == passable
    monarch = game.from_ascii(position(CASTLE_ROWS.replace("D", "K", 1).replace(".K.....", ".D....."),
                                       "defenders to move"))
    assert legal(game, monarch, "d6-d4") and legal(game, monarch, "d6-d1"), "the monarch stops on or passes it"


def test_nothing_passes_the_occupied_castle_and_only_the_monarch_stops_on_corners(game: Game) -> None:
    state = game.from_ascii(position(".D.....\n...A...\n.......\n...K...\n.......\n......A\n.......",
                                     "attackers to move"))
    assert not legal(game, state, "d6-d2") and not legal(game, state, "d6-d4") and legal(game, state, "d6-d5")
    assert not legal(game, state, "g2-g1"), "an attacker stops on a corner"
    defenders = game.from_ascii(position(".D.....\n.......\n.......\n...K...\n.......\n......A\n.......",
                                         "defenders to move"))
    assert not legal(game, defenders, "b7-a7")
    assert legal(game, defenders, "b7-c7")
    assert_forfeits(game, defenders, [game.string_to_action("b7-a7")])


# A quiet cycle of four moves from the start: the start position comes back after moves 4 and 8.
CYCLE = ["d7-e7", "d5-e5", "e7-d7", "e5-d5"]


@pytest.mark.parametrize(
    ("options", "drawn_after"),
    [({}, 8), (VARIANT, 4), ({"history_size": 3}, None)],
    ids=["third occurrence", "second occurrence", "window too short"],
)
def test_repetition_draws(options: dict, drawn_after: int | None) -> None:
    game = brandub(**options)
    state = game.init(jax.random.key(0))
    ref = Reference(**options)
    for number, move in enumerate(CYCLE * 3, start=1):
        state = step(game, state, move)
        rewards = ref.play(game.string_to_action(move))
        assert bool(state.terminated) == (number == drawn_after) == ref.terminated, number
        np.testing.assert_array_equal(state.rewards, [0.0, 0.0])
        assert rewards == [0.0, 0.0]
        if number == drawn_after:
            assert game.render(state).endswith(f"draw with attackers to move; {number} moves played")
            if not options:
                assert_absorbing(game, state)
            return
    assert drawn_after is None


def test_observation_counts_earlier_occurrences(game: Game) -> None:
    state = game.init(jax.random.key(0))
    seen = []
    for move in CYCLE * 2:
        state = step(game, state, move)
        seen.append(float(game.observe(state)[0, 0, 5]))
    assert seen[3] == 0.5 and seen[:3] == [0.0, 0.0, 0.0], seen  # the start once before, out of 3 - 1


def test_move_limit(game: Game) -> None:
    rows = ".......\n.......\n.......\n...K...\n.......\n.......\n.A....."
    quiet = game.from_ascii(position(rows, "defenders to move; 199 moves played"))
    assert int(quiet.move_count) == 199 and not bool(quiet.terminated)
    drawn = step(game, quiet, "d4-d5")
    assert bool(drawn.terminated) and int(drawn.move_count) == 200
    np.testing.assert_array_equal(drawn.rewards, [0.0, 0.0])
    assert game.render(drawn).splitlines()[-1] == "draw with attackers to move; 200 moves played"
    last = game.from_ascii(position(rows.replace("...K...", "K......"), "defenders to move; 199 moves played"))
    escaped = step(game, last, "a4-a7")
    np.testing.assert_array_equal(escaped.rewards, [-1.0, 1.0])  # a win on the last move is a win
    short = brandub(**VARIANT)
    assert short.max_length == VARIANT["max_moves"] == 90
    state = short.from_ascii(position(rows, "defenders to move; 89 moves played"))
    assert bool(step(short, state, "d4-d5").terminated)
    ref = Reference(pieces_from_rows(rows.splitlines()), 1, 199)
    assert ref.play(game.string_to_action("d4-d5")) == [0.0, 0.0] and ref.outcome == "draw"


@pytest.mark.parametrize(
    ("rows", "status"),
    [
        ("...A...\n.......\n.AD....\n...K...\n.......\n.......\n.......", "attackers to move"),
        ("K......\n.......\n.......\n.......\n......A\n.......\n.......", "defenders win; 8 moves played"),
        (".......\n...A...\n.......\n.......\n.......\n.......\n.......", "attackers win"),
    ],
)
def test_illegal_moves_lose_and_finished_games_absorb(game: Game, rows: str, status: str) -> None:
    state = game.from_ascii(position(rows, status))
    if bool(state.terminated):
        assert_absorbing(game, state)
        return
    illegal = np.flatnonzero(~np.asarray(state.legal_action_mask)).tolist()
    assert_forfeits(game, state, [*illegal, -1, NUM_ACTIONS, *harness.OUT_OF_RANGE_EXTREMES])


def test_start_position_render_and_observation(game: Game) -> None:
    state = game.init(jax.random.key(0))
    assert game.render(state) == textwrap.dedent("""\
          a b c d e f g
        7 + . . A . . +
        6 . . . A . . .
        5 . . . D . . .
        4 A A D K D A A
        3 . . . D . . .
        2 . . . A . . .
        1 + . . A . . +
        attackers to move; 0 moves played""")
    assert int(np.sum(state.legal_action_mask)) == 40  # 4 arms x (4 + 6) moves
    obs = np.asarray(game.observe(state))
    assert obs.shape == (7, 7, 7) and obs.dtype == np.float32
    np.testing.assert_array_equal(obs[..., :3].sum(axis=(0, 1)), [8, 4, 1])
    assert obs[3, 3, 2] == 1 and obs[0, 3, 0] == 1 and obs[2, 3, 1] == 1  # K d4, A d7, D d5
    np.testing.assert_array_equal(obs[..., 3], 1.0)  # attackers to move
    assert obs[..., 4].sum() == 5 and obs[0, 0, 4] == obs[3, 3, 4] == 1
    np.testing.assert_array_equal(obs[..., 5:], 0.0)
    after = step(game, state, "d6-f6")
    obs = np.asarray(game.observe(after))
    np.testing.assert_array_equal(obs[..., 3], 0.0)
    np.testing.assert_allclose(obs[..., 6], 1 / 200)
    assert obs[1, 5, 0] == 1 and obs[1, 3, 0] == 0


def test_from_ascii_reads_every_documented_form(game: Game) -> None:
    wanted = game.init(jax.random.key(0))
    compact = "\n".join(START_ROWS) + "\nattackers to move"
    for text in [game.render(wanted), compact, compact + "; 0 moves played", "\n\n" + compact.lower().replace(
            "attackers to move", "  ATTACKERS TO MOVE ").upper().replace("ATTACKERS TO MOVE", "attackers to move")]:
        parsed = game.from_ascii(text)
        for name in ("board", "current_player", "legal_action_mask", "terminated", "rewards", "move_count"):
            np.testing.assert_array_equal(getattr(parsed, name), getattr(wanted, name), err_msg=name)
    assert int(game.from_ascii("\n".join(START_ROWS) + "\ndefenders to move").move_count) == 1


@pytest.mark.parametrize(
    ("rows", "status", "message"),
    [
        ("\n".join(START_ROWS[:6]), "attackers to move", r"expected a 7 x 7 board"),
        ("\n".join(START_ROWS).replace("K", "X"), "attackers to move", r"expected a 7 x 7 board"),
        ("\n".join(START_ROWS), "", r"expected one status line"),
        ("\n".join(START_ROWS), "white to move", r"expected one status line"),
        ("\n".join(START_ROWS), "attackers to move; 3 moves played", r"after 3 moves the defenders are to move"),
        ("\n".join(START_ROWS), "defenders to move; 201 moves played", r"ends after 200 moves"),
        ("\n".join(START_ROWS), "attackers win", r"'attackers win' needs the monarch captured"),
        ("\n".join(START_ROWS), "defenders win", r"'defenders win' needs the monarch on a corner"),
        ("\n".join(START_ROWS).replace("K", "."), "attackers to move", r"monarch is off the board"),
        ("\n".join(["A......", *START_ROWS[1:]]), "attackers to move", r"only the monarch may stand on a7"),
        ("\n".join(START_ROWS).replace("...D...", "...K...", 1), "attackers to move", r"3 monarchs|2 monarchs"),
        ("\n".join(START_ROWS).replace("...A...", ".A.A...", 1), "attackers to move", r"9 attackers.*at most 8"),
        ("K......\n.......\n.......\n.......\n......A\n.......\n.......", "attackers to move",
         r"monarch is on a corner"),
        (".DAD...\n..D....\n.......\n.......\n....K..\n.......\n.......", "attackers to move",
         r"the attackers cannot move"),
    ],
)
def test_from_ascii_rejects_impossible_positions(game: Game, rows: str, status: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        game.from_ascii(rows + "\n" + status)


def test_action_encoding_and_names(game: Game) -> None:
    names = [game.action_to_string(a) for a in range(NUM_ACTIONS)]
    assert len(set(names)) == NUM_ACTIONS
    assert [game.string_to_action(n) for n in names] == list(range(NUM_ACTIONS))
    assert [game.string_to_action(f" {n.upper()} ") for n in names] == list(range(NUM_ACTIONS))
    # from d2 (row 5, col 3): north 1 -> d3; the action is square * 24 + direction * 6 + distance - 1.
    assert game.string_to_action("d2-d3") == (5 * 7 + 3) * 24 + 0 * 6 + 0
    assert game.string_to_action("b4-b7") == (3 * 7 + 1) * 24 + 0 * 6 + 2
    assert game.string_to_action("a4-g4") == (3 * 7 + 0) * 24 + 1 * 6 + 5
    assert game.string_to_action("d7-d1") == (0 * 7 + 3) * 24 + 2 * 6 + 5
    assert game.string_to_action("g1-a1") == (6 * 7 + 6) * 24 + 3 * 6 + 5
    assert game.string_to_action("d2d3") == game.string_to_action("d2:N1") == game.string_to_action("D2 : n1")
    assert game.action_to_string(0) == "a7:N1"  # leaves the board
    assert game.action_to_string(game.string_to_action("b7:E6")) == "b7:E6"
    for text in ["", "d2", "d2-e3", "d2-d2", "h1-h2", "d2:N7", "d2:X1", "d2-N1", "d0-d1", "d2-d9", "d2-d10"]:
        with pytest.raises(ValueError, match=r"(cannot read|straight|off the board)"):
            game.string_to_action(text)


def test_symmetry_tables(game: Game) -> None:
    assert {s.name for s in game.symmetries} == {"flip_lr", "flip_ud", "rot180", "rot90", "rot270", "transpose",
                                                 "anti_transpose"}
    by_name = {s.name: s for s in game.symmetries}
    a = game.string_to_action
    assert len({s.action_index for s in game.symmetries}) == 7  # seven different permutations of the moves
    # Mirroring left-right turns east into west; rotating by 90 degrees (counter-clockwise) turns north into west.
    assert int(by_name["flip_lr"].map_action(a("b4-b6"))) == a("f4-f6")
    assert int(by_name["flip_lr"].map_action(a("a4-c4"))) == a("g4-e4")
    assert int(by_name["flip_ud"].map_action(a("d2-d3"))) == a("d6-d5")
    assert int(by_name["rot180"].map_action(a("b6-b5"))) == a("f2-f3")
    assert int(by_name["rot90"].map_action(a("d6-d7"))) == a("b4-a4")
    assert int(by_name["rot270"].map_action(a("d6-d7"))) == a("f4-g4")
    # The board's rows run from 7 (row 0 of the array) down to 1, so `transpose` (rows <-> columns of the array)
    # mirrors in the a7-g1 diagonal and `anti_transpose` in the a1-g7 one. On the d file both agree with a rotation
    # (d6-d7 turns to b4-a4 as under rot90); off it, a square on the diagonal stays and the move turns.
    assert int(by_name["transpose"].map_action(a("d6-d7"))) == a("b4-a4")
    assert int(by_name["transpose"].map_action(a("b6-b5"))) == a("b6-c6")  # south turns east
    assert int(by_name["transpose"].map_action(a("c2-c1"))) == a("f5-g5")
    assert int(by_name["anti_transpose"].map_action(a("e5-g5"))) == a("e5-e7")  # east turns north
    assert int(by_name["anti_transpose"].map_action(a("c2-c1"))) == a("b3-a3")


def test_check_game_passes_with_other_options() -> None:
    # The default game is checked with every registered game in tests/games/test_checker.py.
    game = brandub(king_armed=False, monarch_capture="four", castle_passable=False, max_moves=60, repetitions=2,
                   history_size=6)
    report = check_game(game, num_games=16)
    assert set(report.symmetries_checked) == {s.name for s in game.symmetries}, report


def test_options() -> None:
    assert brandub().name == "brandub"
    assert brandub(**VARIANT).name.startswith("brandub(king_armed=False, monarch_capture='two'")
    for bad in [{"monarch_capture": "three"}, {"max_moves": 0}, {"repetitions": 1}, {"history_size": -1},
                {"king_armed": "yes"}]:
        with pytest.raises(ValueError):
            make("brandub", **bad)
    with pytest.raises(ValueError, match="bad options"):
        make("brandub", size=9)


# ==============================================================================================================
# The sources' rule variants (monarch_enters_castle, capture, stalemate), on hand-made positions checked in azjax
# alone: the reference above plays azjax's options, and tests/games/test_brandub_package.py plays the variants of
# the source document against the `brandub` package.

FLANKED = ".......\n.......\n.......\n.AD....\n.......\n..D....\n.A...K."  # c4 D between b4 A and the castle
SOURCE_CASES = {
    "a pawn moving between two enemies is taken": case(
        "..D....\n.......\n.A.A...\n.......\n.......\n.....K.\n.......", "defenders", "c7-c5",
        ".......\n.......\n.A.A...\n.......\n.......\n.....K.\n.......", capture="passive"),
    "a pawn taken as it moves captures nothing": case(
        ".A.....\n.D.....\nD.D....\n.......\n.A.....\n.....K.\n.......", "attackers", "b3-b5",
        ".A.....\n.D.....\nD.D....\n.......\n.......\n.....K.\n.......", capture="passive"),
    "a pawn taken as it moves captures nothing, neighbours": case(
        ".A.....\n.D.....\nD.D....\n.......\n.A.....\n.....K.\n.......", "attackers", "b3-b5",
        ".A.....\n.D.....\nD.D....\n.......\n.......\n.....K.\n.......", capture="neighbours"),
    "a pawn taken as it moves and capturing at once, board": case(
        ".A.....\n.D.....\nD.D....\n.......\n.A.....\n.....K.\n.......", "attackers", "b3-b5",
        ".A.....\n.......\nD.D....\n.......\n.......\n.....K.\n.......", capture="board"),
    "the monarch moving between two attackers loses": case(
        ".K.....\n.......\nA.A....\n.......\n.......\n.......\n.......", "defenders", "b7-b5",
        ".......\n.......\nA.A....\n.......\n.......\n.......\n.......", "attackers win", capture="passive"),
    "the monarch moving between two attackers is safe where only the mover captures": case(
        ".K.....\n.......\nA.A....\n.......\n.......\n.......\n.......", "defenders", "b7-b5",
        ".......\n.......\nAKA....\n.......\n.......\n.......\n......."),
    "the monarch leaving its castle for three attackers loses": case(
        ".......\n...A...\n..A.A..\n...K...\n.......\n.......\n.......", "defenders", "d4-d5",
        ".......\n...A...\n..A.A..\n.......\n.......\n.......\n.......", "attackers win", capture="neighbours"),
    "a flanked defender falls when a piece moves beside it": case(
        FLANKED, "defenders", "c2-c3",
        ".......\n.......\n.......\n.A.....\n..D....\n.......\n.A...K.", capture="neighbours"),
    "a flanked defender stays while the moves are elsewhere": case(
        FLANKED, "attackers", "b1-b2",
        ".......\n.......\n.......\n.AD....\n.......\n.AD....\n.....K.", capture="neighbours"),
    "a flanked defender stays where only the mover captures": case(
        FLANKED, "defenders", "c2-c3",
        ".......\n.......\n.......\n.AD....\n..D....\n.......\n.A...K."),
    "every flanked piece falls after any move": case(
        FLANKED, "attackers", "b1-b2",
        ".......\n.......\n.......\n.A.....\n.......\n.AD....\n.....K.", capture="board"),
    "the defenders cannot move: a draw": case(
        ".......\n.......\n.......\n.......\n.......\nA......\n.AKA...", "attackers", "a2-c2",
        ".......\n.......\n.......\n.......\n.......\n..A....\n.AKA...", "draw", stalemate="draw"),
}


@pytest.mark.parametrize("name", list(SOURCE_CASES))
def test_source_variants_on_hand_made_positions(name: str) -> None:
    c = SOURCE_CASES[name]
    game = brandub(**dict(c.options))
    before = game.from_ascii("\n".join(c.rows) + "\n" + _status(c.to_move))
    action = game.string_to_action(c.move)
    assert bool(before.legal_action_mask[action]), f"{c.move} should be legal"
    after = step(game, before, action)
    np.testing.assert_array_equal(after.board, _expected_board(c.after), err_msg=game.render(after))
    assert _outcome_of(after) == c.outcome, game.render(after)
    wanted_rewards = {"live": [0, 0], "draw": [0, 0], "attackers win": [1, -1], "defenders win": [-1, 1]}[c.outcome]
    np.testing.assert_array_equal(after.rewards, wanted_rewards)
    parsed = game.from_ascii(game.render(after))
    for field in ("board", "current_player", "legal_action_mask", "terminated", "rewards", "move_count"):
        np.testing.assert_array_equal(getattr(parsed, field), getattr(after, field), err_msg=field)


def test_the_monarch_kept_off_the_castle_passes_through_it() -> None:
    rows = position(".......\n.......\n...K...\n.......\n.......\n.......\n.A.....", "defenders to move")
    game = brandub(monarch_enters_castle=False)
    state = game.from_ascii(rows)
    assert not legal(game, state, "d5-d4") and legal(game, state, "d5-d3") and legal(game, state, "d5-d1")
    assert legal(brandub(), brandub().from_ascii(rows), "d5-d4")


def test_a_stuck_side_draws_where_stalemate_is_a_draw() -> None:
    game = brandub(stalemate="draw")
    stuck = ".DAD...\n..D....\n.......\n.......\n....K..\n......."
    with pytest.raises(ValueError, match="write 'draw with attackers to move'"):
        game.from_ascii(stuck + "\n.......\nattackers to move")
    drawn = game.from_ascii(stuck + "\n.......\ndraw with attackers to move")
    assert bool(drawn.terminated) and not np.any(drawn.rewards)
    with pytest.raises(ValueError, match=r"'defenders win' needs the monarch on a corner$"):
        game.from_ascii(stuck + "\n.......\ndefenders win")


def test_brandub_document_is_the_document_s_rules() -> None:
    document = make("brandub_document")
    assert document.name == "brandub_document" and document.max_length == 200
    assert make("brandub_document", max_moves=100).name == "brandub_document(max_moves=100)"
    assert brandub(**DOCUMENT_RULES).name == (
        "brandub(monarch_enters_castle=False, capture='neighbours', stalemate='draw', history_size=0)")
    for bad in [{"capture": "all"}, {"stalemate": "pass"}, {"monarch_enters_castle": 1}, {"size": 9}]:
        with pytest.raises(ValueError):
            make("brandub_document", **bad)
