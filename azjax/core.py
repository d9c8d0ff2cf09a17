"""The core: the parts an AlphaZero loop is made of, in mctx's style (arrays first, keyword-only
hyperparameters, shapes on every argument), pure and un-jitted, with no config object required and no file I/O.

    game = core.make_game("tic_tac_toe")
    search = functools.partial(core.run_search, game=game, apply_fn=core.inference_fn(network), num_simulations=16)
    games = core.init_selfplay(key, game, num_games=64)
    games, trajectory = core.run_selfplay(key, variables, games, game=game, search_fn=search, num_steps=8)
    buffer, counts = core.store_positions(buffer, trajectory, pending, game.max_length)
    batch = core.sample(key, buffer, 128, game)
    train_state, metrics = core.sgd_step(train_state, batch, loss_fn=..., optimizer=optax.adam(schedule))
    played = core.play_match(key, states, game=game, agent_a=agent_fn, agent_b=core.random_agent)  # N games
    score = jnp.mean((played.outcome + 1) / 2)  # agent A's score against random: the evaluation of an agent
    episodes = core.play_episodes(key, states, game=puzzle, agent=agent_fn)  # a one-player game's: mean return

An agent is an `AgentFn`, (key, states [B]) -> actions [B], or a `Bot` (a name, an `analyse` that says what it
thinks, and optionally a `Memory` kept from move to move); `play_match` plays two of them over N games in pairs,
one per seat, each game to its end, with each game's outcome from agent A's side (`Games`).

examples/own_loop.py composes a whole training loop from these, jitted as one program. The built-in iteration
(`azjax.training.make_train_iteration`) is assembled from the same parts, with a `Config` choosing their
hyperparameters. Importing this module loads jax, flax, optax and mctx, and none of orbax, the solvers, the
trainer or the CLI.

Every value is for the player to move at its position: the network's value, a search's root and move values, a
position's value target. Rewards are per player id ([..., 2]). A one-player game (`Game.num_players == 1`) pays
player 0 on any step; values are then returns in the game's units (its `return_bounds`), which
`value_to_return` / `return_to_value` map from and into the network's [-1, 1].
"""

from azjax.bots import AgentFn, Analysis, Bot, Memory, onestep_bot, random_agent, random_bot
from azjax.episodes import Episodes, play_episodes
from azjax.games import Game, State, check_game, return_to_value, value_to_return
from azjax.games import make as make_game
from azjax.learning import LossFn, TrainState, compute_loss, init_train_state, policy_cross_entropy, sgd_step
from azjax.matches import Games, play_match
from azjax.networks import (
    AlphaZeroNetwork,
    ApplyFn,
    NetworkError,
    check_network,
    inference_fn,
    init_variables,
)
from azjax.replay import Batch, ReplayBuffer, add, augment_batch, init_replay, sample, settle
from azjax.search import SearchOutput, evaluate_states, masked_logits, nodes_per_tree, run_search
from azjax.selfplay import (
    SelfPlayState,
    Trajectory,
    compute_value_targets,
    init_selfplay,
    lambda_returns,
    new_games,
    run_selfplay,
    selfplay_step,
    store_positions,
)
from azjax.tree_reuse import KeptTree
from azjax.tree_reuse import follow as follow_tree

__all__ = [
    "AgentFn",
    "AlphaZeroNetwork",
    "Analysis",
    "ApplyFn",
    "Batch",
    "Bot",
    "Episodes",
    "Game",
    "Games",
    "KeptTree",
    "LossFn",
    "Memory",
    "NetworkError",
    "ReplayBuffer",
    "SearchOutput",
    "SelfPlayState",
    "State",
    "TrainState",
    "Trajectory",
    "add",
    "augment_batch",
    "check_game",
    "check_network",
    "compute_loss",
    "compute_value_targets",
    "evaluate_states",
    "follow_tree",
    "inference_fn",
    "init_replay",
    "init_selfplay",
    "init_train_state",
    "init_variables",
    "lambda_returns",
    "make_game",
    "masked_logits",
    "new_games",
    "nodes_per_tree",
    "onestep_bot",
    "play_episodes",
    "play_match",
    "policy_cross_entropy",
    "random_agent",
    "random_bot",
    "return_to_value",
    "run_search",
    "run_selfplay",
    "sample",
    "selfplay_step",
    "settle",
    "sgd_step",
    "store_positions",
    "value_to_return",
]
