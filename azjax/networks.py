"""The AlphaZero ResNet (Flax linen): a conv stem, residual blocks, a policy head and a value head.

Input: observations float32 [B, H, W, C] (from the side to move). Output: policy logits float32 [B, A] over all
actions (legal or not; callers mask) and a value float32 [B] in [-1, 1], the expected outcome *for the player to
move*. With `value_head="wdl"` (`NetworkConfig.value_head`) the value head predicts the probabilities of a win, a
draw and a loss for the player to move instead (logits [B, 3] in that order, sown as intermediates "value_logits"),
and the value is P(win) - P(loss) (`wdl_value`), the same expected outcome. Observations of rank 1 ([B, D], e.g.
from a pgx game with a flat observation) are treated as [B, 1, 1, D], of rank 2 ([B, H, W], one plane) as
[B, H, W, 1]; other ranks are refused.

Batch normalisation statistics live in the "batch_stats" collection: pass `train=True` (and
`mutable=["batch_stats"]`) when fitting, `train=False` in self-play and evaluation.

The ResNet is one network among many. The network contract, which everything that trains, plays, checkpoints and
exports a network relies on and `check_network` verifies: a Flax module whose `apply(variables, observations,
train=...)` maps observations float32 [B, *observation_shape] (from the side to move) to policy logits float32
[B, A] over every action and a value float32 [B] in [-1, 1] for the player to move. Its variables are "params"
and, if it has batch norm, "batch_stats" (updated with `train=True`). Optional heads are declared by attributes
of the module, never inferred: `value_head = "wdl"` (it sows its win/draw/loss logits [B, 3] as intermediates
"value_logits", and its value is their P(win) - P(loss)) and `reply_head = True` (it sows "reply_logits" [B, A],
the opponent's reply, for `train.reply_policy_weight`). `network_of(config, game)` builds the run's network: the
ResNet, or `config.network.module`'s factory called as `factory(num_actions=A, observation_shape=(...))`
(examples/mlp_network.py and examples/transformer_network.py are two).

On the CPU the convolutions differentiate through `conv_with_matmul_grad`: XLA:CPU runs the gradient of a
convolution 10-15x slower inside a loop body (the `lax.scan` of SGD steps) than outside one
(https://github.com/jax-ml/jax/issues/12868), and that made the SGD steps ~90% of a CPU iteration. GPUs and TPUs
keep XLA's own gradient.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
from flax import linen as nn

from azjax.errors import ConfigError
from azjax.games import Game
from azjax.games.registry import GameNotFoundError, load_source

if TYPE_CHECKING:
    from azjax.config import Config, NetworkConfig

_NHWC = ("NHWC", "HWIO", "NHWC")


def _conv_nhwc(x: jax.Array, kernel: jax.Array, padding: tuple[tuple[int, int], ...]) -> jax.Array:
    return jax.lax.conv_general_dilated(x, kernel, (1, 1), padding, dimension_numbers=_NHWC)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _conv_matmul_vjp(x: jax.Array, kernel: jax.Array, padding: tuple[tuple[int, int], ...]) -> jax.Array:
    return _conv_nhwc(x, kernel, padding)


def _conv_matmul_vjp_fwd(x, kernel, padding):
    return _conv_nhwc(x, kernel, padding), (x, kernel)


def _conv_matmul_vjp_bwd(padding, residuals, grad_out):
    x, kernel = residuals
    kh, kw = kernel.shape[:2]
    out_h, out_w = grad_out.shape[1:3]
    # Input gradient: a plain forward convolution of the output gradient with the flipped kernel (fast in loops).
    flipped = jnp.flip(kernel, (0, 1)).swapaxes(2, 3)
    (top, bottom), (left, right) = padding
    grad_x = _conv_nhwc(grad_out, flipped, ((kh - 1 - top, kh - 1 - bottom), (kw - 1 - left, kw - 1 - right)))
    # Kernel gradient: one matmul of the input patches (im2col) with the output gradient.
    padded = jnp.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
    patches = jnp.stack([padded[:, i : i + out_h, j : j + out_w] for i in range(kh) for j in range(kw)], axis=3)
    grad_kernel = jnp.einsum("bhwpc,bhwo->pco", patches, grad_out).reshape(kernel.shape)
    return grad_x.astype(x.dtype), grad_kernel.astype(kernel.dtype)


_conv_matmul_vjp.defvjp(_conv_matmul_vjp_fwd, _conv_matmul_vjp_bwd)


def conv_with_matmul_grad(
    lhs: jax.Array,
    rhs: jax.Array,
    window_strides,
    padding,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    feature_group_count: int = 1,
    **kwargs,
) -> jax.Array:
    """`lax.conv_general_dilated` whose gradient on the CPU avoids XLA:CPU's slow in-loop convolution gradients.

    A drop-in for `nn.Conv(conv_general_dilated=...)`. The forward pass is XLA's convolution everywhere. On the
    CPU, for the convolutions this network uses (NHWC, stride 1, no dilation, one feature group), the input
    gradient is computed as a forward convolution with the flipped kernel and the kernel gradient as one matmul
    of im2col patches; values match XLA's gradient to float rounding. Other backends and other convolutions
    are passed to `lax.conv_general_dilated` unchanged.
    """
    plain = functools.partial(
        jax.lax.conv_general_dilated,
        window_strides=window_strides,
        padding=padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        dimension_numbers=dimension_numbers,
        feature_group_count=feature_group_count,
        **kwargs,
    )
    simple = (
        lhs.ndim == 4
        and tuple(window_strides) == (1, 1)
        and all(d in (None, 1) or tuple(d) == (1, 1) for d in (lhs_dilation, rhs_dilation))
        and feature_group_count == 1
        and jax.lax.conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
        == jax.lax.conv_dimension_numbers(lhs.shape, rhs.shape, _NHWC)
    )
    if not simple:
        return plain(lhs=lhs, rhs=rhs)
    if isinstance(padding, str):
        padding = jax.lax.padtype_to_pads(lhs.shape[1:3], rhs.shape[:2], (1, 1), padding)
    padding = tuple((int(lo), int(hi)) for lo, hi in padding)
    return jax.lax.platform_dependent(
        lhs, rhs, cpu=lambda x, k: _conv_matmul_vjp(x, k, padding), default=plain
    )


ConvFn = Callable[..., jax.Array]  # the signature of `lax.conv_general_dilated`


def global_features(x: jax.Array) -> jax.Array:
    """The board's mean and maximum of each channel: [B, H, W, C] -> [B, 2C] (KataGo's global pooling)."""
    return jnp.concatenate([x.mean(axis=(1, 2)), x.max(axis=(1, 2))], axis=-1)


class ResidualBlock(nn.Module):
    """Two 3x3 convolutions with batch norm and a skip connection; with `global_pooling`, the channels between
    the two convolutions also get a bias computed from their board-wide means and maxima (KataGo's global pooling
    bias), so that every cell sees the whole board in one block."""

    num_channels: int
    dtype: jnp.dtype = jnp.float32
    conv_fn: ConvFn = conv_with_matmul_grad
    global_pooling: bool = False

    @nn.compact
    def __call__(self, x: jax.Array, train: bool) -> jax.Array:
        conv = functools.partial(nn.Conv, use_bias=False, dtype=self.dtype, conv_general_dilated=self.conv_fn)
        norm = lambda: nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=self.dtype)  # noqa: E731
        y = conv(self.num_channels, (3, 3))(x)
        y = nn.relu(norm()(y))
        if self.global_pooling:
            y = y + nn.Dense(self.num_channels, dtype=self.dtype)(global_features(y))[:, None, None, :]
        y = conv(self.num_channels, (3, 3))(y)
        y = norm()(y)
        return nn.relu(x + y)


def _as_images(observation: jax.Array) -> jax.Array:
    """A batch of observations [B, *obs] as images [B, H, W, C] (see the module docstring). Flax's convolution
    would read a batch of rank-2 observations [B, H, W] as one image of B rows and W channels, mixing the batch."""
    if observation.ndim == 2:
        return observation[:, None, None, :]
    if observation.ndim == 3:
        return observation[..., None]
    if observation.ndim == 4:
        return observation
    raise ValueError(
        f"the network takes a batch of observations of rank 1, 2 or 3 ([B, D], [B, H, W] or [B, H, W, C]), got "
        f"an array of shape {observation.shape} (observation shape {observation.shape[1:]}); give the game an "
        "observation_shape of rank 1 to 3"
    )


class AlphaZeroNetwork(nn.Module):
    """The policy/value ResNet; see the module docstring for shapes and the value's perspective."""

    num_actions: int
    """A, the policy head's outputs: one logit per action."""
    num_blocks: int = 2
    """Residual blocks in the trunk."""
    num_channels: int = 32
    """Channels of the trunk's convolutions."""
    value_channels: int = 1
    """Channels of the value head's 1x1 convolution."""
    value_hidden: int = 64
    """Units of the value head's hidden layer."""
    global_pooling: bool = False
    """Blocks get a global pooling bias; the value head also reads the pooled trunk."""
    reply_head: bool = False
    """Also predict the opponent's reply (sown as intermediates "reply_logits" [B, A])."""
    value_head: str = "scalar"
    """The value head: "scalar" (tanh) or "wdl" (win/draw/loss logits sown as intermediates "value_logits")."""
    dtype: jnp.dtype = jnp.float32
    """The computation dtype; parameters stay float32."""
    conv_fn: ConvFn = conv_with_matmul_grad
    """The convolution of every layer (see the module docstring); `jax.lax.conv_general_dilated` gives XLA's own
    gradient everywhere."""

    @nn.compact
    def __call__(self, observation: jax.Array, train: bool = False) -> tuple[jax.Array, jax.Array]:
        conv = functools.partial(nn.Conv, use_bias=False, dtype=self.dtype, conv_general_dilated=self.conv_fn)
        x = _as_images(observation.astype(self.dtype))
        norm = lambda: nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=self.dtype)  # noqa: E731
        x = conv(self.num_channels, (3, 3))(x)
        x = nn.relu(norm()(x))
        for _ in range(self.num_blocks):
            x = ResidualBlock(self.num_channels, self.dtype, self.conv_fn, self.global_pooling)(x, train)

        policy = conv(2, (1, 1))(x)
        policy = nn.relu(norm()(policy)).reshape(x.shape[0], -1)
        logits = nn.Dense(self.num_actions, dtype=self.dtype)(policy)
        if self.reply_head:  # an auxiliary target for training (KataGo); inference never reads it
            reply = nn.Dense(self.num_actions, dtype=self.dtype, name="reply_head")(policy)
            self.sow("intermediates", "reply_logits", reply.astype(jnp.float32))

        value = conv(self.value_channels, (1, 1))(x)
        value = nn.relu(norm()(value)).reshape(x.shape[0], -1)
        if self.global_pooling:
            value = jnp.concatenate([value, global_features(x)], axis=-1)
        value = nn.relu(nn.Dense(self.value_hidden, dtype=self.dtype)(value))
        if self.value_head == "wdl":
            outcome_logits = nn.Dense(3, dtype=self.dtype, name="wdl_head")(value).astype(jnp.float32)
            self.sow("intermediates", "value_logits", outcome_logits)
            return logits.astype(jnp.float32), wdl_value(outcome_logits)
        value = jnp.tanh(nn.Dense(1, dtype=self.dtype)(value))[:, 0]
        return logits.astype(jnp.float32), value.astype(jnp.float32)


