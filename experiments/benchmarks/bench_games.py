"""Game benchmark: batched random-play throughput of azjax's games, side by side with pgx's.

What it measures: environment steps per second (one step = one move in one game of the batch) of uniformly
random legal play, batched and compiled the way self-play runs games. For each game and batch size B, one jitted
call runs T steps of `lax.scan` over

    actions = sample_uniform(key, legal_action_mask)                 # [B], a uniformly random legal move
    states  = vmap(step)(states, actions)
    states  = where(done, vmap(init)(keys), states)                   # restart finished games in place

so the batch always stays full, as in self-play. The moves are drawn by `azjax.bots.sample_uniform` (one random
number a game; the random bot's and UCT's rollouts' sampler) or, with `--sampler categorical`, by
`jax.random.categorical` over every action (one random number an action: with Brandub's 1176 actions that draw
costs several times the step itself). pgx's implementation of the same game (if pgx is installed) runs
through exactly the same loop in the same process, and the table shows azjax steps/s, pgx steps/s and their
ratio.

Timing: every function is compiled and called once to warm up before any timing (compilation is excluded); then
`--repeats` calls of each implementation are timed with `block_until_ready`, alternating azjax and pgx so that a
noisy, shared machine disturbs both alike. The table reports the MEDIAN of the repeats; `--json` also records the
best and every single time. Each timed call continues from the states the previous call left, so the batch is a
steady-state mix of openings and late positions.

`--baseline REV` also times each game as commit REV had it (its module's source at REV, imported beside
today's; a game whose module is unchanged gets none), in the same loop and process: the reference of a speed-up.

Both implementations get the same random keys, so where their rules agree they play the very same games; the
number of games each finished is printed after the table as a check (equal counts expected).

Note that pgx's `step` also computes the observation of the new state (its API stores it in the state), while
azjax's `step` does not (callers call `observe` when they need one); the ratio includes that difference.

Run it:

    python experiments/benchmarks/bench_games.py                          # all games, B = 1, 64, 1024, 8192
    python experiments/benchmarks/bench_games.py --quick                  # B = 1, 64 and few steps: well under a minute
    python experiments/benchmarks/bench_games.py --games tic_tac_toe --batch-sizes 1024 --steps 128 --repeats 7
    python experiments/benchmarks/bench_games.py --json runs/bench_games.json
    python experiments/benchmarks/bench_games.py --games brandub othello --batch-sizes 1024 --baseline HEAD~1
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import pathlib
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from azjax import bots, games
from azjax.games import registry

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # experiments/, for the shared benchmark module
from benchmark import Measurement, format_rate, import_pgx, machine_info, module_at_revision, run_main

# The pgx environment id of each azjax game that pgx also implements (pgx has no Gomoku, and Othello only 8 x 8).
PGX_IDS = {"tic_tac_toe": "tic_tac_toe", "connect_four": "connect_four", "othello": "othello"}
# Where the two play the same moves but end some games at different times, so that their game counts differ.
def categorical_sample(key: jax.Array, mask: jax.Array) -> jax.Array:
    """`bots.sample_uniform`'s distribution drawn by `jax.random.categorical` over every entry of mask [B, A]."""
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)


SAMPLERS = {"uniform": bots.sample_uniform, "categorical": categorical_sample}
PGX_ENDINGS_DIFFER = {
    "othello": "pgx ends a game that neither side can continue two passes later than azjax, which ends it at once",
}

DEFAULT_BATCH_SIZES = (1, 64, 1024, 8192)
DEFAULT_STEPS = 256
DEFAULT_REPEATS = 5
QUICK_BATCH_SIZES = (1, 64)
QUICK_STEPS = 32
QUICK_REPEATS = 3


@dataclasses.dataclass(frozen=True)
class Implementation:
    """One implementation of a game, as the benchmark loop sees it.

    Attributes:
      label: "azjax", "pgx", or "azjax@REV" for a baseline.
      init: key -> state, unbatched.
      step: (state, int32 action) -> state, unbatched.
      done: state -> bool [], True when the game must be restarted.
    """

    label: str
    init: Callable[[jax.Array], Any]
    step: Callable[[Any, jax.Array], Any]
    done: Callable[[Any], jax.Array]


def azjax_implementation(game: games.Game, label: str = "azjax") -> Implementation:
    return Implementation(label=label, init=game.init, step=game.step, done=lambda s: s.terminated)


