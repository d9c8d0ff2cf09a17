"""`check_game`: does a game follow the protocol of `azjax.games.base`? Run it on every game you write.

Run it on a game of your own before you train on it, in a shell or in your tests::

    import azjax.games
    from my_package.my_game import make_my_game

    report = azjax.games.check_game(make_my_game())      # raises GameCheckError at the first problem
    print(report)    # my_game: 64 random games, 1342 moves (longest 38), ...; all checks passed in 1.6 s

    def test_my_game_follows_the_protocol():             # e.g. in tests/test_my_game.py
        azjax.games.check_game(make_my_game(), num_games=16)

or from the command line, `azjax check my_module:make_my_game [--positions my_module:TEST_POSITIONS]` (exit status 1
on a failure).

`check_game` plays `num_games` games at once with uniformly random legal moves, as callers run a game: `init`,
`step` and `observe` are each vmapped and jitted once, and the host drives `max_length + 1` moves (so every game
also steps its terminal state at least once) and checks the recorded trajectories with numpy. It runs these
checks, roughly in this order; the name in brackets is the one an error message gives:

* [static_fields] `name`, `num_actions >= 1`, `observation_shape` (a tuple of 1, 2 or 3 positive ints: the
  network reads (F,) as features, (H, W) as a board of one plane and (H, W, C) as a board of C planes),
  `max_length >= 1`, `observation_version >= 1`, and callable `init`, `step`, `observe`.
* [symmetries] every `Symmetry.action_index` is a permutation of `range(num_actions)` given as Python ints, and
  `transform` keeps the observation's shape and dtype.
* [trace] `init`, `step`, `observe` and the symmetries' `transform` trace, alone and under `jax.vmap`, and run
  under `jax.jit`; the message names the function that failed and the original error is chained (`__cause__`).
* [state_fields] the start state has `current_player` int32 [], `legal_action_mask` bool [A], `terminated` bool []
  and `rewards` float32 [2].
* [observation] `observe` returns float32 `observation_shape`, with finite values in every state played.
* [state_structure] `step` returns a state of the same pytree structure, shapes and dtypes as it is given, so the
  state keeps them all game long.
* [retrace] jitted, vmapped `init`, `step` and `observe` are traced once for the whole check: later batches of the
  same shape (other keys, the states of later moves) reuse the first trace. Weakly typed state fields
  (`jnp.asarray(0)` in `init`, where `step` returns a strong int32) are the usual cause.
* [batch_independence] a game's trajectory does not change when it sits elsewhere in the batch, among other games.
* [start_state] the start state has player 0 to move, is not terminated and has zero rewards.
* [legal_mask] the legal mask is non-empty in every non-terminal state and all False in terminal ones.
* [alternation] `current_player` is 0 or 1 and alternates on every step that does not end the game.
* [zero_sum] `rewards[0] + rewards[1] == 0` after every step (values other than -1, 0, +1 are allowed).
* [reward_range] every reward lies in [-1, 1]: the network's value head (a tanh) predicts values in that range
  only, so a larger reward is a target it can never reach; scale such rewards into [-1, 1].
* [reward_timing] rewards are zero after every step that does not end the game.

A one-player game (`num_players == 1`) has three checks in place of the four above:

* [one_player] `current_player` is 0 in every state, and `rewards[1]` is 0 after every step.
* [finite_rewards] every reward is finite.
* [return_range] the return from every position played (the sum of `rewards[0]` from there to the game's end, or
  to the last move played) lies within the game's `return_bounds`, which the value head's range is mapped onto.
A game with chance (`num_chance_outcomes` > 0) may give a player several moves in a row ([alternation] then checks
only that `current_player` is 0 or 1), and has three checks more, on every move of the random games:

* [chance_probabilities] `chance_outcomes(state, action)` is float32 [C], finite, non-negative and sums to 1.
* [chance_step] the state `step` produced is `step_outcome(state, action, c)` for an outcome c of non-zero
  probability (the `chance_key` field aside).
* [chance_frequencies] the outcomes `step` drew follow `chance_outcomes`' probabilities: over all chance events
  (at least 50), the randomised probability-integral transform of each drawn outcome is uniform (a
  Kolmogorov-Smirnov test at p = 1e-6, so that a correct game fails about once in a million checks).

* [absorbing] stepping a terminated state with any action changes no field and pays zero rewards.
* [illegal_action] an illegal action in a non-terminal state ends the game: -1 for the mover, +1 for the opponent
  (one player: the reward that brings the episode's return to `return_bounds[0]`, the lowest, the rewards paid
  before it counted; nothing to player 1); the state it leaves has an all-False legal mask and is absorbing
  (stepping it changes nothing and pays zero).
* [max_length] every game is over after `max_length` moves.
* [yardstick] a puzzle's judge (`Game.yardstick`), on the states of the random games: `is_solved` gives a bool for
  each, and a state it calls solved has ended the game; `fewest_moves` gives one int per state, 0 exactly where
  the state is solved, never -1 on a state that random play then solved, and never more than one move above the
  state a legal move leads to (the fewest moves from a state are at most one more than from any state it reaches);
  the judge's own `starts` give states that are not over.
* [symmetries] for each symmetry under which a start observation is invariant, that random game and its mirror
  image (actions mapped by `Symmetry.map_action`, from the same start) agree after every move:
  `transform(observe(state)) == observe(mirror)`, `apply_to_actions(mask(state)) == mask(mirror)`, and equal
  `terminated` and `rewards`. Symmetries that no start leaves invariant are listed in the report, unchecked.

* [positions] your own test positions (`positions=[Position(...)]`): each board, built by `game.from_ascii`, has
  exactly the legal moves given, and (after the move given, if any) the player to move, `terminated`, the winner
  and the rewards given. This is where a game's actual rules are checked: random play cannot know them.

And warnings (in `CheckReport.warnings`, and through Python's `warnings`), not errors, since some games end this
way on purpose; at most one, the first that applies, of:

* the player who made the final move lost every decisive random game (at least 4): a sign that the reward's sign
  is flipped (the winner paid -1). The reverse, a final mover who never loses, is what every game whose winning
  move ends it looks like, so it is not warned about.
* the decisive games ended by one player's move (at least 3) all paid that player a negative reward while those
  ended by the other's move (at least 3) all paid the other a positive one: a sign that rewards are indexed by who
  moved (`[mover's, opponent's]`) instead of by player id.
* one player won none of `ONE_SIDED_GAMES` (30) or more decisive random games. Under random play the weaker side of
  every built-in game wins about 30% of the decisive games or more (player 1 in tic-tac-toe, the attackers in
  Brandub), so that 30 or more all go one way happens at most about once in 70,000 checks of either.

What it cannot check: whether the rules are the game you meant (give test positions for that); that rewards are
paid to the right player beyond the warnings above (a flipped sign or rewards indexed by mover can pass in a game
whose final mover may win or lose, and in any game whose random games are seldom decisive; so can a winner's id
that is wrong only in some positions); whether observations are from the side to move as the protocol asks
(nothing tells the checker what a plane means) and carry enough to play well (e.g. both sides' pieces and whose
turn, where it matters); and, for symmetries, those under which no start position is invariant (listed in the
report).

A failure raises one `GameCheckError` naming the check, the game and, where play found it, the batch element and
the actions from `init` that reproduce it, with the code to do so::

    state = game.init(jax.random.fold_in(jax.random.key(seed), element))
    for action in actions:
        state = game.step(state, action)

A game that passes returns a `CheckReport` of what was played. Tic-tac-toe and Connect Four take one or two
seconds on a laptop CPU, most of it compiling.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import typing
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games.base import Game, State, Symmetry, Yardstick
from azjax.text import counted

CHECKS = (
    "static_fields",
    "symmetries",
    "trace",
    "state_fields",
    "observation",
    "state_structure",
    "retrace",
    "batch_independence",
    "start_state",
    "legal_mask",
    "alternation",
    "zero_sum",
    "reward_range",
    "reward_timing",
    "one_player",
    "finite_rewards",
    "chance_probabilities",
    "chance_step",
    "chance_frequencies",
    "return_range",
    "absorbing",
    "illegal_action",
    "max_length",
    "yardstick",
    "positions",
)
"""The names of the checks, roughly in the order `check_game` runs them (see the module docstring)."""

_COMMON_FIELDS = (  # name, shape given num_actions, dtype
    ("current_player", lambda num_actions: (), jnp.int32),
    ("legal_action_mask", lambda num_actions: (num_actions,), jnp.bool_),
    ("terminated", lambda num_actions: (), jnp.bool_),
    ("rewards", lambda num_actions: (2,), jnp.float32),
)
_ATOL = 1e-5  # float comparisons: rewards, observations
ONE_SIDED_GAMES = 30  # warn when one player wins none of at least this many decisive random games (module docstring)


class GameCheckError(AssertionError):
    """A game broke one of the protocol's rules.

    Attributes:
      check: the name of the failed check (one of `CHECKS`).
      game_name: the game's `name`.
      element: the batch element whose game shows the problem, or None when no game was played to find it. Its
        init key is `jax.random.fold_in(jax.random.key(seed), element)`.
      actions: the actions from `init` that reproduce the problem, or None.
    """

    def __init__(
        self,
        message: str,
        *,
        check: str,
        game_name: str,
        element: int | None = None,
        actions: list[int] | None = None,
    ):
        super().__init__(message)
        self.check = check
        self.game_name = game_name
        self.element = element
        self.actions = actions


@dataclasses.dataclass(frozen=True)
class CheckReport:
    """What `check_game` played on a game that passed every check.

    Attributes:
      game: the game's name.
      num_games: how many games were played (the batch size).
      num_moves: moves made in non-terminal states, over all games.
      max_game_length: the longest game, in moves.
      wins: games won by player 0 and by player 1 (a positive final reward; a one-player game's are not wins:
        see `returns`).
      num_draws: games that ended with neither player's reward positive.
      symmetries_checked: the symmetries verified by mirrored play.
      symmetries_unchecked: the symmetries under which no start observation was invariant, so that play could not
        check them (their tables were checked).
      seconds: how long the check took, compiling included.
      num_positions: how many test positions (`check_game(..., positions=...)`) were checked.
      warnings: one line for each thing that looks wrong but is not an error (a winner paid -1, ...).
      returns: a one-player game's random episodes' return: (mean, lowest, highest); None for two players.
    """

    game: str
    num_games: int
    num_moves: int
    max_game_length: int
    wins: tuple[int, int]
    num_draws: int
    symmetries_checked: tuple[str, ...]
    symmetries_unchecked: tuple[str, ...]
    seconds: float
    num_positions: int = 0
    warnings: tuple[str, ...] = ()
    returns: tuple[float, float, float] | None = None

    def __str__(self) -> str:
        symmetries = f"{counted(len(self.symmetries_checked), 'symmetry')} checked by play"
        if self.symmetries_unchecked:
            symmetries += f" ({', '.join(self.symmetries_unchecked)} not: no invariant start)"
        positions = f", {counted(self.num_positions, 'test position')}" if self.num_positions else ""
        if self.returns is not None:  # one player: returns, not wins
            mean, lowest, highest = self.returns
            played = (f"{self.num_games} random episodes, {counted(self.num_moves, 'move')} (longest "
                      f"{self.max_game_length}), return {mean:.4g} on average (lowest {lowest:.4g}, highest "
                      f"{highest:.4g})")
        else:
            played = (f"{self.num_games} random games, {counted(self.num_moves, 'move')} (longest "
                      f"{self.max_game_length}), won by player 0/player 1/drawn {self.wins[0]}/{self.wins[1]}/"
                      f"{self.num_draws}")
        text = f"{self.game}: {played}, {symmetries}{positions}; all checks passed in {self.seconds:.1f} s"
        return text + "".join(f"\nwarning: {warning}" for warning in self.warnings)


class GameCheckWarning(UserWarning):
    """Something `check_game` finds suspicious but some games do on purpose (see `CheckReport.warnings`)."""


@dataclasses.dataclass(frozen=True)
class Position:
    """A test position of your own and what the rules say about it, for `check_game(game, positions=[...])`.

    Attributes:
      board: the position as `game.render` prints it, read by `game.from_ascii`.
      legal: the legal moves, as names (`game.string_to_action`, e.g. "b2") or action ids; None: not checked.
      move: a move (name or id) to play from `board`; the checks below then apply to the position after it.
      to_move: the player to move (0 or 1; in a terminal position, whatever the game leaves there).
      terminated: whether the game is over.
      winner: 0 or 1: the game is over and that player got a positive reward; "draw": over with zero rewards.
      rewards: the rewards per player id paid by `move` (or, without one, what `from_ascii` gives the position).
      name: a label for messages (default: its index).
    """

    board: str
    legal: Sequence[str | int] | None = None
    move: str | int | None = None
    to_move: int | None = None
    terminated: bool | None = None
    winner: int | str | None = None
    rewards: tuple[float, float] | None = None
    name: str = ""


@dataclasses.dataclass(frozen=True)
class _Context:
    """What every error message needs: whose game, and how to rebuild a batch element's start."""

    game_name: str
    seed: int

    def fail(
        self,
        check: str,
        detail: str,
        *,
        element: int | None = None,
        actions: Sequence[int] | np.ndarray | None = None,
    ) -> GameCheckError:
        """The error to raise for a failed `check`, with the reproduction when a game was played to find it."""
        message = f"check_game({self.game_name!r}) failed check [{check}]: {detail}"
        action_list = None if actions is None else [int(a) for a in actions]
        if element is not None and action_list is not None:
            message += (
                f"\n  batch element {element}, actions from init: {action_list}\n  reproduce with:\n"
                f"    state = game.init(jax.random.fold_in(jax.random.key({self.seed}), {element}))\n"
                f"    for action in {action_list}:\n"
                "        state = game.step(state, action)"
            )
        return GameCheckError(
            message, check=check, game_name=self.game_name, element=element, actions=action_list
        )