def wdl_value(outcome_logits: jax.Array) -> jax.Array:
    """The value [B] in [-1, 1] of win/draw/loss logits [B, 3] (for the player to move): P(win) - P(loss)."""
    probabilities = jax.nn.softmax(outcome_logits.astype(jnp.float32), axis=-1)
    return probabilities[..., 0] - probabilities[..., 2]


def outcome_probabilities(network: nn.Module, variables: dict, observations: jax.Array) -> jax.Array:
    """The probabilities [B, 3] of a win, a draw and a loss for the player to move, in that order, of a network
    with a win/draw/loss value head (`value_head="wdl"`), in inference mode; their win - loss is its value.

    Raises:
      ValueError: the network's value head is a scalar one, which gives an expected outcome and no draw share.
    """
    if value_head_of(network) != "wdl":
        raise ValueError(f"the network's value head is {value_head_of(network)!r}: it gives one expected outcome in "
                         "[-1, 1], not the chances of a win, a draw and a loss (train with "
                         "--network.value_head wdl for those)")
    probabilities = apply_with_outcomes(network, variables, observations)[2]
    assert probabilities is not None  # a WDL head's
    return probabilities


def apply_with_outcomes(network: nn.Module, variables: dict,
                        observations: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array | None]:
    """The network in inference mode, once: logits [B, A], value [B] and, for a win/draw/loss value head, those
    probabilities [B, 3] (else None), all for the player to move."""
    if value_head_of(network) != "wdl":
        logits, value = inference_fn(network)(variables, observations)
        return logits, value, None
    (logits, value), sown = network.apply(variables, observations, train=False, mutable=["intermediates"])
    return logits, value, jax.nn.softmax(sown["intermediates"]["value_logits"][0], axis=-1)


