"""`azjax train`: train an agent by self-play, or resume a run, with the config from a preset, a file or the run,
and the command line's overrides."""

from __future__ import annotations

import argparse
import datetime
import functools
import math
import sys
from pathlib import Path

from azjax.cli import common


def add_arguments(commands) -> None:
    train = commands.add_parser(
        "train",
        allow_abbrev=False,
        help="train an agent by self-play",
        description="Train an AlphaZero agent by self-play. With no arguments: tic-tac-toe, small CPU preset, "
        "stopping by itself after the preset's iterations. Every config field can be overridden below.",
        formatter_class=common.HelpFormatter,
    )
    _add_run_options(train)
    _add_checkpoint_and_eval_options(train)
    train.add_argument("--devices", type=int, help="split the games and the SGD batch over this many devices "
                       "(default: all jax sees, as many as divide both; on a CPU one device per core, but one "
                       "device for networks too small for the split to pay, as measured; the run prints its "
                       "choice and why); 1 = no split")
    train.add_argument("--no-progress", action="store_true", help="no progress bar (for logs)")
    train.add_argument("--past-perfect", action="store_true", help="go on training after an evaluation finds "
                       "perfect play (tic-tac-toe: optimal in all its solved positions, no loss to the perfect "
                       "player), where a run otherwise stops")
    common.add_distributed_options(train, "one mesh over every process's devices; process 0 writes the run "
                                   "directory, which every process must see (a shared file system)")
    common.add_compile_cache_option(train)
    train.add_argument("--list-games", action="store_true", help="list the registered games and the pgx "
                       "environments the adapter takes, and exit")
    _add_config_options(train)


def _add_run_options(train: argparse.ArgumentParser) -> None:
    """What to train, from what, where, and for how long."""
    train.add_argument("--game", help="the game to train (default: tic_tac_toe, or the run's when --out holds "
                       "one): " + common.GAME_HELP)
    train.add_argument("--preset", choices=["cpu", "gpu"], help="the game's preset config (default: cpu)")
    train.add_argument("--network", dest="config:network.module", metavar="MODULE:FACTORY",
                       help="train a network of your own: FACTORY(num_actions=..., observation_shape=...) in MODULE "
                            "(a module on the path or a .py file) returns a Flax module with the network contract "
                            "(azjax.networks), e.g. examples/mlp_network.py:make_mlp; the run records it, as it "
                            "does --game (the same as --network.module)")
    train.add_argument("--config", type=Path, help="start from this config.json (e.g. a run's) instead of a preset")
    train.add_argument("--out", type=Path, help="the run directory (default: runs/GAME-DATE-TIME); if it holds a "
                       "run, that run resumes from its last checkpoint with its own config (its config.json, else "
                       "its latest checkpoint's) and the overrides given here; with --game, --preset or --config "
                       "their config replaces the run's (none of the run's own settings are kept) and must fit the "
                       "run's checkpoints")
    train.add_argument("--init-from", metavar="AGENT", help="start a new run from this network's weights: "
                       "pretrained:GAME (a shipped agent; `azjax pretrained` lists them), a run directory or an "
                       "export; the optimizer, replay and games start fresh; its game is the run's unless --game "
                       "says otherwise; with a preset the network takes the source's shape and the learning rate "
                       "warms up until the replay first fills (--network.* and --train.warmup_steps win; a shape "
                       "that does not fit is refused, naming what differs)")
    train.add_argument("--iterations", type=int, help="stop after this many iterations in total, counting those "
                       "of a resumed run (sets num_iterations; default: the preset's or the run's)")
    train.add_argument("--seconds", type=float, help="train for this many seconds (wall clock, compilation "
                       "included): a new run trains for the time, whatever its preset's iterations; with --iterations, "
                       "or resuming a run (its own iterations), whichever ends first; the learning-rate schedule "
                       "spans what ends the run")


def _add_checkpoint_and_eval_options(train: argparse.ArgumentParser) -> None:
    train.add_argument("--checkpoint-every", type=int, default=10, help="checkpoint every N iterations (and "
                       "always when training stops)")
    train.add_argument("--keep", type=int, default=3, help="keep the last N checkpoints (and the best)")
    train.add_argument("--best-metric", default="eval/score", help="the logged metric whose highest value marks "
                       "the best checkpoint, kept beside the last --keep ones")
    train.add_argument("--eval-every", type=int, default=10, help="every N iterations, and at the end of a run "
                       "that --seconds stops, the agent plays fixed baselines (--eval-opponents); scores go into "
                       "metrics.jsonl as eval/...; 0 = never")
    train.add_argument("--eval-games", type=int, default=64, help="games against each baseline in an "
                       "evaluation, half in each seat (even)")
    train.add_argument("--eval-opponents", metavar="AGENT,AGENT", help="the baselines, comma-separated agents "
                       "without run directories (default: random, onestep, mcts:100 for games shorter than 100 "
                       "moves, perfect for tic_tac_toe)")


