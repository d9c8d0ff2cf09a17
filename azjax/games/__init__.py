"""Games as pure, jittable functions: the `Game` protocol, the registry and the built-in games.

>>> game = make("tic_tac_toe")
>>> state = game.step(game.init(jax.random.key(0)), 4)   # X takes the centre

See `azjax.games.base` for the protocol and its conventions, `check_game` to validate a game of your own, and
`register` to make it available by name; the `azjax` command also takes a game of your own by its source,
`--game MODULE:FACTORY` (see `azjax.games.registry`). `azjax.games.drawing` draws positions as SVG (`to_svg`) and
steps through a game in a notebook (`show`).
"""

from azjax.games.base import (
    Game,
    State,
    Symmetry,
    Yardstick,
    board_symmetries,
    chance_game_steps,
    chance_key_data,
    random_opening,
    resolve_step,
    return_to_value,
    value_to_return,
)
from azjax.games.boards import BoardState
from azjax.games.brandub import BrandubState, make_brandub, make_brandub_document
from azjax.games.checker import CHECKS, CheckReport, GameCheckError, GameCheckWarning, Position, check_game
from azjax.games.connect_four import make_connect_four
from azjax.games.mnk import make_gomoku, make_gomoku9, make_mnk_game, make_tic_tac_toe
from azjax.games.othello import make_othello, make_othello6
from azjax.games.pgx_adapter import from_pgx
from azjax.games.pig import make_pig
from azjax.games.registry import (
    GameNotFoundError,
    ObservationVersionError,
    canonical,
    check_known,
    definition,
    describe_known,
    is_known,
    is_source,
    load_positions,
    make,
    make_observing,
    names,
    presets,
    register,
)
from azjax.games.sliding_puzzle import make_sliding_puzzle, make_sliding_puzzle4

register("tic_tac_toe", make_tic_tac_toe)
register("connect_four", make_connect_four)
register("brandub", make_brandub)  # options: king_armed, monarch_capture, castle_passable, capture, max_moves, ...
register("brandub_document", make_brandub_document)  # brandub as its source document plays it; the same options
register("gomoku", make_gomoku)  # options: size=15, exact=False
register("gomoku9", make_gomoku9)  # make("gomoku", size=9) under its own name; option: exact=False
register("othello", make_othello)  # option: size=8
register("othello6", make_othello6)  # make("othello", size=6) under its own name
register("pig", make_pig)  # two players and a die; options: goal=100, max_moves
register("sliding_puzzle", make_sliding_puzzle)  # one player; options: size=3 (the 8-puzzle), max_moves
register("sliding_puzzle4", make_sliding_puzzle4)  # make("sliding_puzzle", size=4), the 15-puzzle, by its own name

__all__ = [
    "CHECKS",
    "BoardState",
    "BrandubState",
    "CheckReport",
    "Game",
    "GameCheckError",
    "GameCheckWarning",
    "GameNotFoundError",
    "ObservationVersionError",
    "Position",
    "State",
    "Symmetry",
    "Yardstick",
    "board_symmetries",
    "canonical",
    "chance_game_steps",
    "chance_key_data",
    "check_game",
    "check_known",
    "definition",
    "describe_known",
    "from_pgx",
    "is_known",
    "is_source",
    "load_positions",
    "make",
    "make_brandub",
    "make_brandub_document",
    "make_connect_four",
    "make_gomoku",
    "make_gomoku9",
    "make_mnk_game",
    "make_observing",
    "make_othello",
    "make_othello6",
    "make_pig",
    "make_sliding_puzzle",
    "make_sliding_puzzle4",
    "make_tic_tac_toe",
    "names",
    "presets",
    "random_opening",
    "register",
    "resolve_step",
    "return_to_value",
    "value_to_return",
]
