"""Evaluation: agents play each other in batches; agents are judged against an exact solver; evaluation during
training (`make_evaluator`).

An agent here is any function `(key, states [B]) -> actions [B]` (jittable, `bots.AgentFn`), e.g. `Agent.act`
with its options bound, `solver.perfect_agent(solution)` or a baseline's `bots.Bot.act`. The arena is
`azjax.arena` (its results, intervals and tables `azjax.results`, round robins and Elo `azjax.round_robin`); the
agent specs of the command line are `azjax.agent_specs`.
"""

from __future__ import annotations

import functools
import operator
import time
import typing
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax.sharding import Mesh

from azjax import arena, episodes, games, memory, parallel
from azjax import solver as solver_lib
from azjax.agent import make_agent
from azjax.agent_specs import make_bot
from azjax.bots import AgentFn, Bot, random_agent
from azjax.config import Config
from azjax.games import Game, State
from azjax.games.pgx_chance import ONEPLY_SCORES
from azjax.games.pig import PigState
from azjax.network_bots import alphazero_bot, greedy_bot
from azjax.perfect import (
    CONNECT_FOUR_PERFECT_MIN_STONES,
    PigTables,
    is_pig,
    pig_decisions,
    pig_tables,
    solve_timeouts_raised,
)
from azjax.results import summarize
from azjax.solver import positions as positions_lib

Evaluator = Callable[[jax.Array, dict], dict[str, float]]
"""The evaluation during training: `(key, variables) -> {metric name: value}`, built by `make_evaluator`."""
EVAL_GAMES = 64  # games against each baseline in the evaluation during training (half in each seat)