class _TraceCounter:
    """Wraps a user function and records the input types of each run, which under `jit` is each trace."""

    def __init__(self, fn: Callable[..., Any], arg_names: tuple[str, ...]):
        self.fn = fn
        self.arg_names = arg_names
        self.signatures: list[list[tuple[str, str]]] = []

    def __call__(self, *args):
        self.signatures.append(
            [(name + path, kind)
             for name, arg in zip(self.arg_names, args, strict=True) for path, kind in _signature(arg)]
        )
        return self.fn(*args)


@dataclasses.dataclass(frozen=True)
class _Trajectory:
    """A batch of random games, time-major, on the host. State t is the state after t moves; T = max_length + 1."""

    players: np.ndarray  # [T + 1, B] int32
    masks: np.ndarray  # [T + 1, B, A] bool
    terminated: np.ndarray  # [T + 1, B] bool
    rewards: np.ndarray  # [T + 1, B, 2] float32, paid by the step that produced state t
    observations: np.ndarray  # [T + 1, B, *observation_shape] float32
    actions: np.ndarray  # [T, B] int32: the action played in state t: random legal, or any once terminated
    absorbing_changes: np.ndarray  # [T, B, L] bool: leaf l (rewards excluded) changed when stepping a terminal state
    illegal_actions: np.ndarray  # [T, B] int32: a random illegal action of state t, -1 if none or terminated
    illegal_terminated: np.ndarray  # [T, B] bool: whether that illegal action ended the game
    illegal_rewards: np.ndarray  # [T, B, 2] float32: what it paid
    illegal_num_legal: np.ndarray  # [T, B] int32: how many actions the state it left still allows
    illegal_first_legal: np.ndarray  # [T, B] int32: the first of them (0 if none)
    illegal_again_changes: np.ndarray  # [T, B, L] bool: leaf l (rewards excluded) changed by stepping that state
    illegal_again_rewards: np.ndarray  # [T, B, 2] float32: what stepping that state paid
    # A game with chance (C outcomes), per move: chance_outcomes(state, action) [T, B, C]; which outcomes'
    # step_outcome gives the state `step` gave [T, B, C]; the first outcome leading to the same state as each [T, B,
    # C] int32. Empty [T, B, 0] without chance.
    chance_probabilities: np.ndarray
    chance_matches: np.ndarray
    chance_classes: np.ndarray


# --------------------------------------------------------------------------------------------------------------
# The checks before play: static facts, tracing, shapes and dtypes.


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_static_fields(game: Game, ctx: _Context) -> None:
    """[static_fields]: the static facts have the right types and ranges."""
    if not isinstance(game, Game):
        raise ctx.fail("static_fields", f"expected an azjax.games.Game, got {type(game).__name__}")
    problems = []
    if not isinstance(game.name, str) or not game.name:
        problems.append(f"name must be a non-empty str, got {game.name!r}")
    if not _is_int(game.num_actions) or game.num_actions < 1:
        problems.append(f"num_actions must be an int >= 1, got {game.num_actions!r}")
    shape = game.observation_shape
    if not isinstance(shape, tuple) or not all(_is_int(d) and d >= 1 for d in shape):
        problems.append(f"observation_shape must be a tuple of positive ints, got {shape!r}")
    elif not 1 <= len(shape) <= 3:
        problems.append(
            f"observation_shape must have 1, 2 or 3 dimensions ((F,) features, (H, W) a board of one plane, "
            f"(H, W, C) a board of C planes), got {shape!r} of rank {len(shape)}; the network reads no other rank: "
            "reshape the observation, e.g. stack the extra axes into channels"
        )
    if not _is_int(game.max_length) or game.max_length < 1:
        problems.append(f"max_length must be an int >= 1, got {game.max_length!r}")
    if game.num_chance_outcomes and not all(callable(f) for f in (game.chance_outcomes, game.step_outcome)):
        problems.append("a game with chance needs callable chance_outcomes and step_outcome")
    if not _is_int(game.observation_version) or game.observation_version < 1:
        problems.append(f"observation_version must be an int >= 1, got {game.observation_version!r}")
    for field in ("init", "step", "observe"):
        if not callable(getattr(game, field)):
            problems.append(f"{field} must be callable, got {getattr(game, field)!r}")
    if problems:
        raise ctx.fail("static_fields", "; ".join(problems))


