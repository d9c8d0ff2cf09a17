"""Batched self-play under `lax.scan`, and the value targets of its trajectories.

B games run in parallel for T moves. A game that ends restarts at once in its slot, so the batch stays full, and
games carry over from one call to the next in `SelfPlayState`. A position's value target is *for the player to move
in that position*: its game's final outcome or, with `TrainConfig.value_target_mix` m > 0 (the CPU presets), the
blend (1 - m) x that outcome + m x the search's value of the move played there, or with
`TrainConfig.value_target_lambda` lam > 0 m x the lambda-return of the search values from there to the game's end
(`lambda_returns`: TD(lambda), the values searched nearer the end reaching back).

What reaches the replay buffer depends on `SelfPlayConfig.keep_unfinished`. Off (the default), `store_positions`
stores only the positions whose game ended within the call's trajectory; the others are dropped. On, no position is
thrown away: every position goes into the buffer as it is played; those whose game has ended get their target at
once, the others wait in the buffer (not ready to be sampled) until a later call sees their game end and
`replay.settle` fills in the outcome. `SelfPlayState.pending` counts, per slot, the positions of the game in
progress that wait so (always 0 with keep_unfinished off, so that a run resumed with the other setting finds no
stale count). A game of L recorded moves needs its positions to survive in the ring until it ends: with
`replay_capacity >= num_games * (num_steps + max_length)` none is ever overwritten first (otherwise the lost ones
are counted in the metrics).

Playout-cap randomisation (`SelfPlayConfig.full_search_fraction` < 1, KataGo's): at each step the whole batch is
searched either in full or with the fast search (a scalar draw, so that a fast step costs only its simulations);
a fast step's policy targets are zeros, which the policy loss skips, and its positions train the value as usual.

Deeper searches near the start (`SelfPlayConfig.start_search_games` k > 0): at each step the k games with the
fewest moves played are searched with `start_search_simulations`, the rest as usual (`split_search`: two searches
of fixed sizes k and B - k, so a step costs k deep searches and B - k usual ones).

With tree reuse (`SearchConfig.reuse_tree`), `SelfPlayState.tree` holds each game's search tree, rooted at its
current position: after every move it follows the move played (both players' moves: one search serves both
sides), and a game that ends restarts with nothing kept.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from azjax import replay, tree_reuse
from azjax.games import Game, State
from azjax.games.base import random_opening
from azjax.search import SearchOutput

if TYPE_CHECKING:
    from azjax.config import SearchConfig, SelfPlayConfig


class SelfPlayState(struct.PyTreeNode):
    """The B games in progress, carried across iterations."""

    game_state: State
    """Batched [B] game states, never terminal."""
    move_number: jax.Array
    """[B] int32, moves played so far in each game."""
    resign_disabled: jax.Array
    """[B] bool, this game may not resign (measures resignation false positives)."""
    would_resign: jax.Array
    """[B, 2] bool, a player's root value fell below the threshold in this game."""
    pending: jax.Array
    """[B] int32, with keep_unfinished: positions of the game in progress stored in replay, awaiting its outcome (0
    without keep_unfinished: nothing waits)."""
    tree: tree_reuse.KeptTree | None = None
    """With reuse_tree: each game's search tree, rooted at its position."""


class Trajectory(struct.PyTreeNode):
    """What T steps of B games recorded; every array is [T, B, ...]."""

    observation: jax.Array
    """[T, B, *obs] float32, from the side to move."""
    policy_target: jax.Array
    """[T, B, A] float32, the search's policy; zeros after a fast search (no policy target)."""
    current_player: jax.Array
    """[T, B] int32, the player to move at this position."""
    move_number: jax.Array
    """[T, B] int32, moves played in this game before this position."""
    root_value: jax.Array
    """[T, B] float32, the search's value for the player to move."""
    action_value: jax.Array
    """[T, B] float32, the search's value of the move played, for the player to move."""
    policy_surprise: jax.Array
    """[T, B] float32, KL(policy target || the network's prior) in nats; 0 after a fast search (no policy target)."""
    terminated: jax.Array
    """[T, B] bool, the move made here ended the game."""
    rewards: jax.Array
    """[T, B, 2] float32, per player id, paid by the move made here."""
    resigned: jax.Array
    """[T, B] bool, the player to move resigned here."""
    would_have_resigned: jax.Array
    """[T, B, 2] bool, a game that could not resign ended here, and this player's root value had fallen below the
    resignation threshold in it."""
    false_positive: jax.Array
    """[T, B, 2] bool, would_have_resigned, yet this player did not lose."""
    state: State | None = None
    """With record_states (Reanalyse): [T, B] the game states searched; else None."""


