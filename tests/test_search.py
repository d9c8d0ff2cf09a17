"""Search on hand-made positions with a UNIFORM network (zero logits, zero value): only the tree can see wins.

Every position is an ASCII board (the format of azjax/games/boards.py; Connect Four's bottom row is written last)
and its claimed property is checked before the search is judged: tic-tac-toe positions against an independent
plain-Python minimax, Connect Four positions by stepping the game one and two plies. Each (game, policy) compiles
one search, run on all of the game's positions at once with three keys.

"Finds the move" means the search's improved policy (`policy_target`) puts the most weight on it and, where the
policy plays deterministically, its action is that move: PUCT past its temperature moves (most visited), and
Gumbel with `gumbel_scale=0`. With the default Gumbel noise the action is a draw from the improved policy by
design, so only its policy target is judged.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import games
from azjax.config import SearchConfig
from azjax.search import make_search_fn

NUM_SIMULATIONS = 128
KEYS = (0, 1, 2)

# --------------------------------------------------------------------------------------------------------------
# Positions: (ASCII board, the move). Tic-tac-toe actions are cells row * 3 + col; Connect Four actions columns.

TTT_WIN = [  # the immediate win is the only winning move
    (".XX\n..O\nOOX", 0),  # X, row 1
    ("..O\nX.O\nXOX", 0),  # X, column a
    ("...\nXXO\nOOX", 0),  # X, diagonal
    ("..O\nOOX\nX.X", 7),  # X, row 3
    (".X.\nOOX\n.OX", 2),  # X, column c
    ("...\nXO.\nOXX", 2),  # O, anti-diagonal
    ("...\n.OX\nXXO", 0),  # O, diagonal
]
TTT_BLOCK = [  # the mover has no win; the block is the only move that does not lose
    ("...\n.O.\nOXX", 2),  # X blocks the anti-diagonal
    (".OO\n..X\n.X.", 0),  # X blocks row 1
    ("..X\n.OO\n..X", 3),  # X blocks row 2
    ("...\n.O.\nXOX", 1),  # X blocks column b
    ("...\nX.O\nX..", 0),  # O blocks column a
    (".XX\n...\n.O.", 0),  # O blocks row 1
    ("...\n.X.\nO.X", 0),  # O blocks the diagonal
    ("...\nO.X\n..X", 2),  # O blocks column c
    ("...\n..O\nXX.", 8),  # O blocks row 3
]
TTT_LOST = [  # the opponent has two threats and the mover no win
    "...\nXOX\nOXO",  # X to move
    "..X\n.OX\nXOO",  # X to move
    "O.O\n..X\nOXX",  # X to move
    "...\n.XX\nXOO",  # O to move
    "...\n.XO\nXOX",  # O to move
    "X.X\n.O.\nX.O",  # O to move
]


def c4(*rows: str) -> str:
    """A Connect Four board from its lowest rows (written top to bottom), padded with empty rows above."""
    return "\n".join(["......."] * (6 - len(rows)) + list(rows))


C4_WIN = [
    (c4("OOO....", "XXX...."), 3),  # X, horizontal
    (c4("....X..", "....X..", "..O.XOO"), 4),  # X, vertical
    (c4("X......", "XO.....", "XOO...."), 0),  # X, vertical in the corner
    (c4("..OX...", ".OXX...", "OXXO..."), 3),  # O, diagonal
    (c4("OOO.X..", "XXOXX.."), 3),  # O, horizontal on the second row
    (c4(".OOO...", "XOXX...", "XXOX..."), 0),  # O, horizontal on the third row
    (c4("......O", "XX....O", "XX....O"), 6),  # O, vertical
]
C4_BLOCK = [
    (c4(".XX....", "XOOO..."), 4),  # X blocks a horizontal three
    (c4("..OX...", ".OXO...", "OXOX..X"), 3),  # X blocks a diagonal
    (c4("...X...", "...X...", "OO.X..."), 3),  # O blocks a vertical three
    (c4("O......", "XX.XO.."), 2),  # O fills the gap of X_XX
]
C4_LOST = [
    c4(".XX....", ".OOO..X"),  # X to move: O's open three
    c4("..XX...", "..OOO.X"),  # X to move: O's open three
    c4("......X", "OOO...X", "XXX.OOX"),  # O to move: X threatens a row and a column
]

POSITIONS = {
    "tic_tac_toe": {"win": TTT_WIN, "block": TTT_BLOCK, "lost": [(text, None) for text in TTT_LOST]},
    "connect_four": {"win": C4_WIN, "block": C4_BLOCK, "lost": [(text, None) for text in C4_LOST]},
}

# Gumbel without root noise (as `Agent.act` plays), Gumbel with its default noise (as in self-play), and PUCT
# with its Dirichlet noise: (policy, gumbel_scale, whether the action is deterministic).
VARIANTS = {
    "gumbel": ("gumbel", 0.0, True),
    "gumbel_noisy": ("gumbel", SearchConfig().gumbel_scale, False),
    "puct": ("puct", SearchConfig().gumbel_scale, True),
}
PAST_OPENING = 1000  # a move number past `temperature_moves`: PUCT plays its most visited action


# --------------------------------------------------------------------------------------------------------------
# Independent checks of the positions' claims


LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def parse_ttt(text: str) -> tuple[tuple[int, ...], int]:
    cells = tuple({".": 0, "X": 1, "O": 2}[ch] for ch in text if ch in ".XO")
    return cells, 0 if cells.count(1) == cells.count(2) else 1


@functools.cache
def minimax(board: tuple[int, ...], player: int) -> dict[int, int]:
    """{legal cell: value of playing it for `player`} by exhaustive search (+1 win, 0 draw, -1 loss)."""
    values = {}
    for cell in (c for c in range(9) if not board[c]):
        after = (*board[:cell], player + 1, *board[cell + 1:])
        if any(all(after[i] == player + 1 for i in line) for line in LINES):
            values[cell] = 1
        elif all(after):
            values[cell] = 0
        else:
            values[cell] = -max(minimax(after, 1 - player).values())
    return values


@functools.cache
def two_ply(game_name: str):
    """A jitted function of one state: (the mover's immediate wins [A], after each move, the opponent's [A, A])."""
    game = games.make(game_name)
    actions = jnp.arange(game.num_actions)

    def wins(state):
        children = jax.vmap(game.step, in_axes=(None, 0))(state, actions)
        mover_rewards = children.rewards[:, state.current_player]
        return state.legal_action_mask & (mover_rewards > 0), children

    def analyse(state):
        mover_wins, children = wins(state)
        return mover_wins, jax.vmap(lambda child: wins(child)[0])(children)

    return jax.jit(analyse)


def immediate_wins(game_name: str, state: games.State) -> set[int]:
    return set(np.flatnonzero(np.asarray(two_ply(game_name)(state)[0])).tolist())


def non_losing_moves(game_name: str, state: games.State) -> set[int]:
    """Legal moves after which the opponent has no immediate win."""
    _, opponent_wins = two_ply(game_name)(state)
    safe = np.asarray(state.legal_action_mask) & ~np.asarray(opponent_wins).any(axis=1)
    return set(np.flatnonzero(safe).tolist())


def test_tic_tac_toe_positions_are_what_they_claim():
    for text, move in TTT_WIN:
        values = minimax(*parse_ttt(text))
        assert [c for c, v in values.items() if v == 1] == [move], text
    for text, move in TTT_BLOCK:
        values = minimax(*parse_ttt(text))
        assert max(values, key=values.get) == move and values[move] >= 0, text
        assert sorted(values.values())[-2] == -1, text  # every other move loses
    for text in TTT_LOST:
        assert set(minimax(*parse_ttt(text)).values()) == {-1}, text
    movers = {parse_ttt(text)[1] for text, _ in TTT_WIN + TTT_BLOCK} | {parse_ttt(t)[1] for t in TTT_LOST}
    assert movers == {0, 1}


def test_connect_four_positions_are_what_they_claim():
    game = games.make("connect_four")
    movers = set()
    for text, move in C4_WIN:
        state = game.from_ascii(text)
        assert immediate_wins("connect_four", state) == {move}, text
        movers.add(int(state.current_player))
    for text, move in C4_BLOCK:
        state = game.from_ascii(text)
        assert not immediate_wins("connect_four", state) and non_losing_moves("connect_four", state) == {move}, text
        movers.add(int(state.current_player))
    for text in C4_LOST:
        state = game.from_ascii(text)
        assert not immediate_wins("connect_four", state) and not non_losing_moves("connect_four", state), text
        movers.add(int(state.current_player))
    assert movers == {0, 1}


# --------------------------------------------------------------------------------------------------------------
# The searches


def uniform_apply(variables: dict, observations: jax.Array, *, num_actions: int) -> tuple[jax.Array, jax.Array]:
    """A network that knows nothing: zero logits [B, A] and zero value [B]."""
    del variables
    batch = observations.shape[0]
    return jnp.zeros((batch, num_actions), jnp.float32), jnp.zeros((batch,), jnp.float32)


@dataclasses.dataclass(frozen=True)
class Positions:
    """All of a game's positions as one batch."""

    kinds: list[str]  # [B] "win", "block" or "lost"
    moves: list[int | None]  # [B] the move to find
    states: games.State  # batched [B]
    legal: np.ndarray  # [B, A] bool


