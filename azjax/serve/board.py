"""Clicks on a drawn board as moves: where the squares lie in a picture of `azjax.games.drawing`, and which
squares each move is played on.

The pictures name their squares as the games name their moves: column letters above the board, row numbers left
of it (`<text class="coordinate">`), over a `<rect class="board">`. So a click on a square gives its name ("b2"),
and a move is found by its name: "b2" in tic-tac-toe and Othello is played on b2, "d" in Connect Four anywhere in
column d, "d2-d3" in Brandub from d2 to d3 (two clicks). A move named otherwise ("pass", "a7:N1") has no squares;
the page offers it as a button. A game drawn as text (no coordinates) has no grid: its moves are typed or picked
from a list.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

Grid = dict  # {"x", "y", "width", "height": the board in the picture's units, "columns": [...], "rows": [...]}
Targets = tuple[str, ...]  # a move's squares in the order they are clicked, e.g. ("d2", "d3"); a column: ("d",)

_TOKEN = re.compile(r"([a-z]+)(\d*)")


def board_grid(svg: str) -> Grid | None:
    """Where the board lies in the SVG picture `svg` and how its columns (left to right) and rows (top to bottom)
    are named, from its `<rect class="board">` and `<text class="coordinate">` labels; None for a picture without
    them (a game drawn as text, a picture that cannot be read)."""
    try:
        root = ET.fromstring(svg)
    except ET.ParseError:
        return None
    board = None
    columns: list[tuple[float, str]] = []
    rows: list[tuple[float, str]] = []
    for element in root.iter():
        classes = element.get("class", "").split()
        tag = element.tag.rsplit("}", 1)[-1]
        try:
            if tag == "rect" and "board" in classes and board is None:
                board = {name: float(element.get(name, "")) for name in ("x", "y", "width", "height")}
            elif tag == "text" and "coordinate" in classes:
                label = (element.text or "").strip().lower()
                if label.isalpha():
                    columns.append((float(element.get("x", "")), label))
                elif label.isdecimal():
                    rows.append((float(element.get("y", "")), label))
        except ValueError:
            return None
    if board is None or not columns or not rows:
        return None
    return dict(board, columns=[label for _, label in sorted(columns)], rows=[label for _, label in sorted(rows)])


def move_targets(name: str, grid: Grid | None) -> Targets | None:
    """The squares a move named `name` is clicked on (see the module docstring), or None when it has none on
    `grid`: a square "b2" is a column letter and a row number of the grid, a lone column letter "d" means the
    whole column, and a move with any other part ("pass", "a7:N1") has no squares."""
    if grid is None:
        return None
    text = name.strip().lower()
    tokens = _TOKEN.findall(text)
    if not tokens or re.sub(r"[a-z]+\d*|[\s\-x]", "", text):
        return None
    columns, rows = set(grid["columns"]), set(grid["rows"])
    if len(tokens) == 1 and not tokens[0][1]:
        return (tokens[0][0],) if tokens[0][0] in columns else None
    if not all(letters in columns and number in rows for letters, number in tokens):
        return None
    return tuple(letters + number for letters, number in tokens)


def on_path(targets: Targets | None, path: Sequence[str]) -> bool:
    """Whether a move's `targets` are the squares clicked, `path` (e.g. ["d2", "d3"]); a column target takes any
    square of its column."""
    if targets is None or len(targets) != len(path):
        return False
    for target, square in zip(targets, path, strict=True):
        clicked = _TOKEN.fullmatch(square.strip().lower())
        if clicked is None or (target != clicked[0] and target != clicked[1]):
            return False
    return True
