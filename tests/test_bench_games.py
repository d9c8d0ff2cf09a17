"""Smoke tests of experiments/benchmarks/bench_games.py: its quick mode runs and reports positive rates (timings never
asserted)."""

from __future__ import annotations

import importlib.util
import json

import pytest

_TINY = ["--quick", "--games", "tic_tac_toe", "--batch-sizes", "1", "4", "--steps", "8", "--repeats", "2"]


@pytest.fixture(scope="module")
def bench_games(load_experiment):
    with load_experiment("bench_games") as module:
        yield module


def test_quick_mode_reports_positive_rates(bench_games, tmp_path, capsys):
    out = tmp_path / "bench.json"
    results = bench_games.main([*_TINY, "--json", str(out)])
    printed = capsys.readouterr().out

    assert json.loads(out.read_text()) == json.loads(json.dumps(results))
    assert [row["batch_size"] for row in results["rows"]] == [1, 4]
    pgx_ran = results["config"]["pgx_skipped"] is None
    assert pgx_ran == (importlib.util.find_spec("pgx") is not None)
    for row in results["rows"]:
        assert row["game"] == "tic_tac_toe"
        assert row["azjax_steps_per_s"] > 0
        if pgx_ran:
            assert row["pgx_steps_per_s"] > 0 and row["ratio"] > 0
            # Same keys and same rules: both implementations finish the same number of games.
            finished = {label: d["games_finished"] for label, d in row["details"].items()}
            assert finished["azjax"] == finished["pgx"]
    assert "azjax steps/s" in printed and "jax " in printed and "MEDIAN" in printed


def test_without_pgx_reports_azjax_and_says_pgx_was_skipped(bench_games, monkeypatch, capsys):
    monkeypatch.setattr(bench_games, "import_pgx", lambda: None)
    results = bench_games.main([*_TINY, "--batch-sizes", "2"])
    printed = capsys.readouterr().out

    assert results["config"]["pgx_skipped"] == "pgx is not installed"
    (row,) = results["rows"]
    assert row["azjax_steps_per_s"] > 0 and row["pgx_steps_per_s"] is None and row["ratio"] is None
    assert "pgx: skipped (pgx is not installed)" in printed


def test_a_baseline_is_timed_beside_and_an_unchanged_module_has_none(bench_games, monkeypatch, capsys):
    import benchmark  # experiments/ is on the path while the script is loaded

    with pytest.raises(ValueError, match="no-such-revision"):
        benchmark.module_at_revision("azjax.games.mnk", "no-such-revision")
    from azjax.games import mnk

    monkeypatch.setattr(bench_games, "module_at_revision", lambda name, revision: mnk)  # the baseline: today's code
    results = bench_games.main([*_TINY, "--batch-sizes", "2", "--no-pgx", "--baseline", "REV", "--sampler",
                                "categorical"])
    printed = capsys.readouterr().out
    (row,) = results["rows"]
    assert row["baseline_steps_per_s"] > 0 and row["speedup"] > 0
    assert results["config"]["sampler"] == "categorical" and "'categorical' sampler" in printed
    finished = {label: d["games_finished"] for label, d in row["details"].items()}
    assert finished["azjax"] == finished["azjax@REV"]  # the same code plays the same games from the same keys
    assert "REV steps/s" in printed and "x REV" in printed

    monkeypatch.setattr(bench_games, "module_at_revision", lambda name, revision: None)  # unchanged since REV
    (row,) = bench_games.main([*_TINY, "--batch-sizes", "2", "--no-pgx", "--baseline", "REV"])["rows"]
    assert row["baseline_steps_per_s"] is None and row["speedup"] is None
