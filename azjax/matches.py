"""Matches: two agents play a batch of games against each other, each game to its end, in one `lax.while_loop`.

    states = jax.vmap(game.init)(jax.random.split(init_key, 32))
    states = jax.tree.map(lambda x: jnp.concatenate([x, x]), states)   # 32 pairs: each position once per seat
    games = play_match(key, states, game=game, agent_a=agent_fn, agent_b=bots.random_agent)
    score = jnp.mean((games.outcome + 1) / 2)                           # A's: a win 1, a draw 1/2, a loss 0

Seats. The N games (N even) are N / 2 pairs, game i and game i + N / 2: agent A is player 0 (moves first) in the
first half and player 1 in the second, so that with both games of a pair started from one position neither agent
gains from the seats. Outcomes are from A's side.

Agents. An agent is an `AgentFn` (key, states [B]) -> actions [B], or a `bots.Bot`; a bot with a `Memory` (tree
reuse) keeps it per game, updated when it moves and following every move played. Each agent is asked for moves on
a batch of N / 2 states, one per pair: a game of the pair where it is to move if there is one (else any state of
the pair, whose move is ignored, so each agent must accept any state, terminal ones included). In a game where the
turn alternates, the two games of a pair stay in step and every game moves at every step; otherwise a game whose
mover is busy in the other game of the pair waits a step. Either way each agent sees half the games, not all.

Pure and un-jitted, with no file I/O: callers jit (the application's `azjax.arena` adds openings, devices, the
memory check and the result tables).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from azjax.bots import AgentFn, Bot, Memory
from azjax.games import Game, State

Player = AgentFn | Bot  # a bot with a memory (tree reuse) keeps it in a match; any other plays by its moves alone
COMPACT_FRACTION = 4  # `play_match(compact=True)`: the tail batch holds a quarter of the pairs


class Games(struct.PyTreeNode):
    """The outcome of a batch of N games between agents A and B, from A's side (`play_match`)."""

    outcome: jax.Array
    """[N] float32: +1 A won, 0 draw, -1 A lost."""
    seat: jax.Array
    """[N] int32: A's player id (0 = A moved first)."""
    length: jax.Array
    """[N] int32: moves played, those before the match (the opening) included."""
    moves: jax.Array
    """[N, game.max_length] int32: the actions played in order, the opening's first; -1 after."""
    opening_length: jax.Array
    """[N] int32: how many of `moves` were played before the match (the opening's)."""
    start: jax.Array | None = None
    """[N, 2] uint32: a 64-bit hash of the state each game started from, where the caller hashed them
    (`openings.state_hashes`; `play_match` leaves it None): games that started from one position have the same hash,
    whatever moves led there."""


class _Match(struct.PyTreeNode):
    states: State  # [N]
    returns: jax.Array  # [N, 2] float32, rewards summed per player id
    length: jax.Array  # [N] int32
    moves: jax.Array  # [N, max_length] int32
    num_steps: jax.Array  # [] int32
    memory_a: Any = None  # [N]: agent A's memory of each game (a bot with a `Memory`), else None
    memory_b: Any = None