SearchFn = Callable[..., SearchOutput]  # search.make_search_fn's (variables, key, states, move_number[, kept])
_RUN_OPTIONS = ("num_steps", "opening_moves", "resign_threshold", "resign_disabled_fraction", "keep_unfinished",
                "full_search_fraction", "start_search_games")  # the SelfPlayConfig fields run_selfplay takes


def new_games(key: jax.Array, game: Game, *, num_games: int, opening_moves: int = 0) -> tuple[State, jax.Array]:
    """`num_games` (B) fresh games, each after 0..`opening_moves` uniformly random moves (not recorded); returns
    the states [B] and their move numbers int32 [B] (the random moves played)."""
    init_key, count_key, opening_key = jax.random.split(key, 3)
    states = jax.vmap(game.init)(jax.random.split(init_key, num_games))
    if opening_moves == 0:
        return states, jnp.zeros(num_games, jnp.int32)
    counts = jax.random.randint(count_key, (num_games,), 0, opening_moves + 1)
    keys = jax.random.split(opening_key, num_games)
    opening = lambda k, s, n: random_opening(k, game, s, n, opening_moves)  # noqa: E731
    return jax.vmap(opening)(keys, states, counts)


def init_selfplay(
    key: jax.Array, game: Game, *, num_games: int, opening_moves: int = 0, resign_disabled_fraction: float = 0.1,
    tree_capacity: int | None = None, num_simulations: int | None = None,
) -> SelfPlayState:
    """B = `num_games` fresh games (`new_games`); a `resign_disabled_fraction` share of them will never resign
    (to measure resignation's false positives). For a search that reuses trees (`run_search(..., reuse_tree=True)`)
    give `tree_capacity`, its nodes per tree (`search.nodes_per_tree`), and its `num_simulations`: each game then
    starts with an empty kept tree."""
    init_key, resign_key = jax.random.split(key)
    game_state, move_number = new_games(init_key, game, num_games=num_games, opening_moves=opening_moves)
    tree = None
    if tree_capacity is not None:
        if num_simulations is None:
            raise ValueError("a kept tree (tree_capacity) needs the search's num_simulations")
        tree = tree_reuse.empty(game_state, game.num_actions, tree_capacity, num_simulations)
    return SelfPlayState(
        game_state=game_state,
        move_number=move_number,
        resign_disabled=jax.random.uniform(resign_key, (num_games,)) < resign_disabled_fraction,
        would_resign=jnp.zeros((num_games, 2), bool),
        pending=jnp.zeros(num_games, jnp.int32),
        tree=tree,
    )


def run_selfplay(
    key: jax.Array,
    variables: dict,
    selfplay_state: SelfPlayState,
    *,
    game: Game,
    search_fn: SearchFn,
    num_steps: int,
    opening_moves: int = 0,
    resign_threshold: float | None = None,
    resign_disabled_fraction: float = 0.1,
    keep_unfinished: bool = False,
    full_search_fraction: float = 1.0,
    fast_search_fn: SearchFn | None = None,
    start_search_games: int = 0,
    start_search_fn: SearchFn | None = None,
    record_states: bool = False,
) -> tuple[SelfPlayState, Trajectory]:
    """Plays T = `num_steps` moves in each of the B games: a `lax.scan` of `selfplay_step`, which the
    hyperparameters from `opening_moves` to `fast_search_fn` are passed to.

    With `start_search_games` k > 0, `start_search_fn` searches the k games with the fewest moves played at each
    step searched in full and `search_fn` the other B - k (`split_search`). With `record_states` the trajectory
    keeps the game state of every position (`Trajectory.state`, for Reanalyse). Returns the games in progress
    afterwards and the trajectory [T, B]. Pure and un-jitted.
    """
    if full_search_fraction < 1.0 and fast_search_fn is None:
        raise ValueError("full_search_fraction < 1 needs a fast_search_fn")
    if start_search_games:
        if start_search_fn is None:
            raise ValueError("start_search_games > 0 needs a start_search_fn")
        search_fn = split_search(start_search_fn, search_fn, start_search_games)
    step = functools.partial(
        selfplay_step, variables=variables, game=game, search_fn=search_fn, opening_moves=opening_moves,
        resign_threshold=resign_threshold, resign_disabled_fraction=resign_disabled_fraction,
        keep_unfinished=keep_unfinished, full_search_fraction=full_search_fraction, fast_search_fn=fast_search_fn,
    )

    def body(carry: SelfPlayState, step_key: jax.Array) -> tuple[SelfPlayState, Trajectory]:
        carry, record = step(step_key, carry=carry)
        return carry, record if record_states else record.replace(state=None)

    return jax.lax.scan(body, selfplay_state, jax.random.split(key, num_steps))


