"""Tests of the exact solver, checked against an independent plain-Python minimax."""

from __future__ import annotations

import functools
from typing import cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from azjax.games import BoardState, Game, State, make, resolve_step
from azjax.solver import Solution, lookup, optimal_action_mask, perfect_agent, policy_accuracy, solve

# --------------------------------------------------------------------------------------------------------------
# An independent tic-tac-toe minimax in plain Python (no azjax): boards are tuples of 9 cells, 0 empty, 1 X, 2 O.

LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def has_line(board: tuple[int, ...], stone: int) -> bool:
    return any(all(board[i] == stone for i in line) for line in LINES)


@functools.cache
def minimax(board: tuple[int, ...], player: int) -> tuple[int, frozenset[int]]:
    """(value for `player`, the player to move; the set of moves that achieve it) of a non-terminal board."""
    stone = player + 1
    outcomes = {}
    for cell in range(9):
        if board[cell]:
            continue
        after = (*board[:cell], stone, *board[cell + 1:])
        if has_line(after, stone):
            outcomes[cell] = 1
        elif all(after):
            outcomes[cell] = 0
        else:
            outcomes[cell] = -minimax(after, 1 - player)[0]
    best = max(outcomes.values())
    return best, frozenset(cell for cell, value in outcomes.items() if value == best)


# --------------------------------------------------------------------------------------------------------------
# Fixtures: tic-tac-toe is solved once per module.


@pytest.fixture(scope="module")
def game() -> Game:
    return make("tic_tac_toe")


@pytest.fixture(scope="module")
def solution(game) -> Solution:
    return solve(game)


@pytest.fixture(scope="module")
def host(solution) -> Solution:
    """The solution as numpy arrays, for Python loops over the table."""
    return jax.device_get(solution)


@pytest.fixture(scope="module")
def jit_lookup():
    return jax.jit(lookup)


@pytest.fixture(scope="module")
def jit_perfect(solution):
    """The perfect agent, jitted once; callers pass batches of 1000 states so it compiles once."""
    return jax.jit(perfect_agent(solution))


def table_position(host: Solution, index: int) -> tuple[tuple[int, ...], int]:
    states = cast(BoardState, host.states)
    return tuple(int(c) for c in states.board[index]), int(states.current_player[index])


def batch(*states: State) -> State:
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def repeat(state: State, num: int) -> State:
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (num, *x.shape)), state)


# --------------------------------------------------------------------------------------------------------------
# Tic-tac-toe.


def test_counts_and_start_value(host):
    assert host.num_states == 5478
    assert host.num_nonterminal == 4520
    assert np.sum(~host.terminal) == 4520
    assert host.values[0] == 0.0  # index 0 is the start: a draw
    assert np.all(host.optimal_actions[0])  # every opening move keeps the draw
    np.testing.assert_array_equal(np.bincount(host.depth), [1, 9, 72, 252, 756, 1260, 1520, 1140, 390, 78])


def test_agrees_with_plain_python_minimax(host):
    nonterminal = np.flatnonzero(~host.terminal)
    assert len(nonterminal) == 4520
    for i in nonterminal:
        board, player = table_position(host, i)
        value, moves = minimax(board, player)
        assert host.values[i] == value, (board, player)
        assert set(np.flatnonzero(host.optimal_actions[i])) == moves, (board, player)
        assert np.all(np.isneginf(host.action_values[i][np.asarray(board) != 0]))  # occupied cells are illegal
        assert np.all(np.isfinite(host.action_values[i][np.asarray(board) == 0]))


def test_terminal_values_are_for_the_player_to_move(host):
    # After a winning move the turn passes to the loser, so a won terminal state has value -1; a draw has 0.
    terminal = np.flatnonzero(host.terminal)
    assert len(terminal) == 5478 - 4520
    for i in terminal:
        board, player = table_position(host, i)
        assert host.values[i] == (-1.0 if has_line(board, 2 - player) else 0.0)
        assert not np.any(host.optimal_actions[i])


def test_win_in_one(game, host, jit_lookup):
    state = game.from_ascii("X X .\nO O .\n. . .")  # X to move: c1 (action 2) wins; O threatens c2
    index = int(jit_lookup(host, batch(state))[0])
    assert index >= 0
    assert host.values[index] == 1.0
    np.testing.assert_array_equal(np.flatnonzero(host.optimal_actions[index]), [2])
    assert host.action_values[index, 2] == 1.0
    assert host.action_values[index, 5] == 0.0  # blocking O instead only draws
    assert host.action_values[index, 6] == -1.0  # a move that does neither lets O win


