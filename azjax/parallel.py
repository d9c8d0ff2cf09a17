"""Data parallelism through jit alone: a one-axis device mesh, the choice of devices, and the two ways the
package uses them.

Training (`azjax.training`) splits its leading batch axes (games, SGD samples) over the mesh with `split_batch`
inside the jitted iteration; XLA partitions the rest and inserts the gradient all-reduce. The arena
(`azjax.arena.run_games`) instead runs independent matches, one per device, under `jax.shard_map`: its search
and rollout loops would otherwise synchronise the devices at every step. Without a mesh (None) both run on one
device.

    mesh = mesh_for(num_games // 2)          # as many devices as divide the batch; None for one
    states = split_batch(states, mesh)       # inside a jitted function

Several processes (hosts, or one per GPU): `initialize_distributed` joins them through `jax.distributed` before
anything runs, after which `jax.devices()` holds every process's devices and one mesh spans them all; every
process runs the same program on its share of the batch, and XLA does the communication. `is_primary()` says
which process writes the run's files.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Sequence

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

DATA_AXIS = "data"
DEFAULT_DISTRIBUTED_TIMEOUT_S = 300  # seconds to reach the coordinator, and to notice a process that died


def initialize_distributed(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    timeout_s: int = DEFAULT_DISTRIBUTED_TIMEOUT_S,
    command: str = "azjax",
) -> bool:
    """Joins this process to a run over several processes (`jax.distributed.initialize`); returns whether the run
    has more than one. Give the coordinator's HOST:PORT, the number of processes and this one's id (0 .. N - 1)
    together, or none of them where jax finds the cluster itself (SLURM, Open MPI, TPU pod slices; with none and
    no such cluster, nothing happens). Processes that cannot reach the coordinator within `timeout_s` seconds
    fail, and so do the others when one stops answering for that long. Call it before anything runs on jax.

    When not every process has joined within `timeout_s`, jax would abort this process from C++ (no Python
    exception to catch), so a watchdog ends it first: one line on stderr, `COMMAND: error: ...`, and exit status 1.

    Raises:
      ValueError: only some of the three were given, or they do not fit together.
    """
    given = (coordinator_address, num_processes, process_id)
    if any(value is not None for value in given) and not all(value is not None for value in given):
        raise ValueError("give --coordinator-address, --num-processes and --process-id together (or none of them "
                         "on a cluster that jax detects by itself: SLURM, Open MPI, TPU pod slices)")
    if num_processes is not None and process_id is not None and not 0 <= process_id < num_processes:
        raise ValueError(f"--process-id must be 0 .. {num_processes - 1} for {num_processes} processes, "
                         f"got {process_id}")
    if coordinator_address is None and not _cluster_in_environment():
        return False
    if coordinator_address is not None and process_id:
        # jax aborts the whole process (no Python exception) when the coordinator never answers: check first.
        _wait_for_coordinator(coordinator_address, timeout_s)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")  # CPUs talk through gloo; accelerators: their own
    where = f"the coordinator at {coordinator_address}" if coordinator_address else "the cluster's coordinator"
    watchdog = threading.Timer(timeout_s, _exit_with, args=(
        f"{command}: error: not all {num_processes or 'the'} processes joined through {where} within {timeout_s} s "
        "(--distributed-timeout): start every process, each with its own --process-id, within that time",))
    watchdog.daemon = True
    watchdog.start()
    try:  # jax's own deadline comes later than the watchdog's, so that its abort never comes first
        jax.distributed.initialize(coordinator_address, num_processes, process_id,
                                   initialization_timeout=timeout_s + _JAX_TIMEOUT_GRACE_S,
                                   heartbeat_timeout_seconds=timeout_s)
    finally:
        watchdog.cancel()
    return jax.process_count() > 1


_JAX_TIMEOUT_GRACE_S = 10


def _exit_with(line: str) -> None:
    """Ends the process at once with `line` on stderr and status 1 (from a thread: the main one is blocked in C++)."""
    print(line, file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(1)


def _wait_for_coordinator(address: str, timeout_s: float) -> None:
    """Returns once something listens at `address` (HOST:PORT); raises ConnectionError after `timeout_s`."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdecimal():
        raise ValueError(f"--coordinator-address must be HOST:PORT, got {address!r}")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=1.0):
                return
        except OSError as error:
            if time.monotonic() >= deadline:
                raise ConnectionError(f"nothing answered at {address} ({error.strerror or error})") from None
            time.sleep(0.5)


