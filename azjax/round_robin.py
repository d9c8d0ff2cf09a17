"""Round robins: every pair of K agents plays a match (`arena.play`), then a Bradley-Terry Elo fit.

    table = round_robin(key, game, [random_bot(), onestep_bot(game), uct_bot(game, 100)], num_games=200)
    print(results.format_table(table))      # every pairing, then the Elo table (random = 0)

The fit is by maximum likelihood under the Bradley-Terry (logistic Elo) model, draws counted as half a win and
half a loss, each pairing weighed by its distinct games (`results.MatchResult.distinct_games`), with the first
`random` agent (else the first agent) anchored at 0; see `azjax.ratings.fit_elo`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence

import jax
import numpy as np
from jax.sharding import Mesh

from azjax.arena import play
from azjax.bots import AgentFn, Bot, random_agent
from azjax.games import Game
from azjax.matches import Games
from azjax.progress import MatchProgress
from azjax.ratings import EloFit, fit_elo
from azjax.results import MatchResult


@dataclasses.dataclass(frozen=True)
class RoundRobin:
    """Every pairing of K agents, and their Elo fit."""

    names: list[str]
    matches: list[MatchResult]  # one per pair (i < j), from agent i's side
    elo: EloFit

    def to_dict(self) -> dict:
        return {
            "agents": self.names,
            "matches": [m.to_dict() for m in self.matches],
            "elo": {
                name: {"elo": float(r), "standard_error": float(e)}
                for name, r, e in zip(self.names, self.elo.ratings, self.elo.standard_errors, strict=True)
            },
            "anchor": self.names[self.elo.anchor],
        }


def score_matrices(names: Sequence[str], matches: Sequence[MatchResult]) -> tuple[np.ndarray, np.ndarray]:
    """The [K, K] points and games matrices of `fit_elo` from pairwise results, each pairing weighed by its
    distinct games: its score times `distinct_games` points out of `distinct_games`."""
    index = {name: i for i, name in enumerate(names)}
    scores = np.zeros((len(names), len(names)))
    games = np.zeros_like(scores)
    for match in matches:
        i, j = index[match.name_a], index[match.name_b]
        points = match.score * match.distinct_games
        scores[i, j] += points
        scores[j, i] += match.distinct_games - points
        games[i, j] += match.distinct_games
        games[j, i] += match.distinct_games
    return scores, games


def round_robin(
    key: jax.Array,
    game: Game,
    bots: Sequence[Bot],
    num_games: int,
    *,
    opening_moves: int = 0,
    opening_agent: AgentFn = random_agent,
    prior_draws: float = 1.0,
    on_match: Callable[[MatchResult], None] | None = None,
    mesh: Mesh | None = None,
    on_games: Callable[[str, str, Games], None] | None = None,
    progress: MatchProgress | None = None,
) -> RoundRobin:
    """Every pair of `bots` plays `num_games` games; then a Bradley-Terry Elo fit, anchored at the first bot
    named "random" (else the first bot). `prior_draws` (one virtual draw per pairing by default) keeps an
    undefeated agent's rating finite; `on_match` is called after each pairing (for progress), `on_games` with
    the names of each pairing's agents and its games (to record them: `results.game_records`); `progress` shows
    each match as it plays."""
    names = [bot.name for bot in bots]
    if len(set(names)) != len(names):
        raise ValueError(f"the bots' names must differ, got {names}")
    matches = []
    pair_keys = jax.random.split(key, max(len(bots) * (len(bots) - 1) // 2, 1))
    pairs = [(i, j) for i in range(len(bots)) for j in range(i + 1, len(bots))]
    for pair_key, (i, j) in zip(pair_keys, pairs, strict=False):  # one key even for no pair
        match = play(pair_key, game, bots[i], bots[j], num_games, opening_moves=opening_moves,
                     opening_agent=opening_agent, mesh=mesh, progress=progress,
                     on_games=None if on_games is None else functools.partial(on_games, names[i], names[j]))
        matches.append(match)
        if on_match is not None:
            on_match(match)
    anchor = names.index("random") if "random" in names else 0
    scores, games = score_matrices(names, matches)
    return RoundRobin(names=names, matches=matches, elo=fit_elo(scores, games, anchor=anchor,
                                                                  prior_draws=prior_draws))