def play_match(
    key: jax.Array,
    states: State,
    *,
    game: Game,
    agent_a: Player,
    agent_b: Player,
    moves: jax.Array | None = None,
    compact: bool = False,
    on_step: Callable[[jax.Array, jax.Array], None] | None = None,
) -> Games:
    """Agent A against agent B: the N games from `states` played to their end (see the module's docstring).

    Args:
      key: randomness for the agents' moves (each step folds in its number).
      states: [N] the games' positions to start from, N even: game i and game i + N / 2 are a pair, A is player 0
        in the first half and player 1 in the second.
      game: the game.
      agent_a: an `AgentFn` or a `bots.Bot` (whose `Memory`, if any, it keeps through each game).
      agent_b: likewise.
      moves: [N, game.max_length] int32, the moves that led to `states` (an opening), in order, -1 after; they
        count in `Games.length` and `Games.opening_length`. Default: none.
      compact: once no more than a quarter of the pairs (`COMPACT_FRACTION`) are still playing, gather them into
        a batch of that size and play on there, so that a few long games do not keep the agents working on the
        whole batch (the rest of it finished games). It costs a second compilation of the agents. Deterministic
        agents play the same games either way; random ones draw other numbers in the tail.
      on_step: called inside the loop after every step with the steps played and the games still playing
        (int32 [] traced values), e.g. to report them through `jax.debug.callback`; it does not change the games.
    Returns:
      `Games` [N] from A's side (`start` None). The loop ends when every game has (within 2 * max_length steps).
    Raises:
      ValueError: N is odd or below 2.
    """
    num_games = states.terminated.shape[0]
    if num_games < 2 or num_games % 2:
        raise ValueError(f"a match plays an even number >= 2 of games (pairs, one per seat), got {num_games}")
    if moves is None:
        moves = jnp.full((num_games, game.max_length), -1, jnp.int32)
    opened = jnp.sum(moves >= 0, axis=1).astype(jnp.int32)
    memories = [_init_memory(agent, states) for agent in (agent_a, agent_b)]
    start = _Match(states, jnp.zeros((num_games, 2), jnp.float32), opened, moves, jnp.int32(0), *memories)
    move = functools.partial(_move, game=game, agent_a=agent_a, agent_b=agent_b, play_key=key)
    if on_step is not None:
        move = functools.partial(_reported, move, on_step=on_step)
    tail = num_games // 2 // COMPACT_FRACTION if compact else 0
    played = jax.lax.while_loop(functools.partial(_playing, game=game, more_than=tail), move, start)
    if tail:
        played = _play_tail(played, move, game=game, tail=tail)
    seat = _seats(num_games)
    outcome = jnp.take_along_axis(played.returns, seat[:, None], axis=1)[:, 0]
    return Games(outcome=outcome, seat=seat, length=played.length, moves=played.moves, opening_length=opened)


def _play_tail(played: _Match, move: Callable[[_Match], _Match], *, game: Game, tail: int) -> _Match:
    """The last games of a match in a batch of 2 * `tail`: the pairs still playing, then finished ones to fill it
    (distinct, so that writing back is one to one); a pair's two games stay together, the first halves before the
    second halves."""
    half = played.length.shape[0] // 2
    chosen = jax.lax.top_k(_live_pairs(played).astype(jnp.int32), tail)[1]
    games = jnp.concatenate([chosen, chosen + half])
    per_game = played.replace(num_steps=None)
    rest = jax.tree.map(lambda x: x[games], per_game).replace(num_steps=played.num_steps)
    rest = jax.lax.while_loop(functools.partial(_playing, game=game, more_than=0), move, rest)
    return jax.tree.map(lambda whole, part: whole.at[games].set(part), per_game,
                        rest.replace(num_steps=None)).replace(num_steps=rest.num_steps)


def _reported(move: Callable[[_Match], _Match], match: _Match, *,
              on_step: Callable[[jax.Array, jax.Array], None]) -> _Match:
    """`move`, then `on_step` told the games still playing (all of them are in the batch, the tail's too)."""
    match = move(match)
    on_step(match.num_steps, jnp.sum(~match.states.terminated))
    return match


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
    """One step of a match of N games laid out as `play_match` lays them out (pairs i and i + N / 2)."""
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
    states = jax.tree.map(lambda new, old: jnp.where(expand_to(moving, new), new, old), stepped, match.states)
    returns = match.returns + jnp.where(moving[:, None], stepped.rewards, 0.0)
    moves = record_moves(match.moves, actions, moving)
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
        lambda whole, new: whole.at[index].set(jnp.where(expand_to(moves, new), new, whole[index])), memory, after)
    return analysis.action, memory


def record_moves(moves: jax.Array, actions: jax.Array, played: jax.Array) -> jax.Array:
    """Appends `actions` [B] to the rows of `moves` [B, L] (-1 after the last move) where `played` [B] bool."""
    length = jnp.sum(moves >= 0, axis=1)
    column = jnp.where(played, length, moves.shape[1])  # out of bounds: dropped
    return moves.at[jnp.arange(moves.shape[0]), column].set(actions, mode="drop")


def expand_to(flags: jax.Array, like: jax.Array) -> jax.Array:
    """`flags` [B] reshaped to broadcast against `like` [B, ...] (trailing axes of size 1), for a `jnp.where` that
    chooses whole batch elements."""
    return flags.reshape(flags.shape + (1,) * (like.ndim - flags.ndim))
