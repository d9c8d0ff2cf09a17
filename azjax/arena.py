"""The arena: many games in parallel between two agents, with confidence intervals and Elo; round-robin tables.

    result = play(key, game, bot_a, bot_b, num_games=400, opening_moves=2)
    print(format_match(result))             # W/D/L of bot_a, score with a 95% CI, Elo difference
    table = round_robin(key, game, [random_bot(), onestep_bot(game), uct_bot(game, 100)], num_games=200)
    print(format_table(table))              # every pairing, then Bradley-Terry Elo (random = 0)

Seats. Half the games have agent A as player 0 (moving first), half as player 1, and the two games of a pair
start from the same opening, so neither agent gains from the draw of openings or seats.

Openings. Each pair of games starts after `opening_moves` moves played by `opening_agent` (default: uniformly
random), so that deterministic agents do not replay one game. The openings of a match are distinct wherever the
game has enough of them: `OPENING_CANDIDATES` times as many are played as needed and repeats are dropped first.
Openings are told apart by the position they reach (every leaf of the game's state), not by their moves: two move
orders that reach one position are one opening (tic-tac-toe has 72 openings of 2 moves and 252 of 3, Connect
Four 49 of 2; with more pairs than openings some must repeat). An opening move of `opening_agent` that would end
the game is replaced by a uniformly random move that does not (`non_ending_moves`), so the default random
openings are uniformly random among the moves that keep the game going; only where every legal move ends the game
does an opening stop shorter. With an exact solution at hand, `opening_agent` can be the perfect player, whose
moves are random among optimal ones: the openings then vary but never decide the game. With a mesh, each device
draws the openings of its own games, distinct among them but not from other devices' (`run_games`).

Statistics. A game scores 1 for a win, 1/2 for a draw, 0 for a loss. Two deterministic agents replay the same
game from the same position and seat, and a copy is no new evidence: every game's moves are recorded
(`Games.moves`, with a hash of the position it started from after its opening, `Games.start`) and
`MatchResult.distinct_games` counts the different ones. The score is over all games; its 95%
interval is Wilson's score interval for a proportion over the distinct games (draws counted as half a win), and
the Elo fit weighs each pairing by its distinct games. Draws make the real spread smaller than a proportion's, so
the interval is conservative. The Elo difference is -400 log10(1/score - 1), the
logistic Elo model's rating gap at that expected score; its interval maps the score interval's ends. A round robin
is fitted by maximum likelihood under the Bradley-Terry (logistic Elo) model, draws counted as half a win and
half a loss, with the first `random` agent (else the first agent) anchored at 0; see `azjax.ratings.fit_elo`
(the intervals and the Elo model live in `azjax.ratings`).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax.sharding import Mesh, PartitionSpec

from azjax import memory, parallel
from azjax.bots import Bot, Memory, random_analysis, solve_timeouts_raised
from azjax.games import Game, State, lookahead
from azjax.parallel import DATA_AXIS
from azjax.ratings import Z_95, EloFit, elo_from_score, fit_elo, wilson_interval
from azjax.ratings import expected_score as expected_score  # re-exported: azjax.arena was its first home
from azjax.solver import encode_states
from azjax.text import counted

AgentFn = Callable[[jax.Array, State], jax.Array]  # (key, states [B]) -> actions [B] int32
Player = AgentFn | Bot  # a bot with a memory (tree reuse) keeps it in a match; any other plays by its moves alone

OPENING_CANDIDATES = 4  # openings played per pair of games, among which distinct ones are chosen


def random_agent(key: jax.Array, states: State) -> jax.Array:
    """The uniformly random agent: a legal move [B] drawn uniformly for each state."""
    return random_analysis(key, states).action


class Games(struct.PyTreeNode):
    """The outcome of a batch of N games between agents A and B, from A's side."""

    outcome: jax.Array  # [N] float32: +1 A won, 0 draw, -1 A lost
    seat: jax.Array  # [N] int32: A's player id (0 = A moved first)
    length: jax.Array  # [N] int32: moves played, the opening included
    moves: jax.Array  # [N, game.max_length] int32: the actions played in order, the opening's first; -1 after
    opening_length: jax.Array  # [N] int32: how many of `moves` are the opening's
    start: jax.Array  # [N, 2] uint32: a 64-bit hash of the state after the opening (`state_hashes`): games that
    #   started from one position have the same hash, whatever moves led there


