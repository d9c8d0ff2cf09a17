"""The boards notebook runs from top to bottom and draws every native game, a pgx game and an annotated board as
SVG, in a fresh run and in its stored outputs."""

from __future__ import annotations

import execute
import nbformat

NATIVE = ("tic_tac_toe", "connect_four", "gomoku9", "gomoku", "othello6", "othello", "brandub")


def test_boards_notebook_draws_every_game(tmp_path):
    notebook = execute.execute("boards", quick=True, cwd=tmp_path)
    text = execute.printed(notebook)
    for name in NATIVE:
        assert f"\n{name} after " in f"\n{text}", name
    # 7 native games, pgx:connect_four through pgx's picture, and the annotated Othello board.
    assert execute.num_boards(notebook) == 9
    assert execute.num_boards(nbformat.read(execute.NOTEBOOKS_DIR / "boards.ipynb", as_version=4)) == 9
