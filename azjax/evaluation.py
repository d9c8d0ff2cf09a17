"""Evaluation: agents play each other in batches; agents are judged against an exact solver; evaluation during
training (`make_evaluator`).

An agent here is any function `(key, states [B]) -> actions [B]` (jittable), e.g. `Agent.act` with its options
bound, `solver.perfect_agent(solution)` or a baseline's `bots.Bot.act`. The arena with confidence intervals, Elo
and round robins is `azjax.arena`; the baseline agents are `azjax.bots`.
"""

from __future__ import annotations

import functools
import operator
import time
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from azjax import arena, games, memory, parallel
from azjax import bots as bots_lib
from azjax import solver as solver_lib
from azjax.agent import make_agent
from azjax.arena import AgentFn, random_agent
from azjax.config import Config
from azjax.games import Game, State
from azjax.solver import positions as positions_lib

Evaluator = Callable[[jax.Array, dict], dict[str, float]]
EVAL_GAMES = 64  # games against each baseline in the evaluation during training (half in each seat)

__all__ = [
    "AgentFn",
    "Evaluator",
    "default_opponents",
    "head_to_head",
    "judge_bot",
    "make_evaluator",
    "random_agent",
    "solver_report",
]


def solver_report(
    key: jax.Array,
    solution: solver_lib.Solution,
    game: Game,
    *,
    greedy: AgentFn,
    searcher: AgentFn,
    num_games: int = 1000,
    mesh: Mesh | None = None,
) -> dict[str, float]:
    """How close an agent is to perfect play, judged by an exact solution of the game.

    Args:
      key: randomness for the games (the perfect player picks uniformly among optimal moves).
      solution: `solver.solve(game)`.
      greedy: the agent without search (e.g. the network's top move).
      searcher: the agent with search.
      num_games: games against the perfect player in each seat.
      mesh: split the games over its devices (`arena.run_games`).
    Returns:
      greedy_accuracy / search_accuracy: the share of reachable non-terminal positions where the agent's move
        keeps the best outcome the position allows; losses_as_first / losses_as_second: games the searching
        agent lost to the perfect player as player 0 / player 1, with draws_* likewise.
    """
    report = {
        "greedy_accuracy": solver_lib.policy_accuracy(solution, lambda s: greedy(key, s)),
        "search_accuracy": solver_lib.policy_accuracy(solution, lambda s: searcher(key, s)),
    }
    match = head_to_head(key, game, searcher, solver_lib.perfect_agent(solution), num_games, mesh=mesh)
    for seat in ("first", "second"):
        report[f"losses_as_{seat}"] = match[f"as_{seat}"]["losses"]
        report[f"draws_as_{seat}"] = match[f"as_{seat}"]["draws"]
    return report


def head_to_head(
    key: jax.Array,
    game: Game,
    agent: AgentFn,
    opponent: AgentFn,
    num_games: int,
    *,
    opening_moves: int = 0,
    mesh: Mesh | None = None,
) -> dict:
    """`agent` against `opponent`, `num_games` games with each seat (`arena.run_games`, compiled once per pair of
    agents; with a `mesh`, split over its devices); wins/draws/losses from `agent`'s side.

    Two deterministic agents (e.g. `Agent.act`, whose search has no root noise) replay one game per seat from
    the start: give `opening_moves` > 0 (each pair of games starts after that many random moves, the pairs'
    openings distinct where the game has enough) to measure them over many different games.

    Returns the counts, `games`, `distinct_games` (different in seat, in the position after the opening or in
    the moves after it: `arena.count_distinct`), `score` (wins + draws / 2 over all games), its 95% interval
    `score_low`, `score_high` (over the distinct games) and the counts per seat ("as_first": `agent` moved
    first, "as_second").

    Raises:
      SolveTimeout: Connect Four's perfect player gave up on a position (see `bots.perfect_bot`).
    """
    with bots_lib.solve_timeouts_raised():
        match = arena.summarize(
            arena.play_games_within_memory(key, game, agent, opponent, 2 * num_games,
                                           opening_moves=opening_moves, mesh=mesh)
        )
    as_first = {"wins": match.wins_as_first, "draws": match.draws_as_first, "losses": match.losses_as_first}
    as_second = {name: getattr(match, name) - count for name, count in as_first.items()}
    return dict(
        wins=match.wins, draws=match.draws, losses=match.losses, games=match.games,
        distinct_games=match.distinct_games, score=match.score, score_low=match.score_interval[0],
        score_high=match.score_interval[1], as_first=as_first, as_second=as_second,
    )


# --------------------------------------------------------------------------------------------------------------
# Evaluation during training


