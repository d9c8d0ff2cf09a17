"""Smoke test of experiments/studies/tree_reuse/tree_reuse.py on an untrained TINY tic-tac-toe run: the reusing agent
plays the plain one with each policy, and the self-play cost is measured with and without reuse."""

from __future__ import annotations

import json

import jax.numpy as jnp
import pytest

from azjax import checkpointing, rundir, training


# Slow (about 50 s): tree reuse itself is tested in test_tree_reuse.py; this runs the experiment script.
@pytest.mark.slow
def test_matches_and_cost(load_experiment, tiny_config, tmp_path):
    run = tmp_path / "run"
    rundir.write_config(run, tiny_config)
    checkpointing.CheckpointManager(run).save(training.init_run_state(tiny_config).replace(iteration=jnp.int32(1)),
                                              tiny_config)
    out = tmp_path / "reuse.md"
    with load_experiment("tree_reuse") as script:
        results = script.main([str(run), "--games", "4", "--opening-moves", "2", "--simulations", "6", "--batch", "8",
                               "--steps", "4", "--repeats", "1", "--out", str(out)])
    assert [(m["policy"], m["simulations"]) for m in results["strength"]] == [("gumbel", 6), ("puct", 6)]
    for match in results["strength"]:
        assert match["games"] == 8 and match["name_a"].endswith(":6:reuse")
        assert match["score_low"] <= match["score"] <= match["score_high"]
    for measured in results["cost"]:
        assert measured["ms_per_move"] > 0 and measured["ms_per_move_reuse"] > 0
        assert measured["capacity"] == 2 * 6 + 1 and 0 <= measured["kept_nodes"] <= measured["capacity"] - 6
    assert "az:RUN:S:reuse against az:RUN:S" in out.read_text()
    assert json.loads(out.with_suffix(".json").read_text())["game"] == "tic_tac_toe"
