"""experiments/benchmarks/selfplay_breakdown.py at its --quick size on the CPU: the four programs timed, their shares of
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
        results = script.main(["--quick", "--repeats", "2", "--peak-tflops", "0.05", "--out", str(out)])
    per_move = results["seconds_per_move"]
    assert set(per_move) == {"self-play", "free network", "network alone", "game alone", "network in self-play"}
    assert all(per_move[label] > 0 for label in ("self-play", "free network", "network alone", "game alone"))
    assert results["share_of_selfplay"]["self-play"] == pytest.approx(1.0)
    assert json.loads(out.with_suffix(".json").read_text())["shape"]["games"] == 64
    assert "| network alone |" in out.read_text()
    # The network's rate: its FLOPs of a move over each program's time, and its share of the peak given.
    rate, share = results["network_tflops"], results["share_of_peak"]
    assert results["flops_per_evaluation"] > 0 and set(rate) == set(share)
    # "network in self-play" is self-play's time less the free network's: a timing that load can make <= 0, when the
    # script leaves its rate out.
    inside = {"network in self-play"} if per_move["network in self-play"] > 0 else set()
    assert set(rate) == {"self-play", "network alone"} | inside
    if inside:
        assert rate["self-play"] < rate["network in self-play"]  # the same FLOPs in more time
    flops_per_move = results["flops_per_evaluation"] * 64 * (4 + 1)  # --quick: 64 games, 4 simulations
    assert rate["network alone"] == pytest.approx(flops_per_move / per_move["network alone"] / 1e12)
    assert share["network alone"] == pytest.approx(rate["network alone"] / 0.05)
    assert "of the peak" in out.read_text() and "the peak taken: 50 GFLOP/s" in out.read_text()


def test_the_free_network_costs_nothing_but_keeps_the_shapes(load_experiment):
    with load_experiment("benchmark") as benchmark:
        apply = benchmark.free_network(7)
        logits, value = apply({}, jnp.ones((5, 6, 7, 2)))
    assert logits.shape == (5, 7) and value.shape == (5,)
    assert float(jnp.abs(logits).max()) == 0.0 and float(jnp.abs(value).max()) == 0.0
    # The zero is tied to the observation: a NaN there shows through, so XLA cannot drop the observation.
    logits, _ = jax.jit(apply)({}, jnp.full((1, 6, 7, 2), jnp.nan))
    assert bool(jnp.isnan(logits).all())


def test_the_report_shows_the_networks_rate_and_a_dash_where_no_peak_is_known(load_experiment):
    results = {
        "shape": {"game": "connect_four", "network": "2x32", "dtype": "float32", "games": 128, "simulations": 16,
                  "moves": 8},
        "machine": {}, "command": "", "repeats": 3, "positions_per_s": 1500.0,
        "seconds_per_move": {"self-play": 0.085, "free network": 0.001, "network alone": 0.08, "game alone": 1e-4,
                             "network in self-play": 0.084},
        "share_of_selfplay": {"self-play": 1.0, "free network": 0.01, "network alone": 0.94, "game alone": 0.001,
                              "network in self-play": 0.99},
        "compile_s": {"self-play": 3.0},
        "flops_per_evaluation": 2.5e6, "network_tflops": {"network alone": 0.068}, "peak_tflops": None,
        "share_of_peak": {},
    }
    with load_experiment("selfplay_breakdown") as script:
        text = script.report(results)
    assert "| network alone | 80.00 | 94.0% | - | 68.0 | - |" in text
    assert "| game alone | 0.10 | 0.1% | - | - | - |" in text
    assert "2.50 MFLOP an evaluation of a position" in text and "--peak-tflops gives one" in text
