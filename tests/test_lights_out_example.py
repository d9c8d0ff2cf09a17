"""examples/lights_out.py, the guide's puzzle of one's own with its own judge: it passes the checker (its
yardstick included), its rules and fewest presses agree with plain-Python references, and a run of it reports
the share solved and solved in the fewest presses from its own judge, in training's evaluation and `azjax eval`."""

from __future__ import annotations

import itertools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny import cli_args, load_example, run_cli

from azjax import games

lights_out, EXAMPLE = load_example("lights_out")


@pytest.fixture(scope="module")
def game():
    return lights_out.make_lights_out()


def test_the_checker_passes_the_example_and_its_yardstick(game):
    report = games.check_game(game, num_games=16)
    assert report.num_moves > 100 and report.returns is not None


def _reference_press(lights: list[bool], cell: int) -> list[bool]:
    row, col = divmod(cell, 3)
    lights = list(lights)
    for other in range(9):
        other_row, other_col = divmod(other, 3)
        if abs(other_row - row) + abs(other_col - col) <= 1:
            lights[other] = not lights[other]
    return lights


def test_the_rules_agree_with_a_plain_python_reference_over_random_games(game):
    num_games = 200
    rng = np.random.default_rng(0)
    step = jax.jit(jax.vmap(game.step))
    state = jax.jit(jax.vmap(game.init))(jax.random.split(jax.random.key(0), num_games))
    reference = [(np.asarray(state.lights[i]).tolist(), 0, False) for i in range(num_games)]
    assert all(any(lights) for lights, _, _ in reference)  # a start has a light on
    solved = 0
    for _ in range(lights_out.MAX_MOVES):
        actions = rng.integers(0, 9, num_games)
        state = step(state, jnp.asarray(actions, jnp.int32))
        got = jax.device_get(state)
        for i, (lights, moves, over) in enumerate(reference):
            if not over:
                lights, moves = _reference_press(lights, int(actions[i])), moves + 1
                over = not any(lights) or moves == lights_out.MAX_MOVES
                solved += not any(lights)
                assert got.rewards[i].tolist() == [-1.0, 0.0], i
            else:
                assert got.rewards[i].tolist() == [0.0, 0.0], i
            assert got.lights[i].tolist() == lights and bool(got.terminated[i]) == over, i
            reference[i] = (lights, moves, over)
    assert all(over for _, _, over in reference) and solved > 0


def test_the_fewest_presses_are_the_smallest_sets_of_presses_that_darken_each_pattern():
    """Presses commute and two of the same cancel: the fewest presses for a pattern are the smallest set of cells
    whose toggles add up (XOR) to it, found here by trying every set."""
    fewest = np.full(512, 99)
    for size in range(10):
        for cells in itertools.combinations(range(9), size):
            pattern = 0
            for cell in cells:
                pattern ^= int(lights_out.PRESSES[cell] @ (1 << np.arange(9)))
            fewest[pattern] = min(fewest[pattern], size)
    np.testing.assert_array_equal(lights_out.fewest_presses_table(), fewest)


def test_a_run_reports_its_own_judges_shares_in_training_and_azjax_eval(tmp_path, tiny_overrides):
    run_dir = tmp_path / "run"
    code, out, err = run_cli(["train", "--game", f"{EXAMPLE}:make_lights_out", "--out", str(run_dir),
                              "--iterations", "2", "--eval-every", "2", "--eval-games", "16", "--no-progress",
                              *cli_args(tiny_overrides)])
    assert code == 0, out + err
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    evaluated = [record for record in metrics if "eval/solved" in record]
    assert evaluated and 0.0 <= evaluated[-1]["eval/solved_optimally"] <= evaluated[-1]["eval/solved"] <= 1.0
    code, out, err = run_cli(["eval", str(run_dir), "random", "--games", "16", "--no-progress"])
    assert code == 0, out + err
    assert "solved optimally" in out, out


def test_the_guides_excerpt_is_the_examples_code():
    guide = (EXAMPLE.parents[1] / "docs" / "guides" / "your-own-game.md").read_text()
    section = guide[guide.index("## A puzzle of your own"):guide.index("## A game with chance")]
    excerpt = section[section.index("```python\n") + len("```python\n"):]
    excerpt = excerpt[:excerpt.index("```")]
    source = EXAMPLE.read_text()
    *functions, factory = excerpt.strip().split("\n\n\n")
    assert len(functions) == 2  # fewest_presses_table, _fewest_moves, then the factory's yardstick
    for function in functions:
        assert function in source, function
    judge = [line for line in factory.splitlines() if "yardstick=" in line]
    assert judge and judge[0] in source
