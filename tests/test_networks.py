"""The ResNet: output shapes and ranges, float32 outputs and parameters under bfloat16 compute, batch norm.

Everything a game's tests look at is computed by one jitted function per game (one compilation each).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import games
from azjax.config import NetworkConfig
from azjax.networks import ResidualBlock, conv_with_matmul_grad, init_variables, make_network

TINY = NetworkConfig(num_blocks=1, num_channels=8, value_hidden=8)
TINY_BF16 = dataclasses.replace(TINY, compute_dtype="bfloat16")
BATCH = 5


def _forward(variables: dict, observations: jax.Array, *, game: games.Game) -> dict:
    """Applies float32 and bfloat16 networks with the same (float32) variables to a batch of observations."""
    network = make_network(TINY, game.num_actions)
    network16 = make_network(TINY_BF16, game.num_actions)
    logits, value = network.apply(variables, observations, train=False)
    (logits16, value16), captured = network16.apply(
        variables, observations, capture_intermediates=True, mutable=["intermediates"]
    )
    (train_logits, train_value), updates = network.apply(
        variables, observations, train=True, mutable=["batch_stats"]
    )
    logits_one, value_one = network.apply(variables, observations[:1], train=False)
    return {
        "variables": variables,
        "logits": logits,
        "value": value,
        "logits16": logits16,
        "value16": value16,
        "stem16": captured["intermediates"]["Conv_0"]["__call__"][0],
        "train_logits": train_logits,
        "train_value": train_value,
        "updated_batch_stats": updates["batch_stats"],
        "logits_one": logits_one,
        "value_one": value_one,
    }


@pytest.fixture(scope="module", params=["tic_tac_toe", "connect_four"])
def game(request) -> games.Game:
    return games.make(request.param)


def random_variables(game: games.Game) -> dict:
    """Variables of the TINY network drawn with numpy (no compilation): params N(0, 0.3^2), batch stats (0, 1)."""
    shapes = jax.eval_shape(
        lambda: init_variables(make_network(TINY, game.num_actions), jax.random.key(0), game.observation_shape)
    )
    rng = np.random.default_rng(0)
    params = jax.tree.map(lambda s: (0.3 * rng.standard_normal(s.shape)).astype(s.dtype), shapes["params"])
    batch_stats = jax.tree_util.tree_map_with_path(
        lambda path, s: np.full(s.shape, 1.0 if "var" in jax.tree_util.keystr(path) else 0.0, s.dtype),
        shapes["batch_stats"],
    )
    return {"params": params, "batch_stats": batch_stats}


@pytest.fixture(scope="module")
def out(game) -> dict:
    if game.name == "tic_tac_toe":
        # The real initialisation, eagerly as in init_run_state (its compiled ops are cached for the session).
        variables = init_variables(make_network(TINY, game.num_actions), jax.random.key(0), game.observation_shape)
    else:
        variables = random_variables(game)  # compiling the initialisers for new shapes is slow on a CPU
    observations = np.random.default_rng(0).binomial(1, 0.3, (BATCH, *game.observation_shape)).astype(np.float32)
    results = jax.jit(functools.partial(_forward, game=game))(variables, observations)
    results["variables16"] = jax.eval_shape(
        lambda: init_variables(make_network(TINY_BF16, game.num_actions), jax.random.key(0), game.observation_shape)
    )
    return results


def test_outputs_have_shapes_b_a_and_b(out, game):
    for name in ("logits", "logits16", "train_logits"):
        assert out[name].shape == (BATCH, game.num_actions), name
    for name in ("value", "value16", "train_value"):
        assert out[name].shape == (BATCH,), name


@pytest.mark.parametrize("suffix", ["", "16"])
def test_outputs_are_float32_and_finite_with_value_in_range(out, suffix):
    logits, value = out["logits" + suffix], out["value" + suffix]
    assert logits.dtype == jnp.float32 and value.dtype == jnp.float32
    assert np.all(np.isfinite(logits)) and np.all(np.isfinite(value))
    assert np.all(np.abs(np.asarray(value)) <= 1.0)
    assert np.all(np.abs(np.asarray(out["train_value"])) <= 1.0)


@pytest.mark.parametrize("name", ["variables", "variables16"])
def test_parameters_and_batch_stats_are_float32_for_either_compute_dtype(out, name):
    variables = out[name]
    assert set(variables) == {"params", "batch_stats"}
    assert {leaf.dtype for leaf in jax.tree.leaves(variables)} == {jnp.dtype(jnp.float32)}


def test_bfloat16_network_computes_in_bfloat16_yet_matches_float32(out):
    assert out["stem16"].dtype == jnp.bfloat16
    # Same parameters, float32 compute: nearly the same outputs (bf16 changes precision, not the function).
    np.testing.assert_allclose(out["logits16"], out["logits"], atol=0.1)
    np.testing.assert_allclose(out["value16"], out["value"], atol=0.1)


def test_train_true_updates_batch_stats(out):
    old = jax.tree.leaves(out["variables"]["batch_stats"])
    new = jax.tree.leaves(out["updated_batch_stats"])
    assert len(old) == len(new) > 0
    assert jax.tree.structure(out["variables"]["batch_stats"]) == jax.tree.structure(out["updated_batch_stats"])
    assert all(not np.allclose(a, b) for a, b in zip(old, new, strict=True))
    # In training mode the batch's own statistics normalise, so the outputs differ from evaluation mode.
    assert not np.allclose(out["train_logits"], out["logits"])


def test_evaluation_mode_treats_batch_elements_independently(out):
    np.testing.assert_allclose(out["logits_one"][0], out["logits"][0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out["value_one"][0], out["value"][0], rtol=1e-4, atol=1e-4)


def test_network_size_follows_the_config(out, game):
    params = out["variables"]["params"]
    assert "ResidualBlock_0" in params and "ResidualBlock_1" not in params  # num_blocks=1
    channels = game.observation_shape[-1]
    assert params["Conv_0"]["kernel"].shape == (3, 3, channels, TINY.num_channels)
    assert params["Dense_0"]["kernel"].shape[-1] == game.num_actions  # policy head: one logit per action
    assert params["Dense_1"]["kernel"].shape[-1] == TINY.value_hidden  # value head's hidden layer


def test_value_head_width_follows_the_config(game):
    """network.value_channels widens the value head's 1x1 convolution, and its hidden layer reads every channel."""
    wide = dataclasses.replace(TINY, value_channels=3)
    shapes = jax.eval_shape(lambda: init_variables(make_network(wide, game.num_actions), jax.random.key(0),
                                                   game.observation_shape))["params"]
    cells = int(np.prod(game.observation_shape[:-1]))
    assert shapes["Conv_2"]["kernel"].shape == (1, 1, TINY.num_channels, 3)  # the value head's convolution
    assert shapes["Dense_1"]["kernel"].shape == (3 * cells, TINY.value_hidden)


