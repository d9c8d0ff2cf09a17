"""A network of one's own trains, evaluates, resumes bitwise, exports and reloads in a fresh process as the ResNet
does: examples/mlp_network.py from the command line (`--network FILE:FACTORY`, recorded in the run) and a module
given to `train` in Python; examples/transformer_network.py trains an iteration of Connect Four; a module that
breaks the network contract is refused before anything runs, naming the output and the shape expected."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn
from tiny import cli_args, run_cli

import azjax
from azjax import config as config_lib
from azjax import games, networks, presets, trainer

ROOT = Path(__file__).resolve().parents[1]
MLP = f"{ROOT / 'examples' / 'mlp_network.py'}:make_mlp"
TRANSFORMER = f"{ROOT / 'examples' / 'transformer_network.py'}:make_transformer"

pytestmark = [pytest.mark.usefixtures("persistent_compile_cache"),
              pytest.mark.filterwarnings("ignore:Some donated buffers were not usable")]


def quiet(_: str) -> None:
    pass


@pytest.fixture(scope="module")
def mlp_run(tmp_path_factory, tiny_overrides):
    """A TINY tic-tac-toe run of the example MLP (a copy of examples/mlp_network.py beside the run, as a user's
    own file), trained from the command line with an evaluation; the run directory and the network's source."""
    root = tmp_path_factory.mktemp("own_network")
    shutil.copy(ROOT / "examples" / "mlp_network.py", root / "my_network.py")
    source = f"{root / 'my_network.py'}:make_mlp"
    code, _, err = run_cli(["train", "--out", root / "run", "--network", source, "--iterations", "2",
                            "--eval-every", "2", "--eval-games", "2", "--eval-opponents", "random", "--no-progress",
                            "--devices", "1", *cli_args(tiny_overrides)])
    assert code == 0, err
    return root / "run", source


def test_the_command_line_trains_evaluates_and_records_the_network(mlp_run):
    run_dir, source = mlp_run
    assert json.loads((run_dir / "config.json").read_text())["network"]["module"] == source
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [1, 2] and "eval/random" in records[-1]
    assert "eval/optimal_move_rate" in records[-1]  # tic-tac-toe's solved positions, through the MLP
    assert all(np.isfinite(r["loss"]) for r in records if r["sgd_steps"])
    agent = azjax.load_agent(run_dir)
    assert type(agent.network).__name__ == "MLP" and agent.variables["batch_stats"] == {}


@pytest.mark.slow  # the default suite keeps the bitwise resume of tests/test_checkpointing.py
def test_a_resumed_run_of_the_network_equals_an_uninterrupted_one(tmp_path, tiny_config):
    config = config_lib.with_overrides(tiny_config, {"network.module": MLP, "num_iterations": 2})
    straight = trainer.train(config, tmp_path / "straight", progress=False, eval_every=0, num_devices=1, log=quiet)
    first = config_lib.with_overrides(config, {"num_iterations": 1})
    trainer.train(first, tmp_path / "resumed", progress=False, eval_every=0, num_devices=1, log=quiet)
    resumed = trainer.train(config, tmp_path / "resumed", progress=False, eval_every=0, num_devices=1, log=quiet)
    assert resumed.resumed_from == 1
    for a, b in zip(jax.tree.leaves(straight.run_state), jax.tree.leaves(resumed.run_state), strict=True):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_eval_play_and_export_take_the_run_alone(mlp_run, tmp_path):
    run_dir, _ = mlp_run
    code, out, err = run_cli(["eval", run_dir, "random", "--games", "2", "--no-progress"])
    assert code == 0 and "random" in out, err
    code, _, err = run_cli(["export", run_dir, tmp_path / "exported"])
    assert code == 0, err


def test_a_fresh_process_loads_the_run_and_its_export(mlp_run, tmp_path):
    """From another directory, with nothing imported by hand: the recorded FILE:FACTORY builds the network."""
    run_dir, _ = mlp_run
    code, _, err = run_cli(["export", run_dir, tmp_path / "exported"])
    assert code == 0, err
    script = textwrap.dedent(f"""
        import jax, azjax
        for source in ({str(run_dir)!r}, {str(tmp_path / 'exported')!r}):
            agent = azjax.load_agent(source)
            states = jax.vmap(agent.game.init)(jax.random.split(jax.random.key(0), 3))
            logits, value = agent.policy_value(states)
            moves = agent.act(jax.random.key(1), states, num_simulations=2)
            print(type(agent.network).__name__, logits.shape, value.shape, moves.shape)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                            check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == ["MLP (3, 9) (3,) (3,)"] * 2


def test_a_network_that_no_longer_imports_is_one_line_not_a_damaged_checkpoint(mlp_run, tmp_path):
    """The run's network file moved away: a fresh `azjax eval` says which network is missing, in one line."""
    run_dir, source = mlp_run
    path = Path(source.rsplit(":", 1)[0])
    path.rename(path.with_suffix(".moved"))
    try:
        result = subprocess.run([str(Path(sys.executable).with_name("azjax")), "eval", str(run_dir), "random",
                                 "--games", "2"], capture_output=True, text=True, cwd=tmp_path, check=False)
    finally:
        path.with_suffix(".moved").rename(path)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-3000:]
    assert "network" in lines[0] and "my_network.py" in lines[0] and "damaged" not in lines[0], lines[0]


