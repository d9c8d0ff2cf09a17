"""Boards drawn as SVG pictures, and a notebook view that steps through a game.

>>> game = games.make("connect_four")
>>> svg = drawing.to_svg(game, state, last_move=3, annotations={3: "41%", 4: "22%"})
>>> drawing.show(game, states, actions=moves)       # in a notebook: the board, Previous / Next and a slider

Every native game sets `Game.draw` to one of the functions here (`draw_mnk`, `draw_connect_four`, `draw_othello`,
`draw_tafl`, `draw_pig`), and pgx games draw with pgx's own pictures. `to_svg` draws any game: a game without
`draw` is shown as the text of its `render`. This is host code: it takes one concrete, unbatched state (jax or
numpy arrays) and builds plain SVG strings; nothing here is jitted.

What the pictures hold, for tests and style sheets: each piece is an element of class "piece p0" or "piece p1" (by
player id; Brandub's monarch "piece p1 king"), the last move is marked by an element of class "last-move",
annotations are `<text class="annotation">`, Othello's legal placements are dots of class "legal", and the status
line is `<text class="status">`. Pig has no board: its score bars are the pieces, its die is `<g class="die">` with
the face in `data-face`.
"""

from __future__ import annotations

import dataclasses
import html
import math
import re
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import jax
import numpy as np

from azjax.games import boards
from azjax.games.base import Game, State
from azjax.text import counted

SVG_NAMESPACE = "http://www.w3.org/2000/svg"
LABEL_SIZE = 22  # px left of and above the board, for its coordinates
LINE_HEIGHT = 18  # px per line of the status text below the board
PADDING = 8  # px right of the board
FONT = "Helvetica, Arial, sans-serif"
MONOSPACE = "DejaVu Sans Mono, Menlo, Consolas, monospace"
MAX_ANNOTATIONS_PER_SQUARE = 3  # Brandub: several moves may end on one square; the rest are left out

Annotations = Mapping[int, object]  # {action index: short text}, e.g. a search's visit share "41%"


class BoardLike(Protocol):
    """A state with a flat board, as every native game keeps: the common fields plus `board` (int8 [H * W])."""

    current_player: jax.Array
    legal_action_mask: jax.Array
    terminated: jax.Array
    rewards: jax.Array
    board: jax.Array


# --------------------------------------------------------------------------------------------------------------
# SVG elements.


def _number(value: float | np.floating) -> str:
    """A coordinate as SVG text: at most two decimals, no trailing zeros."""
    return f"{float(value):.2f}".rstrip("0").rstrip(".")


def _element(tag: str, cls: str | None = None, text: str | None = None, /, **attributes: object) -> str:
    """An SVG element; attribute names with '_' are written with '-' (stroke_width -> stroke-width), and
    attribute values and text are escaped."""
    parts = [tag] + ([f'class="{html.escape(cls)}"'] if cls else [])
    for name, value in attributes.items():
        shown = _number(value) if isinstance(value, (float, np.floating)) else str(value)
        parts.append(f'{name.replace("_", "-")}="{html.escape(shown)}"')
    if text is None:
        return f"<{' '.join(parts)} />"
    return f"<{' '.join(parts)}>{html.escape(text)}</{tag}>"


def _document(width: float, height: float, body: Sequence[str], *, title: str, font: str = FONT) -> str:
    """A standalone SVG document of `width` x `height` px that scales (its viewBox) around `body`."""
    w, h = _number(width), _number(height)
    return (
        f'<svg xmlns="{SVG_NAMESPACE}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
        f'font-family="{html.escape(font)}" role="img">'
        + _element("title", None, title)
        + "".join(body)
        + "</svg>"
    )


@dataclasses.dataclass(frozen=True)
class _Layout:
    """Where a rows x cols board of square cells lies in the picture: coordinates left and above, the status text
    below (`caption_lines` lines)."""

    rows: int
    cols: int
    cell: float
    caption_lines: int = 1
    left: float = LABEL_SIZE
    top: float = LABEL_SIZE

    @property
    def width(self) -> float:
        return self.left + self.cols * self.cell + PADDING

    @property
    def height(self) -> float:
        return self.top + self.rows * self.cell + LINE_HEIGHT * self.caption_lines + PADDING

    def centre(self, row: int, col: int) -> tuple[float, float]:
        return self.left + (col + 0.5) * self.cell, self.top + (row + 0.5) * self.cell

    def square(self, cell: int, cls: str, fill: str, **attributes: object) -> str:
        """A rect covering flat cell `cell` (row-major)."""
        row, col = divmod(cell, self.cols)
        x, y = self.left + col * self.cell, self.top + row * self.cell
        return _element("rect", cls, x=x, y=y, width=self.cell, height=self.cell, fill=fill, **attributes)

    def coordinates(self, *, bottom_up: bool = False) -> list[str]:
        """Column letters above the board, row numbers (1 at the top, or at the bottom with `bottom_up`) left of
        it, as the games' text renders name the cells."""
        labels = []
        for col in range(self.cols):
            x, _ = self.centre(0, col)
            labels.append(_element("text", "coordinate", boards.COLUMN_LETTERS[col], x=x, y=self.top - 7,
                                   text_anchor="middle", font_size=12, fill="#555"))
        for row in range(self.rows):
            _, y = self.centre(row, 0)
            number = self.rows - row if bottom_up else row + 1
            labels.append(_element("text", "coordinate", str(number), x=self.left - 5, y=y + 4,
                                   text_anchor="end", font_size=12, fill="#555"))
        return labels

    def caption(self, lines: Sequence[str], *, cls: Sequence[str] | None = None) -> list[str]:
        """The status text below the board, one `<text>` per line (class "status" unless `cls` says)."""
        base = self.top + self.rows * self.cell
        return [
            _element("text", (cls[i] if cls else "status"), line, x=self.left, y=base + LINE_HEIGHT * (i + 1) - 3,
                     font_size=13, fill="#222")
            for i, line in enumerate(lines)
        ]


