"""The game protocol: a `Game` record of static facts and pure, unbatched functions.

A game is a frozen `Game` holding its static facts (`num_actions`, `observation_shape`, `max_length`) and pure
functions over an explicit state pytree::

    init(key) -> State
    step(state, action) -> State
    observe(state) -> Array          # observation_shape, from the side to move
    render(state) -> str

The functions are *unbatched*: callers batch them with `jax.vmap` and compile them with `jax.jit`.

Every state carries the common fields of `State` (a game's own state class usually subclasses it):

* `current_player` (int32 []): the player to move; player 0 moves first.
* `legal_action_mask` (bool [A]): True where an action is legal. All False once the game is over.
* `terminated` (bool []): the game is over.
* `rewards` (float32 [2]): what each player (indexed by player id, *not* by who moved) received on the step that
  produced this state. In a two-player game (`Game.num_players == 2`, the default): +1 win, -1 loss, 0 draw
  (values in between, e.g. a scaled score, are allowed; values outside [-1, 1] are not: the network's tanh value
  head cannot predict them), zero-sum, non-zero only on the step that ends the game. In a one-player game
  (`num_players == 1`: a puzzle, an MDP) player 0 moves every turn and `rewards[0]` may be paid on any step; the
  return from a position is the sum of the rewards of the steps from there to the end, and lies within the game's
  `return_bounds`; `rewards[1]` is always 0.

Conventions every built-in game follows and `check_game` verifies (by random play):

* Terminal states are absorbing: stepping a terminated state returns it unchanged, with zero rewards.
* An illegal action (not in `legal_action_mask`) is never silently ignored: the player who made it loses the
  game at once (rewards -1 for the mover, +1 for the opponent; in a one-player game the step pays what brings
  the episode's return to the lowest, `return_bounds[0]`, counting what the episode has paid so far, so that no
  return leaves the bounds), and the state it leaves is terminal like any other (all-False mask, absorbing).

Chance (`Game.num_chance_outcomes` = C > 0: dice, random draws). After every move a chance event picks one of C
outcomes. `chance_outcomes(state, action)` gives their exact probabilities (float32 [C], non-negative, summing to
1; a move that nothing random follows puts all its weight on one outcome), and `step_outcome(state, action,
outcome)` the position that the move and that outcome lead to (rewards, terminal and illegal-move rules as for
`step`). `step(state, action)` draws the outcome itself, from a key the state carries (the field `chance_key`,
uint32 [2] key data, seeded by `init`'s key), so that a chance game's functions stay pure functions of the state
and every caller of `step` (self-play, the arena, play) needs no key of its own. `chance_game_steps` builds both
functions from the game's probabilities and transition: `step(state, action)` equals `step_outcome(state, action,
c)` for the outcome c it drew, key included. The search plans over every outcome with its true probability
(Stochastic MuZero's chance nodes, the game as the model) and never reads the key.

And one convention `check_game` cannot verify, since it cannot tell what a plane means: observations are from
the point of view of the player to move (the mover's pieces first), or at least say whose turn it is. The value
the network predicts is always "for the player to move", so one network plays both seats only if it can tell who
that is. Every built-in game draws the board from the mover's side except Brandub, whose observation has the same
planes for both sides (attackers, defenders, ...) plus a plane saying whose turn it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct


class State(struct.PyTreeNode):
    """The fields every game state carries. Games subclass this and add their own board fields."""

    current_player: jax.Array
    """[] int32, the player to move (0 moves first)."""
    legal_action_mask: jax.Array
    """[A] bool, True = legal."""
    terminated: jax.Array
    """[] bool, the game is over."""
    rewards: jax.Array
    """[2] float32, per player id, paid by the last step."""


@dataclasses.dataclass(frozen=True)
class Symmetry:
    """A symmetry of a game: a transformation of observations with the matching permutation of actions.

    Attributes:
      name: a short label, e.g. "rot90" or "flip_lr".
      transform: maps one (unbatched) observation [*observation_shape] to the observation of the transformed
        position. Must keep shape and dtype.
      action_index: a permutation of range(num_actions) that gathers per-action arrays into the transformed
        position: `transformed[..., b] = original[..., action_index[b]]` for policies, logits and legal masks.
    """

    name: str
    transform: Callable[[jax.Array], jax.Array]
    action_index: tuple[int, ...]

    def apply_to_actions(self, per_action: jax.Array) -> jax.Array:
        """Permutes a per-action array [..., A] (policy, logits, mask) into the transformed position."""
        return per_action[..., np.asarray(self.action_index)]

    def map_action(self, action: jax.Array) -> jax.Array:
        """The action of the transformed position that corresponds to `action` of the original one."""
        inverse = np.argsort(np.asarray(self.action_index))
        return jnp.asarray(inverse)[action]


S = TypeVar("S", bound=State)  # a game's own state class


@dataclasses.dataclass(frozen=True)
class Yardstick(Generic[S]):
    """The exact judge of a puzzle (a one-player game won by reaching a goal in the fewest moves), which a game
    brings as `Game.yardstick`: training's evaluation and `azjax eval` then report the share of episodes solved
    ("solved"), solved in the fewest moves possible ("solved_optimally") and the moves beyond the fewest over the
    solved ones ("excess_moves"), all from the starts this yardstick draws.

    Attributes:
      is_solved: State -> bool [], whether a state is the goal (pure, unbatched, jittable).
      fewest_moves: host-side: a batch of start states (a pytree of numpy arrays with a leading axis B) -> int [B],
        the fewest moves that solve each (-1 where none does). None: the puzzle has no exact solution here (e.g.
        the 15-puzzle, too large for a table): the judge then reports "solved" alone.
      starts: key -> a start state (pure, unbatched, jittable), where the judge draws its starts: e.g. uniformly
        random boards where the game's own `init` also draws easier ones to learn from. None: the game's `init`.
    """

    is_solved: Callable[[S], jax.Array]
    fewest_moves: Callable[[Any], np.ndarray] | None = None
    starts: Callable[[jax.Array], S] | None = None

    def judge(self, starts: Any, solved: np.ndarray, moves: np.ndarray) -> dict[str, float]:
        """How an agent did on its episodes from `starts` (a batch of start states, numpy): `solved` bool [B]
        whether each episode ended on the goal, in `moves` int [B]. "solved": the share solved; with
        `fewest_moves`, "solved_optimally", the share solved in the fewest moves, and "excess_moves", the mean moves
        beyond the fewest over the solved episodes (absent where none was solved)."""
        solved = np.asarray(solved, bool)
        result = {"solved": float(np.mean(solved))}
        if self.fewest_moves is None:
            return result
        best = np.asarray(self.fewest_moves(starts), np.int64)
        moves = np.asarray(moves, np.int64)
        if best.shape != solved.shape:
            raise ValueError(f"the yardstick's fewest_moves gave shape {best.shape} for {len(solved)} starts: it "
                             "must give one count of moves per start")
        result["solved_optimally"] = float(np.mean(solved & (moves == best)))
        if solved.any():
            result["excess_moves"] = float(np.mean(moves[solved] - best[solved]))
        return result


@dataclasses.dataclass(frozen=True)
class Game(Generic[S]):
    """A perfect-information game as pure functions: two players taking turns, zero-sum (the default), or one
    player collecting rewards (`num_players=1`). See the module docstring.

    Derive a variant with `dataclasses.replace(game, ...)`. Build positions for tests and analysis with
    `from_ascii` where the game provides it: `game.from_ascii(game.render(state))` gives back `state`.

    Attributes:
      name: a display name for reports and logs, with the options that differ from the defaults (e.g.
        "gomoku(size=9)"). It is not a name `make` accepts: build a variant with its options,
        `make("gomoku", size=9)`, or by a registered name of its own where there is one ("gomoku9", which is also
        how the command line, which passes no options, reaches it).
      num_actions: A, the size of the action space (legal or not).
      observation_shape: the shape of `observe(state)`, e.g. (H, W, C).
      max_length: an upper bound on the number of moves in one game.
      init: key -> State, the start position (the key is unused by deterministic games).
      step: (State, int32 action) -> State.
      observe: State -> float32 [*observation_shape], from the side to move.
      render: State -> str, a human-readable board with coordinates.
      symmetries: the board symmetries for data augmentation (identity excluded).
      from_ascii: str -> State, builds a position from the text `render` prints (None if unsupported).
      action_to_string: int -> str, a move's name for people (e.g. "b3").
      string_to_action: str -> int, parses a person's move; raises ValueError with a hint when malformed.
      observation_version: which planes `observe` produces. Raise it whenever `observe` changes what it returns
        (a plane added, reordered or meaning something else): checkpoints, exports and shipped agents record the
        version that trained them, and loading one against another version fails with a clear error instead of
        feeding its network the wrong planes, unless the game's factory takes the option `observation_version`
        and can still build the old one (`azjax.games.make_observing`; Connect Four does).
      num_players: 2 (two players taking turns, zero-sum rewards at the end) or 1 (one player, rewards on any
        step: the search then adds rewards up along a line of play instead of flipping the value's sign).
      num_chance_outcomes: C, the outcomes of the chance event that follows every move (0: no chance, the
        default). With C > 0 the game gives `chance_outcomes` and `step_outcome` (see the module docstring).
      chance_outcomes: (State, action) -> float32 [C], the exact probability of each outcome after `action`.
      step_outcome: (State, action, int32 outcome) -> State, the move followed by that outcome.
      return_bounds: (low, high), the range of the return from any position, for the player to move: (-1, 1) for
        a two-player game (its outcome). The network's value head predicts in [-1, 1]; the search and the loss map
        that range onto these bounds (`value_to_return`, `return_to_value`), so a one-player game may pay its own
        units (e.g. -1 a move, bounds (-max_length, 0)).
      return_scaling: how returns map onto the network's [-1, 1] (`RETURN_SCALINGS`): "linear" (the default), or
        "sqrt" (MuZero's h first) for a one-player game whose bounds are far wider than its usual returns
        (pgx:2048's: thousands of points within bounds of about 96,000).
      yardstick: a puzzle's exact judge (`Yardstick`: its goal, the fewest moves from a start, the starts to judge
        from), with which the evaluation reports the share of episodes solved and solved in the fewest moves.
        One-player games only; None (the default): their returns alone are reported.
      draw: `draw(state, *, last_move=None, annotations=None) -> str`, a standalone SVG document (a string
        starting with "<svg") of one unbatched, concrete state: the board, the pieces, the move `last_move` (an
        action index) that led to it highlighted, and `annotations`, a mapping {action index: short text} (e.g. a
        search's visit share "41%" or a value), drawn on the square or column each action names. Host-side Python
        (convert the state with numpy), never jitted. None: `azjax.games.drawing.to_svg` and `show` then draw the
        text of `render`.
    """

    name: str
    num_actions: int
    observation_shape: tuple[int, ...]
    max_length: int
    init: Callable[[jax.Array], S]
    step: Callable[[S, jax.Array], S]
    observe: Callable[[S], jax.Array]
    render: Callable[[S], str]
    symmetries: tuple[Symmetry, ...] = ()
    from_ascii: Callable[[str], S] | None = None
    action_to_string: Callable[[int], str] = str
    string_to_action: Callable[[str], int] = int
    observation_version: int = 1
    draw: Callable[..., str] | None = None
    num_players: int = 2
    return_bounds: tuple[float, float] = (-1.0, 1.0)
    return_scaling: str = "linear"
    num_chance_outcomes: int = 0
    chance_outcomes: Callable[[S, jax.Array], jax.Array] | None = None
    step_outcome: Callable[[S, jax.Array, jax.Array], S] | None = None
    yardstick: Yardstick | None = None

    @property
    def judged_init(self) -> Callable[[jax.Array], S]:
        """`init` of the episodes an agent is judged on and a person plays: the yardstick's `starts` where the
        game brings them (the 8-puzzle's uniformly random boards), else `init`."""
        if self.yardstick is not None and self.yardstick.starts is not None:
            return self.yardstick.starts
        return self.init

    @property
    def has_chance(self) -> bool:
        """Whether a chance event follows the moves (`num_chance_outcomes` > 0)."""
        return self.num_chance_outcomes > 0

    def __post_init__(self) -> None:
        given = (self.chance_outcomes is not None, self.step_outcome is not None)
        if self.num_chance_outcomes < 0 or (self.num_chance_outcomes > 0) != all(given) or any(given) != all(given):
            raise ValueError(f"game {self.name!r}: a game with chance gives num_chance_outcomes > 0 together with "
                             f"chance_outcomes and step_outcome, a game without gives none of them (got "
                             f"num_chance_outcomes={self.num_chance_outcomes!r}, chance_outcomes "
                             f"{'given' if given[0] else 'None'}, step_outcome {'given' if given[1] else 'None'})")
        if self.num_players not in (1, 2):
            raise ValueError(f"game {self.name!r}: num_players is {self.num_players!r}; azjax plays games of 1 or 2 "
                             "players")
        low, high = self.return_bounds
        if not (np.isfinite(low) and np.isfinite(high) and low < high):
            raise ValueError(f"game {self.name!r}: return_bounds {self.return_bounds!r} must be two finite numbers, "
                             "low < high")
        if self.return_scaling not in RETURN_SCALINGS or (self.num_players == 2 and self.return_scaling != "linear"):
            raise ValueError(f"game {self.name!r}: return_scaling {self.return_scaling!r} must be one of "
                             f"{', '.join(RETURN_SCALINGS)}, and linear for a two-player game")
        if self.yardstick is not None and self.num_players != 1:
            raise ValueError(f"game {self.name!r}: a yardstick judges a puzzle, a game of one player "
                             "(num_players=1); a two-player game is judged by its matches")
        if self.num_players == 2 and tuple(self.return_bounds) != (-1.0, 1.0):
            raise ValueError(f"game {self.name!r}: a two-player game's returns are its outcome, in (-1, 1); "
                             f"return_bounds {self.return_bounds!r} is for one-player games (num_players=1)")


RETURN_SCALINGS = ("linear", "sqrt")
"""The maps of a game's returns onto the network's [-1, 1] (`Game.return_scaling`): "linear", or "sqrt", MuZero's
invertible h(x) = sign(x) (sqrt(|x| + 1) - 1) + 0.001 x before the linear map, which spreads the small returns of a
wide range over more of the value's span."""

_H_EPSILON = 1e-3


def _h(x: Any) -> Any:
    """MuZero's value scaling h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x (numpy or jax)."""
    xp = jnp if isinstance(x, jax.Array) else np
    return xp.sign(x) * (xp.sqrt(xp.abs(x) + 1.0) - 1.0) + _H_EPSILON * x


def _h_inverse(y: jax.Array) -> jax.Array:
    """The inverse of `_h` (MuZero's appendix: h is strictly increasing, and this is its closed-form inverse)."""
    root = (jnp.sqrt(1.0 + 4.0 * _H_EPSILON * (jnp.abs(y) + 1.0 + _H_EPSILON)) - 1.0) / (2.0 * _H_EPSILON)
    return jnp.sign(y) * (jnp.square(root) - 1.0)


def _scaled(bounds: tuple[float, float], scaling: str = "linear") -> tuple[float, float] | None:
    """`bounds` as floats (through h for "sqrt") where they are not the network's own [-1, 1] under the linear map
    (else None: no mapping at all)."""
    if scaling not in RETURN_SCALINGS:
        raise ValueError(f"return scaling {scaling!r}: expected one of {', '.join(RETURN_SCALINGS)}")
    low, high = (float(bound) for bound in bounds)
    if scaling == "sqrt":
        return float(_h(np.float64(low))), float(_h(np.float64(high)))
    return None if (low, high) == (-1.0, 1.0) else (low, high)


def value_to_return(bounds: tuple[float, float], value: jax.Array, scaling: str = "linear") -> jax.Array:
    """A network's value (in [-1, 1]) as a return of a game whose `return_bounds` are `bounds` and whose
    `return_scaling` is `scaling` (unchanged for the default bounds, (-1, 1), and the linear scaling)."""
    scaled = _scaled(bounds, scaling)
    if scaled is None:
        return value
    low, high = scaled
    mapped = low + (value + 1.0) * (0.5 * (high - low))
    return _h_inverse(jnp.asarray(mapped)) if scaling == "sqrt" else mapped


def return_to_value(bounds: tuple[float, float], returns: jax.Array, scaling: str = "linear") -> jax.Array:
    """The inverse of `value_to_return`: a return of a game whose `return_bounds` are `bounds` (and
    `return_scaling` `scaling`) in the network's units, [-1, 1] for returns within the bounds."""
    scaled = _scaled(bounds, scaling)
    if scaled is None:
        return returns
    low, high = scaled
    if scaling == "sqrt":
        returns = _h(jnp.asarray(returns))
    return (returns - low) * (2.0 / (high - low)) - 1.0


# --------------------------------------------------------------------------------------------------------------
# Helpers shared by the games: illegal moves, absorbing terminals, symmetries.


def resolve_step(state: S, new_state: S, action: jax.Array, *,
                 illegal_reward: float | jax.Array | None = None) -> S:
    """Applies the protocol's rules around a game's raw transition.

    Given the state before the move and `new_state` (what the rules produce for a legal `action`), returns:
    `state` with zero rewards if it was already terminated (absorbing); a loss for the mover if `action` was
    illegal or out of range; otherwise `new_state`. The loss is -1 for the mover and +1 for the opponent, or with
    `illegal_reward` that reward for player 0 and nothing for player 1: a one-player game gives what brings the
    episode's return to its `return_bounds[0]`, the rewards paid so far counted (`return_bounds[0]` itself where
    nothing was paid before; a scalar, possibly computed from `state`).
    """
    mover = state.current_player
    num_actions = state.legal_action_mask.shape[-1]
    in_range = (action >= 0) & (action < num_actions)
    illegal = ~in_range | ~state.legal_action_mask[jnp.clip(action, 0, num_actions - 1)]
    if illegal_reward is None:
        loss = jnp.where(jnp.arange(2) == mover, -1.0, 1.0).astype(jnp.float32)
    else:
        loss = jnp.stack([jnp.asarray(illegal_reward, jnp.float32), jnp.float32(0.0)])
    after_illegal = state.replace(
        terminated=jnp.bool_(True),
        rewards=loss,
        legal_action_mask=jnp.zeros_like(state.legal_action_mask),
    )
    absorbed = state.replace(rewards=jnp.zeros_like(state.rewards))
    pick = lambda a, b, c: jnp.where(state.terminated, a, jnp.where(illegal, b, c))  # noqa: E731
    return jax.tree.map(pick, absorbed, after_illegal, new_state)


def chance_key_data(key: jax.Array) -> jax.Array:
    """The `chance_key` field of a chance game's start (uint32 [2]) from `init`'s key."""
    return jax.random.key_data(jax.random.fold_in(key, 0x636861))


def chance_game_steps(
    chance_outcomes: Callable[[S, jax.Array], jax.Array], transition: Callable[[S, jax.Array, jax.Array], S]
) -> tuple[Callable[[S, jax.Array], S], Callable[[S, jax.Array, jax.Array], S]]:
    """A chance game's `(step, step_outcome)` from its rules: `chance_outcomes(state, action)` (the outcomes'
    probabilities) and `transition(state, action, outcome)` (the position they lead to, the protocol's rules for
    terminal states and illegal moves applied, the `chance_key` left as it was).

    `step_outcome` is `transition` with the state's `chance_key` advanced (kept on a terminal state, which is
    absorbing); `step` draws the outcome with that key from `chance_outcomes`' probabilities, then does the same.
    """

    def step_outcome(state: Any, action: jax.Array, outcome: jax.Array) -> Any:
        following = jax.random.key_data(jax.random.fold_in(jax.random.wrap_key_data(state.chance_key), 0))
        key = jnp.where(state.terminated, state.chance_key, following)
        return transition(state, action, jnp.asarray(outcome, jnp.int32)).replace(chance_key=key)

    def step(state: Any, action: jax.Array) -> Any:
        draw_key = jax.random.fold_in(jax.random.wrap_key_data(state.chance_key), 1)
        probabilities = chance_outcomes(state, action)
        outcome = jax.random.categorical(draw_key, jnp.log(probabilities))
        return step_outcome(state, action, outcome)

    return step, step_outcome


def _dihedral_grid_maps(height: int, width: int) -> list[tuple[str, Callable[[np.ndarray], np.ndarray]]]:
    """The board transformations (identity excluded) of the dihedral group that keep an H x W board's shape."""
    maps: list[tuple[str, Callable[[np.ndarray], np.ndarray]]] = [
        ("flip_lr", lambda x: x[:, ::-1]),
        ("flip_ud", lambda x: x[::-1, :]),
        ("rot180", lambda x: x[::-1, ::-1]),
    ]
    if height == width:
        maps += [
            ("rot90", lambda x: x.swapaxes(0, 1)[::-1]),  # counter-clockwise, as np.rot90
            ("rot270", lambda x: x.swapaxes(0, 1)[:, ::-1]),
            ("transpose", lambda x: x.swapaxes(0, 1)),
            ("anti_transpose", lambda x: x.swapaxes(0, 1)[::-1, ::-1]),
        ]
    return maps


def board_symmetries(
    height: int,
    width: int,
    *,
    names: Sequence[str] | None = None,
    num_extra_actions: int = 0,
) -> tuple[Symmetry, ...]:
    """Symmetries of a board game whose actions are cells `row * width + col` (then `num_extra_actions` more,
    e.g. a pass, which every symmetry leaves in place) and whose observation is [H, W, C].

    Args:
      height, width: the board's size.
      names: keep only these transformations (of flip_lr, flip_ud, rot180 and, on square boards, rot90, rot270,
        transpose, anti_transpose); all of them by default.
      num_extra_actions: actions after the board cells that no symmetry moves.
    """
    grid = np.arange(height * width).reshape(height, width)
    extra = tuple(range(height * width, height * width + num_extra_actions))
    result = []
    for name, grid_map in _dihedral_grid_maps(height, width):
        if names is not None and name not in names:
            continue
        index = tuple(int(i) for i in grid_map(grid).ravel()) + extra
        # The maps use only slicing and swapaxes of the two leading axes, so they act alike on numpy arrays (the
        # action grid) and on jax observations [H, W, C], whose channels follow along.
        result.append(Symmetry(name=name, transform=grid_map, action_index=index))  # type: ignore[arg-type]
    return tuple(result)


def random_opening(key: jax.Array, game: Game, state: State, num_moves: jax.Array, max_moves: int
                   ) -> tuple[State, jax.Array]:
    """Plays `num_moves` (int32 [], at most the static `max_moves`) uniformly random legal moves from `state`;
    returns the state and the number of moves played (int32 []).

    A move that would end the game is skipped (not played, not retried), so the result is never terminal when
    `state` is not, and fewer than `num_moves` moves are played where that happened. Unbatched; `vmap` it over a
    batch of states and move counts.
    """

    def body(i: jax.Array, carry: tuple[State, jax.Array]) -> tuple[State, jax.Array]:
        state, played = carry
        move_key = jax.random.fold_in(key, i)
        logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
        action = jax.random.categorical(move_key, logits).astype(jnp.int32)
        moved = game.step(state, action)
        play = (i < num_moves) & ~moved.terminated & ~state.terminated
        state = jax.tree.map(lambda new, old: jnp.where(play, new, old), moved, state)
        return state, played + play.astype(jnp.int32)

    return jax.lax.fori_loop(0, max_moves, body, (state, jnp.zeros((), jnp.int32)))
