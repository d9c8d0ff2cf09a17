"""Smoke tests of experiments/benchmarks/bench_selfplay.py: its quick mode runs and reports positive rates for azjax and
the pgx + mctx reference (timings never asserted)."""

from __future__ import annotations

import importlib.util
import json

import pytest

_TINY = [
    "--quick", "--batch-sizes", "4", "--simulations", "2", "--blocks", "1", "--channels", "4",
    "--steps", "2", "--repeats", "2",
]


@pytest.fixture(scope="module")
def bench_selfplay(load_experiment):
    with load_experiment("bench_selfplay") as module:
        yield module


@pytest.mark.slow  # the default suite keeps a benchmark script's quick mode in tests/test_bench_games.py
def test_quick_mode_reports_positive_rates_for_both(bench_selfplay, tmp_path, capsys):
    out = tmp_path / "bench.json"
    results = bench_selfplay.main([*_TINY, "--json", str(out)])
    printed = capsys.readouterr().out

    assert json.loads(out.read_text()) == json.loads(json.dumps(results))
    pgx_ran = results["config"]["reference_skipped"] is None
    assert pgx_ran == (importlib.util.find_spec("pgx") is not None)
    assert results["config"]["network"]["num_blocks"] == 1 and results["config"]["network"]["num_channels"] == 4
    (row,) = results["rows"]
    assert (row["batch_size"], row["num_simulations"]) == (4, 2)
    assert row["azjax_positions_per_s"] > 0
    assert row["azjax_simulations_per_s"] == pytest.approx(2 * row["azjax_positions_per_s"])
    if pgx_ran:
        assert row["reference_positions_per_s"] > 0 and row["ratio"] > 0
        assert row["reference_simulations_per_s"] == pytest.approx(2 * row["reference_positions_per_s"])
    for details in row["details"].values():
        assert details["compile_s"] > 0 and len(details["times_s"]) == 2
    assert "azjax pos/s" in printed and "jax " in printed and "MEDIAN" in printed


def test_help_documents_every_option(bench_selfplay, capsys):
    with pytest.raises(SystemExit):
        bench_selfplay.parse_args(["--help"])
    printed = capsys.readouterr().out
    for option in ("--batch-sizes", "--simulations", "--steps", "--repeats", "--blocks", "--channels", "--quick",
                   "--no-reference", "--json"):
        assert option in printed
