"""The perfect players: uniformly random among the optimal moves of an exact solution ("perfect").

    bot = perfect_bot(game)        # tic-tac-toe: `solver.solve(game)` at once; Connect Four: alpha-beta per move

A small game is solved whole (`azjax.solver.solve`); Connect Four's player asks the alpha-beta solver about each
position on the host, through `jax.pure_callback`, and may give up on an early one (`SolveTimeout`), which
`solve_timeouts_raised` raises again in a form that says what to do. Every value is for the player to move.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from azjax import solver as solver_lib
from azjax.bots import Analysis, Bot, sample_uniform, uniform_policy
from azjax.games import BoardState, Game, State
from azjax.games.pig import HOLD, ROLL, PigState

PERFECT_MAX_STATES = 20_000  # the perfect player solves the game at once; beyond this many positions it refuses
CONNECT_FOUR_MAX_SECONDS = 60.0  # Connect Four's perfect player gives up on a position after this long
CONNECT_FOUR_PERFECT_MIN_STONES = 10  # from this many stones on, a move takes about a second on average


def perfect_analysis(key: jax.Array, states: State, *, solution: solver_lib.Solution) -> Analysis:
    """Random among the optimal moves; the exact values. A state outside the table gets a random legal move."""
    index = solver_lib.lookup(solution, states)
    known = index >= 0
    row = jnp.maximum(index, 0)
    choice = jnp.where(known[:, None], solution.optimal_actions[row], states.legal_action_mask)
    action_values = jnp.where(known[:, None] & states.legal_action_mask, solution.action_values[row], jnp.nan)
    return Analysis(
        action=sample_uniform(key, choice),
        policy=uniform_policy(choice),
        value=jnp.where(known, solution.values[row], jnp.nan),
        action_values=action_values,
    )


def connect_four_perfect_analysis(key: jax.Array, states: BoardState, *, max_seconds: float | None) -> Analysis:
    """Connect Four's perfect player: each move's outcome and the exact scores of the best ones from the alpha-beta
    solver (on the host, through `jax.pure_callback`), then uniformly random among the best-scored moves (the
    fastest win, the slowest loss, any drawing move). Values are outcomes for the player to move: +1 win, 0 draw,
    -1 loss."""
    legal = states.legal_action_mask
    shape = jax.ShapeDtypeStruct(legal.shape, jnp.int8)
    outcomes, scores = jax.pure_callback(
        functools.partial(_connect_four_best_moves, max_seconds=max_seconds),
        (shape, shape),
        states.board, states.current_player, states.terminated,
        vmap_method="broadcast_all",
    )
    scores = jnp.where(legal, scores.astype(jnp.int32), -1000)  # ILLEGAL (-128) marks moves of a worse outcome
    best = legal & (scores == scores.max(axis=-1, keepdims=True))
    outcomes = jnp.where(legal, outcomes.astype(jnp.float32), jnp.nan)
    return Analysis(
        action=sample_uniform(key, best),
        policy=uniform_policy(best),
        value=jnp.where(states.terminated, jnp.nan, jnp.max(jnp.where(legal, outcomes, -1.0), axis=-1)),
        action_values=outcomes,
    )


def is_pig(game: Game) -> bool:
    """Whether `game` is Pig as `azjax.games.make_pig` makes it (any goal or move limit)."""
    from azjax.games import pig

    try:
        pig.goal_of(game)
    except ValueError:
        return False
    return game.has_chance


class PigTables(NamedTuple):
    """Pig's exact chances of winning for the mover (`pig_tables`), float32 [goal, goal, goal] each, indexed by the
    mover's score, the opponent's and the turn's total."""

    roll: jax.Array
    """After rolling (then playing optimally)."""
    hold: jax.Array
    """After holding; 0 where holding is illegal (a turn total of 0)."""


def pig_tables(game: Game) -> PigTables:
    """The exact chances of winning (`PigTables`) of a Pig game made by `make_pig`, solved on first use (about a
    second for Pig to 100; `azjax.solver.pig`)."""
    from azjax.games import pig
    from azjax.solver import pig as pig_solver

    solution = pig_solver.solve(pig.goal_of(game))
    return PigTables(roll=jnp.asarray(solution.roll, jnp.float32),
                     hold=jnp.asarray(np.nan_to_num(solution.hold, nan=0.0), jnp.float32))