def init_options(config: SelfPlayConfig, search: SearchConfig | None = None) -> dict[str, Any]:
    """`init_selfplay`'s keyword arguments for a self-play config, with a `search` config that reuses trees its
    kept trees' size."""
    options: dict[str, Any] = dict(num_games=config.num_games, opening_moves=config.opening_moves,
                                   resign_disabled_fraction=config.resign_disabled_fraction)
    if search is not None and search.reuse_tree:
        options.update(tree_capacity=search.capacity, num_simulations=search.num_simulations)
    return options


def selfplay_options(config: SelfPlayConfig) -> dict[str, Any]:
    """A self-play config's fields that `run_selfplay` and `selfplay_step` take as keyword hyperparameters
    (num_steps, opening_moves, resignation, playout caps, keep_unfinished, start_search_games)."""
    return {name: getattr(config, name) for name in _RUN_OPTIONS}


def split_search(start_search_fn: SearchFn, search_fn: SearchFn, num_start: int) -> SearchFn:
    """A search of B games that searches the `num_start` with the fewest moves played (`move_number`; ties by slot)
    with `start_search_fn` and the other B - `num_start` with `search_fn`, each on its own fixed-size part of the
    batch, and returns their outputs in the batch's order. No kept trees (search.reuse_tree is refused with it)."""

    def search(variables: dict, key: jax.Array, states: State, move_number: jax.Array,
               kept: tree_reuse.KeptTree | None = None) -> SearchOutput:
        if kept is not None:
            raise ValueError("a split search keeps no trees: turn search.reuse_tree off")
        order = jnp.argsort(move_number, stable=True)  # [B]: the games nearest their start first
        start_key, rest_key = jax.random.split(key)
        parts = []
        for fn, part_key, rows in ((start_search_fn, start_key, order[:num_start]),
                                   (search_fn, rest_key, order[num_start:])):
            part_states = jax.tree.map(lambda x, rows=rows: x[rows], states)
            parts.append(fn(variables, part_key, part_states, move_number[rows]))
        joined = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), *parts)  # rows in `order`
        return jax.tree.map(lambda x: jnp.zeros_like(x).at[order].set(x), joined)

    return search


def selfplay_step(
    key: jax.Array,
    variables: dict,
    carry: SelfPlayState,
    *,
    game: Game,
    search_fn: SearchFn,
    opening_moves: int = 0,
    resign_threshold: float | None = None,
    resign_disabled_fraction: float = 0.1,
    keep_unfinished: bool = False,
    full_search_fraction: float = 1.0,
    fast_search_fn: SearchFn | None = None,
) -> tuple[SelfPlayState, Trajectory]:
    """One move in each of the B games: search, play the search's move, record the position, restart the games
    that ended (after 0..`opening_moves` random moves).

    Args:
      key: the step's randomness (search, restarts, resignation draws).
      variables: the network's variables, for `search_fn`.
      carry: the games in progress.
      game: the game.
      search_fn: `(variables, key, states [B], move_number [B], kept) -> SearchOutput` (`search.make_search_fn`).
      resign_threshold: the mover resigns when the search values its chosen move below this (for the mover);
        None: never. A `resign_disabled_fraction` share of restarted games may not resign.
      keep_unfinished: count the positions of each game in progress (`SelfPlayState.pending`), which
        `store_positions(..., keep_unfinished=True)` stores before the game ends.
      full_search_fraction / fast_search_fn: playout-cap randomisation (KataGo's): with probability 1 -
        `full_search_fraction` the whole batch is searched with `fast_search_fn` instead, and such a step records
        no policy target (zeros).
    Returns:
      The games after the move, and the step's record (`Trajectory` fields without the time axis: [B, ...]).
    """
    search_key, reset_key, resign_key = jax.random.split(key, 3)
    state = carry.game_state
    mover = state.current_player
    searched = _search_move(key, search_key, variables, carry, search_fn=search_fn, fast_search_fn=fast_search_fn,
                            full_search_fraction=full_search_fraction)
    next_state, resigned, would_resign = _play_or_resign(game, carry, searched, resign_threshold=resign_threshold)
    done = next_state.terminated
    would_have_resigned = (done & carry.resign_disabled)[:, None] & would_resign
    record = Trajectory(
        observation=jax.vmap(game.observe)(state),
        policy_target=searched.policy_target,
        current_player=mover,
        move_number=carry.move_number,
        root_value=searched.root_value,
        action_value=searched.action_value,
        policy_surprise=policy_surprise(searched.policy_target, searched.network_logits),
        terminated=done,
        rewards=next_state.rewards,
        resigned=resigned,
        would_have_resigned=would_have_resigned,
        false_positive=would_have_resigned & (next_state.rewards > -1.0),
        state=state,
    )
    carry = _restart_finished(reset_key, resign_key, game, carry, next_state, would_resign, searched,
                              opening_moves=opening_moves, resign_disabled_fraction=resign_disabled_fraction,
                              keep_unfinished=keep_unfinished)
    return carry, record


