"""Othello rules: random games against pgx's Othello (8 x 8) and a plain-Python reference (8 x 8 and 6 x 6), then
hand-made positions for every rule: flips in each direction and in several at once, unbracketed runs, the forced
pass, and the ends (full board, a colour wiped out, no placement for either side with empty cells left, draws).

Action = row * size + col (row 0, "1", at the top; column a on the left), then the pass, index size * size.
"""

from __future__ import annotations

import copy
import functools

import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rules_harness as harness
from hypothesis import HealthCheck, given, settings
from reference import SYMBOLS, ReferenceGame
from tiny import jit_optimised

from azjax.games import BoardState, Game, Symmetry, check_game, make

_BORDER = "#"
_CODE = {None: 0, "X": 1, "O": 2}


class Othello(ReferenceGame):
    """Othello from the rules, on a "mailbox" board (the size x size cells inside a ring of border squares, walked
    square by square along the 8 directions) rather than azjax's shifted boards and ray tables. See reference.py
    for the protocol conventions it models; the game ends when neither player can place, with +1/-1 by disc count.
    """

    size = 8
    num_actions = 8 * 8 + 1
    line_length = 0  # Othello has no lines

    def __init__(self, rows: list[str] | None = None, to_move: int = 0) -> None:
        """The start position, or `rows` ("X", "O", "." per cell, top row first) with `to_move` to play."""
        super().__init__()
        n, width = self.size, self.size + 2
        self.squares: list[str | None] = [_BORDER] * (width * width)
        self.square_of = [(r + 1) * width + c + 1 for r in range(n) for c in range(n)]  # action -> square
        self.steps = (1, -1, width, -width, width + 1, width - 1, -width + 1, -width - 1)
        if rows is None:
            m = n // 2
            rows = ["." * n] * (m - 1) + ["." * (m - 1) + "OX" + "." * (m - 1)]
            rows += ["." * (m - 1) + "XO" + "." * (m - 1)] + ["." * n] * (m - 1)
        for action, char in enumerate("".join("".join(row.split()) for row in rows)):
            self.squares[self.square_of[action]] = None if char == "." else char
        self.to_move = to_move
        self.placements: list[int] = []
        self._look_ahead()

    def flips(self, square: int, symbol: str) -> list[int]:
        """The squares a disc of `symbol` on the empty `square` would flip."""
        other = "O" if symbol == "X" else "X"
        flipped: list[int] = []
        for step in self.steps:
            run, walk = [], square + step
            while self.squares[walk] == other:
                run.append(walk)
                walk += step
            if run and self.squares[walk] == symbol:
                flipped += run
        return flipped

    def placements_of(self, player: int) -> list[int]:
        """The cells where `player` can place: empty, with a run of the opponent's discs next to it in some
        direction that ends at the player's own disc. (Inlined: the replay calls it after every move.)"""
        squares, mine, theirs = self.squares, SYMBOLS[player], SYMBOLS[1 - player]
        found = []
        for action, square in enumerate(self.square_of):
            if squares[square] is not None:
                continue
            for step in self.steps:
                walk = square + step
                if squares[walk] != theirs:
                    continue
                while squares[walk] == theirs:
                    walk += step
                if squares[walk] == mine:
                    found.append(action)
                    break
        return found

    def _look_ahead(self) -> None:
        """The placements of the player to move; the end of the game if neither player has one."""
        self.placements = self.placements_of(self.to_move)
        if not self.placements and not self.placements_of(1 - self.to_move):
            num_x, num_o = self.counts()
            self.outcome = "X" if num_x > num_o else "O" if num_o > num_x else "draw"

    def counts(self) -> tuple[int, int]:
        return self.squares.count("X"), self.squares.count("O")

    def final_rewards(self) -> list[float]:
        return {"X": [1.0, -1.0], "O": [-1.0, 1.0], "draw": [0.0, 0.0]}[self.outcome or "draw"]

    def legal_actions(self) -> list[int]:
        if self.terminated:
            return []
        return self.placements or [self.num_actions - 1]  # the pass, only when no placement is legal

    def play(self, action: int) -> list[float]:
        if self.terminated:
            return [0.0, 0.0]
        mover = self.to_move
        if action not in self.legal_actions():
            self.forfeited = True
            self.outcome = SYMBOLS[1 - mover]
            return [-1.0 if p == mover else 1.0 for p in range(2)]
        if action != self.num_actions - 1:
            square = self.square_of[action]
            for flipped in [square, *self.flips(square, SYMBOLS[mover])]:
                self.squares[flipped] = SYMBOLS[mover]
        self.to_move = 1 - mover
        self._look_ahead()
        return self.final_rewards() if self.terminated else [0.0, 0.0]

    def grid(self) -> list[list[str | None]]:
        n = self.size
        return [[self.squares[self.square_of[r * n + c]] for c in range(n)] for r in range(n)]

    def board(self) -> list[int]:
        return [_CODE[self.squares[sq]] for sq in self.square_of]

    def board_rows(self) -> list[str]:
        return ["".join(cell or "." for cell in row) for row in self.grid()]