def pig_action_values(states: PigState, tables: PigTables) -> jax.Array:
    """[B, 2] float32: the mover's exact chance of winning after each action (roll, hold), NaN where illegal."""
    goal = tables.roll.shape[0]
    mover = states.current_player
    mine = jnp.take_along_axis(states.scores, mover[:, None], axis=1)[:, 0]
    theirs = jnp.take_along_axis(states.scores, 1 - mover[:, None], axis=1)[:, 0]
    i, j = jnp.clip(mine, 0, goal - 1), jnp.clip(theirs, 0, goal - 1)
    k = jnp.clip(states.turn_total, 0, goal - 1)
    values = jnp.stack([tables.roll[i, j, k], tables.hold[i, j, k]], axis=-1)
    return jnp.where(states.legal_action_mask, values, jnp.nan)


PIG_TIE = 2e-9  # actions whose chances of winning differ by less are equally good (float32 tables, ties exact)


def pig_decisions(states: PigState, actions: jax.Array, tables: PigTables) -> tuple[jax.Array, jax.Array]:
    """How good `actions` [B] are in `states` [B] (live ones; a terminal row's figures mean nothing): whether each
    is optimal (bool [B]) and the chance of winning it gives up against the best action (float32 [B], 0 for an
    optimal one)."""
    values = pig_action_values(states, tables)
    best = jnp.max(jnp.where(states.legal_action_mask, values, -jnp.inf), axis=-1)
    chosen = jnp.take_along_axis(jnp.nan_to_num(values, nan=-1.0), actions[:, None].astype(jnp.int32), axis=1)[:, 0]
    lost = jnp.maximum(best - chosen, 0.0)
    return lost < PIG_TIE, jnp.where(lost < PIG_TIE, 0.0, lost)


def pig_perfect_analysis(key: jax.Array, states: PigState, *, tables: PigTables) -> Analysis:
    """Pig's optimal player: the exact chances of winning after rolling and after holding (`pig_tables`) as
    values for the player to move (2p - 1, in [-1, 1]), random among the optimal moves."""
    chances = pig_action_values(states, tables)
    values = 2.0 * chances - 1.0
    best_value = jnp.max(jnp.where(states.legal_action_mask, values, -jnp.inf), axis=-1, keepdims=True)
    best = states.legal_action_mask & (values >= best_value - 2.0 * PIG_TIE)
    return Analysis(
        action=sample_uniform(key, best),
        policy=uniform_policy(best),
        value=jnp.where(states.terminated, jnp.nan, best_value[:, 0]),
        action_values=values,
    )


def pig_perfect_bot(game: Game) -> Bot:
    """Pig's optimal player ("perfect"), from the exact solution of its goal (`pig_tables`)."""
    return Bot("perfect", functools.partial(pig_perfect_analysis, tables=pig_tables(game)))


def pig_hold_analysis(key: jax.Array, states: PigState, *, threshold: int) -> Analysis:
    """Pig's hold-at-N player: rolls until the turn's total reaches `threshold` (or the mover's score with it
    reaches the goal, which a roll's win ends at once), then holds; no values."""
    del key
    hold = (states.turn_total >= threshold) & states.legal_action_mask[:, HOLD]
    action = jnp.where(hold, HOLD, ROLL).astype(jnp.int32)
    policy = jax.nn.one_hot(action, 2)
    nan = jnp.full(action.shape, jnp.nan)
    return Analysis(action=action, policy=policy, value=nan, action_values=jnp.stack([nan, nan], axis=-1))


def pig_hold_bot(threshold: int, name: str | None = None) -> Bot:
    """Pig's hold-at-`threshold` player (the baseline "hold:20"): the classic simple strategy, which the optimal
    player beats (tests/games/test_pig.py)."""
    return Bot(name or f"hold:{threshold}", functools.partial(pig_hold_analysis, threshold=threshold))


_connect_four_solvers: dict = {}  # one per time limit, made at first use (~80 MB each)


def _connect_four_best_moves(boards, players, terminated, *, max_seconds: float | None):
    """Host side of `connect_four_perfect_analysis`: outcomes and best scores, int8 [B, 7] each (see
    `connect_four.Solver.best_moves_bits`); zeros for terminal states."""
    import numpy as np

    from azjax.solver import connect_four

    solver = _connect_four_solvers.get(max_seconds)
    if solver is None:
        solver = _connect_four_solvers[max_seconds] = connect_four.Solver(max_seconds=max_seconds)
    boards, players, terminated = np.asarray(boards), np.asarray(players), np.asarray(terminated)
    outcomes = np.zeros((len(boards), connect_four.WIDTH), np.int8)
    scores = np.zeros((len(boards), connect_four.WIDTH), np.int8)
    for row in np.flatnonzero(~terminated):
        position = connect_four.encode_board(boards[row], int(players[row]))
        outcomes[row], scores[row] = solver.best_moves_bits(*position)
    return outcomes, scores


