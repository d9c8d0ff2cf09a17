"""Everything we want to know about an accelerator, in one command: run it first on any GPU or TPU you get.

    python experiments/benchmarks/accelerator_suite.py                    # the whole suite on the device jax sees
    python experiments/benchmarks/accelerator_suite.py --no-training      # throughput only (minutes)
    python experiments/benchmarks/accelerator_suite.py --quick            # a tiny version, e.g. on the CPU (the tests
                                                                          # run it; it leaves Go out)
    python experiments/benchmarks/accelerator_suite.py --dtypes bfloat16  # one compute dtype (default: both)
    python experiments/benchmarks/accelerator_suite.py --networks 6x128 --batch-sizes 1024 4096 --simulations 32 \
        --max-batch 0 --no-training                                       # a part of the grid, in a short lease

It writes experiments/benchmarks/results/accelerator_suite-<device>-<date>.md and .json (--out-dir elsewhere). On a
CPU it says first which of its sizes are an accelerator's, then, once its first setting is timed, roughly what the rest
costs there:

1. Self-play throughput, azjax beside the pgx + mctx reference of bench_selfplay.py in the same run (pgx
   installed; otherwise azjax alone): Connect Four, networks 4 x 64 and 6 x 128, games B in 256 .. 8192, 32 and
   128 simulations, float32 and bfloat16; positions/s (median of 3 alternating calls of 16 moves, `FULL` below),
   simulations/s, the ratio, compile seconds. Beside each row: the network's FLOPs per position evaluation (XLA's
   cost analysis of the network lowered for the CPU, whatever the device), the FLOP rate that self-play achieves in
   network evaluations alone (FLOPs x (S + 1) evaluations per move x positions/s) and, where the device's peak is known
   (`PEAK_TFLOPS`, or --peak-tflops), its share of the peak: the network-FLOP bound. Go 9x9 through pgx at one
   setting (azjax alone).
2. Per network: SGD steps/s at the GPU preset's batch, the peak device memory so far (`device.memory_stats()`, where
   the backend reports it; jax cannot reset it, so each row is the peak of everything before it) and the largest
   game batch whose self-play compiles and runs (doubling until the device runs out of memory, up to --max-batch).
3. Training (unless --no-training): a --train-seconds Connect Four run of the GPU preset with
   experiments/studies/strength/learns.py (then its agent against UCT-1600, its first checkpoint and perfect play), and
   the race of experiments/studies/time_to_strength/time_to_strength.py at the GPU preset.

The targets on one H100 (issue "Outgrowing one machine"): >= 2 x the reference's positions/s at equal network and
simulations for B >= 1024 (bfloat16), >= 25% of the FLOP bound for 6 x 128 at B >= 1024, and the Connect Four GPU
preset scoring >= 0.95 against UCT-1600 within 15 minutes. On one H200
(experiments/benchmarks/results/accelerator_suite-gpu-nvidia-h200-2026-11-26.md) the ratio was 1.00-1.01 (the reference
is the same network and search, which are all of self-play's time) and 6 x 128 reached 24% of the FLOP bound at B = 4096
and 32 simulations.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time
from typing import Any

import bench_selfplay
import jax
import jax.numpy as jnp

from azjax import config as config_lib
from azjax import presets, training
from azjax.config import Config, NetworkConfig, SearchConfig, SelfPlayConfig, TrainConfig
from azjax.networks import inference_fn, init_variables
from azjax.training import make_components

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # experiments/, for the shared benchmark module
from benchmark import Table, import_pgx, machine_info, results_stem, run_main, write_json

# Dense peak TFLOP/s by device kind (substring of `device.device_kind`) and compute dtype, from the vendors' data
# sheets (without sparsity); a device not listed has no bound unless --peak-tflops gives it.
PEAK_TFLOPS = {
    "H100": {"bfloat16": 989.0, "float32": 67.0},
    "H200": {"bfloat16": 989.0, "float32": 67.0},
    "A100": {"bfloat16": 312.0, "float32": 19.5},
    "TPU v4": {"bfloat16": 275.0, "float32": 275.0 / 4},
    "TPU v5 lite": {"bfloat16": 197.0, "float32": 197.0 / 4},
}

FULL = dict(networks=[(4, 64), (6, 128)], batch_sizes=[256, 1024, 4096, 8192], simulations=[32, 128],
            dtypes=["float32", "bfloat16"], steps=16, repeats=3, max_batch=65536)
QUICK = dict(networks=[(1, 8)], batch_sizes=[8], simulations=[2], dtypes=["float32", "bfloat16"], steps=2, repeats=1,
             max_batch=16)


def parse_network(text: str) -> tuple[int, int]:
    """"6x128" -> (6, 128): residual blocks x channels."""
    try:
        blocks, channels = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise SystemExit(f"--networks takes BLOCKSxCHANNELS such as 6x128, got {text!r}") from None
    return blocks, channels


def peak_tflops(device: jax.Device, dtype: str, given: float | None) -> float | None:
    if given is not None:
        return given
    for kind, peaks in PEAK_TFLOPS.items():
        if kind.lower() in device.device_kind.lower():
            return peaks[dtype]
    return None


def selfplay_config(game: str, blocks: int, channels: int, dtype: str, batch: int, sims: int, steps: int,
                    observation_version: int | None = None) -> Config:
    return Config(
        game=game,
        observation_version=observation_version,
        network=NetworkConfig(num_blocks=blocks, num_channels=channels, compute_dtype=dtype),
        search=SearchConfig(policy="gumbel", num_simulations=sims),
        selfplay=SelfPlayConfig(num_games=batch, num_steps=steps),
        train=TrainConfig(replay_capacity=max(TrainConfig().replay_capacity, batch * steps)),
    ).validate()  # self-play alone fills no replay, but a config must hold one iteration's positions


def throughput_config(game: str, blocks: int, channels: int, dtype: str, batch: int, sims: int, steps: int
                      ) -> Config:
    """`selfplay_config` for a throughput row: Connect Four observing its stones only, as the pgx reference beside it
    does (`bench_selfplay.OBSERVATION_VERSION`), so that one network serves both; other games as they observe."""
    observes = bench_selfplay.OBSERVATION_VERSION if game == bench_selfplay.GAME else None
    return selfplay_config(game, blocks, channels, dtype, batch, sims, steps, observes)


def network_flops(config: Config, variables: dict) -> float | None:
    """FLOPs of one network evaluation of the game batch, by XLA's cost analysis of the network lowered for the CPU,
    whatever the device: the count is the network's (a convolution's taps that fall on the padding are left out),
    and on a GPU XLA's analysis gives none (the compiled network's counts nothing of cuDNN's convolutions, seen on
    an H200 with jax 0.11.2)."""
    parts = make_components(config)
    observations = jnp.zeros((config.selfplay.num_games, *parts.game.observation_shape), jnp.float32)
    lowered = jax.jit(inference_fn(parts.network)).trace(variables, observations).lower(lowering_platforms=("cpu",))
    analysis = lowered.cost_analysis()
    analysis = analysis[0] if isinstance(analysis, list) else analysis
    flops = (analysis or {}).get("flops")
    return float(flops) if flops else None


def network_tflops(flops_per_position: float, num_simulations: int, positions_per_s: float) -> float:
    """The network's arithmetic rate in self-play, TFLOP/s: a position's S + 1 evaluations (the root's and one a
    simulation) of `flops_per_position` each, at `positions_per_s` positions played a second."""
    return flops_per_position * (num_simulations + 1) * positions_per_s / 1e12


def peak_memory(device: jax.Device) -> int | None:
    """The device's peak memory in use since the process started (jax cannot reset it), where reported."""
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    return (stats or {}).get("peak_bytes_in_use")


