"""The arena: matches between two agents on the devices, many games in parallel, compiled once per pairing.

    result = play(key, game, bot_a, bot_b, num_games=400, opening_moves=2)
    print(results.format_match(result))     # W/D/L of bot_a, score with a 95% CI, Elo difference

A match here is the core's `matches.play_match` (the seats, the pairs of games, each agent's batch, tree reuse),
started from distinct openings (`openings`), split over a mesh's devices, checked against their memory before it
runs and counted into a `results.MatchResult`; `progress.MatchProgress` shows it as it plays, `round_robin` plays
every pairing of several agents and fits their Elo.

With a mesh, each device draws the openings of its own games, distinct among them but not from other devices'
(`run_games`).
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, PartitionSpec

from azjax import memory
from azjax.bots import AgentFn, Bot, random_agent
from azjax.games import Game
from azjax.matches import Games, Player, play_match
from azjax.openings import distinct_openings, state_hashes
from azjax.parallel import DATA_AXIS
from azjax.perfect import solve_timeouts_raised
from azjax.progress import MatchProgress
from azjax.results import MatchResult, summarize
from azjax.text import counted

# A match whose game may last this many moves or more plays its last games in a smaller batch (`run_games`'s
# `compact`): Brandub (200) is such a game, Connect Four (42) and Othello (60) are not.
COMPACT_MIN_LENGTH = 100


def run_games(
    key: jax.Array,
    game: Game,
    agent_a: Player,
    agent_b: Player,
    num_games: int,
    *,
    opening_moves: int = 0,
    opening_agent: AgentFn = random_agent,
    mesh: Mesh | None = None,
    compact: bool | None = None,
    progress: MatchProgress | None = None,
) -> Games:
    """Plays `num_games` (even) games in parallel, A as player 0 in the first half and player 1 in the second;
    game i and game i + num_games / 2 (a pair) start from the same opening of `opening_moves` moves by
    `opening_agent`, distinct from the other pairs' where the game has enough (`openings`). Each agent is asked
    for moves on a batch of num_games / 2 states, one per pair (`matches.play_match`). Pure and un-jitted (jit it,
    or call `play_games`, or `play` for bots). The loop ends when every game has. `Games.start` holds the hash of
    each game's position after its opening (`openings.state_hashes`).

    With a `mesh` (e.g. `azjax.parallel.mesh_for(num_games // 2)`), each of its D devices plays num_games / D
    of the games (an even number), all alike but with its own random keys, and nothing passes between the devices
    until the results are joined (games from device d fill block d of each output). The results then differ from
    a one-device run's by chance alone, and a device never waits on another's slowest game or search. One limit:
    each device draws its own openings, distinct among its games but not from the other devices', so with more
    openings asked for than a device's share an opening may repeat across devices (where deterministic agents
    then replay a game, `results.count_distinct` counts it once, so the intervals stay honest).

    `compact`: play the last games in a smaller batch (`matches.play_match`'s `compact`). None (the default): on
    for games of `COMPACT_MIN_LENGTH` moves or more, with at least 8 games per device.

    `progress` (a `MatchProgress`) is told after every step how many games are still playing on each device
    (a host callback; it does not change the games).
    """
    if num_games < 2 or num_games % 2:
        raise ValueError(f"num_games must be even and >= 2 (half with each seat), got {num_games}")
    half = num_games // 2
    if mesh is not None:
        if half % mesh.size:
            raise ValueError(f"num_games / 2 ({half}) must be a multiple of the mesh's {mesh.size} devices")
        return _on_each_device(key, game, agent_a, agent_b, num_games // mesh.size, opening_moves, opening_agent,
                               mesh, compact, progress)
    return _run_local(key, game, agent_a, agent_b, num_games, opening_moves, opening_agent, compact, progress, 0)


def _run_local(key: jax.Array, game: Game, agent_a: Player, agent_b: Player, num_games: int, opening_moves: int,
               opening_agent: AgentFn, compact: bool | None, progress: MatchProgress | None,
               device: jax.Array | int) -> Games:
    """`run_games` on one device (`device`: its index, for `progress`): the openings, then the match from them."""
    half = num_games // 2
    compact_tail = compact if compact is not None else game.max_length >= COMPACT_MIN_LENGTH and num_games >= 8
    opening_key, play_key = jax.random.split(key)
    if opening_moves > 0:
        states, opening = distinct_openings(opening_key, game, half, opening_moves, opening_agent)
    else:
        states, opening = jax.vmap(game.init)(jax.random.split(opening_key, half)), jnp.zeros((half, 0), jnp.int32)
    moves = jnp.full((half, game.max_length), -1, jnp.int32).at[:, : opening.shape[1]].set(opening)
    states, moves = jax.tree.map(lambda x: jnp.concatenate([x, x]), (states, moves))
    on_step = None if progress is None else functools.partial(_report, progress=progress, device=device)
    games = play_match(play_key, states, game=game, agent_a=agent_a, agent_b=agent_b, moves=moves,
                       compact=compact_tail, on_step=on_step)
    return games.replace(start=state_hashes(states))


def _report(num_steps: jax.Array, num_live: jax.Array, *, progress: MatchProgress, device: jax.Array | int) -> None:
    """Tells `progress`, on the host, the games still playing on `device` after step `num_steps`."""
    jax.debug.callback(progress.update, device, num_steps, num_live)


def _on_each_device(
    key: jax.Array,
    game: Game,
    agent_a: Player,
    agent_b: Player,
    games_per_device: int,
    opening_moves: int,
    opening_agent: AgentFn,
    mesh: Mesh,
    compact: bool | None,
    progress: MatchProgress | None = None,
) -> Games:
    """`run_games` on every device of `mesh` independently (`shard_map`), `games_per_device` games each."""

    def local(key: jax.Array) -> Games:
        device = jax.lax.axis_index(DATA_AXIS)
        return _run_local(jax.random.fold_in(key, device), game, agent_a, agent_b, games_per_device, opening_moves,
                          opening_agent, compact, progress, device)

    # check_vma=False: games and agents are written for one device and need not mark what varies across devices.
    return jax.shard_map(
        local, mesh=mesh, in_specs=PartitionSpec(), out_specs=PartitionSpec(DATA_AXIS), check_vma=False
    )(key)


@functools.partial(
    jax.jit,
    static_argnames=("game", "agent_a", "agent_b", "num_games", "opening_moves", "opening_agent", "mesh", "compact",
                     "progress"),
)
def play_games(
    key: jax.Array,
    game: Game,
    agent_a: Player,
    agent_b: Player,
    num_games: int,
    *,
    opening_moves: int = 0,
    opening_agent: AgentFn = random_agent,
    mesh: Mesh | None = None,
    compact: bool | None = None,
    progress: MatchProgress | None = None,
) -> Games:
    """`run_games`, jitted: compiled once per game, pair of agents (compared as Python objects: pass the same
    functions again to reuse the compilation) and settings; only `key` is traced."""
    return run_games(key, game, agent_a, agent_b, num_games, opening_moves=opening_moves,
                     opening_agent=opening_agent, mesh=mesh, compact=compact, progress=progress)


_compiled_matches: collections.OrderedDict = collections.OrderedDict()  # newest last, at most MAX_COMPILED_MATCHES
MAX_COMPILED_MATCHES = 16


def play_games_within_memory(key: jax.Array, game: Game, agent_a: Player, agent_b: Player, num_games: int,
                             **options: Any) -> Games:
    """`play_games` with its keyword `options`, compiled ahead and first checked against the devices' memory
    (`memory.check_fits`), so that a match too large for them is refused in one line before it runs; compiled
    once per game, pair of agents and options (the last `MAX_COMPILED_MATCHES` are kept).

    Raises:
      memory.MemoryBudgetError: the match would need more memory than there is; nothing ran.
    """
    signature = (game, agent_a, agent_b, num_games, *sorted(options.items()), key.shape, key.dtype)
    compiled = _compiled_matches.pop(signature, None)
    if compiled is None:
        mesh = options.get("mesh")
        per_device = num_games // (mesh.size if mesh is not None else 1)
        compiled = memory.compile_within_memory(
            play_games.lower(key, game, agent_a, agent_b, num_games, **options),
            devices=list(mesh.devices.flat) if mesh is not None else None,
            what=f"the match {agent_name(agent_a)} against {agent_name(agent_b)} ({counted(per_device, 'game')} of "
                 f"{game.name} at once per device)",
            lower_it="fewer games at once (azjax eval --games), or lighter agents")
    _compiled_matches[signature] = compiled
    while len(_compiled_matches) > MAX_COMPILED_MATCHES:
        _compiled_matches.popitem(last=False)
    return compiled(key)


def agent_name(agent: Player) -> str:
    """A bot's name, a bound `Bot.act`'s bot's, else the function's name."""
    owner = getattr(agent, "__self__", agent)
    return getattr(owner, "name", None) or getattr(agent, "__name__", None) or "an agent"


def play(
    key: jax.Array,
    game: Game,
    bot_a: Bot,
    bot_b: Bot,
    num_games: int,
    *,
    opening_moves: int = 0,
    opening_agent: AgentFn = random_agent,
    mesh: Mesh | None = None,
    on_games: Callable[[Games], None] | None = None,
    progress: MatchProgress | None = None,
) -> MatchResult:
    """`bot_a` against `bot_b`: `num_games` games (even; half in each seat), compiled once per pair of bots;
    with a `mesh`, split over its devices (see `run_games`). `on_games` is called with the games played, before
    they are counted (e.g. to record them: `results.game_records`); `progress` shows the match as it plays.

    Raises:
      SolveTimeout: Connect Four's perfect player gave up on a position (see `perfect.perfect_bot`).
    """
    with solve_timeouts_raised():
        extra = {} if progress is None else {"progress": progress}  # the compilation without it is kept as it was
        if progress is not None:
            progress.start(f"{bot_a.name} against {bot_b.name}", num_games, 1 if mesh is None else mesh.size)
        try:
            games = play_games_within_memory(key, game, bot_a, bot_b, num_games, opening_moves=opening_moves,
                                             opening_agent=opening_agent, mesh=mesh, **extra)
        finally:
            if progress is not None:
                progress.done()
        if on_games is not None:
            on_games(games)
        return summarize(games, bot_a.name, bot_b.name)
