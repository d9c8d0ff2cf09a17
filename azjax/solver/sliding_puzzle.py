"""The sliding puzzle solved exactly: the fewest moves from every solvable arrangement, by breadth-first search
from the solved board (on the host, numpy; 181,440 arrangements for the 8-puzzle, a second or two), which the
puzzle's yardstick (`Game.yardstick`) judges agents by. The search lives with the game
(`azjax.games.sliding_puzzle`, whose yardstick needs it); these are its names here, beside the other solvers.

Arrangements are indexed by their rank among the N! permutations of the board (`rank`, the Lehmer code), so
`distances(size)[rank(boards)]` is the fewest moves for each board (-1 for an unsolvable one).
"""

from azjax.games.sliding_puzzle import MAX_EXACT_SIZE, distances, fewest_moves, rank  # noqa: F401
