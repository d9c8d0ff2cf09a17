"""Where self-play's time goes: the network, or the rest (mctx's tree work, the game, the bookkeeping).

    python experiments/benchmarks/selfplay_breakdown.py  # the Connect Four GPU preset's shape
    python experiments/benchmarks/selfplay_breakdown.py --network 6x128 --dtype bfloat16 --games 4096 --simulations 32
    python experiments/benchmarks/selfplay_breakdown.py --quick                      # tiny, e.g. on the CPU (the tests)
    python experiments/benchmarks/selfplay_breakdown.py --network 2x32 --dtype float32 --games 128 --simulations 16 \
        --moves 8 --peak-tflops 0.166                                     # the Connect Four CPU preset's shape
    python experiments/benchmarks/selfplay_breakdown.py --trace runs/trace           # also a profile of the full call

Four programs of T moves of B games each, timed alternately in one process (`bench_selfplay.measure`: median of
--repeats calls after a warm-up, compilation apart):

- "self-play": `selfplay.run_selfplay` as a training iteration runs it (search, moves, new games, the trajectory);
- "free network": the same with a network that costs nothing (`benchmark.free_network`: uniform priors and zero
  values tied to the observation), so its time is everything but the network: mctx's tree work, the game's steps
  inside the search and outside, the trajectory;
- "network alone": the (S + 1) x T network evaluations of B observations that self-play makes, in sequence
  (each depends on the one before, so XLA cannot hoist or merge them), without any search;
- "game alone": T moves of B games by uniformly random legal moves, with observation and restart (no search).

It prints each one's seconds per move of the batch and its share of self-play's; "network in self-play" is
self-play minus the free network. For the programs that run the network it also prints the network's arithmetic
rate (XLA's FLOP count of an evaluation x the S + 1 evaluations of a move / the seconds of a move) and, with a peak
(known for the accelerators of accelerator_suite.PEAK_TFLOPS, or --peak-tflops), its share of the peak. On the
2-core CPU the network is nearly all of self-play, and runs at about a third of the cores' float32 peak; issue 41 asks
where the other 76% of the FLOP bound goes on an accelerator, which these shares answer to first order (the --trace
profile, for TensorBoard's or xprof's profile viewer, answers in detail). Writes
experiments/benchmarks/results/selfplay_breakdown-<device>-<date>-<game>.md and .json (--out elsewhere).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import pathlib
import sys
from typing import Any

import jax
import jax.numpy as jnp
from accelerator_suite import network_flops, network_tflops, parse_network, peak_tflops, selfplay_config
from bench_selfplay import Implementation, azjax_implementation, measure
from flax import struct

from azjax import selfplay
from azjax.games import Game
from azjax.networks import init_variables
from azjax.search import make_search_fn
from azjax.training import make_components

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # experiments/, for the shared benchmark module
from benchmark import free_network, machine_info, note_written, results_stem, run_main, write_json


class CallRecord(struct.PyTreeNode):
    """What `bench_selfplay.measure` reads from a call's record: the games that ended, [T, B]."""

    terminated: jax.Array


def free_network_implementation(config: Any) -> Implementation:
    """Self-play as `azjax_implementation(config)`'s, with `free_apply` for the network."""
    parts = make_components(config)
    search_fn = make_search_fn(parts.game, free_network(parts.game.num_actions), config.search)
    play = functools.partial(selfplay.run_selfplay, game=parts.game, search_fn=search_fn,
                             **selfplay.selfplay_options(config.selfplay))
    return Implementation(label="free network", init=azjax_implementation(config).init, play=play)


def network_implementation(config: Any) -> Implementation:
    """(S + 1) x T evaluations of B observations by the config's network, each depending on the one before."""
    parts = make_components(config)
    game: Game = parts.game
    evaluations = (config.search.num_simulations + 1) * config.selfplay.num_steps
    apply = functools.partial(parts.network.apply, train=False)

    def init(key: jax.Array, batch_size: int) -> jax.Array:
        states = jax.vmap(game.init)(jax.random.split(key, batch_size))
        return jax.vmap(game.observe)(states).astype(jnp.float32)

    def play(key: jax.Array, variables: dict, observation: jax.Array) -> tuple[jax.Array, Any]:
        del key

        def body(_: int, carry: jax.Array) -> jax.Array:
            logits, value = apply(variables, observation + carry)
            return 0.0 * (jnp.sum(logits) + jnp.sum(value))  # a zero that XLA must compute (a NaN would show)

        tie = jax.lax.fori_loop(0, evaluations, body, jnp.float32(0.0))
        # The record depends on the loop's result (never true), so that XLA keeps the loop.
        terminated = jnp.broadcast_to(tie != 0.0, (config.selfplay.num_steps, observation.shape[0]))
        return observation, CallRecord(terminated=terminated)

    return Implementation(label="network alone", init=init, play=play)


