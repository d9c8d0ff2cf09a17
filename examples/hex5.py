"""Hex on a 5 x 5 board, written as a game of your own: the worked example of README's "Your own game".

X (player 0) moves first and wins by joining the top row to the bottom row with a chain of X stones, O by joining
the left column to the right one. Cell (r, c) touches (r-1, c), (r-1, c+1), (r, c-1), (r, c+1), (r+1, c-1) and
(r+1, c): the board is a rhombus drawn as a square. A full board always has a winner, so there are no draws.

Everything azjax needs is below: the state, `init`, `step`, `observe`, a `Game` record, presets and test
positions. From this directory (or with it on PYTHONPATH)::

    azjax check hex5:make_hex5 --positions hex5:TEST_POSITIONS
    azjax train --game hex5:make_hex5 --out runs/hex5           # the run records "hex5:make_hex5"
    azjax eval runs/hex5 random mcts:400                          # later commands need only the run
    azjax play runs/hex5
    azjax train --out runs/hex5 --iterations 200                  # resume and go on
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from azjax import games
from azjax.games import boards

SIZE = 5
NEIGHBOURS = ((-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0))


def _shift(grid: jax.Array, dr: int, dc: int) -> jax.Array:
    """grid moved by (dr, dc), False where it comes from off the board."""
    padded = jnp.pad(grid, 1)
    return padded[1 - dr:1 - dr + SIZE, 1 - dc:1 - dc + SIZE]


def _connects(stones: jax.Array, player: jax.Array) -> jax.Array:
    """Whether `stones` (bool [SIZE, SIZE]) join player 0's edges (top, bottom) or player 1's (left, right)."""
    # Player 1's goal is player 0's on the transposed board (the neighbour set is symmetric under transpose).
    stones = jnp.where(player == 0, stones, stones.T)
    reached = stones & (jnp.arange(SIZE)[:, None] == 0)  # the stones on the top row

    def grow(_, reached):
        spread = reached
        for dr, dc in NEIGHBOURS:
            spread = spread | _shift(reached, dr, dc)
        return spread & stones

    reached = jax.lax.fori_loop(0, SIZE * SIZE, grow, reached)  # a chain has at most SIZE * SIZE stones
    return jnp.any(reached[SIZE - 1])


def _init(key: jax.Array) -> boards.BoardState:
    del key  # the start is always the empty board
    return boards.BoardState(
        current_player=jnp.int32(0),
        legal_action_mask=jnp.ones(SIZE * SIZE, jnp.bool_),
        terminated=jnp.bool_(False),
        rewards=jnp.zeros(2, jnp.float32),
        board=jnp.zeros(SIZE * SIZE, jnp.int8),
    )


def _place(state: boards.BoardState, action: jax.Array) -> boards.BoardState:
    """The rules for a legal move; `games.resolve_step` handles illegal moves and finished games."""
    mover = state.current_player
    board = state.board.at[action].set((mover + 1).astype(jnp.int8))
    won = _connects((board == mover + 1).reshape(SIZE, SIZE), mover)
    return state.replace(
        board=board,
        current_player=1 - mover,
        legal_action_mask=(board == boards.EMPTY) & ~won,
        terminated=won,
        rewards=jnp.where(won, jnp.where(jnp.arange(2) == mover, 1.0, -1.0), 0.0).astype(jnp.float32),
    )


def _step(state: boards.BoardState, action: jax.Array) -> boards.BoardState:
    action = jnp.asarray(action, jnp.int32)
    return games.resolve_step(state, _place(state, jnp.clip(action, 0, SIZE * SIZE - 1)), action)


def _observe(state: boards.BoardState) -> jax.Array:
    """[SIZE, SIZE, 3]: the mover's stones, the opponent's, and a plane of ones when the mover is X. The two sides
    have different goals, so the network must be told which side it plays."""
    planes = boards.stone_planes(state.board, state.current_player, SIZE, SIZE)
    side = jnp.full((SIZE, SIZE, 1), state.current_player == 0, jnp.float32)
    return jnp.concatenate([planes, side], axis=-1)


def _from_ascii(text: str) -> boards.BoardState:
    board = boards.parse_board(text, SIZE, SIZE)
    to_move = boards.check_stone_counts(board)
    state = _init(jax.random.key(0)).replace(board=jnp.asarray(board), current_player=jnp.int32(to_move))
    last = 1 - to_move  # only the player who moved last can have won
    won = bool(_connects(jnp.asarray(board == last + 1).reshape(SIZE, SIZE), jnp.int32(last)))
    rewards = np.where(np.arange(2) == last, 1.0, -1.0) if won else np.zeros(2)
    return state.replace(
        legal_action_mask=jnp.asarray((board == boards.EMPTY) & (not won)),
        terminated=jnp.bool_(won),
        rewards=jnp.asarray(rewards, jnp.float32),
    )


def make_hex5() -> games.Game:
    """Hex on a 5 x 5 board; see the module docstring."""
    return games.Game(
        name="hex5",
        num_actions=SIZE * SIZE,
        observation_shape=(SIZE, SIZE, 3),
        max_length=SIZE * SIZE,
        init=_init,
        step=_step,
        observe=_observe,
        render=lambda state: boards.render_state(state, SIZE, SIZE),
        # Turning the board half round keeps both players' goals; mirror images would swap them.
        symmetries=games.board_symmetries(SIZE, SIZE, names=["rot180"]),
        from_ascii=_from_ascii,
        action_to_string=lambda action: boards.cell_name(int(action), SIZE, SIZE),
        string_to_action=lambda text: boards.parse_cell(text, SIZE, SIZE),
    )


# Presets: overrides of the preset azjax derives from the game's sizes (azjax.presets.derived_preset).
games.register("hex5", make_hex5, presets={"cpu": {"num_iterations": 60, "selfplay.opening_moves": 2}})

# What the rules say about a few positions, checked by `azjax check hex5:make_hex5 --positions hex5:TEST_POSITIONS`.
TEST_POSITIONS = [
    games.Position(  # X's chain a1-a2-a3-a4 reaches the bottom row with a5
        """
        X O . . .
        X O . . .
        X O . . .
        X O . . .
        . . . . .
        """,
        move="a5", winner=0, rewards=(1.0, -1.0), name="X joins top and bottom",
    ),
    games.Position(  # b3 touches c2 (up and to the right) in Hex: O's chain a3-b3-c2-d2-e2 is complete
        """
        X X X . .
        . . O O O
        O O . . .
        . . . . .
        X X . . .
        """,
        terminated=True, winner=1, name="O joins left and right",
    ),
    games.Position(
        """
        X . . . .
        . . . . .
        . . . . .
        . . . . .
        . . . . .
        """,
        legal=[f"{column}{row}" for row in range(1, 6) for column in "abcde" if (column, row) != ("a", 1)],
        to_move=1, terminated=False, name="every empty cell is legal",
    ),
]
