"""Labelled positions: solved positions of a game, grouped in strata, that judge an agent's moves and values.

A game with labelled positions gets the same figures everywhere (training's evaluation, `azjax eval RUN
--positions`, experiments/studies/strength/learns.py): the *optimal-move rate*, the share of positions where an agent's
move keeps the game-theoretic outcome (a won position stays won, a drawn one drawn), per stratum with a Wilson interval,
and the *value accuracy*, the share where the sign of the value head (-1/3 and 1/3 split loss, draw and win) names the
outcome.

    labelled = positions.load("connect_four")        # None for a game without labelled positions
    report = positions.judge(labelled, actions)      # actions int [N]: the move an agent plays in each position
    hard = labelled.only(["begin-hard"])            # a subset: the positions of some strata

Built in: tic-tac-toe (every one of its 4520 non-terminal positions, one stratum "all", from the exhaustive
solver) and Connect Four (six sets of 1000 positions reached by uniformly random play, shipped with the package
and stratified as Pascal Pons's benchmark sets: see `azjax.solver.connect_four_sets`; and, as the set named
"pons", Pons's six published sets themselves, labelled the same way). A user's game gets the figures by
`register(game_name, loader)`, and other sets by `register(game_name, loader, name=...)`.

Perspective: every outcome is for the player to move in the position: +1 a win, 0 a draw, -1 a loss under perfect
play by both sides. An action's outcome is the mover's outcome after playing it.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from azjax import text
from azjax.games import Game, State
from azjax.ratings import wilson_interval

ILLEGAL = -2  # the outcome entry of an illegal action


@dataclasses.dataclass(frozen=True)
class LabelledPositions:
    """Solved positions of one game. N positions, A actions, S strata.

    Attributes:
      states: State [N], the positions (non-terminal), batched on a leading axis.
      action_outcomes: int8 [N, A], the outcome for the player to move of playing each action, then perfect play:
        +1 win, 0 draw, -1 loss; `ILLEGAL` (-2) for illegal actions.
      stratum: int32 [N], each position's index into `strata`.
      strata: the strata's names, e.g. ("begin-easy", ..., "end-easy").
      scores: int8 [N] exact scores for the player to move where the game has them (Connect Four: Pons's
        convention, see `azjax.solver.connect_four`), else None.
    """

    states: State
    action_outcomes: np.ndarray
    stratum: np.ndarray
    strata: tuple[str, ...]
    scores: np.ndarray | None = None

    @property
    def num_positions(self) -> int:
        return len(self.stratum)

    @property
    def outcomes(self) -> np.ndarray:
        """int8 [N]: each position's outcome for the player to move (the best of its actions')."""
        return self.action_outcomes.max(axis=1)

    @property
    def optimal_actions(self) -> np.ndarray:
        """bool [N, A]: the legal actions that keep the position's outcome."""
        return self.action_outcomes == self.outcomes[:, None]

    @property
    def can_err(self) -> np.ndarray:
        """bool [N]: positions where some legal action changes the outcome (a mistake is possible)."""
        legal = self.action_outcomes != ILLEGAL
        return np.any(legal & ~self.optimal_actions, axis=1)

    def only(self, strata: Sequence[str]) -> LabelledPositions:
        """The positions of the named strata alone, e.g. `only(["begin-hard"])` to judge a costly search where it
        is not yet perfect; the strata keep this set's order.

        Raises:
          ValueError: a name is not one of `strata` (the message names those there are), or none is given.
        """
        unknown = [name for name in strata if name not in self.strata]
        if unknown or not strata:
            raise ValueError(f"no stratum named {', '.join(map(repr, unknown)) or 'given'}; the strata are "
                             f"{', '.join(self.strata)}")
        kept = [index for index, name in enumerate(self.strata) if name in strata]
        chosen = self.take(np.flatnonzero(np.isin(self.stratum, kept)))
        renumber = np.full(len(self.strata), -1, np.int32)
        renumber[kept] = np.arange(len(kept), dtype=np.int32)
        return dataclasses.replace(chosen, stratum=renumber[chosen.stratum],
                                   strata=tuple(self.strata[index] for index in kept))

    def take(self, rows: np.ndarray) -> LabelledPositions:
        """The positions at `rows` (indices into this set, in their order), e.g. `take(np.arange(0, n, 10))` for
        every tenth; each keeps its stratum, labels and score, and the strata stay this set's."""
        rows = np.asarray(rows)
        if rows.dtype.kind not in "iu" or rows.ndim != 1:
            raise ValueError(f"rows must be a 1-D array of position indices, got dtype {rows.dtype} and shape "
                             f"{rows.shape}")
        if rows.size and not (0 <= rows.min() and rows.max() < self.num_positions):
            raise ValueError(f"rows must lie in [0, {self.num_positions}) (the set's positions), got "
                             f"{rows.min()}..{rows.max()}")
        return dataclasses.replace(
            self,
            states=jax.tree.map(lambda leaf: leaf[rows], self.states),
            action_outcomes=self.action_outcomes[rows],
            stratum=self.stratum[rows],
            scores=None if self.scores is None else self.scores[rows],
        )


