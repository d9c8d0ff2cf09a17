"""`azjax eval`: a round robin of agents with an Elo table, or (--positions) each agent judged on the game's solved
positions. (The module is not named eval, the builtin.)"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import sys
import time
from pathlib import Path

from azjax.cli import common


def add_arguments(commands) -> None:
    evaluate = commands.add_parser(
        "eval",
        allow_abbrev=False,
        help="play agents against each other: results with 95%% intervals and an Elo table",
        description="Play two or more agents against each other, every pair (a round robin), half the games in "
        "each seat. Prints wins/draws/losses, the score with its 95% Wilson interval and the Elo difference per "
        "pairing, then a maximum-likelihood Elo table with random (else the first agent) at 0. In a one-player "
        "game (sliding_puzzle) each of one or more agents plays --games episodes from the same starts instead: its "
        "mean return with a 95% interval, and the share solved and solved in the fewest moves where the game brings "
        "an exact judge (Game.yardstick: the sliding puzzle's, or a puzzle of your own). Agents: "
        + common.AGENT_HELP + ".",
    )
    evaluate.add_argument("agents", nargs="+", metavar="AGENT", help="two or more agents (one or more in a "
                          "one-player game; see above)")
    evaluate.add_argument("--game", help="the game (default: the runs' game, else tic_tac_toe): " + common.GAME_HELP)
    evaluate.add_argument("--games", type=int, default=200, help="games per pairing, even: half in each seat "
                          "(default: 200)")
    evaluate.add_argument("--simulations", type=int, help="simulations per move of trained agents whose spec "
                          "gives none (default: the run's)")
    evaluate.add_argument("--search-policy", choices=["gumbel", "puct"], help="the search of trained agents "
                          "(default: the run's)")
    evaluate.add_argument("--opening-moves", type=int, default=0, help="each pair of games starts after K "
                          "opening moves, distinct between pairs where the game has enough, so that deterministic "
                          "agents do not replay one game; the table counts the distinct games (default: 0)")
    evaluate.add_argument("--opening-agent", default="random", metavar="AGENT", help="who plays the opening "
                          "moves: random (the default), or e.g. perfect for openings that never decide the game")
    evaluate.add_argument("--devices", type=int, help="split the games over this many devices, each playing its "
                          "share on its own (default: as many as divide --games / 2; on a CPU, azjax makes each "
                          "core a device)")
    _add_positions_options(evaluate)
    evaluate.add_argument("--seed", type=int, default=0, help="the random seed (default: 0)")
    evaluate.add_argument("--no-progress", action="store_true", help="on a terminal, no line that shows the games "
                          "finished (the positions judged, with --positions) and the time spent (with it, a match's "
                          "compiled program is not kept in the compilation cache: JAX keeps none with host "
                          "callbacks)")
    common.add_compile_cache_option(evaluate)
    evaluate.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON")
    evaluate.add_argument("--record", type=Path, metavar="PATH", help="also write every game (the moves as action "
                          "indices and the outcome) as JSON, which `azjax serve --record PATH` opens to step through")
    common.add_distributed_options(evaluate, "the games split over every process's devices; process 0 prints and "
                                   "writes --json")


def _add_positions_options(evaluate: argparse.ArgumentParser) -> None:
    evaluate.add_argument("--positions", action="store_true", help="instead of matches, judge each agent on the "
                          "game's solved positions (tic_tac_toe: all 4520; connect_four: six sets of 1000 from "
                          "random play): the share where its move keeps the game-theoretic outcome, per stratum "
                          "with 95%% intervals, and how often its value names the outcome. greedy:RUN judges the "
                          "network alone, RUN its search")
    evaluate.add_argument("--position-set", metavar="NAME", help="with --positions: another set of the game's "
                          "instead of its own (connect_four: pons, Pascal Pons's six published benchmark sets of "
                          "1000 positions)")
    evaluate.add_argument("--strata", nargs="+", metavar="NAME", help="with --positions: judge only the positions "
                          "of these strata (connect_four: begin-easy begin-medium begin-hard middle-easy "
                          "middle-medium end-easy), e.g. a costly search where it is not yet perfect")


def run(args: argparse.Namespace) -> int:
    from azjax import parallel

    parallel.expose_cpu_cores(args.devices)  # before jax starts its backend
    failed = common.join_processes(args, "eval")
    if failed is not None:
        return failed

    if not parallel.is_primary():  # every process plays its share; process 0 alone prints and writes --json
        with contextlib.redirect_stdout(io.StringIO()):
            return _evaluate(args)
    return _evaluate(args)


def _evaluate(args: argparse.Namespace) -> int:
    from azjax import agent_specs

    if args.positions and args.record is not None:
        raise agent_specs.SpecError("--record writes the games of matches, and --positions plays none")
    if args.position_set is not None and not args.positions:
        raise agent_specs.SpecError("--position-set names the set that --positions judges on: give --positions too")
    if args.strata is not None and not args.positions:
        raise agent_specs.SpecError("--strata names the strata that --positions judges: give --positions too")
    if args.positions:
        return _judge_on_positions(args)
    game = common.game_for(args.agents, args.game)
    if game.num_players == 1:
        return _play_episodes(args, game)
    return _play_matches(args)


def _play_episodes(args: argparse.Namespace, game) -> int:
    """A one-player game: each agent plays the same --games starts to their ends; its mean return with a 95%
    interval and, where the game brings a yardstick, the share solved and solved in the fewest moves."""
    import jax

    from azjax import agent_specs, evaluation, parallel
    from azjax.text import counted

    if args.games < 1:
        raise agent_specs.SpecError(f"--games must be >= 1, got {args.games}")
    if args.opening_moves or args.record is not None:
        raise agent_specs.SpecError(f"{game.name} is a one-player game: its agents play episodes from the same "
                                    "starts, with no openings and no match records (leave out --opening-moves "
                                    "and --record)")
    print(f"{game.name} (one player): {counted(len(args.agents), 'agent')}, {counted(args.games, 'episode')} each "
          "from the same starts.", flush=True)
    results = {}
    for spec in args.agents:
        bot = agent_specs.make_bot(spec, game, num_simulations=args.simulations, policy=args.search_policy)
        judged = evaluation.judge_episodes(jax.random.key(args.seed), game, bot, args.games)
        results[bot.name] = judged
        exact = "".join(f", {name.replace('_', ' ')} {judged[name]:.3f}" for name in
                        ("solved", "solved_optimally", "excess_moves") if name in judged)
        print(f"{bot.name}: mean return {judged['return']:.3f} [95% {judged['return_low']:.3f}, "
              f"{judged['return_high']:.3f}], {judged['length']:.1f} moves{exact}", flush=True)
    if args.json is not None and parallel.is_primary():
        args.json.write_text(json.dumps(dict(game=game.name, episodes=args.games, agents=results), indent=2) + "\n")
        print(f"Results written to {args.json}")
    return 0


def _play_matches(args: argparse.Namespace) -> int:
    import jax

    from azjax import agent_specs, parallel, progress, results, round_robin
    from azjax.text import counted

    _check_match_options(args)
    devices, mesh = _devices_and_mesh(args.devices, args.games)
    game = common.game_for(args.agents, args.game)
    if game.name == "connect_four" and args.opening_agent.strip() == "perfect":
        raise agent_specs.SpecError("Connect Four's perfect player cannot play the openings (the first positions take "
                             "minutes to solve): use --opening-agent random")
    common.check_connect_four_perfect(game, args.agents, args.opening_moves)
    players, opening = _players(args, game)
    opening_text = (
        f", openings of {counted(args.opening_moves, 'move')} by {opening.name}" if args.opening_moves
        else ", no openings"
    )
    on_devices = f", on {len(devices)} {devices[0].platform} devices" if mesh is not None else ""
    print(
        f"{game.name}: {counted(len(players), 'agent')}, {counted(args.games, 'game')} per pairing "
        f"({args.games // 2} in each seat)"
        f"{opening_text}{on_devices}.",
        flush=True,
    )
    width = max(12, *(len(bot.name) for bot in players))
    recorded: list[dict] = []  # --record: every game of every pairing
    if args.record is not None and not args.record.parent.is_dir():
        raise agent_specs.SpecError(f"--record {args.record}: no directory {args.record.parent} to write it in")
    print(results.match_header(width), flush=True)
    table = round_robin.round_robin(
        jax.random.key(args.seed),
        game,
        players,
        args.games,
        opening_moves=args.opening_moves,
        opening_agent=opening.act,
        on_match=lambda match: print(results.format_match(match, width), flush=True),
        mesh=mesh,
        progress=progress.MatchProgress() if sys.stderr.isatty() and parallel.is_primary() and not args.no_progress
        else None,
        on_games=None if args.record is None else (
            lambda name_a, name_b, games: recorded.extend(results.game_records(games, name_a, name_b))),
    )
    anchor = table.names[table.elo.anchor]
    print(f"\nElo (Bradley-Terry maximum likelihood, {anchor} = 0, one virtual draw per pairing):")
    print(results.format_elo(table.names, table.elo, table.matches, width))
    decisions = _pig_decisions(args, game, players, width)
    if args.json is not None and parallel.is_primary():
        args.json.write_text(json.dumps(dict(table.to_dict(), game=game.name, games_per_pairing=args.games,
                                             **decisions), indent=2) + "\n")
        print(f"Results written to {args.json}")
    if args.record is not None and parallel.is_primary():
        _write_record(args, table.names, recorded)
    return 0


def _pig_decisions(args: argparse.Namespace, game, players, width: int) -> dict:
    """Pig: every agent's decisions in --games games against itself, judged by the exact solution (printed; for
    --json, {"decisions": {name: figures}}); nothing for other games."""
    import functools

    import jax

    from azjax import evaluation, perfect

    if not perfect.is_pig(game):
        return {}
    tables = perfect.pig_tables(game)
    print(f"\nDecisions judged by the exact solution, in {args.games} games of each agent against itself:")
    judged = {}
    for number, bot in enumerate(players):
        figures = jax.device_get(jax.jit(functools.partial(
            evaluation.pig_decisions_in_own_games, game=game, agent=bot.act, num_games=args.games, tables=tables))(
            jax.random.fold_in(jax.random.key(args.seed), number)))
        judged[bot.name] = {name: float(value) for name, value in figures.items()}
        judged_count = int(figures["optimal_decisions/judged"])
        print(f"{bot.name:<{width}}  optimal {figures['optimal_decisions']:.3f} of {judged_count:,} decisions, chance "
              f"of winning lost {figures['win_probability_lost']:.4f} a decision", flush=True)
    return {"decisions": judged}


def _check_match_options(args: argparse.Namespace) -> None:
    """SpecError for options that a round robin cannot play."""
    from azjax import agent_specs

    if len(args.agents) < 2:
        raise agent_specs.SpecError("give at least two agents to play each other (or one with --positions)")
    if args.games < 2 or args.games % 2:
        raise agent_specs.SpecError(f"--games must be even and >= 2 (half in each seat), got {args.games}")
    if args.opening_moves < 0:
        raise agent_specs.SpecError(f"--opening-moves must be >= 0, got {args.opening_moves}")
    if args.simulations is not None and args.simulations < 1:
        raise agent_specs.SpecError(f"--simulations must be >= 1, got {args.simulations}")


def _devices_and_mesh(num_devices: int | None, num_games: int):
    """The devices that play the games (--devices) and their mesh, None on one device; SpecError if they cannot."""
    from azjax import agent_specs, parallel

    try:
        devices = parallel.choose_devices(num_devices, {"--games / 2": num_games // 2})
    except ValueError as error:
        raise agent_specs.SpecError(str(error)) from None
    mesh = parallel.make_mesh(devices) if len(devices) > 1 else None
    try:
        parallel.check_spans_processes(mesh, "--games / 2")
    except ValueError as error:
        raise agent_specs.SpecError(str(error)) from None
    return devices, mesh


def _players(args: argparse.Namespace, game):
    """The agents' bots, a spec given twice numbered apart (name#1, name#2), and the opening agent's bot."""
    from azjax import agent_specs

    perfect = None  # solved once, shared by every use of "perfect"
    players = []
    for spec in [*args.agents, args.opening_agent]:
        if spec.strip() == "perfect" and perfect is not None:
            players.append(perfect)
            continue
        bot = agent_specs.make_bot(spec, game, num_simulations=args.simulations, policy=args.search_policy)
        perfect = bot if spec.strip() == "perfect" else perfect
        players.append(bot)
    *players, opening = players
    names = [bot.name for bot in players]
    players = [  # the same spec twice: number the copies so that the table can tell them apart
        dataclasses.replace(bot, name=f"{bot.name}#{names[:i].count(bot.name) + 1}") if names.count(bot.name) > 1
        else bot
        for i, bot in enumerate(players)
    ]
    return players, opening


def _write_record(args: argparse.Namespace, agents: list[str], recorded: list[dict]) -> None:
    """Writes --record: the games of the match, which `azjax serve --record` opens (`azjax.serve.records`)."""
    from azjax import agent_specs, games, results
    from azjax.text import counted

    # The game as `games.make` takes it (`common.game_for`'s choice), so that the page can rebuild it.
    trained = (agent_specs.game_of_spec(spec) for spec in args.agents)
    game = games.canonical(args.game) if args.game else next((name for name in trained if name), "tic_tac_toe")
    document = {"format": results.RECORD_FORMAT, "version": results.RECORD_VERSION, "game": game, "agents": agents,
                "games": recorded}
    try:
        args.record.write_text(json.dumps(document) + "\n")
    except OSError as error:
        raise agent_specs.SpecError(f"--record {args.record}: cannot write it ({error.strerror or error})") from None
    print(f"{counted(len(recorded), 'game')} written to {args.record} (azjax serve --record {args.record} opens "
          "them)")


def _judge_on_positions(args: argparse.Namespace) -> int:
    import jax

    from azjax import agent_specs, evaluation, parallel, progress

    game = common.game_for(args.agents, args.game)
    labelled = _labelled_positions(game.name, args.position_set, args.strata)
    which = f" of the set {args.position_set}" if args.position_set else ""
    which += f" ({', '.join(labelled.strata)})" if args.position_set or args.strata else ""
    print(f"{game.name}: {len(args.agents)} agent(s) judged on {labelled.num_positions} solved positions{which}.",
          flush=True)
    results = {}
    shown = sys.stderr.isatty() and parallel.is_primary() and not args.no_progress
    for spec in args.agents:
        bot = agent_specs.make_bot(spec, game, num_simulations=args.simulations, policy=args.search_policy)
        started = time.perf_counter()

        def judged(done: int, total: int, name: str = bot.name, started: float = started) -> None:
            progress.show_progress(sys.stderr, f"{name}: {done} of {total} positions judged", started)
            if done == total:
                progress.clear_progress(sys.stderr)

        report = evaluation.judge_bot(jax.random.key(args.seed), bot, labelled, on_batch=judged if shown else None)
        print(f"\n{bot.name}:\n{report.format()}", flush=True)
        results[bot.name] = report.to_dict()
    if args.json is not None and parallel.is_primary():
        args.json.write_text(json.dumps(dict(game=game.name, position_set=args.position_set,
                                             strata=list(labelled.strata), positions=results),
                                        indent=2) + "\n")
        print(f"Results written to {args.json}")
    return 0


def _labelled_positions(game_name: str, position_set: str | None, strata: list[str] | None):
    """The solved positions to judge on (--position-set, --strata); SpecError if the game has none or no such."""
    from azjax import agent_specs
    from azjax.solver import positions

    try:
        labelled = positions.load(game_name, position_set)
    except ValueError as error:
        raise agent_specs.SpecError(f"--position-set: {error}") from None
    if labelled is None:
        raise agent_specs.SpecError(f"{game_name} has no labelled positions to judge agents on (tic_tac_toe and "
                             "connect_four have; see azjax.solver.positions.register for your own game)")
    if strata is not None:
        try:
            labelled = labelled.only(strata)
        except ValueError as error:
            raise agent_specs.SpecError(f"--strata: {error}") from None
    return labelled
