"""Brandub's rules today against the module at a git revision: the same random games, every state compared whole.

A one-off check of a rewrite of `azjax.games.brandub` that must keep the rules bit for bit: for each rule option
set below, B random games are played move by move in both modules (jit, one `lax.scan` over a vmapped batch): a
uniform legal move drawn from the revision's mask, or with a per-game probability the move undoing the mover's
last one (to make repetitions), or rarely any action in [-1, A] (illegal ones and those after the end included).
Each move is applied to both modules' states, and after every move every field of the two states (the legal mask,
board, rewards, terminated, current player, move count, repetition history and its length, which holds the
position hashes) and the two observations must be equal. Then, on random boards (up to 8 attackers, 4 defenders and
the monarch anywhere, either side to move), both modules' `legal_moves` must agree under every setting of the
options that move generation reads, and today's quick test of "has a move" (which ends the game of a stuck side)
must agree with the revision's legal mask having a True entry. The lasting test of the rules is
tests/games/test_brandub.py (against a plain-Python reference); this script needs the git history.

Run it:

    python experiments/tools/brandub_kernel_check.py                    # against HEAD, 512 games an option set
    python experiments/tools/brandub_kernel_check.py --revision 2884cf4 --games 256
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
from azjax.games import Game, brandub

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # experiments/, for the shared benchmark module
from benchmark import module_at_revision, run_main

# Every option of `make_brandub` takes each of its values in at least one set; the document's rules are the
# "brandub_document" game.
OPTION_SETS: dict[str, dict[str, Any]] = {
    "default": {},
    "variant": {"king_armed": False, "monarch_capture": "two", "castle_passable": False, "max_moves": 90,
                "repetitions": 2, "history_size": 8},
    "document": dict(brandub.DOCUMENT_RULES),
    "board": {"capture": "board"},
    "passive_four": {"capture": "passive", "monarch_capture": "four"},
    "neighbours_unarmed": {"capture": "neighbours", "king_armed": False, "monarch_capture": "two",
                           "castle_passable": False},
    "board_four_closed": {"capture": "board", "monarch_capture": "four", "monarch_enters_castle": False,
                          "stalemate": "draw", "king_armed": False},
    "passive_two_draw": {"capture": "passive", "monarch_capture": "two", "stalemate": "draw", "repetitions": 2,
                         "history_size": 4},
    "active_closed": {"monarch_enters_castle": False, "castle_passable": False, "monarch_capture": "four",
                      "max_moves": 120, "repetitions": 4, "history_size": 1},
}


def _undo_table() -> np.ndarray:
    """int32 [A]: the action moving a piece back from where `action` put it, or -1 for an off-board action."""
    undo = np.full(brandub.NUM_ACTIONS, -1, np.int32)
    for action in range(brandub.NUM_ACTIONS):
        source, rest = divmod(action, brandub.ACTIONS_PER_CELL)
        direction, distance_index = divmod(rest, brandub.MAX_DISTANCE)
        destination = int(brandub.RAYS[source, direction, distance_index])
        if destination < brandub.NUM_CELLS:
            undo[action] = (destination * brandub.ACTIONS_PER_CELL + (direction + 2) % 4 * brandub.MAX_DISTANCE
                            + distance_index)
    return undo


def compare(key: jax.Array, *, old: Game, new: Game, num_games: int, num_steps: int) -> dict[str, jax.Array]:
    """Plays `num_games` games of `num_steps` moves in both games; returns per game [B] whether every state and
    observation agreed, the first step where they did not (-1 if none), and how each game ended."""
    b = jnp.arange(num_games)
    undo_prob = jnp.asarray([0.0, 0.0, 0.3, 0.7])[b % 4]
    wild_prob = jnp.where(b % 8 == 7, 0.02, 0.0)
    undo_table = jnp.asarray(_undo_table())
    init_keys = jax.random.split(key, num_games)
    first = (jax.vmap(old.init)(init_keys), jax.vmap(new.init)(init_keys))

    def same(a: Any, c: Any) -> jax.Array:
        fields = [f.name for f in dataclasses.fields(c)]  # the two modules' states are classes of their own
        assert fields == [f.name for f in dataclasses.fields(a)]
        leaves = [(getattr(a, f) == getattr(c, f)).reshape(num_games, -1).all(-1) for f in fields]
        observed = (jax.vmap(old.observe)(a) == jax.vmap(new.observe)(c)).reshape(num_games, -1).all(-1)
        return functools.reduce(jnp.logical_and, leaves, observed)

    def move(carry, step_key):
        (old_states, new_states), last, before_last = carry
        sample_key, undo_key, wild_key, coin_key = jax.random.split(step_key, 4)
        mask = old_states.legal_action_mask
        action = bots.sample_uniform(sample_key, mask)
        undo = undo_table[jnp.maximum(before_last, 0)]  # the mover's last move
        undo_ok = (before_last >= 0) & (undo >= 0) & mask[b, jnp.maximum(undo, 0)]
        action = jnp.where(undo_ok & (jax.random.uniform(undo_key, (num_games,)) < undo_prob), undo, action)
        wild = jax.random.randint(wild_key, (num_games,), -1, brandub.NUM_ACTIONS + 1)
        go_wild = old_states.terminated | (jax.random.uniform(coin_key, (num_games,)) < wild_prob)
        action = jnp.where(go_wild, wild, action).astype(jnp.int32)
        states = (jax.vmap(old.step)(old_states, action), jax.vmap(new.step)(new_states, action))
        return (states, action, last), (same(*states), states[0].terminated, states[0].rewards)

    keys = jax.random.split(jax.random.fold_in(key, 1), num_steps)
    no_action = jnp.full(num_games, -1, jnp.int32)
    _, (agree, terminated, rewards) = jax.lax.scan(move, (first, no_action, no_action), keys)
    agree = jnp.concatenate([same(*first)[None], agree])  # [T + 1, B]
    return {
        "agree": agree.all(0),
        "first_difference": jnp.where(agree.all(0), -1, jnp.argmin(agree, axis=0)),
        "terminated": terminated[-1],
        "attackers_won": rewards.max(0)[:, 0] > 0,
        "defenders_won": rewards.max(0)[:, 1] > 0,
        "moves": jnp.sum(~terminated, axis=0) + 1,
    }


def random_boards(seed: int, num_boards: int) -> tuple[np.ndarray, np.ndarray]:
    """int8 [N, 49] boards (pawns off the castle and corners, the monarch anywhere, or captured in a tenth) and the
    side to move int32 [N]."""
    rng = np.random.default_rng(seed)
    special = set(np.flatnonzero(brandub.IS_SPECIAL[:brandub.NUM_CELLS]).tolist())
    boards = np.zeros((num_boards, brandub.NUM_CELLS), np.int8)
    for board in boards:
        squares = rng.permutation([c for c in range(brandub.NUM_CELLS) if c not in special])
        num_attackers, num_defenders = rng.integers(0, 9), rng.integers(0, 5)
        board[squares[:num_attackers]] = brandub.ATTACKER
        board[squares[num_attackers:num_attackers + num_defenders]] = brandub.DEFENDER
        if rng.random() < 0.9:
            board[rng.choice(np.flatnonzero(board == brandub.EMPTY))] = brandub.MONARCH
    return boards, rng.integers(0, 2, num_boards).astype(np.int32)


def compare_boards(old_module: Any, num_boards: int, seed: int) -> int:
    """Prints and returns the number of random boards where the two modules' moves (or "has a move") differ."""
    boards, players = random_boards(seed, num_boards)
    failures = 0
    for passable in (True, False):
        for enters in (True, False):
            options = {"castle_passable": passable, "monarch_enters_castle": enters}
            old_rules, new_rules = old_module.BrandubRules(**options), brandub.BrandubRules(**options)
            old_masks = jax.jit(jax.vmap(functools.partial(old_module.legal_moves, rules=old_rules)))(boards, players)
            new_masks = jax.jit(jax.vmap(functools.partial(brandub.legal_moves, rules=new_rules)))(boards, players)
            can_move = jax.jit(jax.vmap(lambda b, p, r=new_rules: brandub._can_move(brandub._lines(b, p, r), r)))(
                boards, players)
            differ = np.asarray(jnp.any(old_masks != new_masks, axis=-1) | (jnp.any(old_masks, -1) != can_move))
            failures += int(differ.sum())
            print(f"random boards {options}: {num_boards - int(differ.sum())} of {num_boards} agree "
                  f"({int((~np.asarray(can_move)).sum())} with no move)")
    return failures


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--revision", default="HEAD", help="the git revision of the old module (default: HEAD)")
    parser.add_argument("--games", type=int, default=512, help="random games per option set (default: 512)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--boards", type=int, default=20000, help="random boards (default: 20000)")
    parser.add_argument("--sets", nargs="+", choices=sorted(OPTION_SETS), default=list(OPTION_SETS),
                        help="the option sets to play (default: all)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    old_module = module_at_revision("azjax.games.brandub", args.revision)
    if old_module is None:
        print(f"azjax/games/brandub.py is unchanged since {args.revision}: nothing to compare")
        return 0
    failures = 0
    total = 0
    for index, name in enumerate(args.sets):
        options = OPTION_SETS[name]
        old, new = old_module.make_brandub(**options), brandub.make_brandub(**options)
        num_steps = new.max_length + 2
        start = time.perf_counter()
        run = jax.jit(functools.partial(compare, old=old, new=new, num_games=args.games, num_steps=num_steps))
        result = jax.device_get(run(jax.random.key(args.seed + index)))
        seconds = time.perf_counter() - start
        differing = np.flatnonzero(~result["agree"])
        total += args.games
        failures += len(differing)
        print(f"{name:20s} {args.games} games x {num_steps} moves: {args.games - len(differing)} identical, "
              f"{len(differing)} differ; ended {int(result['terminated'].sum())}, attackers won "
              f"{int(result['attackers_won'].sum())}, defenders won {int(result['defenders_won'].sum())}, "
              f"mean length {result['moves'].mean():.1f} ({seconds:.0f} s) {options}")
        if len(differing):
            print(f"  first differing game {differing[0]} at step {result['first_difference'][differing[0]]}")
    print(f"{total - failures} of {total} games identical in every field of every state, against {args.revision}")
    board_failures = compare_boards(old_module, args.boards, args.seed)
    return 1 if failures or board_failures else 0


if __name__ == "__main__":
    run_main(main)
