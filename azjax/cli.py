"""The `azjax` command: a thin layer that parses arguments and calls the library.

    azjax train                                   # tic-tac-toe on the CPU, stops by itself
    azjax train --game connect_four --seconds 600 --out runs/c4
    azjax train --search.num_simulations 64 --train.learning_rate 3e-4
    azjax train --out runs/c4                      # resume a run where it stopped (Ctrl-C stops it safely)
    azjax export runs/c4 models/c4                 # a small inference-only copy for load_agent / eval / play
    azjax eval runs/ttt perfect mcts:1000 random   # a round robin with an Elo table (`azjax eval --help`)
    azjax play runs/ttt                            # play the trained agent in the terminal
    azjax serve runs/ttt                           # or on a web page at http://127.0.0.1:8000/
    azjax check hex5:make_hex5                     # check a game of your own (make_hex5 in ./hex5.py)
    azjax train --game hex5:make_hex5 --out runs/hex5    # then train it; eval / play / resume take runs/hex5
    azjax train --network examples/mlp_network.py:make_mlp    # a network of your own (azjax.networks' contract)
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import io
import json
import math
import os
import sys
import time
from pathlib import Path

COMPILE_CACHE_ENV = "AZJAX_COMPILE_CACHE"  # a directory for jax's compilation cache, or "off"


def _add_config_options(parser: argparse.ArgumentParser) -> None:
    from azjax import config as config_lib

    groups: dict[str, argparse._ArgumentGroup] = {}
    for path, (kind, default, help_text) in config_lib.field_paths().items():
        if path in ("game", "num_iterations"):
            continue  # --game picks the preset and --iterations sets num_iterations: their own options
        section = path.split(".")[0] if "." in path else "run"
        group = groups.setdefault(section, parser.add_argument_group(f"config: {section}"))
        metavar = getattr(kind, "__name__", "VALUE").upper() if isinstance(kind, type) else "VALUE"
        group.add_argument(
            f"--{path}",
            dest=f"config:{path}",
            metavar=metavar,
            default=None,
            help=f"{help_text} (default: the preset's; generic default {default!r})",
        )


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default unless it is None or its help already says what the default is."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def _add_compile_cache_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-compile-cache", action="store_true", help="do not keep compiled programs between "
                        "runs (by default jax's persistent compilation cache in ~/.cache/azjax/jax, or "
                        f"${COMPILE_CACHE_ENV}, makes a second run start faster; {COMPILE_CACHE_ENV}=off also "
                        "turns it off)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `azjax` and its subcommands."""
    # allow_abbrev=False: an option is taken only as spelt (--search.num_simulation is not --search.num_simulations).
    parser = _Parser(prog="azjax", description="AlphaZero in functional JAX.", allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    train = commands.add_parser(
        "train",
        allow_abbrev=False,
        help="train an agent by self-play",
        description="Train an AlphaZero agent by self-play. With no arguments: tic-tac-toe, small CPU preset, "
        "stopping by itself after the preset's iterations. Every config field can be overridden below.",
        formatter_class=_HelpFormatter,
    )
    train.add_argument("--game", help="the game to train (default: tic_tac_toe, or the run's when --out holds "
                       "one): " + _GAME_HELP)
    train.add_argument("--preset", choices=["cpu", "gpu"], help="the game's preset config (default: cpu)")
    train.add_argument("--network", dest="config:network.module", metavar="MODULE:FACTORY",
                       help="train a network of your own: FACTORY(num_actions=..., observation_shape=...) in MODULE "
                            "(a module on the path or a .py file) returns a Flax module with the network contract "
                            "(azjax.networks), e.g. examples/mlp_network.py:make_mlp; the run records it, as it "
                            "does --game (the same as --network.module)")
    train.add_argument("--config", type=Path, help="start from this config.json (e.g. a run's) instead of a preset")
    train.add_argument("--out", type=Path, help="the run directory (default: runs/GAME-DATE-TIME); if it holds a "
                       "run, that run resumes from its last checkpoint with its own config (its config.json, else "
                       "its latest checkpoint's) and the overrides given here; with --game, --preset or --config "
                       "their config replaces the run's (none of the run's own settings are kept) and must fit the "
                       "run's checkpoints")
    train.add_argument("--init-from", metavar="AGENT", help="start a new run from this network's weights: "
                       "pretrained:GAME (a shipped agent; `azjax pretrained` lists them), a run directory or an "
                       "export; the optimizer, replay and games start fresh; its game is the run's unless --game "
                       "says otherwise; with a preset the network takes the source's shape and the learning rate "
                       "warms up until the replay first fills (--network.* and --train.warmup_steps win; a shape "
                       "that does not fit is refused, naming what differs)")
    train.add_argument("--iterations", type=int, help="stop after this many iterations in total, counting those "
                       "of a resumed run (sets num_iterations; default: the preset's or the run's)")
    train.add_argument("--seconds", type=float, help="train for this many seconds (wall clock, compilation "
                       "included): a new run trains for the time, whatever its preset's iterations; with --iterations, "
                       "or resuming a run (its own iterations), whichever ends first; the learning-rate schedule "
                       "spans what ends the run")
    train.add_argument("--checkpoint-every", type=int, default=10, help="checkpoint every N iterations (and "
                       "always when training stops)")
    train.add_argument("--keep", type=int, default=3, help="keep the last N checkpoints (and the best)")
    train.add_argument("--best-metric", default="eval/score", help="the logged metric whose highest value marks "
                       "the best checkpoint, kept beside the last --keep ones")
    train.add_argument("--eval-every", type=int, default=10, help="every N iterations, and at the end of a run "
                       "that --seconds stops, the agent plays fixed baselines (--eval-opponents); scores go into "
                       "metrics.jsonl as eval/...; 0 = never")
    train.add_argument("--eval-games", type=int, default=64, help="games against each baseline in an "
                       "evaluation, half in each seat (even)")
    train.add_argument("--eval-opponents", metavar="AGENT,AGENT", help="the baselines, comma-separated agents "
                       "without run directories (default: random, onestep, mcts:100 for games shorter than 100 "
                       "moves, perfect for tic_tac_toe)")
    train.add_argument("--devices", type=int, help="split the games and the SGD batch over this many devices "
                       "(default: all jax sees, as many as divide both; on a CPU one device per core, but one "
                       "device for networks too small for the split to pay, as measured; the run prints its "
                       "choice and why); 1 = no split")
    train.add_argument("--no-progress", action="store_true", help="no progress bar (for logs)")
    train.add_argument("--past-perfect", action="store_true", help="go on training after an evaluation finds "
                       "perfect play (tic-tac-toe: optimal in all its solved positions, no loss to the perfect "
                       "player), where a run otherwise stops")
    _add_distributed_options(train, "one mesh over every process's devices; process 0 writes the run directory, "
                             "which every process must see (a shared file system)")
    _add_compile_cache_option(train)
    train.add_argument("--list-games", action="store_true", help="list the registered games and the pgx "
                       "environments the adapter takes, and exit")
    _add_config_options(train)

    export = commands.add_parser(
        "export",
        allow_abbrev=False,
        help="write a small inference-only copy of a run's checkpoint",
        description="Write the network's parameters and the config needed to rebuild it (no optimizer state or "
        "replay buffer) from a run's checkpoint to OUT, which azjax.load_agent, `azjax eval` and `azjax play` load "
        "like a run directory.",
    )
    export.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="the --out directory of `azjax train`")
    export.add_argument("out", type=Path, metavar="OUT", help="the directory to write")
    which = export.add_mutually_exclusive_group()
    which.add_argument("--iteration", type=int, help="export this iteration's checkpoint (default: the latest)")
    which.add_argument("--best", action="store_true", help="export the checkpoint with the highest --best-metric")
    export.add_argument("--best-metric", default="eval/score", help="the metric --best maximises")
    export.add_argument("--force", action="store_true", help="replace OUT if it is an earlier export")
    _add_eval_and_play(commands)
    _add_serve(commands)

    commands.add_parser(
        "pretrained",
        allow_abbrev=False,
        help="list the trained agents shipped with azjax and their measured strength",
        description="List the trained agents that ship inside the package, one per game, with how each was "
        "trained and its strength as measured (each figure's command is in its model card, "
        "azjax/pretrained/GAME/card.json). Use one as pretrained:GAME (or the game's name) wherever an agent "
        "goes: azjax play connect_four, azjax eval pretrained:connect_four mcts:1600, "
        "azjax train --init-from pretrained:connect_four.",
    )

    check = commands.add_parser(
        "check",
        allow_abbrev=False,
        help="check that a game follows the protocol (before training on it)",
        description="Play random games of GAME under jit and vmap and check every rule of the game protocol "
        "(azjax.games.check_game: shapes, dtypes, tracing, terminal and illegal moves, zero-sum rewards, "
        "symmetries, ...), and the test positions given with --positions. Prints the report and its warnings; "
        "exits 1 when a check fails.",
    )
    check.add_argument("game", metavar="GAME", help=_GAME_HELP)
    check.add_argument("--positions", metavar="MODULE:NAME", help="your own test positions: a list of "
                       "azjax.games.Position in a module, e.g. hex5:TEST_POSITIONS")
    check.add_argument("--games", type=int, default=64, help="random games played at once (default: 64)")
    check.add_argument("--seed", type=int, default=0, help="the seed of the random games (default: 0)")
    return parser