def _add_config_options(parser: argparse.ArgumentParser) -> None:
    """One --SECTION.FIELD option per config field, grouped by section, each None unless given."""
    from azjax import config as config_lib

    groups: dict[str, argparse._ArgumentGroup] = {}
    for path, (kind, default, help_text) in config_lib.field_paths().items():
        if path in ("game", "num_iterations"):
            continue  # --game picks the preset and --iterations sets num_iterations: their own options
        section = path.split(".")[0] if "." in path else "run"
        group = groups.setdefault(section, parser.add_argument_group(f"config: {section}"))
        metavar = getattr(kind, "__name__", "VALUE").upper() if isinstance(kind, type) else "VALUE"
        group.add_argument(
            f"--{path}",
            dest=f"config:{path}",
            metavar=metavar,
            default=None,
            help=f"{help_text} (default: the preset's; generic default {default!r})",
        )


def run(args: argparse.Namespace) -> int:
    from azjax import config as config_lib
    from azjax import games, interrupts, parallel, trainer

    parallel.expose_cpu_cores(args.devices)  # before jax starts its backend
    failed = common.join_processes(args, "train")
    if failed is not None:
        return failed
    if args.list_games:
        return _list_games()
    try:
        config, origin = _resolve_config(args)
    except (config_lib.ConfigError, games.GameNotFoundError) as error:
        print(f"azjax train: error: {error}", file=sys.stderr)
        return 2
    if args.seconds is not None and not (math.isfinite(args.seconds) and args.seconds > 0):
        print(f"azjax train: error: --seconds must be a finite number > 0, got {args.seconds}", file=sys.stderr)
        return 2
    opponents = _opponents(args.eval_opponents, config.game)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = args.out or Path("runs") / f"{_file_name(config.game)}-{stamp}"
    print(f"Training {config.game} into {run_dir} ({_budget(config, args.seconds)})")
    print(f"Config: {origin}.")
    if args.preset == "gpu" and jax_platform() == "cpu":
        print(gpu_preset_on_cpu_note(config))
    problem = _option_error(args)
    if problem is not None:
        print(f"azjax train: error: {problem}", file=sys.stderr)
        return 2
    resume = f"azjax train --out {run_dir}"
    stopped_at_once = functools.partial(_stopped_at_once, run_dir, resume)
    try:
        # The trainer's first Ctrl-C stops the run after its iteration; it hands a second one on to this.
        with interrupts.exit_at_once(stopped_at_once):
            result = _train(args, config, run_dir, opponents)
    except trainer.NonFiniteError as error:
        print(f"azjax train: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # raised by something of the user's (a game module, a callback): stopped at once
        print(stopped_at_once(), file=sys.stderr)
        return 130
    _report(args, config, result, run_dir, resume)
    return 0


def _list_games() -> int:
    from azjax import games
    from azjax.games.pgx_adapter import supported_envs

    print("\n".join(games.names()))
    print(f"pgx:<env_id> with pip install 'azjax[pgx]', env_id one of: {', '.join(sorted(supported_envs()))}")
    print("MODULE:FACTORY for a game of your own, e.g. hex5:make_hex5 (README: Your own game)")
    return 0


def _resolve_config(args: argparse.Namespace):
    """The run's config and where it came from; --init-from alone picks its source's game (and so its preset).

    Raises:
      SpecError: --init-from names no agent whose game can be found.
      GameNotFoundError: --game names no game.
      ConfigError: see `config_from_args`.
    """
    from azjax import agent_specs, games, rundir

    if args.init_from is not None and args.game is None and args.config is None and (
            args.out is None or not (args.out / rundir.CONFIG_FILE).is_file()):
        args.game = agent_specs.game_of_spec(args.init_from)  # the source's game, and so its preset
        if args.game is None:
            raise agent_specs.SpecError(f"--init-from {args.init_from!r} is no run directory, export or shipped "
                                 "agent: give the --out of a run, an export or pretrained:GAME")
    if args.game is not None:
        args.game = games.canonical(args.game)
        games.check_known(args.game)
    return config_from_args(args)


def _budget(config, seconds: float | None) -> str:
    """What ends the run, as the first line says it."""
    from azjax import config as config_lib
    from azjax.text import counted

    if config.num_iterations != config_lib.TIME_BUDGET_ITERATIONS:
        budget = counted(config.num_iterations, "iteration")
        return budget + (f", at most {seconds:g} s" if seconds else "")
    # a run its --seconds alone ends (resumed without them: until stopped)
    return f"{seconds:g} s" if seconds else "until stopped: it began on --seconds alone, none given now"


def _option_error(args: argparse.Namespace) -> str | None:
    """What is wrong with the checkpoint and evaluation options, if anything."""
    if args.checkpoint_every < 1 or args.keep < 1:
        return "--checkpoint-every and --keep must be >= 1"
    if args.eval_games < 2 or args.eval_games % 2:
        return f"--eval-games must be even and >= 2 (half in each seat), got {args.eval_games}"
    if args.eval_every < 0:
        return f"--eval-every must be >= 0 (0 = never), got {args.eval_every}"
    return None


def _stopped_at_once(run_dir: Path, resume: str) -> str:
    """The line a second Ctrl-C leaves: what was kept, and how to resume."""
    from azjax import checkpointing

    latest = checkpointing.latest_iteration(run_dir)
    kept = f"the last checkpoint (iteration {latest}) is kept" if latest else "no checkpoint was written"
    return f"Stopped at once; {kept}. Resume with: {resume}"


def _train(args: argparse.Namespace, config, run_dir: Path, opponents: tuple[str, ...] | None):
    from azjax import trainer

    return trainer.train(
        config,
        run_dir,
        max_seconds=args.seconds,
        checkpoint_every=args.checkpoint_every,
        keep_checkpoints=args.keep,
        best_metric=args.best_metric,
        eval_every=args.eval_every,
        eval_games=args.eval_games,
        eval_opponents=opponents,
        progress=not args.no_progress,
        num_devices=args.devices,
        init_from=args.init_from,
        stop_when_perfect=not args.past_perfect,
    )


def _report(args: argparse.Namespace, config, result, run_dir: Path, resume: str) -> None:
    """How the run ended, where it can resume, and what its directory holds."""
    last = result.history[-1] if result.history else None
    if last is not None:
        trained = sum(record.get("sgd_steps", 1) for record in result.history)
        loss = (f"loss {last['loss']:.3f}" if trained
                else "no SGD step taken (too few positions of finished games: see above)")
        print(
            f"{'Done' if result.stop_reason == 'iterations' else 'Stopped'} ({result.stop_reason}): iteration "
            f"{last['iteration']}, {last['time']:.0f} s, {loss}, {last['positions_per_second']:,.0f} positions/s."
        )
        if args.seconds is not None and args.iterations is None and result.stop_reason == "iterations":
            # Only a resumed run keeps its own iterations under --seconds; a new one trains for the time.
            print(f"Its {config.num_iterations} iterations (num_iterations: the resumed run's, not --seconds) ended "
                  f"the run before its {args.seconds:g} s; pass --iterations N as well to train on, the "
                  "learning-rate schedule then spanning the N iterations or the time, whichever ends first.")
    if result.stop_reason not in ("iterations", "perfect"):
        if result.last_checkpoint:
            print(f"Checkpoint saved at iteration {result.last_checkpoint}. Resume with: {resume}")
        else:
            print(f"Stopped before the first iteration finished; nothing to save. Start again with: {resume}")
    print(f"Run directory: {run_dir} (config.json, metrics.jsonl, tensorboard/, checkpoints/, learning_curves.png)")


def jax_platform() -> str:
    """The platform of the devices jax uses here ("cpu", "gpu", "tpu")."""
    import jax

    return jax.default_backend()


def gpu_preset_on_cpu_note(config) -> str:
    """What a GPU preset's run costs where jax has only the CPU: its sizes are an accelerator's."""
    from azjax import trainer

    net = config.network
    return (f"Note: this is the gpu preset, on a CPU: {trainer.describe_iteration(config)}, a {net.num_blocks} x "
            f"{net.num_channels} {net.compute_dtype} network, sizes for an accelerator; on this CPU an iteration takes "
            "minutes, the first longer (its compilation). The cpu preset (no --preset) is sized for a CPU; "
            "--selfplay.num_games N shrinks this one.")


def _opponents(text: str | None, game_name: str) -> tuple[str, ...] | None:
    """--eval-opponents as agent specs, None when not given.

    Raises:
      SpecError: none given, one with a run directory (the baselines are fixed agents), or one the game cannot
        have (e.g. perfect beyond small games).
    """
    from azjax import agent_specs, games

    if text is None:
        return None
    specs = tuple(spec.strip() for spec in text.split(",") if spec.strip())
    if not specs:
        raise agent_specs.SpecError("--eval-opponents names no agent: give e.g. random,onestep,mcts:100")
    for spec in specs:
        if spec not in ("random", "onestep", "perfect") and not spec.startswith("mcts:"):
            raise agent_specs.SpecError(f"--eval-opponents: {spec!r} is not a baseline; give random, onestep, "
                                        "mcts:N or perfect, comma-separated")
    game = games.make(game_name)
    for spec in specs:
        agent_specs.make_bot(spec, game)  # a malformed spec says so now, not at the first evaluation
    return specs


def config_from_args(args: argparse.Namespace):
    """The config `azjax train` runs with, and a sentence that says where it came from: --config's file, else the
    run's own (its config.json, else its latest checkpoint's) when --out holds one and neither --game nor --preset
    is given, else the preset; then the --SECTION.FIELD, --iterations and --seconds overrides, and for a new run
    from a preset, the fit to --init-from's network.

    Raises:
      ConfigError: a --config that cannot be read, an override that does not fit, an unknown observation version.
    """
    from azjax import checkpointing, games, presets, rundir
    from azjax import config as config_lib

    run_config = None if args.out is None else args.out / rundir.CONFIG_FILE
    latest = None if args.out is None else checkpointing.latest_iteration(args.out)
    game, preset = args.game or "tic_tac_toe", args.preset or "cpu"
    from_preset = False
    if args.config is not None:
        origin = f"from {args.config}"
        config = _read_config_file(args.config)
    elif args.game is None and args.preset is None and run_config is not None and run_config.is_file():
        config = rundir.read_config(args.out)  # resuming: the run's own settings, then any overrides
        origin = f"the run's own, from {run_config}"
    elif args.game is None and args.preset is None and latest is not None:
        config = checkpointing.CheckpointManager(args.out).config(latest)  # config.json lost: the checkpoint's
        origin = f"the run's own, from its checkpoint of iteration {latest} ({run_config} is missing)"
    else:
        config = presets.get_config(game, preset)
        origin = presets.preset_origin(game, preset)
        from_preset = True
    overrides = _overrides(args)
    if overrides:
        origin += f", with {', '.join(f'{name}={value}' for name, value in overrides.items())}"
    if getattr(args, "seconds", None) is not None and args.iterations is None and latest is None:
        # A new run given a time budget trains for that time: the preset's (or file's) iterations do not cut it short.
        overrides["num_iterations"] = config_lib.TIME_BUDGET_ITERATIONS
        origin += f", for {args.seconds:g} s (--seconds; --iterations would cap it)"
    config = config_lib.with_overrides(config, overrides)
    if config.observation_version is not None:
        try:
            config.make_game()
        except games.ObservationVersionError as error:
            raise config_lib.ConfigError(f"--observation_version {config.observation_version}: {error}") from None
    if from_preset and getattr(args, "init_from", None) is not None:  # a new run, fitted to its source
        from azjax import exports, warm_start

        config, changes = warm_start.warm_start_config(config, exports.restore_config(args.init_from),
                                                       keep=frozenset(overrides))
        if changes:
            origin += f"; for a start from {args.init_from}: {', '.join(changes)}"
    return config, origin


def _read_config_file(path: Path):
    """--config's file as a config; ConfigError, naming the file, if it cannot be read or is no config."""
    from azjax import config as config_lib

    if not path.is_file():
        raise config_lib.ConfigError(f"--config {path}: no such file")
    try:
        return config_lib.from_json(path.read_text())
    except (OSError, UnicodeDecodeError) as error:
        raise config_lib.ConfigError(f"--config {path}: cannot read it ({error})") from None
    except config_lib.ConfigError as error:
        raise config_lib.ConfigError(f"--config {path}: {error}") from None


def _overrides(args: argparse.Namespace) -> dict:
    """The --SECTION.FIELD options given, and --iterations, by config field path."""
    from azjax import games

    overrides = {
        key.split(":", 1)[1]: value
        for key, value in vars(args).items()
        if key.startswith("config:") and value is not None
    }
    if args.iterations is not None:
        overrides["num_iterations"] = args.iterations
    if overrides.get("network.module"):  # recorded so that it opens from any directory, as --game's source
        overrides["network.module"] = games.canonical(str(overrides["network.module"]))
    return overrides


def _file_name(game: str) -> str:
    """A game's name as a run directory's: a source's module ("hex5" for "path/hex5.py:make_hex5"), no ':'."""
    from azjax import games

    if games.is_source(game):
        return Path(game.rsplit(":", 1)[0]).name.removesuffix(".py").replace(".", "-")
    return game.replace(":", "-")
