"""How long games of Pig last between a few players, and so whether its move limit (`max_moves`, a draw) binds.

Plays `--games` games of Pig to `--goal` under a move limit far above the default (`--limit`, 2,000 by default)
between two copies of each player: optimal (`perfect`), random (legal moves uniformly) and hold-at-20 (rolls until
the turn's total reaches 20); prints the mean, the 99th and 99.99th percentiles and the longest game in decisions,
and how many games outlasted the game's default limit.

    python experiments/studies/pig/game_lengths.py --games 20000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from azjax import perfect
from azjax.bots import random_bot
from azjax.games import make_pig
from azjax.games.pig import HOLD, ROLL

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # experiments/, for the shared benchmark module
from benchmark import run_main


def hold_at_20(key: jax.Array, states) -> jax.Array:
    """Rolls until the turn's total reaches 20, then holds: [B] actions."""
    del key
    return jnp.where((states.turn_total >= 20) & states.legal_action_mask[:, HOLD], HOLD, ROLL).astype(jnp.int32)


def game_lengths(game, act, num_games: int, key: jax.Array) -> np.ndarray:
    """The decisions of each of `num_games` games of `game` between two players choosing by `act(key, states)`;
    a game still going after `game.max_length` decisions counts as that long."""

    @jax.jit
    def play(key):
        init_key, move_key = jax.random.split(key)
        states = jax.vmap(game.init)(jax.random.split(init_key, num_games))

        def body(states, step_key):
            return jax.vmap(game.step)(states, act(step_key, states)), ~states.terminated

        _, live = jax.lax.scan(body, states, jax.random.split(move_key, game.max_length))
        return live.sum(axis=0)

    return np.asarray(play(key))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=20_000, help="games per player (default 20000)")
    parser.add_argument("--goal", type=int, default=100, help="Pig to this many points (default 100)")
    parser.add_argument("--limit", type=int, default=2_000, help="the move limit the games are played under")
    args = parser.parse_args(argv)
    game = make_pig(args.goal, max_moves=args.limit)
    default_limit = make_pig(args.goal).max_length
    players = {"optimal": perfect.pig_perfect_bot(game).act, "random": random_bot().act, "hold-at-20": hold_at_20}
    found = {}
    print(f"Pig to {args.goal}, {args.games} games a player, limit {args.limit} (the game's default: {default_limit})")
    for name, act in players.items():
        lengths = game_lengths(game, act, args.games, jax.random.key(0))
        found[name] = {"mean": float(lengths.mean()), "p99": float(np.percentile(lengths, 99)),
                       "p99.99": float(np.percentile(lengths, 99.99)), "max": int(lengths.max()),
                       "over_default_limit": int(np.sum(lengths > default_limit))}
        row = found[name]
        print(f"{name:>10}: mean {row['mean']:.1f}, p99 {row['p99']:.0f}, p99.99 {row['p99.99']:.0f}, longest "
              f"{row['max']}, {row['over_default_limit']} over {default_limit}")
    return found


if __name__ == "__main__":
    run_main(main)