__all__ = [
    "AgentFn",
    "Evaluator",
    "default_opponents",
    "episode_starts",
    "head_to_head",
    "judge_bot",
    "judge_episodes",
    "make_evaluator",
    "pig_decisions_in_own_games",
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
    the moves after it: `results.count_distinct`), `score` (wins + draws / 2 over all games), its 95% interval
    `score_low`, `score_high` (over the distinct games) and the counts per seat ("as_first": `agent` moved
    first, "as_second").

    Raises:
      SolveTimeout: Connect Four's perfect player gave up on a position (see `perfect.perfect_bot`).
    """
    with solve_timeouts_raised():
        match = summarize(
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


# UCT (mcts:100) is a baseline of the evaluation during training only in games shorter than this many moves: its
# rollouts play to the game's end at every simulation, so that in longer games (Brandub, Gomoku 15x15, Othello 8x8)
# the evaluation's games against it would take minutes to an hour (figures:
# experiments/benchmarks/results/, bench_uct).
UCT_MAX_LENGTH = 100


def default_opponents(game: Game | str) -> tuple[str, ...]:
    """The baselines a run of `game` (a game or its name) is measured against while it trains (agent specs, see
    `agent_specs.make_bot`): random and one-ply tactics; UCT with 100 simulations for games shorter than
    `UCT_MAX_LENGTH` moves (not Brandub, Gomoku 15x15 or Othello 8x8); the perfect player for tic-tac-toe. A
    one-player game's baseline is the random player, whose mean return the run's is set beside. A game with chance
    plays the random player; Pig the hold-at-20 player and its optimal player too; pgx's 2048 and backgammon the
    one-ply greedy player ("oneply") too."""
    game = games.make(game) if isinstance(game, str) else game
    oneply = ("oneply",) if game.name.partition("(")[0] in ONEPLY_SCORES else ()
    if game.num_players == 1:
        return ("random", *oneply)
    if game.has_chance:  # one-ply tactics and UCT would see the dice through game.step; Pig's optimum is known
        return ("random", "hold:20", "perfect") if is_pig(game) else ("random", *oneply)
    opponents: tuple[str, ...] = ("random", "onestep")
    if game.max_length < UCT_MAX_LENGTH:
        opponents += ("mcts:100",)
    return (*opponents, "perfect") if game.name == "tic_tac_toe" else opponents


def judge_bot(
    key: jax.Array, bot: Bot, labelled: positions_lib.LabelledPositions, *, batch_size: int = 1024,
    on_batch: Callable[[int, int], None] | None = None,
) -> positions_lib.Report:
    """Judges any agent on labelled positions (`azjax.solver.positions`): the share of positions where its move
    keeps the game-theoretic outcome, per stratum, and, where it gives values (for the player to move), the share
    where the value's sign names the outcome, over the positions where the value is finite (NaN: no estimate, as
    onestep's in a quiet position; the `Rate`'s total says how many were judged). `greedy_bot(agent)` judges a
    network's top move and value, `alphazero_bot(agent)` its search (`azjax.network_bots`). Runs in batches of
    `batch_size` (the last one padded), compiled once; `on_batch(judged, total)` is called after each (for
    progress)."""
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
    if game.num_players == 1:
        return _episode_evaluator(config, game, specs, num_games=num_games, num_simulations=num_simulations,
                                  network=network)
    _refuse_connect_four_perfect(game, specs)
    # Pig's perfect player brings its own solution (azjax.solver.pig); other games' is solved here, once.
    solution = solver_lib.solve(game) if "perfect" in specs and not game.has_chance else None
    bots = tuple(make_bot(spec, game, solution=solution) for spec in specs)
    if mesh is not None:
        mesh = parallel.mesh_for(num_games // 2, devices=list(mesh.devices.flat))
        parallel.check_spans_processes(mesh, f"the evaluation's {num_games} games / 2")
    evaluate = jax.jit(functools.partial(
        _evaluate, config=config, game=game, bots=bots, names=tuple("eval/" + spec.replace(":", "") for spec in specs),
        num_games=num_games, num_simulations=num_simulations, mesh=mesh, network=network,
        pig=pig_tables(game) if is_pig(game) else None))
    matches = functools.partial(
        _play_matches, evaluate=evaluate, compiled={}, devices=list(mesh.devices.flat) if mesh is not None else None,
        what=f"the evaluation of {config.game} ({num_games} games against each of {', '.join(specs)})")
    labelled = positions_lib.load(config.game)
    positions = None if labelled is None else functools.partial(
        _judge_positions, judge=jax.jit(functools.partial(_network_on_positions, config, network)),
        labelled=labelled, states=parallel.replicate(labelled.states, mesh))
    return functools.partial(_run_evaluation, mesh=mesh, matches=matches, positions=positions)


def _episode_evaluator(config: Config, game: Game, specs: Sequence[str], *, num_games: int,
                       num_simulations: int | None, network) -> Evaluator:
    """`make_evaluator` for a one-player game: the run's agent and each baseline play the same `num_games` starts
    to their ends (the yardstick's starts where the game has one, else the game's own); "eval/return" (also
    "eval/score") is the agent's mean return, "eval/return_stderr" its standard error, "eval/return/<baseline>"
    each baseline's; where the game brings a yardstick (`Game.yardstick`), the agent's share solved and solved in
    the fewest moves ("eval/solved", "eval/solved_optimally", "eval/excess_moves")."""
    baselines = default_opponents(game)  # the random player, and oneply where the game has one
    unknown = [spec for spec in specs if spec not in baselines]
    if unknown:
        raise ValueError(f"{game.name} is a one-player game: its evaluation sets the run's agent beside the baseline "
                         f"players ({', '.join(baselines)}); {', '.join(unknown)} cannot play it (leave "
                         "--eval-opponents out)")
    evaluate = jax.jit(functools.partial(_evaluate_episodes, config=config, game=game, specs=tuple(specs),
                                         num_games=num_games, num_simulations=num_simulations, network=network))

    def run(key: jax.Array, variables: dict) -> dict[str, float]:
        scores, starts, played = jax.device_get(evaluate(key, variables))
        result = {name: float(value) for name, value in scores.items()}
        result.update({f"eval/{name}": value for name, value in judge_by_yardstick(game, starts, played).items()})
        return result

    return run


def episode_starts(key: jax.Array, game: Game, num_episodes: int) -> State:
    """The starts a one-player game's agents are judged from: its yardstick's where it brings one with starts of
    its own (the sliding puzzle's uniformly random solvable boards), else the game's own `init`."""
    return jax.vmap(game.judged_init)(jax.random.split(key, num_episodes))


def judge_by_yardstick(game: Game, starts: State, played: episodes.Episodes) -> dict[str, float]:
    """The game's yardstick (`Game.yardstick`) on episodes `played` from `starts` (both on the host): "solved",
    and where it knows the fewest moves "solved_optimally" and "excess_moves"; {} for a game without one."""
    exact = game.yardstick
    if exact is None:
        return {}
    solved = np.asarray(jax.vmap(exact.is_solved)(played.final))
    return exact.judge(starts, solved, np.asarray(played.length))


def judge_episodes(key: jax.Array, game: Game, bot: Bot, num_episodes: int) -> dict[str, float]:
    """A bot's episodes of a one-player game from `episode_starts`: "return" (the mean), "return_low" and
    "return_high" (its 95% normal interval, clipped to the game's `return_bounds`, which no mean can leave),
    "length" (mean moves), and the yardstick's metrics where the game has one ("solved", "solved_optimally",
    "excess_moves")."""
    start_key, play_key = jax.random.split(key)
    starts = episode_starts(start_key, game, num_episodes)
    played = jax.device_get(jax.jit(functools.partial(episodes.play_episodes, game=game, agent=bot))(play_key,
                                                                                                     starts))
    returns = np.asarray(played.returns, np.float64)
    half = 1.96 * returns.std(ddof=1) / np.sqrt(len(returns)) if len(returns) > 1 else float("nan")
    lowest, highest = (float(bound) for bound in game.return_bounds)
    result = {"return": float(returns.mean()), "return_low": max(float(returns.mean() - half), lowest),
              "return_high": min(float(returns.mean() + half), highest), "length": float(np.mean(played.length))}
    result.update(judge_by_yardstick(game, jax.device_get(starts), played))
    return result


def _evaluate_episodes(key: jax.Array, variables: dict, *, config: Config, game: Game, specs: tuple[str, ...],
                       num_games: int, num_simulations: int | None, network) -> tuple[dict, State, Any]:
    init_key, agent_key, baseline_key = jax.random.split(key, 3)
    starts = episode_starts(init_key, game, num_games)
    agent = make_agent(config, variables, network)
    player = alphazero_bot(agent, num_simulations=num_simulations, reuse_tree=False)
    played = episodes.play_episodes(agent_key, starts, game=game, agent=player)
    scores = {"eval/return": jnp.mean(played.returns),
              "eval/return_stderr": jnp.std(played.returns, ddof=1) / jnp.sqrt(num_games)}
    scores["eval/score"] = scores["eval/return"]
    for spec, spec_key in zip(specs, jax.random.split(baseline_key, len(specs)), strict=True):
        baseline = episodes.play_episodes(spec_key, starts, game=game, agent=make_bot(spec, game))
        scores[f"eval/return/{spec}"] = jnp.mean(baseline.returns)
    return scores, starts, played


def _refuse_connect_four_perfect(game: Game, specs: Sequence[str]) -> None:
    """Raises ValueError if Connect Four's perfect player is among the opponents (see `make_evaluator`)."""
    if game.name == "connect_four" and "perfect" in [spec.strip() for spec in specs]:
        minimum = CONNECT_FOUR_PERFECT_MIN_STONES
        raise ValueError(
            "Connect Four's perfect player cannot be an opponent in the evaluation during training: its games start "
            f"from the empty board, whose first moves take the solver minutes (it needs openings of {minimum} or "
            "more stones). Leave it out (the network is judged against perfect play on the solved positions: "
            f"eval/optimal_move_rate) and play it after training: azjax eval RUN perfect --opening-moves {minimum}"
        )


def _run_evaluation(key: jax.Array, variables: dict, *, mesh: Mesh | None, matches: Callable[..., dict[str, float]],
                    positions: Callable[[dict], dict[str, float]] | None) -> dict[str, float]:
    """The evaluator `make_evaluator` returns: the matches' scores, then the judging on labelled positions."""
    variables = parallel.replicate(variables, mesh)
    scores = matches(key, variables)
    if positions is not None:
        scores.update(positions(variables))
    return scores


def _play_matches(key: jax.Array, variables: dict, *, evaluate: jax.stages.Wrapped, compiled: dict,
                  devices: list | None, what: str) -> dict[str, float]:
    """The scores of the matches' program, compiled into `compiled` at the first call once known to fit in memory,
    and "eval_memory_bytes", the memory it needs on each device (where XLA's memory analysis gives it)."""
    if not compiled:
        compiled["program"] = memory.compile_within_memory(
            evaluate.lower(key, variables), devices=devices, what=what,
            lower_it="fewer evaluation games (azjax train --eval-games), fewer or lighter opponents, or "
                     "--eval-every 0")
        compiled["needed"] = memory.needed_memory(compiled["program"])
    scores = {name: float(value) for name, value in parallel.fetch(compiled["program"](key, variables)).items()}
    if compiled["needed"] is not None:
        scores["eval_memory_bytes"] = float(compiled["needed"])  # per device, by XLA's memory analysis
    return scores


def _judge_positions(variables: dict, *, judge: Callable, labelled: positions_lib.LabelledPositions, states: State
                     ) -> dict[str, float]:
    """The network alone judged on the labelled positions (`judge`: `_network_on_positions`, jitted), and
    "positions_seconds", the time it took."""
    tick = time.perf_counter()
    actions, values = parallel.fetch(judge(variables, states))
    scores = positions_lib.judge(labelled, actions, values).to_dict(prefix="eval/")
    scores["positions_seconds"] = round(time.perf_counter() - tick, 3)
    return scores


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
    bots: tuple[Bot, ...],
    names: tuple[str, ...],
    num_games: int,
    num_simulations: int | None,
    mesh: Mesh | None,
    network,
    pig: PigTables | None = None,
) -> dict[str, jax.Array]:
    agent = make_agent(config, variables, network)
    player = alphazero_bot(agent, num_simulations=num_simulations, reuse_tree=False)  # plays by .act
    scores = {}
    for match_key, name, bot in zip(jax.random.split(key, len(bots)), names, bots, strict=True):
        outcome = arena.run_games(match_key, game, player.act, bot.act, num_games, mesh=mesh).outcome
        scores[name] = jnp.mean((outcome + 1.0) / 2.0)
    if scores:
        scores["eval/score"] = jnp.mean(jnp.stack(list(scores.values())))
    if pig is not None:
        judged = pig_decisions_in_own_games(jax.random.fold_in(key, len(bots)), game, player.act, num_games, pig,
                                            network=greedy_bot(agent).act)
        scores.update({f"eval/{name}": value for name, value in judged.items()})
    return scores