class Othello6(Othello):
    size = 6
    num_actions = 6 * 6 + 1


# --------------------------------------------------------------------------------------------------------------
# Random play. The harness's symmetric play starts every game from `init`, which only 3 of Othello's 7 symmetries
# leave unchanged; here the mirrored games start from the mirrored start instead.


def transform_state(sym: Symmetry, state: BoardState) -> BoardState:
    """The position `sym` maps `state` to (batched or not): board and legal mask permuted; the rest unchanged."""
    index = np.asarray(sym.action_index)
    return state.replace(board=state.board[..., index[:-1]], legal_action_mask=state.legal_action_mask[..., index])


def play_from(first: BoardState, actions: jax.Array, *, game: Game) -> harness.Rollout:
    """Plays actions [T, B] from the states `first` [B]. Un-jitted; see `jit_play_from`."""

    def move(states: BoardState, step_actions: jax.Array) -> tuple[BoardState, BoardState]:
        next_states = jax.vmap(game.step)(states, step_actions)
        return next_states, next_states

    _, later = jax.lax.scan(move, first, actions)
    states = jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, later)
    return harness.Rollout(actions=actions, states=states, observations=jax.vmap(jax.vmap(game.observe))(states))


@functools.cache
def jit_play_from(game: Game):
    return jit_optimised(functools.partial(play_from, game=game))


def play_symmetric(game: Game, actions: np.ndarray) -> harness.Rollout:
    """Actions [T, B] from the start, and their images under each symmetry from the image of the start, in the
    layout of `harness.symmetric_action_batch`: [T, (1 + S) * B]."""
    start = game.init(jax.random.key(0))
    starts = [start] + [transform_state(sym, start) for sym in game.symmetries]
    first = jax.tree.map(lambda *xs: jnp.repeat(jnp.stack(xs), actions.shape[1], axis=0), *starts)
    return jax.device_get(jit_play_from(game)(first, harness.symmetric_action_batch(game, actions)))


class OthelloRulesTests(harness.GenericRulesTests):
    """The harness's tests, with symmetric play from the mirrored start."""

    def test_symmetric_games_give_transformed_observations_and_masks(self, game: Game, legal: harness.Played):
        num_games = self.num_symmetric_games
        actions = np.clip(legal.rollout.actions[:, :num_games], 0, game.num_actions - 1)  # after the end: any
        harness.assert_symmetric_play(game, play_symmetric(game, actions), num_games)

    # Nearly all such actions are illegal (a handful of 37 or 65 are legal), so these games end at once: a few
    # examples check the forfeits; the random games above check the symmetries of legal play.
    @settings(max_examples=5, deadline=None, database=None, suppress_health_check=[HealthCheck.differing_executors])
    @given(data=st.data())
    def test_any_in_range_sequence_commutes_with_symmetries(self, game: Game, data: st.DataObject) -> None:
        length = game.max_length + 2
        actions = data.draw(st.lists(st.integers(0, game.num_actions - 1), min_size=length, max_size=length))
        # Tiled to the batch of the test above, whose compiled play this reuses.
        batch = np.tile(np.asarray(actions, np.int32)[:, None], (1, self.num_symmetric_games))
        harness.assert_symmetric_play(game, play_symmetric(game, batch), self.num_symmetric_games)

    def test_start_is_invariant_under_three_symmetries(self, game: Game) -> None:
        start = game.init(jax.random.key(0))
        invariant = {
            sym.name for sym in game.symmetries if (transform_state(sym, start).board == start.board).all()
        }
        assert invariant == {"rot180", "transpose", "anti_transpose"}


