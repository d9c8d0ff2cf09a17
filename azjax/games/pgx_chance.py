"""pgx's games with chance, 2048 and backgammon, as azjax games whose chance events the search plans over.

>>> game = from_pgx("2048")            # also games.make("pgx:2048") and `azjax train --game pgx:2048`

pgx's `step(state, action, key)` draws the chance event inside itself (2048's new tile, backgammon's dice), so a
search that called it would either see the draw to come or plan over one sample of it. These games split each
pgx step into its deterministic part (the move) and its chance event, with the exact probabilities of the
outcomes (`Game.chance_outcomes`), built from pgx's own rule functions; `step_outcome(state, action, outcome)`
gives the state pgx's `step` gives when its key draws that outcome (tests/games/test_pgx_chance.py replays random
games both ways and compares every state). `step` draws the outcome from the state's `chance_key`, as every azjax
game with chance does (`azjax.games.base.chance_game_steps`).

* **2048** (one player, 4 actions: 0 left, 1 up, 2 right, 3 down). After the tiles slide and merge, a tile is
  placed on an empty cell, each empty cell equally likely, a 2 with probability 0.9 and a 4 with 0.1: 32 outcomes,
  outcome 2 x cell + (0 for a 2, 1 for a 4). The reward is pgx's, the sum of the tiles the move merged, in points;
  the game ends when no move is legal, or after `max_length` moves (default 2,000: a game that reaches the 2048
  tile plays about a thousand; random games' lengths are in experiments/studies/pgx_chance/results/). Its return
  from any position lies in
  `return_bounds` = (0, an upper bound that `max_length` implies: `max_return_2048`, 95,834 points for 2,000
  moves), far wider than the thousands a game of the first hours scores; `return_scaling` "sqrt" (MuZero's
  h(x) = sqrt(x + 1) - 1 + 0.001 x before the linear map) spreads those over more of the network's [-1, 1] than the
  linear map would (2,000 points: -0.77 against -0.96); the two compared in experiments/studies/pgx_chance. An illegal
  move ends the game and takes back what the game had paid (the protocol's one-player rule: the episode's return
  becomes `return_bounds[0]`, 0); the state keeps the score for that and for the record.
* **backgammon** (two players, 156 actions: pgx's micro-actions, 6 x source + die, a checker moved by one die; a
  turn is two such moves, four with doubles, and a "no move" action where none is legal). The dice are thrown
  when a turn ends: 21 outcomes, the distinct rolls of two dice (outcome k is the k-th pair (a, b), a <= b, in
  order (1,1), (1,2), ..., (6,6)), a double with probability 1/36 and any other with 2/36; a move that does not
  end the turn puts all the weight on outcome 0. pgx keeps the dice in the order they fell; these games keep them
  smaller first (which changes no legal move and no later state otherwise). The winner's reward is +1 and the
  loser's -1: a gammon or a backgammon, which pgx pays 2 or 3 points, counts as one win here. The game ends
  drawn after `max_length` micro-moves (default 1,000: random games end well within it, but games against the
  one-ply greedy player, which hits whenever it can, may reach it; both measured in
  experiments/studies/pgx_chance/results/). The opening roll and who moves first come from `init`'s key, as in
  pgx.

Player ids, legal masks at the end, absorbing terminal states, illegal moves and observations follow
`azjax.games.pgx_adapter`'s conventions (see its docstring): pgx's observation from the side to move, cast to
float32 (2048: [4, 4, 31], a tile's exponent one-hot per cell; backgammon: [34], the board from the mover's side
and the dice still to play).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games import pgx_adapter
from azjax.games.base import Game, State, chance_game_steps, chance_key_data, resolve_step

CHANCE_ENVS: dict[str, int] = {
    # env_id: the default move limit (see the module docstring).
    "2048": 2000,
    "backgammon": 1000,
}
"""pgx's environments with chance that the adapter plays, with their default `max_length`."""

MOVES_2048 = ("left", "up", "right", "down")
"""2048's actions' names, by action id."""
SCALING_2048 = "sqrt"
"""2048's default `Game.return_scaling` (see the module docstring)."""
TILE_PROBABILITIES = (0.9, 0.1)
"""2048: the chances that a new tile is a 2 or a 4."""
DICE_PAIRS: tuple[tuple[int, int], ...] = tuple((a, b) for a in range(6) for b in range(a, 6))
"""Backgammon's 21 outcomes: the dice (a, b), 0-based faces (0 is a 1), a <= b."""


