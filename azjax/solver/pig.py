"""Pig solved exactly: the chance that the player to move wins from every position under optimal play of both
sides, by value iteration (Neller and Presser, "Optimal Play of the Dice Game Pig", 2004), on the host in numpy;
and agents judged by it.

A position is (i, j, k): the mover's score i, the opponent's j, the turn's total k, with i + k < goal. With P the
mover's chance of winning,

    roll(i, j, k) = (1 - P(j, i, 0)) / 6 + sum over r = 2 .. 6 of P(i, j, k + r) / 6   (P = 1 once i + k + r >= goal)
    hold(i, j, k) = 1 - P(j, i + k, 0)                                                  (k > 0; a turn starts rolling)
    P(i, j, k) = max(roll, hold)

Each sweep computes the turn totals from the highest down, so that a sweep carries a whole turn's rolls; the
sweeps repeat until no value moves by more than `tolerance`. Pig to 100: the first player wins 53.06% of games
under optimal play (the published figure).

Draws by the game's move limit (`max_moves`, 4 x goal by default) are left out: optimal players end a game of
Pig to 100 within a few hundred moves but for chances far below the tolerance.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from azjax.games.pig import FACES

MAX_SWEEPS = 100_000


@dataclasses.dataclass(frozen=True)
class PigSolution:
    """The exact values of Pig to `goal`, indexed [i, j, k] (the mover's score, the opponent's, the turn's total);
    entries with i + k >= goal are 1 (the mover has won) and unused.

    Attributes:
      goal: the points that win.
      win: float64 [goal, goal, goal], the mover's chance of winning under optimal play.
      roll: float64 [goal, goal, goal], the chance of winning after rolling (then playing optimally).
      hold: float64 [goal, goal, goal], after holding (NaN at k = 0, where holding is illegal).
      sweeps: how many sweeps value iteration took.
    """

    goal: int
    win: np.ndarray
    roll: np.ndarray
    hold: np.ndarray
    sweeps: int

    def optimal_actions(self, tie: float = 0.0) -> np.ndarray:
        """bool [goal, goal, goal, 2]: the optimal actions (roll, hold) of each position; an action within `tie`
        of the best counts as optimal too."""
        best = np.fmax(self.roll, self.hold)
        roll_ok = self.roll >= best - tie
        hold_ok = np.nan_to_num(self.hold, nan=-1.0) >= best - tie
        return np.stack([roll_ok, hold_ok], axis=-1)


def _sweep(win: np.ndarray, goal: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One sweep of value iteration from `win`: (win, roll, hold), each [goal, goal, goal]."""
    opponent_start = win[:, :, 0].T  # [i, j] -> P(j, i, 0): the opponent to move with the scores swapped
    bust = (1.0 - opponent_start) / FACES
    scores = np.arange(goal)[:, None]
    new, roll, hold = np.ones_like(win), np.ones_like(win), np.full_like(win, np.nan)
    for k in range(goal - 1, -1, -1):
        value = bust.copy()
        for face in range(2, FACES + 1):
            total = k + face
            value += (1.0 if total >= goal else np.where(scores + total >= goal, 1.0, new[:, :, total])) / FACES
        roll[:, :, k] = value
        if k > 0:
            banked = np.minimum(scores[:, 0] + k, goal - 1)
            hold[:, :, k] = 1.0 - opponent_start[banked, :]
            value = np.maximum(value, hold[:, :, k])
        new[:, :, k] = np.where(scores + k >= goal, 1.0, value)
    return new, roll, hold


@functools.cache
def solve(goal: int = 100, tolerance: float = 1e-12) -> PigSolution:
    """Pig to `goal` solved (cached per goal and tolerance); see the module docstring. About a second for 100."""
    if goal < 2:
        raise ValueError(f"pig: goal must be at least 2, got {goal}")
    win = np.zeros((goal, goal, goal))
    sweeps, change = 0, np.inf
    while change >= tolerance:
        if sweeps == MAX_SWEEPS:
            raise RuntimeError(f"pig: value iteration did not settle within {MAX_SWEEPS} sweeps")
        new, roll, hold = _sweep(win, goal)
        change = float(np.max(np.abs(new - win)))
        win, sweeps = new, sweeps + 1
    return PigSolution(goal=goal, win=win, roll=roll, hold=hold, sweeps=sweeps)


def position_index(scores: np.ndarray, mover: np.ndarray, turn_total: np.ndarray) -> tuple[np.ndarray, ...]:
    """The (i, j, k) index of positions given by the players' scores [B, 2] (by player id), the mover [B] and the
    turn's total [B]."""
    scores = np.asarray(scores)
    mover = np.asarray(mover)
    rows = np.arange(len(mover))
    return scores[rows, mover], scores[rows, 1 - mover], np.asarray(turn_total)


def optimal_action_share(solution: PigSolution, index: tuple[np.ndarray, ...], actions: np.ndarray,
                         tie: float = 1e-9) -> float:
    """The share of `actions` (int [B]) that are optimal in the positions `index` (`position_index`)."""
    optimal = solution.optimal_actions(tie)[index]  # [B, 2]
    return float(np.mean(optimal[np.arange(len(actions)), np.asarray(actions)]))


__all__ = ["PigSolution", "optimal_action_share", "position_index", "solve"]