class TestOthello(OthelloRulesTests):
    game_name = "othello"
    reference_class = Othello
    num_games = 1500
    num_symmetric_games = 32

    def test_random_play_matches_pgx(self, game: Game, legal: harness.Played) -> None:
        pgx = pytest.importorskip("pgx")
        rollout = legal.rollout
        az = jax.tree.map(np.asarray, rollout.states)
        # After azjax's game ends (as soon as neither side can place), pgx's goes on with forced passes until two
        # passes in a row end it.
        actions = np.where(az.terminated[:-1], game.num_actions - 1, np.asarray(rollout.actions)).astype(np.int32)
        theirs = jax.device_get(play_in_pgx(pgx.make("othello"), actions))
        live = ~az.terminated
        np.testing.assert_array_equal(theirs["board"], az.board)  # passes leave the board as it is
        for name, ours in [
            ("current_player", az.current_player),
            ("legal_action_mask", az.legal_action_mask),
            ("observation", np.asarray(rollout.observations)),
        ]:
            differs = (theirs[name] != ours).reshape(*live.shape, -1).any(axis=-1) & live
            assert not differs.any(), f"{name} differs from pgx in {differs.any(axis=0).sum()} games"
        assert not (theirs["terminated"] & live).any(), "pgx ended a game that azjax goes on with"
        assert theirs["terminated"][-1].all()
        np.testing.assert_array_equal(theirs["rewards"].sum(axis=0), az.rewards.sum(axis=0))
        # pgx ends a game with its last placement when the board is full or a colour is gone, else two passes later.
        lag = theirs["terminated"].argmax(axis=0) - az.terminated.argmax(axis=0)
        final = az.board[-1]
        full_or_gone = (final != 0).all(axis=-1) | ~(final == 1).any(axis=-1) | ~(final == 2).any(axis=-1)
        np.testing.assert_array_equal(lag, np.where(full_or_gone, 0, 2))
        assert (lag == 2).any() and (lag == 0).any()  # both kinds of ending were played


def play_in_pgx(env, actions: np.ndarray) -> dict[str, jax.Array]:
    """pgx's Othello through actions [T, B] from its start, with black (who moves first) as player 0: each field
    [T + 1, B, ...] in azjax's terms."""

    def view(states) -> dict[str, jax.Array]:
        black_positive = jnp.where(states._x.turn[:, None] == 0, states._x.board, -states._x.board)
        return {
            "board": jnp.where(black_positive > 0, 1, jnp.where(black_positive < 0, 2, 0)).astype(jnp.int8),
            "current_player": states.current_player,
            "legal_action_mask": states.legal_action_mask,
            "terminated": states.terminated,
            "rewards": states.rewards,
            "observation": states.observation.astype(jnp.float32),
        }

    @jax.jit
    def run(actions: jax.Array) -> dict[str, jax.Array]:
        first = jax.vmap(env.init)(jax.random.split(jax.random.key(0), actions.shape[1]))
        # pgx seats black at random; azjax's player 0 is black. (Its turn counter, 0 for black, agrees with this.)
        first = first.replace(current_player=jnp.zeros_like(first.current_player))

        def move(states, step_actions):
            states = jax.vmap(env.step)(states, step_actions)
            return states, view(states)

        _, later = jax.lax.scan(move, first, actions)
        return jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), view(first), later)

    return run(jnp.asarray(actions))


class TestOthello6(OthelloRulesTests):
    game_name = "othello6"
    reference_class = Othello6
    num_games = 2000
    num_symmetric_games = 32