class _Match(struct.PyTreeNode):
    states: State  # [N]
    returns: jax.Array  # [N, 2] float32, rewards summed per player id
    length: jax.Array  # [N] int32
    moves: jax.Array  # [N, max_length] int32
    num_steps: jax.Array  # [] int32
    memory_a: Any = None  # [N]: agent A's memory of each game (a bot with a `Memory`), else None
    memory_b: Any = None


def play_opening(
    key: jax.Array, game: Game, states: State, num_moves: jax.Array, max_moves: int, agent: AgentFn = random_agent
) -> State:
    """Lets `agent` play `num_moves` (int32 [B], each at most the static `max_moves`) moves from each state.

    A move of `agent` that would end the game is replaced by a uniformly random move that does not
    (`non_ending_moves`), so a non-terminal state stays non-terminal; where every legal move would end it, the
    opening stops there, shorter. Batched.
    """
    return _opening(key, game, states, num_moves, max_moves, agent)[0]


def non_ending_moves(game: Game, states: State) -> jax.Array:
    """bool [B, A]: the legal moves of each state after which the game goes on (none for a terminal state).

    Steps every legal move of every state a few at a time (`games.lookahead`), so that a game with many actions
    does not hold B * A states at once. Batched, jittable; the one rule for the openings of the arena and of
    `azjax play`.
    """
    return states.legal_action_mask & ~lookahead.ending_moves(game, states)


def _opening(
    key: jax.Array, game: Game, states: State, num_moves: jax.Array, max_moves: int, agent: AgentFn
) -> tuple[State, jax.Array]:
    """`play_opening`, also returning the moves played in each game: int32 [B, max_moves], in order, -1 after."""

    def body(i: int, carry: tuple[State, jax.Array]) -> tuple[State, jax.Array]:
        states, moves = carry
        agent_key, instead_key = jax.random.split(jax.random.fold_in(key, i))
        wanted = (i < num_moves) & ~states.terminated
        actions = agent(agent_key, states)
        moved = jax.vmap(game.step)(states, actions)
        # Stepping every action costs A steps per state: only when some move would end a game.
        actions, moved = jax.lax.cond(
            jnp.any(wanted & moved.terminated),
            functools.partial(_instead_of_ending, instead_key, game),
            lambda states, actions, moved: (actions, moved),
            states, actions, moved,
        )
        play = wanted & ~moved.terminated  # still terminal: every legal move ends the game
        states = jax.tree.map(lambda new, old: jnp.where(_expand_to(play, new), new, old), moved, states)
        return states, _record(moves, actions, play)

    return jax.lax.fori_loop(0, max_moves, body, (states, jnp.full((*num_moves.shape, max_moves), -1, jnp.int32)))


def _instead_of_ending(key: jax.Array, game: Game, states: State, actions: jax.Array, moved: State
                       ) -> tuple[jax.Array, State]:
    """`actions` [B], where one ended its game (`moved`, the states after them) a uniformly random move that does
    not instead; and the states after the moves chosen. Where every legal move ends the game, the replacement
    ends it too (the caller does not play it)."""
    keep_going = non_ending_moves(game, states)
    other = jax.random.categorical(key, jnp.where(keep_going, 0.0, -jnp.inf)).astype(jnp.int32)
    chosen = jnp.where(moved.terminated, other, actions)
    return chosen, jax.vmap(game.step)(states, chosen)


def _record(moves: jax.Array, actions: jax.Array, played: jax.Array) -> jax.Array:
    """Appends `actions` [B] to the rows of `moves` [B, L] (-1 after the last move) where `played`."""
    length = jnp.sum(moves >= 0, axis=1)
    column = jnp.where(played, length, moves.shape[1])  # out of bounds: dropped
    return moves.at[jnp.arange(moves.shape[0]), column].set(actions, mode="drop")