_GAME_HELP = (
    "a registered name (azjax train --list-games lists them), pgx:<env_id> for a pgx environment, or a game of "
    "your own as MODULE:FACTORY, e.g. hex5:make_hex5 (make_hex5 in ./hex5.py, or hex5 on PYTHONPATH or installed) or "
    "path/to/hex5.py:make_hex5: any other name containing ':' is MODULE:FACTORY; the run records it, so later "
    "commands on the run find the game by themselves"
)

_AGENT_HELP = (
    "random | onestep (takes a win, blocks a loss in one) | mcts:N (UCT with random rollouts, N simulations) | "
    "perfect (exact: tic_tac_toe; connect_four from 10 stones on) | greedy:RUN_DIR (the network, no search) | "
    "az:RUN_DIR[:SIMS][:reuse|:fresh] or RUN_DIR "
    "(the network with search; :reuse keeps its search tree from move to move, following both sides' moves, "
    ":fresh searches every position anew; default: reuse with PUCT, where it wins at equal time, not with Gumbel)"
)


def _add_eval_and_play(commands) -> None:
    evaluate = commands.add_parser(
        "eval",
        allow_abbrev=False,
        help="play agents against each other: results with 95%% intervals and an Elo table",
        description="Play two or more agents against each other, every pair (a round robin), half the games in "
        "each seat. Prints wins/draws/losses, the score with its 95% Wilson interval and the Elo difference per "
        "pairing, then a maximum-likelihood Elo table with random (else the first agent) at 0. Agents: "
        + _AGENT_HELP + ".",
    )
    evaluate.add_argument("agents", nargs="+", metavar="AGENT", help="two or more agents (see above)")
    evaluate.add_argument("--game", help="the game (default: the runs' game, else tic_tac_toe): " + _GAME_HELP)
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
    evaluate.add_argument("--seed", type=int, default=0, help="the random seed (default: 0)")
    evaluate.add_argument("--no-progress", action="store_true", help="on a terminal, no line that shows the games "
                          "finished (the positions judged, with --positions) and the time spent (with it, a match's "
                          "compiled program is not kept in the compilation cache: JAX keeps none with host "
                          "callbacks)")
    _add_compile_cache_option(evaluate)
    evaluate.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON")
    evaluate.add_argument("--record", type=Path, metavar="PATH", help="also write every game (the moves as action "
                          "indices and the outcome) as JSON, which `azjax serve --record PATH` opens to step through")
    _add_distributed_options(evaluate, "the games split over every process's devices; process 0 prints and writes "
                             "--json")

    play = commands.add_parser(
        "play",
        allow_abbrev=False,
        help="play against an agent in the terminal",
        description="Play a game against an agent in the terminal: type moves such as b2 (tic-tac-toe) or d "
        "(Connect Four); 'help' lists the legal moves, 'quit' stops. Agents: " + _AGENT_HELP + ".",
    )
    play.add_argument("agent", nargs="?", metavar="AGENT", help="the opponent; a game's name plays the agent "
                      "shipped for it, e.g. `azjax play connect_four` (default: the game's shipped agent where "
                      "there is one, else mcts:1000)")
    play.add_argument("--game", help="the game (default: the run's, else tic_tac_toe): " + _GAME_HELP)
    play.add_argument("--first", choices=["you", "agent", "random"], default="you", help="who moves first "
                      "(default: you)")
    play.add_argument("--simulations", type=int, help="the trained agent's simulations per move (default: the "
                      "run's)")
    play.add_argument("--search-policy", choices=["gumbel", "puct"], help="the trained agent's search")
    play.add_argument("--no-analysis", action="store_true", help="hide the agent's value and candidate moves")
    play.add_argument("--opening-moves", type=int, default=0, metavar="K", help="start after K random moves "
                      "(default: 0; connect_four's perfect player needs 10)")
    play.add_argument("--seed", type=int, help="the random seed (default: a new one each game)")
    _add_compile_cache_option(play)


