"""Ratings from game results: Wilson score intervals for a match's score, the logistic Elo model, and a
maximum-likelihood Bradley-Terry fit of a round robin with standard errors. Pure numpy; a match's results
(`azjax.results`) and round robins (`azjax.round_robin`) call these.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

Z_95 = 1.959963984540054  # the standard normal's 97.5% quantile


def wilson_interval(score: float, num_games: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson's score interval for a proportion `score` observed over `num_games` trials (95% by default).

    A score of 1 has the upper bound 1 exactly, and a score of 0 the lower bound 0 (so their Elo bounds are +-inf
    alike); the rounding of centre +- half alone leaves either a hair inside, or not, depending on `num_games`.
    """
    if num_games <= 0:
        return 0.0, 1.0
    n = num_games
    centre = (score + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(score * (1 - score) / n + z * z / (4 * n * n))
    low = 0.0 if score <= 0.0 else max(0.0, centre - half)
    high = 1.0 if score >= 1.0 else min(1.0, centre + half)
    return low, high


def elo_from_score(score: float) -> float:
    """The Elo difference whose expected score is `score`: -400 log10(1/score - 1); +-inf at 1 and 0."""
    if score >= 1.0:
        return math.inf
    if score <= 0.0:
        return -math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def expected_score(elo_difference: float | np.ndarray) -> float | np.ndarray:
    """The logistic Elo model: the expected score of a player rated `elo_difference` above its opponent."""
    return 1.0 / (1.0 + 10.0 ** (-np.asarray(elo_difference) / 400.0))


@dataclasses.dataclass(frozen=True)
class EloFit:
    """Bradley-Terry ratings of K agents."""

    ratings: np.ndarray  # [K] Elo, the anchor at 0
    standard_errors: np.ndarray  # [K] of each rating relative to the anchor (0 for the anchor)
    anchor: int


def fit_elo(
    scores: np.ndarray,
    games: np.ndarray,
    *,
    anchor: int = 0,
    prior_draws: float = 0.0,
    max_iterations: int = 100,
) -> EloFit:
    """Maximum-likelihood Elo ratings under the Bradley-Terry model on the logistic Elo scale.

    P(i beats j) = 1 / (1 + 10^((r_j - r_i) / 400)); a draw counts as half a win and half a loss, so the log
    likelihood is sum_{i != j} scores[i, j] * log P(i beats j). It is concave in the ratings; Newton's method
    maximises it with `ratings[anchor]` fixed at 0.

    Args:
      scores: [K, K], points agent i scored against agent j (wins + draws / 2); the diagonal is ignored.
      games: [K, K] symmetric, games played between i and j.
      anchor: the agent rated 0.
      prior_draws: virtual draws added to every pair that played. They keep every rating finite when an agent
        won (or lost) all its games; 0 gives the plain maximum-likelihood fit.
    Returns:
      The ratings and their standard errors (from the inverse Hessian, relative to the anchor). Without prior
      draws, an agent that won every game it played (among the agents not already set aside) is rated +inf and
      one that lost every game -inf, with standard error NaN; the rest are fitted among themselves.
    """
    scores = np.asarray(scores, np.float64).copy()
    games = np.asarray(games, np.float64).copy()
    num_agents = scores.shape[0]
    np.fill_diagonal(scores, 0.0)
    np.fill_diagonal(games, 0.0)
    played = games > 0
    scores += 0.5 * prior_draws * played
    games += prior_draws * played
    sign = _unbounded(scores, games)
    ratings = np.zeros(num_agents)
    errors = np.zeros(num_agents)
    finite = np.flatnonzero(sign == 0)
    if finite.size:
        base = anchor if sign[anchor] == 0 else int(finite[0])
        ratings[finite], errors[finite] = _newton(scores[np.ix_(finite, finite)], games[np.ix_(finite, finite)],
                                                  int(np.flatnonzero(finite == base)[0]), max_iterations)
        if sign[anchor] != 0:  # the anchor won or lost everything: every finite agent is infinitely far from it
            ratings[finite], errors[finite] = -sign[anchor] * np.inf, np.nan
    ratings = np.where(sign != 0, np.copysign(np.inf, sign), ratings)
    errors = np.where(sign != 0, np.nan, errors)
    if sign[anchor] != 0:
        ratings[anchor], errors[anchor] = 0.0, 0.0
    return EloFit(ratings=ratings, standard_errors=errors, anchor=anchor)


def _unbounded(scores: np.ndarray, games: np.ndarray) -> np.ndarray:
    """[K] +1 for agents that won every game they played, -1 for those that lost every one, 0 for the rest;
    repeated after setting those aside, since an agent may be unbeaten only by the remaining ones. Each round sets
    aside at least one agent or ends, so it ends within K rounds (also when every agent is set aside: A won all
    its games against B, the only other agent)."""
    sign = np.zeros(scores.shape[0], np.int64)
    while True:
        rest = sign == 0
        total = (games * rest[None, :]).sum(axis=1)
        points = (scores * rest[None, :]).sum(axis=1)
        new = rest & (total > 0) & ((points >= total) | (points <= 0))
        if not new.any():
            return sign
        sign[new & (points >= total)] = 1
        sign[new & (points <= 0)] = -1


def _newton(scores: np.ndarray, games: np.ndarray, anchor: int, max_iterations: int) -> tuple[np.ndarray, np.ndarray]:
    """Newton's method on the Bradley-Terry log likelihood: ratings [K] with ratings[anchor] = 0, and standard
    errors [K] from the inverse of the negative Hessian."""
    scale = math.log(10.0) / 400.0
    num_agents = scores.shape[0]
    free = np.array([i for i in range(num_agents) if i != anchor], np.int64)
    ratings = np.zeros(num_agents)

    def gradient_hessian(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = 1.0 / (1.0 + np.exp(-scale * (r[:, None] - r[None, :])))  # P(i beats j)
        gradient = scale * np.sum(scores - games * p, axis=1)
        weights = scale * scale * games * p * p.T
        return gradient, weights - np.diag(weights.sum(axis=1))

    errors = np.zeros(num_agents)
    if free.size == 0:
        return ratings, errors
    for _ in range(max_iterations):
        gradient, hessian = gradient_hessian(ratings)
        step = np.linalg.lstsq(-hessian[np.ix_(free, free)], gradient[free], rcond=None)[0]
        ratings[free] += np.clip(step, -400.0, 400.0)  # damped: the quadratic model is poor far from the optimum
        if np.max(np.abs(step)) < 1e-9:
            break
    _, hessian = gradient_hessian(ratings)
    covariance = np.linalg.pinv(-hessian[np.ix_(free, free)])
    errors[free] = np.sqrt(np.maximum(np.diag(covariance), 0.0))
    return ratings, errors