def max_return_2048(max_length: int) -> float:
    """An upper bound on 2048's score in a game of `max_length` moves: a tile of 2^k built from 2s has scored
    (k - 1) 2^k points in its merges, so a board whose tiles add up to M has scored at most M (log2 M - 1), and M is
    at most 4 (max_length + 2) (two tiles at the start and one after every move, each at most a 4)."""
    mass = 4.0 * (max_length + 2)
    return float(math.ceil(mass * (math.log2(mass) - 1.0)))


class Pgx2048State(State):
    """A 2048 position: the common fields (player 0 always moves; `rewards[0]` the points the last move merged),
    pgx's state, the score so far and the chance key."""

    pgx_state: Any
    """pgx's 2048 state (pgx.play2048.State)."""
    score: jax.Array
    """[] float32, the points paid so far in this game."""
    chance_key: jax.Array
    """uint32 [2], the key data `step` draws the next tile from."""


class PgxBackgammonState(pgx_adapter.PgxState):
    """A backgammon position: `azjax.games.pgx_adapter.PgxState` (pgx's state, its seats) and the chance key."""

    chance_key: jax.Array
    """uint32 [2], the key data `step` draws the next dice from."""


# ------------------------------------------------------------------------------------------------------------------
# 2048


def _slide_2048(board: jax.Array, action: jax.Array, *, rules: Any) -> tuple[jax.Array, jax.Array]:
    """The board [16] after the tiles slide and merge towards `action` (pgx's functions), and the points merged."""
    grid = board.reshape(4, 4)
    grid = jax.lax.switch(action, [lambda k=k: jnp.rot90(grid, k) for k in range(4)])
    grid, merged = jax.vmap(rules._slide_and_merge)(grid)
    grid = jax.lax.switch(action, [lambda k=k: jnp.rot90(grid, -k) for k in range(4)])
    return grid.ravel(), merged.sum()


def _chance_outcomes_2048(state: Pgx2048State, action: jax.Array, *, rules: Any) -> jax.Array:
    action = jnp.clip(jnp.asarray(action, jnp.int32), 0, 3)
    slid, _ = _slide_2048(state.pgx_state._board, action, rules=rules)
    empty = (slid == 0).astype(jnp.float32)
    count = empty.sum()
    per_cell = empty / jnp.maximum(count, 1.0)
    probabilities = (per_cell[:, None] * jnp.asarray(TILE_PROBABILITIES, jnp.float32)[None, :]).reshape(32)
    nothing_drawn = state.terminated | ~state.legal_action_mask[action] | (count == 0)
    return jnp.where(nothing_drawn, jax.nn.one_hot(0, 32), probabilities).astype(jnp.float32)


