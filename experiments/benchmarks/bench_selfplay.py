"""Self-play benchmark: azjax's batched self-play with search, side by side with a plain pgx + mctx reference.

What it measures: self-play throughput on Connect Four, in positions/s (moves played per second, summed over the
B games of the batch) and simulations/s (positions/s x simulations per move), for each batch size B and number
of simulations S. One jitted call plays T moves in each of the B games; a game that ends restarts at once in its
slot, so the batch stays full.

* azjax: `azjax.selfplay.run_selfplay` with the search of `azjax.search.make_search_fn`, both built as
  `azjax.training.make_components` builds them (Gumbel MuZero, `SearchConfig` defaults but for S), jitted once.
  Its output, the [T, B] `Trajectory` with observations and policy targets, is computed as in training.
* reference: the straightforward way to write the same thing with pgx and mctx, as pgx's AlphaZero example does
  it, written out in this script: `pgx.make("connect_four")`, the root from the pgx state's `observation`, a
  `recurrent_fn` that calls `env.step` and reads `observation`, `rewards` and `terminated`, discount -1 (0 at a
  terminal state), illegal actions masked with `legal_action_mask` (`invalid_actions` at the root, lowest logit
  inside the tree), `mctx.gumbel_muzero_policy`, and a `lax.scan` over the T moves that restarts finished games
  and records observation, policy, reward, termination and discount per move.

Both use the same network (azjax's `AlphaZeroNetwork`, by default 2 residual blocks x 32 channels, randomly
initialised; `--blocks`, `--channels`, `--compute-dtype` change it): the same Flax module, applied with the same
variables. Both run Gumbel MuZero with the same S, the same `max_num_considered_actions` (16) and Gumbel scale
(1), and both split their random keys the way `run_selfplay` does, so they search with the same Gumbel noise and,
where nothing differs, play the very same games: the games each finished are printed after the table as a check.
Differences that remain: pgx's `step` also computes the next observation (in the tree too); azjax's search passes
`max_depth=game.max_length` (42) where the reference keeps mctx's default (S), which a tree of S nodes cannot
tell apart; azjax also records the root value and resignation bookkeeping (resignation is off here).

Timing: every (B, S) is compiled and called once to warm up before any timing; compilation is reported
separately (the `compile s` columns) and never included in the rates. Then `--repeats` calls of each
implementation are timed with `block_until_ready`, alternating azjax and the reference so that a noisy, shared
machine disturbs both alike, each call continuing the games the previous one left. The table reports the MEDIAN
of the repeats; `--json` also records the best and every single time.

Run it (from the repository root, with azjax and pgx installed, e.g. `pip install -e ".[dev]"`):

    python experiments/benchmarks/bench_selfplay.py          # B = 32 256, S = 16 64, T = 4 (sized for a 2-core CPU)
    python experiments/benchmarks/bench_selfplay.py --quick  # one small (B, S), few moves: about 20 s on a CPU
    python experiments/benchmarks/bench_selfplay.py --batch-sizes 256 --simulations 32 --steps 16 --repeats 7
    python experiments/benchmarks/bench_selfplay.py --blocks 6 --channels 128 --json runs/bench_selfplay.json

On a GPU, install jax with CUDA (`pip install -U "jax[cuda12]"`); jax then runs everything on the first GPU (the
header's `backend` and `devices` show it). Batches of thousands are what a GPU needs, and bf16 is its usual
precision:

    python experiments/benchmarks/bench_selfplay.py --batch-sizes 256 1024 4096 16384 --simulations 32 128 --steps 32 \\
        --blocks 6 --channels 128 --compute-dtype bfloat16
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
import mctx
from flax import struct

from azjax import selfplay
from azjax.config import Config, NetworkConfig, SearchConfig, SelfPlayConfig
from azjax.networks import AlphaZeroNetwork, init_variables
from azjax.training import make_components

# The machine header is bench_games.py's, so that the two benchmarks describe a machine alike.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # experiments/, for the shared benchmark module
from benchmark import Measurement, format_rate, import_pgx, machine_info, run_main

GAME = "connect_four"  # the azjax game; the reference plays pgx's game of the same id
OBSERVATION_VERSION = 1  # the stones only, as pgx observes them: one network serves both

# Sized for a 2-core CPU, where compiling each (B, S) twice takes much of the run: 6 min 41 s there under heavy
# sharing (experiments/benchmarks/results/bench_selfplay-cpu-2026-11-22.txt). A GPU wants far larger B (see the module
# docstring).
DEFAULT_BATCH_SIZES = (32, 256)
DEFAULT_SIMULATIONS = (16, 64)
DEFAULT_STEPS = 4
DEFAULT_REPEATS = 5
QUICK_BATCH_SIZES = (16,)
QUICK_SIMULATIONS = (4,)
QUICK_STEPS = 2
QUICK_REPEATS = 2

# A compiled self-play call: (key, variables, games) -> (games, record with a `terminated` [T, B] field).
PlayFn = Callable[[jax.Array, dict, Any], tuple[Any, Any]]


@dataclasses.dataclass(frozen=True)
class Implementation:
    """One self-play implementation, as the benchmark loop sees it.

    Attributes:
      label: "azjax" or "reference".
      init: (key, B) -> the B games in progress, the carry of `play`.
      play: (key, variables, games) -> (games, record), T moves of search + step; un-jitted.
    """

    label: str
    init: Callable[[jax.Array, int], Any]
    play: PlayFn


# --------------------------------------------------------------------------------------------------------------
# azjax: run_selfplay with the search make_components builds.


def azjax_implementation(config: Config) -> Implementation:
    """azjax self-play as a training iteration runs it, for `config`'s game, network, search and self-play."""
    parts = make_components(config)
    play = functools.partial(selfplay.run_selfplay, game=parts.game, search_fn=parts.search_fn,
                             **selfplay.selfplay_options(config.selfplay))

    def init(key: jax.Array, batch_size: int) -> selfplay.SelfPlayState:
        assert batch_size == config.selfplay.num_games
        return selfplay.init_selfplay(key, parts.game, **selfplay.init_options(config.selfplay, config.search))

    return Implementation(label="azjax", init=init, play=play)


