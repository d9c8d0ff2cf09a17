"""What `import azjax` costs: seconds beyond importing jax itself (the jax row: jax itself), and the azjax
modules it loads, beside the same measurement for the whole application (the trainer, agents and checkpoints, as
`import azjax` loaded before the core was split from it) and for jax alone, in the same run.

Each figure is the median of --repeats fresh interpreters (`python -c ...`), timed inside the interpreter with
`time.perf_counter` around the import, after `import jax, jax.numpy` (whose own time is the "jax" row). The files
are in the page cache after the first interpreter, as they are for a user's second run.

    python experiments/benchmarks/import_cost.py [--repeats 7]
    cd OLD_CHECKOUT && PYTHONPATH=$PWD python /path/to/experiments/benchmarks/import_cost.py  # another commit's
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # experiments/, for the shared benchmark module
import benchmark
from benchmark import run_main

HEAVY = ("orbax", "flask", "matplotlib", "tensorboardX", "tqdm", "azjax.solver", "azjax.trainer", "azjax.config")
ROWS = (
    ("jax (reference)", "import jax, jax.numpy"),
    ("import azjax", "import azjax"),
    ("import azjax.core", "import azjax.core"),
    ("the application (reference)", "import azjax.trainer, azjax.agent, azjax.evaluation"),
)
PROBE = """
import json, sys, time
start = time.perf_counter(); import jax, jax.numpy; jax_s = time.perf_counter() - start
before = set(sys.modules); start = time.perf_counter()
exec({statement!r})
seconds = time.perf_counter() - start
loaded = [m for m in sys.modules if m not in before]
print(json.dumps(dict(jax_s=jax_s, seconds=seconds, azjax=sum(m.split('.')[0] == 'azjax' for m in loaded),
                      modules=len(loaded), heavy=[h for h in {heavy!r} if h in sys.modules])))
"""


def measure(statement: str, repeats: int) -> dict:
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", PROBE.format(statement=statement, heavy=HEAVY)],
                             capture_output=True, text=True, check=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    return dict(seconds=statistics.median(r["seconds"] for r in runs),
                jax_s=statistics.median(r["jax_s"] for r in runs),
                azjax_modules=runs[0]["azjax"], modules=runs[0]["modules"], heavy=runs[0]["heavy"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="fresh interpreters per row (default 7)")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    table = benchmark.Table([("import", "28s"), ("seconds", "8.2f"), ("azjax modules", "13d"),
                             ("modules", "7d"), ("heavy ones loaded", "40s")])
    print(table.header())
    results = {"machine": benchmark.machine_info(), "rows": {}}
    for label, statement in ROWS:
        try:
            row = measure(statement, args.repeats)
        except subprocess.CalledProcessError:  # an older checkout (PYTHONPATH) without that module
            print(f"{label:28s} fails to import in this checkout")
            continue
        if label.startswith("jax"):
            row["seconds"] = row["jax_s"]
        results["rows"][label] = row
        print(table.row(label, row["seconds"], row["azjax_modules"], row["modules"], ", ".join(row["heavy"]) or "-"))
    benchmark.write_json(args.json, results)


if __name__ == "__main__":
    run_main(main)