# --------------------------------------------------------------------------------------------------------------
# Random positions rather than games: crowded boards, long runs along the edges and every mix of discs, which
# random play from the start reaches rarely, each read from ASCII and then played on by every legal move.


def random_position(rng: np.random.Generator, size: int) -> list[str]:
    """Rows of a random board whose four centre cells are occupied (as on every board of a game)."""
    empty_share, x_share = rng.uniform(0.0, 0.95) ** 2, rng.uniform(0.05, 0.95)  # many nearly full or one-sided
    shares = [empty_share, (1 - empty_share) * x_share, (1 - empty_share) * (1 - x_share)]
    grid = rng.choice(np.array(list(".XO")), (size, size), p=shares)
    m = size // 2
    grid[m - 1 : m + 1, m - 1 : m + 1] = rng.choice(np.array(list("XO")), (2, 2))
    return ["".join(row) for row in grid]


def status_line(ref: Othello) -> str:
    """The status that `render` writes for the reference's position (see the module docstring of othello.py)."""
    if ref.terminated:
        num_x, num_o = ref.counts()
        result = "X wins" if num_x > num_o else "O wins" if num_o > num_x else "draw"
        return f"{result} {num_x}-{num_o} ({SYMBOLS[1 - ref.to_move]} moved last)"
    return f"{SYMBOLS[ref.to_move]} to move" + ("" if ref.placements else " (must pass)")


@pytest.mark.parametrize("reference_class", [Othello, Othello6], ids=["8x8", "6x6"])
def test_random_positions_and_every_move_from_them_match_the_reference(reference_class: type[Othello]) -> None:
    game = make("othello" if reference_class.size == 8 else "othello6")
    rng = np.random.default_rng(0)
    starts, actions, wanted = [], [], []
    kinds = {"over": 0, "must pass": 0, "to move": 0}
    for _ in range(250):
        ref = reference_class(random_position(rng, reference_class.size), int(rng.integers(2)))
        kinds["over" if ref.terminated else "to move" if ref.placements else "must pass"] += 1
        state = game.from_ascii("\n".join(ref.board_rows()) + "\n" + status_line(ref))
        assert_matches(state, ref)  # both players' placements, as from_ascii computes them on the host
        for action in ref.legal_actions():
            after = copy.deepcopy(ref)
            rewards = after.play(action)
            starts.append(state)
            actions.append(action)
            wanted.append((after, rewards))
    assert min(kinds.values()) >= 1, kinds  # every kind of position was drawn
    batch = jax.tree.map(lambda *fields: np.stack(fields), *starts)
    stepped = jax.device_get(jax.jit(jax.vmap(game.step))(batch, np.asarray(actions, np.int32)))
    masks = np.zeros((len(wanted), game.num_actions), bool)
    for i, (after, _) in enumerate(wanted):
        masks[i, after.legal_actions()] = True
    np.testing.assert_array_equal(stepped.board, [after.board() for after, _ in wanted])
    np.testing.assert_array_equal(stepped.legal_action_mask, masks)
    np.testing.assert_array_equal(stepped.terminated, [after.terminated for after, _ in wanted])
    np.testing.assert_array_equal(stepped.rewards, [rewards for _, rewards in wanted])
    np.testing.assert_array_equal(stepped.current_player, [after.to_move for after, _ in wanted])
    assert stepped.terminated.any() and (stepped.legal_action_mask[:, -1]).any()  # ends and forced passes


# --------------------------------------------------------------------------------------------------------------
# Hand-made positions (8 x 8 unless said). Rows are written top row ("1") first.


@pytest.fixture(scope="module")
def game() -> Game:
    return make("othello")


def position(rows: list[str], to_move: str = "X") -> str:
    return "\n".join(rows) + f"\n{to_move} to move"


def step(game: Game, state: BoardState, move: str) -> BoardState:
    return harness.jit_step(game)(state, jnp.int32(game.string_to_action(move)))


def rows_of(state: BoardState, size: int = 8) -> list[str]:
    return ["".join(".XO"[v] for v in row) for row in np.asarray(state.board).reshape(size, size)]