class _OwnGames(struct.PyTreeNode):
    """The carry of `pig_decisions_in_own_games`' loop."""

    states: State  # [B] the games
    step: jax.Array  # [] int32, moves played
    sums: dict  # per judge: float32 [2], its optimal decisions and the chance of winning lost, summed
    count: jax.Array  # [] int32, the decisions judged


def pig_decisions_in_own_games(key: jax.Array, game: Game, agent: AgentFn, num_games: int, tables: PigTables, *,
                               network: AgentFn | None = None) -> dict[str, jax.Array]:
    """Pig: `agent` plays `num_games` games against itself, and every decision it makes is judged by the exact
    solution (`perfect.pig_decisions`). Pure; jit it.

    Returns (float32 scalars): "optimal_decisions", the share of its decisions that are optimal;
    "win_probability_lost", the chance of winning a decision gives up on average (0 for an optimal one: a
    mistake counts by how much it costs); "optimal_decisions/judged", how many were judged. With `network`
    (e.g. the network's top move, `greedy_bot(agent).act`) also "optimal_decisions_network" and
    "win_probability_lost_network" for its choices in the same positions."""
    judges = {"": agent} if network is None else {"": agent, "_network": network}
    init_key, play_key = jax.random.split(key)
    start = _OwnGames(states=jax.vmap(game.init)(jax.random.split(init_key, num_games)), step=jnp.int32(0),
                      sums={name: jnp.zeros(2, jnp.float32) for name in judges}, count=jnp.int32(0))

    def playing(carry: _OwnGames) -> jax.Array:
        return jnp.any(~carry.states.terminated) & (carry.step < game.max_length)

    def move(carry: _OwnGames) -> _OwnGames:
        states = carry.states
        step_key = jax.random.fold_in(play_key, carry.step)
        live = ~states.terminated
        actions = agent(step_key, states)
        sums = {}
        for (name, act), judge_key in zip(judges.items(), jax.random.split(step_key, len(judges)), strict=True):
            chosen = actions if name == "" else act(judge_key, states)
            optimal, lost = pig_decisions(typing.cast(PigState, states), chosen, tables)
            sums[name] = carry.sums[name] + jnp.stack([jnp.sum(live & optimal), jnp.sum(jnp.where(live, lost, 0.0))])
        return _OwnGames(states=jax.vmap(game.step)(states, actions), step=carry.step + 1, sums=sums,
                         count=carry.count + jnp.sum(live))

    played = jax.lax.while_loop(playing, move, start)
    total = jnp.maximum(played.count, 1).astype(jnp.float32)
    judged = {"optimal_decisions/judged": played.count.astype(jnp.float32)}
    for name, (optimal, lost) in played.sums.items():
        judged[f"optimal_decisions{name}"] = optimal / total
        judged[f"win_probability_lost{name}"] = lost / total
    return judged