@functools.cache
def positions(game_name: str) -> Positions:
    game = games.make(game_name)
    entries = [(kind, text, move) for kind, rows in POSITIONS[game_name].items() for text, move in rows]
    states = jax.tree.map(lambda *leaves: jnp.stack(leaves), *[game.from_ascii(text) for _, text, _ in entries])
    return Positions(
        kinds=[kind for kind, _, _ in entries],
        moves=[move for _, _, move in entries],
        states=states,
        legal=np.asarray(states.legal_action_mask),
    )


def _search(key, states, move_number, gumbel_scale, *, game: games.Game, policy: str):
    # gumbel_scale is an argument (mctx only multiplies the root noise by it), so that one compilation serves
    # both Gumbel variants.
    config = SearchConfig(policy=policy, num_simulations=NUM_SIMULATIONS, gumbel_scale=gumbel_scale)
    apply_fn = functools.partial(uniform_apply, num_actions=game.num_actions)
    return make_search_fn(game, apply_fn, config)({}, key, states, move_number)


@functools.cache
def compiled_search(game_name: str, policy: str):
    return jax.jit(functools.partial(_search, game=games.make(game_name), policy=policy))


@functools.cache
def searched(game_name: str, variant: str) -> list:
    """The search's outputs (numpy) on all of the game's positions, one per key in KEYS."""
    policy, gumbel_scale, _ = VARIANTS[variant]
    batch = positions(game_name)
    move_number = jnp.full(len(batch.kinds), PAST_OPENING, jnp.int32)
    search = compiled_search(game_name, policy)
    return [
        jax.device_get(search(jax.random.key(k), batch.states, move_number, jnp.float32(gumbel_scale)))
        for k in KEYS
    ]