# --------------------------------------------------------------------------------------------------------------
# The reference: pgx + mctx written the straightforward way (after pgx's AlphaZero example).

ApplyFn = Callable[[dict, jax.Array], tuple[jax.Array, jax.Array]]


class ReferenceRecord(struct.PyTreeNode):
    """What the reference records per move, [T, B, ...], as pgx's example does."""

    observation: jax.Array  # [T, B, 6, 7, 2] bool, pgx's observation of the searched state
    action_weights: jax.Array  # [T, B, A] float32, the search's policy
    reward: jax.Array  # [T, B] float32, what the mover received for the move played
    terminated: jax.Array  # [T, B] bool, the move ended the game
    discount: jax.Array  # [T, B] float32, 0 where the game ended, else -1


def _reference_recurrent_fn(
    variables: dict, key: jax.Array, action: jax.Array, state: Any, *, env: Any, apply_fn: ApplyFn
) -> tuple[mctx.RecurrentFnOutput, Any]:
    del key  # Connect Four is deterministic
    mover = state.current_player  # [B]
    state = jax.vmap(env.step)(state, action)
    logits, value = apply_fn(variables, state.observation)
    logits = jnp.where(state.legal_action_mask, logits, jnp.finfo(logits.dtype).min)
    reward = state.rewards[jnp.arange(action.shape[0]), mover]  # the mover's reward
    output = mctx.RecurrentFnOutput(
        reward=reward,
        discount=jnp.where(state.terminated, 0.0, -1.0),  # values alternate sides; nothing follows a terminal
        prior_logits=logits,
        value=jnp.where(state.terminated, 0.0, value),
    )
    return output, state


