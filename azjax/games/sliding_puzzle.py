"""The sliding puzzle (the 8-puzzle on 3 x 3, the default; 2 x 2 and 4 x 4 as the option `size`): one player.

Rules. The board holds the tiles 1 .. N - 1 (N = size * size) and one empty cell. A move slides a tile next to
the empty cell into it, i.e. moves the empty cell one step up, down, left or right (actions 0, 1, 2, 3: the
direction the *empty cell* moves; an action that would leave the board is illegal). The puzzle is solved when
the tiles read 1 .. N - 1 row by row with the empty cell last (bottom right). Every move pays -1, so the return
from a position is minus the moves it takes to solve it; the episode ends when the puzzle is solved or after
`max_moves` moves (then unsolved, having paid -max_moves in all). `return_bounds` is (-max_moves, 0).

Starts. `init(key)` scrambles the solved board by a random walk of k moves of the empty cell, k uniform in 1 ..
max_moves, each move drawn among those that do not undo the one before (a start that comes back to the solved board
gets one more move): starts at every distance from the solution (the distances the walks reach are measured in
experiments/studies/sliding_puzzle/README.md), the near ones solved by search while the network knows nothing yet.
With probability `uniform_share` (option; default 0) it draws instead a start uniformly among the solvable
arrangements other than the solved one (half of all N! arrangements; 181,440 for the 8-puzzle, 22 moves from the
solution on average): a random permutation, made solvable by swapping its first two tiles where it is not (a
bijection between the two halves that keeps the empty cell), and on the one draw in N! / 2 that is already solved,
one move of the empty cell.
`uniform_share=1` gives uniform starts only, as the puzzle's exact judge (`Game.yardstick`) draws them. The key is
used by `init` only; the moves are deterministic.

Observation: float32 [size, size, N + 1]: one plane per tile value (plane 0 the empty cell), then a plane holding
the share of the move budget already spent (moves / max_moves), which the value needs near the limit.

ASCII (`render`, `from_ascii`): the rows of tiles with "." for the empty cell, then a status line
"moves 3 of 40" (or "solved in 12 moves of 40", "unsolved after 40 moves")::

    1 2 3
    4 . 6
    7 5 8
    moves 0 of 40

Judged exactly (`Game.yardstick`): episodes from uniformly random solvable starts, solved or not, and in how many
moves beyond the fewest, by the distances of a breadth-first search from the solved board over every solvable
arrangement (`distances`, `fewest_moves`; up to 3 x 3, the 15-puzzle's share solved alone).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games import drawing
from azjax.games.base import Game, State, Yardstick, resolve_step

DIRECTIONS = ("up", "down", "left", "right")  # the empty cell's move, by action
"""The direction the empty cell moves for each action (0 up, 1 down, 2 left, 3 right)."""
_STEPS = ((-1, 0), (1, 0), (0, -1), (0, 1))
MAX_MOVES = {2: 12, 3: 40, 4: 120}  # default move budgets: above the hardest optimal solution (6, 31 and 80 moves)
"""The default move budget per board size, above the hardest optimal solution (6, 31 and 80 moves): an episode
ends unsolved after this many moves."""


MAX_EXACT_SIZE = 3
"""The largest size solved exactly (`distances`): the 15-puzzle's 16! / 2 arrangements have no
table, so its judge reports the share solved alone."""


class SlidingPuzzleState(State):
    """A sliding-puzzle position: the common `State` fields (player 0 always to move; `rewards[0]` is -1 a move)
    plus the board and the moves played."""

    board: jax.Array
    """[N] int8, the tile on each cell (row-major), 0 = the empty cell."""
    num_moves: jax.Array
    """[] int32, moves played."""


@dataclasses.dataclass(frozen=True)
class _Spec:
    size: int
    max_moves: int
    uniform_share: float

    @property
    def num_cells(self) -> int:
        return self.size * self.size


def solved_board(size: int) -> np.ndarray:
    """int8 [N]: the tiles 1 .. N - 1 in order, the empty cell (0) last."""
    return np.append(np.arange(1, size * size), 0).astype(np.int8)


def neighbour_table(size: int) -> np.ndarray:
    """int32 [N, 4]: the cell the empty cell reaches from each cell by each action; -1 off the board."""
    table = np.full((size * size, 4), -1, np.int32)
    for cell in range(size * size):
        row, col = divmod(cell, size)
        for action, (dr, dc) in enumerate(_STEPS):
            if 0 <= row + dr < size and 0 <= col + dc < size:
                table[cell, action] = (row + dr) * size + col + dc
    return table


def is_solvable(board: np.ndarray, size: int) -> bool:
    """Whether `board` (int [N], 0 the empty cell) can be solved: the parity of the arrangement as a permutation of
    the solved one equals the parity of the empty cell's distance from its place (every move is one swap and one
    step of the empty cell)."""
    values = np.where(np.asarray(board) == 0, size * size, np.asarray(board))  # the empty cell sorts last, as solved
    inversions = sum(int(np.sum(values[i] > values[i + 1:])) for i in range(len(values)))
    row, col = divmod(int(np.flatnonzero(np.asarray(board) == 0)[0]), size)
    return inversions % 2 == (2 * size - 2 - row - col) % 2


def _legal(board: jax.Array, spec: _Spec) -> jax.Array:
    blank = jnp.argmax(board == 0)
    return jnp.asarray(neighbour_table(spec.size))[blank] >= 0


def _state_of(board: jax.Array, num_moves: jax.Array, reward: jax.Array, spec: _Spec) -> SlidingPuzzleState:
    solved = jnp.all(board == jnp.asarray(solved_board(spec.size)))
    over = solved | (num_moves >= spec.max_moves)
    return SlidingPuzzleState(
        current_player=jnp.int32(0),
        legal_action_mask=_legal(board, spec) & ~over,
        terminated=over,
        rewards=jnp.stack([reward, jnp.float32(0.0)]).astype(jnp.float32),
        board=board,
        num_moves=num_moves,
    )


def _init(key: jax.Array, *, spec: _Spec) -> SlidingPuzzleState:
    choice_key, uniform_key, scramble_key = jax.random.split(key, 3)
    uniform = _uniform_board(uniform_key, spec)
    scrambled = _scrambled_board(scramble_key, spec)
    board = jnp.where(jax.random.uniform(choice_key) < spec.uniform_share, uniform, scrambled)
    return _state_of(board, jnp.int32(0), jnp.float32(0.0), spec)


def _scrambled_board(key: jax.Array, spec: _Spec) -> jax.Array:
    """The solved board after a walk of k moves of the empty cell, k uniform in 1 .. max_moves, each move drawn
    uniformly among those that do not undo the one before."""
    count_key, move_key = jax.random.split(key)
    count = jax.random.randint(count_key, (), 1, spec.max_moves + 1)
    neighbours = jnp.asarray(neighbour_table(spec.size))

    def body(i: jax.Array, carry: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        board, previous = carry  # previous: the cell the empty cell left on the last move (-1 before the first)
        blank = jnp.argmax(board == 0)
        allowed = (neighbours[blank] >= 0) & (neighbours[blank] != previous)
        action = jax.random.categorical(jax.random.fold_in(move_key, i), jnp.where(allowed, 0.0, -jnp.inf))
        moving = i < count
        return jnp.where(moving, _slide(board, action, spec), board), jnp.where(moving, blank, previous)

    board, _ = jax.lax.fori_loop(0, spec.max_moves, body, (jnp.asarray(solved_board(spec.size)), jnp.int32(-1)))
    return _away_from_solved(board, spec)


def _away_from_solved(board: jax.Array, spec: _Spec) -> jax.Array:
    """`board`, or where it is the solved one, that board after the empty cell moves up (always on the board)."""
    solved = jnp.all(board == jnp.asarray(solved_board(spec.size)))
    return jnp.where(solved, _slide(board, jnp.int32(0), spec), board)


def _uniform_board(key: jax.Array, spec: _Spec) -> jax.Array:
    """A uniformly random solvable board other than the solved one (see the module docstring)."""
    n = spec.num_cells
    board = jax.random.permutation(key, jnp.arange(n, dtype=jnp.int8))
    values = jnp.where(board == 0, n, board).astype(jnp.int32)
    inversions = jnp.sum(jnp.triu(values[:, None] > values[None, :], k=1))
    blank = jnp.argmax(board == 0)
    distance = 2 * spec.size - 2 - blank // spec.size - blank % spec.size
    unsolvable = (inversions % 2) != (distance % 2)
    tiles = jnp.argsort(board == 0, stable=True)[:2]  # the first two cells holding tiles
    swapped = board.at[tiles[0]].set(board[tiles[1]]).at[tiles[1]].set(board[tiles[0]])
    return _away_from_solved(jnp.where(unsolvable, swapped, board), spec)


def _slide(board: jax.Array, action: jax.Array, spec: _Spec) -> jax.Array:
    """The board after the empty cell moves by `action` (which must stay on the board)."""
    blank = jnp.argmax(board == 0)
    target = jnp.asarray(neighbour_table(spec.size))[blank, action]
    return board.at[blank].set(board[target]).at[target].set(jnp.int8(0))


def _step(state: SlidingPuzzleState, action: jax.Array, *, spec: _Spec) -> SlidingPuzzleState:
    action = jnp.asarray(action, jnp.int32)
    board = _slide(state.board, jnp.clip(action, 0, 3), spec)
    new_state = _state_of(board, state.num_moves + 1, jnp.float32(-1.0), spec)
    # An illegal move ends the episode at the lowest return, -max_moves: the moves made so far paid -1 each.
    illegal_reward = (state.num_moves - spec.max_moves).astype(jnp.float32)
    return resolve_step(state, new_state, action, illegal_reward=illegal_reward)


def _observe(state: SlidingPuzzleState, *, spec: _Spec) -> jax.Array:
    planes = jax.nn.one_hot(state.board, spec.num_cells, dtype=jnp.float32).reshape(spec.size, spec.size, -1)
    spent = jnp.full((spec.size, spec.size, 1), state.num_moves / spec.max_moves, jnp.float32)
    return jnp.concatenate([planes, spent], axis=-1)


def _render(state: SlidingPuzzleState, *, spec: _Spec) -> str:
    board = np.asarray(state.board)
    width = len(str(spec.num_cells - 1))
    rows = [" ".join(("." if v == 0 else str(int(v))).rjust(width) for v in board[r * spec.size:(r + 1) * spec.size])
            for r in range(spec.size)]
    moves = int(state.num_moves)
    if not bool(state.terminated):
        status = f"moves {moves} of {spec.max_moves}"
    elif np.array_equal(board, solved_board(spec.size)):
        status = f"solved in {moves} moves of {spec.max_moves}"
    else:
        status = f"unsolved after {moves} moves"
    return "\n".join([*rows, status])


def _from_ascii(text: str, *, spec: _Spec) -> SlidingPuzzleState:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if len(lines) not in (spec.size, spec.size + 1):
        raise ValueError(f"expected {spec.size} rows of tiles and an optional status line 'moves K of "
                         f"{spec.max_moves}', got {len(lines)} lines")
    cells = [word for line in lines[:spec.size] for word in line.split()]
    if len(cells) != spec.num_cells:
        raise ValueError(f"expected {spec.num_cells} cells ({spec.size} a row, '.' for the empty one), got "
                         f"{len(cells)}")
    board = np.array([0 if word == "." else int(word) for word in cells], np.int8)
    if sorted(board.tolist()) != list(range(spec.num_cells)):
        raise ValueError(f"the tiles must be 1 .. {spec.num_cells - 1} once each and one '.', got {cells}")
    if not is_solvable(board, spec.size):
        raise ValueError("this arrangement cannot be solved (swap two tiles to make it solvable)")
    moves = 0
    if len(lines) > spec.size:
        words = lines[-1].split()
        numbers = [int(word) for word in words if word.isdigit()]
        if not numbers:
            raise ValueError(f"status line {lines[-1]!r}: expected 'moves K of {spec.max_moves}'")
        moves = numbers[0]
    return _state_of(jnp.asarray(board), jnp.int32(moves), jnp.float32(0.0), spec)


def _string_to_action(text: str) -> int:
    word = text.strip().lower()
    for action, name in enumerate(DIRECTIONS):
        if word in (name, name[0]):
            return action
    raise ValueError(f"{text!r} is not a move: the empty cell moves up, down, left or right (u, d, l, r)")


def _fewest_moves(starts: SlidingPuzzleState, *, size: int) -> np.ndarray:
    return fewest_moves(np.asarray(starts.board), size)


# The exact solution: breadth-first search over every arrangement (`azjax.solver.sliding_puzzle` re-exports it).


def rank(boards: np.ndarray) -> np.ndarray:
    """int64 [B]: each board's (int [B, N], a permutation of 0 .. N - 1) rank among the N! permutations."""
    boards = np.asarray(boards, np.int64)
    n = boards.shape[-1]
    smaller_after = np.stack([np.sum(boards[:, i + 1:] < boards[:, i:i + 1], axis=1) for i in range(n)], axis=1)
    weights = np.array([math.factorial(n - 1 - i) for i in range(n)], np.int64)
    return smaller_after @ weights


