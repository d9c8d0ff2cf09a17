"""Pig, the dice game: two players, a die, the first to `goal` points (default 100) wins. A game with chance.

Rules (as Neller and Presser, "Optimal Play of the Dice Game Pig", 2004, solve it). On a turn the player to move
rolls a die as often as they like. A roll of 1 loses the turn's total and ends the turn; any other face adds to
the turn's total. Instead of rolling the player may hold: the turn's total is banked into their score and the turn
passes. A player whose score and turn's total reach `goal` wins at once. Two rules make every game finish: a turn
starts with a roll (holding a total of 0 is illegal; it is never the better choice), and a game that reaches
`max_moves` decisions (default 4 x goal) ends drawn: in 20,000 games each, no game between optimal players
lasted over 279 decisions of Pig to 100, between random players 141, between hold-at-20 players 180; the limit
ends the games of a player that never holds.

Actions: 0 roll, 1 hold. Chance: after a roll, 6 outcomes (outcome c is the face c + 1), each 1/6; after a hold,
none (all the weight on outcome 0). Rewards +1 / -1 to the winner / loser on the move that ends the game, 0 a draw.

Observation: float32 [4 x goal] features, four thermometers of `goal` entries each, for the mover's score, the
opponent's score, the turn's total and the mover's score plus the turn's total: entry n of a thermometer is 1 where
n is below its value, so that every comparison with a threshold (the goal among them) is one entry. No board: the
network reads them as features (a 1 x 1 image of 4 x goal channels).

ASCII (`render`, `from_ascii`)::

    pig to 100, player 0 (X) to move
    X 37  O 52  turn total 8  last roll 4

The exact winning chances and the optimal player are in `azjax.solver.pig`.
"""

from __future__ import annotations

import dataclasses
import functools
import re

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games import drawing
from azjax.games.base import Game, State, chance_game_steps, chance_key_data, resolve_step

ROLL = 0
"""The action that rolls the die."""
HOLD = 1
"""The action that banks the turn's total and passes the turn."""
ACTIONS = ("roll", "hold")
"""The actions' names, by action id."""
FACES = 6
"""The die's faces: a roll's outcome c is the face c + 1."""
MARKS = ("X", "O")


class PigState(State):
    """A Pig position: the common `State` fields plus the scores, the turn's total, the last roll and the chance
    key."""

    scores: jax.Array
    """[2] int32, banked points, by player id."""
    turn_total: jax.Array
    """[] int32, the mover's points this turn, not banked yet."""
    last_roll: jax.Array
    """[] int32, the face of the last roll (0: none yet this game)."""
    num_moves: jax.Array
    """[] int32, decisions played."""
    chance_key: jax.Array
    """[2] uint32, the key `step` draws the next roll with."""


@dataclasses.dataclass(frozen=True)
class _Spec:
    goal: int
    max_moves: int


def _legal(turn_total: jax.Array, over: jax.Array) -> jax.Array:
    return jnp.stack([~over, (turn_total > 0) & ~over])


def _init(key: jax.Array, *, spec: _Spec) -> PigState:
    del spec
    return PigState(
        current_player=jnp.int32(0),
        legal_action_mask=_legal(jnp.int32(0), jnp.bool_(False)),
        terminated=jnp.bool_(False),
        rewards=jnp.zeros(2, jnp.float32),
        scores=jnp.zeros(2, jnp.int32),
        turn_total=jnp.int32(0),
        last_roll=jnp.int32(0),
        num_moves=jnp.int32(0),
        chance_key=chance_key_data(key),
    )


def _chance_outcomes(state: PigState, action: jax.Array) -> jax.Array:
    roll = jnp.asarray(action) == ROLL
    return jnp.where(roll, jnp.full(FACES, 1.0 / FACES), jax.nn.one_hot(0, FACES)).astype(jnp.float32)


def _transition(state: PigState, action: jax.Array, outcome: jax.Array, *, spec: _Spec) -> PigState:
    action = jnp.asarray(action, jnp.int32)
    mover = state.current_player
    face = jnp.clip(outcome, 0, FACES - 1) + 1
    rolled = action == ROLL
    bust = rolled & (face == 1)
    total = jnp.where(rolled, jnp.where(bust, 0, state.turn_total + face), 0)
    banked = jnp.where(rolled, 0, state.turn_total)
    scores = state.scores.at[mover].add(banked)
    won = scores[mover] + total >= spec.goal
    passes = (bust | ~rolled) & ~won
    num_moves = state.num_moves + 1
    over = won | (num_moves >= spec.max_moves)
    rewards = jnp.where(won, jnp.where(jnp.arange(2) == mover, 1.0, -1.0), 0.0).astype(jnp.float32)
    new_state = state.replace(
        current_player=jnp.where(passes, 1 - mover, mover).astype(jnp.int32),
        legal_action_mask=_legal(total, over),
        terminated=over,
        rewards=rewards,
        scores=scores.at[mover].add(jnp.where(won, total, 0)),
        turn_total=jnp.where(passes | won, 0, total).astype(jnp.int32),
        last_roll=jnp.where(rolled, face, state.last_roll).astype(jnp.int32),
        num_moves=num_moves,
    )
    return resolve_step(state, new_state, action)


def _observe(state: PigState, *, spec: _Spec) -> jax.Array:
    mover = state.current_player
    values = jnp.stack([state.scores[mover], state.scores[1 - mover], state.turn_total,
                        state.scores[mover] + state.turn_total])
    entries = jnp.arange(spec.goal)
    return (entries[None, :] < values[:, None]).astype(jnp.float32).reshape(4 * spec.goal)