def _annotation(x: float, y: float, text: str, *, font_size: float = 11) -> str:
    """`text` centred on (x, y), on a pale rounded label so that it reads on any square or piece."""
    width = 0.62 * font_size * len(text) + 6
    height = font_size + 4
    label = _element("rect", x=x - width / 2, y=y - height / 2, width=width, height=height, rx=3,
                     fill="#ffffff", fill_opacity=0.85, stroke="#666", stroke_width=0.5)
    caption = _element("text", "annotation", text, x=x, y=y + 0.36 * font_size, text_anchor="middle",
                       font_size=font_size, fill="#000")
    return f'<g class="annotation-label">{label}{caption}</g>'


def _action(action: object, num_actions: int, what: str) -> int:
    """`action` (an int, numpy int or 0-d array) as an int in [0, num_actions); ValueError otherwise."""
    index = int(np.asarray(action))
    if not 0 <= index < num_actions:
        raise ValueError(f"{what}: action {index} is out of range [0, {num_actions})")
    return index


def _annotation_items(annotations: Annotations | None, num_actions: int) -> list[tuple[int, str]]:
    """[(action, text)] in the mapping's order, the actions checked."""
    if not annotations:
        return []
    return [(_action(action, num_actions, "annotations"), str(text)) for action, text in annotations.items()]


def _status(state: BoardLike, names: tuple[str, str], *, verb: str = "wins") -> str:
    """'<mover> to move', '<winner> wins' or 'draw', players named by id."""
    if not bool(np.asarray(state.terminated)):
        return f"{names[int(np.asarray(state.current_player))]} to move"
    rewards = np.asarray(state.rewards)
    if rewards[0] > 0 or rewards[1] > 0:
        return f"{names[int(np.argmax(rewards))]} {verb}"
    return "draw"


def _disc(x: float, y: float, radius: float, cls: str | None, fill: str, stroke: str, stroke_width: float = 1.5) -> str:
    return _element("circle", cls, cx=x, cy=y, r=radius, fill=fill, stroke=stroke, stroke_width=stroke_width)


# --------------------------------------------------------------------------------------------------------------
# The native games.


_BLACK, _WHITE = "#161616", "#f6f6f2"


def draw_mnk(
    state: BoardLike,
    *,
    height: int,
    width: int,
    stones: bool | None = None,
    last_move: int | None = None,
    annotations: Annotations | None = None,
) -> str:
    """A k-in-a-row board (tic-tac-toe, Gomoku) as SVG: X and O marks in the cells of small boards, black (X) and
    white (O) stones on the lines of a wooden board for larger ones.

    Args:
      state: one unbatched state with `board` int8 [H * W] (0 empty, 1 X, 2 O; row 0 at the top).
      height, width: the board's size.
      stones: stones on a wooden board, else marks; by default stones when a side is longer than 5.
      last_move: the action (cell = row * W + col) that led here, marked.
      annotations: {action: short text}, drawn on the action's cell.
    Returns:
      A standalone SVG document.
    """
    if stones is None:
        stones = max(height, width) > 5
    cell = 32.0 if stones else 60.0
    layout = _Layout(height, width, cell)
    board = np.asarray(state.board).reshape(height * width)
    num_cells = height * width
    last = None if last_move is None else _action(last_move, num_cells, "last_move")
    x0, y0 = layout.left, layout.top
    body = []
    if stones:
        body.append(_element("rect", "board", x=x0, y=y0, width=width * cell, height=height * cell, fill="#dcb35c"))
        body += _grid_through_centres(layout, stroke="#5b4521")
        body += _star_points(layout)
    else:
        body.append(_element("rect", "board", x=x0, y=y0, width=width * cell, height=height * cell, fill="#fbfbf8",
                             stroke="#999", stroke_width=1))
        body += _grid_between_cells(layout, stroke="#333", stroke_width=2, outer=False)
        if last is not None:
            body.append(layout.square(last, "last-move", "#ffe28a"))
    for index in np.flatnonzero(board):
        player = int(board[index]) - 1
        x, y = layout.centre(*divmod(int(index), width))
        if stones:
            body.append(_disc(x, y, 0.45 * cell, f"piece p{player}", (_BLACK, _WHITE)[player], "#111", 1))
        else:
            body.append(_mark(x, y, cell, player))
    if stones and last is not None:
        x, y = layout.centre(*divmod(last, width))
        body.append(_element("circle", "last-move", cx=x, cy=y, r=0.13 * cell, fill="#e53935"))
    for action, text in _annotation_items(annotations, num_cells):
        body.append(_annotation(*layout.centre(*divmod(action, width)), text))
    body += layout.coordinates()
    names = ("black (X)", "white (O)") if stones else ("X", "O")
    status = _status(state, names)
    body += layout.caption([status])
    return _document(layout.width, layout.height, body, title=f"{height} x {width} board: {status}")


def _mark(x: float, y: float, cell: float, player: int) -> str:
    """An X (player 0) or an O (player 1) centred on (x, y)."""
    if player == 1:
        return _element("circle", "piece p1", cx=x, cy=y, r=0.3 * cell, fill="none", stroke="#2166ac",
                        stroke_width=0.09 * cell)
    d = 0.27 * cell
    style = {"stroke": "#c0392b", "stroke_width": 0.09 * cell, "stroke_linecap": "round"}
    first = _element("line", x1=x - d, y1=y - d, x2=x + d, y2=y + d, **style)
    second = _element("line", x1=x - d, y1=y + d, x2=x + d, y2=y - d, **style)
    return f'<g class="piece p0">{first}{second}</g>'


