"""`azjax play`: play a game against an agent in the terminal."""

from __future__ import annotations

import argparse

from azjax.cli import common


def add_arguments(commands) -> None:
    play = commands.add_parser(
        "play",
        allow_abbrev=False,
        help="play against an agent in the terminal",
        description="Play a game against an agent in the terminal: type moves such as b2 (tic-tac-toe) or d "
        "(Connect Four); 'help' lists the legal moves, 'quit' stops. A one-player game (`azjax play "
        "sliding_puzzle`) you play alone, with its shipped agent's hints where one ships, or a trained agent's "
        "(`azjax play RUN`). Agents: "
        + common.AGENT_HELP + ".",
    )
    play.add_argument("agent", nargs="?", metavar="AGENT", help="the opponent; a game's name plays the agent "
                      "shipped for it, e.g. `azjax play connect_four` (default: the game's shipped agent where "
                      "there is one, else mcts:1000; in a game with chance, perfect for pig, else random)")
    play.add_argument("--game", help="the game (default: the run's, else tic_tac_toe): " + common.GAME_HELP)
    play.add_argument("--first", choices=["you", "agent", "random"], default="you", help="who moves first "
                      "(default: you)")
    play.add_argument("--simulations", type=int, help="the trained agent's simulations per move (default: the "
                      "run's)")
    play.add_argument("--search-policy", choices=["gumbel", "puct"], help="the trained agent's search")
    play.add_argument("--no-analysis", action="store_true", help="hide the agent's value and candidate moves")
    play.add_argument("--opening-moves", type=int, default=0, metavar="K", help="start after K random moves "
                      "(default: 0; connect_four's perfect player needs 10)")
    play.add_argument("--seed", type=int, help="the random seed (default: a new one each game)")
    common.add_compile_cache_option(play)


def _one_player_game(name: str | None):
    """The game `name` names where it is a known one-player game (not an agent spec), else None."""
    from azjax import games

    if name is None or not games.is_known(name):
        return None
    game = games.make(name)
    return game if game.num_players == 1 else None


def _untrained_agent(game) -> str:
    """The agent `azjax play` picks for a game without a shipped one: UCT, or for a game with chance (which UCT
    cannot look ahead in) Pig's perfect player, pgx's backgammon's one-ply greedy player, else random."""
    from azjax import evaluation, perfect

    if not game.has_chance:
        return "mcts:1000"
    if perfect.is_pig(game):
        return "perfect"
    return "oneply" if "oneply" in evaluation.default_opponents(game) else "random"


def run(args: argparse.Namespace) -> int:
    import random

    import jax

    from azjax import agent_specs, games, play, pretrained

    named = args.game if args.agent is None else args.agent
    alone = _one_player_game(named)
    if alone is not None and games.canonical(named) in pretrained.names():
        args.agent = pretrained.PREFIX + games.canonical(named)  # a puzzle with a shipped agent: its hints
    elif alone is not None:
        # A one-player game named with no shipped agent: the person plays alone (a run given as the agent hints).
        print(f"{alone.name} is a one-player game: you play it alone.", flush=True)
        play.play_alone(alone, key=jax.random.key(args.seed if args.seed is not None else 0))
        return 0
    if args.agent is None:  # the shipped agent of the game asked for, else one that needs no training
        name = games.canonical(args.game) if args.game else "tic_tac_toe"
        args.agent = (pretrained.PREFIX + name if name in pretrained.names() else
                      _untrained_agent(common.game_for([], args.game)))
    shipped = agent_specs.shipped_game(args.agent)
    if shipped is not None and shipped not in pretrained.names() and games.is_known(shipped):
        raise agent_specs.SpecError(
            f"agent {args.agent!r}: no trained agent ships with azjax for {shipped} (shipped: "
            f"{', '.join(pretrained.names()) or 'none'}); play one that needs no training, `azjax play "
            f"{_untrained_agent(games.make(shipped))} --game {shipped}`, or train one with `azjax train --game "
            f"{shipped}` and pass its run directory")
    game = common.game_for([args.agent], args.game)
    if game.num_players == 1:  # a trained agent of a one-player game: the person plays, the agent hints
        bot = agent_specs.make_bot(args.agent, game, num_simulations=args.simulations, policy=args.search_policy)
        play.play_alone(game, bot, key=jax.random.key(args.seed if args.seed is not None else 0))
        return 0
    if args.simulations is not None and args.simulations < 1:
        raise agent_specs.SpecError("--simulations must be >= 1")
    if args.opening_moves < 0:
        raise agent_specs.SpecError("--opening-moves must be >= 0")
    common.check_connect_four_perfect(game, [args.agent], args.opening_moves)
    print(f"Loading {agent_specs.bot_name(args.agent)} ...", flush=True)  # a game's name: its shipped agent
    bot = agent_specs.make_bot(args.agent, game, num_simulations=args.simulations, policy=args.search_policy)
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