ApplyFn = Callable[[dict, jax.Array], tuple[jax.Array, jax.Array]]
"""A network in inference mode: (variables, observations [B, ...]) -> (logits [B, A], value [B])."""


def inference_fn(network: nn.Module) -> ApplyFn:
    """`network` in inference mode (batch norm from its running statistics), as the search and agents call it."""
    return typing.cast(ApplyFn, functools.partial(network.apply, train=False))  # flax types apply's result loosely


def make_network(config: NetworkConfig, num_actions: int, *, reply_head: bool = False) -> AlphaZeroNetwork:
    """The network for a game with `num_actions` actions, sized by `config`; with `reply_head`, it also predicts
    the opponent's reply (a run with `train.reply_policy_weight` > 0: see `network_of`)."""
    return AlphaZeroNetwork(
        num_actions=num_actions,
        reply_head=reply_head,
        num_blocks=config.num_blocks,
        num_channels=config.num_channels,
        value_channels=config.value_channels,
        value_hidden=config.value_hidden,
        value_head=config.value_head,
        global_pooling=config.global_pooling,
        dtype=jnp.bfloat16 if config.compute_dtype == "bfloat16" else jnp.float32,
    )


class NetworkError(ConfigError):
    """A network of one's own cannot be built, or breaks the network contract; the message names what and how."""