@contextlib.contextmanager
def solve_timeouts_raised() -> Iterator[None]:
    """Raises a `connect_four.SolveTimeout` that Connect Four's perfect player hit inside a jitted computation
    (where `jax.pure_callback` hands it on as `jax.errors.JaxRuntimeError`) as `SolveTimeout` again, with the
    solver's message and what to do; any other error passes unchanged. Wrap the call and the fetch of its
    results: an error of an asynchronous computation may surface at either."""
    try:
        yield
    except jax.errors.JaxRuntimeError as error:
        text = str(error)
        if "SolveTimeout" not in text:
            raise
        from azjax.solver.connect_four import SolveTimeout

        said = [line.split("SolveTimeout:", 1)[1].strip() for line in text.splitlines() if "SolveTimeout:" in line]
        raise SolveTimeout(
            f"Connect Four's perfect player gave up on a position: {said[-1] if said else 'it took too long'}. "
            f"Start its games after openings of {CONNECT_FOUR_PERFECT_MIN_STONES} or more moves "
            f"(--opening-moves {CONNECT_FOUR_PERFECT_MIN_STONES})"
        ) from None


def _start_varies(game: Game, num_keys: int = 8) -> bool:
    """Whether `game.init` gives different states for different keys (over `num_keys` of them)."""
    starts = jax.device_get(jax.vmap(game.init)(jax.random.split(jax.random.key(0), num_keys)))
    return any(not np.array_equal(leaf, leaf[:1].repeat(num_keys, axis=0)) for leaf in jax.tree.leaves(starts))


def perfect_bot(
    game: Game, solution: solver_lib.Solution | None = None, *, max_states: int = PERFECT_MAX_STATES,
    max_seconds: float | None = CONNECT_FOUR_MAX_SECONDS,
) -> Bot:
    """A perfect player ("perfect"), uniformly random among optimal moves: from `solver.solve(game)` for a small
    game (tic-tac-toe), from the alpha-beta solver for Connect Four.

    Connect Four's moves take from milliseconds (15 stones or more) to seconds (about 10) and minutes (the first
    moves); the times per stratum are in experiments/benchmarks/results/ (bench_solver). A position that
    takes longer than `max_seconds` stops the match: the solver raises `connect_four.SolveTimeout` inside
    `jax.pure_callback`, which reaches a jitted caller as `jax.errors.JaxRuntimeError` (its message holds the
    SolveTimeout's); `arena.play`, `round_robin.round_robin`, `evaluation.head_to_head` and `play.play_game` raise it as
    `SolveTimeout` again (`solve_timeouts_raised`). Start games from openings of `CONNECT_FOUR_PERFECT_MIN_STONES`
    or more moves (`--opening-moves 10`).

    Raises:
      ValueError: the game is too large to solve exactly here (more than `max_states` positions), cannot be
        solved (see `solver.solve`), or is a one-player game whose start depends on `init`'s key (the solver
        enumerates the positions reachable from one start; from the others it would play at random).
    """
    if game.num_players == 1 and _start_varies(game):
        raise ValueError(
            f"the perfect player solves the positions reachable from one start, and {game.name} starts from a "
            "different position for each key: it would play at random from the others. `azjax eval AGENT --game "
            f"{game.name}` gives an agent's mean return (and, where the game brings a yardstick, the share solved and "
            "solved in the fewest moves)")
    if game.name == "connect_four":
        return Bot("perfect", functools.partial(connect_four_perfect_analysis, max_seconds=max_seconds))
    if is_pig(game):
        return pig_perfect_bot(game)
    if solution is None:
        try:
            solution = solver_lib.solve(game, max_states=max_states)
        except ValueError as error:
            reason = str(error).split(";")[0].replace(f"max_states={max_states}", str(max_states))
            raise ValueError(
                f"the perfect player solves the game exactly, which is out of reach for {game.name} ({reason}); "
                "it is for small games such as tic_tac_toe"
            ) from None
    return Bot("perfect", functools.partial(perfect_analysis, solution=solution))
