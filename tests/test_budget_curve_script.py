"""experiments/studies/budget_curve/budget_curve.py: the strength-against-budget picture and table from `azjax eval
--positions --json` files (hand-made ones here: the script reads, it does not train or judge)."""

from __future__ import annotations

import json
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]


def judgement(path, agent, network, search):
    """An `azjax eval --positions --json` file judging greedy:AGENT and AGENT (rates over all and begin-hard)."""
    rates = lambda everything, hard: {"optimal_move_rate": everything,  # noqa: E731
                                      "optimal_move_rate/begin-hard": hard}
    path.write_text(json.dumps({"game": "connect_four", "position_set": None,
                                "positions": {f"greedy:{agent}": rates(*network), agent: rates(*search)}}))
    return str(path)


def test_points_are_drawn_and_tabled_per_label(load_experiment, tmp_path):
    ten = judgement(tmp_path / "ten.json", "runs/a", (0.94, 0.85), (0.96, 0.87))
    sixty = judgement(tmp_path / "sixty.json", "runs/b", (0.961, 0.9), (0.975, 0.93))
    out = tmp_path / "curve"
    with load_experiment("budget_curve") as script:
        assert script.main(["--point", "preset", "10", ten, "runs/a", "--point", "preset", "60", sixty, "runs/b",
                            "--out", str(out)]) == 0
    png = out.with_suffix(".png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    rows = out.with_suffix(".md").read_text().splitlines()
    assert rows[2].startswith("| preset | 10 | 94.0 / 96.0 | 85.0 / 87.0 |")
    assert rows[3].startswith("| preset | 60 | 96.1 / 97.5 | 90.0 / 93.0 |")


def test_a_missing_agent_or_stratum_is_named(load_experiment, tmp_path):
    ten = judgement(tmp_path / "ten.json", "runs/a", (0.94, 0.85), (0.96, 0.87))
    with load_experiment("budget_curve") as script:
        with pytest.raises(SystemExit, match=r"judged no agent 'greedy:runs/other'"):
            script.main(["--point", "x", "10", ten, "runs/other", "--out", str(tmp_path / "c")])
        with pytest.raises(SystemExit, match=r"no 'optimal_move_rate/middle-easy'"):
            script.main(["--point", "x", "10", ten, "runs/a", "--stratum", "middle-easy", "--out", str(tmp_path / "c")])
        with pytest.raises(SystemExit, match="MINUTES must be a number"):
            script.main(["--point", "x", "ten", ten, "runs/a", "--out", str(tmp_path / "c")])
    assert not (tmp_path / "c.png").exists()


def readme_commands(script: str) -> list[str]:
    """Every `python experiments/.../SCRIPT ...` the READMEs give in backticks, but the templates (with "...")."""
    text = "\n".join((REPO / name).read_text()
                     for name in ("README.md", "experiments/README.md", "experiments/studies/budget_curve/README.md"))
    spans = (" ".join(span.split()) for span in re.findall(r"`([^`]*)`", text))
    return [span for span in spans if span.startswith("python experiments/") and "..." not in span
            and span.split()[1].endswith(f"/{script}")]


def test_the_readmes_command_draws_the_recorded_curve(tmp_path):
    """`python experiments/studies/budget_curve/budget_curve.py` as the READMEs write it: the recorded points, into
    runs/ (not into the committed record), the same table as the record's."""
    commands = readme_commands("budget_curve.py")
    assert "python experiments/studies/budget_curve/budget_curve.py" in commands
    for command in commands:
        argv = shlex.split(command)
        argv[:2] = [sys.executable, str(REPO / argv[1])]  # run from elsewhere: its runs/ are the test's
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (command, done.stderr)
    recorded = (REPO / "experiments/studies/budget_curve/results/connect_four-cpu-2026-11-27-curve.md").read_text()
    assert (tmp_path / "runs" / "budget_curve.md").read_text() == recorded
    assert (tmp_path / "runs" / "budget_curve.png").read_bytes().startswith(b"\x89PNG")