def _reference_move(
    variables: dict, state: Any, key: jax.Array, *, env: Any, apply_fn: ApplyFn, config: SearchConfig
) -> tuple[Any, ReferenceRecord]:
    # The same key schedule as azjax's self-play step, so both search with the same Gumbel noise.
    search_key, reset_key, _ = jax.random.split(key, 3)
    logits, value = apply_fn(variables, state.observation)
    root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=state)
    recurrent_fn = functools.partial(_reference_recurrent_fn, env=env, apply_fn=apply_fn)
    policy_output = mctx.gumbel_muzero_policy(
        params=variables,
        rng_key=search_key,
        root=root,
        recurrent_fn=recurrent_fn,
        num_simulations=config.num_simulations,
        invalid_actions=~state.legal_action_mask,
        max_num_considered_actions=config.max_num_considered_actions,
        gumbel_scale=config.gumbel_scale,
        qtransform=functools.partial(mctx.qtransform_completed_by_mix_value, value_scale=config.value_scale),
    )
    batch_size = policy_output.action.shape[0]
    mover = state.current_player
    next_state = jax.vmap(env.step)(state, policy_output.action)
    record = ReferenceRecord(
        observation=state.observation,
        action_weights=policy_output.action_weights,
        reward=next_state.rewards[jnp.arange(batch_size), mover],
        terminated=next_state.terminated,
        discount=jnp.where(next_state.terminated, 0.0, -1.0),
    )
    # Auto-reset: a finished game restarts in its slot.
    fresh = jax.vmap(env.init)(jax.random.split(reset_key, batch_size))
    done = next_state.terminated | next_state.truncated

    def select(new: jax.Array, old: jax.Array) -> jax.Array:
        return jnp.where(done.reshape(done.shape + (1,) * (old.ndim - 1)), new, old)

    return jax.tree.map(select, fresh, next_state), record


def reference_play(
    key: jax.Array, variables: dict, state: Any, *, env: Any, apply_fn: ApplyFn, config: SearchConfig, num_steps: int
) -> tuple[Any, ReferenceRecord]:
    """T = `num_steps` moves of Gumbel MuZero self-play in each of the B pgx games `state`; returns (state, record)."""
    move = functools.partial(_reference_move, variables, env=env, apply_fn=apply_fn, config=config)
    return jax.lax.scan(move, state, jax.random.split(key, num_steps))


def reference_implementation(
    pgx: Any, network: AlphaZeroNetwork, config: SearchConfig, num_steps: int
) -> Implementation:
    """The pgx + mctx reference, with azjax's network module (applied in inference mode, as azjax does)."""
    env = pgx.make(GAME)
    apply_fn = functools.partial(network.apply, train=False)
    play = functools.partial(reference_play, env=env, apply_fn=apply_fn, config=config, num_steps=num_steps)

    def init(key: jax.Array, batch_size: int) -> Any:
        return jax.vmap(env.init)(jax.random.split(key, batch_size))

    return Implementation(label="reference", init=init, play=play)


# --------------------------------------------------------------------------------------------------------------
# Timing.


def _prepare(impl: Implementation, variables: dict, batch_size: int, key: jax.Array) -> tuple[Any, Any, float]:
    """Compiles `impl.play`, runs the warm-up call; returns (compiled fn, games in progress, compile seconds)."""
    games_state = jax.block_until_ready(jax.jit(impl.init, static_argnums=1)(key, batch_size))
    fn = jax.jit(impl.play)
    start = time.perf_counter()
    compiled = fn.lower(key, variables, games_state).compile()
    compile_s = time.perf_counter() - start
    games_state, _ = jax.block_until_ready(compiled(key, variables, games_state))  # warm-up call, not timed
    return compiled, games_state, compile_s