def network_of(config: Config, game: Game) -> nn.Module:
    """The network a run of `config` trains and plays `game` with: `config.network.module`'s (a network of one's
    own, `load_network`), else the ResNet of `config.network`, with an opponent-reply head if its loss uses one
    (`train.reply_policy_weight` > 0).

    Raises:
      NetworkError: the module's factory cannot be imported or called, or gives no Flax module.
    """
    if config.network.module:
        return load_network(config.network.module, game)
    return make_network(config.network, game.num_actions, reply_head=config.train.reply_policy_weight > 0)


def load_network(source: str, game: Game) -> nn.Module:
    """The module `factory(num_actions=..., observation_shape=...)` returns for `game`, where `source` is
    "MODULE:FACTORY" (a module on the path, or a .py file's path), as `--game` takes a game's.

    Raises:
      NetworkError: it cannot be imported, the factory fails, or what it returns is no `flax.linen.Module`.
    """
    try:
        factory = load_source(source, what="network", example="examples/mlp_network.py:make_mlp")
    except GameNotFoundError as error:
        raise NetworkError(str(error)) from None
    try:
        network = factory(num_actions=game.num_actions, observation_shape=tuple(game.observation_shape))
    except Exception as error:  # noqa: BLE001 - whatever the user's factory raises, said in one line
        raise NetworkError(f"network {source!r}: calling it as {getattr(factory, '__name__', 'the factory')}"
                           f"(num_actions={game.num_actions}, observation_shape={tuple(game.observation_shape)}) "
                           f"raised {type(error).__name__}: {error}") from None
    if not isinstance(network, nn.Module):
        raise NetworkError(f"network {source!r}: its factory returned {type(network).__name__}, not a "
                           "flax.linen.Module; return the module (e.g. MLP(num_actions=num_actions))")
    return network


def value_head_of(network: nn.Module) -> str:
    """The network's value head as it declares it: "scalar" (a value in [-1, 1]) unless it says "wdl"."""
    return getattr(network, "value_head", "scalar")