def _check_symmetry_tables(game: Game, ctx: _Context) -> None:
    """[symmetries], static part: each action_index is a permutation of range(num_actions)."""
    if not isinstance(game.symmetries, (tuple, list)):
        raise ctx.fail("symmetries", f"symmetries must be a tuple of Symmetry, got {game.symmetries!r}")
    for number, sym in enumerate(game.symmetries):
        if not isinstance(sym, Symmetry):
            raise ctx.fail("symmetries", f"symmetries[{number}] is a {type(sym).__name__}, not a Symmetry")
        index = list(sym.action_index)
        if not all(_is_int(i) for i in index):
            bad = next(i for i in index if not _is_int(i))
            raise ctx.fail(
                "symmetries",
                f"symmetries[{number}] ({sym.name!r}): action_index must be a tuple of Python ints, got an entry "
                f"{bad!r} of type {type(bad).__name__}; write tuple(int(i) for i in ...)",
            )
        if sorted(index) != list(range(game.num_actions)):
            missing = sorted(set(range(game.num_actions)) - set(index))
            raise ctx.fail(
                "symmetries",
                f"symmetries[{number}] ({sym.name!r}): action_index must be a permutation of "
                f"range({game.num_actions}); it has length {len(index)} and misses actions {missing}",
            )


def _trace(ctx: _Context, what: str, fn: Callable[..., Any], *args) -> Any:
    """`jax.eval_shape(fn, *args)`, turning an error while tracing into a [trace] failure that names `what`."""
    try:
        return jax.eval_shape(fn, *args)
    except Exception as error:
        raise ctx.fail(
            "trace", f"{what} failed to trace: {type(error).__name__}: {error}"
        ) from error


def _describe(spec: Any) -> str:
    """'int32[3, 3]' for an array or ShapeDtypeStruct, with ' (weakly typed)' where it is."""
    weak = " (weakly typed)" if getattr(spec, "weak_type", False) else ""
    return f"{spec.dtype}{list(spec.shape)}{weak}"


def _leaf_paths(tree: Any) -> list[str]:
    return [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]


def _check_traces(game: Game, ctx: _Context, keys: jax.Array) -> tuple[Any, Any]:
    """[trace], [state_fields], [observation] (shape and dtype), [state_structure] and the symmetries' transforms,
    all from abstract evaluation (nothing compiled). Returns the unbatched state and observation specs."""
    action = jax.ShapeDtypeStruct((), jnp.int32)
    state_spec = _trace(ctx, "game.init(key)", game.init, keys[0])
    _trace(ctx, "jax.vmap(game.init)(keys)", jax.vmap(game.init), keys)
    for name, shape_of, dtype in _COMMON_FIELDS:
        if not hasattr(state_spec, name):
            raise ctx.fail("state_fields", f"the state from init has no field {name!r}; subclass azjax.games.State")
        spec = getattr(state_spec, name)
        if not hasattr(spec, "shape") or spec.shape != shape_of(game.num_actions) or spec.dtype != dtype:
            want = f"{np.dtype(dtype)}{list(shape_of(game.num_actions))}"
            got = _describe(spec) if hasattr(spec, "shape") else repr(spec)
            raise ctx.fail("state_fields", f"state.{name} from init must be {want}, got {got}")

    obs_spec = _trace(ctx, "game.observe(state)", game.observe, state_spec)
    if not hasattr(obs_spec, "shape") or obs_spec.shape != tuple(game.observation_shape) or (
        obs_spec.dtype != jnp.float32
    ):
        got = _describe(obs_spec) if hasattr(obs_spec, "shape") else repr(obs_spec)
        raise ctx.fail(
            "observation",
            f"observe(state) must be float32{list(game.observation_shape)} (game.observation_shape), got {got}",
        )

    next_spec = _trace(ctx, "game.step(state, action)", game.step, state_spec, action)
    batch_spec = jax.tree.map(lambda s: jax.ShapeDtypeStruct((keys.shape[0], *s.shape), s.dtype), state_spec)
    batch_actions = jax.ShapeDtypeStruct((keys.shape[0],), jnp.int32)
    _trace(ctx, "jax.vmap(game.step)(states, actions)", jax.vmap(game.step), batch_spec, batch_actions)
    _trace(ctx, "jax.vmap(game.observe)(states)", jax.vmap(game.observe), batch_spec)
    before: Any = jax.tree.structure(state_spec)  # Any: jaxlib ships no type stubs for PyTreeDef
    after = jax.tree.structure(next_spec)
    if before != after:
        raise ctx.fail(
            "state_structure", f"step changes the state's pytree structure from\n  {before}\nto\n  {after}"
        )
    leaves = zip(_leaf_paths(state_spec), jax.tree.leaves(state_spec), jax.tree.leaves(next_spec), strict=True)
    for path, old, new in leaves:
        if old.shape != new.shape or old.dtype != new.dtype:
            raise ctx.fail(
                "state_structure",
                f"step changes state{path} from {_describe(old)} to {_describe(new)}; a state must keep its "
                "shapes and dtypes (scan carries and jit caches need it)",
            )

    if game.has_chance:
        _check_chance_traces(game, ctx, state_spec, action)

    for number, sym in enumerate(game.symmetries):
        what = f"symmetries[{number}] ({sym.name!r}).transform(observation)"
        out = _trace(ctx, what, sym.transform, obs_spec)
        if not hasattr(out, "shape") or out.shape != obs_spec.shape or out.dtype != obs_spec.dtype:
            got = _describe(out) if hasattr(out, "shape") else repr(out)
            raise ctx.fail("symmetries", f"{what} must keep {_describe(obs_spec)}, got {got}")
    return state_spec, obs_spec


def _check_chance_traces(game: Game, ctx: _Context, state_spec: Any, action: Any) -> None:
    """[trace] and [state_structure] of a chance game's `chance_outcomes` and `step_outcome`."""
    chance_outcomes, step_outcome = game.chance_outcomes, game.step_outcome
    assert chance_outcomes is not None and step_outcome is not None  # Game.__post_init__ requires them
    probabilities = _trace(ctx, "game.chance_outcomes(state, action)", chance_outcomes, state_spec, action)
    want = (game.num_chance_outcomes,)
    if not hasattr(probabilities, "shape") or probabilities.shape != want or probabilities.dtype != jnp.float32:
        got = _describe(probabilities) if hasattr(probabilities, "shape") else repr(probabilities)
        raise ctx.fail("chance_probabilities", f"chance_outcomes(state, action) must be float32{list(want)} (one "
                       f"probability per outcome, num_chance_outcomes={game.num_chance_outcomes}), got {got}")
    outcome = jax.ShapeDtypeStruct((), jnp.int32)
    after = _trace(ctx, "game.step_outcome(state, action, outcome)", step_outcome, state_spec, action, outcome)
    structure: Any = jax.tree.structure(after)  # Any: jaxlib ships no type stubs for PyTreeDef
    if structure != jax.tree.structure(state_spec) or any(
        a.shape != b.shape or a.dtype != b.dtype
        for a, b in zip(jax.tree.leaves(after), jax.tree.leaves(state_spec), strict=True)
    ):
        raise ctx.fail("state_structure", "step_outcome(state, action, outcome) must return a state of the same "
                       "structure, shapes and dtypes as step's")


def _chance_record(states: State, actions: jax.Array, next_states: State, *, game: Game) -> tuple[jax.Array, ...]:
    """What [chance_*] needs of one batch of moves (see `_Trajectory`): the outcomes' probabilities, which
    outcomes lead to the state `step` gave (the `chance_key` field aside), and each outcome's first equal."""
    chance_outcomes, step_outcome = game.chance_outcomes, game.step_outcome
    assert chance_outcomes is not None and step_outcome is not None
    outcomes = jnp.arange(game.num_chance_outcomes, dtype=jnp.int32)
    each = jax.vmap(lambda s, a: jax.vmap(lambda c: step_outcome(s, a, c))(outcomes))(states, actions)
    probabilities = jax.vmap(chance_outcomes)(states, actions)

    def compared(tree: Any) -> list[jax.Array]:  # every leaf but the key, flattened per element
        return [leaf for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]
                if "chance_key" not in jax.tree_util.keystr(path)]

    def same(x: jax.Array, y: jax.Array) -> jax.Array:
        equal = (x == y) | (jnp.isnan(x) & jnp.isnan(y)) if jnp.issubdtype(x.dtype, jnp.floating) else x == y
        return jnp.all(equal.reshape(*equal.shape[:2], -1), axis=-1)

    matches = functools.reduce(jnp.logical_and, [
        same(outcome_leaf, leaf[:, None]) for outcome_leaf, leaf in zip(compared(each), compared(next_states),
                                                                        strict=True)])
    pairs = functools.reduce(jnp.logical_and, [
        jnp.all((leaf[:, :, None] == leaf[:, None, :]).reshape(*leaf.shape[:2], leaf.shape[1], -1), axis=-1)
        for leaf in compared(each)])  # [B, C, C]: outcomes c and c' lead to the same state
    classes = jnp.argmax(pairs, axis=-1).astype(jnp.int32)
    return probabilities, matches, classes


# --------------------------------------------------------------------------------------------------------------
# Play: the game's functions jitted once, driven move by move from the host.


