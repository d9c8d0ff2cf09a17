"""The results of matches: counts and intervals (`MatchResult`, `summarize`), the games as JSON records
(`game_records`) and the tables `azjax eval` prints (`format_match`, `format_elo`, `format_table`).

Statistics. A game scores 1 for a win, 1/2 for a draw, 0 for a loss. Two deterministic agents replay the same
game from the same position and seat, and a copy is no new evidence: every game's moves are recorded
(`matches.Games.moves`, with a hash of the position it started from after its opening, `Games.start`) and
`MatchResult.distinct_games` counts the different ones. The score is over all games; its 95% interval is Wilson's
score interval for a proportion over the distinct games (draws counted as half a win), and the Elo fit
(`round_robin`) weighs each pairing by its distinct games. Draws make the real spread smaller than a proportion's,
so the interval is conservative. The Elo difference is -400 log10(1/score - 1), the logistic Elo model's rating gap
at that expected score; its interval maps the score interval's ends (the intervals and the Elo model live in
`azjax.ratings`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from azjax import parallel
from azjax.matches import Games
from azjax.ratings import Z_95, EloFit, elo_from_score, wilson_interval

if TYPE_CHECKING:
    from azjax.round_robin import RoundRobin


@dataclasses.dataclass(frozen=True)
class MatchResult:
    """A match between agents A and B, from A's side."""

    name_a: str
    name_b: str
    wins: int
    draws: int
    losses: int
    wins_as_first: int  # A's results when A moved first (player 0) ...
    draws_as_first: int
    losses_as_first: int  # ... and the rest of A's results were as player 1
    mean_length: float  # moves per game, openings included
    distinct_games: int  # games that differ in their moves or A's seat: the evidence the intervals count

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """A's score: (wins + draws / 2) / games."""
        return (self.wins + 0.5 * self.draws) / max(self.games, 1)

    @property
    def score_interval(self) -> tuple[float, float]:
        """The Wilson 95% interval of `score`, over the distinct games (copies of a game are no new evidence)."""
        return wilson_interval(self.score, self.distinct_games)

    @property
    def elo(self) -> float:
        """A's rating minus B's, from the score."""
        return elo_from_score(self.score)

    @property
    def elo_interval(self) -> tuple[float, float]:
        low, high = self.score_interval
        return elo_from_score(low), elo_from_score(high)

    def to_dict(self) -> dict:
        low, high = self.score_interval
        elo_low, elo_high = self.elo_interval
        return dict(
            dataclasses.asdict(self),
            games=self.games,
            score=self.score,
            score_low=low,
            score_high=high,
            elo=self.elo,
            elo_low=elo_low,
            elo_high=elo_high,
        )


def summarize(games: Games, name_a: str = "A", name_b: str = "B") -> MatchResult:
    """Counts a batch of games (on the host) into a `MatchResult`; games without a `start` hash (as
    `matches.play_match` returns them) are told apart by all their moves. Games split over several processes'
    devices are gathered first (a collective there: every process calls this)."""
    outcome, seat, length, moves, opening_length = (np.asarray(x) for x in parallel.fetch(
        (games.outcome, games.seat, games.length, games.moves, games.opening_length)))
    start = None if games.start is None else np.asarray(parallel.fetch(games.start))
    first = seat == 0
    return MatchResult(
        name_a=name_a,
        name_b=name_b,
        wins=int(np.sum(outcome > 0)),
        draws=int(np.sum(outcome == 0)),
        losses=int(np.sum(outcome < 0)),
        wins_as_first=int(np.sum((outcome > 0) & first)),
        draws_as_first=int(np.sum((outcome == 0) & first)),
        losses_as_first=int(np.sum((outcome < 0) & first)),
        mean_length=float(np.mean(length)) if length.size else 0.0,
        distinct_games=count_distinct(seat, moves, start=start, opening_length=opening_length),
    )


def count_distinct(seat: np.ndarray, moves: np.ndarray, *, start: np.ndarray | None = None,
                   opening_length: np.ndarray | None = None) -> int:
    """How many of the games (`Games.seat` [N], `Games.moves` [N, L]) differ in A's seat, in the position they
    started from after their opening (`Games.start` [N, 2]) or in their moves after it (`Games.opening_length`
    [N] moves of each are the opening's): two move orders to one position are one start, from which deterministic
    agents play one game. Without `start` and `opening_length`, games differ by their moves from the first."""
    if not seat.size:
        return 0
    columns = [seat[:, None].astype(np.int64)]
    if start is not None and opening_length is not None:
        after = opening_length[:, None] + np.arange(moves.shape[1])[None, :]
        moves = np.where(after < moves.shape[1],
                         np.take_along_axis(moves, np.minimum(after, moves.shape[1] - 1), axis=1), -1)
        columns.append(start.astype(np.int64))
    columns.append(moves.astype(np.int64))
    return len(np.unique(np.concatenate(columns, axis=1), axis=0))