# --------------------------------------------------------------------------------------------------------------
# The registry of games with labelled positions.

# {(game name, set name): loader}; a game's own set is named None.
_LOADERS: dict[tuple[str, str | None], Callable[[], LabelledPositions]] = {}


def register(game_name: str, loader: Callable[[], LabelledPositions], *, name: str | None = None,
             overwrite: bool = False) -> None:
    """Makes `load(game_name)` return `loader()` (called once, then cached), so that runs of the game report the
    optimal-move rate and value accuracy on those positions. With `name`, another set of the game instead, which
    `load(game_name, name)` and `azjax eval --positions --position-set NAME` judge on."""
    if not overwrite and (game_name, name) in _LOADERS:
        which = f"set {name!r} of {game_name!r}" if name else f"labelled positions for {game_name!r}"
        raise ValueError(f"{which} are already registered; pass overwrite=True")
    _LOADERS[(game_name, name)] = loader
    _load_cached.cache_clear()


def has_positions(game_name: str, name: str | None = None) -> bool:
    """Whether `load(game_name, name)` gives positions (without loading them)."""
    return (game_name, name) in _LOADERS


def set_names(game_name: str) -> list[str]:
    """The game's other named sets (its own set, None, aside)."""
    return sorted(name for game, name in _LOADERS if game == game_name and name is not None)


def load(game_name: str, name: str | None = None) -> LabelledPositions | None:
    """The labelled positions of a game (with `name`, that set of it), or None when it has none. Loaded once per
    process.

    Raises:
      ValueError: a shipped file is missing, truncated or does not fit the game (the message names the file and
        the command that regenerates it); `name` is not a set of the game (the message names those it has).
    """
    if name is not None and (game_name, name) not in _LOADERS:
        raise ValueError(f"{game_name} has no set of labelled positions named {name!r}; it has "
                         f"{', '.join(set_names(game_name)) or 'none but its own'}")
    return _load_cached(game_name, name) if (game_name, name) in _LOADERS else None


@functools.cache
def _load_cached(game_name: str, name: str | None) -> LabelledPositions:
    return _LOADERS[(game_name, name)]()


def _tic_tac_toe() -> LabelledPositions:
    from azjax import games
    from azjax.solver import exhaustive

    solution = exhaustive.solve(games.make("tic_tac_toe"))
    positions = np.flatnonzero(~np.asarray(solution.terminal))
    values = np.asarray(solution.action_values)[positions]
    outcomes = np.where(np.isfinite(values), np.rint(np.nan_to_num(values, neginf=0.0)), ILLEGAL).astype(np.int8)
    return LabelledPositions(
        states=jax.tree.map(lambda x: jnp.asarray(x)[positions], solution.states),
        action_outcomes=outcomes,
        stratum=np.zeros(len(positions), np.int32),
        strata=("all",),
    )