def _search_move(key: jax.Array, search_key: jax.Array, variables: dict, carry: SelfPlayState, *,
                 search_fn: SearchFn, fast_search_fn: SearchFn | None, full_search_fraction: float) -> SearchOutput:
    """The step's search of the B games: in full, or with playout caps the whole batch fast with probability
    1 - `full_search_fraction` (recording no policy target: zeros)."""
    search_args = (variables, search_key, carry.game_state, carry.move_number, carry.tree)
    if fast_search_fn is None or full_search_fraction >= 1.0:
        return search_fn(*search_args)
    # Its own key by fold_in of the step's key, so that the step's three-way split, and with it every run without
    # playout caps, stays as it was (bench_selfplay's reference splits keys the same way).
    full = jax.random.uniform(jax.random.fold_in(key, 3)) < full_search_fraction
    searched = jax.lax.cond(full, search_fn, fast_search_fn, *search_args)
    return searched.replace(policy_target=jnp.where(full, searched.policy_target, 0.0))


def _play_or_resign(game: Game, carry: SelfPlayState, searched: SearchOutput, *,
                    resign_threshold: float | None) -> tuple[State, jax.Array, jax.Array]:
    """The games after the searched moves, where a mover who resigns loses instead: the states [B], who resigned
    (bool [B]) and, per game and seat, whether that seat would have resigned so far (bool [B, 2])."""
    state = carry.game_state
    mover_one_hot = jax.nn.one_hot(state.current_player, 2, dtype=bool)
    next_state = jax.vmap(game.step)(state, searched.action)
    # The mover gives up when the search values its chosen move below the threshold (not the root value, which
    # averages in the simulations spent on worse moves: a must-block position would look lost).
    below = searched.action_value < (resign_threshold if resign_threshold is not None else -jnp.inf)
    resigned = below & ~carry.resign_disabled
    loss_for_mover = jnp.where(mover_one_hot, -1.0, 1.0).astype(jnp.float32)
    next_state = next_state.replace(
        terminated=next_state.terminated | resigned,
        rewards=jnp.where(resigned[:, None], loss_for_mover, next_state.rewards),
        legal_action_mask=next_state.legal_action_mask & ~resigned[:, None],
    )
    return next_state, resigned, carry.would_resign | (below[:, None] & mover_one_hot)


def _restart_finished(reset_key: jax.Array, resign_key: jax.Array, game: Game, carry: SelfPlayState,
                      next_state: State, would_resign: jax.Array, searched: SearchOutput, *, opening_moves: int,
                      resign_disabled_fraction: float, keep_unfinished: bool) -> SelfPlayState:
    """The games in progress after the step: finished ones restart in place (a restarted slot draws anew whether
    it may resign), the others go on."""
    done = next_state.terminated
    fresh, fresh_move_number = new_games(reset_key, game, num_games=done.shape[0], opening_moves=opening_moves)
    game_state = jax.tree.map(lambda f, n: jnp.where(_expand(done, n), f, n), fresh, next_state)
    new_disabled = jax.random.uniform(resign_key, done.shape) < resign_disabled_fraction
    # Only keep_unfinished stores a game's positions before it ends; counting them otherwise would make a run resumed
    # with keep_unfinished settle ring rows that hold other games' positions, or none (see store_positions).
    pending = jnp.where(done, 0, carry.pending + 1) if keep_unfinished else jnp.zeros_like(carry.pending)
    return SelfPlayState(
        game_state=game_state,
        move_number=jnp.where(done, fresh_move_number, carry.move_number + 1),
        resign_disabled=jnp.where(done, new_disabled, carry.resign_disabled),
        would_resign=would_resign & ~done[:, None],
        pending=pending,
        tree=_next_tree(carry.tree, searched, done),
    )


