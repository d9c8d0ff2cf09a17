"""Smoke test of experiments/benchmarks/bench_arena.py: its quick mode runs, reports positive times, and the self-play
match (two deterministic agents) plays the same games with and without compaction (timings never asserted)."""

from __future__ import annotations

import json

import pytest


# Slow (about 22 s of compilation): the arena's compaction itself is tested in test_evaluation.py and
# test_tree_reuse.py; this runs the benchmark script around it.
@pytest.mark.slow
def test_quick_mode_reports_times_and_the_same_games(load_experiment, tmp_path, capsys):
    out = tmp_path / "bench.json"
    with load_experiment("bench_arena") as bench_arena:
        results = bench_arena.main(["--quick", "--json", str(out)])
    printed = capsys.readouterr().out

    assert json.loads(out.read_text()) == json.loads(json.dumps(results))
    assert all(results["search"][name] > 0 for name in ("search_ms", "search_free_network_ms", "network_ms"))
    assert list(results["matches"]) == ["vs_itself"]  # quick mode plays one match
    for compact in (False, True):
        row = results["matches"]["vs_itself"][f"compact={compact}"]
        assert row["compile_s"] > 0 and row["run_s"] > 0 and 4 < row["mean_length"] <= row["max_length"] <= 9
    assert results["matches"]["vs_itself"]["same_games"] is True
    assert "with a free network" in printed and "the same games: True" in printed
