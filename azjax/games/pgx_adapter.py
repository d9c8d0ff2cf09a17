"""`from_pgx(env_id)`: a pgx environment of perfect information as an azjax `Game`: the two-player deterministic
ones here, 2048 (one player) and backgammon (two) with their chance events split out in `azjax.games.pgx_chance`.

>>> game = from_pgx("go_9x9")          # also games.make("pgx:go_9x9") and `azjax train --game pgx:go_9x9`
>>> check_game(game)

pgx is an optional dependency (`pip install "azjax[pgx]"`); this module imports it only when a game is built.

How pgx's conventions are brought to azjax's protocol (see `azjax.games.base`):

* Player ids. pgx draws which player id moves first from the init key; azjax's player 0 always moves first. The
  state keeps whether pgx's player 1 moved first (`seats_swapped`) and maps `current_player` and `rewards`.
* Legal masks. pgx sets every action legal in a terminal state; azjax's terminal mask is all False.
* Illegal and out-of-range actions. pgx applies the move and then ends the game with a penalty; azjax leaves the
  position as it was and ends the game with -1 for the mover and +1 for the opponent (`resolve_step`).
* Terminal states are absorbing: the state is returned unchanged, with zero rewards.
* Truncation. pgx's `truncated` ends the game here too (`terminated` is True), with the rewards pgx paid. None of
  the supported environments truncates; those that stop long games (Go, chess, shogi, ...) terminate on their
  own, with their own outcome (Go scores the board; the chess variants draw).
* Length. `max_length` is the environment's documented bound (`SUPPORTED_ENVS`) unless given; a game still
  running after `max_length` moves ends there as a draw, so a smaller `max_length` shortens the game.
* Observations are pgx's (from the side to move), cast to float32. pgx's keys: the environments played here are
  deterministic, so `step` needs none; 2048 and backgammon draw their chance events from a key the state carries
  (`azjax.games.pgx_chance`); environments with hidden information or more than two players are rejected
  (`REJECTED_ENVS`), and MinAtar's (one player, sticky actions drawn inside pgx's step) too.
* Symmetries are not provided (pgx does not expose them); `render` is a text summary, and `draw` is pgx's own
  SVG picture of the board (`state.pgx_state.to_svg()`), with the last move and annotations written below it as
  text (pgx's picture has no place for them). Moves are named by their action numbers.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games import drawing
from azjax.games.base import Game, State, resolve_step

INSTALL_HINT = "pip install 'azjax[pgx]'"
"""The command that installs pgx, named in the error when it is missing."""

SUPPORTED_ENVS: dict[str, int] = {
    # env_id: the longest game in moves, by the environment's rules.
    "tic_tac_toe": 9,
    "connect_four": 42,
    "othello": 121,  # 60 placements; a pass is only forced, and two passes in a row end the game
    "hex": 122,  # 11 x 11 cells and the swap move; every full board has a winner
    "go_9x9": 162,  # pgx ends Go after 2 * 9 * 9 moves and scores the board
    "go_19x19": 722,  # 2 * 19 * 19
    "chess": 512,  # pgx's limit (from the AlphaZero paper); a draw
    "gardner_chess": 256,
    "animal_shogi": 256,
    "shogi": 512,
}
"""The pgx environments `from_pgx` accepts, with the length bound used as `max_length` by default."""

REJECTED_ENVS: dict[str, str] = {
    "kuhn_poker": "it is stochastic and has hidden information",
    "leduc_holdem": "it is stochastic and has hidden information",
    "bridge_bidding": "it has four players and hidden information",
    "sparrow_mahjong": "it has three players and hidden information",
    "mahjong": "it has four players and hidden information",
}
"""pgx environments that cannot be azjax games, each with the reason (named in the error when one is asked for)."""


class PgxState(State):
    """The common fields in azjax's conventions, plus pgx's own state."""

    pgx_state: Any
    """The pgx environment's state (a pgx.State pytree)."""
    seats_swapped: jax.Array
    """[] bool: pgx's player 1 moved first, so azjax's player p is pgx's 1 - p. (A bool, not pgx's first player id: a
    copy of pgx's current_player at init would share its buffer, which a donating jit refuses.)"""


