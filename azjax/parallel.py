"""Data parallelism through jit alone: a one-axis device mesh, the choice of devices, and the two ways the
package uses them.

Training (`azjax.training`) splits its leading batch axes (games, SGD samples) over the mesh with `split_batch`
inside the jitted iteration; XLA partitions the rest and inserts the gradient all-reduce. The arena
(`azjax.arena.run_games`) instead runs independent matches, one per device, under `jax.shard_map`: its search
and rollout loops would otherwise synchronise the devices at every step. Without a mesh (None) both run on one
device.

    mesh = mesh_for(num_games // 2)          # as many devices as divide the batch; None for one
    states = split_batch(states, mesh)       # inside a jitted function
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

DATA_AXIS = "data"


def make_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A one-axis mesh ("data") over `devices` (default: all of `jax.devices()`)."""
    return Mesh(list(jax.devices() if devices is None else devices), (DATA_AXIS,))


def most_devices(*batch_sizes: int, devices: Sequence[jax.Device] | None = None) -> list[jax.Device]:
    """The longest prefix of `devices` (default: `jax.devices()`) whose length divides every batch size."""
    available = list(jax.devices() if devices is None else devices)
    count = max(n for n in range(1, len(available) + 1) if all(size % n == 0 for size in batch_sizes))
    return available[:count]


def choose_devices(num_devices: int | None, batch_sizes: dict[str, int]) -> list[jax.Device]:
    """`num_devices` of `jax.devices()`, or (None) as many as divide every batch size evenly.

    Raises:
      ValueError: `num_devices` is < 1, more than jax sees, or does not divide a batch size (named by its key
        in `batch_sizes`); the message says what to change.
    """
    available = jax.devices()
    if num_devices is None:
        return most_devices(*batch_sizes.values())
    if num_devices < 1 or num_devices > len(available):
        raise ValueError(
            f"devices: asked for {num_devices}, but jax sees {len(available)} ({available[0].platform}); on a CPU, "
            f"set XLA_FLAGS=--xla_force_host_platform_device_count={num_devices} before starting"
        )
    check_divisible(num_devices, batch_sizes)
    return available[:num_devices]


def check_divisible(num_devices: int, batch_sizes: dict[str, int]) -> None:
    """Raises ValueError, naming the batch (its key in `batch_sizes`), unless every batch splits evenly."""
    for name, size in batch_sizes.items():
        if size % num_devices:
            raise ValueError(f"{name} ({size}) must be a multiple of the number of devices ({num_devices})")


def mesh_for(*batch_sizes: int, devices: Sequence[jax.Device] | None = None) -> Mesh | None:
    """A mesh over the most devices that split every batch size evenly; None when that is one device."""
    chosen = most_devices(*batch_sizes, devices=devices)
    return make_mesh(chosen) if len(chosen) > 1 else None


def split_batch(tree, mesh: Mesh | None, batch_axis: int = 0):
    """Constrains every leaf of `tree` (inside jit) to be split over the mesh's devices along `batch_axis`;
    the identity without a mesh."""
    if mesh is None:
        return tree
    spec = PartitionSpec(*([None] * batch_axis), DATA_AXIS)
    return jax.lax.with_sharding_constraint(tree, NamedSharding(mesh, spec))


def replicate(tree, mesh: Mesh | None):
    """Places `tree` whole on every device of `mesh` (on the default device without one)."""
    target = NamedSharding(mesh, PartitionSpec()) if mesh is not None else jax.devices()[0]
    return jax.device_put(tree, target)


def expose_cpu_cores(num_devices: int | None = None) -> None:
    """Lets jax show the CPU as one device per core (or `num_devices`), so that training and the arena can split
    their batches over them; XLA otherwise gives a CPU one device. Call it before anything runs on jax: it sets
    XLA_FLAGS, which jax reads when it starts its backend (importing jax does not start it). A device count the
    user already set in XLA_FLAGS wins. GPUs and TPUs are unaffected."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" in flags or _backend_started():
        return  # the user's choice wins; once jax has started, the flag would only leak into child processes
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    count = num_devices or cores
    if count > 1:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={count}".strip()


def _backend_started() -> bool:
    try:
        from jax._src import xla_bridge  # private, so guarded: jax has no public way to ask

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):
        return False
