"""`azjax serve`: a local web page to play and watch any game against any agent."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from azjax.cli import common


def add_arguments(commands) -> None:
    serve = commands.add_parser(
        "serve",
        allow_abbrev=False,
        help="a local web page to play and watch any game against any agent",
        description="Serve a web page (at http://HOST:PORT/) to play any game against an agent by clicking on the "
        "board, watch two agents play, and step through recorded games, with an agent's search (each candidate "
        "move's visits, value and prior) shown for the position on the board. The page offers the agents named "
        "here, random and mcts:200 (and the shipped agents when none is named), and reads no other run "
        "directory. Ctrl-C stops it. Agents: " + common.AGENT_HELP + ".",
    )
    serve.add_argument("agents", nargs="*", metavar="AGENT", help="agents to offer (see above)")
    serve.add_argument("--game", help="the game the page starts with (default: the first agent's, else "
                       "tic_tac_toe); every registered game is offered: " + common.GAME_HELP)
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
    common.add_compile_cache_option(serve)


def run(args: argparse.Namespace) -> int:
    from azjax import agent_specs, serve
    from azjax.text import counted

    if args.max_games < 1:
        raise agent_specs.SpecError(f"--max-games must be >= 1, got {args.max_games}")
    if not 0 <= args.port <= 65535:
        raise agent_specs.SpecError(f"--port must be 0 to 65535, got {args.port}")
    if args.simulations is not None and args.simulations < 1:
        raise agent_specs.SpecError(f"--simulations must be >= 1, got {args.simulations}")
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
