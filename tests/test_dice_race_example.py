"""examples/dice_race.py, the guide's game with chance: it passes the checker, the checker catches two bugs planted
in it, its rules agree with a plain-Python reference over random games and outcomes, and `azjax check` names it as
the guide does."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny import load_example, run_cli

from azjax import games

dice_race, EXAMPLE = load_example("dice_race")


@pytest.fixture(scope="module")
def game():
    return dice_race.make_dice_race()


def test_the_checker_passes_the_example(game):
    report = games.check_game(game, num_games=16)
    assert report.num_moves > 100


def _counts_over_five(state, action):  # the die's face counts divided by 5, not 6: they sum to 1.2
    return jnp.where(action == dice_race.THROW, jnp.array([1, 2, 2, 1], jnp.float32) / 5,
                     jax.nn.one_hot(1, 4, dtype=jnp.float32))


@pytest.mark.parametrize(
    "bug, check",
    [
        (lambda g: dataclasses.replace(g, chance_outcomes=_counts_over_five), "chance_probabilities"),
        # a step written by hand that forgets to pass the turn: step_outcome gives no such state
        (lambda g: dataclasses.replace(g, step=lambda s, a: g.step(s, a).replace(current_player=s.current_player)),
         "chance_step"),
    ],
    ids=["probabilities_sum_to_1_2", "step_is_not_step_outcome"],
)
def test_the_checker_catches_planted_bugs(game, bug, check):
    with pytest.raises(games.GameCheckError) as error:
        games.check_game(bug(game), num_games=16)
    assert error.value.check == check, str(error.value)


def _reference_move(positions, mover, num_moves, action, squares_thrown):
    """The rules in plain Python: (positions, next player, terminated, rewards) after `action` by `mover`."""
    squares = squares_thrown if action == dice_race.THROW else 1
    positions = list(positions)
    positions[mover] = min(positions[mover] + squares, dice_race.GOAL)
    won = positions[mover] == dice_race.GOAL
    rewards = [0.0, 0.0]
    if won:
        rewards = [1.0, -1.0] if mover == 0 else [-1.0, 1.0]
    return positions, 1 - mover, won or num_moves + 1 >= dice_race.MAX_MOVES, rewards


def test_the_rules_agree_with_a_plain_python_reference_over_random_games(game):
    num_games = 300
    rng = np.random.default_rng(0)
    step_outcome = jax.jit(jax.vmap(game.step_outcome))
    chance_outcomes = jax.jit(jax.vmap(game.chance_outcomes))
    state = jax.jit(jax.vmap(game.init))(jax.random.split(jax.random.key(0), num_games))
    reference = [([0, 0], 0, False) for _ in range(num_games)]
    wins = [0, 0]
    die = np.array([1, 2, 2, 1]) / 6  # the faces 0, 1, 1, 2, 2, 3
    for move in range(dice_race.MAX_MOVES):
        actions = rng.integers(0, 2, num_games)
        outcomes = np.array([rng.choice(4, p=die) if a == dice_race.THROW else 1 for a in actions])
        probabilities = np.asarray(chance_outcomes(state, jnp.asarray(actions, jnp.int32)))
        want = np.where(actions[:, None] == dice_race.THROW, die, np.eye(4)[1])
        np.testing.assert_allclose(probabilities, want, atol=1e-6)
        state = step_outcome(state, jnp.asarray(actions, jnp.int32), jnp.asarray(outcomes, jnp.int32))
        got = jax.device_get(state)
        for i, (positions, mover, over) in enumerate(reference):
            if over:  # absorbing: nothing moves, nothing is paid
                want_positions, want_mover, want_over, want_rewards = positions, mover, True, [0.0, 0.0]
            else:
                want_positions, want_mover, want_over, want_rewards = _reference_move(
                    positions, mover, move, int(actions[i]), int(outcomes[i]))
            assert got.positions[i].tolist() == want_positions, (i, move)
            assert bool(got.terminated[i]) == want_over, (i, move)
            assert got.rewards[i].tolist() == want_rewards, (i, move)
            assert got.legal_action_mask[i].tolist() == [not want_over] * 2, (i, move)
            if not want_over:
                assert int(got.current_player[i]) == want_mover, (i, move)
            reference[i] = (want_positions, want_mover, want_over)
            wins = [w + (r > 0) for w, r in zip(wins, want_rewards, strict=True)]
    assert all(over for _, _, over in reference)  # MAX_MOVES ends every game
    assert min(wins) > num_games // 4, wins  # both players win some


def test_azjax_check_names_the_example_as_the_guide_does():
    code, out, err = run_cli(["check", f"{EXAMPLE}:make_dice_race", "--games", "8"])
    assert code == 0, out + err
    assert "all checks passed" in out


def test_the_guides_excerpt_is_the_examples_code():
    guide = (EXAMPLE.parents[1] / "docs" / "guides" / "your-own-game.md").read_text()
    section = guide[guide.index("## A game with chance"):]
    excerpt = section[section.index("```python\n") + len("```python\n"):]
    excerpt = excerpt[:excerpt.index("```")]
    source = EXAMPLE.read_text()
    functions = excerpt.strip().split("\n\n\n")
    assert len(functions) >= 3  # _chance_outcomes, _transition, make_dice_race
    for function in functions:
        assert function in source, function
