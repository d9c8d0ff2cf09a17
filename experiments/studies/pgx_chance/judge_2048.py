"""A 2048 agent's figures: mean score with its 95% interval and the share of games whose largest tile reached 512,
1024 and 2048, beside the network alone, the one-ply greedy player and the random player from the same starts.

    python experiments/studies/pgx_chance/judge_2048.py RUN --games 200        # RUN: a run directory or an export
    python experiments/studies/pgx_chance/judge_2048.py --games 1000 --agents oneply random

Every agent plays the same `--games` starts (pgx's own: two random tiles) to the end, in one batch.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import jax
import numpy as np

from azjax import agent_specs, episodes, games

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # experiments/, for the shared benchmark module
from benchmark import run_main

TILES = (512, 1024, 2048)


def judge(game: games.Game, spec: str, starts, key: jax.Array) -> dict[str, float]:
    """One agent's episodes from `starts`: mean score, its 95% half-width, mean moves, share reaching each tile."""
    bot = agent_specs.make_bot(spec, game)
    played = jax.device_get(jax.jit(lambda k, s: episodes.play_episodes(k, s, game=game, agent=bot))(key, starts))
    scores = np.asarray(played.returns, np.float64)
    largest = 2 ** np.asarray(played.final.pgx_state._board).max(axis=-1)
    result = {"score": scores.mean(), "half": 1.96 * scores.std(ddof=1) / np.sqrt(len(scores)),
              "moves": float(np.mean(played.length))}
    result.update({f"{tile}": float(np.mean(largest >= tile)) for tile in TILES})
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", nargs="?", help="a run directory or export of pgx:2048 (its search and its network)")
    parser.add_argument("--games", type=int, default=200, help="starts every agent plays (default 200)")
    parser.add_argument("--agents", nargs="*", help="agent specs (default: RUN, greedy:RUN, oneply, random)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    agents = args.agents or ([args.run, f"greedy:{args.run}"] if args.run else []) + ["oneply", "random"]
    game = games.make("pgx:2048")
    init_key, play_key = jax.random.split(jax.random.key(args.seed))
    starts = jax.vmap(game.init)(jax.random.split(init_key, args.games))
    print(f"# {time.strftime('%Y-%m-%d')}, {platform.machine()} CPU x {jax.local_device_count()} device(s), "
          f"jax {jax.__version__}; {args.games} games of pgx:2048 from the same starts")
    print(f"{'agent':<40} {'score':>8} {'95% interval':>17} {'moves':>7} " + " ".join(f"{t:>6}" for t in TILES))
    for spec in agents:
        start = time.perf_counter()
        r = judge(game, spec, starts, play_key)
        interval = f"[{r['score'] - r['half']:.0f}, {r['score'] + r['half']:.0f}]"
        print(f"{spec:<40} {r['score']:>8.0f} {interval:>17} {r['moves']:>7.0f} "
              + " ".join(f"{r[str(t)]:>6.3f}" for t in TILES) + f"   ({time.perf_counter() - start:.0f} s)",
              flush=True)


if __name__ == "__main__":
    run_main(main)
