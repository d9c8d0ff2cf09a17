"""azjax: AlphaZero in functional JAX.

Shape letters used in docstrings across the package: B batch, T time (moves), A actions, H/W board height and
width, C channels, N table or buffer rows.
"""

from azjax import games
from azjax.agent import Agent, load_agent
from azjax.config import Config, ConfigError, get_config
from azjax.trainer import train
from azjax.training import init_run_state, make_train_iteration

__all__ = [
    "Agent",
    "Config",
    "ConfigError",
    "games",
    "get_config",
    "init_run_state",
    "load_agent",
    "make_train_iteration",
    "train",
]
