"""The TINY settings of the core tests, importable by test modules (`from tiny import TINY_OVERRIDES`) and
served as fixtures by conftest.py."""

# 1 block x 8 channels, 4 simulations, 8 games x 12 moves (every tic-tac-toe game ends within 9), batch 32.
TINY_OVERRIDES = {
    "network.num_blocks": 1,
    "network.num_channels": 8,
    "network.value_hidden": 8,
    "search.num_simulations": 4,
    "search.max_num_considered_actions": 4,
    "selfplay.num_games": 8,
    "selfplay.num_steps": 12,
    "selfplay.keep_unfinished": True,  # the core tests (resume, metrics) go through the pending positions
    "train.batch_size": 32,
    "train.num_sgd_steps": 2,
    "train.warmup_steps": 1,
    "train.replay_capacity": 256,
    "num_iterations": 2,
}


def cli_args(overrides: dict) -> list[str]:
    """`azjax train` options for these settings (all but num_iterations, which --iterations gives)."""
    return [arg for name, value in overrides.items() if name != "num_iterations" for arg in (f"--{name}", str(value))]