def _from_pgx_ids(values: jax.Array, seats_swapped: jax.Array) -> jax.Array:
    """Per-player values [2] indexed by pgx's ids -> indexed by azjax's (player 0 moves first)."""
    return jnp.where(seats_swapped, values[::-1], values)


def _wrap(pgx_state: Any, seats_swapped: jax.Array, max_length: int) -> PgxState:
    """The azjax view of a pgx state (not absorbing or illegal-move handling: see `_step`)."""
    out_of_moves = pgx_state._step_count >= max_length
    ended = pgx_state.terminated | pgx_state.truncated
    rewards = _from_pgx_ids(pgx_state.rewards.astype(jnp.float32), seats_swapped)
    return PgxState(
        current_player=(pgx_state.current_player.astype(jnp.int32) ^ seats_swapped.astype(jnp.int32)),
        legal_action_mask=pgx_state.legal_action_mask.astype(jnp.bool_) & ~(ended | out_of_moves),
        terminated=(ended | out_of_moves).astype(jnp.bool_),
        rewards=jnp.where(ended, rewards, 0.0).astype(jnp.float32),
        pgx_state=pgx_state,
        seats_swapped=seats_swapped,
    )


def _init(key: jax.Array, *, env: Any, max_length: int) -> PgxState:
    pgx_state = env.init(key)
    return _wrap(pgx_state, pgx_state.current_player == 1, max_length)


def _step(state: PgxState, action: jax.Array, *, env: Any, num_actions: int, max_length: int) -> PgxState:
    action = jnp.asarray(action, jnp.int32)
    moved = env.step(state.pgx_state, jnp.clip(action, 0, num_actions - 1))
    return resolve_step(state, _wrap(moved, state.seats_swapped, max_length), action)


def _observe(state: PgxState) -> jax.Array:
    return state.pgx_state.observation.astype(jnp.float32)


def _render(state: PgxState, *, env_id: str) -> str:
    moves = int(state.pgx_state._step_count)
    legal = np.flatnonzero(np.asarray(state.legal_action_mask)).tolist()
    rewards = np.asarray(state.rewards)
    if not bool(state.terminated):
        status = f"player {int(state.current_player)} to move; legal actions: {legal}"
    elif rewards[0] > 0 or rewards[1] > 0:
        status = f"player {int(np.argmax(rewards))} won"
    else:
        status = "game over (draw, or the last step paid nothing)"
    return (
        f"pgx {env_id} after {moves} moves: {status}\n"
        "(pgx draws boards as SVG: state.pgx_state.save_svg('board.svg'))"
    )


def _draw(state: PgxState, *, last_move: int | None = None, annotations: drawing.Annotations | None = None,
          num_actions: int) -> str:
    """pgx's SVG of the underlying pgx state; the last move and annotations, by action number, in lines below it."""
    svg = state.pgx_state.to_svg()
    return drawing.add_notes(svg, num_actions=num_actions, last_move=last_move, annotations=annotations)


def _string_to_action(text: str, *, num_actions: int) -> int:
    hint = f"write an action number 0-{num_actions - 1}"
    try:
        action = int(text.strip())
    except ValueError:
        raise ValueError(f"cannot read {text!r} as a move: {hint}") from None
    if not 0 <= action < num_actions:
        raise ValueError(f"action {action} is out of range: {hint}")
    return action


class MissingDependencyError(ImportError):
    """An optional package a feature needs is not installed; the message says how to install it."""


def _import_pgx() -> Any:
    try:
        import pgx
    except ImportError as error:
        raise MissingDependencyError(f"the pgx games need the optional pgx package: {INSTALL_HINT}") from error
    return pgx