def throughput_row(config: Config, variables: dict, pgx: Any, repeats: int, device: jax.Device,
                   peak: float | None, key: jax.Array) -> dict:
    """One (network, dtype, B, S) of self-play: azjax and the reference side by side, and the FLOP bound."""
    impls = [bench_selfplay.azjax_implementation(config)]
    if pgx is not None and config.game == bench_selfplay.GAME:
        network = make_components(config).network
        impls.append(bench_selfplay.reference_implementation(pgx, network, config.search, config.selfplay.num_steps))
    results = bench_selfplay.measure(impls, variables, batch_size=config.selfplay.num_games, num_repeats=repeats,
                                     key=key)
    call_positions = config.selfplay.num_games * config.selfplay.num_steps
    rates = {label: m.rate(call_positions) for label, m in results.items()}
    flops = network_flops(config, variables)
    per_position = flops / config.selfplay.num_games if flops else None
    achieved = network_tflops(per_position, config.search.num_simulations, rates["azjax"]) if per_position else None
    net = config.network
    return {
        "game": config.game,
        "network": f"{net.num_blocks}x{net.num_channels}",
        "dtype": net.compute_dtype,
        "batch_size": config.selfplay.num_games,
        "simulations": config.search.num_simulations,
        "azjax_positions_per_s": rates["azjax"],
        "reference_positions_per_s": rates.get("reference"),
        "ratio": rates["azjax"] / rates["reference"] if "reference" in rates else None,
        "simulations_per_s": rates["azjax"] * config.search.num_simulations,
        "flops_per_evaluation": per_position,
        "network_tflops": achieved,
        "share_of_peak": achieved / peak if achieved and peak else None,
        "compile_s": {label: m.compile_s for label, m in results.items()},
        "times_s": {label: m.times_s for label, m in results.items()},
        "peak_memory_bytes_so_far": peak_memory(device),
    }


