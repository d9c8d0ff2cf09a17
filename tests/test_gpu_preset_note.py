"""`azjax train --preset gpu` on a CPU says, before it compiles, that its sizes are an accelerator's and what
that costs here; on an accelerator it says nothing of the kind. Training itself is replaced by a stand-in."""

from __future__ import annotations

import pytest
from tiny import run_cli

from azjax import trainer
from azjax.cli import train as train_command


@pytest.mark.parametrize("platform", ["cpu", "gpu"])
def test_a_gpu_preset_on_a_cpu_says_what_it_costs(tmp_path, monkeypatch, platform):
    def stand_in(*args, **kwargs):
        raise trainer.NonFiniteError("stand-in", iteration=0, problems=[], last_checkpoint=None)

    monkeypatch.setattr(trainer, "train", stand_in)
    monkeypatch.setattr(train_command, "jax_platform", lambda: platform)
    code, out, _ = run_cli(["train", "--game", "connect_four", "--preset", "gpu", "--out", tmp_path / "run"])
    assert code == 1  # the stand-in's error: nothing trained
    noted = [line for line in out.splitlines() if line.startswith("Note: this is the gpu preset, on a CPU")]
    assert len(noted) == (1 if platform == "cpu" else 0), out
    if noted:
        assert "4096 games x 16 moves" in noted[0] and "6 x 128 bfloat16 network" in noted[0]
        assert "an iteration takes minutes" in noted[0]
