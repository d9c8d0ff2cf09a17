"""A refactor's proof: the SHA-256 of a run's whole state after a few iterations of training.

Trains `--iterations` iterations of each named game's preset (the same path as `azjax train`: `trainer.train`,
one CPU device, no evaluation, a fixed seed) and prints one line per game with the hash of every array of the run
state (the network, the optimizer, the replay buffer, the games in progress, the keys, the counters), their tree
paths, dtypes and shapes included. The same hash before and after a change means the change did not alter what a
run computes on this machine; a different one means it did, somewhere the diff between the two
`--leaves` listings names.

    python experiments/tools/run_state_hash.py  # tic-tac-toe and Connect Four, 3 iterations
    python experiments/tools/run_state_hash.py --games tic_tac_toe --leaves  # and each array's own hash
"""

from __future__ import annotations

import argparse
import hashlib
import pathlib
import sys
import tempfile

import jax
import numpy as np

from azjax import config as config_lib
from azjax import presets, trainer

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # experiments/, for the shared benchmark module
from benchmark import run_main


def leaf_hashes(tree) -> dict[str, str]:
    """Each array of `tree` by its path: the SHA-256 of its dtype, shape and bytes (typed keys by their data)."""
    hashes = {}
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        if isinstance(leaf, jax.Array) and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        array = np.asarray(jax.device_get(leaf))
        digest = hashlib.sha256(f"{array.dtype}{array.shape}".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
        hashes[jax.tree_util.keystr(path)] = digest.hexdigest()
    return hashes


def tree_hash(tree) -> str:
    """One SHA-256 over every array of `tree` (`leaf_hashes`), in tree order."""
    digest = hashlib.sha256()
    for path, leaf in leaf_hashes(tree).items():
        digest.update(f"{path}={leaf};".encode())
    return digest.hexdigest()


def run_state_after(game: str, iterations: int, seed: int = 0, preset: str = "cpu"):
    """The run state after `iterations` iterations of `game`'s preset, trained by `trainer.train` on one device."""
    config = config_lib.with_overrides(presets.get_config(game, preset), {"num_iterations": iterations,
                                                                               "seed": seed})
    with tempfile.TemporaryDirectory() as run_dir:
        result = trainer.train(config, run_dir, eval_every=0, progress=False, num_devices=1,
                               log=lambda _: None)
    return result.run_state


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", nargs="+", default=["tic_tac_toe", "connect_four"])
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--leaves", action="store_true", help="also print each array's hash")
    args = parser.parse_args(argv)
    for game in args.games:
        state = run_state_after(game, args.iterations, args.seed)
        print(f"{game} cpu preset, seed {args.seed}, {args.iterations} iterations: {tree_hash(state)}", flush=True)
        if args.leaves:
            for path, digest in leaf_hashes(state).items():
                print(f"  {path} {digest}")


if __name__ == "__main__":
    run_main(main)