def supported_envs() -> tuple[str, ...]:
    """Every pgx environment the adapter plays: the deterministic ones (`SUPPORTED_ENVS`) and those with chance
    (`azjax.games.pgx_chance.CHANCE_ENVS`)."""
    from azjax.games.pgx_chance import CHANCE_ENVS

    return (*SUPPORTED_ENVS, *CHANCE_ENVS)


def check_env_id(env_id: str) -> None:
    """Raises ValueError, saying why, unless the adapter plays pgx's environment `env_id` (pgx is not needed)."""
    from azjax.games.pgx_chance import CHANCE_ENVS

    if env_id in CHANCE_ENVS:
        return
    if env_id in REJECTED_ENVS or env_id.startswith("minatar"):
        reason = REJECTED_ENVS.get(env_id, "MinAtar's sticky actions and spawns are drawn inside pgx's step, a chance "
                                           "event the adapter does not split out")
        raise ValueError(
            f"pgx environment {env_id!r} cannot be an azjax game: {reason}; azjax plays pgx's games of one or two "
            f"players with perfect information: {', '.join(supported_envs())}"
        )
    if env_id not in SUPPORTED_ENVS:
        raise ValueError(f"unknown pgx environment {env_id!r}; supported: {', '.join(supported_envs())}")


def from_pgx(env_id: str, *, max_length: int | None = None, return_scaling: str | None = None) -> Game:
    """The pgx environment `env_id` as an azjax `Game` named "pgx:<env_id>"; see the module docstring (and, for
    2048 and backgammon, `azjax.games.pgx_chance`'s).

    Args:
      env_id: one of `SUPPORTED_ENVS` (pgx's ids, e.g. "go_9x9", "chess", "othello") or of
        `azjax.games.pgx_chance.CHANCE_ENVS` ("2048", "backgammon").
      max_length: the move limit (a game still running after it is drawn); the environment's own bound by
        default.
      return_scaling: 2048's `Game.return_scaling` (`azjax.games.pgx_chance.from_pgx_chance`); no other
        environment takes it.
    Raises:
      ImportError: when pgx is not installed (the message says how to install it).
      ValueError: for an environment that has hidden information or more than two players (or MinAtar's), or
        that the adapter does not know, and for a max_length below 1.
    """
    check_env_id(env_id)
    from azjax.games import pgx_chance

    if env_id in pgx_chance.CHANCE_ENVS:
        return pgx_chance.from_pgx_chance(env_id, max_length=max_length, return_scaling=return_scaling)
    if return_scaling is not None:
        raise ValueError(f"return_scaling is an option of pgx's 2048, a one-player game, not of {env_id!r}")
    if max_length is None:
        max_length = SUPPORTED_ENVS[env_id]
    if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 1:
        raise ValueError(f"max_length must be an int >= 1, got {max_length!r}")
    pgx = _import_pgx()
    env = pgx.make(env_id)
    if env.num_players != 2:
        raise ValueError(f"pgx environment {env_id!r} has {env.num_players} players; azjax games have two")
    # Static facts from abstract evaluation: nothing runs.
    spec = jax.eval_shape(env.init, jax.random.key(0))
    num_actions = int(spec.legal_action_mask.shape[-1])
    observation_shape = tuple(int(d) for d in spec.observation.shape)
    suffix = "" if max_length == SUPPORTED_ENVS[env_id] else f"(max_length={max_length})"
    return Game(
        name=f"pgx:{env_id}{suffix}",
        num_actions=num_actions,
        observation_shape=observation_shape,
        max_length=max_length,
        init=functools.partial(_init, env=env, max_length=max_length),
        step=functools.partial(_step, env=env, num_actions=num_actions, max_length=max_length),
        observe=_observe,
        render=functools.partial(_render, env_id=env_id),
        action_to_string=str,
        string_to_action=functools.partial(_string_to_action, num_actions=num_actions),
        draw=functools.partial(_draw, num_actions=num_actions),
    )


__all__ = ["INSTALL_HINT", "REJECTED_ENVS", "SUPPORTED_ENVS", "MissingDependencyError", "PgxState", "from_pgx",
           "supported_envs"]