def policy_surprise(policy_target: jax.Array, prior_logits: jax.Array) -> jax.Array:
    """KL(target || softmax(prior_logits)) over the last axis, in nats: how much the search's improved policy
    [..., A] departs from the network's prior (KataGo's policy surprise); 0 for an all-zero target."""
    return optax.losses.kl_divergence(jax.nn.log_softmax(prior_logits, axis=-1), policy_target,
                                      where=policy_target > 0)


def _next_tree(kept: tree_reuse.KeptTree | None, searched: SearchOutput, done: jax.Array
               ) -> tree_reuse.KeptTree | None:
    """The games' trees after a move: the search's tree follows the move played, and a finished game's slot starts
    a new game with nothing kept. Games that keep no trees (`kept` None: no `search` config given to
    `init_selfplay`) keep none."""
    if kept is None or searched.tree is None:
        return None
    return tree_reuse.forget(tree_reuse.follow(searched.tree, searched.action), done)


def _expand(mask: jax.Array, like: jax.Array) -> jax.Array:
    return mask.reshape(mask.shape + (1,) * (like.ndim - mask.ndim))


class ValueTargets(struct.PyTreeNode):
    """The outcomes a trajectory [T, B] reveals, all per player id or for the player to move."""

    value_target: jax.Array  # [T, B] float32, the game's outcome for the position's player to move (+1 win, 0 draw,
    #   -1 loss), unblended: with train.value_target_mix > 0, store_positions mixes in the search's value
    value_mask: jax.Array  # [T, B] bool, the position's game ended within the trajectory (else no target yet)
    carried_outcome: jax.Array  # [B, 2] float32, per player id: the outcome of each slot's game at t = 0 ...
    carried_ended: jax.Array  # [B] bool, ... if that game ended within the trajectory


def compute_value_targets(trajectory: Trajectory) -> ValueTargets:
    """The final outcome of each position's game, for the player to move there, where the game ended within the
    trajectory; and the outcome of the game each slot held at its start (whose earlier positions, with
    keep_unfinished, wait in replay).

    A reverse scan over [T, B] accumulates each game's per-player return (the rewards of the move that ends the
    game; nothing carries back across a game's end, so games that end and restart within the scan stay apart).
    """

    def body(later: tuple[jax.Array, jax.Array], step: tuple[jax.Array, ...]) -> tuple[tuple, tuple]:
        later_return, later_ended = later
        terminated, rewards, current_player = step
        continues = ~terminated
        ret = rewards + jnp.where(continues[:, None], later_return, 0.0)  # [B, 2] per player id
        ended = terminated | (continues & later_ended)
        target = jnp.take_along_axis(ret, current_player[:, None], axis=1)[:, 0]
        return (ret, ended), (target, ended)

    num_games = trajectory.terminated.shape[1]
    init = (jnp.zeros((num_games, 2), jnp.float32), jnp.zeros(num_games, bool))
    steps = (trajectory.terminated, trajectory.rewards, trajectory.current_player)
    (first_return, first_ended), (value_target, value_mask) = jax.lax.scan(body, init, steps, reverse=True)
    return ValueTargets(value_target, value_mask, first_return, first_ended)


