"""Does keeping the search tree between moves pay? A trained agent with tree reuse against itself without, at
equal simulations per move, and what reuse costs per move.

    python experiments/studies/tree_reuse/tree_reuse.py RUN_DIR   # both policies, the run's simulations
    python experiments/studies/tree_reuse/tree_reuse.py runs/c4 --simulations 16 64 --games 200 --out runs/reuse.md

Strength: for each policy (Gumbel MuZero, PUCT) and number of simulations S, `az:RUN:S:reuse` plays `az:RUN:S`
(the same network, both deterministic: no root noise) over --games games per seat, each pair of games from a
distinct random opening of --opening-moves moves; the score of the reusing agent with its 95% Wilson interval over
the distinct games, and the Elo difference with its interval (azjax.results). The reusing agent keeps its tree
through the game, following its opponent's moves too (`bots.Memory`).

Cost: one jitted self-play call of --steps moves in --batch games, with and without reuse at equal S, after a
warm-up call whose games (and trees) the timed calls continue; the calls alternate, and the table gives the
median of --repeats, as ms per move of the whole batch, with the mean root visits a search inherited (what reuse
adds to each search for free) and the mean nodes kept per game.

Both parts load the run's network; self-play here uses the run's search config with root noise, as training
does. Time one job at a time: anything else on the machine slows the cost part.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import pathlib
import statistics
import sys
import time
from typing import Any

import jax
import jax.numpy as jnp

from azjax import arena, network_bots, parallel, selfplay
from azjax.agent import Agent, load_agent
from azjax.config import SelfPlayConfig
from azjax.networks import inference_fn
from azjax.search import make_search_fn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))  # experiments/, for the shared benchmark module
from benchmark import Table, machine_info, run_main, write_json


def capacity(sims: int, factor: int | None) -> int | None:
    """The tree capacity `factor` x S + 1, or None for the config's default."""
    return None if factor is None else factor * sims + 1


def strength(agent: Agent, run: str, policy: str, sims: int, games: int, opening_moves: int, seed: int,
             capacity_factor: int | None = None, plain_sims: int | None = None) -> dict:
    """`az:RUN:S:reuse` against `az:RUN:S'` (S' = `plain_sims`, default S) with `policy`: the reusing agent's
    results."""
    plain_sims = plain_sims or sims
    reusing = network_bots.alphazero_bot(agent, num_simulations=sims, policy=policy, reuse_tree=True,
                                 tree_capacity=capacity(sims, capacity_factor), name=f"az:{run}:{sims}:reuse")
    plain = network_bots.alphazero_bot(agent, num_simulations=plain_sims, policy=policy, reuse_tree=False,
                               name=f"az:{run}:{plain_sims}")
    mesh = parallel.mesh_for(games)
    start = time.perf_counter()
    result = arena.play(jax.random.key(seed), agent.game, reusing, plain, 2 * games, opening_moves=opening_moves,
                        mesh=mesh)
    return dict(result.to_dict(), seconds=round(time.perf_counter() - start, 1))