def baseline_implementation(name: str, revision: str) -> Implementation | None:
    """The registered game `name` as commit `revision` had it (the factory of today's registration, taken from
    its module's source at `revision`); None when that module is unchanged since."""
    factory = registry.definition(name)
    assert factory is not None, name  # registered games only
    module = module_at_revision(factory.__module__, revision)
    if module is None:
        return None
    return azjax_implementation(getattr(module, factory.__name__)(), f"azjax@{revision}")


def pgx_implementation(env: Any) -> Implementation:
    # The games here are deterministic, so pgx's optional step key is left out (as azjax's step has none).
    # pgx never truncates these games by default; restarting on truncation too keeps the loop correct anyway.
    return Implementation(label="pgx", init=env.init, step=env.step, done=lambda s: s.terminated | s.truncated)


# --------------------------------------------------------------------------------------------------------------
# The benchmark loop (the same for both implementations).


def _select(done: jax.Array, fresh: jax.Array, old: jax.Array) -> jax.Array:
    """where(done, fresh, old) with done [B] broadcast over the trailing axes of fresh/old [B, ...]."""
    return jnp.where(done.reshape(done.shape + (1,) * (old.ndim - 1)), fresh, old)


def _play_step(states: Any, key: jax.Array, *, impl: Implementation, sample: Callable) -> tuple[Any, jax.Array]:
    """One random legal move in every game of the batch [B]; finished games restart. Returns (states, #done)."""
    action_key, init_key = jax.random.split(key)
    actions = sample(action_key, states.legal_action_mask)  # [B]
    states = jax.vmap(impl.step)(states, actions)
    done = jax.vmap(impl.done)(states)  # [B]
    fresh = jax.vmap(impl.init)(jax.random.split(init_key, done.shape[0]))
    states = jax.tree.map(functools.partial(_select, done), fresh, states)
    return states, jnp.sum(done, dtype=jnp.int32)


def random_play(key: jax.Array, states: Any, *, impl: Implementation, num_steps: int,
                sample: Callable = bots.sample_uniform) -> tuple[Any, jax.Array]:
    """Runs `num_steps` steps of random legal play on a batch of states [B, ...], the moves drawn by
    `sample(key, legal_action_mask [B, A]) -> actions [B]`.

    Returns the states after the last step and the number of games that finished on the way (int32 []).
    """
    step_keys = jax.random.split(key, num_steps)
    states, num_done = jax.lax.scan(functools.partial(_play_step, impl=impl, sample=sample), states, step_keys)
    return states, jnp.sum(num_done)


# --------------------------------------------------------------------------------------------------------------
# Timing.


def _prepare(impl: Implementation, batch_size: int, num_steps: int, key: jax.Array, sample: Callable):
    """Compiles the loop for `impl`, runs the warm-up call; returns (compiled fn, states, compile seconds)."""
    states = jax.jit(jax.vmap(impl.init))(jax.random.split(key, batch_size))
    fn = jax.jit(functools.partial(random_play, impl=impl, num_steps=num_steps, sample=sample))
    start = time.perf_counter()
    compiled = fn.lower(key, states).compile()
    compile_s = time.perf_counter() - start
    states, _ = jax.block_until_ready(compiled(key, states))  # warm-up call, not timed
    return compiled, states, compile_s


def measure(
    impls: Sequence[Implementation], *, batch_size: int, num_steps: int, num_repeats: int, key: jax.Array,
    sample: Callable = bots.sample_uniform,
) -> dict[str, Measurement]:
    """Times each implementation's jitted loop; repeats alternate between implementations."""
    # Every implementation gets the same keys: where the rules agree, they then play the very same games.
    prepare_key, key = jax.random.split(key)
    prepared = {impl.label: _prepare(impl, batch_size, num_steps, prepare_key, sample) for impl in impls}
    compiled = {label: p[0] for label, p in prepared.items()}
    states = {label: p[1] for label, p in prepared.items()}
    times: dict[str, list[float]] = {label: [] for label in prepared}
    num_games = {label: 0 for label in prepared}
    for call_key in jax.random.split(key, num_repeats):
        for label in prepared:
            start = time.perf_counter()
            states[label], num_done = jax.block_until_ready(compiled[label](call_key, states[label]))
            times[label].append(time.perf_counter() - start)
            num_games[label] += int(num_done)
    return {
        label: Measurement(compile_s=prepared[label][2], times_s=times[label], num_games=num_games[label])
        for label in prepared
    }


# --------------------------------------------------------------------------------------------------------------
# Reporting.