GAMES = ["tic_tac_toe", "connect_four"]


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("game_name", GAMES)
@pytest.mark.parametrize("kind", ["win", "block"])
def test_search_finds_the_move(game_name, variant, kind):
    batch = positions(game_name)
    rows = [i for i, k in enumerate(batch.kinds) if k == kind]
    assert len(rows) >= 4
    for key, out in zip(KEYS, searched(game_name, variant), strict=True):
        for i in rows:
            policy = out.policy_target[i]
            assert np.argmax(policy) == batch.moves[i], (kind, key, i, np.round(policy, 2))
            if VARIANTS[variant][2]:
                assert out.action[i] == batch.moves[i], (kind, key, i, out.action[i])


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("game_name", GAMES)
def test_root_value_is_for_the_player_to_move(game_name, variant):
    kinds = np.array(positions(game_name).kinds)
    outputs = searched(game_name, variant)
    assert len(outputs) == len(KEYS)
    for out in outputs:
        assert np.all(out.root_value[kinds == "win"] > 0), out.root_value[kinds == "win"]
        assert np.all(out.root_value[kinds == "lost"] < 0), out.root_value[kinds == "lost"]
        assert np.all(np.abs(out.root_value) <= 1.0)
        np.testing.assert_array_equal(out.network_value, 0.0)  # the uniform network's own value


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("game_name", GAMES)
def test_action_value_is_the_chosen_moves_worth(game_name, variant):
    """The value a resignation reads: a won move is worth +1; in a must-block position the block is worth more
    than the root value, which averages in the simulations spent on moves that lose at once."""
    batch = positions(game_name)
    kinds, moves = np.array(batch.kinds), np.array([m if m is not None else -1 for m in batch.moves])
    outputs = searched(game_name, variant)
    assert len(outputs) == len(KEYS)
    for out in outputs:
        assert np.all(np.abs(out.action_value) <= 1.0 + 1e-6)
        played = out.action == moves
        np.testing.assert_allclose(out.action_value[(kinds == "win") & played], 1.0)
        block = (kinds == "block") & played
        assert block.any() and np.all(out.action_value[block] > out.root_value[block]), (
            out.action_value[block], out.root_value[block])


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("game_name", GAMES)
def test_policy_target_is_a_distribution_over_legal_actions(game_name, variant):
    legal = positions(game_name).legal
    outputs = searched(game_name, variant)
    assert len(outputs) == len(KEYS)
    for out in outputs:
        assert out.policy_target.dtype == np.float32 and out.policy_target.shape == legal.shape
        np.testing.assert_allclose(out.policy_target.sum(axis=-1), 1.0, rtol=1e-5)
        assert np.all(out.policy_target >= 0)
        np.testing.assert_array_equal(out.policy_target[~legal], 0.0)
        assert out.action.dtype == np.int32
        assert np.all(legal[np.arange(len(out.action)), out.action]), out.action