def _distinct_openings(key: jax.Array, game: Game, num_openings: int, num_moves: int, agent: AgentFn
                       ) -> tuple[State, jax.Array]:
    """`num_openings` openings of `num_moves` moves, distinct in the position they reach where the game has
    enough: OPENING_CANDIDATES times as many are played, and the first copy of each position comes before any
    repeat (in a random order)."""
    init_key, opening_key, order_key = jax.random.split(key, 3)
    num_candidates = OPENING_CANDIDATES * num_openings
    states = jax.vmap(game.init)(jax.random.split(init_key, num_candidates))
    states, moves = _opening(opening_key, game, states, jnp.full(num_candidates, num_moves, jnp.int32), num_moves,
                             agent)
    rows = encode_states(states)  # [C, L]: equal iff the states are
    hashes = _row_hashes(rows)
    by_hash = jnp.lexsort((hashes[:, 1], hashes[:, 0]))  # copies are neighbours (rows too long to sort by)
    repeat = jnp.zeros(num_candidates, bool).at[by_hash[1:]].set(
        jnp.all(rows[by_hash[1:]] == rows[by_hash[:-1]], axis=1))
    chosen = jnp.lexsort((jax.random.uniform(order_key, (num_candidates,)), repeat))[:num_openings]
    return jax.tree.map(lambda x: x[chosen], states), moves[chosen]


def state_hashes(states: State) -> jax.Array:
    """uint32 [B, 2]: a 64-bit hash of each state of a batch, over every leaf (`solver.encode_states`). Equal
    states hash alike; two different ones collide with a chance of the order of 2^-64. Jittable, the same on
    every device (so games from several devices compare)."""
    return _row_hashes(encode_states(states))


def _row_hashes(rows: jax.Array) -> jax.Array:
    """uint32 [B, 2]: two 32-bit hashes of each int32 row [B, L], each a sum of mixed (value, column) pairs."""
    values = jax.lax.bitcast_convert_type(rows, jnp.uint32)
    columns = jnp.arange(rows.shape[1], dtype=jnp.uint32)
    return jnp.stack([jnp.sum(_mix(values ^ _mix(columns * jnp.uint32(2) + jnp.uint32(seed))), axis=1,
                              dtype=jnp.uint32)
                      for seed in (0x9E3779B9, 0x7F4A7C15)], axis=1)


