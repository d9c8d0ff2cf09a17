"""Connect Four: 7 columns x 6 rows; action = column 0..6; the stone drops to the lowest empty cell.

Four in a row (horizontal, vertical or diagonal) wins; a full board is a draw. The board is row-major with row 0
at the top; `render` numbers rows 1..6 from the bottom, as people do. The only board symmetry is the left-right mirror.

Observation (`make_connect_four(observation_version=...)`), float32, from the side to move:
- version 2 (the default since azjax 0.1's issue 42): [6, 7, 5], the mover's stones, the opponent's, then three
  planes that state what the rules imply: the playable cells (each open column's lowest empty cell), the empty
  cells where a stone of the mover would complete four in a row, and those where one of the opponent's would
  (threats, playable now or not). At equal training time on the 2-core CPU these planes gained about a point of
  optimal moves on the labelled positions (experiments/studies/strength/results/).
- version 1: [6, 7, 2], the stones only (as pgx observes it). Networks trained on it (checkpoints, exports, shipped
  agents) keep working: loading one builds the game with the planes it was trained on.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from azjax.games import boards, drawing
from azjax.games.base import Game, Symmetry, resolve_step

HEIGHT, WIDTH = 6, 7
_WINDOWS = boards.line_windows(HEIGHT, WIDTH, 4)


def _legal_columns(board: jax.Array) -> jax.Array:
    return board[:WIDTH] == boards.EMPTY  # a column is open while its top cell is empty


def _observe_v2(state: boards.BoardState) -> jax.Array:
    stones = boards.stone_planes(state.board, state.current_player, HEIGHT, WIDTH)
    board = state.board
    empty = board == boards.EMPTY
    supported = jnp.concatenate([board[WIDTH:] != boards.EMPTY, jnp.ones(WIDTH, bool)])  # bottom row, or a stone below
    # Each cell's windows of four ([HW, M, 4] cell values; padding windows read a sentinel cell that holds no stone).
    windows = jnp.concatenate([board, jnp.zeros((1,), board.dtype)])[jnp.asarray(_WINDOWS)]

    def completes_four(stone: jax.Array) -> jax.Array:
        return empty & jnp.any(jnp.sum(windows == stone, axis=-1) == 3, axis=-1)

    own = (state.current_player + 1).astype(board.dtype)
    features = jnp.stack([empty & supported, completes_four(own), completes_four(3 - own)], axis=-1)
    return jnp.concatenate([stones, features.astype(jnp.float32).reshape(HEIGHT, WIDTH, 3)], axis=-1)


def _observe_v1(state: boards.BoardState) -> jax.Array:
    return boards.stone_planes(state.board, state.current_player, HEIGHT, WIDTH)


OBSERVATIONS = {1: (2, _observe_v1), 2: (5, _observe_v2)}  # version -> (planes, observe)
OBSERVATION_VERSION = 2  # what `make_connect_four()` observes


def _init(key: jax.Array) -> boards.BoardState:
    del key  # deterministic start
    board = jnp.zeros(HEIGHT * WIDTH, jnp.int8)
    return boards.BoardState(
        current_player=jnp.int32(0),
        legal_action_mask=_legal_columns(board),
        terminated=jnp.bool_(False),
        rewards=jnp.zeros(2, jnp.float32),
        board=board,
    )


def _step(state: boards.BoardState, action: jax.Array) -> boards.BoardState:
    action = jnp.asarray(action, jnp.int32)
    column = jnp.clip(action, 0, WIDTH - 1)
    num_empty = jnp.sum(state.board.reshape(HEIGHT, WIDTH)[:, column] == boards.EMPTY)
    cell = jnp.maximum(num_empty - 1, 0) * WIDTH + column  # the lowest empty cell (full columns are illegal)
    return resolve_step(state, boards.place_stone(state, cell, _WINDOWS, _legal_columns), action)


def _from_ascii(text: str) -> boards.BoardState:
    board = boards.parse_board(text, HEIGHT, WIDTH)
    grid = board.reshape(HEIGHT, WIDTH)
    for col in range(WIDTH):
        filled = grid[:, col] != boards.EMPTY
        # Stones rest on the bottom or on other stones: once a cell is filled, every cell below it is.
        if any(filled[r] and not filled[r + 1] for r in range(HEIGHT - 1)):
            raise ValueError(f"column {boards.COLUMN_LETTERS[col]} has a stone floating above an empty cell")
    return boards.state_from_board(board, _WINDOWS, _legal_columns)


def _string_to_action(text: str) -> int:
    text = text.strip().lower()
    if len(text) == 1 and text in boards.COLUMN_LETTERS[:WIDTH]:
        return boards.COLUMN_LETTERS.index(text)
    if text.isdecimal() and 1 <= int(text) <= WIDTH:
        return int(text) - 1
    raise ValueError(f"cannot read {text!r} as a move: write a column letter a-g (or its number 1-7)")


def make_connect_four(observation_version: int = OBSERVATION_VERSION) -> Game:
    """Connect Four; see the module docstring for the observation versions (1: the stones; 2: also the playable
    and threat planes)."""
    if observation_version not in OBSERVATIONS:
        raise ValueError(f"connect_four has observation versions {sorted(OBSERVATIONS)}, not {observation_version!r}")
    planes, observe = OBSERVATIONS[observation_version]
    return Game(
        name="connect_four",
        num_actions=WIDTH,
        observation_shape=(HEIGHT, WIDTH, planes),
        max_length=HEIGHT * WIDTH,
        init=_init,
        step=_step,
        observe=observe,
        render=lambda s: boards.render_state(s, HEIGHT, WIDTH, bottom_up=True),
        symmetries=(Symmetry("flip_lr", lambda obs: obs[:, ::-1], tuple(reversed(range(WIDTH)))),),
        from_ascii=_from_ascii,
        action_to_string=lambda a: boards.COLUMN_LETTERS[int(a)],
        string_to_action=_string_to_action,
        draw=functools.partial(drawing.draw_connect_four, height=HEIGHT, width=WIDTH),
        observation_version=observation_version,
    )
