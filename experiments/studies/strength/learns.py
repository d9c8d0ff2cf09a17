"""Does a game learn on the CPU? Train its small preset for a few minutes, then play the final agent against a
uniformly random player and against its own first checkpoint, and, for a game with labelled positions
(tic-tac-toe, Connect Four), judge it against perfect play: the share of solved positions where the network's top
move, and the search's move, keep the game-theoretic outcome, per stratum, and the value head's accuracy.

    python experiments/studies/strength/learns.py --game connect_four --out runs/c4 --seconds 600
    python experiments/studies/strength/learns.py --game othello6 --out runs/othello6 --seconds 300

The first iteration's checkpoint is copied aside (OUT-first) before training continues, so the final agent can
play the agent it started from. Both play with search (the run's simulations, no root noise), so each pair of
games starts after --opening-moves random moves (the arena's openings: distinct between pairs, both seats of a
pair alike; "distinct_games" counts the different games, which the intervals use); results are from the final
agent's side, over --games games in each seat ("win_rate" = wins / games). `--mcts 400` also plays UCT with 400
rollout simulations: the labelled positions come from random play, and a run can rank higher there and lower
against a real opponent (Connect Four, 2026-11-24:
experiments/studies/strength/results/connect_four-cpu-2026-11-27.txt). `--seconds 0` evaluates the run in --out again
without training it (it refuses when OUT-first is missing).

The bars: Connect Four >= 95% wins against random after 10 minutes and clearly ahead of the first checkpoint;
Gomoku 9x9, Othello 6x6 and Brandub >= 90% after a few minutes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import shutil
import sys
import time
from pathlib import Path

import jax

from azjax import checkpointing, evaluation, network_bots, parallel, trainer, uct
from azjax.agent import load_agent
from azjax.solver import positions

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))  # experiments/, for the shared benchmark module
from benchmark import note_written, preset_config, run_main


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="connect_four", help="a game with a CPU preset (default: connect_four)")
    parser.add_argument("--out", type=Path, help="run directory (default: runs/GAME-learns)")
    parser.add_argument("--seconds", type=float, default=600.0, help="training time after the first iteration; 0: "
                        "only evaluate the run already in --out")
    parser.add_argument("--games", type=int, default=200, help="games per seat in each match")
    parser.add_argument("--opening-moves", type=int, default=4, help="each pair of games starts after K random "
                        "moves, so that the two deterministic agents of the checkpoint match play many games, "
                        "not one per seat")
    parser.add_argument("--mcts", type=int, nargs="*", default=[], metavar="N", help="also play UCT with N "
                        "rollout simulations (e.g. 400): playing strength, which the labelled positions (random-play "
                        "positions) can rank differently")
    parser.add_argument("--eval-every", type=int, default=0, metavar="N", help="every N iterations the training "
                        "agent plays --eval-opponents (scores in metrics.jsonl as eval/...; 0: never)")
    parser.add_argument("--eval-opponents", nargs="*", metavar="AGENT", help="the baselines of --eval-every "
                        "(default: random, onestep, mcts:100, and perfect for tic-tac-toe)")
    parser.add_argument("--eval-games", type=int, default=64, help="games against each of them (even)")
    parser.add_argument("--preset", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="config overrides")
    args = parser.parse_args(argv)
    args.out = args.out or Path("runs") / f"{args.game}-learns"
    first_dir = args.out.with_name(args.out.name + "-first")
    if args.seconds <= 0 and not first_dir.exists():  # else it would train an iteration and play itself
        parser.error(f"--seconds 0 evaluates a run trained before, against its first checkpoint, but {first_dir} "
                     f"is missing: train {args.out} first (--seconds > 0)")
    parallel.expose_cpu_cores()  # one jax device per core, so that training and the matches split over them

    config = preset_config(args.game, args.preset, args.set)
    note_written(args.out)
    note_written(first_dir)
    if not first_dir.exists():
        trainer.train(dataclasses.replace(config, num_iterations=1), args.out, progress=False)
        shutil.copytree(args.out, first_dir)
    start = time.perf_counter()
    if args.seconds > 0:
        evaluator = evaluation.make_evaluator(
            config, opponents=args.eval_opponents, num_games=args.eval_games,
            mesh=parallel.mesh_for(args.eval_games // 2)) if args.eval_every else None
        trainer.train(config, args.out, max_seconds=args.seconds, progress=True, eval_every=args.eval_every,
                      evaluator=evaluator)
    trained_seconds = time.perf_counter() - start

    final, first = load_agent(args.out), load_agent(first_dir)
    key, mesh = jax.random.key(0), parallel.mesh_for(args.games)  # each device plays its share of the games

    def match(opponent: evaluation.AgentFn) -> dict:
        return evaluation.head_to_head(
            key, final.game, final.act, opponent, args.games, opening_moves=args.opening_moves, mesh=mesh
        )

    start = time.perf_counter()
    report = {
        "game": args.game,
        "iterations": checkpointing.latest_iteration(args.out),
        "training_seconds": round(trained_seconds, 1),
        "opening_moves": args.opening_moves,
        "vs_random": match(evaluation.random_agent),
        "vs_first_checkpoint": match(first.act),
        **{f"vs_mcts{n}": match(uct.uct_bot(final.game, n).act) for n in args.mcts},
        "evaluation_seconds": round(time.perf_counter() - start, 1),
    }
    for name in ("vs_random", "vs_first_checkpoint", *(f"vs_mcts{n}" for n in args.mcts)):
        report[name]["win_rate"] = report[name]["wins"] / report[name]["games"]
    labelled = positions.load(args.game)
    if labelled is not None:
        start = time.perf_counter()
        network = evaluation.judge_bot(key, network_bots.greedy_bot(final), labelled)
        searched = evaluation.judge_bot(key, network_bots.alphazero_bot(final, reuse_tree=False), labelled)
        print(f"network's top move on {labelled.num_positions} solved positions:\n{network.format()}")
        print(f"search's move ({final.config.search.num_simulations} simulations):\n{searched.format()}")
        report["positions"] = {"network": network.to_dict(), "search": searched.to_dict(),
                               "seconds": round(time.perf_counter() - start, 1)}
    print(json.dumps(report, indent=2))
    (args.out / "learns.json").write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    run_main(main)