def assert_matches(state: BoardState, ref: Othello) -> None:
    """The state is the reference's position: board, player to move, legal moves, end."""
    np.testing.assert_array_equal(state.board, ref.board())
    assert int(state.current_player) == ref.to_move
    np.testing.assert_array_equal(np.flatnonzero(state.legal_action_mask), ref.legal_actions())
    assert bool(state.terminated) == ref.terminated


def assert_ended(state: BoardState, rewards: list[float]) -> None:
    assert bool(state.terminated)
    np.testing.assert_array_equal(state.rewards, rewards)
    assert not np.asarray(state.legal_action_mask).any()


def test_start(game: Game) -> None:
    start = game.init(jax.random.key(0))
    assert game.render(start) == "\n".join(
        [
            "  a b c d e f g h",
            "1 . . . . . . . .",
            "2 . . . . . . . .",
            "3 . . . . . . . .",
            "4 . . . O X . . .",
            "5 . . . X O . . .",
            "6 . . . . . . . .",
            "7 . . . . . . . .",
            "8 . . . . . . . .",
            "X to move",
        ]
    )
    assert [game.action_to_string(a) for a in np.flatnonzero(start.legal_action_mask)] == ["d3", "c4", "f5", "e6"]
    assert_matches(start, Othello())
    np.testing.assert_array_equal(start.rewards, [0.0, 0.0])


def test_start_6x6() -> None:
    game = make("othello6")
    start = game.init(jax.random.key(0))
    assert game.render(start).splitlines()[3:5] == ["3 . . O X . .", "4 . . X O . ."]
    assert [game.action_to_string(a) for a in np.flatnonzero(start.legal_action_mask)] == ["c2", "b3", "e4", "d5"]
    assert_matches(start, Othello6())


_DIRECTION_NAMES = {
    (0, 1): "right", (0, -1): "left", (1, 0): "down", (-1, 0): "up",
    (1, 1): "down-right", (1, -1): "down-left", (-1, 1): "up-right", (-1, -1): "up-left",
}  # fmt: skip


def one_direction(dr: int, dc: int, run: int) -> tuple[list[str], str, list[str]]:
    """(rows, X's move, rows after it): the four centre cells X, and `run` O discs from the move towards one of
    them, so that the move flips exactly those, in direction (dr, dc). Nothing else is O, so O is wiped out."""
    anchor = (3 if dr >= 0 else 4, 3 if dc >= 0 else 4)  # the centre cell the run leads to
    move = (anchor[0] - (run + 1) * dr, anchor[1] - (run + 1) * dc)
    before = [["."] * 8 for _ in range(8)]
    for r in (3, 4):
        before[r][3] = before[r][4] = "X"
    after = [row[:] for row in before]
    for i in range(1, run + 1):
        before[move[0] + i * dr][move[1] + i * dc] = "O"
        after[move[0] + i * dr][move[1] + i * dc] = "X"
    after[move[0]][move[1]] = "X"
    name = "abcdefgh"[move[1]] + str(move[0] + 1)
    return ["".join(row) for row in before], name, ["".join(row) for row in after]


@pytest.mark.parametrize("run", [1, 2])
@pytest.mark.parametrize("direction", list(_DIRECTION_NAMES), ids=list(_DIRECTION_NAMES.values()))
def test_a_placement_flips_the_run_it_brackets_in_each_direction(game: Game, direction, run: int) -> None:
    rows, move, rows_after = one_direction(*direction, run)
    after = step(game, game.from_ascii(position(rows)), move)
    assert rows_of(after) == rows_after
    # O has no disc left, so neither side can place: the game is over, X wins.
    assert_ended(after, [1.0, -1.0])
    assert game.render(after).splitlines()[-1] == f"X wins {5 + run}-0 (X moved last)"
    ref = Othello(rows)
    ref.play(game.string_to_action(move))
    assert_matches(after, ref)


def test_a_run_across_the_whole_board_flips(game: Game) -> None:
    rows = ["........", ".O......", "..O.....", "...OX...", "...XO...", ".....O..", "......O.", ".......X"]
    after = step(game, game.from_ascii(position(rows)), "a1")  # b2 to g7: six O discs between a1 and h8
    assert rows_of(after) == [
        "X.......", ".X......", "..X.....", "...XX...", "...XX...", ".....X..", "......X.", ".......X"
    ]  # fmt: skip
    assert_ended(after, [1.0, -1.0])