def test_must_block(game, host, jit_lookup):
    state = game.from_ascii("X X .\n. O .\n. . .")  # O to move must take c1 (action 2); that holds the draw
    mask = jax.jit(optimal_action_mask)(host, batch(state))
    np.testing.assert_array_equal(np.flatnonzero(mask[0]), [2])
    index = int(jit_lookup(host, batch(state))[0])
    assert host.states.current_player[index] == 1
    assert host.values[index] == 0.0
    assert host.action_values[index, 0] == -np.inf  # a1 is taken
    assert host.action_values[index, 3] == -1.0  # any other move loses


def test_lookup_finds_every_state_and_rejects_others(game, solution, jit_lookup):
    np.testing.assert_array_equal(jit_lookup(solution, solution.states), np.arange(solution.num_states))
    start = game.init(jax.random.key(0))
    won = game.from_ascii("X X X\nO O .\n. . .")  # a terminal position, built from text
    unreachable = [
        start.replace(current_player=jnp.int32(1)),  # O to move on an empty board
        start.replace(rewards=jnp.array([1.0, -1.0])),
        won.replace(terminated=jnp.bool_(False)),
        start.replace(board=start.board.at[4].set(2)),  # O moved first
    ]
    states = batch(start, won, start.replace(rewards=jnp.array([-0.0, -0.0])), *unreachable)
    index = np.asarray(jit_lookup(solution, states))
    assert index[0] == 0 and index[2] == 0  # -0.0 rewards are the same state as 0.0
    assert index[1] > 0 and bool(solution.terminal[index[1]])
    np.testing.assert_array_equal(index[3:], [-1, -1, -1, -1])
    assert not np.any(np.asarray(jax.jit(optimal_action_mask)(solution, states)[3:]))


def test_lookup_rejects_other_state_structures(game, solution):
    with pytest.raises(ValueError, match="do not match"):
        lookup(solution, solution.states.replace(board=None))
    with pytest.raises(ValueError, match="a batch of states"):
        lookup(solution, game.init(jax.random.key(0)))  # unbatched


def random_agent(key: jax.Array, states: State) -> jax.Array:
    logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits, axis=-1)


def play(game: Game, solution: Solution, key: jax.Array, perfect_seats: jax.Array) -> tuple[State, jax.Array]:
    """Plays one game per row of `perfect_seats` (bool [G, 2], whether player 0 / 1 is the perfect agent, else
    the random one) to the end. Returns the final states [G] and the total rewards [G, 2] by player id."""
    num_games = perfect_seats.shape[0]
    init_key, moves_key = jax.random.split(key)
    states = jax.vmap(game.init)(jax.random.split(init_key, num_games))
    perfect = perfect_agent(solution)

    def move(carry, move_key):
        states, totals = carry
        perfect_key, random_key = jax.random.split(move_key)
        mover_is_perfect = jnp.take_along_axis(perfect_seats, states.current_player[:, None], axis=1)[:, 0]
        actions = jnp.where(mover_is_perfect, perfect(perfect_key, states), random_agent(random_key, states))
        states = jax.vmap(game.step)(states, actions)
        return (states, totals + states.rewards), None

    totals = jnp.zeros((num_games, 2), jnp.float32)
    (states, totals), _ = jax.lax.scan(move, (states, totals), jax.random.split(moves_key, game.max_length))
    return states, totals


def test_perfect_agent_never_loses(game, solution):
    seats = np.repeat(np.array([[True, False], [False, True], [True, True]]), 300, axis=0)  # 300 games each
    states, totals = jax.jit(functools.partial(play, game))(solution, jax.random.key(1), jnp.asarray(seats))
    assert bool(jnp.all(states.terminated))
    totals = np.asarray(totals)
    perfect_x, perfect_o, both = totals[:300], totals[300:600], totals[600:]
    assert np.all(perfect_x[:, 0] >= 0) and np.all(perfect_o[:, 1] >= 0)
    assert np.mean(perfect_x[:, 0] > 0) > 0.5  # and it punishes the random player's mistakes
    np.testing.assert_array_equal(both, 0.0)  # perfect play from both sides is a draw


def test_perfect_agent_samples_among_optimal_moves(game, host, jit_perfect):
    starts = repeat(game.init(jax.random.key(0)), 1000)
    actions = np.asarray(jit_perfect(jax.random.key(4), starts))
    assert set(actions.tolist()) == set(range(9))  # all nine opening moves draw
    before_block = game.from_ascii("X X .\n. O .\n. . .")
    np.testing.assert_array_equal(jit_perfect(jax.random.key(5), repeat(before_block, 1000)), 2)


def test_policy_accuracy(solution, jit_perfect):
    perfect = functools.partial(jit_perfect, jax.random.key(5))
    assert policy_accuracy(solution, perfect, batch_size=1000) == 1.0  # padding: 4520 = 4 * 1000 + 520
    uniform = jax.jit(functools.partial(random_agent, jax.random.key(6)))
    assert policy_accuracy(solution, uniform) < 0.85
    assert policy_accuracy(solution, lambda states: jnp.full(states.current_player.shape, -1)) == 0.0