def game_implementation(config: Any) -> Implementation:
    """T moves of B games by uniformly random legal moves, observed, finished games restarted."""
    game: Game = make_components(config).game
    steps = config.selfplay.num_steps

    def init(key: jax.Array, batch_size: int) -> Any:
        return jax.vmap(game.init)(jax.random.split(key, batch_size))

    def play(key: jax.Array, variables: dict, states: Any) -> tuple[Any, Any]:
        del variables

        def body(states: Any, step_key: jax.Array) -> tuple[Any, tuple[jax.Array, jax.Array]]:
            move_key, reset_key = jax.random.split(step_key)
            observation = jax.vmap(game.observe)(states)
            logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf)
            action = jax.random.categorical(move_key, logits).astype(jnp.int32)
            after = jax.vmap(game.step)(states, action)
            fresh = jax.vmap(game.init)(jax.random.split(reset_key, action.shape[0]))
            done = after.terminated
            after = jax.tree.map(lambda f, n: jnp.where(done.reshape(done.shape + (1,) * (n.ndim - 1)), f, n),
                                 fresh, after)
            return after, done | (jnp.sum(observation) != jnp.sum(observation))  # the observation kept (never NaN)

        states, terminated = jax.lax.scan(body, states, jax.random.split(key, steps))
        return states, CallRecord(terminated=terminated)

    return Implementation(label="game alone", init=init, play=play)