def measure(
    impls: Sequence[Implementation], variables: dict, *, batch_size: int, num_repeats: int, key: jax.Array
) -> dict[str, Measurement]:
    """Times each implementation's jitted self-play call; repeats alternate between implementations."""
    prepare_key, key = jax.random.split(key)  # the same keys for every implementation
    prepared = {impl.label: _prepare(impl, variables, batch_size, prepare_key) for impl in impls}
    states = {label: p[1] for label, p in prepared.items()}
    times: dict[str, list[float]] = {label: [] for label in prepared}
    num_games = {label: 0 for label in prepared}
    for call_key in jax.random.split(key, num_repeats):
        for label, (compiled, _, _) in prepared.items():
            start = time.perf_counter()
            states[label], record = jax.block_until_ready(compiled(call_key, variables, states[label]))
            times[label].append(time.perf_counter() - start)
            num_games[label] += int(jnp.sum(record.terminated))  # after the clock stopped
    return {
        label: Measurement(compile_s=prepared[label][2], times_s=times[label], num_games=num_games[label])
        for label in prepared
    }


# --------------------------------------------------------------------------------------------------------------
# Reporting.


def _format_seconds(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.1f}"


_TABLE_HEADER = (
    f"{'batch':>5} {'sims':>4} {'azjax pos/s':>12} {'ref pos/s':>12} {'azjax/ref':>9} "
    f"{'azjax sims/s':>13} {'ref sims/s':>13} {'compile s azjax/ref':>20}"
)


def format_row(row: dict[str, Any]) -> str:
    ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}"
    compile_s = {label: details["compile_s"] for label, details in row["details"].items()}
    compiles = f"{_format_seconds(compile_s['azjax'])} / {_format_seconds(compile_s.get('reference'))}"
    return (
        f"{row['batch_size']:>5} {row['num_simulations']:>4} {format_rate(row['azjax_positions_per_s']):>12} "
        f"{format_rate(row['reference_positions_per_s']):>12} {ratio:>9} "
        f"{format_rate(row['azjax_simulations_per_s']):>13} {format_rate(row['reference_simulations_per_s']):>13} "
        f"{compiles:>20}"
    )