def test_puct_samples_in_the_opening_and_plays_the_most_visited_later():
    """Per game of the batch: move_number < temperature_moves samples the action, later it is the most visited."""
    batch = positions("tic_tac_toe")
    search = compiled_search("tic_tac_toe", "puct")  # compiled once; other move numbers do not retrace
    size = len(batch.kinds)
    opening = SearchConfig().temperature_moves
    move_number = jnp.where(jnp.arange(size) % 2 == 0, 0, opening).astype(jnp.int32)  # even rows sample
    sampled_differs = False
    for k in range(8):
        out = jax.device_get(search(jax.random.key(100 + k), batch.states, move_number, jnp.float32(1.0)))
        most_visited = np.argmax(out.policy_target, axis=-1)  # PUCT's policy target is the visit distribution
        np.testing.assert_array_equal(out.action[1::2], most_visited[1::2])
        assert np.all(batch.legal[np.arange(size), out.action])
        sampled_differs |= bool(np.any(out.action[0::2] != most_visited[0::2]))
    assert sampled_differs, "with move_number < temperature_moves the action should be sampled from the visits"


def test_gumbel_moves_keeps_the_noise_for_a_games_first_moves_only():
    """With `gumbel_moves` = k, a game that has played fewer than k moves gets the root's Gumbel noise (the action of
    the noisy search with the same key), one past it none (the action of `gumbel_scale=0`)."""
    batch = positions("tic_tac_toe")
    game = games.make("tic_tac_toe")
    apply_fn = functools.partial(uniform_apply, num_actions=game.num_actions)
    k = 3
    move_number = jnp.where(jnp.arange(len(batch.kinds)) % 2 == 0, k - 1, k).astype(jnp.int32)  # even rows noisy

    scheduled = SearchConfig(num_simulations=8, gumbel_moves=k)
    searches = [  # compiled once each
        jax.jit(make_search_fn(game, apply_fn, config))
        for config in (scheduled, dataclasses.replace(scheduled, gumbel_moves=None),
                       dataclasses.replace(scheduled, gumbel_moves=None, gumbel_scale=0.0))
    ]
    noisy_differs = False
    for seed in range(4):
        key = jax.random.key(seed)
        action, noisy, plain = (np.asarray(search({}, key, batch.states, move_number).action) for search in searches)
        np.testing.assert_array_equal(action[0::2], noisy[0::2])
        np.testing.assert_array_equal(action[1::2], plain[1::2])
        noisy_differs |= bool(np.any(noisy[0::2] != plain[0::2]))
    assert noisy_differs, "the noise should change some actions, or this test cannot tell the two apart"