def sgd_config(game: str, blocks: int, channels: int, dtype: str, quick: bool) -> Config:
    """The config of part 2's SGD steps: the game's GPU preset with a `blocks` x `channels` network (and, to fill its
    replay once, a cheap iteration of few simulations; everything shrunk with `quick`)."""
    preset = presets.get_config(game, "gpu")
    overrides: dict[str, Any] = {"network.num_blocks": blocks, "network.num_channels": channels,
                                 "network.compute_dtype": dtype}
    if quick:
        overrides.update({"selfplay.num_games": 8, "selfplay.num_steps": 16, "train.batch_size": 16,
                          "train.num_sgd_steps": 2, "train.replay_capacity": 256, "search.num_simulations": 2,
                          "search.max_num_considered_actions": 2})
    else:  # the replay is filled by one cheap iteration (a few simulations): the SGD steps timed are the preset's
        overrides.update({"search.num_simulations": 4, "search.max_num_considered_actions": 4})
    return config_lib.with_overrides(preset, overrides)


def sgd_steps_per_second(game: str, blocks: int, channels: int, dtype: str, repeats: int, quick: bool) -> float:
    """SGD steps/s of a `blocks` x `channels` network at the game's GPU preset batch (its replay filled once)."""
    config = sgd_config(game, blocks, channels, dtype, quick)
    run_state, _ = jax.jit(training.make_train_iteration(config))(training.init_run_state(config))
    parts = training.make_components(config)
    sgd = jax.jit(lambda key, state, replay: training.run_sgd_steps(key, state, replay, parts=parts, config=config))
    jax.block_until_ready(sgd(jax.random.key(0), run_state.train_state, run_state.replay))
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(sgd(jax.random.key(i + 1), run_state.train_state, run_state.replay))
        times.append(time.perf_counter() - start)
    return config.train.num_sgd_steps / statistics.median(times)


def largest_batch(blocks: int, channels: int, dtype: str, sims: int, start: int, limit: int) -> int | None:
    """The largest power-of-two multiple of `start` games (up to `limit`) whose self-play runs on the device."""
    fits = None
    batch = start
    while batch <= limit:
        config = selfplay_config("connect_four", blocks, channels, dtype, batch, sims, 2)
        impl = bench_selfplay.azjax_implementation(config)
        parts = make_components(config)
        variables = init_variables(parts.network, jax.random.key(0), parts.game.observation_shape)
        try:
            state = jax.jit(impl.init, static_argnums=1)(jax.random.key(1), batch)
            jax.block_until_ready(jax.jit(impl.play)(jax.random.key(2), variables, state))
        except Exception as error:  # out of memory surfaces as several XLA error types; others re-raised
            if "RESOURCE_EXHAUSTED" in str(error) or "out of memory" in str(error).lower():
                break
            raise
        fits = batch
        batch *= 2
    return fits


def network_cost(blocks: int, channels: int) -> int:
    """A network's cost per position evaluation, relative: its convolutions (the stem's and a residual block's two)
    of `channels` x `channels` each. It scales one setting's measured time to another's, roughly."""
    return (2 * blocks + 1) * channels**2