def _connect_four() -> LabelledPositions:
    from azjax.solver import connect_four_sets

    return load_connect_four_sets(connect_four_sets.DATA_DIR, connect_four_sets.STRATA)


def _connect_four_pons() -> LabelledPositions:
    from azjax.solver import connect_four_sets

    strata = connect_four_sets.pons_strata()
    if not strata:
        raise ValueError(f"no set of Pascal Pons's is labelled in {connect_four_sets.PONS_DIR} yet: label them with "
                         f"`{connect_four_sets.PONS_LABEL}`")
    return load_connect_four_sets(connect_four_sets.PONS_DIR, strata)


def load_connect_four_sets(directory: pathlib.Path, strata: tuple[str, ...]) -> LabelledPositions:
    """Connect Four's sets `strata` in `directory` as labelled positions, checked against the game: every position
    is reached by its moves without the game ending, and its legal columns are those the file marks."""
    from azjax import games
    from azjax.solver import connect_four as c4
    from azjax.solver import connect_four_sets

    all_moves, scores, raw, stratum = connect_four_sets.read_sets(directory, strata)
    states = states_from_moves(games.make("connect_four"), all_moves)
    # A full column is marked with this module's ILLEGAL, not the solver's score (-128): can_err and every other
    # consumer test for that one value.
    action_outcomes = np.where(raw == c4.ILLEGAL, ILLEGAL, raw).astype(np.int8)
    legal = np.asarray(states.legal_action_mask)
    mismatch = np.flatnonzero(np.asarray(states.terminated) | (legal != (action_outcomes != ILLEGAL)).any(1))
    if mismatch.size:
        row = int(mismatch[0])
        raise ValueError(
            f"{directory / (strata[int(stratum[row])] + '.txt')}: the position "
            f"{connect_four_sets.moves_text(all_moves[row])} does not fit the game (it ends, or its legal columns "
            f"differ from the file's); regenerate the sets with `{connect_four_sets.REGENERATE}`")
    return LabelledPositions(states=states, action_outcomes=action_outcomes, stratum=stratum, strata=tuple(strata),
                             scores=scores)


register("tic_tac_toe", _tic_tac_toe)
register("connect_four", _connect_four)
register("connect_four", _connect_four_pons, name="pons")


# --------------------------------------------------------------------------------------------------------------
# States from move lists.


def states_from_moves(game: Game, moves: list[list[int]]) -> State:
    """The states [N] reached by playing each list of actions from `game.init` (a fixed key). One compiled
    replay for all lists: shorter lists are padded, their padding steps not taken."""
    length = max(len(line) for line in moves)
    table = np.full((len(moves), max(length, 1)), -1, np.int32)
    for row, line in enumerate(moves):
        table[row, : len(line)] = line
    return _replay(game, jnp.asarray(table))


@functools.partial(jax.jit, static_argnums=0)
def _replay(game: Game, table: jax.Array) -> State:
    def play(actions: jax.Array) -> State:
        def body(state: State, action: jax.Array) -> tuple[State, None]:
            stepped = game.step(state, jnp.maximum(action, 0))
            return jax.tree.map(lambda new, old: jnp.where(action >= 0, new, old), stepped, state), None

        return jax.lax.scan(body, game.init(jax.random.key(0)), actions)[0]

    return jax.vmap(play)(table)


# --------------------------------------------------------------------------------------------------------------
# Judging an agent.


@dataclasses.dataclass(frozen=True)
class Rate:
    """`hits` of `total` positions, with a 95% Wilson interval."""

    hits: int
    total: int

    @property
    def rate(self) -> float:
        return self.hits / self.total if self.total else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.rate, self.total) if self.total else (float("nan"), float("nan"))

    def __str__(self) -> str:
        low, high = self.interval
        rate = text.figure(100 * self.rate, 1) + "%"  # 4519 of 4520 reads 99.98%, never 100.0%
        return f"{rate:>6} [{low:.1%}, {high:.1%}] of {self.total}"


