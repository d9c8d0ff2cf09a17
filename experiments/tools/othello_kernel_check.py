"""Othello's rules today against the module at a git revision: the same random games, every state compared whole.

A one-off check of a rewrite of `azjax.games.othello` that must keep the rules bit for bit: for each board size,
B random games are played move by move in both modules (jit, one `lax.scan` over a vmapped batch): a uniform
legal move drawn from the revision's mask, or, in one game in 8, with probability 0.05 a move and after the end
always any action in [-1, A] (illegal ones included). Each move is applied to both modules' states, and after
every move every field of the two states (legal mask, board, rewards, terminated, current player) and the two
observations must be equal. The lasting test of the rules is tests/games/test_othello.py (against a plain-Python
reference); this script needs the git history.

Run it:

    python experiments/tools/othello_kernel_check.py                    # against HEAD, 512 games a size
    python experiments/tools/othello_kernel_check.py --revision 2884cf4 --games 256 --sizes 8
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import pathlib
import sys
import time
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from azjax import bots
from azjax.games import Game, othello

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # experiments/, for the shared benchmark module
from benchmark import module_at_revision, run_main


def compare(key: jax.Array, *, old: Game, new: Game, num_games: int, num_steps: int) -> dict[str, jax.Array]:
    """Plays `num_games` games of `num_steps` moves in both games; returns per game [B] whether every state and
    observation agreed, the first step where they did not (-1 if none), and how each game ended."""
    wild_prob = jnp.where(jnp.arange(num_games) % 8 == 7, 0.05, 0.0)
    init_keys = jax.random.split(key, num_games)
    first = (jax.vmap(old.init)(init_keys), jax.vmap(new.init)(init_keys))

    def same(a: Any, c: Any) -> jax.Array:
        fields = [f.name for f in dataclasses.fields(c)]
        assert fields == [f.name for f in dataclasses.fields(a)]
        leaves = [(getattr(a, f) == getattr(c, f)).reshape(num_games, -1).all(-1) for f in fields]
        observed = (jax.vmap(old.observe)(a) == jax.vmap(new.observe)(c)).reshape(num_games, -1).all(-1)
        return functools.reduce(jnp.logical_and, leaves, observed)

    def move(states, step_key):
        old_states, new_states = states
        sample_key, wild_key, coin_key = jax.random.split(step_key, 3)
        action = bots.sample_uniform(sample_key, old_states.legal_action_mask)
        wild = jax.random.randint(wild_key, (num_games,), -1, old.num_actions + 1)
        go_wild = old_states.terminated | (jax.random.uniform(coin_key, (num_games,)) < wild_prob)
        action = jnp.where(go_wild, wild, action).astype(jnp.int32)
        states = (jax.vmap(old.step)(old_states, action), jax.vmap(new.step)(new_states, action))
        return states, (same(*states), states[0].terminated, states[0].rewards, action == old.num_actions - 1)

    keys = jax.random.split(jax.random.fold_in(key, 1), num_steps)
    _, (agree, terminated, rewards, passed) = jax.lax.scan(move, first, keys)
    agree = jnp.concatenate([same(*first)[None], agree])  # [T + 1, B]
    return {
        "agree": agree.all(0),
        "first_difference": jnp.where(agree.all(0), -1, jnp.argmin(agree, axis=0)),
        "terminated": terminated[-1],
        "x_won": rewards.max(0)[:, 0] > 0,
        "o_won": rewards.max(0)[:, 1] > 0,
        "passes": jnp.sum(passed & ~terminated, axis=0),
        "moves": jnp.sum(~terminated, axis=0) + 1,
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--revision", default="HEAD", help="the git revision of the old module (default: HEAD)")
    parser.add_argument("--games", type=int, default=512, help="random games per board size (default: 512)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 6, 4], help="board sizes (default: 8 6 4)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    module = module_at_revision("azjax.games.othello", args.revision)
    if module is None:
        print(f"azjax/games/othello.py is unchanged since {args.revision}: nothing to compare")
        return 0
    failures = 0
    for size in args.sizes:
        old, new = module.make_othello(size), othello.make_othello(size)
        start = time.perf_counter()
        run = jax.jit(functools.partial(compare, old=old, new=new, num_games=args.games,
                                        num_steps=new.max_length + 2))
        result = jax.device_get(run(jax.random.key(args.seed)))
        seconds = time.perf_counter() - start
        agree = np.asarray(result["agree"])
        failures += int((~agree).sum())
        print(
            f"size {size}: {agree.sum()}/{agree.size} games identical in every state after every move "
            f"({int(result['moves'].sum())} moves, {int(result['passes'].sum())} passes); all ended: "
            f"{bool(result['terminated'].all())}; X won {int(result['x_won'].sum())}, O won "
            f"{int(result['o_won'].sum())} (forfeits included), drawn "
            f"{int((~result['x_won'] & ~result['o_won']).sum())}; {seconds:.1f} s"
        )
        if not agree.all():
            print(f"  first differing steps: {np.asarray(result['first_difference'])[~agree][:10].tolist()}")
    print("IDENTICAL" if failures == 0 else f"DIFFERENT: {failures} games")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    run_main(main)