def test_policy_accuracy_against_plain_python_choosers(host):
    def choose(pick, states):
        boards = np.asarray(states.board)
        players = np.asarray(states.current_player)
        return np.array([pick(tuple(int(c) for c in b), int(p)) for b, p in zip(boards, players, strict=True)])

    best = functools.partial(choose, lambda board, player: min(minimax(board, player)[1]))
    assert policy_accuracy(host, best) == 1.0

    def worst(board, player):
        value_of = {}
        for cell in (c for c in range(9) if not board[c]):
            after = (*board[:cell], player + 1, *board[cell + 1:])
            won, full = has_line(after, player + 1), all(after)
            value_of[cell] = 1 if won else 0 if full else -minimax(after, 1 - player)[0]
        return min(value_of, key=value_of.get)

    # The worst move is optimal exactly where every legal move has the same value.
    nonterminal = [table_position(host, i) for i in np.flatnonzero(~host.terminal)]
    indifferent = sum(len(minimax(b, p)[1]) == sum(c == 0 for c in b) for b, p in nonterminal)
    assert policy_accuracy(host, functools.partial(choose, worst)) == indifferent / len(nonterminal)


def test_max_states(game):
    with pytest.raises(ValueError, match="more than max_states=500"):
        solve(game, max_states=500)


# --------------------------------------------------------------------------------------------------------------
# A user's tiny game: a pile of stones, take one or two, whoever takes the last stone wins. Options: taking one
# stone from an even pile earns another turn (the same player moves twice), and a pass move (positions recur).


@struct.dataclass
class PileState(State):
    pile: jax.Array  # [] int32, stones left


def make_pile_game(size: int, *, extra_turn: bool = False, can_pass: bool = False) -> Game:
    def legal(pile):
        return jnp.array([pile >= 1, pile >= 2, can_pass & (pile >= 1)])

    def init(key):
        del key
        pile = jnp.int32(size)
        return PileState(jnp.int32(0), legal(pile), jnp.bool_(False), jnp.zeros(2, jnp.float32), pile)

    def step(state, action):
        taken = jnp.where(action == 2, 0, action + 1)
        pile = state.pile - taken
        again = extra_turn & (action == 0) & (state.pile % 2 == 0)
        won = pile == 0
        mover = state.current_player
        raw = state.replace(
            pile=pile,
            current_player=jnp.where(again, mover, 1 - mover).astype(jnp.int32),
            legal_action_mask=legal(pile) & ~won,
            terminated=won,
            rewards=jnp.where(won, jnp.where(jnp.arange(2) == mover, 1.0, -1.0), 0.0).astype(jnp.float32),
        )
        return resolve_step(state, raw, action)

    return Game(
        name="pile",
        num_actions=3,
        observation_shape=(1,),
        max_length=2 * size,
        init=init,
        step=step,
        observe=lambda s: cast(PileState, s).pile[None].astype(jnp.float32),
        render=lambda s: f"pile {int(cast(PileState, s).pile)}",
    )


def pile_value(pile: int, extra_turn: bool) -> int:
    """The plain-Python value of a pile for the player to move."""
    outcomes = []
    for take in (1, 2):
        if take > pile:
            continue
        rest = pile - take
        again = extra_turn and take == 1 and pile % 2 == 0
        outcomes.append(1 if rest == 0 else pile_value(rest, extra_turn) * (1 if again else -1))
    return max(outcomes)


@pytest.mark.parametrize("extra_turn", [False, True])
def test_user_game(extra_turn):
    pile_solution = solve(make_pile_game(10, extra_turn=extra_turn))
    piles = np.asarray(pile_solution.states.pile)
    values = np.asarray(pile_solution.values)
    assert sorted(set(piles.tolist())) == list(range(11))
    for i in np.flatnonzero(piles > 0):
        assert values[i] == pile_value(int(piles[i]), extra_turn), piles[i]
    if not extra_turn:
        # Multiples of three lose; otherwise take pile % 3.
        np.testing.assert_array_equal(values[piles > 0], np.where(piles[piles > 0] % 3 == 0, -1.0, 1.0))
        winning = (piles > 0) & (piles % 3 != 0)
        for i in np.flatnonzero(winning):
            np.testing.assert_array_equal(np.flatnonzero(pile_solution.optimal_actions[i]), [piles[i] % 3 - 1])
    else:
        # The table holds moves after which the same player moves again; the value test above covers their sign.
        children = np.asarray(pile_solution.children)
        players = np.asarray(pile_solution.states.current_player)
        assert np.any((children >= 0) & (players[children] == players[:, None]))


def test_cyclic_game_is_rejected():
    with pytest.raises(ValueError, match="cycle"):
        solve(make_pile_game(4, can_pass=True))