def test_flat_observations_are_accepted():
    network = make_network(TINY, 4)
    shapes = jax.eval_shape(lambda: init_variables(network, jax.random.key(0), (10,)))
    assert shapes["params"]["Conv_0"]["kernel"].shape == (3, 3, 10, TINY.num_channels)  # read as [B, 1, 1, D]
    variables = jax.tree.map(lambda s: jnp.full(s.shape, 0.1, s.dtype), shapes)
    logits, value = jax.jit(network.apply)(variables, jnp.ones((3, 10)))
    assert logits.shape == (3, 4) and value.shape == (3,)


def test_rank_2_observations_are_one_plane_boards_and_batch_elements_stay_independent():
    network = make_network(TINY, 9)
    shapes = jax.eval_shape(lambda: init_variables(network, jax.random.key(0), (3, 3)))
    assert shapes["params"]["Conv_0"]["kernel"].shape == (3, 3, 1, TINY.num_channels)  # read as [B, 3, 3, 1]
    rng = np.random.default_rng(0)
    variables = jax.tree.map(lambda s: (0.3 * rng.standard_normal(s.shape)).astype(s.dtype), shapes)
    variables["batch_stats"] = jax.tree.map(np.abs, variables["batch_stats"])  # variances must be positive
    observations = rng.binomial(1, 0.5, (4, 3, 3)).astype(np.float32)
    apply = jax.jit(functools.partial(network.apply, train=False))
    logits, value = apply(variables, observations)
    logits_one, value_one = apply(variables, observations[:1])
    assert logits.shape == (4, 9) and value.shape == (4,)
    np.testing.assert_allclose(logits_one[0], logits[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(value_one[0], value[0], rtol=1e-5, atol=1e-5)


def test_observations_of_rank_4_are_refused():
    with pytest.raises(ValueError, match=r"rank 1, 2 or 3.*\(2, 3, 3, 1\)"):
        init_variables(make_network(TINY, 9), jax.random.key(0), (2, 3, 3, 1))


@pytest.mark.parametrize("pooling", [False, True])
def test_global_pooling_lets_one_block_see_the_whole_board(pooling):
    """A 3x3 block sees 2 cells away; with global pooling, a stone in one corner of a 9x9 board changes the far
    corner's output."""
    block = ResidualBlock(num_channels=4, global_pooling=pooling)
    x = jax.random.normal(jax.random.key(0), (1, 9, 9, 4))
    variables = block.init(jax.random.key(1), x, train=False)
    variables = jax.tree.map(lambda v: v + 0.1, variables)  # no zero biases or kernels that could hide a path
    moved = x.at[0, 0, 0].add(5.0)
    far = [block.apply(variables, board, train=False)[0, 8, 8] for board in (x, moved)]
    assert (not np.allclose(far[0], far[1])) == pooling


def test_global_pooling_feeds_the_value_head_the_pooled_trunk():
    plain = NetworkConfig(num_blocks=1, num_channels=8, value_hidden=8)
    pooled = dataclasses.replace(plain, global_pooling=True)
    shapes = [jax.eval_shape(lambda c=c: init_variables(make_network(c, 7), jax.random.key(0), (6, 7, 2)))
              for c in (plain, pooled)]
    # The value head's hidden layer reads the 6 x 7 value map, plus with pooling each channel's mean and max.
    hidden = [s["params"]["Dense_1"]["kernel"].shape for s in shapes]
    assert hidden == [(42, 8), (42 + 2 * 8, 8)]
    assert "Dense_0" not in shapes[0]["params"]["ResidualBlock_0"]
    assert shapes[1]["params"]["ResidualBlock_0"]["Dense_0"]["kernel"].shape == (16, 8)


@pytest.mark.parametrize(
    "x_shape, kernel_shape, padding",
    [
        ((4, 6, 7, 5), (3, 3, 5, 8), "SAME"),  # the residual blocks' convolution
        ((4, 6, 7, 5), (1, 1, 5, 2), "VALID"),  # the heads' 1x1 convolutions
        ((3, 1, 1, 9), (3, 3, 9, 4), "SAME"),  # flat observations seen as a 1x1 board
        ((2, 5, 5, 3), (3, 3, 3, 4), ((2, 0), (1, 1))),  # uneven explicit padding
    ],
)
def test_conv_with_matmul_grad_matches_xla_value_and_gradient(x_shape, kernel_shape, padding):
    x = jax.random.normal(jax.random.key(0), x_shape)
    kernel = jax.random.normal(jax.random.key(1), kernel_shape)
    numbers = jax.lax.conv_dimension_numbers(x_shape, kernel_shape, ("NHWC", "HWIO", "NHWC"))

    def loss(conv, x, kernel):
        return jnp.sum(jnp.sin(conv(x, kernel, (1, 1), padding, dimension_numbers=numbers)))

    ours = jax.value_and_grad(functools.partial(loss, conv_with_matmul_grad), (0, 1))(x, kernel)
    xla = jax.value_and_grad(functools.partial(loss, jax.lax.conv_general_dilated), (0, 1))(x, kernel)
    np.testing.assert_allclose(ours[0], xla[0], rtol=1e-5)
    for got, want in zip(ours[1], xla[1], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_conv_with_matmul_grad_passes_other_convolutions_to_xla():
    x = jax.random.normal(jax.random.key(0), (2, 8, 8, 3))
    kernel = jax.random.normal(jax.random.key(1), (3, 3, 3, 4))
    numbers = jax.lax.conv_dimension_numbers(x.shape, kernel.shape, ("NHWC", "HWIO", "NHWC"))
    strided = functools.partial(conv_with_matmul_grad, window_strides=(2, 2), padding="SAME", dimension_numbers=numbers)
    want = jax.lax.conv_general_dilated(x, kernel, (2, 2), "SAME", dimension_numbers=numbers)
    np.testing.assert_allclose(strided(x, kernel), want, rtol=1e-5)
