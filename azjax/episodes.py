"""Episodes: one agent plays a batch of one-player games (puzzles, MDPs) to their ends, in one `lax.while_loop`.

    states = jax.vmap(game.init)(jax.random.split(init_key, 256))
    played = play_episodes(key, states, game=game, agent=agent_fn)
    mean_return = jnp.mean(played.returns)               # the agent's evaluation on this game

The agent is an `AgentFn` (key, states [N]) -> actions [N] or a `bots.Bot`; it is asked for moves on every state
at every step, terminal ones included (whose moves are ignored). Pure and un-jitted, with no file I/O.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from azjax.bots import AgentFn, Bot
from azjax.games import Game, State


class Episodes(struct.PyTreeNode):
    """N episodes of a one-player game (`play_episodes`)."""

    returns: jax.Array
    """[N] float32: the rewards of player 0 summed over the episode."""
    length: jax.Array
    """[N] int32: moves played."""
    final: State
    """[N]: the state each episode ended in (or stood in after game.max_length moves)."""


class _Loop(struct.PyTreeNode):
    states: State
    returns: jax.Array
    length: jax.Array
    num_steps: jax.Array


def play_episodes(key: jax.Array, states: State, *, game: Game, agent: AgentFn | Bot) -> Episodes:
    """Plays each of the N `states` to its end with `agent` (at most `game.max_length` moves); returns each
    episode's return for player 0 (its only player), its length and its final state."""
    if game.num_players != 1:
        raise ValueError(f"play_episodes plays one-player games; {game.name} has {game.num_players} players: play "
                         "a match (azjax.matches.play_match)")
    act = agent.act if isinstance(agent, Bot) else agent
    step = jax.vmap(game.step)

    def going(loop: _Loop) -> jax.Array:
        return jnp.any(~loop.states.terminated) & (loop.num_steps < game.max_length)

    def move(loop: _Loop) -> _Loop:
        live = ~loop.states.terminated
        actions = act(jax.random.fold_in(key, loop.num_steps), loop.states)
        states = step(loop.states, actions)
        return _Loop(states, loop.returns + jnp.where(live, states.rewards[:, 0], 0.0),
                     loop.length + live.astype(jnp.int32), loop.num_steps + 1)

    count = states.terminated.shape[0]
    start = _Loop(states, jnp.zeros(count, jnp.float32), jnp.zeros(count, jnp.int32), jnp.int32(0))
    end = jax.lax.while_loop(going, move, start)
    return Episodes(returns=end.returns, length=end.length, final=end.states)