def _signature(tree: Any) -> list[tuple[str, str]]:
    """(path, type) of every leaf of concrete or traced arrays; under vmap, the per-element type."""
    return [(path, _describe(getattr(leaf, "aval", leaf))) for path, leaf in
            zip(_leaf_paths(tree), jax.tree.leaves(tree), strict=True)]


def _retrace_cause(first: list[tuple[str, str]], second: list[tuple[str, str]]) -> str:
    """Why a function traced with inputs of types `first` traced again for `second`."""
    if [path for path, _ in first] != [path for path, _ in second]:
        return "its input's pytree structure changed"
    for (path, old), (_, new) in zip(first, second, strict=True):
        if old != new:
            return f"{path} changed from {old} to {new}"
    return "for a reason other than its input's types (Python state that changes between calls?)"


class _Compiled:
    """The game's init, step and observe, each vmapped and jitted once for the whole check.

    Calls go through `__call__`, which reports an error while tracing or running as [trace], and a second trace
    (for a batch of the same shape, which must reuse the first) as [retrace].
    """

    def __init__(self, game: Game, ctx: _Context):
        self.ctx = ctx
        arg_names = {"init": ("key",), "step": ("state", "action"), "observe": ("state",)}
        self.counters = {name: _TraceCounter(getattr(game, name), arg_names[name]) for name in arg_names}
        self.jitted = {name: jax.jit(jax.vmap(counter)) for name, counter in self.counters.items()}

    def __call__(self, name: str, *args, element: int | None, history: Sequence[jax.Array]) -> Any:
        """Runs jit(vmap(game.<name>)) on a batch whose element 0 is `element`, reached by the actions `history`."""
        what = f"jax.jit(jax.vmap(game.{name}))"
        try:
            result = self.jitted[name](*args)
        except Exception as error:
            raise self.ctx.fail("trace", f"{what} failed: {type(error).__name__}: {error}") from error
        signatures = self.counters[name].signatures
        if len(signatures) > 1:
            raise self.ctx.fail(
                "retrace",
                f"{what} was traced again for a batch of the same shape: {_retrace_cause(*signatures[:2])}. Give "
                "every state field an explicit dtype (jnp.int32(0), not jnp.asarray(0)) so that init and step "
                "return the same types",
                element=element,
                actions=None if element is None else [int(a[0]) for a in history],
            )
        return result


def _pick(u: jax.Array, allowed: jax.Array) -> jax.Array:
    """The floor(u * n)-th of the n allowed actions, uniform for u uniform in [0, 1); -1 if none is. int32 []."""
    count = jnp.sum(allowed, dtype=jnp.int32)
    rank = jnp.minimum(jnp.floor(u * count).astype(jnp.int32), count - 1)
    choice = jnp.argmax(jnp.cumsum(allowed, dtype=jnp.int32) > rank)
    return jnp.where(count > 0, choice, -1).astype(jnp.int32)