@functools.cache
def distances(size: int = 3) -> np.ndarray:
    """int8 [N!]: the fewest moves that solve each arrangement of a `size` x `size` board, by its `rank`; -1 where
    it cannot be solved. Computed once per size, then cached."""
    if size > MAX_EXACT_SIZE:
        raise ValueError(f"no exact distances for the {size} x {size} puzzle ({math.factorial(size * size) // 2} "
                         f"arrangements); sizes up to {MAX_EXACT_SIZE} are solved")
    n = size * size
    table = np.full(math.factorial(n), -1, np.int8)
    neighbours = neighbour_table(size)
    frontier = solved_board(size)[None].astype(np.int8)
    table[rank(frontier)] = 0
    depth = 0
    while len(frontier):
        depth += 1
        blanks = np.argmax(frontier == 0, axis=1)
        following = []
        for action in range(4):
            target = neighbours[blanks, action]
            rows = np.flatnonzero(target >= 0)
            moved = frontier[rows].copy()
            moved[np.arange(len(rows)), blanks[rows]] = moved[np.arange(len(rows)), target[rows]]
            moved[np.arange(len(rows)), target[rows]] = 0
            following.append(moved)
        boards = np.concatenate(following)
        ranks = rank(boards)
        ranks, first = np.unique(ranks, return_index=True)
        new = table[ranks] < 0
        table[ranks[new]] = depth
        frontier = boards[first[new]]
    return table