def _add_serve(commands) -> None:
    serve = commands.add_parser(
        "serve",
        allow_abbrev=False,
        help="a local web page to play and watch any game against any agent",
        description="Serve a web page (at http://HOST:PORT/) to play any game against an agent by clicking on the "
        "board, watch two agents play, and step through recorded games, with an agent's search (each candidate "
        "move's visits, value and prior) shown for the position on the board. The page offers the agents named "
        "here, random and mcts:200 (and the shipped agents when none is named), and reads no other run "
        "directory. Ctrl-C stops it. Agents: " + _AGENT_HELP + ".",
    )
    serve.add_argument("agents", nargs="*", metavar="AGENT", help="agents to offer (see above)")
    serve.add_argument("--game", help="the game the page starts with (default: the first agent's, else "
                       "tic_tac_toe); every registered game is offered: " + _GAME_HELP)
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1, this "
                       "machine only)")
    serve.add_argument("--port", type=int, default=8000, help="the port (default: 8000; 0 picks a free one)")
    serve.add_argument("--max-games", type=int, default=32, metavar="N", help="games kept at once; the oldest is "
                       "dropped beyond (default: 32)")
    serve.add_argument("--record", type=Path, action="append", default=[], metavar="PATH", help="a file of games "
                       "written by `azjax eval --record`, to open on the page (repeat for several)")
    serve.add_argument("--simulations", type=int, help="simulations per move of trained agents whose spec gives "
                       "none (default: the run's)")
    serve.add_argument("--search-policy", choices=["gumbel", "puct"], help="the search of trained agents")
    _add_compile_cache_option(serve)


def _serve(args: argparse.Namespace) -> int:
    from azjax import bots, serve
    from azjax.text import counted

    if args.max_games < 1:
        raise bots.SpecError(f"--max-games must be >= 1, got {args.max_games}")
    if not 0 <= args.port <= 65535:
        raise bots.SpecError(f"--port must be 0 to 65535, got {args.port}")
    if args.simulations is not None and args.simulations < 1:
        raise bots.SpecError(f"--simulations must be >= 1, got {args.simulations}")
    if args.agents:
        print(f"Loading {', '.join(args.agents)} ...", flush=True)
    try:
        server = serve.GameServer.from_specs(args.agents, game=args.game, records=args.record,
                                             max_games=args.max_games, num_simulations=args.simulations,
                                             policy=args.search_policy)
    except serve.RecordError as error:
        print(f"azjax serve: error: {error}", file=sys.stderr)
        return 2
    try:
        http = serve.make_http_server(server, args.host, args.port)
    except OSError as error:
        server.close()
        print(f"azjax serve: error: cannot listen on {args.host}:{args.port}: {error.strerror or error}; choose "
              "another --port (0 picks a free one)", file=sys.stderr)
        return 1
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"Serving {counted(len(server.agents), 'agent')} ({', '.join(server.agents)}) and "
          f"{counted(len(server.game_names), 'game')}"
          + (f", {counted(len(server.records), 'record')}" if server.records else "")
          + f" at http://{host}:{http.server_port}/ (Ctrl-C stops)", flush=True)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"Listening on {args.host}: anyone who can reach this machine can use the page and its CPU.")
    try:
        http.serve_forever()  # returns on Ctrl-C: werkzeug's server takes the KeyboardInterrupt itself
    except KeyboardInterrupt:
        pass
    finally:
        http.server_close()
        server.close()
    print("\nStopped.")
    return 0