# UCT's random rollouts run to the end of the game at every simulation, so mcts:100 costs more a move the longer
# the game (2-core CPU, 32 games at once, from the start: Brandub 19 s, Gomoku 15x15 2.9 s, Othello 8x8 1.4 s,
# Gomoku 9x9 0.77 s, Othello 6x6 0.56 s, Connect Four 0.06 s; measured before rollouts sampled their moves by rank,
# which made Brandub's 3x cheaper: experiments/results/bench_uct_cpu.txt): in games that may last this many moves
# or more (Brandub 200, Gomoku 15x15 225, Othello 8x8 120 with its passes) an evaluation of 64 games against it would
# take from minutes to an hour, so it plays no part in their evaluation during training.
UCT_MAX_LENGTH = 100


def default_opponents(game: Game | str) -> tuple[str, ...]:
    """The baselines a run of `game` (a game or its name) is measured against while it trains (agent specs, see
    `bots.make_bot`): random and one-ply tactics; UCT with 100 simulations for games shorter than
    `UCT_MAX_LENGTH` moves (not Brandub, Gomoku 15x15 or Othello 8x8); the perfect player for tic-tac-toe."""
    game = games.make(game) if isinstance(game, str) else game
    opponents: tuple[str, ...] = ("random", "onestep")
    if game.max_length < UCT_MAX_LENGTH:
        opponents += ("mcts:100",)
    return (*opponents, "perfect") if game.name == "tic_tac_toe" else opponents


def judge_bot(
    key: jax.Array, bot: bots_lib.Bot, labelled: positions_lib.LabelledPositions, *, batch_size: int = 1024,
    on_batch: Callable[[int, int], None] | None = None,
) -> positions_lib.Report:
    """Judges any agent on labelled positions (`azjax.solver.positions`): the share of positions where its move
    keeps the game-theoretic outcome, per stratum, and, where it gives values (for the player to move), the share
    where the value's sign names the outcome, over the positions where the value is finite (NaN: no estimate, as
    onestep's in a quiet position; the `Rate`'s total says how many were judged). `greedy_bot(agent)` judges a
    network's top move and value, `alphazero_bot(agent)` its search. Runs in batches of `batch_size` (the last
    one padded), compiled once; `on_batch(judged, total)` is called after each (for progress)."""
    analyse = jax.jit(bot.analyse)
    size = labelled.num_positions
    actions, values = [], []
    for start in range(0, size, batch_size):
        rows = np.arange(start, start + batch_size) % size  # pad the last batch by wrapping: one compiled shape
        batch = jax.tree.map(operator.itemgetter(rows), labelled.states)
        analysis = jax.device_get(analyse(jax.random.fold_in(key, start), batch))
        keep = min(batch_size, size - start)
        actions.append(np.asarray(analysis.action)[:keep])
        values.append(np.asarray(analysis.value)[:keep])
        if on_batch is not None:
            on_batch(start + keep, size)
    value = np.concatenate(values)
    return positions_lib.judge(labelled, np.concatenate(actions), None if np.isnan(value).all() else value)