def test_value_scale_weighs_the_q_values_in_gumbels_policy_target():
    """`search.value_scale` reaches mctx's qtransform: with a network that knows nothing (uniform prior), the
    improved policy is softmax(sigma(Q)), so a larger scale puts more of the target on the winning move."""
    batch = positions("tic_tac_toe")
    rows = [i for i, kind in enumerate(batch.kinds) if kind == "win"]
    move_number = jnp.full(len(batch.kinds), PAST_OPENING, jnp.int32)
    game = games.make("tic_tac_toe")
    apply_fn = functools.partial(uniform_apply, num_actions=game.num_actions)
    weight_on_win = {}
    for value_scale in (0.01, 0.1):
        config = SearchConfig(num_simulations=NUM_SIMULATIONS, gumbel_scale=0.0, value_scale=value_scale)
        out = jax.device_get(make_search_fn(game, apply_fn, config)({}, jax.random.key(0), batch.states, move_number))
        weight_on_win[value_scale] = out.policy_target[rows, [batch.moves[i] for i in rows]]
    assert np.all(weight_on_win[0.1] > weight_on_win[0.01] + 0.05), weight_on_win


@pytest.mark.parametrize("policy", ["gumbel", "puct"])
def test_return_tree_gives_mctx_tree_of_the_same_search(policy):
    """`return_tree=True` returns the tree the search built, agreeing with the output's root statistics; the
    search itself is unchanged, and by default no tree is returned."""
    batch = positions("tic_tac_toe")
    game = games.make("tic_tac_toe")
    move_number = jnp.full(len(batch.kinds), PAST_OPENING, jnp.int32)
    apply_fn = functools.partial(uniform_apply, num_actions=game.num_actions)
    config = SearchConfig(policy=policy, num_simulations=NUM_SIMULATIONS)
    key = jax.random.key(3)
    plain = jax.device_get(make_search_fn(game, apply_fn, config)({}, key, batch.states, move_number))
    out = jax.device_get(make_search_fn(game, apply_fn, config, return_tree=True)({}, key, batch.states, move_number))
    assert plain.search_tree is None and plain.tree is None
    np.testing.assert_array_equal(out.action, plain.action)
    np.testing.assert_array_equal(out.policy_target, plain.policy_target)
    tree = out.search_tree
    size = len(batch.kinds)
    assert tree.node_visits.shape == (size, NUM_SIMULATIONS + 1)
    np.testing.assert_array_equal(tree.children_visits[:, 0], out.visit_counts)
    assert out.visit_counts.dtype == np.int32  # as documented (mctx's summary gives them as float32)
    np.testing.assert_array_equal(tree.node_visits[:, 0], NUM_SIMULATIONS + 1)  # the root and each simulation
    np.testing.assert_array_equal(tree.root_invalid_actions, ~batch.legal)
    if policy == "gumbel":  # the root noise that chose the considered actions, one per game and action
        noise = tree.extra_data.root_gumbel
        assert noise.shape == (size, game.num_actions) and np.all(np.isfinite(noise)) and np.std(noise) > 0.1
