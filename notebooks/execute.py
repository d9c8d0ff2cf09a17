"""Runs the notebooks top to bottom and stores their outputs in place: the one command that regenerates them.

    python notebooks/execute.py                      # every notebook, full settings (minutes each, on the CPU)
    python notebooks/execute.py inside_the_search    # one notebook
    python notebooks/execute.py --quick              # tiny settings (AZJAX_QUICK=1), outputs not stored

Each notebook reads AZJAX_QUICK (1: tiny settings, as the test suite runs it) and AZJAX_RUN_DIR (where it writes
or resumes its training run; default runs/<notebook>). A notebook runs with notebooks/ as its working directory. It needs the dev extra (nbformat, nbclient, ipykernel):
`pip install -e ".[dev]"`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

try:
    import nbformat
    from nbclient import NotebookClient
except ImportError as missing:
    if __name__ != "__main__":  # imported (the notebooks' tests): the error as it is
        raise
    print(f"notebooks/execute.py needs the dev extra ({missing.name} is not installed): pip install -e \".[dev]\"",
          file=sys.stderr)
    raise SystemExit(2) from None

NOTEBOOKS_DIR = Path(__file__).resolve().parent


def names() -> list[str]:
    """The notebooks shipped, by name (file stem), sorted."""
    return sorted(path.stem for path in NOTEBOOKS_DIR.glob("*.ipynb"))


def execute(name: str, *, quick: bool, run_dir: Path | None = None, cwd: Path | None = None,
            timeout: int = 3600) -> nbformat.NotebookNode:
    """Executes notebooks/<name>.ipynb and returns it with its outputs (the file itself is left unchanged).

    Args:
      name: the notebook's file stem, e.g. "quickstart".
      quick: sets AZJAX_QUICK=1 for the kernel (tiny settings) or removes it.
      run_dir: AZJAX_RUN_DIR for the kernel; None leaves the notebook's default (runs/<name> under `cwd`).
      cwd: the kernel's working directory; None: notebooks/.
      timeout: seconds allowed per cell.

    Raises:
      nbclient.exceptions.CellExecutionError: a cell failed; the message has the cell and its traceback.
    """
    notebook = nbformat.read(NOTEBOOKS_DIR / f"{name}.ipynb", as_version=4)
    saved = {key: os.environ.get(key) for key in ("AZJAX_QUICK", "AZJAX_RUN_DIR", "MPLBACKEND")}
    try:
        os.environ.pop("MPLBACKEND", None)  # the kernel's inline backend draws the figures into the outputs
        if quick:
            os.environ["AZJAX_QUICK"] = "1"
        else:
            os.environ.pop("AZJAX_QUICK", None)
        if run_dir is not None:
            os.environ["AZJAX_RUN_DIR"] = str(run_dir)
        client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(cwd or NOTEBOOKS_DIR)}})
        client.execute()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return notebook


def printed(notebook: nbformat.NotebookNode) -> str:
    """Everything the notebook's code cells printed (their stream outputs), joined by newlines."""
    return "\n".join(output.get("text", "") for output in _outputs(notebook) if output.get("output_type") == "stream")


def num_images(notebook: nbformat.NotebookNode) -> int:
    """How many figures (PNG outputs) the notebook's code cells drew."""
    return sum("image/png" in output.get("data", {}) for output in _outputs(notebook))


def num_boards(notebook: nbformat.NotebookNode) -> int:
    """How many outputs of the notebook's code cells hold an SVG picture (drawn by `azjax.games.drawing`)."""
    return sum("<svg" in str(output.get("data", {})) for output in _outputs(notebook))


def _outputs(notebook: nbformat.NotebookNode) -> list:
    return [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"notebooks to run (default: all of {', '.join(names())})")
    parser.add_argument("--quick", action="store_true", help="tiny settings; the stored outputs are not changed")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(names()))
    if unknown:
        parser.error(f"no notebook named {', '.join(unknown)}; the notebooks are {', '.join(names())}")
    for name in args.names or names():
        start = time.perf_counter()
        notebook = execute(name, quick=args.quick)
        if not args.quick:
            nbformat.write(notebook, NOTEBOOKS_DIR / f"{name}.ipynb")
        print(f"{name}: ran in {time.perf_counter() - start:.0f} s" + ("" if args.quick else ", outputs stored"))


if __name__ == "__main__":
    main()