def make_evaluator(
    config: Config,
    *,
    opponents: Sequence[str] | None = None,
    num_games: int = EVAL_GAMES,
    num_simulations: int | None = None,
    mesh: Mesh | None = None,
    network=None,
) -> Evaluator:
    """Builds `evaluate(key, variables) -> {"eval/<opponent>": score, ...}` for a run's network.

    The run's agent (its network with its search, `num_simulations` or the run's, no root noise) plays
    `num_games` games (half in each seat) against each opponent; a score is (wins + draws / 2) / games, from the
    agent's side. "eval/score" is the mean over the opponents. Everything runs as one program, compiled at the
    first call, after checking that it fits in memory (else `memory.MemoryBudgetError`, before anything runs);
    later calls (new variables, same shapes) reuse it.

    For a game with labelled positions (`azjax.solver.positions`: tic-tac-toe's 4520 positions, Connect Four's
    six solved sets) the network alone (its top move, its value; no search) is also judged on them, by a second
    program that is only the network's forward pass: "eval/optimal_move_rate" (share of positions whose top move
    keeps the game-theoretic outcome), "eval/optimal_move_rate/<stratum>", "eval/optimal_move_rate_can_err..."
    (over positions where a mistake is possible), "eval/value_accuracy..." (the value's sign names the outcome),
    and "positions_seconds", the time it took. "eval_memory_bytes" is the memory the matches' program needs on
    each device (XLA's memory analysis; absent where the backend gives none).

    Args:
      config: the run's config.
      opponents: agent specs without run directories (default: `default_opponents(game)`).
      num_games: games against each opponent (even).
      num_simulations: the agent's simulations per move (default: the run's).
      mesh: split the games over these devices (as many of them as divide num_games / 2; see
        `arena.run_games`), the variables replicated on each. Default: one device.
      network: the module whose variables it is given (default: the config's, `networks.network_of`).
    Raises:
      ValueError: "perfect" among the opponents of a Connect Four run: its games start from the empty board,
        whose first moves take the solver minutes each.
    """
    game = config.make_game()
    specs = tuple(opponents) if opponents is not None else default_opponents(game)
    if game.name == "connect_four" and "perfect" in [spec.strip() for spec in specs]:
        minimum = bots_lib.CONNECT_FOUR_PERFECT_MIN_STONES
        raise ValueError(
            "Connect Four's perfect player cannot be an opponent in the evaluation during training: its games start "
            f"from the empty board, whose first moves take the solver minutes (it needs openings of {minimum} or "
            "more stones). Leave it out (the network is judged against perfect play on the solved positions: "
            f"eval/optimal_move_rate) and play it after training: azjax eval RUN perfect --opening-moves {minimum}"
        )
    solution = solver_lib.solve(game) if "perfect" in specs else None
    bots = [bots_lib.make_bot(spec, game, solution=solution) for spec in specs]
    names = ["eval/" + spec.replace(":", "") for spec in specs]
    if mesh is not None:
        mesh = parallel.mesh_for(num_games // 2, devices=list(mesh.devices.flat))
        parallel.check_spans_processes(mesh, f"the evaluation's {num_games} games / 2")
    evaluate = jax.jit(
        functools.partial(
            _evaluate,
            config=config,
            game=game,
            bots=tuple(bots),
            names=tuple(names),
            num_games=num_games,
            num_simulations=num_simulations,
            mesh=mesh,
            network=network,
        )
    )
    labelled = positions_lib.load(config.game)
    network_on_positions = jax.jit(functools.partial(_network_on_positions, config, network))
    states = None if labelled is None else parallel.replicate(labelled.states, mesh)

    compiled: dict = {}  # the matches' program and the memory it needs, at the first call once known to fit
    devices = list(mesh.devices.flat) if mesh is not None else None

    def evaluator(key: jax.Array, variables: dict) -> dict[str, float]:
        variables = parallel.replicate(variables, mesh)
        if not compiled:
            compiled["program"] = memory.compile_within_memory(
                evaluate.lower(key, variables), devices=devices,
                what=f"the evaluation of {config.game} ({num_games} games against each of {', '.join(specs)})",
                lower_it="fewer evaluation games (azjax train --eval-games), fewer or lighter opponents, or "
                         "--eval-every 0")
            compiled["needed"] = memory.needed_memory(compiled["program"])
        results = {name: float(value) for name, value in parallel.fetch(compiled["program"](key, variables)).items()}
        if compiled["needed"] is not None:
            results["eval_memory_bytes"] = float(compiled["needed"])  # per device, by XLA's memory analysis
        if labelled is not None:
            tick = time.perf_counter()
            actions, values = parallel.fetch(network_on_positions(variables, states))
            report = positions_lib.judge(labelled, actions, values)
            results.update(report.to_dict(prefix="eval/"))
            results["positions_seconds"] = round(time.perf_counter() - tick, 3)
        return results

    return evaluator


def _network_on_positions(config: Config, network, variables: dict, states: State) -> tuple[jax.Array, jax.Array]:
    """The network's top move (illegal moves masked) and value, for the player to move, in each position."""
    logits, values = make_agent(config, variables, network).policy_value(states)
    return jnp.argmax(logits, axis=-1), values


def _evaluate(
    key: jax.Array,
    variables: dict,
    *,
    config: Config,
    game: Game,
    bots: tuple[bots_lib.Bot, ...],
    names: tuple[str, ...],
    num_games: int,
    num_simulations: int | None,
    mesh: Mesh | None,
    network,
) -> dict[str, jax.Array]:
    agent = make_agent(config, variables, network)
    player = bots_lib.alphazero_bot(agent, num_simulations=num_simulations, reuse_tree=False)  # plays by .act
    results = {}
    for match_key, name, bot in zip(jax.random.split(key, len(bots)), names, bots, strict=True):
        outcome = arena.run_games(match_key, game, player.act, bot.act, num_games, mesh=mesh).outcome
        results[name] = jnp.mean((outcome + 1.0) / 2.0)
    if results:
        results["eval/score"] = jnp.mean(jnp.stack(list(results.values())))
    return results
