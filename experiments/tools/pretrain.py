"""Train, package and measure the agent that ships for a game (azjax/pretrained/GAME): one script, rerunnable.

    python experiments/tools/pretrain.py connect_four --out azjax/pretrained/connect_four   # train, package, measure
    python experiments/tools/pretrain.py connect_four --skip-training  # package and measure the finished run again
    python experiments/tools/pretrain.py othello6 --seconds 1800 --opponents mcts:400 --games 100

The agent goes to runs/pretrain/GAME-agent unless --out says where: the shipped one is replaced only by naming its
directory. Three steps, each recorded in the agent's model card (OUT/card.json):
1. train: `azjax train --game GAME --seconds S --seed SEED --out runs/pretrain/GAME --no-progress` (tic-tac-toe: the
   preset's iterations), in a subprocess, so that the card's command is exactly what ran; the run directory gets
   pretrain.json (command, commit, machine, wall time), so that packaging and measuring can be redone later.
2. package: the run's latest checkpoint as config.json + model.msgpack + card.json (`azjax.pretrained.write`).
3. measure: each figure by an `azjax eval` command run in a subprocess (its command line goes into the card beside
   its result): the labelled positions (network and search) where the game has them, and matches of --games games
   from distinct random openings against each --opponents agent and, with --reference RUN, against another run
   (e.g. the 10-minute preset's). For Connect Four, also the move chosen on the empty board (the centre is the
   only winning one).
The card is rewritten after every figure, so an interrupted measurement keeps what it finished.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# experiments/, for the shared benchmark module (imported late, where it is used)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO = Path(__file__).resolve().parents[2]

# Per game: the training budget (seconds, or iterations; neither: the preset's iterations), the openings of the
# measuring matches (distinct for 100 pairs of games where the game has that many), the match opponents, and the
# simulations the shipped agent searches with when it plays (None: its training's; self-play's few simulations are
# for speed, not strength), and config overrides of the preset ("set", before --set's). Connect Four's: 3 x 48 for an
# hour beat the preset's 2 x 32 for an hour (0.632 [0.562, 0.698] at 64 simulations each; issue 42's curve in
# experiments/studies/budget_curve/results/connect_four-cpu-2026-11-27.md); `--seconds` alone lifts the preset's
# iterations (it trained with `--iterations 100000` too, before `azjax train` did that by itself).
# Its observation stays version 1 (the stones): version 2's threat planes trained an hour were level with it (0.502
# head to head), so the shipped agent did not move; it plays with 256 simulations, where it reached 0.958 against
# UCT-1600 (0.930 at 128).
GAMES = {
    "tic_tac_toe": dict(seconds=None, opening_moves=0, opponents=("perfect", "mcts:400", "mcts:1600"),
                        simulations=None),
    "connect_four": dict(seconds=3600, opening_moves=4, opponents=("mcts:400", "mcts:1600"),
                         simulations=256,
                         set=("network.num_blocks=3", "network.num_channels=48", "observation_version=1")),
    # Budgets in iterations (5-10 minutes each of an idle 2-core CPU), which a busy machine only slows down.
    "gomoku9": dict(iterations=60, opening_moves=2, opponents=("mcts:400", "mcts:1600"), simulations=64),
    # Othello 6x6 plays with 256 simulations: against UCT-1600 0.743 with 64, 0.833 with 256, 0.830 with 512.
    "othello6": dict(iterations=200, opening_moves=4, opponents=("mcts:400", "mcts:1600"), simulations=256),
    "brandub": dict(iterations=120, opening_moves=2, opponents=("random", "onestep", "mcts:400", "mcts:1600"),
                    simulations=64),
    # Pig: no openings (a random roll or hold would only handicap one side); judged by its exact solution.
    "pig": dict(seconds=600, opening_moves=0, opponents=("perfect", "hold:20", "random"), simulations=None,
                eval_every=50),
    # The 8-puzzle, one player: judged by its exact distances on uniformly random boards, with its search (128
    # simulations, as it plays; and self-play's 16), its network alone and the random player (the "opponents"
    # here play the same boards beside it).
    "sliding_puzzle": dict(seconds=600, opening_moves=0, opponents=("random",), simulations=128, episodes=True,
                           also_simulations=(16,)),
}
LABELLED = ("tic_tac_toe", "connect_four")  # games with solved positions (azjax.solver.positions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("game", nargs="?", choices=sorted(GAMES))
    parser.add_argument("--table", action="store_true", help="print the shipped agents' figures as the README's "
                        "markdown table, and exit")
    parser.add_argument("--seconds", type=float, help="training budget (default: the game's, see GAMES)")
    parser.add_argument("--iterations", type=int, help="training budget in iterations (default: the game's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run-dir", type=Path, help="the training run (default: runs/pretrain/GAME)")
    parser.add_argument("--out", type=Path, help="the agent's directory (default: runs/pretrain/GAME-agent; "
                        "azjax/pretrained/GAME replaces the shipped agent)")
    parser.add_argument("--skip-training", action="store_true", help="package and measure the finished run")
    parser.add_argument("--no-measure", action="store_true", help="train and package only")
    parser.add_argument("--games", type=int, default=200, help="games per measuring match (default: 200)")
    parser.add_argument("--opponents", help="comma-separated match opponents (default: the game's)")
    parser.add_argument("--reference", metavar="RUN", help="also play this agent (e.g. a 10-minute preset run)")
    parser.add_argument("--reference-name", default="the reference run", metavar="TEXT",
                        help="what the card calls --reference (its path names nothing on another machine)")
    parser.add_argument("--positions", action=argparse.BooleanOptionalAction, default=True,
                        help="judge on the labelled positions where the game has them (default: yes)")
    parser.add_argument("--play-simulations", type=int, help="the shipped agent's simulations per move in play "
                        "(default: the game's, see GAMES)")
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE",
                        help="config overrides for training after the game's own (see GAMES), e.g. "
                        "network.num_channels=64 (recorded in the card)")
    args = parser.parse_args(argv)
    if args.table:
        print(table())
        return 0
    if args.game is None:
        parser.error("give a game (or --table)")
    spec = GAMES[args.game]
    run_dir = args.run_dir or Path("runs/pretrain") / args.game
    out = args.out or default_out(args.game)
    seconds = args.seconds if args.seconds is not None else spec.get("seconds")
    iterations = args.iterations if args.iterations is not None else spec.get("iterations")
    from benchmark import note_written  # late, as jax is: --table needs neither

    if not args.skip_training:
        note_written(run_dir)
        train(args.game, run_dir, seconds, args.seed, [*spec.get("set", ()), *args.set], iterations,
              eval_every=spec.get("eval_every"))
    simulations = args.play_simulations if args.play_simulations is not None else spec["simulations"]
    package(run_dir, out, simulations)
    note_written(out)
    if args.no_measure:
        return 0
    opponents = tuple(args.opponents.split(",")) if args.opponents else spec["opponents"]
    if args.reference:
        opponents += (args.reference,)
    if spec.get("episodes"):
        measure_episodes(args.game, out, others=opponents, games=args.games,
                         simulations=spec.get("also_simulations", ()))
        return 0
    measure(args.game, out, opponents=opponents, games=args.games, opening_moves=spec["opening_moves"],
            positions=args.positions and args.game in LABELLED,
            names={args.reference: args.reference_name} if args.reference else None)
    return 0


def default_out(game: str) -> Path:
    """Where the agent goes without --out: beside its run, never over the shipped agent's committed files."""
    return Path("runs/pretrain") / f"{game}-agent"