def _grid_through_centres(layout: _Layout, *, stroke: str) -> list[str]:
    """Go-style lines through the cells' centres, where the stones sit."""
    (x_first, y_first), (x_last, y_last) = layout.centre(0, 0), layout.centre(layout.rows - 1, layout.cols - 1)
    lines = []
    for row in range(layout.rows):
        _, y = layout.centre(row, 0)
        lines.append(_element("line", x1=x_first, y1=y, x2=x_last, y2=y, stroke=stroke, stroke_width=1))
    for col in range(layout.cols):
        x, _ = layout.centre(0, col)
        lines.append(_element("line", x1=x, y1=y_first, x2=x, y2=y_last, stroke=stroke, stroke_width=1))
    return lines


def _star_points(layout: _Layout) -> list[str]:
    """The small dots of a Go board: the centre, and on boards of 9 and more the four points near the corners."""
    rows, cols = layout.rows, layout.cols
    points = {(rows // 2, cols // 2)} if rows % 2 and cols % 2 else set()
    if min(rows, cols) >= 9:
        offset = 3 if min(rows, cols) >= 13 else 2
        points |= {(r, c) for r in (offset, rows - 1 - offset) for c in (offset, cols - 1 - offset)}
    return [_element("circle", cx=x, cy=y, r=3, fill="#5b4521") for x, y in (layout.centre(*p) for p in sorted(points))]


def _grid_between_cells(layout: _Layout, *, stroke: str, stroke_width: float, outer: bool = True) -> list[str]:
    """Lines between the cells (and around the board when `outer`)."""
    x0, y0, cell = layout.left, layout.top, layout.cell
    x1, y1 = x0 + layout.cols * cell, y0 + layout.rows * cell
    rows = range(layout.rows + 1) if outer else range(1, layout.rows)
    cols = range(layout.cols + 1) if outer else range(1, layout.cols)
    lines = [_element("line", x1=x0, y1=y0 + r * cell, x2=x1, y2=y0 + r * cell, stroke=stroke,
                      stroke_width=stroke_width) for r in rows]
    lines += [_element("line", x1=x0 + c * cell, y1=y0, x2=x0 + c * cell, y2=y1, stroke=stroke,
                       stroke_width=stroke_width) for c in cols]
    return lines


def draw_connect_four(
    state: BoardLike,
    *,
    height: int = 6,
    width: int = 7,
    last_move: int | None = None,
    annotations: Annotations | None = None,
) -> str:
    """A Connect Four board as SVG: red (X, player 0) and yellow (O) discs in a blue frame, rows 1..H from the
    bottom and column letters above, as `render` prints them.

    Args:
      state: one unbatched state with `board` int8 [H * W] (0 empty, 1 X, 2 O; row 0 at the top).
      height, width: the board's size.
      last_move: the column just played: its top disc is ringed.
      annotations: {column: short text}, drawn where the column's next disc would land (on its top disc when the
        column is full).
    Returns:
      A standalone SVG document.
    """
    cell = 48.0
    layout = _Layout(height, width, cell)
    grid = np.asarray(state.board).reshape(height, width)
    body = [_element("rect", "board", x=layout.left, y=layout.top, width=width * cell, height=height * cell,
                     rx=8, fill="#1f5fbf")]
    for row in range(height):
        for col in range(width):
            x, y = layout.centre(row, col)
            value = int(grid[row, col])
            if value == boards.EMPTY:
                body.append(_disc(x, y, 0.4 * cell, "hole", "#ffffff", "#174a94", 1))
            else:
                fill, rim = (("#d62728", "#7a1010"), ("#f4c20d", "#a07d00"))[value - 1]
                body.append(_disc(x, y, 0.4 * cell, f"piece p{value - 1}", fill, rim))
    if last_move is not None:
        col = _action(last_move, width, "last_move")
        filled = np.flatnonzero(grid[:, col] != boards.EMPTY)
        if len(filled):
            x, y = layout.centre(int(filled[0]), col)
            body.append(_element("circle", "last-move", cx=x, cy=y, r=0.46 * cell, fill="none", stroke="#ffffff",
                                 stroke_width=3))
        else:  # nothing in the column to ring: mark the whole column
            body.append(_element("rect", "last-move", x=layout.left + col * cell, y=layout.top, width=cell,
                                 height=height * cell, fill="none", stroke="#ffffff", stroke_width=3))
    for col, text in _annotation_items(annotations, width):
        row = max(int(np.sum(grid[:, col] == boards.EMPTY)) - 1, 0)  # the landing cell, or the top one if full
        body.append(_annotation(*layout.centre(row, col), text))
    body += layout.coordinates(bottom_up=True)
    status = _status(state, ("red (X)", "yellow (O)"))
    body += layout.caption([status])
    return _document(layout.width, layout.height, body, title=f"Connect Four: {status}")


def draw_othello(
    state: BoardLike,
    *,
    size: int,
    last_move: int | None = None,
    annotations: Annotations | None = None,
) -> str:
    """An Othello board as SVG: black (X, player 0) and white (O) discs on green, the mover's legal placements as
    small dots, the disc counts below.

    Args:
      state: one unbatched state with `board` int8 [size * size] (0 empty, 1 X, 2 O; row 0 at the top) and
        `legal_action_mask` bool [size * size + 1] (the last action is the pass).
      size: the board's side.
      last_move: the action that led here, a cell (marked on its disc) or the pass (said below the board).
      annotations: {action: short text}, drawn on the action's cell; the pass's below the board.
    Returns:
      A standalone SVG document.
    """
    cell = 44.0
    num_cells = size * size
    pass_action = num_cells
    layout = _Layout(size, size, cell, caption_lines=2)
    board = np.asarray(state.board).reshape(num_cells)
    mask = np.asarray(state.legal_action_mask).reshape(num_cells + 1)
    body = [_element("rect", "board", x=layout.left, y=layout.top, width=size * cell, height=size * cell,
                     fill="#2e7d32")]
    body += _grid_between_cells(layout, stroke="#174d1b", stroke_width=1.5)
    for index in np.flatnonzero(board):
        player = int(board[index]) - 1
        x, y = layout.centre(*divmod(int(index), size))
        body.append(_disc(x, y, 0.42 * cell, f"piece p{player}", (_BLACK, _WHITE)[player], "#111", 1))
    for index in np.flatnonzero(mask[:num_cells]):
        x, y = layout.centre(*divmod(int(index), size))
        body.append(_element("circle", "legal", cx=x, cy=y, r=0.09 * cell, fill="#000000", fill_opacity=0.35))
    notes: list[str] = []
    last = None if last_move is None else _action(last_move, num_cells + 1, "last_move")
    if last is not None and last != pass_action:
        x, y = layout.centre(*divmod(last, size))
        body.append(_element("circle", "last-move", cx=x, cy=y, r=0.12 * cell, fill="#e53935"))
    for action, text in _annotation_items(annotations, num_cells + 1):
        if action == pass_action:
            notes.append(f"pass: {text}")
        else:
            body.append(_annotation(*layout.centre(*divmod(action, size)), text))
    body += layout.coordinates()
    status = _status(state, ("black (X)", "white (O)"))
    if not bool(np.asarray(state.terminated)) and mask[pass_action]:
        status += " (must pass)"
    counts = f"black {int(np.sum(board == boards.STONE_X))}, white {int(np.sum(board == boards.STONE_O))}"
    second = "; ".join([counts, *(["last move: pass"] if last == pass_action else []), *notes])
    body += layout.caption([status, second], cls=["status", "status last-move" if last == pass_action else "status"])
    return _document(layout.width, layout.height, body, title=f"Othello {size} x {size}: {status}")


def draw_tafl(
    state: BoardLike,
    *,
    destinations: np.ndarray,
    last_move: int | None = None,
    annotations: Annotations | None = None,
) -> str:
    """A tafl board (Brandub) as SVG: the castle (centre) and corners marked, attackers (player 0) black,
    defenders (player 1) white, the monarch white with a gold ring and cross; ranks numbered from the bottom.

    Args:
      state: one unbatched state with `board` int8 [N] on a square board (0 empty, 1 attacker, 2 defender,
        3 monarch; row 0 at the top) and optionally `move_count`.
      destinations: int [A], the cell each action moves its piece to (N where it leaves the board); the action's
        piece starts on cell `action // (A // N)`, as Brandub encodes moves (from, direction, distance).
      last_move: the action that led here: its from and to squares are highlighted and joined.
      annotations: {action: short text}, drawn on the action's destination square (at most
        `MAX_ANNOTATIONS_PER_SQUARE` per square, the first ones given; actions leaving the board are skipped).
    Returns:
      A standalone SVG document.
    """
    board = np.asarray(state.board).ravel()
    num_cells = board.size
    size = math.isqrt(num_cells)
    destinations = np.asarray(destinations).ravel()
    num_actions = destinations.size
    actions_per_cell = num_actions // num_cells
    cell = 48.0
    layout = _Layout(size, size, cell)
    centre = (size // 2) * size + size // 2
    special = {0, size - 1, num_cells - size, num_cells - 1, centre}
    body = [_element("rect", "board", x=layout.left, y=layout.top, width=size * cell, height=size * cell,
                     fill="#f1dfb4")]
    for square in sorted(special):
        body.append(layout.square(square, "castle" if square == centre else "corner", "#c9a064"))
    if last_move is not None:
        action = _action(last_move, num_actions, "last_move")
        source, destination = action // actions_per_cell, int(destinations[action])
        body.append(layout.square(source, "last-move-from", "#fff1a8", fill_opacity=0.75))
        if destination < num_cells:
            body.append(layout.square(destination, "last-move", "#ffcf40", fill_opacity=0.75))
            (x1, y1), (x2, y2) = layout.centre(*divmod(source, size)), layout.centre(*divmod(destination, size))
            body.append(_element("line", "last-move-path", x1=x1, y1=y1, x2=x2, y2=y2, stroke="#d08c00",
                                 stroke_width=3, stroke_linecap="round", stroke_opacity=0.8))
    for square in sorted(special):  # over the highlights, so that a castle left by the last move still shows
        body += _cross(layout, square)
    body += _grid_between_cells(layout, stroke="#8b6b3a", stroke_width=1)
    for index in np.flatnonzero(board):
        body.append(_tafl_piece(layout, int(index), int(board[index])))
    by_square: dict[int, list[str]] = {}
    for action, text in _annotation_items(annotations, num_actions):
        if int(destinations[action]) < num_cells:
            by_square.setdefault(int(destinations[action]), []).append(text)
    for square, texts in by_square.items():
        x, y = layout.centre(*divmod(square, size))
        shown = texts[:MAX_ANNOTATIONS_PER_SQUARE]
        for i, text in enumerate(shown):
            body.append(_annotation(x, y + 14 * (i - (len(shown) - 1) / 2), text, font_size=10))
    body += layout.coordinates(bottom_up=True)
    status = _status(state, ("attackers", "defenders"), verb="win")
    move_count = getattr(state, "move_count", None)
    if move_count is not None:
        moves = int(np.asarray(move_count))
        status += f"; {counted(moves, 'move')} played"
    body += layout.caption([status])
    return _document(layout.width, layout.height, body, title=f"tafl {size} x {size}: {status}")


def _cross(layout: _Layout, square: int) -> list[str]:
    """The diagonals of a castle or corner square."""
    row, col = divmod(square, layout.cols)
    x0, y0, c = layout.left + col * layout.cell, layout.top + row * layout.cell, layout.cell
    style = {"stroke": "#8b6b3a", "stroke_width": 1, "stroke_opacity": 0.6}
    return [_element("line", x1=x0, y1=y0, x2=x0 + c, y2=y0 + c, **style),
            _element("line", x1=x0 + c, y1=y0, x2=x0, y2=y0 + c, **style)]


def _tafl_piece(layout: _Layout, square: int, value: int) -> str:
    """An attacker (1), defender (2) or monarch (3) on `square`."""
    x, y = layout.centre(*divmod(square, layout.cols))
    cell = layout.cell
    if value == 1:
        return _disc(x, y, 0.34 * cell, "piece p0", "#2a2a2a", "#000")
    if value == 2:
        return _disc(x, y, 0.34 * cell, "piece p1", "#fafafa", "#2a2a2a")
    d = 0.2 * cell
    ring = _disc(x, y, 0.42 * cell, None, "#fafafa", "#b8860b", 3)
    style = {"stroke": "#b8860b", "stroke_width": 3, "stroke_linecap": "round"}
    cross = (_element("line", x1=x - d, y1=y, x2=x + d, y2=y, **style)
             + _element("line", x1=x, y1=y - d, x2=x, y2=y + d, **style))
    return f'<g class="piece p1 king">{ring}{cross}</g>'


_PIG_COLOURS = ("#c0392b", "#2166ac")  # X (player 0) red, O (player 1) blue, as `_mark` draws them
_PIPS = {  # a die face's pips on a 3 x 3 grid of (column, row), 0..2
    1: [(1, 1)],
    2: [(0, 0), (2, 2)],
    3: [(0, 0), (1, 1), (2, 2)],
    4: [(0, 0), (2, 0), (0, 2), (2, 2)],
    5: [(0, 0), (2, 0), (1, 1), (0, 2), (2, 2)],
    6: [(0, 0), (2, 0), (0, 1), (2, 1), (0, 2), (2, 2)],
}


def draw_pig(
    state: Any,
    *,
    goal: int,
    last_move: int | None = None,
    annotations: Annotations | None = None,
) -> str:
    """A Pig position as SVG: each player's score as a bar towards the goal (class "piece p0" / "piece p1", the
    score in `data-score`), the mover's turn total as a pale, pending part of their bar (class "turn-total"), the
    last roll as a die with its pips (class "die", the face in `data-face`, 0 before the first roll), the two
    actions as boxes (class "action roll" / "action hold", the illegal one faded) and the status line.

    Args:
      state: one unbatched `PigState`: `scores` int [2], `turn_total` int [], `last_roll` int [] (0: none yet),
        `num_moves` int [] and the common fields.
      goal: the points that win.
      last_move: the action that led here (0 roll, 1 hold): its box is ringed (class "last-move").
      annotations: {action: short text}, written under the action's box.
    Returns:
      A standalone SVG document.
    """
    scores = [int(v) for v in np.asarray(state.scores)]
    turn_total = int(np.asarray(state.turn_total))
    face = int(np.asarray(state.last_roll))
    mover = int(np.asarray(state.current_player))
    over = bool(np.asarray(state.terminated))
    legal = np.asarray(state.legal_action_mask).reshape(2)
    last = None if last_move is None else _action(last_move, 2, "last_move")
    left, bar_width, bar_height, top = 44.0, 300.0, 24.0, 28.0
    scale = bar_width / goal
    body = [_element("text", "goal", f"goal {goal}", x=left + bar_width, y=top - 8, text_anchor="end",
                     font_size=12, fill="#555")]
    for player in range(2):
        y = top + player * (bar_height + 12)
        colour = _PIG_COLOURS[player]
        to_move = player == mover and not over
        body.append(_element("text", "player", ("▶ " if to_move else "") + "XO"[player], x=left - 8,
                             y=y + bar_height / 2 + 5, text_anchor="end", font_size=15, fill=colour,
                             font_weight="bold" if to_move else "normal"))
        body.append(_element("rect", "track", x=left, y=y, width=bar_width, height=bar_height, rx=3, fill="#f1f1ee",
                             stroke="#bbb", stroke_width=1))
        score = min(scores[player], goal)
        body.append(_element("rect", f"piece p{player} score", x=left, y=y, width=score * scale, height=bar_height,
                             rx=3, fill=colour, data_score=scores[player]))
        number = str(scores[player])
        if to_move and turn_total:
            pending = min(turn_total, goal - score)
            body.append(_element("rect", f"turn-total p{player}", x=left + score * scale, y=y,
                                 width=pending * scale, height=bar_height, fill=colour, fill_opacity=0.3,
                                 stroke=colour, stroke_width=1, stroke_dasharray="3 2", data_turn_total=turn_total))
            number += f" +{turn_total}"
        body.append(_element("text", "score-number", number, x=left + bar_width + 8, y=y + bar_height / 2 + 5,
                             font_size=14, fill="#222"))
    goal_x = left + bar_width
    body.append(_element("line", "goal-line", x1=goal_x, y1=top - 3, x2=goal_x, y2=top + 2 * bar_height + 15,
                         stroke="#333", stroke_width=2))
    die_top = top + 2 * bar_height + 30
    body.append(_die(left, die_top, 56.0, face, bust=face == 1))
    if face == 0:
        said = "no roll yet"
    elif face == 1 and last == 0:
        said = "a 1: turn lost"
    else:
        said = f"last roll {face}"
    body.append(_element("text", "last-roll", said, x=left + 66, y=die_top + 20, font_size=13, fill="#222"))
    body.append(_element("text", "turn", f"turn total {turn_total}", x=left + 66, y=die_top + 40, font_size=13,
                         fill="#222"))
    boxes = [(left + 222.0, die_top + 6), (left + 292.0, die_top + 6)]  # roll, hold: the top left of each box
    box_width, box_height = 64.0, 28.0
    for action, (x, y) in enumerate(boxes):
        name = ("roll", "hold")[action]
        opacity = 1.0 if legal[action] else 0.35
        body.append(_element("rect", f"action {name}", x=x, y=y, width=box_width, height=box_height, rx=5,
                             fill="#fafafa", stroke="#555", stroke_width=1, opacity=opacity))
        body.append(_element("text", f"action-name {name}", name, x=x + box_width / 2, y=y + 19,
                             text_anchor="middle", font_size=14, fill="#222", opacity=opacity))
        if action == last:
            body.append(_element("rect", "last-move", x=x - 3, y=y - 3, width=box_width + 6, height=box_height + 6,
                                 rx=7, fill="none", stroke="#e6a100", stroke_width=3))
    for action, text in _annotation_items(annotations, 2):
        x, y = boxes[action]
        body.append(_annotation(x + box_width / 2, y + box_height + 14, text))
    status = _status(state, ("X", "O"))
    if over and status == "draw":
        status = f"draw after {counted(int(np.asarray(state.num_moves)), 'move')}"
    status_y = die_top + 56 + LINE_HEIGHT
    body.append(_element("text", "status", status, x=left, y=status_y, font_size=13, fill="#222"))
    width = left + bar_width + 70
    return _document(width, status_y + PADDING, body, title=f"pig to {goal}: {status}")


def _die(x: float, y: float, size: float, face: int, *, bust: bool) -> str:
    """A die of side `size` at (x, y) (its top left) showing `face` as pips (1 in red: a bust), blank and dashed
    for 0 (no roll yet)."""
    blank = face not in _PIPS
    square = _element("rect", x=x, y=y, width=size, height=size, rx=0.18 * size, fill="#ffffff", stroke="#333",
                      stroke_width=2, **({"stroke_dasharray": "4 3"} if blank else {}))
    pips = [
        _element("circle", "pip", cx=x + size * (0.25 + 0.25 * col), cy=y + size * (0.25 + 0.25 * row),
                 r=0.09 * size, fill="#c62828" if bust else "#222")
        for col, row in _PIPS.get(face, [])
    ]
    return f'<g class="die" data-face="{face}">{square}{"".join(pips)}</g>'


def draw_sliding_puzzle(
    state: Any,
    *,
    size: int,
    max_moves: int,
    neighbours: np.ndarray,
    last_move: int | None = None,
    annotations: Annotations | None = None,
) -> str:
    """A sliding-puzzle position as SVG: the tiles as numbered squares (class "piece tile", the number in
    `data-tile`; a tile on its own cell of the solved board also "home"), the empty cell left blank (class
    "empty"), the tile the last move slid ringed (class "last-move"), and the status line (moves of the budget,
    or solved).

    Args:
      state: one unbatched `SlidingPuzzleState`: `board` int [size * size] (0 the empty cell), `num_moves` int []
        and the common fields.
      size: the board's side.
      max_moves: the episode's move budget, for the status line.
      neighbours: int [size * size, 4], the cell the empty cell reaches from each cell by each action, -1 off the
        board (`sliding_puzzle.neighbour_table`).
      last_move: the action (the empty cell's direction: 0 up, 1 down, 2 left, 3 right) that led here.
      annotations: {action: short text}, written on the tile that action would slide.
    Returns:
      A standalone SVG document.
    """
    board = [int(v) for v in np.asarray(state.board).reshape(size * size)]
    layout = _Layout(size, size, 56.0, left=PADDING, top=PADDING)
    blank = board.index(0)
    solved = board == [*range(1, size * size), 0]
    body = [_element("rect", "board", x=layout.left, y=layout.top, width=size * layout.cell,
                     height=size * layout.cell, fill="#d8d2c4", rx=4)]
    for cell, tile in enumerate(board):
        x, y = layout.centre(*divmod(cell, size))
        if tile == 0:
            body.append(layout.square(cell, "empty", "#d8d2c4"))
            continue
        home = tile == cell + 1
        inset = 3.0
        body.append(_element("rect", "piece tile home" if home else "piece tile", x=x - layout.cell / 2 + inset,
                             y=y - layout.cell / 2 + inset, width=layout.cell - 2 * inset,
                             height=layout.cell - 2 * inset, rx=6, fill="#f6e7c1" if home else "#fdf8ec",
                             stroke="#8a7a55", stroke_width=1.5, data_tile=tile))
        body.append(_element("text", "tile-number", str(tile), x=x, y=y + 8, text_anchor="middle", font_size=22,
                             font_weight="bold", fill="#333"))
    neighbours = np.asarray(neighbours)
    if last_move is not None:
        action = _action(last_move, 4, "last_move")
        came_from = neighbours[blank][_OPPOSITE_DIRECTION[action]]  # where the empty cell was: the tile slid there
        if came_from >= 0:
            row, col = divmod(came_from, size)
            body.append(_element("rect", "last-move", x=layout.left + col * layout.cell + 1.5,
                                 y=layout.top + row * layout.cell + 1.5, width=layout.cell - 3,
                                 height=layout.cell - 3, rx=7, fill="none", stroke="#e6a100", stroke_width=3))
    for action, text in _annotation_items(annotations, 4):
        target = neighbours[blank][action]
        if target >= 0:
            x, y = layout.centre(*divmod(target, size))
            body.append(_annotation(x, y + layout.cell / 2 - 10, text, font_size=10))
    moves = int(np.asarray(state.num_moves))
    if solved:
        status = f"solved in {counted(moves, 'move')}"
    elif bool(np.asarray(state.terminated)):
        status = f"unsolved after {counted(moves, 'move')}"
    else:
        status = f"moves {moves} of {max_moves}"
    body.extend(layout.caption([status]))
    return _document(max(layout.width, 150.0), layout.height, body, title=f"sliding puzzle: {status}")


_OPPOSITE_DIRECTION = (1, 0, 3, 2)  # up <-> down, left <-> right


# --------------------------------------------------------------------------------------------------------------
# Any game: to_svg, the text fallback, captions.


def text_to_svg(text: str, *, title: str = "board") -> str:
    """`text` (e.g. a `render`) as a standalone SVG document: one monospace `<text>` block, a line per line, its
    XML special characters escaped."""
    lines = text.splitlines() or [""]
    font_size, line_height = 14, 18
    width = max(len(line) for line in lines) * 0.61 * font_size + 2 * PADDING
    height = len(lines) * line_height + 2 * PADDING
    spans = "".join(
        _element("tspan", None, line or " ", x=PADDING, dy=line_height if i else 0) for i, line in enumerate(lines)
    )
    block = (f'<text class="text-board" x="{PADDING}" y="{PADDING + font_size}" font-size="{font_size}" '
             f'fill="#222" xml:space="preserve" style="white-space: pre">{spans}</text>')
    return _document(max(width, 40), height, [block], title=title, font=MONOSPACE)


def _notes(
    num_actions: int, last_move: int | None, annotations: Annotations | None, action_to_string: Callable[[int], str]
) -> tuple[list[str], list[str]]:
    """(lines, their classes) naming the last move (class "last-move") and the annotations, six to a line."""
    lines, classes = [], []
    if last_move is not None:
        lines.append(f"last move: {action_to_string(_action(last_move, num_actions, 'last_move'))}")
        classes.append("last-move")
    items = _annotation_items(annotations, num_actions)
    for start in range(0, len(items), 6):
        lines.append("  ".join(f"{action_to_string(a)}: {t}" for a, t in items[start : start + 6]))
        classes.append("annotation")
    return lines, classes


def _size_of(svg: ET.Element) -> tuple[float, float]:
    """An SVG root's width and height in px, from its attributes or else its viewBox."""
    try:
        return float(svg.attrib["width"].removesuffix("px")), float(svg.attrib["height"].removesuffix("px"))
    except (KeyError, ValueError):
        _, _, w, h = (float(v) for v in svg.attrib["viewBox"].replace(",", " ").split())
        return w, h


def add_notes(
    svg: str,
    *,
    num_actions: int,
    last_move: int | None = None,
    annotations: Annotations | None = None,
    action_to_string: Callable[[int], str] = str,
) -> str:
    """A picture drawn elsewhere (e.g. by pgx), the SVG document `svg`, with the last move and the annotations
    written below it, named by `action_to_string`: a new document holding `svg` as a nested `<svg>`. Returns `svg`
    unchanged when there is nothing to write.

    Raises:
      ValueError: for an action outside [0, num_actions).
    """
    lines, classes = _notes(num_actions, last_move, annotations, action_to_string)
    if not lines:
        return svg
    svg = re.sub(r"^\s*<\?xml[^>]*\?>\s*", "", svg)
    width, height = _size_of(ET.fromstring(svg))
    body = [svg] + [
        _element("text", cls, line, x=PADDING, y=height + LINE_HEIGHT * (i + 1) - 3, font_size=13, fill="#222")
        for i, (line, cls) in enumerate(zip(lines, classes, strict=True))
    ]
    text_width = max(len(line) for line in lines) * 0.6 * 13 + 2 * PADDING
    return _document(max(width, text_width), height + LINE_HEIGHT * len(lines) + PADDING, body, title="board")


def to_svg(game: Game, state: State, *, last_move: int | None = None, annotations: Annotations | None = None) -> str:
    """One unbatched state of `game` as a standalone SVG document.

    Draws with `game.draw` where the game has it; otherwise the text of `game.render(state)` in a monospace block,
    with lines naming the last move and the annotations (by `game.action_to_string`).

    Args:
      game: the game.
      state: one concrete, unbatched state.
      last_move: the action that led to `state`, marked.
      annotations: {action: short text} (e.g. a search's visit share "41%"), drawn where the action acts.
    """
    if game.draw is not None:
        return game.draw(state, last_move=last_move, annotations=annotations)
    notes, _ = _notes(game.num_actions, last_move, annotations, game.action_to_string)
    text = "\n".join([game.render(state), *notes])
    return text_to_svg(text, title=game.name)


# --------------------------------------------------------------------------------------------------------------
# The notebook view.


@dataclasses.dataclass(frozen=True)
class BoardView:
    """Pictures of one position or of a game, shown by notebooks (Jupyter, VS Code, Colab) through `_repr_html_`.

    Attributes:
      frames: one SVG document per position.
      captions: one line per frame shown under it (e.g. "move 3: d2"); "" for none.
    """

    frames: tuple[str, ...]
    captions: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.frames)

    def __repr__(self) -> str:  # a notebook's plain-text fallback: short, not every frame's SVG again
        return f"<BoardView of {counted(len(self.frames), 'position')}>"

    def _repr_html_(self) -> str:
        """One picture, or every frame with only one visible and Previous / Next buttons and a slider to step
        through them (plain HTML and inline JavaScript; the element ids are new at every call, so that several
        views, or one shown twice, live in one notebook)."""
        if len(self.frames) == 1 and not self.captions[0]:
            return f'<div class="azjax-board">{self.frames[0]}</div>'
        uid = f"azjax-board-{uuid.uuid4().hex[:12]}"
        frames = "".join(
            f'<div class="azjax-frame" style="display:{"block" if i == 0 else "none"}">{svg}'
            f'<div class="azjax-move" style="min-height:1.2em">{html.escape(caption)}</div></div>'
            for i, (svg, caption) in enumerate(zip(self.frames, self.captions, strict=True))
        )
        last = len(self.frames) - 1
        controls = (
            '<div style="display:flex;align-items:center;gap:6px;margin-top:4px">'
            f'<button type="button" id="{uid}-prev">Previous</button>'
            f'<input type="range" id="{uid}-slider" min="0" max="{last}" step="1" value="0" style="flex:1">'
            f'<button type="button" id="{uid}-next">Next</button>'
            f'<span id="{uid}-label">1 / {len(self.frames)}</span></div>'
        )
        script = (
            "<script>(function () {"
            f'var root = document.getElementById("{uid}"); if (!root) return;'
            'var frames = root.querySelectorAll(".azjax-frame");'
            f'var slider = document.getElementById("{uid}-slider");'
            f'var prev = document.getElementById("{uid}-prev"), next = document.getElementById("{uid}-next");'
            f'var label = document.getElementById("{uid}-label");'
            "function show(i) {"
            "i = Math.max(0, Math.min(frames.length - 1, i));"
            'for (var k = 0; k < frames.length; k++) frames[k].style.display = k === i ? "block" : "none";'
            'slider.value = i; label.textContent = (i + 1) + " / " + frames.length;'
            "prev.disabled = i === 0; next.disabled = i === frames.length - 1; }"
            "prev.onclick = function () { show(parseInt(slider.value, 10) - 1); };"
            "next.onclick = function () { show(parseInt(slider.value, 10) + 1); };"
            "slider.oninput = function () { show(parseInt(slider.value, 10)); };"
            "show(0); })();</script>"
        )
        style = f"display:inline-block;vertical-align:top;margin:0 12px 8px 0;font-family:{FONT}"
        return f'<div id="{uid}" class="azjax-board-view" style="{style}">{frames}{controls}{script}</div>'


def _unstack(record: Any) -> tuple[list[Any], bool]:
    """(the states, whether `record` was a record rather than one state): a list of states, a batched state with
    a leading time axis [T, ...], or one unbatched state. Leaves are brought to the host once."""
    if isinstance(record, (list, tuple)):
        states = [jax.device_get(state) for state in record]
        is_record = True
    else:
        record = jax.device_get(record)
        rank = np.ndim(record.current_player)
        if rank == 0:
            return [record], False
        if rank != 1:
            raise ValueError(
                f"expected one unbatched state or a record with a leading time axis [T, ...], got current_player "
                f"of shape {np.shape(record.current_player)}; pick one game first, e.g. "
                "jax.tree.map(lambda x: x[:, 0], trajectory)"
            )
        states = [jax.tree.map(lambda x, t=t: x[t], record) for t in range(np.shape(record.current_player)[0])]
        is_record = True
    for t, state in enumerate(states):
        if np.ndim(state.current_player) != 0:
            raise ValueError(f"state {t} of the record is batched (current_player of shape "
                             f"{np.shape(state.current_player)}); the record's states must be unbatched")
    if not states:
        raise ValueError("the record holds no states")
    return states, is_record


def show(
    game: Game,
    states_or_record: Any,
    *,
    actions: Sequence[int] | None = None,
    annotations: Annotations | Sequence[Annotations | None] | None = None,
) -> BoardView:
    """A notebook view of one position, or of a game to step through with Previous / Next and a slider.

    Args:
      game: the game.
      states_or_record: one unbatched state; or a game record: a list of unbatched states, or a state batched
        along a leading time axis [T, ...] (e.g. one game of a self-play trajectory).
      actions: the moves of a record, `actions[t]` played from state t to state t + 1 (T - 1 of them; T also fits,
        the last one is then unused): each frame marks the move that led to it and names it below.
      annotations: for one state, {action: short text}; for a record, one such mapping (or None) per state.
    Returns:
      A `BoardView`; a notebook shows it when it is a cell's value (its `_repr_html_`).
    Raises:
      ValueError: when `actions` or `annotations` do not match the number of states.
    """
    states, is_record = _unstack(states_or_record)
    if actions is not None and len(actions) not in (len(states) - 1, len(states)):
        raise ValueError(f"{len(states)} states take {len(states) - 1} actions (or {len(states)}, the last unused), "
                         f"got {len(actions)}")
    if not is_record:
        per_state = [annotations]
    elif annotations is None:
        per_state = [None] * len(states)
    elif isinstance(annotations, Mapping) or len(annotations) != len(states):
        raise ValueError(f"for a record of {len(states)} states, give annotations as a list of {len(states)} "
                         "mappings {action: text} (None where a state has none)")
    else:
        per_state = list(annotations)
    frames, captions = [], []
    for t, state in enumerate(states):
        last = None if actions is None or t == 0 else int(actions[t - 1])
        frames.append(to_svg(game, state, last_move=last, annotations=per_state[t]))  # type: ignore[arg-type]
        if last is not None:
            captions.append(f"move {t}: {game.action_to_string(last)}")
        elif is_record:
            captions.append("start" if t == 0 and actions is not None else "")
        else:
            captions.append("")
    return BoardView(frames=tuple(frames), captions=tuple(captions))


__all__ = [
    "BoardLike",
    "BoardView",
    "add_notes",
    "draw_connect_four",
    "draw_mnk",
    "draw_othello",
    "draw_pig",
    "draw_tafl",
    "show",
    "text_to_svg",
    "to_svg",
]