@pytest.mark.slow  # the default suite keeps the command line's run of the same network
def test_a_module_given_in_python_trains_resumes_and_loads(tmp_path, tiny_config):
    example = networks.load_network(MLP, games.make("tic_tac_toe"))  # the class of examples/mlp_network.py
    network = type(example)(num_actions=9, hidden=(16,))
    config = config_lib.with_overrides(tiny_config, {"num_iterations": 1})
    first = trainer.train(config, tmp_path / "run", progress=False, eval_every=1, eval_games=2,
                          eval_opponents=("random",), num_devices=1, log=quiet, network=network)
    assert "eval/random" in first.history[-1]
    longer = config_lib.with_overrides(config, {"num_iterations": 2})
    again = trainer.train(longer, tmp_path / "run", progress=False, eval_every=0, num_devices=1, log=quiet,
                          network=network)
    assert again.resumed_from == 1 and int(again.run_state.iteration) == 2
    agent = azjax.load_agent(tmp_path / "run", network=network)
    assert agent.network is network
    assert agent.variables["params"]["Dense_0"]["kernel"].shape == (18, 16)  # the module's own, not a ResNet
    single = agent.game.init(jax.random.key(0))
    for call in (agent.policy_value, lambda s: agent.act(jax.random.key(1), s, search=False)):
        with pytest.raises(ValueError, match=r"takes a batch of states \[B\].*shape \(\)"):
            call(single)


@pytest.mark.slow  # a second network's programs; the default suite trains the user's network of this module
def test_the_transformer_trains_an_iteration_of_connect_four(tmp_path, tiny_overrides):
    overrides = {**tiny_overrides, "network.module": TRANSFORMER, "num_iterations": 1, "selfplay.num_steps": 4}
    config = config_lib.with_overrides(presets.get_config("connect_four"), overrides)
    result = trainer.train(config, tmp_path / "run", progress=False, eval_every=0, num_devices=1, log=quiet)
    assert int(result.run_state.iteration) == 1
    params = result.run_state.train_state.params
    assert "position" in params and params["position"].shape == (42, 32)  # a token per cell of the 6 x 7 board


class Wrong(nn.Module):
    """A module whose outputs break the contract in the way `fault` says."""

    num_actions: int
    fault: str

    @nn.compact
    def __call__(self, observations, train: bool = False):
        x = nn.Dense(8)(observations.reshape(observations.shape[0], -1))
        logits = nn.Dense(self.num_actions + (self.fault == "logits"))(x)
        value = nn.Dense(1)(x)
        if self.fault != "value":
            value = value[:, 0]
        if self.fault == "dtype":
            value = value.astype(jnp.bfloat16)
        if self.fault == "train":
            return logits
        return logits, value


@pytest.mark.parametrize(("fault", "fragment"), [
    ("logits", "the logits it returns have shape [2, 10] for a batch of 2 observations; expected [2, 9] ([B, A]"),
    ("value", "the value it returns has shape [2, 1] for a batch of 2 observations; expected [2] ([B]: one value"),
    ("dtype", "the value it returns is bfloat16; expected float32"),
    ("train", "it must return (logits [B, A], value [B])"),
])
def test_a_module_that_breaks_the_contract_is_refused_naming_the_output(fault, fragment):
    game = games.make("tic_tac_toe")
    with pytest.raises(networks.NetworkError) as caught:
        networks.check_network(Wrong(num_actions=9, fault=fault), game)
    assert fragment in str(caught.value)


def test_the_resnet_keeps_the_contract_with_every_head():
    game = games.make("connect_four")
    for value_head in ("scalar", "wdl"):
        network = networks.make_network(config_lib.NetworkConfig(num_channels=8, value_head=value_head),
                                        game.num_actions, reply_head=True)
        networks.check_network(network, game, reply_policy=True)
    with pytest.raises(networks.NetworkError, match="needs reply_head = True"):
        networks.check_network(Wrong(num_actions=7, fault=""), game, reply_policy=True)


def test_the_command_line_refuses_a_broken_network_before_anything_runs(tmp_path):
    tests = str(Path(__file__).parent)
    (tmp_path / "bad_network.py").write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {tests!r})
        from test_own_network import Wrong

        def make_wrong(*, num_actions, observation_shape):
            return Wrong(num_actions=num_actions, fault="logits")
    """))
    wrong = f"{tmp_path / 'bad_network.py'}:make_wrong"
    code, out, err = run_cli(["train", "--out", tmp_path / "run", "--network", wrong, "--iterations", "1"])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert "the logits it returns have shape [2, 10]" in lines[0] and "Compiling" not in out
    assert not (tmp_path / "run").exists()
    code, _, err = run_cli(["train", "--out", tmp_path / "run", "--network", "no_such_module:make_it",
                            "--iterations", "1"])
    assert code == 2 and "network 'no_such_module:make_it': no module named 'no_such_module'" in err