def _mix(x: jax.Array) -> jax.Array:
    """MurmurHash3's 32-bit finalizer: every input bit moves about half the output bits."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def _expand_to(flags: jax.Array, like: jax.Array) -> jax.Array:
    return flags.reshape(flags.shape + (1,) * (like.ndim - flags.ndim))


# A match whose game may last this many moves or more plays its last games in a smaller batch (`run_games`'s
# `compact`): Brandub (200) is such a game, Connect Four (42) and Othello (60) are not.
COMPACT_MIN_LENGTH = 100
COMPACT_FRACTION = 4  # the tail batch holds a quarter of the pairs


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
    `opening_agent`, distinct from the other pairs' where the game has enough (see the module's docstring).
    Pure and un-jitted (jit it, or call `play_games`, or `play` for bots). The loop ends when every game has.

    With a `mesh` (e.g. `azjax.parallel.mesh_for(num_games // 2)`), each of its D devices plays num_games / D
    of the games (an even number), all alike but with its own random keys, and nothing passes between the devices
    until the results are joined (games from device d fill block d of each output). The results then differ from
    a one-device run's by chance alone, and a device never waits on another's slowest game or search. One limit:
    each device draws its own openings, distinct among its games but not from the other devices', so with more
    openings asked for than a device's share an opening may repeat across devices (where deterministic agents
    then replay a game, `count_distinct` counts it once, so the intervals stay honest).

    Each agent is asked for moves on a batch of num_games / 2 states, one per pair: a game of the pair where it
    is to move if there is one (else any state of the pair, whose move is ignored, so each agent must accept any
    state, terminal ones included). In a game where the turn alternates, the two games of a pair stay in step
    and every game moves at every step; otherwise a game whose mover is busy in the other game of the pair
    waits a step. Either way each agent sees half the games, not all of them.

    `compact`: once no more than a quarter of the pairs are still playing, gather them into a batch of that size
    and play on there, so that a few long games do not keep the agents searching the whole batch (the rest of
    the batch is finished games). It costs a second compilation of the agents. None (the default): on for games
    of `COMPACT_MIN_LENGTH` moves or more, with at least 8 games per device. Deterministic agents play the same
    games either way; random ones draw other numbers in the tail.

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
    """`run_games` on one device (`device`: its index, for `progress`)."""
    half = num_games // 2
    if compact is None:
        compact = game.max_length >= COMPACT_MIN_LENGTH and num_games >= 8
    opening_key, play_key = jax.random.split(key)
    if opening_moves > 0:
        states, opening = _distinct_openings(opening_key, game, half, opening_moves, opening_agent)
    else:
        states, opening = jax.vmap(game.init)(jax.random.split(opening_key, half)), jnp.zeros((half, 0), jnp.int32)
    moves = jnp.full((half, game.max_length), -1, jnp.int32).at[:, : opening.shape[1]].set(opening)
    states, moves = jax.tree.map(lambda x: jnp.concatenate([x, x]), (states, moves))
    opened = jnp.sum(moves >= 0, axis=1).astype(jnp.int32)
    start_hash = state_hashes(states)
    memories = [_init_memory(agent, states) for agent in (agent_a, agent_b)]
    start = _Match(states, jnp.zeros((num_games, 2), jnp.float32), opened, moves, jnp.int32(0), *memories)
    move = functools.partial(_move, game=game, agent_a=agent_a, agent_b=agent_b, play_key=play_key)
    if progress is not None:
        move = functools.partial(_reported, move, progress=progress, device=device)
    tail = half // COMPACT_FRACTION if compact else 0
    played = jax.lax.while_loop(functools.partial(_playing, game=game, more_than=tail), move, start)
    if tail:
        # The pairs still playing, then finished ones to fill the tail batch (distinct, so that writing back is
        # one to one); a pair's two games stay together, the first halves before the second halves.
        live_pairs = _live_pairs(played)
        chosen = jax.lax.top_k(live_pairs.astype(jnp.int32), tail)[1]
        games = jnp.concatenate([chosen, chosen + half])
        per_game = played.replace(num_steps=None)
        rest = jax.tree.map(lambda x: x[games], per_game).replace(num_steps=played.num_steps)
        rest = jax.lax.while_loop(functools.partial(_playing, game=game, more_than=0), move, rest)
        played = jax.tree.map(lambda whole, part: whole.at[games].set(part), per_game,
                              rest.replace(num_steps=None)).replace(num_steps=rest.num_steps)
    seat = _seats(num_games)
    outcome = jnp.take_along_axis(played.returns, seat[:, None], axis=1)[:, 0]
    return Games(outcome=outcome, seat=seat, length=played.length, moves=played.moves, opening_length=opened,
                 start=start_hash)


def _reported(move: Callable[[_Match], _Match], match: _Match, *, progress: MatchProgress,
              device: jax.Array | int) -> _Match:
    """`move`, then `progress` told the games still playing (all of them are in the batch, the tail's too)."""
    match = move(match)
    jax.debug.callback(progress.update, device, match.num_steps, jnp.sum(~match.states.terminated))
    return match


class MatchProgress:
    """Shows how far running matches have got on a terminal: after each step of a match (`run_games(progress=...)`)
    the games finished and the time spent, on one line of `stream` (default: stderr) rewritten at most every
    `every` seconds. `start` each match and `done` after it; pass the same instance to every match, as it is a
    static argument of the compiled match (a new one compiles the match anew).

    The report is a host callback inside the compiled match, and JAX keeps no program with host callbacks in its
    persistent compilation cache: a match shown this way compiles anew in each process (`azjax eval` shows it only
    on a terminal). Thread-safe: with a mesh each device reports its own games."""

    def __init__(self, stream: Any = None, *, every: float = 1.0) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._every = every
        self._lock = threading.Lock()
        self._label, self._num_games, self._devices = "", 0, 1
        self._live: dict[int, int] = {}
        self._started = self._shown = 0.0
        self._steps = 0
        self.lines = 0  # reports shown so far

    def start(self, label: str, num_games: int, devices: int = 1) -> None:
        """A new match of `num_games` over `devices` devices, shown as `label`."""
        with self._lock:
            self._label, self._num_games, self._devices = label, num_games, devices
            self._live, self._steps = {}, 0
            self._started = self._shown = time.perf_counter()

    def update(self, device: Any, step: Any, live: Any) -> None:
        """A device's step `step` left `live` of its games playing (the host callback)."""
        with self._lock:
            self._live[int(device)] = int(live)
            self._steps = max(self._steps, int(step))
            now = time.perf_counter()
            if now - self._shown < self._every:
                return
            self._shown = now
            per_device = self._num_games // max(self._devices, 1)
            playing = sum(self._live.get(d, per_device) for d in range(self._devices))
            show_progress(self._stream, f"{self._label}: {self._num_games - playing} of {self._num_games} games "
                          f"finished, step {self._steps}", self._started)
            self.lines += 1

    def done(self) -> None:
        """Clears the line, if one was shown."""
        with self._lock:
            if self.lines:
                clear_progress(self._stream)


def show_progress(stream: Any, text: str, started: float) -> None:
    """Rewrites the current line of a terminal `stream` with `text` and the time since `started` (perf_counter)."""
    minutes, seconds = divmod(int(time.perf_counter() - started), 60)
    stream.write(f"\r{text}, {minutes}:{seconds:02d} elapsed\x1b[K")
    stream.flush()


def clear_progress(stream: Any) -> None:
    """Clears the line `show_progress` wrote."""
    stream.write("\r\x1b[K")
    stream.flush()


def _seats(num_games: int) -> jax.Array:
    """A's player id in each game: 0 in the first half, 1 in the second."""
    return jnp.concatenate([jnp.zeros(num_games // 2, jnp.int32), jnp.ones(num_games // 2, jnp.int32)])


def _live_pairs(match: _Match) -> jax.Array:
    """[N / 2] bool: pairs with a game still playing."""
    live = ~match.states.terminated
    half = live.shape[0] // 2
    return live[:half] | live[half:]


def _playing(match: _Match, *, game: Game, more_than: int) -> jax.Array:
    """Whether to play on: more than `more_than` pairs still playing, and the step limit not reached (every step
    moves at least one live game of each pair, so 2 * max_length steps always suffice)."""
    return (jnp.sum(_live_pairs(match)) > more_than) & (match.num_steps < 2 * game.max_length)


def _move(match: _Match, *, game: Game, agent_a: Player, agent_b: Player, play_key: jax.Array) -> _Match:
    """One step of a match of N games laid out as `run_games` lays them out (pairs i and i + N / 2)."""
    num_games = match.length.shape[0]
    half = num_games // 2
    seat, pair = _seats(num_games), jnp.arange(half)
    key_a, key_b = jax.random.split(jax.random.fold_in(play_key, match.num_steps))
    live = ~match.states.terminated
    a_turn = live & (match.states.current_player == seat)
    b_turn = live & (match.states.current_player != seat)
    # A prefers the pair's first game and B the second; a_turn and b_turn exclude each other, so no game is
    # picked by both.
    a_index = jnp.where(a_turn[:half], pair, pair + half)
    b_index = jnp.where(b_turn[half:], pair + half, pair)
    a_actions, memory_a = _choose(agent_a, key_a, match.states, match.memory_a, a_index, a_turn)
    b_actions, memory_b = _choose(agent_b, key_b, match.states, match.memory_b, b_index, b_turn)
    a_moves = jnp.zeros(num_games, bool).at[a_index].set(a_turn[a_index])
    b_moves = jnp.zeros(num_games, bool).at[b_index].set(b_turn[b_index])
    actions = jnp.where(
        a_moves,
        jnp.zeros(num_games, jnp.int32).at[a_index].set(a_actions),
        jnp.zeros(num_games, jnp.int32).at[b_index].set(b_actions),
    )
    moving = a_moves | b_moves
    stepped = jax.vmap(game.step)(match.states, actions)
    states = jax.tree.map(lambda new, old: jnp.where(_expand_to(moving, new), new, old), stepped, match.states)
    returns = match.returns + jnp.where(moving[:, None], stepped.rewards, 0.0)
    moves = _record(match.moves, actions, moving)
    # Each memory follows every move played in its games, whoever played it.
    memory_a = _follow(agent_a, memory_a, actions, moving)
    memory_b = _follow(agent_b, memory_b, actions, moving)
    return _Match(states, returns, match.length + moving, moves, match.num_steps + 1, memory_a, memory_b)


def _memory_of(agent: Player) -> Memory | None:
    return agent.memory if isinstance(agent, Bot) else None


def _init_memory(agent: Player, states: State) -> Any:
    spec = _memory_of(agent)
    return None if spec is None else spec.init(states)


def _follow(agent: Player, memory: Any, actions: jax.Array, moved: jax.Array) -> Any:
    spec = _memory_of(agent)
    return None if spec is None else spec.follow(memory, actions, moved)


def _choose(agent: Player, key: jax.Array, states: State, memory: Any, index: jax.Array, turn: jax.Array
            ) -> tuple[jax.Array, Any]:
    """The agent's moves [B] in the games `index` [B], and its memory [N] updated in those of them where it is to
    move (`turn` [N])."""
    chosen = jax.tree.map(lambda x: x[index], states)
    spec = _memory_of(agent)
    if spec is None:
        return (agent.act if isinstance(agent, Bot) else agent)(key, chosen), memory
    analysis, after = spec.analyse(key, chosen, jax.tree.map(lambda x: x[index], memory))
    moves = turn[index]
    memory = jax.tree.map(
        lambda whole, new: whole.at[index].set(jnp.where(_expand_to(moves, new), new, whole[index])), memory, after)
    return analysis.action, memory


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


# --------------------------------------------------------------------------------------------------------------
# Statistics


@dataclasses.dataclass(frozen=True)
class MatchResult:
    """A match between agents A and B, from A's side."""

    name_a: str
    name_b: str
    wins: int
    draws: int
    losses: int
    wins_as_first: int  # A's results when A moved first (player 0) ...
    draws_as_first: int
    losses_as_first: int  # ... and the rest of A's results were as player 1
    mean_length: float  # moves per game, openings included
    distinct_games: int  # games that differ in their moves or A's seat: the evidence the intervals count

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """A's score: (wins + draws / 2) / games."""
        return (self.wins + 0.5 * self.draws) / max(self.games, 1)

    @property
    def score_interval(self) -> tuple[float, float]:
        """The Wilson 95% interval of `score`, over the distinct games (copies of a game are no new evidence)."""
        return wilson_interval(self.score, self.distinct_games)

    @property
    def elo(self) -> float:
        """A's rating minus B's, from the score."""
        return elo_from_score(self.score)

    @property
    def elo_interval(self) -> tuple[float, float]:
        low, high = self.score_interval
        return elo_from_score(low), elo_from_score(high)

    def to_dict(self) -> dict:
        low, high = self.score_interval
        elo_low, elo_high = self.elo_interval
        return dict(
            dataclasses.asdict(self),
            games=self.games,
            score=self.score,
            score_low=low,
            score_high=high,
            elo=self.elo,
            elo_low=elo_low,
            elo_high=elo_high,
        )


def summarize(games: Games, name_a: str = "A", name_b: str = "B") -> MatchResult:
    """Counts a batch of games (on the host) into a `MatchResult`. Games split over several processes' devices
    are gathered first (a collective there: every process calls this)."""
    outcome, seat, length, moves, opening_length, start = (np.asarray(x) for x in parallel.fetch(
        (games.outcome, games.seat, games.length, games.moves, games.opening_length, games.start)))
    first = seat == 0
    return MatchResult(
        name_a=name_a,
        name_b=name_b,
        wins=int(np.sum(outcome > 0)),
        draws=int(np.sum(outcome == 0)),
        losses=int(np.sum(outcome < 0)),
        wins_as_first=int(np.sum((outcome > 0) & first)),
        draws_as_first=int(np.sum((outcome == 0) & first)),
        losses_as_first=int(np.sum((outcome < 0) & first)),
        mean_length=float(np.mean(length)) if length.size else 0.0,
        distinct_games=count_distinct(seat, moves, start=start, opening_length=opening_length),
    )


def count_distinct(seat: np.ndarray, moves: np.ndarray, *, start: np.ndarray | None = None,
                   opening_length: np.ndarray | None = None) -> int:
    """How many of the games (`Games.seat` [N], `Games.moves` [N, L]) differ in A's seat, in the position they
    started from after their opening (`Games.start` [N, 2]) or in their moves after it (`Games.opening_length`
    [N] moves of each are the opening's): two move orders to one position are one start, from which deterministic
    agents play one game. Without `start` and `opening_length`, games differ by their moves from the first."""
    if not seat.size:
        return 0
    columns = [seat[:, None].astype(np.int64)]
    if start is not None and opening_length is not None:
        after = opening_length[:, None] + np.arange(moves.shape[1])[None, :]
        moves = np.where(after < moves.shape[1],
                         np.take_along_axis(moves, np.minimum(after, moves.shape[1] - 1), axis=1), -1)
        columns.append(start.astype(np.int64))
    columns.append(moves.astype(np.int64))
    return len(np.unique(np.concatenate(columns, axis=1), axis=0))


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
    they are counted (e.g. to record them: `game_records`); `progress` shows the match as it plays.

    Raises:
      SolveTimeout: Connect Four's perfect player gave up on a position (see `bots.perfect_bot`).
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


RECORD_FORMAT = "azjax-games"  # the "format" of a file of recorded games (`azjax eval --record`, `azjax serve`)
RECORD_VERSION = 1


def game_records(games: Games, name_a: str, name_b: str) -> list[dict]:
    """The games of a match between agents `name_a` and `name_b` as JSON-ready dicts, one per game: "players"
    (the two names by seat, the first moved first), "moves" (the actions in order, the opening's first),
    "opening_moves" (how many of them are the opening's) and "outcome" (for the player who moved first: +1 won,
    0 draw, -1 lost). Games split over several processes' devices are gathered first (a collective there: every
    process calls this)."""
    outcome, seat, length, moves, opening_length = (np.asarray(x) for x in parallel.fetch(
        (games.outcome, games.seat, games.length, games.moves, games.opening_length)))
    records = []
    for i in range(len(seat)):
        a_first = int(seat[i]) == 0
        records.append({
            "players": [name_a, name_b] if a_first else [name_b, name_a],
            "moves": [int(action) for action in moves[i, : int(length[i])]],
            "opening_moves": int(opening_length[i]),
            "outcome": float(outcome[i] if a_first else -outcome[i]),
        })
    return records


# --------------------------------------------------------------------------------------------------------------
# Elo


@dataclasses.dataclass(frozen=True)
class RoundRobin:
    """Every pairing of K agents, and their Elo fit."""

    names: list[str]
    matches: list[MatchResult]  # one per pair (i < j), from agent i's side
    elo: EloFit

    def to_dict(self) -> dict:
        return {
            "agents": self.names,
            "matches": [m.to_dict() for m in self.matches],
            "elo": {
                name: {"elo": float(r), "standard_error": float(e)}
                for name, r, e in zip(self.names, self.elo.ratings, self.elo.standard_errors, strict=True)
            },
            "anchor": self.names[self.elo.anchor],
        }


def score_matrices(names: Sequence[str], matches: Sequence[MatchResult]) -> tuple[np.ndarray, np.ndarray]:
    """The [K, K] points and games matrices of `fit_elo` from pairwise results, each pairing weighed by its
    distinct games: its score times `distinct_games` points out of `distinct_games`."""
    index = {name: i for i, name in enumerate(names)}
    scores = np.zeros((len(names), len(names)))
    games = np.zeros_like(scores)
    for match in matches:
        i, j = index[match.name_a], index[match.name_b]
        points = match.score * match.distinct_games
        scores[i, j] += points
        scores[j, i] += match.distinct_games - points
        games[i, j] += match.distinct_games
        games[j, i] += match.distinct_games
    return scores, games


def round_robin(
    key: jax.Array,
    game: Game,
    bots: Sequence[Bot],
    num_games: int,
    *,
    opening_moves: int = 0,
    opening_agent: AgentFn = random_agent,
    prior_draws: float = 1.0,
    on_match: Callable[[MatchResult], None] | None = None,
    mesh: Mesh | None = None,
    on_games: Callable[[str, str, Games], None] | None = None,
    progress: MatchProgress | None = None,
) -> RoundRobin:
    """Every pair of `bots` plays `num_games` games; then a Bradley-Terry Elo fit, anchored at the first bot
    named "random" (else the first bot). `prior_draws` (one virtual draw per pairing by default) keeps an
    undefeated agent's rating finite; `on_match` is called after each pairing (for progress), `on_games` with
    the names of each pairing's agents and its games (to record them: `game_records`); `progress` shows each
    match as it plays."""
    names = [bot.name for bot in bots]
    if len(set(names)) != len(names):
        raise ValueError(f"the bots' names must differ, got {names}")
    matches = []
    pair_keys = jax.random.split(key, max(len(bots) * (len(bots) - 1) // 2, 1))
    pairs = [(i, j) for i in range(len(bots)) for j in range(i + 1, len(bots))]
    for pair_key, (i, j) in zip(pair_keys, pairs, strict=False):  # one key even for no pair
        match = play(pair_key, game, bots[i], bots[j], num_games, opening_moves=opening_moves,
                     opening_agent=opening_agent, mesh=mesh, progress=progress,
                     on_games=None if on_games is None else functools.partial(on_games, names[i], names[j]))
        matches.append(match)
        if on_match is not None:
            on_match(match)
    anchor = names.index("random") if "random" in names else 0
    scores, games = score_matrices(names, matches)
    return RoundRobin(names=names, matches=matches, elo=fit_elo(scores, games, anchor=anchor,
                                                                  prior_draws=prior_draws))


# --------------------------------------------------------------------------------------------------------------
# Tables


def _signed(value: float, digits: int = 0) -> str:
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return f"{value:+.{digits}f}"


def match_header(width: int = 24) -> str:
    """The column titles of `format_match` lines."""
    return (
        f"{'agent A':<{width}} {'agent B':<{width}} {'W':>5} {'D':>5} {'L':>5} {'distinct':>8}  {'score':>6}  "
        f"{'95% CI':<13}  "
        f"{'Elo A-B':>7}  {'95% CI':<13}  {'as 1st W/D/L':<14} {'as 2nd W/D/L'}"
    )


def format_match(match: MatchResult, width: int = 24) -> str:
    """One line: A, B, A's wins, draws and losses, the number of distinct games, score with its 95% CI, the Elo
    difference with its CI, and the results per seat."""
    low, high = match.score_interval
    elo_low, elo_high = match.elo_interval
    first = f"{match.wins_as_first}/{match.draws_as_first}/{match.losses_as_first}"
    second = (
        f"{match.wins - match.wins_as_first}/{match.draws - match.draws_as_first}/"
        f"{match.losses - match.losses_as_first}"
    )
    return (
        f"{match.name_a:<{width}} {match.name_b:<{width}} {match.wins:>5} {match.draws:>5} {match.losses:>5} "
        f"{match.distinct_games:>8}  "
        f"{match.score:>6.3f}  [{low:.3f}, {high:.3f}]  {_signed(match.elo):>7}  "
        f"{'[' + _signed(elo_low) + ', ' + _signed(elo_high) + ']':<13}  {first:<14} {second:<14}"
    ).rstrip()


def format_elo(names: Sequence[str], fit: EloFit, matches: Sequence[MatchResult], width: int = 24) -> str:
    """The Elo table, best first: rank, agent, rating +- 1.96 standard errors, total score, games and distinct
    games."""
    points, games, distinct = np.zeros(len(names)), np.zeros(len(names)), np.zeros(len(names))
    for match in matches:
        for name, won in ((match.name_a, match.wins), (match.name_b, match.losses)):
            i = names.index(name)
            points[i] += won + 0.5 * match.draws
            games[i] += match.games
            distinct[i] += match.distinct_games
    lines = [f"{'rank':<5} {'agent':<{width}} {'Elo':>7} {'+-95%':>7} {'score':>7} {'games':>7} {'distinct':>8}"]
    order = sorted(range(len(names)), key=lambda i: -fit.ratings[i])
    for rank, i in enumerate(order, 1):
        error = fit.standard_errors[i]
        error_text = "anchor" if i == fit.anchor else ("-" if not np.isfinite(error) else f"{Z_95 * error:.0f}")
        score = points[i] / games[i] if games[i] else float("nan")
        lines.append(
            f"{rank:<5} {names[i]:<{width}} {_signed(fit.ratings[i]):>7} {error_text:>7} {score:>7.3f} "
            f"{int(games[i]):>7} {int(distinct[i]):>8}"
        )
    return "\n".join(lines)


def format_table(table: RoundRobin) -> str:
    """Every pairing, then the Elo table."""
    width = max(12, *(len(n) for n in table.names))
    lines = [match_header(width)] + [format_match(m, width) for m in table.matches]
    lines += ["", f"Elo (Bradley-Terry maximum likelihood, {table.names[table.elo.anchor]} = 0):"]
    lines.append(format_elo(table.names, table.elo, table.matches, width))
    return "\n".join(lines)
