"""Your own AlphaZero loop in one file, from azjax's exported parts: self-play with Gumbel MuZero search, value
targets, an on-device replay buffer and SGD with a stock optax schedule, one jitted program per iteration.

It trains the MLP of examples/mlp_network.py on tic-tac-toe and judges it against the game's exact solution: the
share of the 4,520 reachable positions where the network's top move (no search) keeps the best outcome. From the
repository root::

    python examples/own_loop.py                    # 40 iterations, about a minute on two CPU cores
    python examples/own_loop.py --iterations 60 --seed 1

Every part here is replaceable: the network (any Flax module with the network contract), the search's
hyperparameters, the loss (any `(params, batch_stats, batch) -> (loss, (metrics, batch_stats))`), the optimizer.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import optax
from flax import struct

from azjax import core

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mlp_network import make_mlp

NUM_GAMES = 128  # games played in parallel (B)
NUM_STEPS = 16  # moves per game per iteration (T)
NUM_SIMULATIONS = 16  # Gumbel MuZero simulations per move
OPENING_MOVES = 6  # each game starts after 0..6 random moves, so that play reaches the positions after blunders
REPLAY_CAPACITY = 16384
BATCH_SIZE = 128
SGD_STEPS = 64  # per iteration


class LoopState(struct.PyTreeNode):
    """Everything the loop carries from one iteration to the next."""

    train: core.TrainState
    games: core.SelfPlayState
    replay: core.ReplayBuffer
    key: jax.Array


def make_loop(game: core.Game, network, optimizer: optax.GradientTransformation):
    """The loop's `init(key) -> LoopState` and `iteration(LoopState) -> (LoopState, metrics)`, both pure."""
    search = functools.partial(core.run_search, game=game, apply_fn=core.inference_fn(network),
                               num_simulations=NUM_SIMULATIONS)
    loss_fn = functools.partial(core.compute_loss, network=network, weight_decay=1e-4)

    def init(key: jax.Array) -> LoopState:
        network_key, games_key, key = jax.random.split(key, 3)
        return LoopState(
            train=core.init_train_state(network_key, network, optimizer, observation_shape=game.observation_shape),
            games=core.init_selfplay(games_key, game, num_games=NUM_GAMES, opening_moves=OPENING_MOVES),
            replay=core.init_replay(game, REPLAY_CAPACITY),
            key=key,
        )

    def iteration(state: LoopState) -> tuple[LoopState, dict]:
        selfplay_key, sgd_key, key = jax.random.split(state.key, 3)
        # Self-play: B games x T moves; a finished game restarts in its slot.
        games, trajectory = core.run_selfplay(selfplay_key, state.train.variables, state.games, game=game,
                                              search_fn=search, num_steps=NUM_STEPS, opening_moves=OPENING_MOVES,
                                              keep_unfinished=True)
        # Value targets (each game's outcome, for the player to move at each position) and the replay insert: the
        # positions of games still going on wait in the buffer until a later iteration sees their game end.
        buffer, counts = core.store_positions(state.replay, trajectory, state.games.pending, game.max_length)

        def sgd(train: core.TrainState, step_key: jax.Array):
            batch = core.sample(step_key, buffer, BATCH_SIZE, game)  # with a random board symmetry each
            return core.sgd_step(train, batch, loss_fn=loss_fn, optimizer=optimizer)

        train, losses = jax.lax.scan(sgd, state.train, jax.random.split(sgd_key, SGD_STEPS))
        metrics = {name: jnp.mean(values) for name, values in losses.items()}
        metrics["games_finished"] = jnp.sum(trajectory.terminated)
        metrics["positions_added"] = counts["positions_added"]
        return LoopState(train=train, games=games, replay=buffer, key=key), metrics

    return init, iteration


def top_move_accuracy(game: core.Game, network, variables: dict) -> float:
    """The share of tic-tac-toe's reachable positions where the network's top legal move is optimal."""
    from azjax import solver  # the exact solver: an application-level judge, outside the core

    @jax.jit
    def top_move(states: core.State) -> jax.Array:
        logits, _ = core.evaluate_states(core.inference_fn(network), variables, game, states)
        return jnp.argmax(logits, axis=-1)

    return solver.policy_accuracy(solver.solve(game), top_move)


def train(num_iterations: int = 40, seed: int = 0, log=print) -> float:
    """Trains for `num_iterations` and returns the network's top-move accuracy on the solved positions."""
    game = core.make_game("tic_tac_toe")
    network = make_mlp(num_actions=game.num_actions, observation_shape=game.observation_shape)
    # A stock optax schedule: a linear warm-up, then a cosine to 1% over the run's SGD steps.
    schedule = optax.warmup_cosine_decay_schedule(init_value=0.0, peak_value=3e-3, warmup_steps=50,
                                                  decay_steps=num_iterations * SGD_STEPS, end_value=3e-5)
    optimizer = optax.adam(schedule)
    init, iteration = make_loop(game, network, optimizer)
    state = jax.jit(init)(jax.random.key(seed))
    iteration = jax.jit(iteration, donate_argnums=0)
    for i in range(num_iterations):
        state, metrics = iteration(state)
        if (i + 1) % 10 == 0 or i + 1 == num_iterations:
            metrics = jax.device_get(metrics)
            log(f"iteration {i + 1}: loss {metrics['loss']:.3f} (policy {metrics['policy_loss']:.3f}, value "
                f"{metrics['value_loss']:.3f}), {int(metrics['games_finished'])} games finished")
    accuracy = top_move_accuracy(game, network, state.train.variables)
    log(f"the network's top move is optimal in {accuracy:.2%} of the 4,520 positions")
    return accuracy


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=40, help="training iterations (default 40)")
    parser.add_argument("--seed", type=int, default=0, help="the run's random seed (default 0)")
    args = parser.parse_args()
    train(args.iterations, args.seed)
