"""What several commands share: option groups and their help texts, the compilation cache, joining the processes
of a multi-process run, and the game that a list of agents plays. Like the commands, it imports only the standard
library at import time: azjax's modules are imported where they are used."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

COMPILE_CACHE_ENV = "AZJAX_COMPILE_CACHE"  # a directory for jax's compilation cache, or "off"

GAME_HELP = (
    "a registered name (azjax train --list-games lists them), pgx:<env_id> for a pgx environment, or a game of "
    "your own as MODULE:FACTORY, e.g. hex5:make_hex5 (make_hex5 in ./hex5.py, or hex5 on PYTHONPATH or installed) or "
    "path/to/hex5.py:make_hex5: any other name containing ':' is MODULE:FACTORY; the run records it, so later "
    "commands on the run find the game by themselves"
)

AGENT_HELP = (
    "random | onestep (takes a win, blocks a loss in one) | mcts:N (UCT with random rollouts, N simulations) | "
    "perfect (exact: tic_tac_toe, pig; connect_four from 10 stones on) | hold:N (pig: rolls until the turn's total "
    "reaches N, then holds) | oneply (pgx:2048, pgx:backgammon: the one-ply greedy player, most points merged, "
    "best pip count) | greedy:RUN_DIR (the network, no search) | "
    "az:RUN_DIR[:SIMS][:reuse|:fresh] or RUN_DIR "
    "(the network with search; :reuse keeps its search tree from move to move, following both sides' moves, "
    ":fresh searches every position anew; default: reuse with PUCT, where it wins at equal time, not with Gumbel)"
)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default unless it is None or its help already says what the default is."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def add_compile_cache_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-compile-cache", action="store_true", help="do not keep compiled programs between "
                        "runs (by default jax's persistent compilation cache in ~/.cache/azjax/jax, or "
                        f"${COMPILE_CACHE_ENV}, makes a second run start faster; {COMPILE_CACHE_ENV}=off also "
                        "turns it off)")


def use_compile_cache(disabled: bool = False) -> Path | None:
    """Turns on jax's persistent compilation cache, so that a second run of a command skips most compilation:
    in $AZJAX_COMPILE_CACHE if set, else JAX_COMPILATION_CACHE_DIR if set, else ~/.cache/azjax/jax (under
    $XDG_CACHE_HOME if set). Off with `disabled` (--no-compile-cache) or AZJAX_COMPILE_CACHE=off. Returns the
    directory, or None when off."""
    setting = os.environ.get(COMPILE_CACHE_ENV, "").strip()
    if disabled or setting.lower() in ("off", "0", "false", "no"):
        return None
    import jax

    if setting:
        directory = Path(setting).expanduser()
    elif user_choice := jax.config.jax_compilation_cache_dir:  # type: ignore[attr-defined]  # a runtime flag
        return Path(user_choice)  # the user's own choice, through jax's variable
    else:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        directory = Path(base) / "azjax" / "jax"
    jax.config.update("jax_compilation_cache_dir", str(directory))
    return directory


def add_distributed_options(parser: argparse.ArgumentParser, how: str) -> None:
    group = parser.add_argument_group(
        "several processes", "one job over several hosts (or one process per GPU): start the same command in every "
        "process with these three (jax.distributed); on SLURM, Open MPI and TPU pod slices jax finds them itself. "
        + how[0].upper() + how[1:])
    group.add_argument("--coordinator-address", metavar="HOST:PORT", help="process 0's address, reachable by all")
    group.add_argument("--num-processes", type=int, metavar="N", help="how many processes take part")
    group.add_argument("--process-id", type=int, metavar="I", help="this process's id, 0 .. N - 1")
    group.add_argument("--distributed-timeout", type=int, default=300, metavar="SECONDS", help="give up on "
                       "reaching the coordinator, or on a process that stopped answering, after this long")


def join_processes(args: argparse.Namespace, command: str) -> int | None:
    """Joins the processes of a multi-process run; an exit status if that failed, else None."""
    from azjax import parallel

    try:
        parallel.initialize_distributed(args.coordinator_address, args.num_processes, args.process_id,
                                        timeout_s=args.distributed_timeout, command=f"azjax {command}")
    except ValueError as error:
        print(f"azjax {command}: error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # noqa: BLE001 - jax raises several types when the coordinator is unreachable
        print(f"azjax {command}: error: could not join the other processes through the coordinator at "
              f"{args.coordinator_address or '(found by jax)'} within {args.distributed_timeout} s: "
              f"{str(error).splitlines()[0] if str(error) else type(error).__name__}; check that process 0 runs "
              "and that every process can reach its address and port", file=sys.stderr)
        return 1
    return None


def game_for(specs: list[str], requested: str | None):
    """The game the agents play: --game, else the one their run directories were trained on."""
    from azjax import agent_specs, games

    trained = {}
    for spec in specs:
        name = agent_specs.game_of_spec(spec)
        if name is not None:
            trained[spec] = name
    if requested is not None:
        requested = games.canonical(requested)
        games.check_known(requested)
    if len(set(trained.values())) > 1:
        listed = ", ".join(f"{spec} ({name})" for spec, name in trained.items())
        raise agent_specs.SpecError(f"the agents were trained on different games: {listed}")
    return games.make(requested or next(iter(trained.values()), "tic_tac_toe"))


def check_connect_four_perfect(game, specs: list[str], opening_moves: int) -> None:
    """Connect Four's perfect player answers from CONNECT_FOUR_PERFECT_MIN_STONES stones on: say so up front."""
    from azjax import agent_specs, perfect

    minimum = perfect.CONNECT_FOUR_PERFECT_MIN_STONES
    if game.name == "connect_four" and "perfect" in [spec.strip() for spec in specs] and opening_moves < minimum:
        raise agent_specs.SpecError(
            f"Connect Four's perfect player answers positions of {minimum} or more stones in about a second on "
            f"average, earlier ones take minutes: give --opening-moves {minimum} (or more)"
        )
