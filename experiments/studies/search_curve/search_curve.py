"""What play-time search buys: an agent's optimal-move rate on a game's labelled positions against the simulations
of its search, per stratum, beside its network alone.

    python experiments/studies/search_curve/search_curve.py                       # the shipped Connect Four agent
    python experiments/studies/search_curve/search_curve.py runs/c4 pretrained:connect_four --simulations 16 64 256
    python experiments/studies/search_curve/search_curve.py --position-set pons   # on Pascal Pons's sets
    python experiments/studies/search_curve/search_curve.py --simulations 1024 --strata begin-hard   # some strata

For each agent (anything `azjax eval` takes that has a network: a run, an export, pretrained:GAME), its network's
top move (`greedy:AGENT`) and then its search at each of --simulations (its own search policy, no root noise) judge
the same positions: the share where the move keeps the game-theoretic outcome (`azjax eval --positions`), with the
seconds each took here (compilation included: a guide, not a benchmark). Writes a markdown table and the JSON
beside it (--out; default runs/search_curve/<game>-<device>-<date>[-<set>].md: the records in this study's
results/ are rewritten only by naming them, e.g.
`--out experiments/studies/search_curve/results/connect_four-cpu-2026-11-27.md`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import sys
import time
from collections.abc import Iterator
from typing import Any

import jax

from azjax import agent_specs, evaluation, games
from azjax.solver import positions

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))  # experiments/, for the shared benchmark module
from benchmark import device_name, machine_info, note_written, run_main

# 1024 is left out of the default: on 2 CPU cores a search of 512 simulations over the 6000 positions took 706 s
# (beside a solver job); one of 1024 had not finished after 14 minutes. `--simulations ... 1024` asks for it.
DEFAULT_SIMULATIONS = (16, 32, 64, 128, 256, 512)


def curve(agent: str, game: games.Game, labelled: positions.LabelledPositions, simulations: list[int],
          seed: int = 0) -> Iterator[dict[str, Any]]:
    """One row for the network alone (simulations 0), then one per number of simulations, each as it is judged."""
    for count in [0, *simulations]:
        spec = f"greedy:{agent}" if count == 0 else agent
        bot = agent_specs.make_bot(spec, game, num_simulations=count or None)
        start = time.perf_counter()
        report = evaluation.judge_bot(jax.random.key(seed), bot, labelled).to_dict()
        seconds = time.perf_counter() - start
        row = {"agent": agent, "simulations": count, "seconds": round(seconds, 1),
               "optimal_move_rate": report["optimal_move_rate"],
               **{name: report.get(f"optimal_move_rate/{name}", report["optimal_move_rate"])  # one stratum: all
                  for name in labelled.strata}}
        print(f"{agent} {'network' if count == 0 else f'{count} simulations'}: "
              f"{row['optimal_move_rate']:.1%} ({seconds:.0f} s)", flush=True)
        yield row


def default_out(game: str, position_set: str | None, device: str) -> pathlib.Path:
    """Where a curve goes without --out: runs/search_curve/, named as the records are (<game>-<device>-<date>[-<set>],
    `device` as `benchmark.device_name` gives it), never a committed record, which only --out rewrites."""
    stem = "-".join(part for part in (game, device, datetime.date.today().isoformat(), position_set) if part)
    return pathlib.Path("runs") / "search_curve" / f"{stem}.md"


def report(results: dict[str, Any]) -> str:
    strata = results["strata"]
    info = results["machine"]
    which = f"the set {results['position_set']}" if results["position_set"] else "its own labelled positions"
    if results.get("only_strata"):
        which += f", {' '.join(strata)} only"
    lines = [
        f"# What play-time search buys: {results['game']}, {which}",
        "",
        f"{info['date']}; azjax {info['azjax']} ({info['azjax_commit']}); {info['cpu']}; jax "
        f"{results['device']}. `python experiments/studies/search_curve/search_curve.py {results['command']}`. "
        "Optimal moves: the share of the positions where the move keeps the game-theoretic outcome (`azjax eval "
        "--positions`); seconds include compilation, and whatever else ran beside (a guide only).",
        "",
        "| agent | search | all | " + " | ".join(strata) + " | seconds |",
        "|---|---|---|" + "---|" * len(strata) + "---|",
    ]
    for row in results["rows"]:
        search = "network alone" if row["simulations"] == 0 else f"{row['simulations']} simulations"
        cells = " | ".join(f"{row[name]:.1%}" for name in strata)
        lines.append(f"| {row['agent']} | {search} | {row['optimal_move_rate']:.1%} | {cells} | {row['seconds']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("agents", nargs="*", default=["pretrained:connect_four"], help="agents with a network "
                        "(default: pretrained:connect_four)")
    parser.add_argument("--game", help="the game (default: the first agent's)")
    parser.add_argument("--simulations", type=int, nargs="+", default=list(DEFAULT_SIMULATIONS),
                        help=f"searches to judge (default: {' '.join(map(str, DEFAULT_SIMULATIONS))})")
    parser.add_argument("--position-set", help="another set of the game's (connect_four: pons)")
    parser.add_argument("--strata", nargs="+", metavar="NAME", help="judge only these strata's positions, e.g. "
                        "the three not yet near 100%% for a long search: begin-medium begin-hard middle-medium")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=pathlib.Path, help="the markdown file, its .json beside it (default: "
                        "runs/search_curve/GAME-DEVICE-DATE[-SET].md)")
    args = parser.parse_args(argv)
    if any(count < 1 for count in args.simulations):
        parser.error(f"--simulations must be >= 1, got {args.simulations}")
    name = args.game or agent_specs.game_of_spec(args.agents[0])
    if name is None:
        parser.error(f"give --game: {args.agents[0]} does not say which game it plays")
    game = games.make(name)
    try:
        labelled = positions.load(game.name, args.position_set)
    except ValueError as error:
        parser.error(str(error))
    if labelled is None:
        parser.error(f"{game.name} has no labelled positions")
    if args.strata is not None:
        try:
            labelled = labelled.only(args.strata)
        except ValueError as error:
            parser.error(f"--strata: {error}")
    device = jax.devices()[0]
    results = {"game": game.name, "position_set": args.position_set, "strata": list(labelled.strata),
               "only_strata": args.strata is not None,
               "command": " ".join(argv if argv is not None else sys.argv[1:]),
               "device": f"{device.platform} ({device.device_kind})", "machine": machine_info(), "rows": []}
    out = args.out or default_out(game.name, args.position_set, device_name())
    out.parent.mkdir(parents=True, exist_ok=True)
    for agent in args.agents:
        for row in curve(agent, game, labelled, args.simulations, args.seed):
            results["rows"].append(row)  # written after every row: a stopped curve keeps what it measured
            out.write_text(report(results))
            out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
            note_written(out)
            note_written(out.with_suffix(".json"))
    print(f"\n{report(results)}\nWritten: {out} and .json")
    return results


if __name__ == "__main__":
    run_main(main)