def training_part(args: argparse.Namespace) -> dict[str, Any]:
    """Part 3 as the arguments make it: the seconds of each training run, how many runs, the matches after."""
    return {"seconds": args.train_seconds, "runs": 1 if args.no_race else 2, "mcts": 16 if args.quick else 1600,
            "games": 4 if args.quick else 200}


def cpu_notice(plan: dict[str, Any], settings: list[tuple], quick: bool, part3: dict[str, Any] | None) -> str | None:
    """What the suite asks of a CPU, said before it starts: the sizes that are an accelerator's (all of them; with
    --quick, part 3's training time alone), and that their cost here is estimated once the first setting is timed.
    None where nothing is an accelerator's (--quick --no-training)."""
    training = (f"part 3 trains {part3['runs']} x {part3['seconds']:g} s (the GPU preset{', shrunk' if quick else ''}) "
                f"and plays {part3['games']} games a seat against UCT-{part3['mcts']}" if part3 is not None else None)
    if quick:
        if training is None:
            return None
        return (f"On a CPU: --quick shrinks parts 1 and 2, not part 3's time, an accelerator's: {training}, "
                f"{duration(part3['runs'] * part3['seconds'])} of training; --no-training or --train-seconds make it "
                "shorter.")
    networks = ", ".join(f"{b}x{c}" for b, c in plan["networks"])
    parts = [f"part 1 times {len(settings)} self-play settings (networks {networks}, up to "
             f"{max(plan['batch_sizes'])} games x {max(plan['simulations'])} simulations)",
             "part 2 trains at the GPU preset's SGD batch" + (f" and doubles the game batch up to {plan['max_batch']}"
                                                              if plan["max_batch"] else ""), *filter(None, [training])]
    return (f"On a CPU: these sizes are an accelerator's: {'; '.join(parts)}. What parts 1 and 2 cost here is "
            "estimated once the first setting is timed; --quick, --no-training, --train-seconds, --max-batch 0, "
            "--networks, --batch-sizes and --simulations make the suite smaller.")


def cpu_estimate(plan: dict[str, Any], settings: list[tuple], first_wall_s: float, first_call_s: float,
                 num_impls: int, part3: dict[str, Any] | None, quick: bool) -> str:
    """The cost of the rest of the suite on this CPU, from the first setting's measured seconds: its wall time
    (`first_wall_s`: compilation and set-up included) and one timed call of one implementation (`first_call_s`).

    Every other setting costs the first one's set-up plus its calls scaled by positions x (simulations + 1) x
    `network_cost`; part 2's SGD steps as three evaluations (forward and backward) a sample, its largest-batch search
    one call a batch; part 3 the seconds it is given. Rough: only the network's work scales.
    """
    _, blocks, channels, _, batch, sims = settings[0]
    steps, repeats = plan["steps"], plan["repeats"]
    per_unit = first_call_s / (batch * steps * (sims + 1) * network_cost(blocks, channels))
    setup_s = max(first_wall_s - num_impls * repeats * first_call_s, 0.0)
    part1 = sum(setup_s + num_impls * repeats * per_unit * b * steps * (s + 1) * network_cost(nb, nc)
                for _, nb, nc, _, b, s in settings[1:])
    part2 = 0.0
    for nb, nc in plan["networks"]:
        config = sgd_config("connect_four", nb, nc, "float32", quick)
        fill = config.selfplay.num_games * config.selfplay.num_steps * (config.search.num_simulations + 1)
        sgd = (repeats + 1) * config.train.num_sgd_steps * config.train.batch_size * 3
        doubled, batches, compiles = plan["batch_sizes"][0], 0, 2  # the filling iteration's and the SGD steps'
        while plan["max_batch"] and doubled <= plan["max_batch"]:
            batches, doubled, compiles = batches + doubled, 2 * doubled, compiles + 1
        work = (fill + sgd + batches * 2 * (plan["simulations"][0] + 1)) * network_cost(nb, nc)
        part2 += len(plan["dtypes"]) * (compiles * setup_s + per_unit * work)
    others = len(settings) - 1
    line = (f"This CPU timed the first setting in {duration(first_wall_s)}: "
            + (f"by the others' games x simulations x network, part 1's other {others} settings take about "
               f"{duration(part1)} and part 2 about " if others else "part 2, by its games x simulations x network, "
               "takes about ") + duration(part2))
    if part3 is not None:
        line += (f"; part 3 trains {duration(part3['runs'] * part3['seconds'])}, then plays its matches against "
                 f"UCT-{part3['mcts']}")
    return line + "."