def lambda_returns(trajectory: Trajectory, lam: float) -> tuple[jax.Array, jax.Array]:
    """The search values' lambda-returns, TD(lambda) over the values of the moves played: a position's value
    target that looks further along its game than the search's value of its own move.

    Per player id, H_t = (1 - lam) x q_t + lam x (r_t + H_{t+1}), where q_t is `Trajectory.action_value` (for the
    player to move at t, -q_t for the other: the games are zero-sum), r_t the rewards the move at t pays, and
    H_{t+1} counts only while the game goes on. So the last move's H is (1 - lam) x q + lam x the outcome, lam = 0
    gives q_t itself and lam = 1 the game's outcome; in between, the values searched later in the game, nearer its
    end, reach back with weights (1 - lam) x lam^k.

    Returns [T, B] float32, H_t for the player to move at t (meaningful where the game ended within the trajectory;
    `compute_value_targets`'s value_mask), and [B, 2] float32, each slot's H at t = 0 per player id (meaningful where
    that game ended: `ValueTargets.carried_ended`), from which `store_positions` continues the recursion back over the
    game's positions that wait in replay.
    """

    def body(later: jax.Array, step: tuple[jax.Array, ...]) -> tuple[jax.Array, jax.Array]:
        terminated, rewards, current_player, action_value = step
        value = _per_player(action_value, current_player)
        ret = (1.0 - lam) * value + lam * (rewards + jnp.where(terminated[:, None], 0.0, later))
        return ret, jnp.take_along_axis(ret, current_player[:, None], axis=1)[:, 0]

    num_games = trajectory.terminated.shape[1]
    steps = (trajectory.terminated, trajectory.rewards, trajectory.current_player, trajectory.action_value)
    first, target = jax.lax.scan(body, jnp.zeros((num_games, 2), jnp.float32), steps, reverse=True)
    return target, first


def _per_player(value: jax.Array, player: jax.Array) -> jax.Array:
    """[B, 2]: `value` ([B], for `player`) per player id, minus it for the other (zero-sum)."""
    return jnp.where(player[:, None] == jnp.arange(2), value[:, None], -value[:, None])


def reply_targets(trajectory: Trajectory) -> jax.Array:
    """[T, B, A]: for each position, the policy target of the next position of its game, the opponent's reply
    (KataGo's auxiliary opponent-policy target); zeros after the game's last move and at the trajectory's last
    step (its reply is played in the next iteration), as after a fast search: no target there."""
    following = jnp.concatenate([trajectory.policy_target[1:], jnp.zeros_like(trajectory.policy_target[:1])])
    return jnp.where(_expand(trajectory.terminated, following), 0.0, following)


