"""`make_mnk_game`, the k-in-a-row factory behind tic-tac-toe and Gomoku: what it accepts (the rules themselves are
tested in test_tictactoe.py and test_gomoku.py)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from azjax.games import make_mnk_game


@pytest.mark.parametrize(
    ("height", "width", "k", "message"),
    [
        (3, 3, 4, r"k=4 must be from 1 to max\(height, width\) = 3, the longest line a 3 x 3 board holds"),
        (2, 5, 6, r"k=6 must be from 1 to max\(height, width\) = 5"),
        (3, 3, 0, r"k=0 must be from 1"),
        (0, 3, 3, r"the sizes positive, got \{'height': 0, 'width': 3, 'k': 3\}"),
        (3, 3, 2.5, r"whole numbers"),
    ],
)
def test_a_line_that_fits_nowhere_is_refused(height, width, k, message) -> None:
    # Without the check, k > max(height, width) gives line tables of no windows, and every first move won.
    with pytest.raises(ValueError, match=message):
        make_mnk_game("bad", height, width, k)


def test_the_longest_line_that_fits_is_accepted() -> None:
    game = make_mnk_game("three_by_five", 3, 5, 5)  # only rows hold five
    state = jax.jit(game.step)(game.init(jax.random.key(0)), jnp.int32(0))
    assert not bool(state.terminated) and int(state.current_player) == 1
