"""The sliding puzzle solved exactly: the fewest moves from every solvable arrangement, by breadth-first search
from the solved board (on the host, numpy; 181,440 arrangements for the 8-puzzle, a second or two), which the
puzzle's yardstick (`Game.yardstick`) judges agents by.

Arrangements are indexed by their rank among the N! permutations of the board (`rank`, the Lehmer code), so
`distances(size)[rank(boards)]` is the fewest moves for each board (-1 for an unsolvable one).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from azjax.games.sliding_puzzle import MAX_EXACT_SIZE, neighbour_table, solved_board


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