def _cluster_in_environment() -> bool:
    """Whether this process was started as one of several by SLURM, Open MPI or a TPU pod slice."""
    def count(name: str) -> int:
        value = os.environ.get(name, "")
        return int(value) if value.isdecimal() else 0

    hosts = os.environ.get("TPU_WORKER_HOSTNAMES", "")
    return count("SLURM_NTASKS") > 1 or count("OMPI_COMM_WORLD_SIZE") > 1 or "," in hosts


def is_primary() -> bool:
    """Whether this process writes the run's files (process 0; the only one in a single-process run)."""
    return jax.process_index() == 0


def sync(name: str) -> None:
    """Waits until every process reaches the barrier `name` (nothing to wait for in a single process)."""
    if jax.process_count() > 1:
        multihost_utils.sync_global_devices(name)


def gather(value: np.ndarray) -> np.ndarray:
    """Every process's `value` (the same shape everywhere), stacked: [P, ...] in process order; [1, ...] in a
    single process. A collective: every process must call it."""
    value = np.asarray(value)
    if jax.process_count() == 1:
        return value[None]
    return np.asarray(multihost_utils.process_allgather(value))


def fetch(tree):
    """`jax.device_get(tree)`, also for arrays split over several processes' devices: every process gets the
    whole of each (a collective there: every process must call it with the same tree)."""
    if jax.process_count() == 1:
        return jax.device_get(tree)

    def get(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable and not x.is_fully_replicated:
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return jax.device_get(x)

    return jax.tree.map(get, tree)


def put(tree, sharding: jax.sharding.Sharding):
    """`jax.device_put(tree, sharding)`, also over several processes: there every process holds the whole tree
    (the same values everywhere) and keeps its devices' shards of the global arrays. PRNG keys keep their
    implementation."""
    if jax.process_count() == 1:
        return jax.device_put(tree, sharding)

    def place(x):
        if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            data = place(jax.random.key_data(x))
            return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
        value = np.asarray(jax.device_get(x))
        return jax.make_array_from_callback(value.shape, sharding, lambda index: value[index])

    return jax.tree.map(place, tree)


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


def check_spans_processes(mesh: Mesh | None, what: str) -> None:
    """Raises ValueError unless `mesh` holds devices of every process (every process must take part in a program
    over several processes); `what` names the batch that chose the mesh, for the message."""
    processes = {device.process_index for device in mesh.devices.flat} if mesh is not None else {0}
    if len(processes) < jax.process_count():
        raise ValueError(
            f"{what} do not split over the {len(jax.devices())} devices of the {jax.process_count()} processes "
            f"(only over {1 if mesh is None else mesh.size}): make it a multiple of {len(jax.devices())}"
        )


def split_batch(tree, mesh: Mesh | None, batch_axis: int = 0):
    """Constrains every leaf of `tree` (inside jit) to be split over the mesh's devices along `batch_axis`;
    the identity without a mesh."""
    if mesh is None:
        return tree
    spec = PartitionSpec(*([None] * batch_axis), DATA_AXIS)
    return jax.lax.with_sharding_constraint(tree, NamedSharding(mesh, spec))


def replicate(tree, mesh: Mesh | None):
    """Places `tree` whole on every device of `mesh` (on this process's first device without one); over several
    processes, every process must pass the same values."""
    if mesh is None:
        return jax.device_put(tree, jax.local_devices()[0])
    return put(tree, NamedSharding(mesh, PartitionSpec()))


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
