"""Arena benchmark: what a match costs, and where the time of a search goes.

For a game's CPU preset (the network of a run's latest checkpoint with --run, else a randomly initialised one), it
prints two measurements:

1. One search of --batch positions at the preset's simulations, in milliseconds per call: with the network; with a
   free network (zero logits and value), which leaves mctx's tree bookkeeping and the game's steps; and the
   network alone, evaluated (simulations + 1) times, as a search calls it. In a game with many actions the
   bookkeeping can cost more than the network: mctx's backward pass runs a while loop under vmap that carries the
   whole tree, whose [B, nodes, actions] arrays it rewrites at every step (mctx issue #107).
2. A match of --games games (half in each seat, after --opening-moves random moves), the agent against the
   uniformly random player and against itself (search without root noise), played with and without
   `arena.run_games(compact=...)`, which moves the last quarter of the pairs still playing to a smaller batch:
   compile and run seconds of each, and whether the games are the same (they must be when both agents are
   deterministic: the self-play match).

Times are the median of --repeats calls after a warm-up (searches), or one call (matches, which are long); run it
on a quiet machine, one job at a time.

    python experiments/benchmarks/bench_arena.py --game brandub --run runs/brandub-learns
    python experiments/benchmarks/bench_arena.py --quick      # tic-tac-toe, tiny network: seconds
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from azjax import arena, bots, evaluation, parallel, presets
from azjax import config as config_lib
from azjax.agent import Agent, load_agent, make_agent
from azjax.networks import inference_fn, init_variables
from azjax.search import make_search_fn
from azjax.training import make_components

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # experiments/, for the shared benchmark module
from benchmark import free_network, machine_info, median, run_main, timed, write_json

QUICK = {"network.num_blocks": 1, "network.num_channels": 8, "network.value_hidden": 8, "search.num_simulations": 4}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="brandub", help="a game with a CPU preset (default: brandub)")
    parser.add_argument("--run", type=Path, help="a run directory of that game: its latest network (default: the "
                        "preset's network, randomly initialised)")
    parser.add_argument("--batch", type=int, default=100, help="positions per search (default: 100)")
    parser.add_argument("--games", type=int, default=200, help="games per match, even (default: 200)")
    parser.add_argument("--opening-moves", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per search (default: 5)")
    parser.add_argument("--quick", action="store_true", help="tic-tac-toe, a tiny network, 4 simulations, 8 "
                        "positions, 16 games, the match against itself only")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    if args.quick:
        args.game, args.batch, args.games, args.repeats = "tic_tac_toe", 8, 16, 2
    if args.games < 2 or args.games % 2:
        parser.error(f"--games must be even and at least 2, got {args.games}")
    return args


def search_times(agent: Agent, batch: int, repeats: int) -> dict[str, float]:
    """Milliseconds per search of `batch` opening positions: with the network, with a free one, and the network's
    own share (its evaluations alone)."""
    game, search_config = agent.game, agent.search_config()
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(0), batch))
    move_number = jnp.zeros(batch, jnp.int32)

    apply_fn = inference_fn(agent.network)
    searches = {"search": apply_fn, "search_free_network": free_network(game.num_actions)}
    result = {}
    for name, fn in searches.items():
        search = make_search_fn(game, fn, search_config)
        _, times = timed(lambda s, f=search: f(agent.variables, jax.random.key(1), s, move_number).action,
                         (states,), repeats)
        result[f"{name}_ms"] = 1000 * median(times)
    observations = jax.vmap(game.observe)(states)
    _, times = timed(lambda o: apply_fn(agent.variables, o), (observations,), repeats)
    result["network_ms"] = 1000 * median(times) * (search_config.num_simulations + 1)
    return result


def match_times(agent: Agent, opponent: bots.AgentFn, num_games: int, opening_moves: int) -> dict[str, Any]:
    """Compile and run seconds of one match with and without compaction, and whether they played the same games."""
    mesh = parallel.mesh_for(num_games // 2)
    key = jax.random.key(2)
    rows, played = {}, {}
    for compact in (False, True):
        start = time.perf_counter()
        compiled = arena.play_games.lower(key, agent.game, agent.act, opponent, num_games,
                                          opening_moves=opening_moves, mesh=mesh, compact=compact).compile()
        compile_s = time.perf_counter() - start
        start = time.perf_counter()
        games = jax.device_get(compiled(key))
        run_s = time.perf_counter() - start
        played[compact] = games
        rows[f"compact={compact}"] = {"compile_s": compile_s, "run_s": run_s,
                                      "mean_length": float(np.mean(games.length)),
                                      "max_length": int(np.max(games.length))}
    rows["same_games"] = all(np.array_equal(getattr(played[False], f), getattr(played[True], f))
                             for f in ("outcome", "seat", "length", "moves"))
    return rows


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    parallel.expose_cpu_cores()
    if args.run is not None:
        agent = load_agent(args.run)
    else:
        config = presets.get_config(args.game, "cpu")
        if args.quick:
            config = config_lib.with_overrides(config, QUICK)
        parts = make_components(config)
        agent = make_agent(config, init_variables(parts.network, jax.random.key(config.seed),
                                                  parts.game.observation_shape))
    info = machine_info()
    search_config = agent.search_config()
    print(f"# azjax arena benchmark, {info['date']}; {info['cpu']}, {info['usable_cores']} usable cores, "
          f"jax {info['jax']} {info['backend']}, commit {info['azjax_commit']}")
    print(f"# {agent.game.name}: {agent.game.num_actions} actions, games of up to {agent.game.max_length} moves; "
          f"network {agent.config.network.num_blocks} x {agent.config.network.num_channels} "
          f"({'run ' + str(args.run) if args.run else 'random init'}), {search_config.policy} search with "
          f"{search_config.num_simulations} simulations, no root noise")
    searches = search_times(agent, args.batch, args.repeats)
    print(f"\none search of {args.batch} positions, median of {args.repeats} calls:")
    print(f"  with the network      {searches['search_ms']:9.1f} ms")
    print(f"  with a free network   {searches['search_free_network_ms']:9.1f} ms  (mctx's bookkeeping and the game)")
    print(f"  the network alone     {searches['network_ms']:9.1f} ms  ({search_config.num_simulations + 1} "
          "evaluations)")
    matches = {}
    opponents = {"vs_random": evaluation.random_agent, "vs_itself": agent.act}
    if args.quick:
        del opponents["vs_random"]  # the same measurement with another opponent: half the compilation
    for name, opponent in opponents.items():
        matches[name] = match_times(agent, opponent, args.games, args.opening_moves)
        print(f"\nmatch {name.replace('_', ' ')}, {args.games} games after {args.opening_moves} random moves:")
        for compact in (False, True):
            row = matches[name][f"compact={compact}"]
            print(f"  compact={compact!s:5s}  compile {row['compile_s']:6.1f} s  run {row['run_s']:7.1f} s  "
                  f"mean length {row['mean_length']:5.1f}, longest {row['max_length']}")
        print(f"  the same games: {matches[name]['same_games']}", flush=True)
    results = {"machine": info, "config": {**vars(args), "run": str(args.run) if args.run else None,
                                           "json": None, "config": config_lib.to_dict(agent.config)},
               "search": searches, "matches": matches}
    write_json(args.json, results)
    return results


if __name__ == "__main__":
    run_main(main)