def _pgx_step_2048(pgx_state: Any, action: jax.Array, outcome: jax.Array, *, env: Any, rules: Any) -> Any:
    """pgx's `step` of a legal `action` in a state in play, with the tile of `outcome` where pgx's key places one."""
    board, merged = _slide_2048(pgx_state._board, action, rules=rules)
    board = board.at[outcome // 2].set(outcome % 2 + 1)
    mask = rules._legal_action_mask(board.reshape(4, 4))
    terminated = ~mask.any()
    moved = pgx_state.replace(
        _step_count=pgx_state._step_count + 1,
        _board=board,
        rewards=jnp.float32([merged]),
        legal_action_mask=mask | terminated,  # pgx: every action "legal" once the game is over
        terminated=terminated,
    )
    return moved.replace(observation=env.observe(moved))


def _wrap_2048(pgx_state: Any, score: jax.Array, chance_key: jax.Array, max_length: int) -> Pgx2048State:
    over = pgx_state.terminated | (pgx_state._step_count >= max_length)
    return Pgx2048State(
        current_player=jnp.int32(0),
        legal_action_mask=pgx_state.legal_action_mask & ~over,
        terminated=over,
        rewards=jnp.stack([pgx_state.rewards[0].astype(jnp.float32), jnp.float32(0.0)]),
        pgx_state=pgx_state,
        score=score,
        chance_key=chance_key,
    )


def _init_2048(key: jax.Array, *, env: Any, max_length: int) -> Pgx2048State:
    return _wrap_2048(env.init(key), jnp.float32(0.0), chance_key_data(key), max_length)


def _transition_2048(state: Pgx2048State, action: jax.Array, outcome: jax.Array, *, env: Any, rules: Any,
                     max_length: int) -> Pgx2048State:
    action = jnp.asarray(action, jnp.int32)
    moved = _pgx_step_2048(state.pgx_state, jnp.clip(action, 0, 3), jnp.clip(outcome, 0, 31), env=env, rules=rules)
    new_state = _wrap_2048(moved, state.score, state.chance_key, max_length)
    # The protocol's one-player illegal move: the episode's return becomes return_bounds[0] = 0.
    after = resolve_step(state, new_state, action, illegal_reward=-state.score)
    return after.replace(score=state.score + after.rewards[0])


def _render_2048(state: Pgx2048State) -> str:
    board = np.asarray(state.pgx_state._board).reshape(4, 4)
    width = 5
    rows = [" ".join(f"{(2 ** int(v)) if v else '.':>{width}}" for v in row) for row in board]
    moves = int(state.pgx_state._step_count)
    if bool(state.terminated):
        status = f"game over after {moves} moves"
    else:
        names = [name for name, legal in zip(MOVES_2048, np.asarray(state.legal_action_mask), strict=True) if legal]
        status = f"move {moves + 1}; legal: {', '.join(names)}"
    return "\n".join([f"2048, score {int(state.score)}, {status}", *rows])


def _string_to_action_2048(text: str) -> int:
    word = text.strip().lower()
    for action, name in enumerate(MOVES_2048):
        if word in (name, name[0], str(action)):
            return action
    raise ValueError(f"{text!r} is not a move: left, up, right or down (l, u, r, d, or 0-3)")


def _make_2048(max_length: int, return_scaling: str) -> Game:
    pgx = pgx_adapter._import_pgx()
    import pgx.play2048 as rules

    env = pgx.make("2048")
    outcomes = functools.partial(_chance_outcomes_2048, rules=rules)
    step, step_outcome = chance_game_steps(
        outcomes, functools.partial(_transition_2048, env=env, rules=rules, max_length=max_length))
    options = [f"max_length={max_length}"] if max_length != CHANCE_ENVS["2048"] else []
    options += [f"return_scaling={return_scaling}"] if return_scaling != SCALING_2048 else []
    return Game(
        name="pgx:2048" + (f"({', '.join(options)})" if options else ""),
        num_actions=4,
        observation_shape=(4, 4, 31),
        max_length=max_length,
        init=functools.partial(_init_2048, env=env, max_length=max_length),
        step=step,
        observe=pgx_adapter._observe,
        render=_render_2048,
        action_to_string=lambda action: MOVES_2048[int(action)],
        string_to_action=_string_to_action_2048,
        draw=functools.partial(pgx_adapter._draw, num_actions=4),
        num_players=1,
        return_bounds=(0.0, max_return_2048(max_length)),
        return_scaling=return_scaling,
        num_chance_outcomes=32,
        chance_outcomes=outcomes,
        step_outcome=step_outcome,
    )


# ------------------------------------------------------------------------------------------------------------------
# Backgammon


def _turn_ends(pgx_state: Any, action: jax.Array, *, rules: Any) -> tuple[Any, jax.Array, jax.Array]:
    """pgx's move without its dice: the state after `action`'s checker move, whether it won, and whether the turn
    passes (so that the dice are thrown)."""
    moved = rules._update_by_action(pgx_state, action)
    won = rules._is_all_off(moved._board)
    passes = ~won & (rules._is_turn_end(moved) | (action // 6 == 0))
    return moved, won, passes


def _chance_outcomes_backgammon(state: PgxBackgammonState, action: jax.Array, *, rules: Any) -> jax.Array:
    action = jnp.clip(jnp.asarray(action, jnp.int32), 0, 6 * 26 - 1)
    _, _, passes = _turn_ends(state.pgx_state, action, rules=rules)
    doubles = jnp.asarray([a == b for a, b in DICE_PAIRS])
    rolls = jnp.where(doubles, 1.0 / 36.0, 2.0 / 36.0)
    roll_follows = passes & ~state.terminated & state.legal_action_mask[action]
    return jnp.where(roll_follows, rolls, jax.nn.one_hot(0, len(DICE_PAIRS))).astype(jnp.float32)


def _pgx_step_backgammon(pgx_state: Any, action: jax.Array, outcome: jax.Array, *, env: Any, rules: Any) -> Any:
    """pgx's `step` of a legal `action` in a state in play, with the dice of `outcome` where pgx's key throws them."""
    pgx_state = pgx_state.replace(_step_count=pgx_state._step_count + 1)
    moved, won, passes = _turn_ends(pgx_state, action, rules=rules)
    dice = jnp.asarray(DICE_PAIRS, jnp.int32)[outcome]
    board = rules._flip_board(moved._board)
    turned = moved.replace(
        current_player=(moved.current_player + 1) % 2,
        _board=board,
        _turn=(moved._turn + 1) % 2,
        _dice=dice,
        _playable_dice=rules._set_playable_dice(dice),
        _played_dice_num=jnp.int32(0),
        legal_action_mask=rules._legal_action_mask(board, dice),
    )
    after = jax.lax.cond(won, lambda: rules._winning_step(moved),
                         lambda: jax.tree.map(lambda a, b: jnp.where(passes, a, b), turned, moved))
    after = after.replace(legal_action_mask=after.legal_action_mask | after.terminated)
    return after.replace(observation=env.observe(after))


def _wrap_backgammon(pgx_state: Any, seats_swapped: jax.Array, chance_key: jax.Array,
                     max_length: int) -> PgxBackgammonState:
    wrapped = pgx_adapter._wrap(pgx_state, seats_swapped, max_length)
    return PgxBackgammonState(
        current_player=wrapped.current_player,
        legal_action_mask=wrapped.legal_action_mask,
        terminated=wrapped.terminated,
        rewards=jnp.sign(wrapped.rewards),  # a gammon (2 points) or a backgammon (3) is one win
        pgx_state=pgx_state,
        seats_swapped=seats_swapped,
        chance_key=chance_key,
    )


def _init_backgammon(key: jax.Array, *, env: Any, max_length: int) -> PgxBackgammonState:
    pgx_state = env.init(key)
    return _wrap_backgammon(pgx_state, pgx_state.current_player == 1, chance_key_data(key), max_length)


def _transition_backgammon(state: PgxBackgammonState, action: jax.Array, outcome: jax.Array, *, env: Any,
                           rules: Any, max_length: int) -> PgxBackgammonState:
    action = jnp.asarray(action, jnp.int32)
    moved = _pgx_step_backgammon(state.pgx_state, jnp.clip(action, 0, 6 * 26 - 1),
                                 jnp.clip(outcome, 0, len(DICE_PAIRS) - 1), env=env, rules=rules)
    return resolve_step(state, _wrap_backgammon(moved, state.seats_swapped, state.chance_key, max_length), action)


def _render_backgammon(state: PgxBackgammonState) -> str:
    """The board from the mover's side (pgx's: the mover's checkers move from point 0 to 23, then off), the dice
    still to play and the legal actions (6 x source + die - 1, sources: 0 no move, 1 the bar, 2 + point)."""
    pgx_state = state.pgx_state
    board = np.asarray(pgx_state._board)
    mover = int(state.current_player)
    marks = ("X", "O") if mover == 0 else ("O", "X")
    points = " ".join(f"{i}:{marks[0] if n > 0 else marks[1]}{abs(n)}" for i, n in enumerate(board[:24]) if n)
    dice = [int(d) + 1 for d in np.asarray(pgx_state._playable_dice) if d >= 0]
    moves = int(pgx_state._step_count)
    if bool(state.terminated):
        rewards = np.asarray(state.rewards)
        status = f"player {int(np.argmax(rewards))} won" if rewards.any() else "game over (drawn at the move limit)"
    else:
        legal = np.flatnonzero(np.asarray(state.legal_action_mask)).tolist()
        status = (f"player {mover} ({marks[0]}) to move, dice to play {dice or 'none'}; legal actions: {legal}")
    return (f"pgx backgammon after {moves} micro-moves: {status}\n"
            f"points (from {marks[0]}'s side, moving 0 -> 23): {points}\n"
            f"bar {marks[0]}{board[24]} {marks[1]}{-board[25]}, off {marks[0]}{board[26]} {marks[1]}{-board[27]}")


def _make_backgammon(max_length: int) -> Game:
    pgx = pgx_adapter._import_pgx()
    import pgx.backgammon as rules

    env = pgx.make("backgammon")
    outcomes = functools.partial(_chance_outcomes_backgammon, rules=rules)
    step, step_outcome = chance_game_steps(
        outcomes, functools.partial(_transition_backgammon, env=env, rules=rules, max_length=max_length))
    num_actions = 6 * 26
    default = max_length == CHANCE_ENVS["backgammon"]
    return Game(
        name="pgx:backgammon" + ("" if default else f"(max_length={max_length})"),
        num_actions=num_actions,
        observation_shape=(34,),
        max_length=max_length,
        init=functools.partial(_init_backgammon, env=env, max_length=max_length),
        step=step,
        observe=pgx_adapter._observe,
        render=_render_backgammon,
        action_to_string=str,
        string_to_action=functools.partial(pgx_adapter._string_to_action, num_actions=num_actions),
        draw=functools.partial(pgx_adapter._draw, num_actions=num_actions),
        num_chance_outcomes=len(DICE_PAIRS),
        chance_outcomes=outcomes,
        step_outcome=step_outcome,
    )


# ------------------------------------------------------------------------------------------------------------------
# The one-ply greedy player's scores (`azjax.bots.oneply_bot`, the agent "oneply")


def _score_2048(state: State, action: jax.Array, after: State) -> jax.Array:
    """2048's one-ply score: the points the move merges."""
    del state, action
    return after.rewards[0]


def _pips(board: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Pip counts (the dice points still to travel) of pgx's board seen from its mover (positive checkers, moving
    from point 0 to 23 and off; the bar 25 points away) and of the other player (negative checkers, 23 to 0)."""
    points = board[:24]
    index = jnp.arange(24)
    mover = jnp.sum(jnp.maximum(points, 0) * (24 - index)) + 25 * board[24]
    other = jnp.sum(jnp.maximum(-points, 0) * (index + 1)) - 25 * board[25]
    return mover, other


def _score_backgammon(state: State, action: jax.Array, after: State) -> jax.Array:
    """Backgammon's one-ply score, for the player who moved: the other player's pip count minus their own (a hit
    sends a checker back to the bar), a win above everything."""
    del action
    mover = state.pgx_state.current_player  # type: ignore[attr-defined]
    still, other = _pips(after.pgx_state._board)  # type: ignore[attr-defined]
    same_side = after.pgx_state.current_player == mover  # type: ignore[attr-defined]
    own, theirs = jnp.where(same_side, still, other), jnp.where(same_side, other, still)
    won = after.terminated & (jnp.max(after.rewards) > 0) & ~state.terminated
    return jnp.where(won, 1e6, (theirs - own).astype(jnp.float32))


ONEPLY_SCORES: dict[str, Any] = {"pgx:2048": _score_2048, "pgx:backgammon": _score_backgammon}
"""The games the agent "oneply" (`azjax.bots.oneply_bot`) plays, by name (options left out), with its score."""


def oneply_score(game: Game) -> Any:
    """The one-ply score of the agent "oneply" (`azjax.bots.oneply_bot`) for pgx's 2048 (the points a move merges) or
    backgammon (the pip counts' difference after it); ValueError for any other game."""
    score = ONEPLY_SCORES.get(game.name.partition("(")[0])
    if score is None:
        raise ValueError(f"the one-ply greedy player plays pgx:2048 (most points merged) and pgx:backgammon (best pip "
                         f"count), not {game.name}")
    return score


def from_pgx_chance(env_id: str, *, max_length: int | None = None, return_scaling: str | None = None) -> Game:
    """pgx's `env_id` ("2048" or "backgammon") as an azjax game with chance; see the module docstring.
    `return_scaling` (2048 only; `Game.return_scaling`): how its points map onto the network's value, `SCALING_2048`
    by default."""
    if env_id not in CHANCE_ENVS:
        raise ValueError(f"pgx environment {env_id!r} is not one of the games with chance: {', '.join(CHANCE_ENVS)}")
    max_length = CHANCE_ENVS[env_id] if max_length is None else max_length
    if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 1:
        raise ValueError(f"max_length must be an int >= 1, got {max_length!r}")
    if env_id == "2048":
        return _make_2048(max_length, SCALING_2048 if return_scaling is None else return_scaling)
    if return_scaling is not None:
        raise ValueError("return_scaling is an option of 2048, a one-player game; backgammon's outcome is its value")
    return _make_backgammon(max_length)


__all__ = ["CHANCE_ENVS", "DICE_PAIRS", "ONEPLY_SCORES", "TILE_PROBABILITIES", "Pgx2048State", "PgxBackgammonState",
           "from_pgx_chance", "max_return_2048", "oneply_score"]
