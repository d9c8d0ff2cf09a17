"""experiments/tools/pretrain.py end to end at a tiny size: train (a subprocess `azjax train`), package as a shipped
agent, measure; the card records each step's command, and the packaged agent loads as pretrained:GAME."""

from __future__ import annotations

import json

import pytest

from azjax import checkpointing, pretrained

pytestmark = pytest.mark.slow


def test_pretrain_trains_packages_and_measures(load_experiment, tiny_overrides, tmp_path, monkeypatch):
    overrides = [f"{name}={value}" for name, value in tiny_overrides.items() if name != "num_iterations"]
    out = tmp_path / "agents" / "tic_tac_toe"
    argv = ["tic_tac_toe", "--seconds", "2", "--run-dir", str(tmp_path / "run"), "--out", str(out),
            "--opponents", "random", "--games", "2", "--set", *overrides]
    with load_experiment("pretrain") as script:
        assert script.main(argv) == 0
    card = json.loads((out / "card.json").read_text())
    assert card["training"]["command"].startswith("azjax train --game tic_tac_toe --seconds 2 --seed 0 --out ")
    assert "--network.num_channels 8" in card["training"]["command"]
    assert card["training"]["iterations"] == checkpointing.latest_iteration(tmp_path / "run")
    summaries = [figure["summary"] for figure in card["strength"]]
    assert summaries[0].startswith("network: optimal top move in ") and summaries[1].startswith("search: ")
    assert summaries[2].startswith("vs random: score ") and card["strength"][2]["result"]["games"] == 2
    assert card["strength"][2]["command"] == f"azjax eval {out} random --games 2 --opening-moves 0"
    monkeypatch.setattr(pretrained, "DIRECTORY", tmp_path / "agents")
    assert pretrained.names() == ["tic_tac_toe"] and "vs random: score" in pretrained.describe("tic_tac_toe")