def cost(agent: Agent, policy: str, sims: int, batch: int, steps: int, repeats: int,
         capacity_factor: int | None = None) -> dict:
    """ms per self-play move of `batch` games, without and with reuse; inherited root visits and kept nodes."""
    game = agent.game
    config = SelfPlayConfig(num_games=batch, num_steps=steps)
    runs: dict[str, Any] = {}
    for reuse in (False, True):
        search_config = dataclasses.replace(agent.search_config(num_simulations=sims, deterministic=False),
                                            policy=policy, reuse_tree=reuse,
                                            tree_capacity=capacity(sims, capacity_factor) if reuse else None)
        search_fn = make_search_fn(game, inference_fn(agent.network), search_config)
        play = jax.jit(functools.partial(selfplay.run_selfplay, game=game, search_fn=search_fn,
                                         **selfplay.selfplay_options(config)))
        state = selfplay.init_selfplay(jax.random.key(0), game, **selfplay.init_options(config, search_config))
        start = time.perf_counter()
        state, _ = jax.block_until_ready(play(jax.random.key(1), agent.variables, state))  # compile, fill trees
        runs[reuse] = dict(play=play, state=state, compile_s=time.perf_counter() - start, times=[])
    for i in range(repeats):  # alternating, continuing the games
        for reuse in (False, True):
            entry = runs[reuse]
            start = time.perf_counter()
            entry["state"], _ = jax.block_until_ready(entry["play"](jax.random.key(2 + i), agent.variables,
                                                                     entry["state"]))
            entry["times"].append(time.perf_counter() - start)
    kept = runs[True]["state"].tree
    held = kept.nodes > 0
    inherited = jnp.where(held, kept.tree.node_visits[:, 0], 0)
    return {
        "ms_per_move": statistics.median(runs[False]["times"]) / steps * 1e3,
        "ms_per_move_reuse": statistics.median(runs[True]["times"]) / steps * 1e3,
        "compile_s": round(runs[False]["compile_s"], 1),
        "compile_s_reuse": round(runs[True]["compile_s"], 1),
        "inherited_root_visits": float(jnp.mean(inherited)),
        "kept_nodes": float(jnp.mean(kept.nodes)),
        "capacity": kept.capacity,
        "times": {"plain": runs[False]["times"], "reuse": runs[True]["times"]},
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="a trained run directory (or export)")
    parser.add_argument("--policies", nargs="+", default=["gumbel", "puct"], choices=["gumbel", "puct"])
    parser.add_argument("--simulations", nargs="+", type=int, help="simulations per move (default: the run's)")
    parser.add_argument("--games", type=int, default=200, help="games per seat in each match (default 200: 400 in all)")
    parser.add_argument("--opening-moves", type=int, default=4, help="random moves before each pair of games")
    parser.add_argument("--batch", type=int, default=128, help="games in the self-play cost measurement")
    parser.add_argument("--steps", type=int, default=16, help="moves per timed self-play call")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per setting")
    parser.add_argument("--capacity-factor", type=int, help="trees of K x S + 1 nodes (default: the config's)")
    parser.add_argument("--plain-factor", type=float, default=1.0, help="the plain agent searches round(F x S) "
                        "simulations (e.g. the cost ratio, for a match at equal time)")
    parser.add_argument("--no-cost", action="store_true", help="only the matches")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=pathlib.Path, help="write the tables here (markdown) and JSON beside it")
    args = parser.parse_args(argv)
    parallel.expose_cpu_cores()  # the matches split over the cores (independent games per device)

    agent = load_agent(args.run)
    sims_list = args.simulations or [agent.config.search.num_simulations]
    info = machine_info()
    lines = [f"# Tree reuse: {agent.game.name}, {args.run}", "",
             f"{info['date']}, {info['cpu']} ({info['usable_cores']} cores), jax {info['jax']}, azjax "
             f"{info['azjax_commit']}; network {agent.config.network.num_blocks} x "
             f"{agent.config.network.num_channels}.", "",
             f"Strength: az:RUN:S:reuse against az:RUN:S, {2 * args.games} games (half in each seat), openings of "
             f"{args.opening_moves} random moves; the reusing agent's results (sims S/S': the plain agent searched "
             f"S'); trees of {'the default' if args.capacity_factor is None else f'{args.capacity_factor} x S + 1'} "
             "nodes.", "", "```"]
    table = Table([("policy", "7s"), ("sims", "7s"), ("W", "4d"), ("D", "4d"), ("L", "4d"), ("distinct", "8d"),
                   ("score", "6.3f"), ("95% CI", "13s"), ("Elo", "5.0f"), ("Elo 95% CI", "11s"), ("s", "6.1f")])
    lines.append(table.header())
    print("\n".join(lines), flush=True)
    results: dict[str, Any] = {"machine": info, "run": args.run, "game": agent.game.name, "strength": [], "cost": []}
    for policy in args.policies:
        for sims in sims_list:
            plain_sims = round(args.plain_factor * sims)
            match = strength(agent, args.run, policy, sims, args.games, args.opening_moves, args.seed,
                             args.capacity_factor, plain_sims)
            results["strength"].append(dict(match, policy=policy, simulations=sims, plain_simulations=plain_sims))
            label = f"{sims}/{plain_sims}" if plain_sims != sims else str(sims)
            row = table.row(policy, label, match["wins"], match["draws"], match["losses"], match["distinct_games"],
                            match["score"], f"{match['score_low']:.3f}-{match['score_high']:.3f}", match["elo"],
                            f"{match['elo_low']:.0f}..{match['elo_high']:.0f}", match["seconds"])
            lines.append(row)
            print(row, flush=True)
    lines.append("```")
    if not args.no_cost:
        head = (f"Cost: self-play of {args.batch} games, {args.steps} moves per timed call, median of {args.repeats} "
                "alternating calls; inherited = mean root visits a search started with; kept = mean nodes kept")
        cost_table = Table([("policy", "7s"), ("sims", "5d"), ("ms/move", "8.1f"), ("reuse ms/move", "13.1f"),
                            ("ratio", "6.2f"), ("inherited", "9.1f"), ("kept", "6.1f"), ("capacity", "8d")])
        block = ["", head, "", "```", cost_table.header()]
        print("\n".join(block), flush=True)
        for policy in args.policies:
            for sims in sims_list:
                measured = cost(agent, policy, sims, args.batch, args.steps, args.repeats, args.capacity_factor)
                results["cost"].append(dict(measured, policy=policy, simulations=sims))
                row = cost_table.row(policy, sims, measured["ms_per_move"], measured["ms_per_move_reuse"],
                                     measured["ms_per_move_reuse"] / measured["ms_per_move"],
                                     measured["inherited_root_visits"], measured["kept_nodes"], measured["capacity"])
                block.append(row)
                print(row, flush=True)
        block.append("```")
        lines += block
    if args.out is not None:
        args.out.write_text("\n".join(lines) + "\n")
        write_json(args.out.with_suffix(".json"), results)
    return results


if __name__ == "__main__":
    run_main(main)