def _game_for(specs: list[str], requested: str | None):
    """The game the agents play: --game, else the one their run directories were trained on."""
    from azjax import bots, games

    trained = {}
    for spec in specs:
        name = bots.game_of_spec(spec)
        if name is not None:
            trained[spec] = name
    if requested is not None:
        requested = games.canonical(requested)
        games.check_known(requested)
    if len(set(trained.values())) > 1:
        listed = ", ".join(f"{spec} ({name})" for spec, name in trained.items())
        raise bots.SpecError(f"the agents were trained on different games: {listed}")
    return games.make(requested or next(iter(trained.values()), "tic_tac_toe"))


def _eval(args: argparse.Namespace) -> int:
    from azjax import parallel

    parallel.expose_cpu_cores(args.devices)  # before jax starts its backend
    failed = _join_processes(args, "eval")
    if failed is not None:
        return failed

    if not parallel.is_primary():  # every process plays its share; process 0 alone prints and writes --json
        with contextlib.redirect_stdout(io.StringIO()):
            return _eval_matches(args)
    return _eval_matches(args)


def _eval_matches(args: argparse.Namespace) -> int:
    import jax

    from azjax import arena, bots, parallel
    from azjax.text import counted

    if args.positions and args.record is not None:
        raise bots.SpecError("--record writes the games of matches, and --positions plays none")
    if args.position_set is not None and not args.positions:
        raise bots.SpecError("--position-set names the set that --positions judges on: give --positions too")
    if args.strata is not None and not args.positions:
        raise bots.SpecError("--strata names the strata that --positions judges: give --positions too")
    if args.positions:
        return _judge_on_positions(args)
    if len(args.agents) < 2:
        raise bots.SpecError("give at least two agents to play each other (or one with --positions)")
    if args.games < 2 or args.games % 2:
        raise bots.SpecError(f"--games must be even and >= 2 (half in each seat), got {args.games}")
    if args.opening_moves < 0:
        raise bots.SpecError(f"--opening-moves must be >= 0, got {args.opening_moves}")
    if args.simulations is not None and args.simulations < 1:
        raise bots.SpecError(f"--simulations must be >= 1, got {args.simulations}")
    try:
        devices = parallel.choose_devices(args.devices, {"--games / 2": args.games // 2})
    except ValueError as error:
        raise bots.SpecError(str(error)) from None
    mesh = parallel.make_mesh(devices) if len(devices) > 1 else None
    try:
        parallel.check_spans_processes(mesh, "--games / 2")
    except ValueError as error:
        raise bots.SpecError(str(error)) from None
    game = _game_for(args.agents, args.game)
    if game.name == "connect_four" and args.opening_agent.strip() == "perfect":
        raise bots.SpecError("Connect Four's perfect player cannot play the openings (the first positions take "
                               "minutes to solve): use --opening-agent random")
    _check_connect_four_perfect(game, args.agents, args.opening_moves)
    perfect = None  # solved once, shared by every use of "perfect"
    players = []
    for spec in [*args.agents, args.opening_agent]:
        if spec.strip() == "perfect" and perfect is not None:
            players.append(perfect)
            continue
        bot = bots.make_bot(spec, game, num_simulations=args.simulations, policy=args.search_policy)
        perfect = bot if spec.strip() == "perfect" else perfect
        players.append(bot)
    *players, opening = players
    names = [bot.name for bot in players]
    players = [  # the same spec twice: number the copies so that the table can tell them apart
        dataclasses.replace(bot, name=f"{bot.name}#{names[:i].count(bot.name) + 1}") if names.count(bot.name) > 1
        else bot
        for i, bot in enumerate(players)
    ]
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
        raise bots.SpecError(f"--record {args.record}: no directory {args.record.parent} to write it in")
    print(arena.match_header(width), flush=True)
    table = arena.round_robin(
        jax.random.key(args.seed),
        game,
        players,
        args.games,
        opening_moves=args.opening_moves,
        opening_agent=opening.act,
        on_match=lambda match: print(arena.format_match(match, width), flush=True),
        mesh=mesh,
        progress=arena.MatchProgress() if sys.stderr.isatty() and parallel.is_primary() and not args.no_progress
        else None,
        on_games=None if args.record is None else (
            lambda name_a, name_b, games: recorded.extend(arena.game_records(games, name_a, name_b))),
    )
    anchor = table.names[table.elo.anchor]
    print(f"\nElo (Bradley-Terry maximum likelihood, {anchor} = 0, one virtual draw per pairing):")
    print(arena.format_elo(table.names, table.elo, table.matches, width))
    if args.json is not None and parallel.is_primary():
        args.json.write_text(json.dumps(dict(table.to_dict(), game=game.name, games_per_pairing=args.games), indent=2)
                             + "\n")
        print(f"Results written to {args.json}")
    if args.record is not None and parallel.is_primary():
        _write_record(args, table.names, recorded)
    return 0


def _write_record(args: argparse.Namespace, agents: list[str], recorded: list[dict]) -> None:
    """Writes --record: the games of the match, which `azjax serve --record` opens (`azjax.serve.records`)."""
    from azjax import arena, bots, games
    from azjax.text import counted

    # The game as `games.make` takes it (`_game_for`'s choice), so that the page can rebuild it.
    trained = (bots.game_of_spec(spec) for spec in args.agents)
    game = games.canonical(args.game) if args.game else next((name for name in trained if name), "tic_tac_toe")
    document = {"format": arena.RECORD_FORMAT, "version": arena.RECORD_VERSION, "game": game, "agents": agents,
                "games": recorded}
    try:
        args.record.write_text(json.dumps(document) + "\n")
    except OSError as error:
        raise bots.SpecError(f"--record {args.record}: cannot write it ({error.strerror or error})") from None
    print(f"{counted(len(recorded), 'game')} written to {args.record} (azjax serve --record {args.record} opens "
          "them)")


def _check_connect_four_perfect(game, specs: list[str], opening_moves: int) -> None:
    """Connect Four's perfect player answers from CONNECT_FOUR_PERFECT_MIN_STONES stones on: say so up front."""
    from azjax import bots

    minimum = bots.CONNECT_FOUR_PERFECT_MIN_STONES
    if game.name == "connect_four" and "perfect" in [spec.strip() for spec in specs] and opening_moves < minimum:
        raise bots.SpecError(
            f"Connect Four's perfect player answers positions of {minimum} or more stones in about a second on "
            f"average, earlier ones take minutes: give --opening-moves {minimum} (or more)"
        )


def _judge_on_positions(args: argparse.Namespace) -> int:
    import jax

    from azjax import arena, bots, evaluation, parallel
    from azjax.solver import positions

    game = _game_for(args.agents, args.game)
    try:
        labelled = positions.load(game.name, args.position_set)
    except ValueError as error:
        raise bots.SpecError(f"--position-set: {error}") from None
    if labelled is None:
        raise bots.SpecError(f"{game.name} has no labelled positions to judge agents on (tic_tac_toe and "
                               "connect_four have; see azjax.solver.positions.register for your own game)")
    if args.strata is not None:
        try:
            labelled = labelled.only(args.strata)
        except ValueError as error:
            raise bots.SpecError(f"--strata: {error}") from None
    which = f" of the set {args.position_set}" if args.position_set else ""
    which += f" ({', '.join(labelled.strata)})" if args.position_set or args.strata else ""
    print(f"{game.name}: {len(args.agents)} agent(s) judged on {labelled.num_positions} solved positions{which}.",
          flush=True)
    results = {}
    shown = sys.stderr.isatty() and parallel.is_primary() and not args.no_progress
    for spec in args.agents:
        bot = bots.make_bot(spec, game, num_simulations=args.simulations, policy=args.search_policy)
        started = time.perf_counter()

        def judged(done: int, total: int, name: str = bot.name, started: float = started) -> None:
            arena.show_progress(sys.stderr, f"{name}: {done} of {total} positions judged", started)
            if done == total:
                arena.clear_progress(sys.stderr)

        report = evaluation.judge_bot(jax.random.key(args.seed), bot, labelled, on_batch=judged if shown else None)
        print(f"\n{bot.name}:\n{report.format()}", flush=True)
        results[bot.name] = report.to_dict()
    if args.json is not None and parallel.is_primary():
        args.json.write_text(json.dumps(dict(game=game.name, position_set=args.position_set,
                                             strata=list(labelled.strata), positions=results),
                                        indent=2) + "\n")
        print(f"Results written to {args.json}")
    return 0


def _play(args: argparse.Namespace) -> int:
    import random

    import jax

    from azjax import bots, games, play, pretrained

    if args.agent is None:  # the shipped agent of the game asked for, else UCT
        name = games.canonical(args.game) if args.game else "tic_tac_toe"
        args.agent = pretrained.PREFIX + name if name in pretrained.names() else "mcts:1000"
    game = _game_for([args.agent], args.game)
    if args.simulations is not None and args.simulations < 1:
        raise bots.SpecError("--simulations must be >= 1")
    if args.opening_moves < 0:
        raise bots.SpecError("--opening-moves must be >= 0")
    _check_connect_four_perfect(game, [args.agent], args.opening_moves)
    print(f"Loading {bots.bot_name(args.agent)} ...", flush=True)  # a game's name: its shipped agent
    bot = bots.make_bot(args.agent, game, num_simulations=args.simulations, policy=args.search_policy)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    first = {"you": 0, "agent": 1, "random": None}[args.first]
    human_player = first if first is not None else random.Random(seed).randrange(2)
    record = play.play_game(
        game, bot, human_player=human_player, key=jax.random.key(seed), show_analysis=not args.no_analysis,
        opening_moves=args.opening_moves,
    )
    if record.moves:
        print(f"Moves: {' '.join(record.moves)}")
    return 0


def _config_from_args(args: argparse.Namespace):
    from azjax import checkpointing, games, presets, rundir
    from azjax import config as config_lib

    run_config = None if args.out is None else args.out / rundir.CONFIG_FILE
    latest = None if args.out is None else checkpointing.latest_iteration(args.out)
    game, preset = args.game or "tic_tac_toe", args.preset or "cpu"
    from_preset = False
    if args.config is not None:
        origin = f"from {args.config}"
        if not args.config.is_file():
            raise config_lib.ConfigError(f"--config {args.config}: no such file")
        try:
            config = config_lib.from_json(args.config.read_text())
        except (OSError, UnicodeDecodeError) as error:
            raise config_lib.ConfigError(f"--config {args.config}: cannot read it ({error})") from None
        except config_lib.ConfigError as error:
            raise config_lib.ConfigError(f"--config {args.config}: {error}") from None
    elif args.game is None and args.preset is None and run_config is not None and run_config.is_file():
        config = rundir.read_config(args.out)  # resuming: the run's own settings, then any overrides
        origin = f"the run's own, from {run_config}"
    elif args.game is None and args.preset is None and latest is not None:
        config = checkpointing.CheckpointManager(args.out).config(latest)  # config.json lost: the checkpoint's
        origin = f"the run's own, from its checkpoint of iteration {latest} ({run_config} is missing)"
    else:
        config = presets.get_config(game, preset)
        origin = presets.preset_origin(game, preset)
        from_preset = True
    overrides = {
        key.split(":", 1)[1]: value
        for key, value in vars(args).items()
        if key.startswith("config:") and value is not None
    }
    if args.iterations is not None:
        overrides["num_iterations"] = args.iterations
    if overrides.get("network.module"):  # recorded so that it opens from any directory, as --game's source
        overrides["network.module"] = games.canonical(str(overrides["network.module"]))
    if overrides:
        origin += f", with {', '.join(f'{name}={value}' for name, value in overrides.items())}"
    if getattr(args, "seconds", None) is not None and args.iterations is None and latest is None:
        # A new run given a time budget trains for that time: the preset's (or file's) iterations do not cut it short.
        overrides["num_iterations"] = config_lib.TIME_BUDGET_ITERATIONS
        origin += f", for {args.seconds:g} s (--seconds; --iterations would cap it)"
    config = config_lib.with_overrides(config, overrides)
    if config.observation_version is not None:
        try:
            config.make_game()
        except games.ObservationVersionError as error:
            raise config_lib.ConfigError(f"--observation_version {config.observation_version}: {error}") from None
    if from_preset and getattr(args, "init_from", None) is not None:  # a new run, fitted to its source
        from azjax import trainer

        config, changes = trainer.warm_start_config(config, checkpointing.restore_config(args.init_from),
                                                    keep=frozenset(overrides))
        if changes:
            origin += f"; for a start from {args.init_from}: {', '.join(changes)}"
    return config, origin


def _file_name(game: str) -> str:
    """A game's name as a run directory's: a source's module ("hex5" for "path/hex5.py:make_hex5"), no ':'."""
    from azjax import games

    if games.is_source(game):
        return Path(game.rsplit(":", 1)[0]).name.removesuffix(".py").replace(".", "-")
    return game.replace(":", "-")


def _check(args: argparse.Namespace) -> int:
    from azjax import games
    from azjax.text import counted

    if args.games < 2:
        print(f"azjax check: error: --games must be >= 2 (two batches of random games are compared), got "
              f"{args.games}", file=sys.stderr)
        return 2
    game_name = games.canonical(args.game)
    game = games.make(game_name)
    positions = None
    if args.positions is not None:
        positions = games.load_positions(games.canonical(args.positions))
    print(f"Checking {game.name} ({args.games} random games"
          + (f", {counted(len(positions), 'test position')}" if positions else "") + ") ...", flush=True)
    try:
        report = games.check_game(game, num_games=args.games, seed=args.seed, positions=positions)
    except games.GameCheckError as error:
        print(f"FAILED: {error}", file=sys.stderr)
        return 1
    print(report)
    return 0


def _add_distributed_options(parser: argparse.ArgumentParser, how: str) -> None:
    group = parser.add_argument_group(
        "several processes", "one job over several hosts (or one process per GPU): start the same command in every "
        "process with these three (jax.distributed); on SLURM, Open MPI and TPU pod slices jax finds them itself. "
        + how[0].upper() + how[1:])
    group.add_argument("--coordinator-address", metavar="HOST:PORT", help="process 0's address, reachable by all")
    group.add_argument("--num-processes", type=int, metavar="N", help="how many processes take part")
    group.add_argument("--process-id", type=int, metavar="I", help="this process's id, 0 .. N - 1")
    group.add_argument("--distributed-timeout", type=int, default=300, metavar="SECONDS", help="give up on "
                       "reaching the coordinator, or on a process that stopped answering, after this long")


def _join_processes(args: argparse.Namespace, command: str) -> int | None:
    """Joins the processes of a multi-process run; an exit status if that failed, else None."""
    from azjax import parallel

    try:
        parallel.initialize_distributed(args.coordinator_address, args.num_processes, args.process_id,
                                        timeout_s=args.distributed_timeout, command=f"azjax {command}")
    except ValueError as error:
        print(f"azjax {command}: error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # noqa: BLE001 - jax raises several types when the coordinator is unreachable
        print(f"azjax {command}: error: could not join the other processes through the coordinator at "
              f"{args.coordinator_address or '(found by jax)'} within {args.distributed_timeout} s: "
              f"{str(error).splitlines()[0] if str(error) else type(error).__name__}; check that process 0 runs "
              "and that every process can reach its address and port", file=sys.stderr)
        return 1
    return None


def _train(args: argparse.Namespace) -> int:
    from azjax import bots, checkpointing, games, interrupts, parallel, rundir, trainer
    from azjax import config as config_lib
    from azjax.text import counted

    parallel.expose_cpu_cores(args.devices)  # before jax starts its backend
    failed = _join_processes(args, "train")
    if failed is not None:
        return failed

    if args.list_games:
        from azjax.games.pgx_adapter import SUPPORTED_ENVS

        print("\n".join(games.names()))
        print(f"pgx:<env_id> with pip install 'azjax[pgx]', env_id one of: {', '.join(sorted(SUPPORTED_ENVS))}")
        print("MODULE:FACTORY for a game of your own, e.g. hex5:make_hex5 (README: Your own game)")
        return 0
    try:
        if args.init_from is not None and args.game is None and args.config is None and (
                args.out is None or not (args.out / rundir.CONFIG_FILE).is_file()):
            args.game = bots.game_of_spec(args.init_from)  # the source's game, and so its preset
            if args.game is None:
                raise bots.SpecError(f"--init-from {args.init_from!r} is no run directory, export or shipped "
                                     "agent: give the --out of a run, an export or pretrained:GAME")
        if args.game is not None:
            args.game = games.canonical(args.game)
            games.check_known(args.game)
        config, origin = _config_from_args(args)
    except (config_lib.ConfigError, games.GameNotFoundError) as error:
        print(f"azjax train: error: {error}", file=sys.stderr)
        return 2
    if args.seconds is not None and not (math.isfinite(args.seconds) and args.seconds > 0):
        print(f"azjax train: error: --seconds must be a finite number > 0, got {args.seconds}", file=sys.stderr)
        return 2
    opponents = _opponents(args.eval_opponents, config.game)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = args.out or Path("runs") / f"{_file_name(config.game)}-{stamp}"
    if config.num_iterations != config_lib.TIME_BUDGET_ITERATIONS:
        budget = counted(config.num_iterations, "iteration")
        budget += f", at most {args.seconds:g} s" if args.seconds else ""
    else:  # a run its --seconds alone ends (resumed without them: until stopped)
        budget = f"{args.seconds:g} s" if args.seconds else "until stopped: it began on --seconds alone, none given now"
    print(f"Training {config.game} into {run_dir} ({budget})")
    print(f"Config: {origin}.")
    if args.preset == "gpu" and jax_platform() == "cpu":
        print(gpu_preset_on_cpu_note(config))
    if args.checkpoint_every < 1 or args.keep < 1:
        print("azjax train: error: --checkpoint-every and --keep must be >= 1", file=sys.stderr)
        return 2
    if args.eval_games < 2 or args.eval_games % 2:
        print(f"azjax train: error: --eval-games must be even and >= 2 (half in each seat), got {args.eval_games}",
              file=sys.stderr)
        return 2
    if args.eval_every < 0:
        print(f"azjax train: error: --eval-every must be >= 0 (0 = never), got {args.eval_every}", file=sys.stderr)
        return 2
    resume = f"azjax train --out {run_dir}"

    def stopped_at_once() -> str:
        latest = checkpointing.latest_iteration(run_dir)
        kept = f"the last checkpoint (iteration {latest}) is kept" if latest else "no checkpoint was written"
        return f"Stopped at once; {kept}. Resume with: {resume}"

    try:
        # The trainer's first Ctrl-C stops the run after its iteration; it hands a second one on to this.
        with interrupts.exit_at_once(stopped_at_once):
            result = trainer.train(
                config,
                run_dir,
                max_seconds=args.seconds,
                checkpoint_every=args.checkpoint_every,
                keep_checkpoints=args.keep,
                best_metric=args.best_metric,
                eval_every=args.eval_every,
                eval_games=args.eval_games,
                eval_opponents=opponents,
                progress=not args.no_progress,
                num_devices=args.devices,
                init_from=args.init_from,
                stop_when_perfect=not args.past_perfect,
            )
    except trainer.NonFiniteError as error:
        print(f"azjax train: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # raised by something of the user's (a game module, a callback): stopped at once
        print(stopped_at_once(), file=sys.stderr)
        return 130
    last = result.history[-1] if result.history else None
    if last is not None:
        trained = sum(record.get("sgd_steps", 1) for record in result.history)
        loss = (f"loss {last['loss']:.3f}" if trained
                else "no SGD step taken (too few positions of finished games: see above)")
        print(
            f"{'Done' if result.stop_reason == 'iterations' else 'Stopped'} ({result.stop_reason}): iteration "
            f"{last['iteration']}, {last['time']:.0f} s, {loss}, {last['positions_per_second']:,.0f} positions/s."
        )
        if args.seconds is not None and args.iterations is None and result.stop_reason == "iterations":
            # Only a resumed run keeps its own iterations under --seconds; a new one trains for the time.
            print(f"Its {config.num_iterations} iterations (num_iterations: the resumed run's, not --seconds) ended "
                  f"the run before its {args.seconds:g} s; pass --iterations N as well to train on, the "
                  "learning-rate schedule then spanning the N iterations or the time, whichever ends first.")
    if result.stop_reason not in ("iterations", "perfect"):
        if result.last_checkpoint:
            print(f"Checkpoint saved at iteration {result.last_checkpoint}. Resume with: {resume}")
        else:
            print(f"Stopped before the first iteration finished; nothing to save. Start again with: {resume}")
    print(f"Run directory: {run_dir} (config.json, metrics.jsonl, tensorboard/, checkpoints/, learning_curves.png)")
    return 0


def jax_platform() -> str:
    """The platform of the devices jax uses here ("cpu", "gpu", "tpu")."""
    import jax

    return jax.default_backend()


def gpu_preset_on_cpu_note(config) -> str:
    """What a GPU preset's run costs where jax has only the CPU: its sizes are an accelerator's."""
    from azjax import trainer

    net = config.network
    return (f"Note: this is the gpu preset, on a CPU: {trainer.describe_iteration(config)}, a {net.num_blocks} x "
            f"{net.num_channels} {net.compute_dtype} network, sizes for an accelerator; on this CPU an iteration takes "
            "minutes, the first longer (its compilation). The cpu preset (no --preset) is sized for a CPU; "
            "--selfplay.num_games N shrinks this one.")


def _opponents(text: str | None, game_name: str) -> tuple[str, ...] | None:
    """--eval-opponents as agent specs, None when not given.

    Raises:
      SpecError: none given, one with a run directory (the baselines are fixed agents), or one the game cannot
        have (e.g. perfect beyond small games).
    """
    from azjax import bots, games

    if text is None:
        return None
    specs = tuple(spec.strip() for spec in text.split(",") if spec.strip())
    if not specs:
        raise bots.SpecError("--eval-opponents names no agent: give e.g. random,onestep,mcts:100")
    for spec in specs:
        if spec not in ("random", "onestep", "perfect") and not spec.startswith("mcts:"):
            raise bots.SpecError(f"--eval-opponents: {spec!r} is not a baseline; give random, onestep, mcts:N or "
                                 "perfect, comma-separated")
    game = games.make(game_name)
    for spec in specs:
        bots.make_bot(spec, game)  # a malformed spec says so now, not at the first evaluation
    return specs


def _pretrained() -> int:
    from azjax import games, pretrained

    shipped = pretrained.names()
    for name in shipped:
        print(pretrained.describe(name))
    missing = [name for name in games.names() if name not in shipped]
    if missing:
        print(f"No agent ships for {', '.join(missing)}: train one with azjax train --game GAME.")
    return 0


def _export(args: argparse.Namespace) -> int:
    from azjax import checkpointing

    info = checkpointing.export_model(
        args.run_dir,
        args.out,
        iteration=args.iteration,
        best_metric=args.best_metric if args.best else None,
        overwrite=args.force,
    )
    size = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file())
    print(
        f"Exported iteration {info['iteration']} of {args.run_dir} to {args.out} ({size / 1024:,.0f} KiB: the "
        f"network's parameters and config.json). Load it with azjax.load_agent({str(args.out)!r}), or pass it to "
        "`azjax eval` or `azjax play`."
    )
    return 0


def use_compile_cache(disabled: bool = False) -> Path | None:
    """Turns on jax's persistent compilation cache, so that a second run of a command skips most compilation:
    in $AZJAX_COMPILE_CACHE if set, else JAX_COMPILATION_CACHE_DIR if set, else ~/.cache/azjax/jax (under
    $XDG_CACHE_HOME if set). Off with `disabled` (--no-compile-cache) or AZJAX_COMPILE_CACHE=off. Returns the
    directory, or None when off."""
    setting = os.environ.get(COMPILE_CACHE_ENV, "").strip()
    if disabled or setting.lower() in ("off", "0", "false", "no"):
        return None
    import jax

    if setting:
        directory = Path(setting).expanduser()
    elif user_choice := jax.config.jax_compilation_cache_dir:  # type: ignore[attr-defined]  # a runtime flag
        return Path(user_choice)  # the user's own choice, through jax's variable
    else:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        directory = Path(base) / "azjax" / "jax"
    jax.config.update("jax_compilation_cache_dir", str(directory))
    return directory


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _reject_unknown(parser: argparse.ArgumentParser, command: str, unknown: list[str]) -> None:
    """Exits (status 2) with one line naming each unknown option and the nearest known one."""
    import difflib

    sub = _subcommands(parser)[command]
    known = [option for action in sub._actions for option in action.option_strings if option.startswith("--")]
    said: list[str] = []
    for word in unknown:
        option = word.split("=", 1)[0]
        if not option.startswith("-"):
            if not said or said[-1].startswith("unexpected"):  # not the value of an unknown option before it
                said.append(f"unexpected argument {word!r}")
            continue
        near = difflib.get_close_matches(option, known, n=1, cutoff=0.75)
        said.append(f"unknown option {option}" + (f" (did you mean {near[0]}?)" if near else ""))
    sub.error("; ".join(said))


class _Parser(argparse.ArgumentParser):
    """Errors as one line that names the subcommand and where its options are listed, not a page of usage."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}; `{self.prog} --help` lists the options\n")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `azjax` command."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        _reject_unknown(parser, args.command, unknown)  # exits
    if args.command in ("train", "eval", "play", "serve"):
        use_compile_cache(args.no_compile_cache)
    from azjax.bots import SpecError
    from azjax.checkpointing import CheckpointError
    from azjax.config import ConfigError
    from azjax.games import GameNotFoundError
    from azjax.games.pgx_adapter import MissingDependencyError
    from azjax.memory import MemoryBudgetError

    try:
        if args.command == "train":
            return _train(args)
        if args.command == "export":
            return _export(args)
        if args.command == "eval":
            return _eval(args)
        if args.command == "play":
            return _play(args)
        if args.command == "check":
            return _check(args)
        if args.command == "pretrained":
            return _pretrained()
        if args.command == "serve":
            return _serve(args)
    except (CheckpointError, ConfigError, SpecError, GameNotFoundError, MemoryBudgetError,
            MissingDependencyError) as error:
        # Fixable by the user: one line that says what to change, no traceback.
        print(f"azjax {args.command}: error: {error}", file=sys.stderr)
        return 2
    except RuntimeError as error:
        from azjax.solver.connect_four import SolveTimeout  # late: it imports numba, and only a match raises it

        if not isinstance(error, SolveTimeout):
            raise
        print(f"azjax {args.command}: error: {error}", file=sys.stderr)  # the message says what to do
        return 1
    except KeyboardInterrupt:
        print(f"azjax {args.command}: interrupted", file=sys.stderr)
        return 130
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    sys.exit(main())
