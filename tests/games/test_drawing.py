"""Boards drawn as SVG (`Game.draw`, `azjax.games.drawing`): every native game draws random positions as well-formed
SVG with one piece element per piece of the state, the last move marked and the annotations written; the text
fallback escapes XML; `show` embeds every frame of a record with its controls; pgx games draw with pgx.

Each game's step is jitted once for the module and a few random positions are played on the host.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

import jax
import numpy as np
import pytest

from azjax import games
from azjax.games import drawing

NATIVE_GAMES = ("tic_tac_toe", "connect_four", "gomoku9", "othello6", "othello", "brandub", "gomoku")
NUM_POSITIONS = 5


@dataclasses.dataclass(frozen=True)
class Position:
    state: games.State
    last_move: int | None  # the action that led to `state`


@pytest.fixture(scope="module", params=NATIVE_GAMES)
def played(request) -> tuple[games.Game, list[Position]]:
    """A game and NUM_POSITIONS positions of random play (the start, then 2, 4, ... random moves; a move that would
    end the game is played too, so that finished positions are drawn as well)."""
    game = games.make(request.param)
    step = jax.jit(game.step)
    rng = np.random.default_rng(sum(map(ord, request.param)))
    state, last_move = game.init(jax.random.key(0)), None
    positions = [Position(state, None)]
    while len(positions) < NUM_POSITIONS:
        for _ in range(2):
            legal = np.flatnonzero(np.asarray(state.legal_action_mask))
            if bool(state.terminated) or len(legal) == 0:
                break
            last_move = int(rng.choice(legal))
            state = step(state, last_move)
        positions.append(Position(state, last_move))
    return game, positions


def parse(svg: str) -> ET.Element:
    assert svg.startswith("<svg")
    root = ET.fromstring(svg)  # raises on malformed XML
    assert root.tag.endswith("svg")
    return root


def with_class(root: ET.Element, name: str) -> list[ET.Element]:
    """The elements whose class attribute holds the class `name`."""
    return [e for e in root.iter() if name in e.get("class", "").split()]


def texts(root: ET.Element) -> list[str]:
    return ["".join(e.itertext()) for e in root.iter() if e.tag.endswith("text")]


def expected_pieces(game: games.Game, state) -> dict[str, int]:
    """The number of pieces of each kind on the state's board: {"p0": ..., "p1": ..., "king": ...}."""
    board = np.asarray(state.board)
    if game.name.startswith("brandub"):  # 1 attacker (player 0), 2 defender, 3 monarch (both player 1)
        return {"p0": int(np.sum(board == 1)), "p1": int(np.sum(board >= 2)), "king": int(np.sum(board == 3))}
    return {"p0": int(np.sum(board == 1)), "p1": int(np.sum(board == 2)), "king": 0}


def test_every_native_game_draws(played):
    game, _ = played
    assert game.draw is not None


def test_positions_draw_as_svg_with_one_element_per_piece(played):
    game, positions = played
    assert len(positions) == NUM_POSITIONS
    for position in positions:
        root = parse(game.draw(position.state))
        drawn = {kind: len(with_class(root, kind)) for kind in ("p0", "p1", "king")}
        assert drawn == expected_pieces(game, position.state), game.render(position.state)
        assert all("piece" in e.get("class", "").split() for kind in ("p0", "p1") for e in with_class(root, kind))
        assert root.get("viewBox") is not None
        assert not with_class(root, "last-move")


def test_the_last_move_is_marked(played):
    game, positions = played
    assert len(positions[1:]) == NUM_POSITIONS - 1 > 0
    for position in positions[1:]:
        root = parse(drawing.to_svg(game, position.state, last_move=position.last_move))
        assert with_class(root, "last-move"), game.render(position.state)


def test_annotations_are_written_on_the_board(played):
    game, positions = played
    state = positions[2].state
    legal = np.flatnonzero(np.asarray(state.legal_action_mask))[:3]
    annotations = {int(a): f"{10 + i}%" for i, a in enumerate(legal)}
    root = parse(game.draw(state, annotations=annotations))
    assert sorted(e.text for e in with_class(root, "annotation")) == sorted(annotations.values())


def test_othello_shows_the_legal_placements_as_dots():
    game = games.make("othello6")
    state = game.init(jax.random.key(0))
    root = parse(game.draw(state))
    assert len(with_class(root, "legal")) == int(np.sum(np.asarray(state.legal_action_mask)[:-1])) == 4
    passed = parse(game.draw(state, last_move=36, annotations={36: "pass share"}))  # the pass: said below the board
    assert any("last move: pass" in t and "pass share" in t for t in texts(passed))