def fewest_moves(boards: np.ndarray, size: int = 3) -> np.ndarray:
    """int [B]: the fewest moves that solve each board (int [B, N], 0 the empty cell); -1 if unsolvable."""
    return distances(size)[rank(boards)].astype(np.int64)


def _yardstick(spec: _Spec) -> Yardstick:
    """The puzzle's exact judge: uniformly random solvable starts, the solver's fewest moves where it has a table."""
    uniform = dataclasses.replace(spec, uniform_share=1.0)
    return Yardstick(
        is_solved=is_solved,
        fewest_moves=functools.partial(_fewest_moves, size=spec.size) if spec.size <= MAX_EXACT_SIZE else None,
        starts=functools.partial(_init, spec=uniform),
    )


def make_sliding_puzzle(size: int = 3, max_moves: int | None = None, uniform_share: float = 0.0) -> Game:
    """The sliding puzzle of `size` x `size` (3: the 8-puzzle), episodes of at most `max_moves` moves (default
    `MAX_MOVES[size]`), starts scrambled from the solved board by random walks, a `uniform_share` of them uniformly
    random instead; see the module docstring."""
    return _make(size, max_moves, uniform_share, named=None)


def _make(size: int, max_moves: int | None, uniform_share: float, *, named: str | None) -> Game:
    """The puzzle (see `make_sliding_puzzle`), called "sliding_puzzle" with its options, or `named` with the
    options other than its size."""
    if size not in MAX_MOVES:
        raise ValueError(f"sliding_puzzle: size {size!r}; choose one of {sorted(MAX_MOVES)}")
    max_moves = MAX_MOVES[size] if max_moves is None else int(max_moves)
    if max_moves < 1:
        raise ValueError(f"sliding_puzzle: max_moves must be at least 1, got {max_moves}")
    if not 0.0 <= uniform_share <= 1.0:
        raise ValueError(f"sliding_puzzle: uniform_share must lie in [0, 1], got {uniform_share!r}")
    spec = _Spec(size, max_moves, float(uniform_share))
    options = [f"size={size}"] if size != 3 and named is None else []
    options += [f"max_moves={max_moves}"] if max_moves != MAX_MOVES[size] else []
    options += [f"uniform_share={uniform_share:g}"] if uniform_share != 0.0 else []
    return Game(
        name=(named or "sliding_puzzle") + (f"({', '.join(options)})" if options else ""),
        num_actions=4,
        observation_shape=(size, size, size * size + 1),
        max_length=max_moves,
        init=functools.partial(_init, spec=spec),
        step=functools.partial(_step, spec=spec),
        observe=functools.partial(_observe, spec=spec),
        render=functools.partial(_render, spec=spec),
        from_ascii=functools.partial(_from_ascii, spec=spec),
        action_to_string=lambda action: DIRECTIONS[int(action)],
        string_to_action=_string_to_action,
        num_players=1,
        return_bounds=(-float(max_moves), 0.0),
        yardstick=_yardstick(spec),
        draw=functools.partial(drawing.draw_sliding_puzzle, size=size, max_moves=max_moves,
                               neighbours=neighbour_table(size)),
    )


def make_sliding_puzzle4(max_moves: int | None = None, uniform_share: float = 0.0) -> Game:
    """The 15-puzzle, `make_sliding_puzzle(size=4)` under its own name "sliding_puzzle4" (for its preset and the
    command line, which passes no options): no exact judge (16! / 2 arrangements), so its evaluation reports the
    share solved alone."""
    return _make(4, max_moves, uniform_share, named="sliding_puzzle4")


def is_solved(states: SlidingPuzzleState) -> jax.Array:
    """bool [...]: the board of each state is the solved one."""
    size = math.isqrt(states.board.shape[-1])
    return jnp.all(states.board == jnp.asarray(solved_board(size)), axis=-1)


__all__ = ["DIRECTIONS", "MAX_EXACT_SIZE", "MAX_MOVES", "SlidingPuzzleState", "distances", "fewest_moves",
           "is_solvable", "is_solved", "make_sliding_puzzle", "make_sliding_puzzle4", "neighbour_table", "rank",
           "solved_board"]