SEVERAL = [  # X on c3 flips in five directions; three other runs are not bracketed
    "X.O.X...",
    ".OOO....",
    ".O.OOX..",
    ".XOOX...",
    "..XXO...",
    ".....X..",
    "........",
    "........",
]
SEVERAL_AFTER = [
    "X.O.X...",  # c1 and c2 stay O: the run up from c3 runs into the edge
    ".XOX....",  # b2 flips (up-left, to a1), d2 (up-right, to e1)
    ".OXXXX..",  # b3 stays O: the run to the left ends at the empty a3; d3 and e3 flip (right, to f3)
    ".XXXX...",  # c4 flips (down, to c5), d4 (down-right, with e5, to f6); b4 is X's own: nothing to flip
    "..XXX...",
    ".....X..",
    "........",
    "........",
]


def test_a_placement_flips_in_several_directions_at_once(game: Game) -> None:
    before = game.from_ascii(position(SEVERAL))
    after = step(game, before, "c3")
    assert rows_of(after) == SEVERAL_AFTER
    assert not bool(after.terminated) and int(after.current_player) == 1
    ref = Othello(SEVERAL)
    assert_matches(before, ref)
    ref.play(game.string_to_action("c3"))
    assert_matches(after, ref)


def test_illegal_moves_lose_for_the_mover(game: Game) -> None:
    state = game.from_ascii(position(SEVERAL))
    unbracketed = ["a3", "a4", "c6", "h8"]  # a3 and a4 touch O discs but bracket none; c6, h8 touch none
    assert not any(state.legal_action_mask[game.string_to_action(c)] for c in unbracketed)
    occupied = [int(a) for a in np.flatnonzero(np.asarray(state.board))]
    for action in [game.string_to_action(c) for c in unbracketed] + occupied[:4]:
        harness.assert_forfeits(game, state, action)
    for action in (64, -1, 65, *harness.OUT_OF_RANGE_EXTREMES):  # the pass, while placements exist, and off range
        harness.assert_forfeits(game, state, action)


FORCED_PASS = ["....O...", "....O...", "....O...", ".OOOO.O.", "...OOXXX", "....O.X.", ".......X", "........"]


def test_a_player_without_placement_must_pass(game: Game) -> None:
    before = game.from_ascii(position(FORCED_PASS))
    after = step(game, before, "h3")  # flips g4; then O has no placement, X still has
    assert rows_of(after)[2:4] == ["....O..X", ".OOOO.X."]
    assert not bool(after.terminated) and int(after.current_player) == 1
    np.testing.assert_array_equal(np.flatnonzero(after.legal_action_mask), [64])
    assert game.render(after).splitlines()[-1] == "O to move (must pass)"
    assert game.action_to_string(64) == "pass"
    ref = Othello(FORCED_PASS)
    ref.play(game.string_to_action("h3"))
    assert_matches(after, ref)
    for cell in ("f4", "a1", "h8"):  # O cannot place, even where a cell touches X
        harness.assert_forfeits(game, after, game.string_to_action(cell))
    passed = step(game, after, "pass")
    np.testing.assert_array_equal(passed.board, after.board)
    assert not bool(passed.terminated) and int(passed.current_player) == 0
    np.testing.assert_array_equal(passed.rewards, [0.0, 0.0])
    ref.play(64)
    assert_matches(passed, ref)
    assert len(ref.legal_actions()) > 1 and 64 not in ref.legal_actions()
    harness.assert_states_equal(game.from_ascii(game.render(after)), after)