def has_reply_head(network: nn.Module) -> bool:
    """Whether the network declares an opponent-reply head (sown as intermediates "reply_logits")."""
    return bool(getattr(network, "reply_head", False))


def check_network(network: nn.Module, game: Game, *, reply_policy: bool = False, name: str | None = None) -> None:
    """Checks the network contract (see the module docstring) on `game`'s observations, abstractly (no arrays, no
    compilation): initialisation, inference and a training pass (the value head's and, with `reply_policy`, the
    reply head's intermediates too).

    Raises:
      NetworkError: naming the output that is wrong, its shape or dtype, and what was expected.
    """
    what = f"network {name!r}" if name else f"the network {type(network).__name__}"
    batch, actions = 2, game.num_actions
    observations = jax.ShapeDtypeStruct((batch, *game.observation_shape), jnp.float32)
    try:
        variables = jax.eval_shape(lambda obs: dict(network.init(jax.random.key(0), obs, train=False)), observations)
        outputs = jax.eval_shape(lambda v, obs: network.apply(v, obs, train=False), variables, observations)
        trained = jax.eval_shape(lambda v, obs: network.apply(v, obs, train=True,
                                                              mutable=["batch_stats", "intermediates"]),
                                 variables, observations)
    except Exception as error:  # noqa: BLE001 - any failure of the user's module, said in one line
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise NetworkError(f"{what} fails on observations [{batch}, {', '.join(map(str, game.observation_shape))}] "
                           f"with {type(error).__name__}: {first}; it must take (observations, train=bool)") from None
    unknown = set(variables) - {"params", "batch_stats"}
    if "params" not in variables or unknown:
        raise NetworkError(f"{what} has the variable collections {sorted(variables)}; the contract allows "
                           "'params' and 'batch_stats' only")
    if not (isinstance(outputs, tuple | list) and len(outputs) == 2):
        raise NetworkError(f"{what} returns {type(outputs).__name__}; it must return (logits [B, A], value [B])")
    expected = {"logits": ((batch, actions), f"[B, A]: A = {actions}, the game's actions"),
                "value": ((batch,), "[B]: one value per position")}
    for (label, (shape, meaning)), output in zip(expected.items(), outputs, strict=True):
        got = tuple(getattr(output, "shape", ()))
        has, are = ("have", "are") if label == "logits" else ("has", "is")
        if got != shape:
            raise NetworkError(f"{what}: the {label} it returns {has} shape {list(got)} for a batch of {batch} "
                               f"observations; expected {list(shape)} ({meaning})")
        if getattr(output, "dtype", None) != jnp.float32:
            raise NetworkError(f"{what}: the {label} it returns {are} {output.dtype}; expected float32 (cast the "
                               "head's output with .astype(jnp.float32))")
    sown = trained[1].get("intermediates", {})
    heads = [("value_logits", (batch, 3), value_head_of(network) == "wdl", 'value_head = "wdl"'),
             ("reply_logits", (batch, actions), reply_policy, "reply_head = True (for train.reply_policy_weight)")]
    for key, shape, needed, declared in heads:
        found = sown.get(key) if needed else None
        sown_shape = tuple(found[0].shape) if found else None
        if needed and sown_shape != shape:
            sows = f"no {key}" if sown_shape is None else f"{key} of shape {list(sown_shape)}"
            raise NetworkError(f"{what} needs {declared} but sows {sows}; expected intermediates {key!r} of shape "
                               f"{list(shape)} (self.sow('intermediates', {key!r}, ...))")
    if value_head_of(network) not in ("scalar", "wdl"):
        raise NetworkError(f"{what} declares value_head = {value_head_of(network)!r}; expected 'scalar' or 'wdl'")


def init_variables(network: nn.Module, key: jax.Array, observation_shape: tuple[int, ...]) -> dict:
    """The network's variables {"params": ..., "batch_stats": ...} for observations of `observation_shape`
    ("batch_stats" empty for a network without batch norm)."""
    dummy = jnp.zeros((1, *observation_shape), jnp.float32)
    variables = dict(network.init(key, dummy, train=False))
    return {"params": variables["params"], "batch_stats": variables.get("batch_stats", {})}
