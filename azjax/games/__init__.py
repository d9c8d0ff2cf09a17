"""Games as pure, jittable functions: the `Game` protocol, the registry and the built-in games.

>>> game = make("tic_tac_toe")
>>> state = game.step(game.init(jax.random.key(0)), 4)   # X takes the centre

See `azjax.games.base` for the protocol and its conventions, `check_game` to validate a game of your own, and
`register` to make it available by name (also to `azjax train --game`).
"""

from azjax.games.base import Game, State, Symmetry, board_symmetries, random_opening, resolve_step
from azjax.games.boards import BoardState
from azjax.games.checker import CHECKS, CheckReport, GameCheckError, check_game
from azjax.games.connect_four import make_connect_four
from azjax.games.mnk import make_mnk_game, make_tic_tac_toe
from azjax.games.registry import make, names, register

register("tic_tac_toe", make_tic_tac_toe)
register("connect_four", make_connect_four)

__all__ = [
    "BoardState",
    "CHECKS",
    "CheckReport",
    "Game",
    "GameCheckError",
    "State",
    "Symmetry",
    "board_symmetries",
    "check_game",
    "make",
    "make_connect_four",
    "make_mnk_game",
    "make_tic_tac_toe",
    "names",
    "register",
    "random_opening",
    "resolve_step",
]