def _random_actions(noise: jax.Array, masks: jax.Array, terminated: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Per state, from uniform noise [B, 2]: a random legal action (any action once terminated; 0 if none is legal)
    and a random illegal one (-1 if every action is legal or the state is terminated). int32 [B] each."""

    def pick_one(noise, mask, terminated):
        action = jnp.where(terminated, _pick(noise[0], jnp.ones_like(mask)), jnp.maximum(_pick(noise[0], mask), 0))
        return action, jnp.where(terminated, -1, _pick(noise[1], ~mask))

    return jax.vmap(pick_one)(noise, masks, terminated)


def _absorbing_changes(before: State, after: State) -> jax.Array:
    """bool [B, L]: which leaves (rewards excluded) of a batch of states a step changed, where `before` was
    terminated; all False elsewhere. L is the number of leaves other than rewards."""
    changes = []
    for old, new in zip(jax.tree.leaves(before), jax.tree.leaves(after), strict=True):
        if old is before.rewards:
            continue
        if jnp.issubdtype(old.dtype, jax.dtypes.prng_key):
            old, new = jax.random.key_data(old), jax.random.key_data(new)
        differ = old != new
        if jnp.issubdtype(old.dtype, jnp.floating):
            differ &= ~(jnp.isnan(old) & jnp.isnan(new))  # a NaN that stays NaN is no change
        changes.append(jnp.any(differ.reshape(differ.shape[0], int(np.prod(differ.shape[1:]))), axis=1))
    batch = before.rewards.shape[0]
    changed = jnp.stack(changes, axis=1) if changes else jnp.zeros((batch, 0), bool)
    return changed & before.terminated[:, None]


def _forfeit_record(
    after_illegal: State, again: State
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """What [illegal_action] needs of the states [B] an illegal action left, `after_illegal`, and of those states
    stepped once more, `again`: the number of actions each still allows and the first of them (0 if none), int32
    [B] each, the leaves that step changed, bool [B, L], and what it paid, float32 [B, 2]. Reduced on the device:
    a [T, B, A] mask for games of thousands of actions (chess) would be large."""
    mask = after_illegal.legal_action_mask
    num_legal = jnp.sum(mask, axis=-1, dtype=jnp.int32)
    first_legal = jnp.argmax(mask, axis=-1).astype(jnp.int32)
    return num_legal, first_legal, _absorbing_changes(after_illegal, again), again.rewards


def _state_record(states: State, observations: jax.Array) -> tuple[jax.Array, ...]:
    return states.current_player, states.legal_action_mask, states.terminated, states.rewards, observations


def _play(compiled: _Compiled, init_keys: jax.Array, noise: np.ndarray, ids: np.ndarray, game: Game) -> _Trajectory:
    """Plays a batch of random games, one jitted step per move, recording every state (see `_Trajectory`).

    The moves' randomness comes from the host as uniform noise; the threefry PRNG would take a second or more to
    compile on a CPU. Everything stays on the device until one transfer at the end.

    Args:
      compiled: the game's jitted functions.
      init_keys: [B] keys for `init`.
      noise: float32 [T, B, 2], uniform in [0, 1): per move, to pick a legal and an illegal action.
      ids: [B] the elements' ids, for error messages.
      game: the game (its chance functions, for a game with chance).
    """
    history: list[jax.Array] = []
    call = functools.partial(compiled, element=int(ids[0]), history=history)
    random_actions, absorbing_changes = jax.jit(_random_actions), jax.jit(_absorbing_changes)
    forfeit_record = jax.jit(_forfeit_record)
    chance_record = jax.jit(functools.partial(_chance_record, game=game)) if game.has_chance else None
    states = call("init", init_keys)
    state_records, move_records, chance_records = [], [], []
    for move_noise in noise:
        state_records.append(_state_record(states, call("observe", states)))
        actions, illegal = random_actions(move_noise, states.legal_action_mask, states.terminated)
        next_states = call("step", states, actions)
        after_illegal = call("step", states, jnp.maximum(illegal, 0))
        # The state a forfeit leaves must be absorbing too; any action tests it, and `actions` is at hand.
        forfeit = forfeit_record(after_illegal, call("step", after_illegal, actions))
        changes = absorbing_changes(states, next_states)
        move_records.append((actions, changes, illegal, after_illegal.terminated, after_illegal.rewards, *forfeit))
        if chance_record is not None:
            chance_records.append(_traced(compiled.ctx, "the chance functions (chance_outcomes, step_outcome)",
                                          chance_record, states, actions, next_states))
        history.append(actions)
        states = next_states
    state_records.append(_state_record(states, call("observe", states)))
    state_records, move_records, chance_records = jax.device_get((state_records, move_records, chance_records))
    if chance_records:
        probabilities, matches, classes = (np.stack(field) for field in zip(*chance_records, strict=True))
    else:
        probabilities, matches = np.zeros((*noise.shape[:2], 0), np.float32), np.zeros((*noise.shape[:2], 0), bool)
        classes = np.zeros((*noise.shape[:2], 0), np.int32)
    players, masks, terminated, rewards, observations = (
        np.stack(field) for field in zip(*state_records, strict=True))
    (actions, changes, illegal, illegal_terminated, illegal_rewards, num_legal, first_legal, again_changes,
     again_rewards) = (np.stack(field) for field in zip(*move_records, strict=True))
    return _Trajectory(
        players=players,
        masks=masks,
        terminated=terminated,
        rewards=rewards,
        observations=observations,
        actions=actions,
        absorbing_changes=changes,
        illegal_actions=illegal,
        illegal_terminated=illegal_terminated,
        illegal_rewards=illegal_rewards,
        illegal_num_legal=num_legal,
        illegal_first_legal=first_legal,
        illegal_again_changes=again_changes,
        illegal_again_rewards=again_rewards,
        chance_probabilities=probabilities,
        chance_matches=matches,
        chance_classes=classes,
    )


def _traced(ctx: _Context, what: str, fn: Callable[..., Any], *args) -> Any:
    """`fn(*args)`, an error while tracing or running it reported as a [trace] failure naming `what`."""
    try:
        return fn(*args)
    except Exception as error:
        raise ctx.fail("trace", f"{what} failed: {type(error).__name__}: {error}") from error


def _replay(
    compiled: _Compiled, init_keys: jax.Array, actions: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Replays given actions [T, B] from the starts of `init_keys`: masks [T + 1, B, A], terminated [T + 1, B],
    rewards [T + 1, B, 2] and observations [T + 1, B, *observation_shape], on the host."""
    call = functools.partial(compiled, element=None, history=())
    states = call("init", init_keys)
    records = []
    for move in actions:
        records.append((states.legal_action_mask, states.terminated, states.rewards, call("observe", states)))
        states = call("step", states, jnp.asarray(move, jnp.int32))
    records.append((states.legal_action_mask, states.terminated, states.rewards, call("observe", states)))
    masks, terminated, rewards, observations = (np.stack(field) for field in zip(*jax.device_get(records), strict=True))
    return masks, terminated, rewards, observations


# --------------------------------------------------------------------------------------------------------------
# The checks on the recorded games, on the host.


def _first(condition: np.ndarray) -> tuple[int, int] | None:
    """The earliest (t, b) where a [T, B] condition holds (lowest b among the earliest t), or None."""
    hits = np.argwhere(condition)
    return None if hits.size == 0 else (int(hits[0, 0]), int(hits[0, 1]))


def _check_batch_independence(
    first: _Trajectory, second: _Trajectory, ctx: _Context, second_ids: np.ndarray
) -> None:
    """[batch_independence]: the games the two rollouts share are the same games."""
    shared = np.flatnonzero(second_ids < first.actions.shape[1])  # positions in `second` replaying a first game
    origin = second_ids[shared]
    for name in ("actions", "players", "masks", "terminated", "rewards", "observations"):
        a = getattr(first, name)[:, origin]
        b = getattr(second, name)[:, shared]
        if np.issubdtype(a.dtype, np.floating):
            same = np.isclose(a, b, rtol=0.0, atol=_ATOL, equal_nan=True)
        else:
            same = a == b
        differ = ~np.all(same.reshape(*same.shape[:2], -1), axis=-1)
        if (hit := _first(differ)) is not None:
            t, j = hit
            element = int(origin[j])
            raise ctx.fail(
                "batch_independence",
                f"batch element {element}'s game, replayed at batch position {int(shared[j])} among other games, "
                f"differs in {name} after {counted(t, 'move')}: one game's result depends on the rest of the batch (a "
                "cross-batch reduction, a callback or a batching rule that mixes elements?)",
                element=element,
                actions=first.actions[:t, element],
            )


def _game_lengths(traj: _Trajectory) -> np.ndarray:
    """int [B]: the moves each game took to end (T + 1 where it never did)."""
    done = traj.terminated
    return np.where(done.any(axis=0), done.argmax(axis=0), done.shape[0])


def _check_trajectory(traj: _Trajectory, game: Game, ctx: _Context, leaf_names: list[str]) -> None:
    """The checks of one recorded rollout, from [observation] values to [max_length]; see the module docstring."""
    _check_observations(traj, ctx)
    _check_start_state(traj, ctx)
    _check_legal_masks(traj, ctx)
    if game.num_players == 1:
        _check_one_player(traj, game, ctx)
    else:
        _check_alternation(traj, ctx, turns_may_repeat=game.has_chance)
        _check_rewards(traj, ctx)
    if game.has_chance:
        _check_chance(traj, game, ctx)
    _check_absorbing(traj, ctx, leaf_names)
    _check_illegal_actions(traj, game, ctx, leaf_names)
    _check_max_length(traj, game, ctx)


def _fail(traj: _Trajectory, ctx: _Context, check: str, detail: str, b: int, num_actions: int) -> GameCheckError:
    """The failure of element b, reproduced by its first `num_actions` actions."""
    return ctx.fail(check, detail, element=b, actions=traj.actions[:num_actions, b])


def _went_on(traj: _Trajectory) -> np.ndarray:
    """bool [T, B]: the steps from a non-terminal state to a non-terminal one."""
    live = ~traj.terminated
    return live[:-1] & live[1:]


def _change(leaf_names: list[str], changed: np.ndarray, rewards: np.ndarray) -> str:
    """What stepping a terminated state did: the state fields it changed (changed: bool [L]), else the rewards it
    paid ([2])."""
    fields = [leaf_names[i] for i in np.flatnonzero(changed)]
    return f"changed state{', state'.join(fields)}" if fields else f"paid rewards {rewards.tolist()}"


def _check_observations(traj: _Trajectory, ctx: _Context) -> None:
    """[observation]: finite values in every state played."""
    obs = traj.observations
    if (hit := _first(~np.all(np.isfinite(obs.reshape(*obs.shape[:2], -1)), axis=-1))) is not None:
        t, b = hit
        raise _fail(traj, ctx, "observation", f"observe(state) has non-finite values after {counted(t, 'move')}", b, t)


def _check_start_state(traj: _Trajectory, ctx: _Context) -> None:
    """[start_state]: player 0 to move, not terminated, zero rewards."""
    players, done, rewards = traj.players, traj.terminated, traj.rewards
    start_bad = (players[0] != 0) | done[0] | np.any(rewards[0] != 0, axis=-1)
    if (hit := _first(start_bad[None])) is not None:
        _, b = hit
        raise _fail(
            traj, ctx, "start_state",
            "the start state must have current_player 0, terminated False and rewards [0, 0]; got "
            f"current_player {players[0, b]}, terminated {done[0, b]}, rewards {rewards[0, b].tolist()}",
            b, 0,
        )


def _check_legal_masks(traj: _Trajectory, ctx: _Context) -> None:
    """[legal_mask]: non-empty in every non-terminal state, all False in terminal ones."""
    masks, done = traj.masks, traj.terminated
    if (hit := _first(~done & ~masks.any(axis=-1))) is not None:
        t, b = hit
        raise _fail(traj, ctx, "legal_mask", "the game is not over, but legal_action_mask is all False", b, t)
    if (hit := _first(done & masks.any(axis=-1))) is not None:
        t, b = hit
        legal = np.flatnonzero(masks[t, b]).tolist()
        raise _fail(
            traj, ctx, "legal_mask",
            f"the game is over, but legal_action_mask still allows {legal}; it must be all False",
            b, t,
        )


def _check_alternation(traj: _Trajectory, ctx: _Context, *, turns_may_repeat: bool = False) -> None:
    """[alternation]: current_player is 0 or 1, and (unless `turns_may_repeat`: a game with chance) changes on
    every step that does not end the game."""
    players, actions = traj.players, traj.actions
    if (hit := _first(~traj.terminated & (players != 0) & (players != 1))) is not None:
        t, b = hit
        raise _fail(traj, ctx, "alternation", f"current_player must be 0 or 1, got {players[t, b]}", b, t)
    if turns_may_repeat:
        return
    if (hit := _first(_went_on(traj) & (players[1:] == players[:-1]))) is not None:
        t, b = hit
        always_zero = not np.any(players[~traj.terminated])  # no game ever gave player 1 a move
        hint = (": a puzzle, or any game of one player, says so with num_players=1 (current_player always 0, "
                "rewards[0] what the player receives)" if always_zero else "")
        raise _fail(
            traj, ctx, "alternation",
            f"player {players[t, b]} made move {t + 1} (action {actions[t, b]}) and the game went on, but "
            f"current_player is still {players[t + 1, b]}; players must alternate{hint}",
            b, t + 1,
        )


def _check_rewards(traj: _Trajectory, ctx: _Context) -> None:
    """[zero_sum], [reward_range] and [reward_timing]: finite, zero-sum rewards in [-1, 1], paid only by the step
    that ends the game."""
    rewards, actions = traj.rewards, traj.actions
    unbalanced = ~np.all(np.isfinite(rewards), axis=-1) | (np.abs(rewards.sum(axis=-1)) > _ATOL)
    if (hit := _first(unbalanced)) is not None:
        t, b = hit
        detail = f"rewards {rewards[t, b].tolist()} after {counted(t, 'move')} are not finite and zero-sum"
        raise _fail(traj, ctx, "zero_sum", detail, b, t)

    if (hit := _first(np.any(np.abs(rewards) > 1.0 + _ATOL, axis=-1))) is not None:
        t, b = hit
        raise _fail(
            traj, ctx, "reward_range",
            f"rewards {rewards[t, b].tolist()} after {counted(t, 'move')} lie outside [-1, 1]: the value head (a tanh) "
            "predicts values in [-1, 1] only, so it could never learn them; pay +1 for a win, -1 for a loss, 0 "
            "for a draw (or scale a score into [-1, 1])",
            b, t,
        )

    if (hit := _first(_went_on(traj) & np.any(rewards[1:] != 0, axis=-1))) is not None:
        t, b = hit
        raise _fail(
            traj, ctx, "reward_timing",
            f"move {t + 1} (action {actions[t, b]}) paid rewards {rewards[t + 1, b].tolist()} but the game is not "
            "over; rewards are paid only on the step that ends the game",
            b, t + 1,
        )


def _paid_by_move(traj: _Trajectory) -> np.ndarray:
    """float [T, B]: player 0's reward paid by the move made in state t (0 once the game is over: absorbing)."""
    return np.where(traj.terminated[:-1], 0.0, traj.rewards[1:, :, 0])


def _check_one_player(traj: _Trajectory, game: Game, ctx: _Context) -> None:
    """[one_player], [finite_rewards] and [return_range]: player 0 always to move, nothing paid to player 1, and
    finite rewards whose returns from every position played lie within the game's return bounds."""
    players, rewards, actions = traj.players, traj.rewards, traj.actions
    if (hit := _first(players != 0)) is not None:
        t, b = hit
        raise _fail(traj, ctx, "one_player", f"current_player is {players[t, b]} after {counted(t, 'move')}; in a "
                    "one-player game (num_players=1) it is always 0", b, t)
    if (hit := _first(rewards[..., 1] != 0)) is not None:
        t, b = hit
        raise _fail(traj, ctx, "one_player", f"rewards {rewards[t, b].tolist()} after {counted(t, 'move')} pay "
                    "player 1, who does not play a one-player game: rewards[1] must stay 0", b, t)
    if (hit := _first(~np.isfinite(rewards[..., 0]))) is not None:
        t, b = hit
        raise _fail(traj, ctx, "finite_rewards", f"rewards {rewards[t, b].tolist()} after {counted(t, 'move')} are "
                    "not finite", b, t)
    # The return from state t: the rewards of the moves from t on, up to the game's end (absorbing: no later pay).
    returns = np.cumsum(_paid_by_move(traj)[::-1], axis=0)[::-1]  # [T, B]
    low, high = (float(bound) for bound in game.return_bounds)
    outside = ~traj.terminated[:-1] & ((returns < low - _ATOL) | (returns > high + _ATOL))
    if (hit := _first(outside)) is not None:
        t, b = hit
        end = int(_game_lengths(traj)[b])
        raise _fail(
            traj, ctx, "return_range",
            f"the return from the position after {counted(t, 'move')} (the rewards of moves {t + 1} to {end}) is "
            f"{returns[t, b]:g}, outside return_bounds {game.return_bounds}: the value head's range is mapped onto "
            "those bounds, so it could never predict it; widen return_bounds or scale the rewards",
            b, min(end, actions.shape[0]),
        )


CHANCE_MIN_EVENTS = 50  # [chance_frequencies] needs at least this many chance events with more than one outcome
CHANCE_P_VALUE = 1e-6  # and fails a game at this significance


def _check_chance(traj: _Trajectory, game: Game, ctx: _Context) -> None:
    """[chance_probabilities], [chance_step] and [chance_frequencies] on every move played from a live state."""
    live = ~traj.terminated[:-1]  # [T, B]
    probabilities, matches = traj.chance_probabilities, traj.chance_matches
    bad = ~np.all(np.isfinite(probabilities), axis=-1) | np.any(probabilities < -_ATOL, axis=-1)
    bad |= np.abs(probabilities.sum(axis=-1) - 1.0) > _ATOL
    if (hit := _first(live & bad)) is not None:
        t, b = hit
        raise _fail(traj, ctx, "chance_probabilities",
                    f"chance_outcomes(state, action {traj.actions[t, b]}) after {counted(t, 'move')} is "
                    f"{np.round(probabilities[t, b], 6).tolist()}: the probabilities of the outcomes must be finite, "
                    "non-negative and sum to 1", b, t)
    possible = np.any(matches & (probabilities > 0), axis=-1)
    if (hit := _first(live & ~possible)) is not None:
        t, b = hit
        found = np.flatnonzero(matches[t, b]).tolist()
        detail = (f"only outcomes {found}, which have probability 0" if found else "no outcome")
        raise _fail(traj, ctx, "chance_step",
                    f"step(state, action {traj.actions[t, b]}) after {counted(t, 'move')} gave a state that "
                    f"step_outcome(state, action, c) gives for {detail}: step must draw an outcome c of non-zero "
                    "probability and do what step_outcome does with it (azjax.games.chance_game_steps builds both)",
                    b, t + 1)
    _check_chance_frequencies(traj, live, ctx)


def _check_chance_frequencies(traj: _Trajectory, live: np.ndarray, ctx: _Context) -> None:
    """[chance_frequencies]: the randomised PIT of every drawn outcome's class, Kolmogorov-Smirnov against uniform."""
    probabilities, matches, classes = traj.chance_probabilities, traj.chance_matches, traj.chance_classes
    num_outcomes = probabilities.shape[-1]
    class_mass = np.zeros_like(probabilities)  # [T, B, C]: at each class's first outcome, the class's probability
    outcome_ids = np.arange(num_outcomes)
    for c in range(num_outcomes):
        class_mass[..., c] = np.sum(np.where(classes == c, probabilities, 0.0), axis=-1)
    drawn = np.argmax(matches, axis=-1)  # [T, B]: the drawn class's first outcome
    drawn_class = np.take_along_axis(classes, drawn[..., None], axis=-1)[..., 0]
    random_event = live & (np.max(class_mass, axis=-1) < 1.0 - _ATOL)  # more than one outcome could happen
    if int(random_event.sum()) < CHANCE_MIN_EVENTS:
        return
    below = np.sum(np.where(outcome_ids < drawn_class[..., None], class_mass, 0.0), axis=-1)
    own = np.take_along_axis(class_mass, drawn_class[..., None], axis=-1)[..., 0]
    jitter = np.random.default_rng(ctx.seed).random(below.shape)
    transformed = np.sort((below + jitter * own)[random_event])
    n = len(transformed)
    ranks = np.arange(1, n + 1) / n
    distance = float(max(np.max(ranks - transformed), np.max(transformed - (ranks - 1.0 / n))))
    critical = float(np.sqrt(-np.log(CHANCE_P_VALUE / 2.0) / (2.0 * n)))
    if distance <= critical:
        return
    expected = class_mass[random_event].sum(axis=0)
    observed = np.bincount(drawn_class[random_event], minlength=num_outcomes)
    worst = int(np.argmax(np.abs(observed - expected) / np.sqrt(np.maximum(expected, 1.0))))
    raise ctx.fail("chance_frequencies",
                   f"over {n} chance events of the random games, the outcomes step drew do not follow "
                   f"chance_outcomes' probabilities (Kolmogorov-Smirnov distance {distance:.3f} > {critical:.3f}, "
                   f"p < {CHANCE_P_VALUE:g}): outcome {worst} was drawn {int(observed[worst])} times where the "
                   f"probabilities expect {expected[worst]:.1f}; step must draw with the probabilities "
                   "chance_outcomes gives")


def _check_yardstick(compiled: _Compiled, game: Game, ctx: _Context, init_keys: jax.Array, traj: _Trajectory
                     ) -> None:
    """[yardstick]: the puzzle's judge on the states of the random games `traj` (replayed from `init_keys`) and on
    starts of its own; see the module docstring."""
    yardstick = typing.cast(Yardstick, game.yardstick)
    call = functools.partial(compiled, element=None, history=())
    is_solved = jax.jit(jax.vmap(yardstick.is_solved))
    states = call("init", init_keys)
    solved, fewest = [], []
    for t in range(traj.actions.shape[0] + 1):
        flags = np.asarray(_traced(ctx, "the yardstick's is_solved", is_solved, states))
        if flags.shape != traj.terminated.shape[1:] or flags.dtype != np.bool_:
            raise ctx.fail("yardstick", f"is_solved gave {flags.dtype} {list(flags.shape)} for a batch of "
                                        f"{traj.terminated.shape[1]} states; it must give one bool per state")
        solved.append(flags)
        if yardstick.fewest_moves is not None:
            counts = np.asarray(_traced(ctx, "the yardstick's fewest_moves", yardstick.fewest_moves,
                                        jax.device_get(states)))
            if counts.shape != flags.shape or not np.issubdtype(counts.dtype, np.integer):
                raise ctx.fail("yardstick", f"fewest_moves gave {counts.dtype} {list(counts.shape)} for a batch of "
                                            f"{len(flags)} states; it must give one int per state")
            fewest.append(counts)
        if t < traj.actions.shape[0]:
            states = call("step", states, jnp.asarray(traj.actions[t], jnp.int32))
    done = np.stack(solved)
    if (hit := _first(done & ~traj.terminated)) is not None:
        t, b = hit
        raise _fail(traj, ctx, "yardstick", f"is_solved says the state after {counted(t, 'move')} is solved, but "
                                            "the game goes on: a solved puzzle must end the episode", b, t)
    if fewest:
        distance = np.stack(fewest).astype(np.int64)
        if (hit := _first((distance == 0) != done)) is not None:
            t, b = hit
            raise _fail(traj, ctx, "yardstick", f"fewest_moves is {distance[t, b]} after {counted(t, 'move')}, "
                                                f"where is_solved says {bool(done[t, b])}: it must be 0 exactly on "
                                                "the solved states", b, t)
        ever_solved = np.maximum.accumulate(done[::-1], axis=0)[::-1]  # solved at this move or a later one
        if (hit := _first((distance < 0) & ever_solved)) is not None:
            t, b = hit
            raise _fail(traj, ctx, "yardstick", f"fewest_moves is -1 (unsolvable) after {counted(t, 'move')}, "
                                                "but random play went on to solve that game", b, t)
        too_far = (~traj.terminated[:-1] & (distance[1:] >= 0)
                   & ((distance[:-1] < 0) | (distance[:-1] > distance[1:] + 1)))
        if (hit := _first(too_far)) is not None:
            t, b = hit
            raise _fail(traj, ctx, "yardstick", f"fewest_moves is {distance[t, b]} after {counted(t, 'move')} and "
                                                f"{distance[t + 1, b]} one legal move later: the fewest moves from a "
                                                "state are at most one more than from any state it reaches", b, t + 1)
    if yardstick.starts is None:
        return
    starts = _traced(ctx, "the yardstick's starts", jax.jit(jax.vmap(yardstick.starts)), init_keys)
    if np.any(np.asarray(starts.terminated)):
        raise ctx.fail("yardstick", "the yardstick's starts drew a state that is already over: the states an agent "
                                    "is judged from must leave it moves to make")


def _check_absorbing(traj: _Trajectory, ctx: _Context, leaf_names: list[str]) -> None:
    """[absorbing]: stepping a terminated state changes no field and pays zero rewards."""
    rewards = traj.rewards
    changed = traj.absorbing_changes.any(axis=-1)  # [T, B]
    paid = traj.terminated[:-1] & np.any(rewards[1:] != 0, axis=-1)
    if (hit := _first(changed | paid)) is not None:
        t, b = hit
        what = _change(leaf_names, traj.absorbing_changes[t, b], rewards[t + 1, b])
        raise _fail(
            traj, ctx, "absorbing",
            f"stepping the terminated state with action {traj.actions[t, b]} {what}; terminal states are absorbing "
            "(unchanged, zero rewards)",
            b, t + 1,
        )


def _check_illegal_actions(traj: _Trajectory, game: Game, ctx: _Context, leaf_names: list[str]) -> None:
    """[illegal_action]: an illegal action ends the game as a loss for the mover, in a terminal state like any
    other (an all-False legal mask, absorbing)."""
    illegal = traj.illegal_actions
    movers = traj.players[:-1]
    if game.num_players == 1:  # the episode's return after it is the lowest: what was paid before it counted
        paid = np.cumsum(_paid_by_move(traj), axis=0)
        paid_before = np.concatenate([np.zeros_like(paid[:1]), paid[:-1]])  # [T, B]: before the move in state t
        loss = np.stack([game.return_bounds[0] - paid_before, np.zeros_like(paid_before)], axis=-1)
    else:
        loss = np.stack([np.where(movers == 0, -1.0, 1.0), np.where(movers == 0, 1.0, -1.0)], axis=-1)
    wrong = ~traj.illegal_terminated | np.any(np.abs(traj.illegal_rewards - loss) > _ATOL, axis=-1)
    forfeited = ~traj.terminated[:-1] & (illegal >= 0)
    if (hit := _first(forfeited & wrong)) is not None:
        t, b = hit
        raise _fail(
            traj, ctx, "illegal_action",
            f"the illegal action {illegal[t, b]} by player {movers[t, b]} must end the game with rewards "
            f"{loss[t, b].tolist()} (a loss for the mover); got terminated {traj.illegal_terminated[t, b]}, "
            f"rewards {traj.illegal_rewards[t, b].tolist()} (play it after the actions below)",
            b, t,
        )
    if (hit := _first(forfeited & (traj.illegal_num_legal > 0))) is not None:
        t, b = hit
        first = int(traj.illegal_first_legal[t, b])
        raise _fail(
            traj, ctx, "illegal_action",
            f"the state the illegal action {illegal[t, b]} by player {movers[t, b]} left is terminated, but its "
            f"legal_action_mask still allows {traj.illegal_num_legal[t, b]} actions (the first: {first}, "
            f"{_action_name(game, first)}); it must be all False, as in every terminal state "
            "(azjax.games.resolve_step does this; play it after the actions below)",
            b, t,
        )
    again_paid = np.any(traj.illegal_again_rewards != 0, axis=-1)
    if (hit := _first(forfeited & (traj.illegal_again_changes.any(axis=-1) | again_paid))) is not None:
        t, b = hit
        what = _change(leaf_names, traj.illegal_again_changes[t, b], traj.illegal_again_rewards[t, b])
        raise _fail(
            traj, ctx, "illegal_action",
            f"the state the illegal action {illegal[t, b]} by player {movers[t, b]} left is terminated but not "
            f"absorbing: stepping it with action {traj.actions[t, b]} {what}; a terminated state must stay "
            "unchanged and pay zero rewards (azjax.games.resolve_step does this; play the illegal action after the "
            "actions below)",
            b, t,
        )


def _check_max_length(traj: _Trajectory, game: Game, ctx: _Context) -> None:
    """[max_length]: every game is over after `max_length` moves."""
    if (hit := _first(~traj.terminated[game.max_length][None])) is not None:
        _, b = hit
        raise _fail(
            traj, ctx, "max_length",
            f"the game is not over after max_length={game.max_length} moves; raise max_length or make sure the "
            "game ends",
            b, game.max_length,
        )


def _check_symmetries_by_play(
    compiled: _Compiled, init_keys: jax.Array, traj: _Trajectory, game: Game, ctx: _Context
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """[symmetries], by play: each game and its mirror image agree, for the games whose start observation the
    symmetry leaves unchanged. Returns the names of the symmetries checked and of those no start let us check."""
    checked, unchecked = [], []
    obs = traj.observations  # [T + 1, B, *observation_shape]
    for number, sym in enumerate(game.symmetries):
        flat = jnp.asarray(obs.reshape(-1, *obs.shape[2:]))
        try:
            expected_obs = np.asarray(jax.jit(jax.vmap(sym.transform))(flat)).reshape(obs.shape)
        except Exception as error:
            what = f"jax.jit(jax.vmap(symmetries[{number}] ({sym.name!r}).transform))"
            raise ctx.fail("trace", f"{what} failed: {type(error).__name__}: {error}") from error
        close = np.isclose(expected_obs, obs, rtol=0.0, atol=_ATOL)
        invariant = np.all(close[0].reshape(close.shape[1], -1), axis=-1)  # [B]
        if not invariant.any():
            unchecked.append(sym.name)
            continue
        checked.append(sym.name)
        index = np.asarray(sym.action_index)
        inverse = np.argsort(index)
        masks, terminated, rewards, mirror_obs = _replay(compiled, init_keys, inverse[traj.actions])
        obs_close = np.isclose(mirror_obs, expected_obs, rtol=0.0, atol=_ATOL)
        expected_masks = traj.masks[..., index]
        differences = (
            ("observe(mirror) != transform(observe(state))", ~np.all(obs_close.reshape(*obs.shape[:2], -1), -1)),
            ("legal_action_mask(mirror) != apply_to_actions(legal_action_mask(state))",
             np.any(masks != expected_masks, axis=-1)),
            ("terminated(mirror) != terminated(state)", terminated != traj.terminated),
            ("rewards(mirror) != rewards(state)", np.any(np.abs(rewards - traj.rewards) > _ATOL, axis=-1)),
        )
        for kind, (what, differ) in enumerate(differences):
            if (hit := _first(differ & invariant[None])) is None:
                continue
            t, b = hit
            if kind == 0:
                where = _first_difference("observation", mirror_obs[t, b], expected_obs[t, b], ~obs_close[t, b])
            elif kind == 1:
                where = _first_difference("legal_action_mask", masks[t, b], expected_masks[t, b],
                                          masks[t, b] != expected_masks[t, b], game=game)
            elif kind == 2:
                where = f"terminated is {terminated[t, b]} in the mirror game, {traj.terminated[t, b]} in the game"
            else:
                where = (f"rewards are {rewards[t, b].tolist()} in the mirror game, "
                         f"{traj.rewards[t, b].tolist()} in the game")
            mirrored = [int(inverse[a]) for a in traj.actions[:t, b]]
            raise ctx.fail(
                "symmetries",
                f"symmetries[{number}] ({sym.name!r}) is inconsistent with play: after {counted(t, 'move')}, {what}: "
                f"{where}. The mirror game plays the actions mapped by sym.map_action, {mirrored}, from the same "
                "start",
                element=b,
                actions=traj.actions[:t, b],
            )
    return tuple(checked), tuple(unchecked)


def _first_difference(
    field: str, mirror: np.ndarray, expected: np.ndarray, differ: np.ndarray, *, game: Game | None = None
) -> str:
    """Names the first element of `field` where the mirror game's value differs from the transformed game's."""
    where = tuple(int(i) for i in np.argwhere(differ)[0])
    if field == "legal_action_mask" and game is not None:
        action = where[0]
        return (f"action {action} ({_action_name(game, action)}) is {'legal' if mirror[where] else 'illegal'} in "
                f"the mirror game but {'legal' if expected[where] else 'illegal'} in the transformed game")
    return (f"the first differing element is {field}{list(where)}: {mirror[where]:g} in the mirror game, "
            f"{expected[where]:g} in transform(observe(state))")


def _action_name(game: Game, action: int) -> str:
    try:
        return str(game.action_to_string(int(action)))
    except Exception:  # noqa: BLE001 - a name is only a courtesy in a message
        return str(action)


def _parse_move(game: Game, move: str | int, label: str, ctx: _Context) -> int:
    if isinstance(move, int | np.integer) and not isinstance(move, bool):
        if not 0 <= move < game.num_actions:
            raise ctx.fail("positions", f"{label}: action {move} is out of range(0, {game.num_actions})")
        return int(move)
    try:
        return int(game.string_to_action(str(move)))
    except Exception as error:
        raise ctx.fail("positions", f"{label}: game.string_to_action({move!r}) failed: {error}") from error


def _check_positions(game: Game, positions: Sequence[Position], ctx: _Context) -> None:
    """[positions]: each test position has the legal moves, player to move, end and rewards its author gave."""
    if positions and game.from_ascii is None:
        raise ctx.fail("positions", "test positions need game.from_ascii (text -> State), which this game lacks")
    step = jax.jit(game.step)
    for i, position in enumerate(positions):
        label = f"test position {position.name or i}"
        try:
            state = game.from_ascii(position.board)  # type: ignore[misc]
        except Exception as error:
            raise ctx.fail("positions", f"{label}: game.from_ascii failed: {type(error).__name__}: {error}") from error
        if position.legal is not None:
            expected = {_parse_move(game, move, label, ctx) for move in position.legal}
            got = set(np.flatnonzero(np.asarray(state.legal_action_mask)).tolist())
            if got != expected:
                missing = ", ".join(_action_name(game, a) for a in sorted(expected - got))
                extra = ", ".join(_action_name(game, a) for a in sorted(got - expected))
                detail = "; ".join(part for part in (missing and f"{missing} should be legal but is not",
                                                     extra and f"{extra} should not be legal but is") if part)
                raise ctx.fail("positions", f"{label}: legal_action_mask is wrong: {detail}")
        where = label
        if position.move is not None:
            action = _parse_move(game, position.move, label, ctx)
            state = step(state, jnp.int32(action))
            where = f"{label}, after {_action_name(game, action)}"
        rewards = np.asarray(state.rewards, np.float32)
        terminated = bool(state.terminated)
        checks: list[tuple[str, object, object]] = []  # (field, expected, got)
        if position.to_move is not None:
            checks.append(("current_player", position.to_move, int(state.current_player)))
        if position.terminated is not None:
            checks.append(("terminated", position.terminated, terminated))
        if position.winner is not None:
            winner = "not over" if not terminated else 0 if rewards[0] > 0 else 1 if rewards[1] > 0 else "draw"
            checks.append(("winner", position.winner, winner))
        if position.rewards is not None and not np.allclose(rewards, position.rewards, rtol=0.0, atol=_ATOL):
            checks.append(("rewards", list(position.rewards), rewards.tolist()))
        for field, expected_value, got_value in checks:
            if expected_value != got_value:
                raise ctx.fail("positions", f"{where}: {field} should be {expected_value!r}, got {got_value!r}")


def _reward_warnings(traj: _Trajectory, lengths: np.ndarray) -> list[str]:
    """The warnings of the module docstring, about rewards paid to the wrong player: at most one, the first that
    applies of a flipped sign, rewards indexed by mover, and one player who never wins."""
    games = np.flatnonzero((lengths >= 1) & (lengths < traj.terminated.shape[0]))  # ended, by a move
    final = traj.rewards[lengths[games], games]  # [G, 2] by player id
    movers = traj.players[lengths[games] - 1, games]
    paid = final[np.arange(len(games)), movers]  # what the final mover got
    decisive = paid != 0
    if decisive.sum() >= 4 and np.all(paid[decisive] < 0):
        return [
            f"the player who made the final move lost all {int(decisive.sum())} decisive random games and won none: "
            "is the reward's sign flipped (the winner paid -1)? rewards[p] is what player p receives: +1 for the "
            "winner. Ignore this if your game's last mover loses by design (e.g. a misere game)"
        ]
    won = [int(np.sum(decisive & (movers == p) & (paid > 0))) for p in (0, 1)]  # games ended by p, won by p
    lost = [int(np.sum(decisive & (movers == p) & (paid < 0))) for p in (0, 1)]
    for p in (0, 1):
        q = 1 - p
        if lost[p] >= 3 and won[p] == 0 and won[q] >= 3 and lost[q] == 0:
            return [
                f"the decisive random games ended by player {p}'s move all paid player {p} a negative reward "
                f"({lost[p]} games), those ended by player {q}'s move all paid player {q} a positive one "
                f"({won[q]} games): are rewards indexed by who moved ([mover's, opponent's]) instead of by player "
                "id? rewards[p] is what player p receives, whoever moved: rewards = where(arange(2) == winner, "
                "1.0, -1.0)"
            ]
    wins = [int(np.sum(final[:, p] > 0)) for p in (0, 1)]
    for p in (0, 1):
        if wins[p] == 0 and wins[1 - p] >= ONE_SIDED_GAMES:
            return [
                f"player {p} won none of the {wins[1 - p]} decisive random games (player {1 - p} won them all): are "
                "rewards indexed by who moved, or the winner's id wrong? rewards[p] is what player p receives. "
                f"Ignore this if player {1 - p} wins (nearly) every game even under random play"
            ]
    return []


# --------------------------------------------------------------------------------------------------------------
# The entry point.


def _init_keys(seed: int, ids: np.ndarray) -> jax.Array:
    """[B] init keys: element `i`'s is `jax.random.fold_in(jax.random.key(seed), i)`."""
    return jax.vmap(functools.partial(jax.random.fold_in, jax.random.key(seed)))(jnp.asarray(ids, jnp.uint32))


def _move_noise(seed: int, ids: np.ndarray, num_steps: int) -> np.ndarray:
    """float32 [T, B, 2] uniform noise for the random moves, each element's from its own id, so that a game
    stays the same game wherever it sits in a batch."""
    per_element = [np.random.default_rng([seed, int(i)]).random((num_steps, 2), np.float32) for i in ids]
    return np.stack(per_element, axis=1)


def check_game(
    game: Game, *, num_games: int = 64, seed: int = 0, positions: Sequence[Position] | None = None
) -> CheckReport:
    """Checks that `game` follows the protocol of `azjax.games.base`, playing random games under jit and vmap.

    See the module docstring for the checks, in the order they run.

    Args:
      game: the game to check.
      num_games: how many random games to play at once (the batch size, at least 2). More games find rarer
        problems; each costs `max_length + 1` moves (plus one replay per symmetry).
      seed: the seed of the init keys and the random moves. Element `i`'s init key is
        `jax.random.fold_in(jax.random.key(seed), i)`.
      positions: test positions of your own with their legal moves, winner, rewards (see `Position`).
    Returns:
      A `CheckReport` of what was played, with any warnings (also issued as `GameCheckWarning`).
    Raises:
      GameCheckError: at the first failed check, naming it, the game, and where play found it the batch element
        and the actions from `init` that reproduce the problem.
      ValueError: for `num_games < 2`.
    """
    if num_games < 2:
        raise ValueError(f"num_games must be at least 2 (two batches are compared), got {num_games}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed}")
    start_time = time.perf_counter()
    ctx = _Context(game_name=str(getattr(game, "name", game)), seed=seed)
    _check_static_fields(game, ctx)
    _check_symmetry_tables(game, ctx)

    num_steps = game.max_length + 1
    first_ids = np.arange(num_games)
    # The second batch moves first-batch games one place along and puts new games (ids >= num_games) beside them.
    second_ids = np.where(first_ids % 2 == 1, first_ids - 1, num_games + first_ids)
    init_keys, second_init_keys = _init_keys(seed, first_ids), _init_keys(seed, second_ids)

    state_spec, _ = _check_traces(game, ctx, init_keys)
    compiled = _Compiled(game, ctx)
    first = _play(compiled, init_keys, _move_noise(seed, first_ids, num_steps), first_ids, game)
    second = _play(compiled, second_init_keys, _move_noise(seed, second_ids, num_steps), second_ids, game)
    _check_batch_independence(first, second, ctx, second_ids)

    leaf_names = [path for path, leaf in zip(_leaf_paths(state_spec), jax.tree.leaves(state_spec), strict=True)
                  if leaf is not state_spec.rewards]
    _check_trajectory(first, game, ctx, leaf_names)
    if game.yardstick is not None:
        _check_yardstick(compiled, game, ctx, init_keys, first)
    checked, unchecked = _check_symmetries_by_play(compiled, init_keys, first, game, ctx)

    _check_positions(game, tuple(positions or ()), ctx)

    lengths = _game_lengths(first)
    found = _reward_warnings(first, lengths) if game.num_players == 2 else []
    for warning in found:
        warnings.warn(f"check_game({game.name!r}): {warning}", GameCheckWarning, stacklevel=2)
    final_rewards = first.rewards[lengths, np.arange(num_games)]
    wins = (int(np.sum(final_rewards[:, 0] > 0)), int(np.sum(final_rewards[:, 1] > 0)))
    returns = None
    if game.num_players == 1:  # each random episode's return: what its moves paid up to its end
        paid = np.sum(_paid_by_move(first), axis=0)
        returns = (float(np.mean(paid)), float(np.min(paid)), float(np.max(paid)))
    return CheckReport(
        game=game.name,
        num_games=num_games,
        num_moves=int(np.sum(~first.terminated[:-1])),
        max_game_length=int(lengths.max()),
        wins=wins,
        num_draws=num_games - sum(wins),
        symmetries_checked=checked,
        symmetries_unchecked=unchecked,
        seconds=time.perf_counter() - start_time,
        num_positions=len(positions or ()),
        warnings=tuple(found),
        returns=returns,
    )