def duration(seconds: float) -> str:
    """"45 s", "12 min", "3.5 h"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 90 * 60 else f"{seconds / 3600:.1f} h"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tiny version (networks, batches, steps)")
    parser.add_argument("--no-training", action="store_true", help="skip part 3 (the training runs)")
    parser.add_argument("--train-seconds", type=float, default=900.0, help="part 3's Connect Four run")
    parser.add_argument("--peak-tflops", type=float, help="the device's peak, if PEAK_TFLOPS lacks it")
    parser.add_argument("--dtypes", nargs="+", choices=["float32", "bfloat16"],
                        help="the compute dtypes of parts 1 and 2 (default: both)")
    parser.add_argument("--networks", nargs="+", metavar="BLOCKSxCHANNELS", help="the networks of parts 1 and 2 "
                        "(default: 4x64 6x128)")
    parser.add_argument("--batch-sizes", nargs="+", type=int, metavar="B", help="part 1's game batches "
                        "(default: 256 1024 4096 8192)")
    parser.add_argument("--simulations", nargs="+", type=int, metavar="S", help="part 1's simulations per move "
                        "(default: 32 128)")
    parser.add_argument("--max-batch", type=int, help="part 2 doubles the game batch up to this (default: 65536; "
                        "0: leaves the largest batch out)")
    parser.add_argument("--no-go", action="store_true", help="part 1 without its Go 9x9 row (through pgx)")
    parser.add_argument("--no-race", action="store_true", help="part 3 without the race (half its time)")
    parser.add_argument("--out-dir", type=pathlib.Path, default=pathlib.Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    plan = dict(QUICK if args.quick else FULL)
    if args.dtypes:
        plan["dtypes"] = list(dict.fromkeys(args.dtypes))
    if args.networks:
        plan["networks"] = [parse_network(text) for text in args.networks]
    for name in ("batch_sizes", "simulations", "max_batch"):
        if getattr(args, name) is not None:
            plan[name] = getattr(args, name)
    device = jax.devices()[0]
    info = machine_info()
    pgx = import_pgx()
    stem = results_stem("accelerator_suite")
    lines = [f"# Accelerator suite: {device.device_kind} ({device.platform})", "",
             f"{info['date']}, jax {info['jax']}, azjax {info['azjax_commit']}, {len(jax.devices())} device(s); "
             f"reference: {'pgx ' + pgx.__version__ + ' + mctx' if pgx else 'none (pgx not installed)'}"
             f"{'; --quick' if args.quick else ''}.", ""]
    results: dict[str, Any] = {"machine": info, "device_kind": device.device_kind, "quick": args.quick,
                               "throughput": [], "per_network": [], "training": {}}

    settings = [("connect_four", b, c, d, n, s) for (b, c) in plan["networks"] for d in plan["dtypes"]
                for s in plan["simulations"] for n in plan["batch_sizes"]]
    if not (args.no_go or args.quick) and pgx is not None:  # Go's compilation alone would double the quick run
        settings.append(("pgx:go_9x9", *plan["networks"][-1], "bfloat16", plan["batch_sizes"][-1],
                         plan["simulations"][0]))
    part3 = None if args.no_training else training_part(args)
    on_cpu = device.platform == "cpu"
    notice = cpu_notice(plan, settings, args.quick, part3) if on_cpu else None
    if notice:
        print(notice + "\n", flush=True)

    table = Table([("game", "12s"), ("net", "6s"), ("dtype", "8s"), ("B", "6d"), ("S", "4d"), ("azjax pos/s", "12.0f"),
                   ("ref pos/s", "10s"), ("ratio", "6s"), ("sims/s", "11.0f"), ("net TFLOP/s", "11s"),
                   ("of peak", "7s"), ("compile s", "9.1f")])
    lines += ["## Self-play throughput", "", "```", table.header()]
    print("\n".join(lines), flush=True)
    key = jax.random.key(0)
    for index, (game, blocks, channels, dtype, batch, sims) in enumerate(settings):
        start = time.perf_counter()
        config = throughput_config(game, blocks, channels, dtype, batch, sims, plan["steps"])
        parts = make_components(config)
        variables = init_variables(parts.network, jax.random.key(1), parts.game.observation_shape)
        key, row_key = jax.random.split(key)
        row = throughput_row(config, variables, pgx, plan["repeats"], device,
                             peak_tflops(device, dtype, args.peak_tflops), row_key)
        results["throughput"].append(row)
        wall_s = time.perf_counter() - start
        shown = table.row(
            game, row["network"], dtype, batch, sims, row["azjax_positions_per_s"],
            f"{row['reference_positions_per_s']:.0f}" if row["reference_positions_per_s"] else "-",
            f"{row['ratio']:.2f}" if row["ratio"] else "-", row["simulations_per_s"],
            f"{row['network_tflops']:.3g}" if row["network_tflops"] else "-",
            f"{row['share_of_peak']:.1%}" if row["share_of_peak"] else "-", row["compile_s"]["azjax"])
        lines.append(shown)
        print(shown, flush=True)
        if on_cpu and index == 0:
            estimate = cpu_estimate(plan, settings, wall_s, statistics.median(row["times_s"]["azjax"]),
                                    len(row["times_s"]), part3, args.quick)
            print(f"({estimate})", flush=True)
    lines.append("```")

    per_net = Table([("net", "6s"), ("dtype", "8s"), ("SGD steps/s", "11.1f"), ("largest B", "9s"),
                     ("peak memory so far", "18s")])
    block = ["", "## Per network (Connect Four GPU preset's SGD batch; largest self-play batch at 32 simulations)",
             "", "```", per_net.header()]
    print("\n".join(block), flush=True)
    for blocks, channels in plan["networks"]:
        for dtype in plan["dtypes"]:
            steps = sgd_steps_per_second("connect_four", blocks, channels, dtype, plan["repeats"], args.quick)
            fits = largest_batch(blocks, channels, dtype, plan["simulations"][0], plan["batch_sizes"][0],
                                 plan["max_batch"]) if plan["max_batch"] else None
            memory = peak_memory(device)
            entry = {"network": f"{blocks}x{channels}", "dtype": dtype, "sgd_steps_per_s": steps,
                     "largest_batch": fits, "peak_memory_bytes_so_far": memory}
            results["per_network"].append(entry)
            shown = per_net.row(entry["network"], dtype, steps, str(fits) if fits else "-",
                                f"{memory / 2**30:.1f} GiB" if memory else "-")
            block.append(shown)
            print(shown, flush=True)
    block.append("```")
    lines += block

    if not args.no_training:
        studies = pathlib.Path(__file__).resolve().parents[1] / "studies"  # part 3 runs two studies' scripts
        sys.path[:0] = [str(studies / "strength"), str(studies / "time_to_strength")]
        import learns
        import time_to_strength

        out = args.out_dir / f"{stem}-runs"
        extra = (["--set", "network.num_blocks=1", "network.num_channels=8", "selfplay.num_games=16",
                  "train.batch_size=32", "train.replay_capacity=4096", "search.num_simulations=4"]
                 if args.quick else [])
        report = learns.main(["--game", "connect_four", "--preset", "gpu", "--out", str(out / "connect_four"),
                              "--seconds", str(args.train_seconds), "--mcts", str(part3["mcts"]),
                              "--games", str(part3["games"]), *extra])
        race = None if args.no_race else time_to_strength.main(
            ["--game", "connect_four", "--preset", "gpu", "--seconds", str(args.train_seconds), "--out",
             str(out / "race"), *extra] + (["--marks", str(args.train_seconds), "--games-per-seat", "2"]
                                           if args.quick else []))
        results["training"] = {"learns": report, "race": race}
        lines += ["", "## Training", "", f"learns.py (GPU preset, {args.train_seconds:.0f} s): see "
                  f"{out / 'connect_four' / 'learns.json'}; the race: {out / 'race' / 'time_to_strength.json'}."]
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / f"{stem}.md").write_text("\n".join(lines) + "\n")
    write_json(args.out_dir / f"{stem}.json", results)
    print(f"\nWritten: {args.out_dir / (stem + '.md')} and .json")
    return results


if __name__ == "__main__":
    run_main(main)