def table_header(baseline: str | None = None) -> str:
    header = f"{'game':<14} {'batch':>6} {'azjax steps/s':>15} {'pgx steps/s':>15} {'azjax/pgx':>10}"
    if baseline is not None:
        header += f" {baseline + ' steps/s':>15} {'x ' + baseline:>10}"
    return header


def format_row(row: dict[str, Any], baseline: str | None = None) -> str:
    def ratio(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    line = (
        f"{row['game']:<14} {row['batch_size']:>6} {format_rate(row['azjax_steps_per_s']):>15} "
        f"{format_rate(row['pgx_steps_per_s']):>15} {ratio(row['ratio']):>10}"
    )
    if baseline is not None:
        line += f" {format_rate(row['baseline_steps_per_s']):>15} {ratio(row['speedup']):>10}"
    return line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Batched random-play throughput (environment steps/s) of azjax games vs pgx, "
        "under jit + vmap + lax.scan. The table reports the median of --repeats timed calls; "
        "compilation and one warm-up call are excluded.",
    )
    parser.add_argument(
        "--games", nargs="+", default=None, metavar="NAME",
        help=f"azjax games to benchmark (default: all registered: {' '.join(games.names())})",
    )
    parser.add_argument(
        "--batch-sizes", nargs="+", type=int, default=None, metavar="B",
        help=f"batch sizes (default: {' '.join(map(str, DEFAULT_BATCH_SIZES))}; "
        f"with --quick: {' '.join(map(str, QUICK_BATCH_SIZES))})",
    )
    parser.add_argument(
        "--steps", type=int, default=None, metavar="T",
        help=f"steps of the batch per jitted call (default: {DEFAULT_STEPS}; with --quick: {QUICK_STEPS})",
    )
    parser.add_argument(
        "--repeats", type=int, default=None, metavar="N",
        help=f"timed calls per implementation; the table shows their median "
        f"(default: {DEFAULT_REPEATS}; with --quick: {QUICK_REPEATS})",
    )
    parser.add_argument(
        "--quick", action="store_true",
        help="a fast smoke run: small batch sizes, few steps and repeats (explicit options still win)",
    )
    parser.add_argument("--no-pgx", action="store_true", help="skip pgx even if it is installed")
    parser.add_argument(
        "--sampler", choices=sorted(SAMPLERS), default="uniform",
        help="how the random moves are drawn: 'uniform' (default), azjax.bots.sample_uniform, one random number a "
        "game; 'categorical', jax.random.categorical over every action, one random number an action",
    )
    parser.add_argument(
        "--baseline", metavar="REV", default=None,
        help="also time each game as git commit REV had it (e.g. HEAD or a commit hash), side by side",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed of the played moves (default: 0)")
    parser.add_argument(
        "--json", metavar="OUT", default=None, help="also write the results (with every timing) as JSON to OUT"
    )
    args = parser.parse_args(argv)
    if args.batch_sizes is None:
        args.batch_sizes = list(QUICK_BATCH_SIZES if args.quick else DEFAULT_BATCH_SIZES)
    if args.steps is None:
        args.steps = QUICK_STEPS if args.quick else DEFAULT_STEPS
    if args.repeats is None:
        args.repeats = QUICK_REPEATS if args.quick else DEFAULT_REPEATS
    if args.games is None:
        args.games = games.names()
    for name in args.games:
        if name not in games.names():
            parser.error(f"unknown game {name!r}; registered games: {', '.join(games.names())}")
    if min(args.batch_sizes) < 1 or args.steps < 1 or args.repeats < 1:
        parser.error("--batch-sizes, --steps and --repeats must be positive")
    return args


def print_header(info: dict[str, Any], args: argparse.Namespace, pgx_skip_reason: str | None) -> None:
    print(f"# azjax game benchmark, {info['date']}")
    print(f"# machine: {info['cpu']}, {info['cpu_cores']} cores ({info['usable_cores']} usable), {info['platform']}")
    print(f"# python {info['python']}, jax {info['jax']}, backend {info['backend']}, devices {info['devices']}")
    print(f"# azjax {info['azjax']} (commit {info['azjax_commit']})")
    if pgx_skip_reason is None:
        print(f"# pgx {info['pgx']}")
    else:
        print(f"# pgx: skipped ({pgx_skip_reason}); azjax figures only")
    print(
        f"# random legal play, jit(lax.scan over T={args.steps} steps of vmap(step)), finished games restarted; "
        f"steps/s = MEDIAN of {args.repeats} timed calls (compile + 1 warm-up call excluded); moves drawn by the "
        f"{args.sampler!r} sampler"
    )
    if args.baseline is not None:
        print(f"# baseline: each game as commit {args.baseline} had it, in the same loop ('-': its module unchanged)")
    print()
    header = table_header(args.baseline)
    print(header)
    print("-" * len(header), flush=True)


def benchmark_row(
    name: str, impls: Sequence[Implementation], batch_size: int, args: argparse.Namespace, key: jax.Array
) -> dict[str, Any]:
    """Measures one (game, batch size) and returns its table row, with every timing under "details"."""
    results = measure(impls, batch_size=batch_size, num_steps=args.steps, num_repeats=args.repeats, key=key,
                      sample=SAMPLERS[args.sampler])
    call_steps = batch_size * args.steps
    rates = {label: m.rate(call_steps) for label, m in results.items()}
    baseline = rates.get(f"azjax@{args.baseline}")
    return {
        "game": name,
        "batch_size": batch_size,
        "azjax_steps_per_s": rates["azjax"],
        "pgx_steps_per_s": rates.get("pgx"),
        "ratio": rates["azjax"] / rates["pgx"] if "pgx" in rates else None,
        "baseline_steps_per_s": baseline,
        "speedup": rates["azjax"] / baseline if baseline else None,
        "timed_env_steps": call_steps * args.repeats,  # per implementation
        "details": {
            label: {
                "compile_s": m.compile_s,
                "times_s": m.times_s,
                "median_steps_per_s": rates[label],
                "best_steps_per_s": m.best_rate(call_steps),
                "games_finished": m.num_games,
                "mean_game_length": call_steps * args.repeats / m.num_games if m.num_games else None,
            }
            for label, m in results.items()
        },
    }


def summarize_games(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per game: games finished in the timed calls by each implementation, and their mean length."""
    lines = []
    for name in dict.fromkeys(row["game"] for row in rows):
        counts: dict[str, int] = {}
        for row in rows:
            if row["game"] == name:
                for label, details in row["details"].items():
                    counts[label] = counts.get(label, 0) + details["games_finished"]
        num_steps = sum(row["timed_env_steps"] for row in rows if row["game"] == name)
        described = ", ".join(
            f"{label} {n} (mean length {num_steps / n:.2f} moves)" if n else f"{label} 0" for label, n in counts.items()
        )
        if len(counts) == 1:
            verdict = "azjax only"
        elif len(set(counts.values())) == 1:
            verdict = "equal, as expected when all play the same games from the same keys"
        elif len({n for label, n in counts.items() if label != "pgx"}) > 1:
            verdict = "DIFFERENT: azjax and its baseline do not play the same games"
        else:
            verdict = PGX_ENDINGS_DIFFER.get(name, "DIFFERENT: the implementations do not play the same games")
        lines.append(f"# {name}: games finished in the timed calls: {described}; {verdict}")
    return lines


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Runs the benchmark, prints the table and returns the results (as also written by --json)."""
    args = parse_args(argv)
    pgx = None if args.no_pgx else import_pgx()
    pgx_skip_reason = None if pgx is not None else ("--no-pgx" if args.no_pgx else "pgx is not installed")
    info = machine_info()
    info["pgx"] = pgx.__version__ if pgx is not None else None
    print_header(info, args, pgx_skip_reason)

    key = jax.random.key(args.seed)
    rows = []
    for name in args.games:
        impls = [azjax_implementation(games.make(name))]
        if pgx is not None and name in PGX_IDS:
            impls.append(pgx_implementation(pgx.make(PGX_IDS[name])))
        if args.baseline is not None:
            baseline = baseline_implementation(name, args.baseline)
            impls += [baseline] if baseline is not None else []
        for batch_size in args.batch_sizes:
            key, row_key = jax.random.split(key)
            rows.append(benchmark_row(name, impls, batch_size, args, row_key))
            print(format_row(rows[-1], args.baseline), flush=True)
    print()
    for line in summarize_games(rows):
        print(line)

    results = {
        "machine": info,
        "config": {
            "games": args.games,
            "batch_sizes": args.batch_sizes,
            "steps": args.steps,
            "repeats": args.repeats,
            "seed": args.seed,
            "sampler": args.sampler,
            "baseline": args.baseline,
            "statistic": "median",
            "pgx_skipped": pgx_skip_reason,
        },
        "rows": rows,
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
        print(f"# results written to {args.json}")
    return results


if __name__ == "__main__":
    run_main(main)