def hits(labelled: LabelledPositions, actions: jax.typing.ArrayLike) -> jax.Array:
    """bool [N]: whether each action (int [N], the agent's move in each position) keeps the outcome. Jittable;
    an out-of-range or illegal action is a miss."""
    actions = jnp.asarray(actions, jnp.int32)
    optimal = jnp.asarray(labelled.optimal_actions)
    in_range = (actions >= 0) & (actions < optimal.shape[1])
    return in_range & jnp.take_along_axis(optimal, jnp.clip(actions, 0, optimal.shape[1] - 1)[:, None], 1)[:, 0]


def value_hits(labelled: LabelledPositions, values: jax.typing.ArrayLike) -> jax.Array:
    """bool [N]: whether each value (float [N], for the player to move, in [-1, 1]) names the outcome, with
    -1/3 and 1/3 splitting loss, draw and win. Jittable. A NaN value (no estimate) names nothing: a miss here,
    and `judge` leaves such positions out of the value accuracy."""
    values = jnp.asarray(values)
    predicted = jnp.where(values > 1 / 3, 1, jnp.where(values < -1 / 3, -1, 0))
    return jnp.isfinite(values) & (predicted == jnp.asarray(labelled.outcomes, jnp.int32))


@dataclasses.dataclass(frozen=True)
class Report:
    """Optimal-move rates per stratum and in all ("all"), over every position and over those where a mistake is
    possible ("can err"); and the value accuracy where values were given, over the positions with a finite value
    (an agent's NaN is no estimate, not a guess of a draw: each `Rate`'s total counts the positions judged)."""

    moves: dict[str, Rate]
    moves_can_err: dict[str, Rate]
    values: dict[str, Rate] | None = None

    def to_dict(self, prefix: str = "") -> dict[str, float]:
        """Flat figures for metrics: `{prefix}optimal_move_rate[/stratum]`, `..._can_err`, `value_accuracy`."""
        flat = {}
        for name, table in (("optimal_move_rate", self.moves), ("optimal_move_rate_can_err", self.moves_can_err),
                            ("value_accuracy", self.values or {})):
            for stratum, rate in table.items():
                flat[prefix + name + ("" if stratum == "all" else "/" + stratum)] = rate.rate
        return flat

    def format(self, title: str = "optimal moves") -> str:
        """A table: one row per stratum."""
        rows = [f"{'':14} {title:32} {'where a mistake is possible':32}"
                + (f" {'value accuracy':32}" if self.values else "")]
        for stratum in self.moves:
            row = f"{stratum:14} {self.moves[stratum]!s:32} {self.moves_can_err[stratum]!s:32}"
            if self.values:
                row += f" {self.values[stratum]!s:32}"
            rows.append(row.rstrip())
        return "\n".join(rows)


def judge(labelled: LabelledPositions, actions: np.ndarray, values: np.ndarray | None = None) -> Report:
    """Judges an agent's moves (int [N]) and, if given, its values (float [N], for the player to move; NaN where
    it has no estimate, and those positions are left out of the value accuracy) on the labelled positions: per
    stratum and in all."""
    move_hits = np.asarray(hits(labelled, actions))
    value_ok = None if values is None else np.asarray(value_hits(labelled, values))
    valued = None if values is None else np.isfinite(np.asarray(values))
    can_err = labelled.can_err
    groups = {name: labelled.stratum == index for index, name in enumerate(labelled.strata)}
    if len(groups) > 1:
        groups["all"] = np.ones(labelled.num_positions, bool)
    else:
        groups = {"all": np.ones(labelled.num_positions, bool)}

    def rates(ok: np.ndarray, where: np.ndarray) -> dict[str, Rate]:
        return {name: Rate(int(np.sum(ok & group & where)), int(np.sum(group & where)))
                for name, group in groups.items()}

    everywhere = np.ones(labelled.num_positions, bool)
    return Report(
        moves=rates(move_hits, everywhere),
        moves_can_err=rates(move_hits, can_err),
        values=None if value_ok is None or valued is None else rates(value_ok, valued),
    )