def _positive_ints(parser: argparse.ArgumentParser, values: Sequence[int], name: str) -> None:
    if min(values) < 1:
        parser.error(f"{name} must be positive, got {' '.join(map(str, values))}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Connect Four self-play throughput (positions/s and simulations/s) of azjax "
        "(run_selfplay + make_search_fn) against a plain pgx + mctx reference with the same network, "
        "Gumbel MuZero search, simulations and batch. Rates are the median of --repeats timed calls of "
        "T moves; compilation (reported separately) and one warm-up call are excluded.",
    )
    parser.add_argument(
        "--batch-sizes", nargs="+", type=int, default=None, metavar="B",
        help=f"games played in parallel (default: {' '.join(map(str, DEFAULT_BATCH_SIZES))}; "
        f"with --quick: {' '.join(map(str, QUICK_BATCH_SIZES))})",
    )
    parser.add_argument(
        "--simulations", nargs="+", type=int, default=None, metavar="S",
        help=f"search simulations per move (default: {' '.join(map(str, DEFAULT_SIMULATIONS))}; "
        f"with --quick: {' '.join(map(str, QUICK_SIMULATIONS))})",
    )
    parser.add_argument(
        "--steps", type=int, default=None, metavar="T",
        help=f"moves per game per jitted call (default: {DEFAULT_STEPS}; with --quick: {QUICK_STEPS})",
    )
    parser.add_argument(
        "--repeats", type=int, default=None, metavar="N",
        help=f"timed calls per implementation; the table shows their median "
        f"(default: {DEFAULT_REPEATS}; with --quick: {QUICK_REPEATS})",
    )
    defaults = NetworkConfig()
    parser.add_argument(
        "--blocks", type=int, default=defaults.num_blocks,
        help=f"residual blocks of the network (default: {defaults.num_blocks})",
    )
    parser.add_argument(
        "--channels", type=int, default=defaults.num_channels,
        help=f"channels of the network's stem and blocks (default: {defaults.num_channels})",
    )
    parser.add_argument(
        "--compute-dtype", choices=("float32", "bfloat16"), default=defaults.compute_dtype,
        help=f"the network's computation dtype; bfloat16 is for GPUs/TPUs and CPUs with AMX "
             f"(default: {defaults.compute_dtype})",
    )
    parser.add_argument(
        "--quick", action="store_true",
        help="a fast smoke run: one small batch, few simulations, moves and repeats (explicit options still win)",
    )
    parser.add_argument(
        "--no-reference", action="store_true", help="measure azjax only (the reference needs pgx installed)"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed of the network and the games (default: 0)")
    parser.add_argument(
        "--json", metavar="OUT", default=None, help="also write the results (with every timing) as JSON to OUT"
    )
    args = parser.parse_args(argv)
    if args.batch_sizes is None:
        args.batch_sizes = list(QUICK_BATCH_SIZES if args.quick else DEFAULT_BATCH_SIZES)
    if args.simulations is None:
        args.simulations = list(QUICK_SIMULATIONS if args.quick else DEFAULT_SIMULATIONS)
    if args.steps is None:
        args.steps = QUICK_STEPS if args.quick else DEFAULT_STEPS
    if args.repeats is None:
        args.repeats = QUICK_REPEATS if args.quick else DEFAULT_REPEATS
    _positive_ints(parser, args.batch_sizes, "--batch-sizes")
    _positive_ints(parser, args.simulations, "--simulations")
    for name in ("steps", "repeats", "blocks", "channels"):
        _positive_ints(parser, [getattr(args, name)], f"--{name}")
    return args


def make_config(args: argparse.Namespace, batch_size: int, num_simulations: int) -> Config:
    """The azjax config of one (B, S): Connect Four, the stated network, Gumbel MuZero, no openings, no resigning."""
    return Config(
        game=GAME,
        seed=args.seed,
        observation_version=OBSERVATION_VERSION,
        network=NetworkConfig(
            num_blocks=args.blocks, num_channels=args.channels, compute_dtype=args.compute_dtype
        ),
        search=SearchConfig(policy="gumbel", num_simulations=num_simulations),
        selfplay=SelfPlayConfig(num_games=batch_size, num_steps=args.steps),
    ).validate()


def print_header(
    info: dict[str, Any], args: argparse.Namespace, network: dict[str, Any], reference_skip_reason: str | None
) -> None:
    print(f"# azjax self-play benchmark, {info['date']}")
    print(f"# machine: {info['cpu']}, {info['cpu_cores']} cores ({info['usable_cores']} usable), {info['platform']}")
    print(f"# python {info['python']}, jax {info['jax']}, backend {info['backend']}, devices {info['devices']}")
    print(f"# azjax {info['azjax']} (commit {info['azjax_commit']}), mctx {info['mctx']}")
    if reference_skip_reason is None:
        print(f"# reference: pgx {info['pgx']} + mctx, written in this script after pgx's AlphaZero example")
    else:
        print(f"# reference: skipped ({reference_skip_reason}); azjax figures only")
    print(
        f"# {GAME}; network {network['name']} {network['num_blocks']} blocks x {network['num_channels']} channels, "
        f"{network['compute_dtype']}, {network['num_parameters']:,} parameters (random init), same variables for both"
    )
    print(
        f"# search: mctx.gumbel_muzero_policy, max_num_considered_actions={network['max_num_considered_actions']}, "
        f"gumbel_scale={network['gumbel_scale']}, value_scale={network['value_scale']}; finished games restarted"
    )
    print(
        f"# jit(lax.scan over T={args.steps} moves of B games); positions/s = B*T / MEDIAN of {args.repeats} timed "
        f"calls (compile + 1 warm-up call excluded; compile shown apart); sims/s = positions/s x sims"
    )
    print()
    print(_TABLE_HEADER)
    print("-" * len(_TABLE_HEADER), flush=True)


def benchmark_row(
    impls: Sequence[Implementation],
    variables: dict,
    batch_size: int,
    num_simulations: int,
    args: argparse.Namespace,
    key: jax.Array,
) -> dict[str, Any]:
    """Measures one (B, S) and returns its table row, with every timing under "details"."""
    results = measure(impls, variables, batch_size=batch_size, num_repeats=args.repeats, key=key)
    call_positions = batch_size * args.steps
    rates = {label: m.rate(call_positions) for label, m in results.items()}
    reference = rates.get("reference")
    return {
        "batch_size": batch_size,
        "num_simulations": num_simulations,
        "azjax_positions_per_s": rates["azjax"],
        "reference_positions_per_s": reference,
        "ratio": rates["azjax"] / reference if reference else None,
        "azjax_simulations_per_s": rates["azjax"] * num_simulations,
        "reference_simulations_per_s": reference * num_simulations if reference else None,
        "timed_positions": call_positions * args.repeats,  # per implementation
        "details": {
            label: {
                "compile_s": m.compile_s,
                "times_s": m.times_s,
                "median_positions_per_s": rates[label],
                "best_positions_per_s": m.best_rate(call_positions),
                "games_finished": m.num_games,
            }
            for label, m in results.items()
        },
    }


def summarize_games(rows: Sequence[dict[str, Any]]) -> str:
    """Games finished in the timed calls by each implementation, and whether they agree."""
    counts: dict[str, int] = {}
    for row in rows:
        for label, details in row["details"].items():
            counts[label] = counts.get(label, 0) + details["games_finished"]
    num_positions = sum(row["timed_positions"] for row in rows)
    described = ", ".join(
        f"{label} {n} (mean length {num_positions / n:.2f} moves)" if n else f"{label} 0" for label, n in counts.items()
    )
    if len(counts) == 1:
        verdict = "azjax only"
    elif len(set(counts.values())) == 1:
        verdict = "equal, as expected when both search with the same network and noise"
    else:
        verdict = "different: the two searches did not always pick the same moves"
    return f"# games finished in the timed calls: {described}; {verdict}"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Runs the benchmark, prints the table and returns the results (as also written by --json)."""
    args = parse_args(argv)
    pgx = None if args.no_reference else import_pgx()
    skip_reason = None if pgx is not None else ("--no-reference" if args.no_reference else "pgx is not installed")

    key = jax.random.key(args.seed)
    network_key, key = jax.random.split(key)
    base = make_config(args, args.batch_sizes[0], args.simulations[0])
    network = make_components(base).network
    variables = init_variables(network, network_key, base.make_game().observation_shape)
    network_info = {
        "name": type(network).__name__,
        "num_blocks": network.num_blocks,
        "num_channels": network.num_channels,
        "value_hidden": network.value_hidden,
        "compute_dtype": args.compute_dtype,
        "num_parameters": sum(x.size for x in jax.tree.leaves(variables["params"])),
        "max_num_considered_actions": base.search.max_num_considered_actions,
        "gumbel_scale": base.search.gumbel_scale,
        "value_scale": base.search.value_scale,
    }
    info = machine_info()
    info["mctx"] = getattr(mctx, "__version__", None)
    info["pgx"] = pgx.__version__ if pgx is not None else None
    print_header(info, args, network_info, skip_reason)

    rows = []
    for num_simulations in args.simulations:
        for batch_size in args.batch_sizes:
            config = make_config(args, batch_size, num_simulations)
            impls = [azjax_implementation(config)]
            if pgx is not None:
                impls.append(reference_implementation(pgx, network, config.search, args.steps))
            key, row_key = jax.random.split(key)
            rows.append(benchmark_row(impls, variables, batch_size, num_simulations, args, row_key))
            print(format_row(rows[-1]), flush=True)
    print()
    print(summarize_games(rows))

    results = {
        "machine": info,
        "config": {
            "game": GAME,
            "batch_sizes": args.batch_sizes,
            "simulations": args.simulations,
            "steps": args.steps,
            "repeats": args.repeats,
            "seed": args.seed,
            "network": network_info,
            "statistic": "median",
            "reference_skipped": skip_reason,
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