def store_positions(
    buffer: replay.ReplayBuffer, trajectory: Trajectory, pending: jax.Array, max_length: int, *,
    keep_unfinished: bool = True, value_target_mix: float = 0.0, value_target_lambda: float = 0.0,
) -> tuple[replay.ReplayBuffer, dict]:
    """Puts the positions of `trajectory` [T, B] into `buffer` and settles every game that ended in it.

    With `keep_unfinished` (`SelfPlayConfig.keep_unfinished`; this function's default, not the config's) every
    position goes in, in time-major order (position (t, b) at ring index next_index + t * B + b), those whose game
    ended within the trajectory ready with their target. Every such call adds exactly T * B rows, so a position of
    slot b played k steps before the trajectory sits at ring index next_index - k * B + b: the game each slot held
    at t = 0 has its `pending` (the `SelfPlayState.pending` before the call) earlier positions there, and if it
    ended they are settled with its outcome. `max_length` (the game's) bounds `pending`.

    With `keep_unfinished=False` only the positions whose game ended within the trajectory are stored (packed in
    time-major order, ready), the others are dropped, and `pending` is not read. Self-play without
    keep_unfinished keeps `pending` at 0, so a run may switch the setting between calls (on a resume); positions
    still waiting when it is switched off are never settled, and never sampled.

    A value target is the outcome of the position's game for its player to move (+1 win, 0 draw, -1 loss);
    `value_target_mix` m > 0 (`TrainConfig.value_target_mix`) makes it (1 - m) x that outcome + m x the search's
    value of the move played there (`Trajectory.action_value`, for the same player). A position that waits for its
    game's end holds that search value as its value target until settled. `value_target_lambda` lam > 0
    (`TrainConfig.value_target_lambda`) puts the search values' lambda-returns (`lambda_returns`) in that search
    value's place: the blend's search share then looks further along the game, over the waiting positions too.

    If `buffer` holds reply targets (`replay.init_replay(..., reply_targets=True)`), each position gets
    `reply_targets(trajectory)`'s; if it holds policy surprise (`surprise=True`), `Trajectory.policy_surprise`; if
    it keeps game states (`state_like`, Reanalyse), the trajectory's (`run_selfplay(..., record_states=True)`), each
    position's move number and its unblended outcome.

    Returns the buffer and counts: "positions_added" (positions that became ready: this call's finished games,
    all their moves), "positions_lost" (positions that will never be trained on: overwritten in the ring before
    their game ended or, with keep_unfinished=False, dropped).
    """
    if buffer.replayable is not None and trajectory.state is None:
        raise ValueError("this buffer keeps game states (Reanalyse): record them "
                         "(run_selfplay(..., record_states=True))")
    targets = compute_value_targets(trajectory)
    num_steps, num_games = trajectory.terminated.shape
    flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731  [T, B, ...] -> [T * B, ...]
    start = buffer.next_index
    search_value = trajectory.action_value
    mixed = targets.value_target
    if value_target_lambda:
        lambda_target, lambda_carried = lambda_returns(trajectory, value_target_lambda)
    if value_target_mix:
        mixed = replay.blend(mixed, lambda_target if value_target_lambda else search_value, value_target_mix)
    reply_target = None
    if buffer.data.reply_target is not None:
        reply_target = flat(reply_targets(trajectory))
    positions = replay.Batch(
        observation=flat(trajectory.observation),
        policy_target=flat(trajectory.policy_target),
        value_target=flat(jnp.where(targets.value_mask, mixed, search_value)),
        reply_target=reply_target,
        surprise=None if buffer.data.surprise is None else flat(trajectory.policy_surprise),
        outcome=None if buffer.data.outcome is None else flat(targets.value_target),  # settled later if waiting
    )
    replayable = None  # a buffer that keeps game states (Reanalyse) takes them, and the unblended outcomes
    if buffer.replayable is not None:
        replayable = replay.Replayable(state=jax.tree.map(flat, trajectory.state),
                                       move_number=flat(trajectory.move_number), outcome=flat(targets.value_target))
    if not keep_unfinished:
        buffer = replay.add(buffer, positions, flat(targets.value_mask), player=flat(trajectory.current_player),
                            replayable=replayable)
        return buffer, {"positions_added": jnp.sum(targets.value_mask), "positions_lost": jnp.sum(~targets.value_mask)}
    buffer = replay.add(buffer, positions, jnp.ones(num_steps * num_games, bool),
                        player=flat(trajectory.current_player), ready=flat(targets.value_mask), replayable=replayable)
    back = jnp.arange(1, max_length + 1)[:, None]  # [L, 1]: k steps before the trajectory
    offset = start + jnp.arange(num_games)[None, :] - back * num_games  # [L, B] ring index before wrapping
    earlier = (back <= pending[None, :]) & targets.carried_ended[None, :]
    # The ring keeps the last `capacity` rows: those older than that, counted back from the newest, are gone.
    kept = offset >= start + num_steps * num_games - buffer.capacity
    outcome = jnp.broadcast_to(targets.carried_outcome[None], (max_length, num_games, 2))
    index = offset % buffer.capacity
    waiting_share = None
    if value_target_lambda and value_target_mix:
        waiting_share = _waiting_lambda_returns(buffer, index, lambda_carried, value_target_lambda).reshape(-1)
    buffer = replay.settle(buffer, index.reshape(-1), outcome.reshape(-1, 2), (earlier & kept).reshape(-1),
                           mix=value_target_mix, search_share=waiting_share)
    counts = {
        "positions_added": jnp.sum(targets.value_mask) + jnp.sum(earlier & kept),
        "positions_lost": jnp.sum(earlier & ~kept),
    }
    return buffer, counts


def _waiting_lambda_returns(buffer: replay.ReplayBuffer, index: jax.Array, later: jax.Array, lam: float) -> jax.Array:
    """`lambda_returns`' recursion continued back over the positions that wait in replay: `index` [L, B] their ring
    rows, k + 1 steps before the trajectory at row k, each holding the search's value of its move (for its player,
    in `value_target`) and its player; `later` [B, 2] the H of each slot's position at t = 0. Returns [L, B], each
    row's H for its player to move (meaningful for the rows of a game that ended, as `store_positions` settles)."""

    def body(later: jax.Array, rows: jax.Array) -> tuple[jax.Array, jax.Array]:
        player = buffer.player[rows]
        ret = (1.0 - lam) * _per_player(buffer.data.value_target[rows], player) + lam * later
        return ret, jnp.take_along_axis(ret, player[:, None], axis=1)[:, 0]

    return jax.lax.scan(body, later, index)[1]