def test_an_action_out_of_range_is_refused():
    game = games.make("tic_tac_toe")
    state = game.init(jax.random.key(0))
    with pytest.raises(ValueError, match="out of range"):
        game.draw(state, last_move=9)
    with pytest.raises(ValueError, match="out of range"):
        game.draw(state, annotations={-1: "x"})


def test_a_game_without_draw_is_shown_as_escaped_text():
    ttt = games.make("tic_tac_toe")
    game = dataclasses.replace(ttt, draw=None, render=lambda state: "a < b & c > d\n  . X .")
    svg = drawing.to_svg(game, game.init(jax.random.key(0)), last_move=4, annotations={0: "<41%>"})
    assert "a &lt; b &amp; c &gt; d" in svg and "&lt;41%&gt;" in svg
    lines = texts(parse(svg))
    assert len(lines) == 1  # one <text> block, a <tspan> per line
    assert "a < b & c > d" in lines[0] and "  . X ." in lines[0]
    assert "last move: b2" in lines[0] and "a1: <41%>" in lines[0]


def test_show_one_state_is_its_picture():
    game = games.make("connect_four")
    state = game.init(jax.random.key(0))
    html = drawing.show(game, state, annotations={3: "55%"})._repr_html_()
    assert html.count("<svg") == 1 and "55%" in html and "<button" not in html


def record_of_three(game: games.Game) -> tuple[list, list[int]]:
    step = jax.jit(game.step)
    states, actions = [game.init(jax.random.key(0))], [3, 4]
    for action in actions:
        states.append(step(states[-1], action))
    return states, actions


def test_show_a_record_steps_through_its_frames():
    game = games.make("connect_four")
    states, actions = record_of_three(game)
    view = drawing.show(game, states, actions=actions)
    html = view._repr_html_()
    assert len(view) == 3 and html.count("<svg") == 3
    assert "Previous" in html and "Next" in html and 'type="range"' in html and "<script>" in html
    assert "move 1: d" in html and "move 2: e" in html
    frames = [parse(svg) for svg in view.frames]
    assert [bool(with_class(f, "last-move")) for f in frames] == [False, True, True]
    assert html.count('style="display:block"') == 1  # only the first frame is visible
    ids = {part.split('"')[0] for part in html.split('id="')[1:]}
    assert ids.isdisjoint(part.split('"')[0] for part in view._repr_html_().split('id="')[1:])  # new ids each time


def test_show_takes_a_record_batched_along_time():
    game = games.make("tic_tac_toe")
    states, _ = record_of_three(game)
    record = jax.tree.map(lambda *leaves: np.stack(leaves), *states)  # [T=3, ...]
    per_state = [None, {0: "12%"}, None]
    html = drawing.show(game, record, annotations=per_state)._repr_html_()
    assert html.count("<svg") == 3 and "12%" in html
    with pytest.raises(ValueError, match="2 actions"):
        drawing.show(game, record, actions=[1])
    with pytest.raises(ValueError, match="list of 3"):
        drawing.show(game, record, annotations={0: "12%"})


def test_pgx_games_draw_with_pgx():
    pytest.importorskip("pgx")
    game = games.make("pgx:tic_tac_toe")
    state = jax.jit(game.step)(game.init(jax.random.key(0)), 4)
    svg = drawing.to_svg(game, state)
    assert svg == state.pgx_state.to_svg()
    parse(svg)
    noted = parse(drawing.to_svg(game, state, last_move=4, annotations={0: "41%"}))
    assert with_class(noted, "last-move") and any("0: 41%" in t for t in texts(noted))
    assert len([e for e in noted.iter() if e.tag.endswith("svg")]) == 2  # pgx's picture, nested


def test_a_views_plain_text_is_short():
    game = games.make("tic_tac_toe")
    state = game.init(jax.random.key(0))
    view = drawing.show(game, [state, game.step(state, np.int32(4))])
    assert repr(view) == "<BoardView of 2 positions>" and "<svg" not in repr(view)


# --------------------------------------------------------------------------------------------------------------
# Pig: no board; score bars, the die, the actions as boxes


@pytest.fixture(scope="module")
def pig() -> games.Game:
    return games.make("pig")


