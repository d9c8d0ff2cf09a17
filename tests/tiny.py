"""The TINY settings of the core tests, importable by test modules (`from tiny import TINY_OVERRIDES`) and
served as fixtures by conftest.py, and `run_cli`, the `azjax` command run in the test's process."""

# XLA's flags for every program of the suite (conftest.py sets them; a subprocess with XLA_FLAGS of its own adds
# them): no LLVM optimisation passes, and the CPU's elemental emitter for fusions instead of its MLIR fusion
# emitters: both shorten compilation, which is most of the suite's time. Floating point results may differ in their
# last bits from a default build's; every program of the suite compiles alike.
TEST_XLA_FLAGS = "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"


def jit_optimised(fun, **jit_kwargs):
    """`jax.jit(fun)` compiled with XLA's default LLVM optimisation (level 3) despite TEST_XLA_FLAGS: for the
    suite's programs that compile quickly and run long (thousands of random games, every move of many positions),
    whose loops run many times slower without it."""
    import jax

    return jax.jit(fun, compiler_options={"xla_backend_optimization_level": 3}, **jit_kwargs)

# 1 block x 8 channels (a value head of 1 channel and 8 units), 4 simulations, 8 games x 12 moves (every
# tic-tac-toe game ends within 9), batch 32, a constant learning rate.
TINY_OVERRIDES = {
    "network.num_blocks": 1,
    "network.num_channels": 8,
    "network.value_hidden": 8,
    "network.value_channels": 1,  # whatever the game's preset takes (Connect Four's CPU preset: 4)
    "search.num_simulations": 4,
    "search.max_num_considered_actions": 4,
    "selfplay.num_games": 8,
    "selfplay.num_steps": 12,
    "selfplay.keep_unfinished": True,  # the core tests (resume, metrics) go through the pending positions
    "train.batch_size": 32,
    "train.num_sgd_steps": 2,
    "train.warmup_steps": 1,
    "train.replay_capacity": 256,
    # A constant learning rate: nothing in the compiled iteration then depends on the number of iterations, so the
    # TINY runs of any length (and their resumptions) compile one program, which the run's compilation cache shares.
    "train.lr_schedule": "constant",
    "num_iterations": 2,
}


def cli_args(overrides: dict) -> list[str]:
    """`azjax train` options for these settings (all but num_iterations, which --iterations gives)."""
    return [arg for name, value in overrides.items() if name != "num_iterations" for arg in (f"--{name}", str(value))]


def write_random_agent(path, config) -> None:
    """Writes an agent directory (as `azjax export` does) for tic-tac-toe with `config`'s network, its parameters
    random (every one, a zero-initialised output layer included), so that its figures are not a uniform network's.
    One compilation."""
    import jax

    from azjax import games, pretrained
    from azjax.networks import init_variables, make_network

    game = games.make("tic_tac_toe")
    network = make_network(config.network, game.num_actions)

    @jax.jit
    def random_network() -> dict:
        variables = init_variables(network, jax.random.key(0), game.observation_shape)
        leaves, tree = jax.tree.flatten(variables["params"])
        keys = jax.random.split(jax.random.key(1), len(leaves))
        noisy = [leaf + jax.random.normal(key, leaf.shape) for leaf, key in zip(leaves, keys, strict=True)]
        return dict(variables, params=jax.tree.unflatten(tree, noisy))

    pretrained.write(path, config, random_network(), {"observation_version": game.observation_version})


def run_cli(argv: list) -> tuple[int, str, str]:
    """`azjax ARGV` in this process: (exit status, stdout, stderr), argparse's exits included."""
    import contextlib
    import io

    from azjax import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main([str(a) for a in argv])
        except SystemExit as exit_:
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


def load_example(name: str):
    """The module examples/NAME.py of the repository (not a package: imported from its path), and its path."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path
