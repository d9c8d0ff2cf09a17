"""The agent protocol, and the simple agents written with it: a uniformly random player and one-ply tactics.

Every agent is a `Bot`: a name and a pure, jittable `analyse(key, states [B]) -> Analysis`, whose `action` is the
move it plays; `bot.act(key, states) -> actions [B]` is the plain `AgentFn` that matches take
(`matches.play_match`). The analysis also says what the agent thinks: its move distribution, its value of the
position and, where it has them, its value of each move, so that `azjax play` can show them. A bot may carry a
`Memory` (a search tree) from one move to the next of each game.

    random_bot()                       uniformly random legal moves (`random_agent`, its `AgentFn`)
    onestep_bot(game)                  takes a win in one, else avoids moves that allow a loss in one, else random
    oneply_bot(game, score)            the move of the highest one-ply score (pgx:2048's points, backgammon's pips)

The other agents live beside the search they use: `uct.uct_bot` (Monte-Carlo tree search with random rollouts),
`perfect.perfect_bot` (exact solutions), `network_bots.greedy_bot` and `network_bots.alphazero_bot` (a trained
network, without and with mctx search); `agent_specs.make_bot("mcts:200", game)` makes any of them from a
command-line spec. This module imports the games alone, so that the core's matches can take its agents.

Perspective: every value is for the player to move in the position analysed (+1 win, -1 loss); NaN where the
agent has no estimate. Terminal states may appear in a batch (finished games of a match); the agents return some
action for them, which the match ignores.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from azjax.games import Game, State, lookahead

AgentFn = Callable[[jax.Array, State], jax.Array]  # (key, states [B]) -> actions [B] int32
"""An agent as a function: `(key, states [B]) -> actions [B]` int32, a legal move for the player to move in each
state."""


class Analysis(struct.PyTreeNode):
    """What an agent makes of a batch of B positions; every value is for the player to move there."""

    action: jax.Array
    """[B] int32, the move the agent plays."""
    policy: jax.Array
    """[B, A] float32, its distribution over moves (visit shares, network policy, ...)."""
    value: jax.Array
    """[B] float32, its value of the position in [-1, 1]; NaN if it has no estimate."""
    action_values: jax.Array
    """[B, A] float32, its value of each legal move; NaN where it has none."""
    visits: jax.Array | None = None
    """[B, A] int32, a search's simulations per move (what decided its move), or None."""


@dataclasses.dataclass(frozen=True, eq=False)
class Memory:
    """What a bot carries from one move to the next in each game (a search tree), for the players that keep it:
    the matches and `azjax play` hold one per game, let the bot update it when it moves, and `follow` every move
    played in the game, the opponent's too. All three are pure and un-jitted."""

    init: Callable[[State], Any]
    """(states [N]) -> the memory of N games, nothing remembered yet."""
    analyse: Callable[[jax.Array, State, Any], tuple[Analysis, Any]]
    """(key, states [B], memory [B]) -> the analysis and the memory after it, about the same positions."""
    follow: Callable[[Any, jax.Array, jax.Array], Any]
    """(memory [N], actions [N], moved [N] bool) -> the memory about the positions after `actions` where `moved` (the
    others unchanged)."""


@dataclasses.dataclass(frozen=True, eq=False)
class Bot:
    """A named agent. `analyse` is pure and un-jitted; callers jit it (or the match around it). A bot with a
    `memory` (tree reuse) plays better when its caller keeps that memory (`Memory`); `analyse` alone plays as
    if every position were new.

    Bots compare and hash by identity, so a bot can be a static argument of `jax.jit`.
    """

    name: str
    """The agent's name in tables and logs (e.g. "mcts:200")."""
    analyse: Callable[[jax.Array, State], Analysis]
    """(key, states [B]) -> the `Analysis` of the B positions, the moves it plays included."""
    memory: Memory | None = None
    """What the bot carries from move to move in each game (a search tree), or None: it plays every position anew."""

    def act(self, key: jax.Array, states: State) -> jax.Array:
        """The agent's moves [B] int32 for a batch of states (the `AgentFn` interface)."""
        return self.analyse(key, states).action


def uniform_policy(mask: jax.Array) -> jax.Array:
    """Uniform over the True entries of a bool mask [B, A]; all zero where a row is all False."""
    mask = mask.astype(jnp.float32)
    return mask / jnp.maximum(mask.sum(axis=-1, keepdims=True), 1.0)


def sample_uniform(key: jax.Array, mask: jax.Array) -> jax.Array:
    """A uniformly random True entry of each row of a bool mask [..., A] (0 for an all-False row): int32 [...].

    One random number a row, not one an entry as `jax.random.categorical` draws: the k-th True entry, k uniform
    below the row's count. With many actions (Brandub's 1176) a draw over every entry costs more than the game's
    step (experiments/benchmarks/bench_uct.py and experiments/benchmarks/bench_games.py --sampler time both)."""
    count = jnp.sum(mask, axis=-1, dtype=jnp.int32)
    rank = jnp.floor(jax.random.uniform(key, count.shape) * count).astype(jnp.int32)
    rank = jnp.minimum(rank, jnp.maximum(count - 1, 0))  # u x count may round up to count in float32
    return jnp.argmax(jnp.cumsum(mask, axis=-1, dtype=jnp.int32) > rank[..., None], axis=-1).astype(jnp.int32)


def reward_of(states: State, player: jax.Array) -> jax.Array:
    """What `player` (int32, the shape of the batch, e.g. [B, C]) got on the step to each state: float32, that
    shape (states.rewards [..., 2])."""
    return jnp.take_along_axis(states.rewards, player[..., None], axis=-1)[..., 0]


