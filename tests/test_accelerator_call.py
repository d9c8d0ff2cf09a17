"""experiments/tools/accelerator_call.sh, a device lease's prepared work, runs its steps whole on the CPU at a tiny size
(marked slow: two trainings and their evaluations, about a minute each), so that its first run on an accelerator
is not its first run; everything it reports lands in $OUT."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TINY_TRAIN = ("--network.num_blocks 1 --network.num_channels 8 --network.value_hidden 8 --selfplay.num_games 16 "
              "--search.num_simulations 2 --search.max_num_considered_actions 2 --train.batch_size 32 "
              "--train.num_sgd_steps 2 --train.replay_capacity 1024")


def _call(step: str, tmp_path: pathlib.Path, **variables: str) -> pathlib.Path:
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "RUNS": str(tmp_path / "runs"), "PYTHON": sys.executable, **variables}
    done = subprocess.run(["bash", "experiments/tools/accelerator_call.sh", step], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_an_unknown_step_is_refused(tmp_path):
    done = subprocess.run(["bash", "experiments/tools/accelerator_call.sh", "everything"], cwd=ROOT,
                          capture_output=True, text=True,
                          env={**os.environ, "OUT": str(tmp_path), "PYTHON": sys.executable}, timeout=120)
    assert done.returncode == 2 and "unknown step everything" in done.stderr


@pytest.mark.slow
def test_the_preset_step_trains_judges_and_plays_the_shipped_agent(tmp_path):
    out = _call("preset", tmp_path, SECONDS_BUDGET="10", GAMES="2", TRAIN_ARGS=TINY_TRAIN, EVAL_ARGS="--simulations 2")
    judged = json.loads((out / "positions.json").read_text())["positions"]
    assert len(judged) == 2 and all(0.0 <= agent["optimal_move_rate"] <= 1.0 for agent in judged.values())
    assert (out / "metrics.jsonl").read_text().count("iteration_seconds") >= 1
    assert (out / "eval.log").read_text().count("empty board: the ") == 2
    match = json.loads((out / "vs_cpu_agent.json").read_text())
    assert "pretrained:connect_four" in match["agents"] and match["games_per_pairing"] == 2
    assert sorted(path.name for path in (out / "agent").iterdir()) == ["card.json", "config.json", "model.msgpack"]
    assert len([path for path in out.rglob("*") if path.is_file()]) <= 8  # what one device call brings back
    from azjax import load_agent

    assert load_agent(str(out / "agent")).game.name == "connect_four"


@pytest.mark.slow
def test_the_sweep_step_writes_its_table(tmp_path):
    words = TINY_TRAIN.split()
    sets = " ".join(f"{flag[2:]}={value}" for flag, value in zip(words[::2], words[1::2], strict=True))
    out = _call("sweep", tmp_path, MINUTES="0.1", GAMES="2", VARIANTS="preset,old",
                SWEEP_ARGS=f"--set {sets} --eval-simulations 2")
    [table] = out.glob("connect_four-*.md")
    assert "| preset | (the preset) |" in table.read_text() and "| old |" in table.read_text()  # both ran (exit 0)
    assert (out / "sweep.log").is_file()


@pytest.mark.slow
def test_the_breakdown_step_times_both_batches_and_brings_a_profile_back(tmp_path):
    out = _call("breakdown", tmp_path, BREAKDOWN_ARGS="--quick --repeats 1")
    for name in ("breakdown-4096", "breakdown-1024"):
        assert "| network alone |" in (out / f"{name}.md").read_text()
        assert json.loads((out / f"{name}.json").read_text())["shape"]["games"] == 64  # --quick's size
    assert (out / "selfplay.xplane.pb").stat().st_size > 0