FULL_BOARD_ENDINGS = {  # (rows before the last placement, the mover, the move, its status line)
    "X wins": (
        ["XXXXXXOX", "OOOOOOOX", ".OOXOOXX", "OOOXXOOX", "XOOXXXOX", "XXXOOXXX", "XXOOOOXX", "XXXXXXXX"],
        "X", "a3", "X wins 47-17 (X moved last)",
    ),
    "O wins": (
        ["OOOO.XOO", "OOXXXOOO", "OXOXOXOO", "OOXOOXOO", "OOOOOXOO", "OOXOOOOO", "OXOXXOOO", "XOOOOOOO"],
        "O", "e1", "O wins 12-52 (O moved last)",
    ),
    "draw": (
        [".XOOOOOO", "XXXXXXXX", "OXOOOXXX", "OXXOOOXX", "OXXXOOXX", "XOOXOOXX", "XXOOOOOO", "XXXXXXXO"],
        "O", "a1", "draw 32-32 (O moved last)",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(FULL_BOARD_ENDINGS))
def test_the_game_ends_on_a_full_board_with_more_discs_winning(game: Game, name: str) -> None:
    rows, mover, move, status = FULL_BOARD_ENDINGS[name]
    before = game.from_ascii(position(rows, mover))
    np.testing.assert_array_equal(np.flatnonzero(before.legal_action_mask), [game.string_to_action(move)])
    after = step(game, before, move)
    assert (np.asarray(after.board) != 0).all()
    assert_ended(after, {"X wins": [1.0, -1.0], "O wins": [-1.0, 1.0], "draw": [0.0, 0.0]}[name])
    assert game.render(after).splitlines()[-1] == status
    harness.assert_states_equal(game.from_ascii(game.render(after)), after)
    ref = Othello(rows, "XO".index(mover))
    assert ref.play(game.string_to_action(move)) == np.asarray(after.rewards).tolist()
    harness.assert_absorbing(game, after)


DEAD_BEFORE = [".XXXXXXX", "XXXXXXXX", "XXXXXXXX", "XXXXOXXX", "XXXOXXXX", "XXXXXXXX", "XXXXXXOX", "XXXXXXX."]
DEAD = [".XXXXXXX", "XXXXXXXX", "XXXXXXXX", "XXXXOXXX", "XXXOXXXX", "XXXXXXXX", "XXXXXXXX", "XXXXXXXX"]


def test_the_game_ends_when_neither_side_can_place_though_cells_are_empty(game: Game) -> None:
    before = game.from_ascii(position(DEAD_BEFORE))
    np.testing.assert_array_equal(np.flatnonzero(before.legal_action_mask), [63])
    after = step(game, before, "h8")  # flips g7; then a1 is empty, but its lines hold only X: no one can place
    assert rows_of(after) == DEAD
    assert_ended(after, [1.0, -1.0])
    assert game.render(after).splitlines()[-1] == "X wins 61-2 (X moved last)"
    harness.assert_states_equal(game.from_ascii(game.render(after)), after)
    # The same board written with a player to move is refused: no one is to move in a finished game.
    for to_move in ("X", "O"):
        with pytest.raises(ValueError, match=r"the game is over .* 'X wins 61-2 \(X moved last\)' or 'X wins"):
            game.from_ascii(position(DEAD, to_move))
    harness.assert_absorbing(game, after)


def test_from_ascii_checks_must_pass_against_the_discs(game: Game) -> None:
    after = step(game, game.from_ascii(position(FORCED_PASS)), "h3")  # O has no placement, X has
    board = game.render(after).removesuffix(" (must pass)")
    assert board.endswith("O to move")
    with pytest.raises(ValueError, match=r"O has no placement, so O must pass: write 'O to move \(must pass\)'"):
        game.from_ascii(board)
    with pytest.raises(ValueError, match=r"the status says X must pass, but X can place on d3, c4, f5, e6"):
        game.from_ascii(game.render(game.init(jax.random.key(0))) + " (must pass)")


def test_a_forfeit_renders_and_reads_back(game: Game) -> None:
    state = game.init(jax.random.key(0))
    forfeited = harness.jit_step(game)(state, jnp.int32(0))  # X on a1: brackets nothing
    assert_ended(forfeited, [-1.0, 1.0])
    assert game.render(forfeited).splitlines()[-1] == "O wins: X made an illegal move"
    harness.assert_states_equal(game.from_ascii(game.render(forfeited)), forfeited)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("\n".join(SEVERAL), r"no status line; disc counts do not tell who is to move in Othello"),
        (position(SEVERAL) + "\nO to move", r"has 2 status lines"),
        (position(["X" * 8] * 3 + ["XXX.XXXX"] + ["X" * 8] * 4), r"the four centre cells"),
        ("\n".join(SEVERAL) + "\nX wins 16-3 (X moved last)", r"the game is over, but a player can still place"),
        ("\n".join(DEAD) + "\nO wins: X made an illegal move", r"neither player can place"),
        ("\n".join(DEAD) + "\nO wins 61-2 (X moved last)", r"the discs \(61 X, 2 O\) say 'X wins'"),
        ("X . O\n. X .\n. . .\nX to move", r"expected a 8 x 8 board"),
    ],
)
def test_from_ascii_rejects_what_cannot_be_read(game: Game, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        game.from_ascii(text)


def test_from_ascii_reads_every_documented_form(game: Game) -> None:
    wanted = step(game, game.init(jax.random.key(0)), "d3")
    rendered = game.render(wanted)
    assert rendered.splitlines()[-1] == "O to move"
    bare = "\n".join(line[2:].replace(" ", "") for line in rendered.splitlines()[1:-1])
    for text in [rendered, bare + "\nO to move", "\n" + rendered + "\n\n"]:
        harness.assert_states_equal(game.from_ascii(text), wanted)


def test_observation_is_from_the_side_to_move(game: Game) -> None:
    start = game.init(jax.random.key(0))
    obs = np.asarray(game.observe(start))
    assert obs.shape == (8, 8, 2) and obs.dtype == np.float32
    np.testing.assert_array_equal(np.argwhere(obs[..., 0]), [[3, 4], [4, 3]])  # X's e4 and d5
    np.testing.assert_array_equal(np.argwhere(obs[..., 1]), [[3, 3], [4, 4]])  # O's d4 and e5
    obs = np.asarray(game.observe(step(game, start, "d3")))  # X d3 flips d4; O to move
    np.testing.assert_array_equal(np.argwhere(obs[..., 0]), [[4, 4]])  # O's own: e5
    np.testing.assert_array_equal(np.argwhere(obs[..., 1]), [[2, 3], [3, 3], [3, 4], [4, 3]])


def test_action_names(game: Game) -> None:
    assert [game.action_to_string(a) for a in (0, 7, 19, 56, 63, 64)] == ["a1", "h1", "d3", "a8", "h8", "pass"]
    assert game.string_to_action(" PASS ") == 64 and game.string_to_action("D3") == 19
    for text in ("", "i1", "a9", "a0", "3d", "passes", "p"):
        with pytest.raises(ValueError, match=r"e\.g\. 'b2', or 'pass'"):
            game.string_to_action(text)


def test_registry_names_and_sizes() -> None:
    othello, othello6 = make("othello"), make("othello6")
    assert (othello.name, othello.num_actions, othello.observation_shape) == ("othello", 65, (8, 8, 2))
    assert (othello6.name, othello6.num_actions, othello6.observation_shape) == ("othello6", 37, (6, 6, 2))
    assert (othello.max_length, othello6.max_length) == (120, 64)  # 2 * (cells empty at the start)
    assert make("othello", size=6).name == "othello(size=6)" and make("othello", size=4).num_actions == 17
    assert [s.name for s in othello.symmetries] == [
        "flip_lr", "flip_ud", "rot180", "rot90", "rot270", "transpose", "anti_transpose"
    ]  # fmt: skip
    assert all(s.action_index[-1] == 64 for s in othello.symmetries)  # the pass stays the pass
    for size in (2, 7, 28):
        with pytest.raises(ValueError, match="size must be an even whole number from 4 to 26"):
            make("othello", size=size)


def test_check_game_passes_on_4x4() -> None:
    # The registered sizes are checked in test_checker.py; 4 x 4, the smallest, ends in every way quickly.
    report = check_game(make("othello", size=4), num_games=16)
    assert set(report.symmetries_checked) == {"rot180", "transpose", "anti_transpose"}