def _render(state: PigState, *, spec: _Spec) -> str:
    scores = [int(v) for v in np.asarray(state.scores)]
    player = int(state.current_player)
    if not bool(state.terminated):
        head = f"pig to {spec.goal}, player {player} ({MARKS[player]}) to move"
    elif float(np.asarray(state.rewards)[0]) > 0:
        head = f"pig to {spec.goal}, player 0 (X) won"
    elif float(np.asarray(state.rewards)[1]) > 0:
        head = f"pig to {spec.goal}, player 1 (O) won"
    else:
        head = f"pig to {spec.goal}, drawn after {int(state.num_moves)} moves"
    roll = int(state.last_roll)
    tail = f"  last roll {roll}" if roll else ""
    return (f"{head}\nX {scores[0]}  O {scores[1]}  turn total {int(state.turn_total)}{tail}  "
            f"moves {int(state.num_moves)}")


_POSITION = re.compile(r"X\s+(\d+)\s+O\s+(\d+)\s+turn total\s+(\d+)(?:\s+last roll\s+(\d))?(?:\s+moves\s+(\d+))?")


def _from_ascii(text: str, *, spec: _Spec) -> PigState:
    match = _POSITION.search(text)
    player = re.search(r"player ([01]) \([XO]\) to move", text)
    if match is None or player is None:
        raise ValueError("expected a position as render prints it: 'player 0 (X) to move' and 'X 37  O 52  turn "
                         "total 8' (optionally 'last roll 4' and 'moves 12')")
    scores = [int(match.group(1)), int(match.group(2))]
    mover, turn_total = int(player.group(1)), int(match.group(3))
    if max(scores) >= spec.goal or scores[mover] + turn_total >= spec.goal:
        raise ValueError(f"a position in play has scores below {spec.goal}, the mover's with the turn's total too")
    last_roll, moves = int(match.group(4) or 0), int(match.group(5) or 0)
    return PigState(
        current_player=jnp.int32(mover),
        legal_action_mask=_legal(jnp.int32(turn_total), jnp.bool_(False)),
        terminated=jnp.bool_(False),
        rewards=jnp.zeros(2, jnp.float32),
        scores=jnp.asarray(scores, jnp.int32),
        turn_total=jnp.int32(turn_total),
        last_roll=jnp.int32(last_roll),
        num_moves=jnp.int32(moves),
        chance_key=chance_key_data(jax.random.key(0)),
    )


def _string_to_action(text: str) -> int:
    word = text.strip().lower()
    for action, name in enumerate(ACTIONS):
        if word in (name, name[0], str(action)):
            return action
    raise ValueError(f"{text!r} is not a move: roll or hold (r, h)")


def make_pig(goal: int = 100, max_moves: int | None = None) -> Game:
    """Pig to `goal` points (default 100), drawn after `max_moves` decisions (default 4 x goal); see the module
    docstring."""
    goal = int(goal)
    if goal < 2:
        raise ValueError(f"pig: goal must be at least 2, got {goal}")
    max_moves = 4 * goal if max_moves is None else int(max_moves)
    if max_moves < 1:
        raise ValueError(f"pig: max_moves must be at least 1, got {max_moves}")
    spec = _Spec(goal, max_moves)
    step, step_outcome = chance_game_steps(_chance_outcomes, functools.partial(_transition, spec=spec))
    options = [f"goal={goal}"] if goal != 100 else []
    options += [f"max_moves={max_moves}"] if max_moves != 4 * goal else []
    return Game(
        name="pig" + (f"({', '.join(options)})" if options else ""),
        num_actions=2,
        observation_shape=(4 * goal,),
        max_length=max_moves,
        init=functools.partial(_init, spec=spec),
        step=step,
        observe=functools.partial(_observe, spec=spec),
        render=functools.partial(_render, spec=spec),
        draw=functools.partial(drawing.draw_pig, goal=goal),
        from_ascii=functools.partial(_from_ascii, spec=spec),
        action_to_string=lambda action: ACTIONS[int(action)],
        string_to_action=_string_to_action,
        num_chance_outcomes=FACES,
        chance_outcomes=_chance_outcomes,
        step_outcome=step_outcome,
    )


def describe_move(before: PigState, action: int, after: PigState) -> str:
    """What the move `action` from `before` to `after` did, for a person following a game in the terminal:
    "X rolls a 4: turn total 9", "O rolls a 1: turn lost", "X holds: score 45", with "; X wins" where it won."""
    mover = int(before.current_player)
    mark = MARKS[mover]
    if int(action) == HOLD:
        text = f"{mark} holds: score {int(after.scores[mover])}"
    else:
        face = int(after.last_roll)
        text = f"{mark} rolls a {face}: " + ("turn lost" if face == 1 else
                                            f"turn total {int(before.turn_total) + face}")
    if bool(after.terminated) and float(after.rewards[mover]) > 0:
        text += f"; {mark} wins with {int(after.scores[mover])}"
    return text


def goal_of(game: Game) -> int:
    """The goal of a Pig game made by `make_pig` (from its name, which states a goal other than 100)."""
    if not re.fullmatch(r"pig(\(.*\))?", game.name):
        raise ValueError(f"{game.name!r} is not a game of Pig made by make_pig")
    match = re.search(r"goal=(\d+)", game.name)
    return int(match.group(1)) if match else 100


__all__ = ["ACTIONS", "FACES", "HOLD", "ROLL", "PigState", "describe_move", "goal_of", "make_pig"]
