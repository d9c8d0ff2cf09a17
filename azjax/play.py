"""A person plays an agent in the terminal: `play_game(game, bot)`, behind `azjax play`.

The board is drawn with its coordinates (`game.render`), the person types a move in the game's notation
(`game.string_to_action`, e.g. "b2" in tic-tac-toe, "d" in Connect Four), and the agent answers with its move,
its value of the position and its top candidate moves. A malformed or illegal move gets a message and a new
prompt; "help" lists the legal moves; "quit" (or end of input, or Ctrl-C) stops cleanly. In Pig each move is
followed by what the die showed ("O rolls a 4: turn total 9"). Input and output are functions, so the loop is
tested with a script and runs in a notebook.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from azjax.bots import Analysis, Bot
from azjax.games import Game, State, pig
from azjax.openings import non_ending_moves
from azjax.perfect import is_pig, solve_timeouts_raised
from azjax.text import counted

QUIT_WORDS = ("quit", "q", "exit")
HELP_WORDS = ("help", "h", "?", "moves")


@dataclasses.dataclass
class GameRecord:
    """How a game against the agent went."""

    moves: list[str]  # every move in the game's notation, in order
    human_player: int  # the person's player id (0 moves first)
    outcome: float | None  # for the person: +1 won, 0 draw, -1 lost (a one-player game: the return); None if
    #   they quit
    final_state: State


def play_game(
    game: Game,
    bot: Bot,
    *,
    human_player: int = 0,
    key: jax.Array | None = None,
    input_fn: Callable[[str], str] | None = None,
    output_fn: Callable[[str], None] | None = None,
    show_analysis: bool = True,
    num_candidates: int = 3,
    opening_moves: int = 0,
) -> GameRecord:
    """Plays one game between a person (through `input_fn` / `output_fn`) and `bot`.

    Args:
      game: any registered game.
      bot: the opponent (see `agent_specs.make_bot`).
      human_player: the person's player id: 0 moves first, 1 second.
      key: randomness for the agent (and the game's start); default: a fixed key.
      input_fn: prompt -> the person's line (default `input`, echoing lines read from a pipe); EOFError or
        KeyboardInterrupt counts as quitting.
      output_fn: shows one message, which may hold several lines (default `print`).
      show_analysis: show the agent's value and candidate moves with each of its moves.
      num_candidates: how many candidate moves to show.
      opening_moves: moves played first, uniformly random among those that do not end the game
        (`openings.non_ending_moves`; shown, and recorded in the moves); shorter only where every legal move would
        end the game.
    Returns:
      The moves, the person's seat, the outcome for the person (None if they quit) and the last state.
    Raises:
      SolveTimeout: Connect Four's perfect player gave up on a position (see `perfect.perfect_bot`).
    """
    key = jax.random.key(0) if key is None else key
    input_fn = input_fn or _terminal_input
    output_fn = output_fn or print
    init_key, agent_key, opening_key = jax.random.split(key, 3)
    step = jax.jit(game.step)
    state, moves = _play_opening(opening_key, game, game.init(init_key), opening_moves, step)
    if moves:
        output_fn(f"Opening ({len(moves)} random moves): {' '.join(moves)}")
    output_fn(
        f"{game.name}: you are player {human_player} ({'moving first' if human_player == 0 else 'moving second'}) "
        f"against {bot.name}. Type a move such as {_example(game, state)!r}; 'help' lists the legal moves, "
        "'quit' stops."
    )
    opponent = _Opponent(bot, state)
    dice = is_pig(game)
    while not bool(state.terminated):
        output_fn(game.render(state))
        if int(state.current_player) == human_player:
            typed = read_move(game, state, input_fn, output_fn)
            if typed is None:
                output_fn("You quit the game.")
                return GameRecord(moves, human_player, None, state)
            action = typed
        else:
            analysis = opponent.analyse(jax.random.fold_in(agent_key, len(moves)), state)
            action = int(analysis.action[0])
            output_fn(describe_move(game, bot.name, analysis, show_analysis=show_analysis,
                                    num_candidates=num_candidates))
        moves.append(game.action_to_string(action))
        state, before = step(state, action), state
        opponent.follow(action)
        if dice:  # the die is shown as it falls, the agent's rolls too
            output_fn(pig.describe_move(before, action, state))
    outcome = float(state.rewards[human_player])
    output_fn(game.render(state))
    output_fn("You win!" if outcome > 0 else "The agent wins." if outcome < 0 else "Draw.")
    return GameRecord(moves, human_player, outcome, state)


def play_alone(
    game: Game,
    bot: Bot | None = None,
    *,
    key: jax.Array | None = None,
    input_fn: Callable[[str], str] | None = None,
    output_fn: Callable[[str], None] | None = None,
    num_candidates: int = 3,
) -> GameRecord:
    """A person plays a one-player game (a puzzle) through `input_fn` / `output_fn`, to its end or until they
    quit; with a `bot`, its move, value (the return it expects from there) and candidate moves are shown as a hint
    before each move. The puzzle starts where its yardstick draws its starts (`Game.yardstick`), else at `init`.
    The record's outcome is the return (the rewards summed), None if they quit."""
    if game.num_players != 1:
        raise ValueError(f"{game.name} has {game.num_players} players: play it against an agent (play_game)")
    key = jax.random.key(0) if key is None else key
    input_fn = input_fn or _terminal_input
    output_fn = output_fn or print
    init_key, agent_key = jax.random.split(key)
    step = jax.jit(game.step)
    state, total = game.judged_init(init_key), 0.0  # where its judge draws them (the 8-puzzle: a uniform board)
    moves: list[str] = []
    helper = f", with hints from {bot.name}" if bot is not None else ""
    output_fn(f"{game.name}, one player{helper}. Type a move such as {_example(game, state)!r}; 'help' lists the "
              "legal moves, 'quit' stops.")
    opponent = _Opponent(bot, state) if bot is not None else None
    while not bool(state.terminated):
        output_fn(game.render(state))
        if bot is not None and opponent is not None:
            analysis = opponent.analyse(jax.random.fold_in(agent_key, len(moves)), state)
            output_fn("hint: " + describe_move(game, bot.name, analysis, show_analysis=True,
                                               num_candidates=num_candidates))
        action = read_move(game, state, input_fn, output_fn)
        if action is None:
            output_fn("You quit.")
            return GameRecord(moves, 0, None, state)
        moves.append(game.action_to_string(action))
        state = step(state, action)
        total += float(state.rewards[0])
        if opponent is not None:
            opponent.follow(action)
    output_fn(game.render(state))
    output_fn(f"Over after {len(moves)} moves: return {total:g}.")
    return GameRecord(moves, 0, total, state)


def _play_opening(key: jax.Array, game: Game, state: State, num_moves: int, step: Callable[[State, int], State]
                  ) -> tuple[State, list[str]]:
    """Up to `num_moves` uniformly random moves that do not end the game (`openings.non_ending_moves`), fewer where
    every legal move would; the state after them and the moves in the game's notation."""
    keep_going = jax.jit(functools.partial(non_ending_moves, game))
    moves: list[str] = []
    for i in range(num_moves):
        mask = keep_going(_one(state))[0]
        if not bool(mask.any()):
            break
        action = int(jax.random.categorical(jax.random.fold_in(key, i), jnp.where(mask, 0.0, -jnp.inf)))
        state = step(state, action)
        moves.append(game.action_to_string(action))
    return state, moves


class _Opponent:
    """The bot's side of a game in the terminal: its analysis of each position (jitted, for a batch of one) and,
    for a bot that reuses its search tree (`Bot.memory`), that tree, kept through the game and following both
    sides' moves."""

    def __init__(self, bot: Bot, state: State) -> None:
        self._analyse = jax.jit(bot.analyse)
        spec = bot.memory
        self._memory = None if spec is None else spec.init(_one(state))
        self._analyse_remembering = None if spec is None else jax.jit(spec.analyse)
        self._follow = None if spec is None else jax.jit(spec.follow)

    def analyse(self, key: jax.Array, state: State) -> Analysis:
        """The bot's analysis of `state` (a batch of one, on the host), its memory updated."""
        with solve_timeouts_raised():  # Connect Four's perfect player may give up on an early position
            if self._analyse_remembering is None:
                return jax.device_get(self._analyse(key, _one(state)))
            analysis, self._memory = self._analyse_remembering(key, _one(state), self._memory)
            return jax.device_get(analysis)

    def follow(self, action: int) -> None:
        """The memory, if any, follows the move `action` played in the game (by either side)."""
        if self._follow is not None:
            self._memory = self._follow(self._memory, jnp.array([action], jnp.int32), jnp.ones(1, bool))


def _one(state: State) -> State:
    """`state` as a batch of one."""
    return jax.tree.map(lambda x: x[None], state)


def _legal_names(game: Game, state: State) -> list[str]:
    return [game.action_to_string(int(a)) for a in np.flatnonzero(np.asarray(state.legal_action_mask))]


def _example(game: Game, state: State) -> str:
    names = _legal_names(game, state)
    return names[len(names) // 2] if names else "?"


def _terminal_input(prompt: str) -> str:
    """`input`, echoing the line when it comes from a pipe or file (a terminal echoes it itself), so that a log of
    piped moves reads "Your move: b2" rather than a row of prompts. `input` is looked up at call time, so that a
    replaced builtin is used."""
    line = input(prompt)
    if not sys.stdin.isatty():
        print(line)
    return line


def read_move(
    game: Game, state: State, input_fn: Callable[[str], str], output_fn: Callable[[str], None]
) -> int | None:
    """Asks until the person types a legal move (returned as an action) or quits (None)."""
    while True:
        try:
            text = input_fn("Your move: ").strip()
        except (EOFError, KeyboardInterrupt):
            return None
        word = text.lower()
        if word in QUIT_WORDS:
            return None
        if not text or word in HELP_WORDS:
            output_fn(f"Legal moves: {' '.join(_legal_names(game, state))} ('quit' stops).")
            continue
        try:
            action = int(game.string_to_action(text))
        except (ValueError, TypeError, IndexError, KeyError) as error:
            output_fn(f"Not a move: {error}. Type 'help' for the legal moves.")
            continue
        if not 0 <= action < game.num_actions:
            output_fn(f"Not a move: {text!r} is outside the board. Type 'help' for the legal moves.")
            continue
        if not bool(state.legal_action_mask[action]):
            output_fn(
                f"{game.action_to_string(action)} is not legal here. Legal moves: "
                f"{' '.join(_legal_names(game, state))}."
            )
            continue
        return action


def describe_move(
    game: Game, name: str, analysis: Analysis, *, show_analysis: bool = True, num_candidates: int = 3
) -> str:
    """'mcts:200 plays b2.' with, optionally, the agent's value and its candidates (batch element 0): for a search
    that reports its visits, the most searched moves with their visits, values and improved-policy shares (the
    move played first: the visits decided it); otherwise the agent's policy's top moves."""
    action = int(analysis.action[0])
    lines = [f"{name} plays {game.action_to_string(action)}."]
    if not show_analysis:
        return lines[0]
    value = float(analysis.value[0])
    lines.append(
        (f"  its value of the position: {value:+.2f} (+1 it wins, -1 it loses)" if game.num_players == 2 else
         f"  the return it expects from here: {value:+.2f} (returns lie in {game.return_bounds})")
        if math.isfinite(value)
        else "  its value of the position: no estimate"
    )
    policy = np.asarray(analysis.policy[0])
    action_values = np.asarray(analysis.action_values[0])
    if analysis.visits is not None:  # a search: what decided the move is the visits, the move played first
        visits = np.asarray(analysis.visits[0])
        ranked = sorted(np.flatnonzero(visits > 0), key=lambda a: (-visits[a], a != action, -policy[a]))
        candidates = [
            f"{game.action_to_string(int(a))} {counted(int(visits[a]), 'visit')}, value {action_values[a]:+.2f}, "
            f"policy {policy[a]:.0%}"
            for a in ranked[:num_candidates]
        ]
        if candidates:
            lines.append(f"  most searched: {'; '.join(candidates)}")
        return "\n".join(lines)
    order = [int(a) for a in np.argsort(-policy, kind="stable")[:num_candidates] if policy[a] > 0]
    candidates = []
    for a in order:
        q = action_values[a]
        candidates.append(
            f"{game.action_to_string(a)} {policy[a]:.0%}" + (f" (value {q:+.2f})" if math.isfinite(q) else "")
        )
    if candidates:
        lines.append(f"  top moves: {', '.join(candidates)}")
    return "\n".join(lines)