def breakdown(config: Any, repeats: int, key: jax.Array, peak: float | None = None) -> dict[str, Any]:
    """Times the four programs for `config` and returns each one's seconds per move and share of self-play's, and
    the network's arithmetic rate in the programs that run it (`accelerator_suite.network_tflops`: XLA's FLOP count
    of one position's evaluation x the S + 1 evaluations of a move x the positions the program plays a second), and
    with `peak` (the device's TFLOP/s at the network's dtype) that rate's share of the peak."""
    parts = make_components(config)
    variables = init_variables(parts.network, jax.random.key(0), parts.game.observation_shape)
    impls = [dataclasses.replace(azjax_implementation(config), label="self-play"),
             free_network_implementation(config), network_implementation(config),
             game_implementation(config)]
    results = measure(impls, variables, batch_size=config.selfplay.num_games, num_repeats=repeats, key=key)
    steps = config.selfplay.num_steps
    per_move = {label: sorted(m.times_s)[len(m.times_s) // 2] / steps for label, m in results.items()}
    per_move["network in self-play"] = per_move["self-play"] - per_move["free network"]
    whole = per_move["self-play"]
    batch_flops = network_flops(config, variables)
    per_position = batch_flops / config.selfplay.num_games if batch_flops else None
    rate = {label: network_tflops(per_position, config.search.num_simulations,
                                  config.selfplay.num_games / per_move[label])
            for label in ("self-play", "network alone", "network in self-play")
            if per_position is not None and per_move[label] > 0}
    return {
        "seconds_per_move": per_move,
        "share_of_selfplay": {label: seconds / whole for label, seconds in per_move.items()},
        "compile_s": {label: m.compile_s for label, m in results.items()},
        "positions_per_s": config.selfplay.num_games / whole,
        "flops_per_evaluation": per_position,  # of one position, as accelerator_suite's rows
        "network_tflops": rate,
        "peak_tflops": peak,
        "share_of_peak": {label: tflops / peak for label, tflops in rate.items()} if peak else {},
    }


def report(results: dict[str, Any]) -> str:
    shape = results["shape"]
    info = results["machine"]
    lines = [
        f"# Where self-play's time goes: {shape['game']}, {shape['network']} {shape['dtype']}, "
        f"{shape['games']} games x {shape['simulations']} simulations",
        "",
        f"{info.get('devices')} ({info.get('backend')}; host {info.get('cpu')}, {info.get('cpu_cores')} cores), "
        f"{info.get('date')}, azjax {info.get('azjax_commit') or info.get('azjax')}, jax {info.get('jax')}; "
        f"`python experiments/benchmarks/selfplay_breakdown.py "
        f"{results['command']}`; median of {results['repeats']} calls of {shape['moves']} moves each.",
        "",
        "| program | ms per move of the batch | share of self-play | compile s | network GFLOP/s | of the peak |",
        "|---|---|---|---|---|---|",
    ]
    for label, seconds in results["seconds_per_move"].items():
        compile_s = results["compile_s"].get(label)
        tflops, share = results["network_tflops"].get(label), results["share_of_peak"].get(label)
        gflops = "-" if tflops is None else f"{1e3 * tflops:,.1f}"
        lines.append(f"| {label} | {1e3 * seconds:.2f} | {results['share_of_selfplay'][label]:.1%} | "
                     f"{'-' if compile_s is None else f'{compile_s:.1f}'} | "
                     f"{gflops} | {'-' if share is None else f'{share:.0%}'} |")
    lines += ["", f"Self-play: {results['positions_per_s']:,.0f} positions/s."]
    if results["flops_per_evaluation"]:
        peak = results["peak_tflops"]
        lines.append(
            f"The network: {results['flops_per_evaluation'] / 1e6:.2f} MFLOP an evaluation of a position (XLA's "
            f"count), {shape['simulations'] + 1} evaluations a move; "
            + (f"the peak taken: {1e3 * peak:,.0f} GFLOP/s." if peak else
               "no peak known for this device (--peak-tflops gives one)."))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", default="connect_four")
    parser.add_argument("--network", default="6x128", help="BLOCKSxCHANNELS (default: the GPU preset's 6x128)")
    parser.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16"])
    parser.add_argument("--games", type=int, default=4096, help="games in parallel, B (default: 4096)")
    parser.add_argument("--simulations", type=int, default=32)
    parser.add_argument("--moves", type=int, default=16, help="moves per timed call, T (default: 16)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1x8 float32, 64 games, 4 simulations, 4 moves")
    parser.add_argument("--peak-tflops", type=float, help="the device's peak TFLOP/s at --dtype, for the network's "
                        "share of it (default: accelerator_suite.PEAK_TFLOPS's figure for a known device; none on a "
                        "CPU: e.g. 0.166 for 2 cores x 32 float32 FLOP a cycle x 2.6 GHz)")
    parser.add_argument("--trace", type=pathlib.Path, help="also profile one self-play call into this directory")
    parser.add_argument("--out", type=pathlib.Path, help="the .md to write (default: "
                        "experiments/benchmarks/results/selfplay_breakdown-DEVICE-DATE-GAME.md)")
    args = parser.parse_args(argv)
    if args.quick:
        args.network, args.dtype, args.games, args.simulations, args.moves = "1x8", "float32", 64, 4, 4
    for name in ("games", "simulations", "moves", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.peak_tflops is not None and not args.peak_tflops > 0:
        parser.error(f"--peak-tflops must be > 0, got {args.peak_tflops}")
    blocks, channels = parse_network(args.network)
    config = selfplay_config(args.game, blocks, channels, args.dtype, args.games, args.simulations, args.moves)
    results = {
        "command": " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine_info(),
        "shape": {"game": args.game, "network": args.network, "dtype": args.dtype, "games": args.games,
                  "simulations": args.simulations, "moves": args.moves},
        "repeats": args.repeats,
        **breakdown(config, args.repeats, jax.random.key(1),
                    peak=peak_tflops(jax.devices()[0], args.dtype, args.peak_tflops)),
    }
    text = report(results)
    print(text)
    out = args.out or pathlib.Path(__file__).parent / "results" / f"{results_stem('selfplay_breakdown', args.game)}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    write_json(out.with_suffix(".json"), results)
    note_written(out)
    note_written(out.with_suffix(".json"))
    if args.trace is not None:
        impl = azjax_implementation(config)
        parts = make_components(config)
        variables = init_variables(parts.network, jax.random.key(0), parts.game.observation_shape)
        state = jax.jit(impl.init, static_argnums=1)(jax.random.key(2), args.games)
        play = jax.jit(impl.play)
        jax.block_until_ready(play(jax.random.key(3), variables, state))
        with jax.profiler.trace(str(args.trace)):
            jax.block_until_ready(play(jax.random.key(4), variables, state))
        print(f"Profile of one self-play call: {args.trace} (TensorBoard's or xprof's profile viewer)")
    print(f"Wrote {out} and {out.with_suffix('.json')}")
    return results


if __name__ == "__main__":
    run_main(main)