RECORD_FORMAT = "azjax-games"  # the "format" of a file of recorded games (`azjax eval --record`, `azjax serve`)
RECORD_VERSION = 1


def game_records(games: Games, name_a: str, name_b: str) -> list[dict]:
    """The games of a match between agents `name_a` and `name_b` as JSON-ready dicts, one per game: "players"
    (the two names by seat, the first moved first), "moves" (the actions in order, the opening's first),
    "opening_moves" (how many of them are the opening's) and "outcome" (for the player who moved first: +1 won,
    0 draw, -1 lost). Games split over several processes' devices are gathered first (a collective there: every
    process calls this)."""
    outcome, seat, length, moves, opening_length = (np.asarray(x) for x in parallel.fetch(
        (games.outcome, games.seat, games.length, games.moves, games.opening_length)))
    records = []
    for i in range(len(seat)):
        a_first = int(seat[i]) == 0
        records.append({
            "players": [name_a, name_b] if a_first else [name_b, name_a],
            "moves": [int(action) for action in moves[i, : int(length[i])]],
            "opening_moves": int(opening_length[i]),
            "outcome": float(outcome[i] if a_first else -outcome[i]),
        })
    return records


# --------------------------------------------------------------------------------------------------------------
# Tables


def _signed(value: float, digits: int = 0) -> str:
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return f"{value:+.{digits}f}"


def match_header(width: int = 24) -> str:
    """The column titles of `format_match` lines."""
    return (
        f"{'agent A':<{width}} {'agent B':<{width}} {'W':>5} {'D':>5} {'L':>5} {'distinct':>8}  {'score':>6}  "
        f"{'95% CI':<13}  "
        f"{'Elo A-B':>7}  {'95% CI':<13}  {'as 1st W/D/L':<14} {'as 2nd W/D/L'}"
    )


def format_match(match: MatchResult, width: int = 24) -> str:
    """One line: A, B, A's wins, draws and losses, the number of distinct games, score with its 95% CI, the Elo
    difference with its CI, and the results per seat."""
    low, high = match.score_interval
    elo_low, elo_high = match.elo_interval
    first = f"{match.wins_as_first}/{match.draws_as_first}/{match.losses_as_first}"
    second = (
        f"{match.wins - match.wins_as_first}/{match.draws - match.draws_as_first}/"
        f"{match.losses - match.losses_as_first}"
    )
    return (
        f"{match.name_a:<{width}} {match.name_b:<{width}} {match.wins:>5} {match.draws:>5} {match.losses:>5} "
        f"{match.distinct_games:>8}  "
        f"{match.score:>6.3f}  [{low:.3f}, {high:.3f}]  {_signed(match.elo):>7}  "
        f"{'[' + _signed(elo_low) + ', ' + _signed(elo_high) + ']':<13}  {first:<14} {second:<14}"
    ).rstrip()


def format_elo(names: Sequence[str], fit: EloFit, matches: Sequence[MatchResult], width: int = 24) -> str:
    """The Elo table, best first: rank, agent, rating +- 1.96 standard errors, total score, games and distinct
    games."""
    points, games, distinct = np.zeros(len(names)), np.zeros(len(names)), np.zeros(len(names))
    for match in matches:
        for name, won in ((match.name_a, match.wins), (match.name_b, match.losses)):
            i = names.index(name)
            points[i] += won + 0.5 * match.draws
            games[i] += match.games
            distinct[i] += match.distinct_games
    lines = [f"{'rank':<5} {'agent':<{width}} {'Elo':>7} {'+-95%':>7} {'score':>7} {'games':>7} {'distinct':>8}"]
    order = sorted(range(len(names)), key=lambda i: -fit.ratings[i])
    for rank, i in enumerate(order, 1):
        error = fit.standard_errors[i]
        error_text = "anchor" if i == fit.anchor else ("-" if not np.isfinite(error) else f"{Z_95 * error:.0f}")
        score = points[i] / games[i] if games[i] else float("nan")
        lines.append(
            f"{rank:<5} {names[i]:<{width}} {_signed(fit.ratings[i]):>7} {error_text:>7} {score:>7.3f} "
            f"{int(games[i]):>7} {int(distinct[i]):>8}"
        )
    return "\n".join(lines)


def format_table(table: RoundRobin) -> str:
    """Every pairing, then the Elo table."""
    width = max(12, *(len(n) for n in table.names))
    lines = [match_header(width)] + [format_match(m, width) for m in table.matches]
    lines += ["", f"Elo (Bradley-Terry maximum likelihood, {table.names[table.elo.anchor]} = 0):"]
    lines.append(format_elo(table.names, table.elo, table.matches, width))
    return "\n".join(lines)
