"""experiments/selfplay_breakdown.py at its --quick size on the CPU: the four programs timed, their shares of
self-play's time, the table and JSON written (issue 41's "where does the time go", prepared for an accelerator)."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import pytest


@pytest.mark.slow  # four programs compiled: ~30 s on 2 cores
def test_the_quick_breakdown_times_every_part(load_experiment, tmp_path):
    out = tmp_path / "breakdown.md"
    with load_experiment("selfplay_breakdown") as script:
        results = script.main(["--quick", "--repeats", "2", "--out", str(out)])
    per_move = results["seconds_per_move"]
    assert set(per_move) == {"self-play", "free network", "network alone", "game alone", "network in self-play"}
    assert all(per_move[label] > 0 for label in ("self-play", "free network", "network alone", "game alone"))
    assert results["share_of_selfplay"]["self-play"] == pytest.approx(1.0)
    assert json.loads(out.with_suffix(".json").read_text())["shape"]["games"] == 64
    assert "| network alone |" in out.read_text()


def test_the_free_network_costs_nothing_but_keeps_the_shapes(load_experiment):
    with load_experiment("benchmark") as benchmark:
        apply = benchmark.free_network(7)
        logits, value = apply({}, jnp.ones((5, 6, 7, 2)))
    assert logits.shape == (5, 7) and value.shape == (5,)
    assert float(jnp.abs(logits).max()) == 0.0 and float(jnp.abs(value).max()) == 0.0
    # The zero is tied to the observation: a NaN there shows through, so XLA cannot drop the observation.
    logits, _ = jax.jit(apply)({}, jnp.full((1, 6, 7, 2), jnp.nan))
    assert bool(jnp.isnan(logits).all())
