"""experiments/tools/run_state_hash.py: one hash over every array of a run state, which a change of a value, a dtype, a
shape or a key's bits changes (the refactor's proof that a run computes what it did)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def test_the_hash_sees_values_dtypes_shapes_and_keys(load_experiment):
    with load_experiment("run_state_hash") as script:
        tree = {"a": jnp.arange(4, dtype=jnp.float32), "key": jax.random.key(0), "n": jnp.int32(3)}
        base = script.tree_hash(tree)
        assert script.tree_hash(dict(tree)) == base
        changed = [
            {**tree, "a": tree["a"].at[1].set(5.0)},
            {**tree, "a": tree["a"].astype(jnp.bfloat16)},
            {**tree, "a": tree["a"].reshape(2, 2)},
            {**tree, "key": jax.random.key(1)},
            {**tree, "n": jnp.int32(4)},
        ]
        assert len({base, *(script.tree_hash(other) for other in changed)}) == 1 + len(changed)
        assert set(script.leaf_hashes(tree)) == {"['a']", "['key']", "['n']"}