def train(game: str, run_dir: Path, seconds: float | None, seed: int, overrides: list[str] = (),
          iterations: int | None = None, eval_every: int | None = None) -> dict:
    """Runs `azjax train` (evaluating every `eval_every` iterations where given: Pig's evaluation costs as much as
    several of its iterations) and writes RUN/pretrain.json: how it was trained."""
    if run_dir.exists():
        raise SystemExit(f"{run_dir} exists: pass --skip-training to package it, or remove it to train anew")
    command = ["azjax", "train", "--game", game, "--seed", str(seed), "--out", str(run_dir), "--no-progress"]
    if seconds is not None:
        command[4:4] = ["--seconds", f"{seconds:g}"]
    if iterations is not None:
        command[4:4] = ["--iterations", str(iterations)]
    if eval_every is not None:
        command += ["--eval-every", str(eval_every)]
    for override in overrides:
        field, _, value = override.partition("=")
        command += [f"--{field}", value]
    print("$", shlex.join(command), flush=True)
    commit = _commit()  # the code that trains: HEAD may move while it runs
    tick = time.perf_counter()
    subprocess.run([sys.executable, "-m", "azjax.cli", *command[1:]], check=True)
    record = {
        "command": shlex.join(command),
        "commit": commit,
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "wall_seconds": round(time.perf_counter() - tick, 1),
        "budget_seconds": seconds,
        "budget_iterations": iterations,
        "seed": seed,
    }
    (run_dir / "pretrain.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def package(run_dir: Path, out: Path, simulations: int | None = None) -> dict:
    """Writes the run's latest network as a shipped agent into `out`, with its card's training record (the run's
    pretrain.json, which this script's training wrote); with `simulations`, the agent plays with that many per
    move (its card's "play")."""
    record_path = run_dir / "pretrain.json"
    if not record_path.is_file():
        raise SystemExit(f"{run_dir} has no pretrain.json: train it with this script first")
    return package_run(run_dir, out, json.loads(record_path.read_text()), simulations)


def package_run(run_dir: Path, out: Path, record: dict, simulations: int | None = None) -> dict:
    """`package` for any run: `record` (how it was trained: command, machine, ...) goes into the card's training
    record with the iteration packaged, its training seconds and the jax version. experiments/tools/accelerator_call.sh
    packages a run on an accelerator with it."""
    import jax

    from azjax import checkpointing, exports, pretrained
    from azjax.rundir import read_metrics

    config, variables = exports.restore_model(run_dir)
    iteration = checkpointing.latest_iteration(run_dir)
    metrics = [m for m in read_metrics(run_dir) if m.get("iteration") == iteration]
    training = dict(record, iterations=iteration, jax=jax.__version__,
                    training_seconds=round(metrics[-1]["time"], 1) if metrics else None)
    info = {"observation_version": checkpointing.observation_version(config), "training": training,
            "play": {} if simulations is None else {"search.num_simulations": simulations}, "strength": []}
    card = pretrained.write(out, config, variables, info)
    print(f"Packaged iteration {iteration} of {run_dir} into {out} ({card['model_bytes'] / 1e6:.2f} MB)", flush=True)
    return card


def measure(game: str, out: Path, *, opponents: tuple[str, ...], games: int, opening_moves: int,
            positions: bool, names: dict[str, str] | None = None) -> None:
    """Measures the agent in `out` and adds each figure, with its command, to its card; an opponent in `names` is
    called so in the figure's summary (a run directory by what it is, not by its path)."""
    # The package's own agent by its name; one packaged elsewhere (--out) by its directory.
    agent = f"pretrained:{game}" if out.resolve() == (REPO / "azjax" / "pretrained" / game).resolve() else str(out)
    if positions:
        command = ["azjax", "eval", "--positions", f"greedy:{agent}", agent]
        result = _run_eval(command)
        for name, what in ((f"greedy:{agent}", "network"), (agent, "search")):
            figures = result["positions"][name]
            strata = ", ".join(f"{k.split('/')[1]} {v:.1%}" for k, v in figures.items()
                               if k.startswith("optimal_move_rate/"))
            _add(out, command, f"{what}: optimal top move in {figures['optimal_move_rate']:.1%} of the labelled "
                 f"positions" + (f" ({strata})" if strata else ""), {what: figures})
    if game == "connect_four":
        shipped = agent.startswith("pretrained:")
        _add(out, ["python", "experiments/tools/pretrain.py", "connect_four", "--skip-training", "--out",
                   "azjax/pretrained/connect_four" if shipped else str(out)], *_empty_board_moves(agent))
    for number, opponent in enumerate(opponents):
        command = ["azjax", "eval", agent, opponent, "--games", str(games), "--opening-moves", str(opening_moves)]
        result = _run_eval(command)
        match = result["matches"][0]
        if number == 0 and "decisions" in result:  # Pig: every decision of its games against itself, judged exactly
            judged = result["decisions"][agent]
            _add(out, command, f"its decisions in {games} games against itself: {judged['optimal_decisions']:.1%} "
                 f"optimal, {judged['win_probability_lost']:.4f} chance of winning lost a decision", judged)
        called = (names or {}).get(opponent, opponent)
        _add(out, command, f"vs {called}: score {match['score']:.3f} [{match['score_low']:.3f}, "
             f"{match['score_high']:.3f}] ({match['wins']}-{match['draws']}-{match['losses']} W-D-L over "
             f"{match['games']} games, {match['distinct_games']} distinct)", match)


def measure_episodes(game: str, out: Path, *, others: tuple[str, ...], games: int,
                     simulations: tuple[int, ...] = ()) -> None:
    """Measures the agent in `out` of a one-player game: its search (as it plays, and with each of `simulations`),
    its network alone (greedy:) and `others` play the same `games` starts of the game's yardstick, one `azjax eval`
    command, a figure per agent."""
    agent = f"pretrained:{game}" if out.resolve() == (REPO / "azjax" / "pretrained" / game).resolve() else str(out)
    searches = [f"az:{agent}:{count}" for count in simulations]
    command = ["azjax", "eval", agent, *searches, f"greedy:{agent}", *others, "--games", str(games)]
    result = _run_eval(command)
    called = {agent: "search, as it plays", f"greedy:{agent}": "network alone"}
    called.update({spec: f"search of {count} simulations" for spec, count in zip(searches, simulations, strict=True)})
    for name, judged in result["agents"].items():
        what = called.get(name, name)
        exact = (f": {judged['solved']:.1%} of {games} boards solved, {judged['solved_optimally']:.1%} in the fewest "
                 "moves" if "solved" in judged else "")
        excess = f", {judged['excess_moves']:.2f} moves beyond the fewest" if "excess_moves" in judged else ""
        _add(out, command, f"{what}{exact}{excess}; mean return {judged['return']:.2f} [{judged['return_low']:.2f}, "
             f"{judged['return_high']:.2f}]", {name: judged})


def table() -> str:
    """The shipped agents as a markdown table: game, training, and each measured figure (the README's)."""
    from azjax import pretrained

    rows = ["| agent | trained | measured (commands and machine in its card.json) |", "| --- | --- | --- |"]
    for game in pretrained.names():
        card = pretrained.card(game)
        training = card["training"]
        trained = (f"{training['wall_seconds'] / 60:.0f} min, {training['iterations']} iterations, "
                   f"{card['parameters']:,} parameters")
        figures = "; ".join(figure["summary"] for figure in card["strength"]) or "not measured yet"
        rows.append(f"| `pretrained:{game}` | {trained} | {figures} |")
    return "\n".join(rows)


def _empty_board_moves(agent_spec: str) -> tuple[str, dict]:
    import jax

    import azjax

    agent = azjax.load_agent(agent_spec)
    states = jax.vmap(agent.game.init)(jax.random.split(jax.random.key(0), 1))
    network = agent.game.action_to_string(int(agent.act(jax.random.key(0), states, search=False)[0]))
    search = agent.game.action_to_string(int(agent.act(jax.random.key(0), states)[0]))
    return (f"empty board: the network plays {network}, its search {search} (d, the centre, is the only winning "
            "move)", {"network": network, "search": search})


def _run_eval(command: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as temporary:
        path = Path(temporary) / "result.json"
        print("$", shlex.join(command), flush=True)
        subprocess.run([sys.executable, "-m", "azjax.cli", *command[1:], "--json", str(path)], check=True)
        return json.loads(path.read_text())


def _add(out: Path, command: list[str], summary: str, result: dict) -> None:
    """Adds one measured figure to the card in `out` (rewritten at once)."""
    path = out / "card.json"
    card = json.loads(path.read_text())
    card["strength"].append({"summary": summary, "command": shlex.join(command), "machine": machine(),
                             "date": datetime.date.today().isoformat(), "commit": _commit(), "result": result})
    path.write_text(json.dumps(card, indent=2) + "\n")
    print(summary, flush=True)


def machine() -> str:
    """The CPU model and core count (what the figures depend on)."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()}-core {model}"


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    from benchmark import run_main

    run_main(main)