def test_pig_draws_the_scores_the_turn_total_and_the_die(pig):
    state = pig.from_ascii("pig to 100, player 1 (O) to move\nX 37  O 52  turn total 8  last roll 4")
    root = parse(drawing.to_svg(pig, state, last_move=0, annotations={0: "61%", 1: "39%"}))
    assert [e.get("data-score") for e in with_class(root, "score")] == ["37", "52"]
    assert [("p0" in e.get("class"), "p1" in e.get("class")) for e in with_class(root, "piece")] == [
        (True, False), (False, True)]
    pending = with_class(root, "turn-total")
    assert len(pending) == 1 and "p1" in pending[0].get("class").split() and pending[0].get("data-turn-total") == "8"
    (die,) = with_class(root, "die")
    assert die.get("data-face") == "4" and len(with_class(die, "pip")) == 4
    assert "52 +8" in texts(root) and "turn total 8" in texts(root) and "goal 100" in texts(root)
    assert [e.text for e in with_class(root, "status")] == ["O to move"]
    assert sorted(e.text for e in with_class(root, "annotation")) == ["39%", "61%"]
    (ring,) = with_class(root, "last-move")
    roll_box = next(e for e in with_class(root, "action") if "roll" in e.get("class").split())
    assert float(ring.get("x")) < float(roll_box.get("x")) < float(ring.get("x")) + float(ring.get("width"))
    assert not with_class(parse(pig.draw(state)), "last-move")


def test_pig_before_the_first_roll_a_bust_and_the_ends(pig):
    start = pig.init(jax.random.key(0))
    root = parse(pig.draw(start))
    assert with_class(root, "die")[0].get("data-face") == "0" and not with_class(root, "pip")
    assert "no roll yet" in texts(root) and [e.text for e in with_class(root, "status")] == ["X to move"]
    assert with_class(root, "hold")[0].get("opacity") == "0.35"  # holding a total of 0 is illegal
    bust = pig.step_outcome(start, 0, 0)  # a 1
    root = parse(pig.draw(bust, last_move=0))
    assert with_class(root, "die")[0].get("data-face") == "1" and "a 1: turn lost" in texts(root)
    html = drawing.show(pig, [start, bust], actions=[0])._repr_html_()
    assert html.count("<svg") == 2 and "move 1: roll" in html
    near = pig.from_ascii("pig to 100, player 0 (X) to move\nX 97  O 52  turn total 0  last roll 3")
    won = pig.step_outcome(near, 0, 5)  # a 6: 103 points
    root = parse(pig.draw(won, last_move=0))
    assert [e.text for e in with_class(root, "status")] == ["X wins"]
    assert with_class(root, "score")[0].get("data-score") == "103"
    short = games.make_pig(goal=10, max_moves=1)
    drawn = short.step_outcome(short.init(jax.random.key(0)), 0, 2)
    assert [e.text for e in with_class(parse(short.draw(drawn)), "status")] == ["draw after 1 move"]
    assert "goal 10" in texts(parse(short.draw(drawn)))


def test_the_sliding_puzzle_draws_its_tiles_the_tile_slid_and_hints_on_the_tiles_they_move():
    puzzle = games.make("sliding_puzzle")
    state = puzzle.from_ascii("1 2 3\n4 . 6\n7 5 8")
    root = parse(puzzle.draw(state))
    assert sorted(int(e.get("data-tile")) for e in with_class(root, "tile")) == list(range(1, 9))
    assert len(with_class(root, "home")) == 6  # all but 5 and 8 sit where the solved board has them
    assert len(with_class(root, "empty")) == 1 and not with_class(root, "last-move")
    down = puzzle.step(state, puzzle.string_to_action("down"))  # the empty cell moves down: the 5 slides up
    root = parse(drawing.to_svg(puzzle, down, last_move=1, annotations={0: "80%", 3: "20%"}))
    ring = with_class(root, "last-move")
    assert len(ring) == 1 and float(ring[0].get("x")) < 8 + 2 * 56 and float(ring[0].get("y")) < 8 + 2 * 56
    assert sorted(e.text for e in with_class(root, "annotation")) == ["20%", "80%"]
    assert [e.text for e in with_class(root, "status")] == ["moves 1 of 40"]
    solved = puzzle.step(down, puzzle.string_to_action("right"))
    assert [e.text for e in with_class(parse(puzzle.draw(solved)), "status")] == ["solved in 2 moves"]
    assert len(with_class(parse(puzzle.draw(solved)), "home")) == 8