def _unknown(shape: tuple[int, ...]) -> jax.Array:
    return jnp.full(shape, jnp.nan, jnp.float32)


# --------------------------------------------------------------------------------------------------------------
# Uniformly random


def random_analysis(key: jax.Array, states: State) -> Analysis:
    """A uniformly random legal move per state; no value estimate."""
    mask = states.legal_action_mask
    return Analysis(
        action=sample_uniform(key, mask),
        policy=uniform_policy(mask),
        value=_unknown(mask.shape[:1]),
        action_values=_unknown(mask.shape),
    )


def random_bot() -> Bot:
    """The uniformly random player ("random"), the anchor (Elo 0) of rating tables."""
    return Bot("random", random_analysis)


def random_agent(key: jax.Array, states: State) -> jax.Array:
    """The uniformly random agent: a legal move [B] drawn uniformly for each state (`random_bot`'s moves)."""
    return random_analysis(key, states).action


# --------------------------------------------------------------------------------------------------------------
# One-ply tactics


def onestep_analysis(key: jax.Array, states: State, *, game: Game) -> Analysis:
    """Takes a win in one if there is one; otherwise plays a random move after which the opponent cannot win at
    once (which blocks a single threat); with no such move (a double threat), a random legal move.

    Looks at every legal move and every legal reply through `game.step`, so it works for any game, in bounded
    memory (`games.lookahead`: 8 moves by 8 replies at a time, B * 64 states at the peak, not B * A * A); the work
    is B times the most legal moves in the batch times the most legal replies.
    `value` is +1 with a win in one, -1 when every move allows a loss in one, NaN otherwise; `action_values` is
    +1 for winning moves, -1 for moves that allow a loss in one, NaN for the rest (all for the player to move).
    """
    mover = states.current_player  # [B]
    legal = states.legal_action_mask  # [B, A]

    def move_value(children: State, actions: jax.Array) -> jax.Array:
        """+1 a win for the mover, -1 a move after which some legal reply makes the mover lose, NaN else."""
        movers = jnp.broadcast_to(mover[:, None], actions.shape)  # [B, C]
        won = children.terminated & (reward_of(children, movers) > 0)

        def loses(replies: State, reply_actions: jax.Array) -> jax.Array:  # replies [B * C, R]
            return reward_of(replies, movers.reshape(-1, 1)) < 0

        allows_loss = lookahead.map_legal_moves(game, lookahead.flatten(children), loses, fill=False).any(-1)
        return jnp.where(won, 1.0, jnp.where(allows_loss.reshape(actions.shape), -1.0, jnp.nan))

    action_values = lookahead.map_legal_moves(game, states, move_value, fill=jnp.nan)  # [B, A]
    wins, allows_loss = action_values == 1.0, action_values == -1.0
    safe = legal & ~allows_loss
    has_win, has_safe = wins.any(-1, keepdims=True), safe.any(-1, keepdims=True)
    choice = jnp.where(has_win, wins, jnp.where(has_safe, safe, legal))
    value = jnp.where(has_win[:, 0], 1.0, jnp.where(has_safe[:, 0], jnp.nan, -1.0))
    return Analysis(
        action=sample_uniform(key, choice),
        policy=uniform_policy(choice),
        value=value.astype(jnp.float32),
        action_values=action_values.astype(jnp.float32),
    )


def onestep_bot(game: Game) -> Bot:
    """The one-ply tactical player ("onestep"): wins in one, blocks a loss in one, else random."""
    return Bot("onestep", functools.partial(onestep_analysis, game=game))


# --------------------------------------------------------------------------------------------------------------
# One-ply greedy on a game's own score


MoveScore = Callable[[State, jax.Array, State], jax.Array]
"""A one-ply score of a move: `(state, action, after) -> float32 []`, higher better, for the player who moved in
`state` (unbatched; `after` is the position the move led to)."""


def oneply_analysis(key: jax.Array, states: State, *, game: Game, score: MoveScore) -> Analysis:
    """Plays the legal move of the highest `score`, ties broken at random. Each move is stepped once: in a game with
    chance with the likeliest outcome of its chance event (`chance_outcomes`' argmax), never the one to come, so
    `score` should be one the outcome does not change (2048's merged points, backgammon's pip counts: the tile and
    the dice come after the move). No value estimate."""
    actions = jnp.arange(game.num_actions, dtype=jnp.int32)

    def move_scores(state: State) -> jax.Array:
        def one(action: jax.Array) -> jax.Array:
            if game.has_chance:
                assert game.chance_outcomes is not None and game.step_outcome is not None
                likeliest = jnp.argmax(game.chance_outcomes(state, action)).astype(jnp.int32)
                after = game.step_outcome(state, action, likeliest)
            else:
                after = game.step(state, action)
            return jnp.asarray(score(state, action, after), jnp.float32)

        return jax.vmap(one)(actions)

    legal = states.legal_action_mask
    scores = jax.vmap(move_scores)(states)  # [B, A]
    best = legal & (scores >= jnp.max(jnp.where(legal, scores, -jnp.inf), axis=-1, keepdims=True))
    return Analysis(
        action=sample_uniform(key, best),
        policy=uniform_policy(best),
        value=_unknown(legal.shape[:1]),
        action_values=_unknown(legal.shape),
    )


def oneply_bot(game: Game, score: MoveScore) -> Bot:
    """The one-ply greedy player ("oneply"): the move of the highest `score` (see `oneply_analysis`)."""
    return Bot("oneply", functools.partial(oneply_analysis, game=game, score=score))
