"""The quickstart notebook runs from top to bottom (with AZJAX_QUICK=1: tiny settings), so it cannot rot."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "quickstart.ipynb"


def test_quickstart_notebook_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("AZJAX_QUICK", "1")  # the kernel inherits the environment
    monkeypatch.setenv("AZJAX_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend draws the figures
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and its traceback, if any cell fails

    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])]
    text = "\n".join(output.get("text", "") for output in outputs if output.get("output_type") == "stream")
    images = [output for output in outputs if "image/png" in output.get("data", {})]
    assert "quick mode: True" in text
    assert "stopped (iterations) after iteration 2" in text
    assert "trained      perfect" in text  # the table against the baselines
    assert "trained plays" in text and "Your move: b2" in text
    assert len(images) == 2  # the learning curve and the heat maps
    assert (tmp_path / "run" / "learning_curves.png").is_file()
