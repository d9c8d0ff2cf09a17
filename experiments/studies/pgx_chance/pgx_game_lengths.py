"""How long random games of pgx's 2048 and backgammon last, in moves, against the adapter's move limits.

    python experiments/studies/pgx_chance/pgx_game_lengths.py --games 10000

Plays `--games` games of uniformly random legal moves of each game (azjax.games.pgx_chance, its own `step` and
chance draws) to its `max_length`, and prints the mean, the longest and how many the limit ended.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from azjax import games

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # experiments/, for the shared benchmark module
from benchmark import run_main


def random_game_lengths(game: games.Game, num_games: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The number of moves [num_games] of random games of `game`, and whether each ended on its own (not at the
    move limit)."""

    def one_game(key: jax.Array) -> tuple[jax.Array, jax.Array]:
        init_key, play_key = jax.random.split(key)

        def body(carry, move_key):
            state, moves = carry
            logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
            action = jax.random.categorical(move_key, logits).astype(jnp.int32)
            after = game.step(state, action)
            in_play = ~state.terminated
            state = jax.tree.map(lambda new, old: jnp.where(in_play, new, old), after, state)
            return (state, moves + in_play.astype(jnp.int32)), None

        (state, moves), _ = jax.lax.scan(body, (game.init(init_key), jnp.int32(0)),
                                         jax.random.split(play_key, game.max_length))
        return moves, state.terminated & (moves < game.max_length)

    lengths, ended = jax.jit(jax.vmap(one_game))(jax.random.split(jax.random.key(seed), num_games))
    return np.asarray(lengths), np.asarray(ended)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=10_000, help="random games of each (default 10,000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"# {time.strftime('%Y-%m-%d')}, {platform.machine()} CPU x {jax.local_device_count()} device(s), "
          f"jax {jax.__version__}; {args.games} random games of each")
    for name in ("pgx:2048", "pgx:backgammon"):
        game = games.make(name)
        start = time.perf_counter()
        lengths, ended = random_game_lengths(game, args.games, args.seed)
        print(f"{name}: max_length {game.max_length}; moves mean {lengths.mean():.1f}, median "
              f"{np.median(lengths):.0f}, longest {lengths.max()}; ended on their own {ended.sum()} of {len(ended)}, "
              f"at the limit {len(ended) - ended.sum()} ({time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    run_main(main)
