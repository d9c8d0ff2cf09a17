"""Agent specs: the command line's names for agents ("random", "mcts:400", "az:RUN_DIR:64:reuse",
"pretrained:connect_four", a run directory, a game's name), read into bots (`make_bot`), named (`bot_name`) and
traced to their game (`game_of_spec`, `shipped_game`) without loading them. `SPEC_HELP` lists the forms.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from azjax import pretrained
from azjax import solver as solver_lib
from azjax.agent import Agent, load_agent
from azjax.bots import Bot, oneply_bot, onestep_bot, random_bot
from azjax.games import Game
from azjax.games import names as game_names
from azjax.games.pgx_chance import oneply_score
from azjax.network_bots import alphazero_bot, greedy_bot
from azjax.perfect import is_pig, perfect_bot, pig_hold_bot
from azjax.uct import uct_bot

SPEC_HELP = (
    "random, onestep, mcts:N (UCT with N simulations), perfect (small games such as tic_tac_toe, and pig), "
    "hold:N (pig: rolls until the turn's total reaches N), oneply (pgx:2048's and pgx:backgammon's one-ply greedy "
    "player: most points merged, best pip count), "
    "greedy:RUN_DIR (the network, no search), az:RUN_DIR[:SIMS][:reuse|:fresh] or just RUN_DIR (the network with "
    "search; :reuse keeps its search tree from move to move, :fresh does not; default: reuse with PUCT only); "
    "RUN_DIR is a run directory, an export, or pretrained:GAME (the agent shipped for GAME; `azjax pretrained` "
    "lists them), and a game's name alone means its shipped agent"
)
TREE_SUFFIXES = {":reuse": True, ":fresh": False}  # az:RUN[:SIMS]<suffix>: tree reuse on or off
BASELINES = ("random", "onestep", "perfect", "oneply")  # the specs of one word that name no run (besides mcts:N)


class SpecError(ValueError):
    """An agent spec cannot be read or used; the message is one line that says why."""


def _positive_int(text: str, spec: str, what: str = "simulations") -> int:
    if not text.isdecimal() or int(text) < 1:
        raise SpecError(f"agent {spec!r}: {text!r} is not a whole number of {what} >= 1")
    return int(text)


def _load(run_dir: str, spec: str) -> Agent:
    from azjax import rundir

    if not run_dir:
        raise SpecError(f"agent {spec!r}: no run directory given")
    shipped = shipped_game(run_dir)
    if shipped is not None:
        run_dir = pretrained.PREFIX + shipped
    try:
        return load_agent(run_dir)
    except rundir.CheckpointError as error:
        raise SpecError(f"agent {spec!r}: {error}") from None


def make_bot(
    spec: str,
    game: Game | None,
    *,
    num_simulations: int | None = None,
    policy: str | None = None,
    solution: solver_lib.Solution | None = None,
) -> Bot:
    """A bot from a command-line spec (see `SPEC_HELP`); the bot's name is the spec.

    Args:
      spec: e.g. "random", "mcts:200", "az:runs/ttt:64", "az:runs/ttt:64:reuse", "az:runs/ttt:fresh", "runs/ttt".
      game: the game to play; None to take it from a run directory (then `spec` must name one).
      num_simulations: simulations for a trained agent whose spec gives none (default: the run's).
      policy: "gumbel" or "puct" for a trained agent's search (default: the run's).
      solution: a ready solution for "perfect" (else it is solved here).
    Raises:
      SpecError: a malformed spec, a missing run directory, a run of another game, or an impossible agent.
    """
    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    name = bot_name(spec)
    if spec in BASELINES or kind in ("mcts", "hold"):
        return _baseline_bot(spec, game, solution)
    if kind == "greedy":
        agent = _load(rest, spec)
        bot = greedy_bot(agent, name=name)
    elif kind == "az":
        reuse, run_dir = _tree_suffix(rest)
        sims = num_simulations
        head, _, tail = run_dir.rpartition(":")
        if head and tail.isdecimal():
            run_dir, sims = head, _positive_int(tail, spec)
        agent = _load(run_dir, spec)
        bot = alphazero_bot(agent, num_simulations=sims, policy=policy, reuse_tree=reuse, name=name)
    elif shipped_game(spec) is not None or Path(spec).is_dir() or _looks_like_a_path(spec):
        agent = _load(spec, spec)  # a path that does not exist says so (not that it is no agent name)
        bot = alphazero_bot(agent, num_simulations=num_simulations, policy=policy, name=name)
    else:
        raise SpecError(f"cannot read agent {spec!r}: it is no agent name and no directory; expected {SPEC_HELP}")
    if game is not None and agent.game.name != game.name:
        raise SpecError(f"agent {spec!r} was trained on {agent.game.name}, not {game.name}")
    return bot


def _baseline_bot(spec: str, game: Game | None, solution: solver_lib.Solution | None) -> Bot:
    """The bot of a spec without a run directory: one of `BASELINES`, "mcts:N" or (Pig) "hold:N"."""
    if game is None:
        raise SpecError(f"agent {spec!r}: which game? (give --game)")
    if spec == "random":
        return random_bot()
    if spec.startswith("hold:"):
        if not is_pig(game):
            raise SpecError(f"agent {spec!r} is a player of pig (hold once the turn's total reaches N), not of "
                            f"{game.name}")
        return pig_hold_bot(_positive_int(spec.partition(":")[2], spec, "points"), name=spec)
    if spec == "oneply":
        try:
            return oneply_bot(game, oneply_score(game))
        except ValueError as error:
            raise SpecError(f"agent 'oneply': {error}") from None
    if game.has_chance and spec != "perfect":
        raise SpecError(f"agent {spec!r} cannot play {game.name}, a game with chance: it looks ahead through "
                        "game.step, which would show it the dice before they are thrown; play random, perfect "
                        "(where the game is solved), oneply (pgx:2048, pgx:backgammon) or a trained agent")
    if spec == "onestep":
        return onestep_bot(game)
    if spec == "perfect":
        try:
            return perfect_bot(game, solution)
        except ValueError as error:
            raise SpecError(f"agent 'perfect': {error}") from None
    return dataclasses.replace(uct_bot(game, _positive_int(spec.partition(":")[2], spec)), name=spec)


def shipped_game(spec: str) -> str | None:
    """The game whose shipped agent `spec` names: "pretrained:GAME", or a registered game's name where no directory
    of that name exists; None for any other spec. (Whether an agent ships for that game is checked on loading.)"""
    if pretrained.is_pretrained(spec):
        return spec.removeprefix(pretrained.PREFIX)
    if spec in game_names() and not Path(spec).exists():
        return spec
    return None


def bot_name(spec: str) -> str:
    """The name the bot of `spec` goes by: the spec, with a game's name (which loads that game's shipped agent)
    written as the agent it loads: "connect_four" -> "pretrained:connect_four", "greedy:connect_four" ->
    "greedy:pretrained:connect_four", "az:connect_four:64" -> "az:pretrained:connect_four:64"."""
    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    if kind == "greedy":
        return f"greedy:{_shipped_name(rest)}"
    if kind == "az":
        _, run_dir = _tree_suffix(rest)
        suffix = rest.removeprefix(run_dir)
        head, _, tail = run_dir.rpartition(":")
        if head and tail.isdecimal():
            run_dir, suffix = head, f":{tail}{suffix}"
        return f"az:{_shipped_name(run_dir)}{suffix}"
    return _shipped_name(spec)


def _shipped_name(run_dir: str) -> str:
    shipped = shipped_game(run_dir)
    return run_dir if shipped is None else pretrained.PREFIX + shipped


def _looks_like_a_path(spec: str) -> bool:
    """A spec that can only mean a directory: it has a path separator or starts like a path (., ~)."""
    return "/" in spec or os.sep in spec or spec.startswith((".", "~"))


def _tree_suffix(rest: str) -> tuple[bool | None, str]:
    """An az spec's tree-reuse suffix (True, False, or None: none given) and the rest without it."""
    for suffix, reuse in TREE_SUFFIXES.items():
        if rest.endswith(suffix):
            return reuse, rest.removesuffix(suffix)
    return None, rest


def game_of_spec(spec: str) -> str | None:
    """The game a spec's run directory was trained on, or None for a spec without one (reads config.json only)."""
    from azjax import exports, rundir

    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    if kind in ("greedy", "az"):
        rest = _tree_suffix(rest)[1] if kind == "az" else rest
        head, _, tail = rest.rpartition(":")
        run_dir = head if head and tail.isdecimal() and kind == "az" else rest
    elif spec not in BASELINES and kind not in ("mcts", "hold") and (
            Path(spec).is_dir() or shipped_game(spec) is not None):
        run_dir = spec
    else:
        return None
    if not run_dir:
        return None
    shipped = shipped_game(run_dir)
    if shipped is not None:
        if shipped not in pretrained.names():
            raise SpecError(f"agent {spec!r}: {pretrained.missing_message(shipped)}")
        return shipped
    try:
        if (Path(run_dir) / rundir.CONFIG_FILE).is_file():
            return rundir.read_config(Path(run_dir)).game
        return exports.restore_config(Path(run_dir)).game  # e.g. RUN/checkpoints/<iteration>
    except rundir.CheckpointError as error:
        raise SpecError(f"agent {spec!r}: {error}") from None
