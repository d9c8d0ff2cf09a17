"""The race: azjax's training against a reference loop that follows pgx's examples/alphazero/train.py, for the same
wall time on the same game, network, search and number of parallel games, both judged by perfect play along the way.

    python experiments/studies/time_to_strength/time_to_strength.py --game connect_four --seconds 600 --out runs/race
    python experiments/studies/time_to_strength/time_to_strength.py --seconds 60 --marks 30 60 --games-per-seat 10

azjax trains its CPU preset (--preset gpu: the GPU one) as `azjax train --seconds S` does (its default device layout
unless --devices), checkpointing every --checkpoint-every iterations. The reference is pgx's algorithm written with
azjax's game, network and search (Gumbel MuZero, the same simulations): each iteration starts all B games afresh and
plays --reference-steps moves (a game that ends restarts at once, from the empty board as in pgx's example: the
random opening moves of azjax's preset, selfplay.opening_moves, are azjax's method, not the reference's); value
targets discount the rewards backwards inside that window (-1 per move: each value is for the player to move), and a
position whose game does not end inside the window gets no value loss but keeps its policy loss; every position then
trains once, shuffled, in minibatches of the preset's SGD batch size, with softmax cross-entropy + 0.5 x squared
error and Adam at the preset's peak learning rate, no weight decay, no replay, no symmetries. pgx's example shuffles
and loops over minibatches on the host; here the whole iteration is one jitted program, on one device, which only
helps the reference.

Strength is the share of the game's labelled positions (azjax.solver.positions) where the network's top move
keeps the game-theoretic outcome. The script prints both runs' figures at the --marks that --seconds reached
(seconds of training, compilation included: the latest checkpoint or snapshot at or before each) and at the end of
the runs, when azjax first reached the reference's final figure, and a match between the two final agents with
search (--games-per-seat each way, from the arena's distinct random openings). Everything goes to
OUT/time_to_strength.json.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from azjax import parallel

if __name__ == "__main__":
    parallel.expose_cpu_cores()  # before jax starts, so that azjax's default layout can split over the cores

import jax
import jax.numpy as jnp
import optax
from flax import struct

from azjax import checkpointing, evaluation, network_bots, trainer, training
from azjax import config as config_lib
from azjax.agent import make_agent
from azjax.config import Config
from azjax.networks import init_variables
from azjax.solver import positions

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))  # experiments/, for the shared benchmark module
from benchmark import note_written, preset_config, run_main


class ReferenceState(struct.PyTreeNode):
    params: dict
    batch_stats: dict
    opt_state: optax.OptState
    key: jax.Array


def init_reference(config: Config, parts: training.Components) -> ReferenceState:
    """The reference's network (initialised as azjax's is, from the same seed) and Adam state."""
    network_key, run_key = jax.random.split(jax.random.key(config.seed))
    variables = init_variables(parts.network, network_key, parts.game.observation_shape)
    optimizer = optax.adam(config.train.learning_rate)
    return ReferenceState(variables["params"], variables["batch_stats"], optimizer.init(variables["params"]), run_key)


def reference_value_targets(reward: jax.Array, ended: jax.Array) -> tuple[jax.Array, jax.Array]:
    """pgx's value targets of a [T, B] window: `reward[t]` is what move t paid its mover and `ended[t]` whether it
    ended the game (the next position then belongs to a new game). The target of position t, for its player to
    move, is the discounted return reward[t] - reward[t+1] + ... up to its game's end; the mask is 1 where that end
    falls inside the window (the other positions get no value loss)."""

    def discount_back(later_value, step):
        reward, ended = step
        value = reward + jnp.where(ended, 0.0, -1.0) * later_value  # the next position is the opponent's
        return value, value

    _, value_target = jax.lax.scan(discount_back, jnp.zeros(reward.shape[1:]), (reward, ended), reverse=True)
    value_mask = (jnp.cumsum(ended[::-1], axis=0)[::-1] >= 1).astype(jnp.float32)  # a game ends later on
    return value_target, value_mask


def make_reference_iteration(config: Config, parts: training.Components, num_steps: int):
    """One iteration of the reference (see the module docstring) as a pure function; jit it."""
    game, network, search_fn = parts.game, parts.network, parts.search_fn
    num_games, batch_size = config.selfplay.num_games, config.train.batch_size
    num_updates = num_games * num_steps // batch_size
    optimizer = optax.adam(config.train.learning_rate)
    if num_updates < 1:
        raise ValueError(f"--reference-steps x games ({num_steps * num_games}) must be at least the SGD batch "
                         f"({batch_size})")

    def loss_fn(params, batch_stats, batch):
        observation, policy_target, value_target, value_mask = batch
        (logits, value), updates = network.apply(
            {"params": params, "batch_stats": batch_stats}, observation, train=True, mutable=["batch_stats"]
        )
        policy_loss = jnp.mean(optax.softmax_cross_entropy(logits, policy_target))
        value_loss = jnp.mean(optax.l2_loss(value, value_target) * value_mask)
        return policy_loss + value_loss, (updates["batch_stats"], policy_loss, value_loss)

    def iteration(state: ReferenceState) -> tuple[ReferenceState, dict]:
        key, init_key, play_key, shuffle_key = jax.random.split(state.key, 4)
        variables = {"params": state.params, "batch_stats": state.batch_stats}
        fresh_games = jax.vmap(game.init)(jax.random.split(init_key, num_games))

        def play_step(states, key):
            observation = jax.vmap(game.observe)(states)
            search_key, reset_key = jax.random.split(key)
            searched = search_fn(variables, search_key, states, jnp.zeros(num_games, jnp.int32))
            mover = states.current_player
            after = jax.vmap(game.step)(states, searched.action)
            restarted = jax.vmap(game.init)(jax.random.split(reset_key, num_games))
            ended = after.terminated
            states = jax.tree.map(
                lambda new, old: jnp.where(ended.reshape(-1, *([1] * (old.ndim - 1))), new, old), restarted, after
            )
            reward = after.rewards[jnp.arange(num_games), mover]  # for the player who moved
            return states, (observation, searched.policy_target, reward, ended)

        _, (observation, policy_target, reward, ended) = jax.lax.scan(
            play_step, fresh_games, jax.random.split(play_key, num_steps)
        )

        value_target, value_mask = reference_value_targets(reward, ended)
        samples = (observation, policy_target, value_target, value_mask)
        samples = jax.tree.map(lambda x: x.reshape(num_steps * num_games, *x.shape[2:]), samples)
        order = jax.random.permutation(shuffle_key, num_steps * num_games)[: num_updates * batch_size]
        minibatches = jax.tree.map(lambda x: x[order].reshape(num_updates, batch_size, *x.shape[1:]), samples)

        def sgd_step(carry, batch):
            params, batch_stats, opt_state = carry
            grads, (batch_stats, policy_loss, value_loss) = jax.grad(loss_fn, has_aux=True)(
                params, batch_stats, batch
            )
            updates, opt_state = optimizer.update(grads, opt_state)
            return (optax.apply_updates(params, updates), batch_stats, opt_state), (policy_loss, value_loss)

        (params, batch_stats, opt_state), (policy_loss, value_loss) = jax.lax.scan(
            sgd_step, (state.params, state.batch_stats, state.opt_state), minibatches
        )
        metrics = {"policy_loss": policy_loss.mean(), "value_loss": value_loss.mean(),
                   "games_finished": ended.sum(), "value_targets": value_mask.mean()}
        return ReferenceState(params, batch_stats, opt_state, key), metrics

    return iteration


def train_reference(config: Config, seconds: float, num_steps: int) -> list[tuple[float, dict]]:
    """Trains the reference for `seconds` (compilation included); (seconds, variables) after every iteration."""
    parts = training.make_components(config)
    start = time.perf_counter()
    state = init_reference(config, parts)
    iteration = jax.jit(make_reference_iteration(config, parts, num_steps), donate_argnums=0)
    snapshots: list[tuple[float, dict]] = []
    while not snapshots or time.perf_counter() - start < seconds:  # at least one iteration
        state, metrics = iteration(state)
        metrics = jax.device_get(metrics)
        variables = jax.device_get({"params": state.params, "batch_stats": state.batch_stats})
        snapshots.append((time.perf_counter() - start, variables))
        print(f"reference iteration {len(snapshots)}: {snapshots[-1][0]:.0f} s, policy loss "
              f"{float(metrics['policy_loss']):.3f}, value loss {float(metrics['value_loss']):.3f}, value targets "
              f"{float(metrics['value_targets']):.0%}", flush=True)
    return snapshots


def azjax_snapshots(run_dir: Path) -> list[tuple[float, int]]:
    """(seconds of training at the checkpoint, iteration) of every checkpoint of an azjax run."""
    manager = checkpointing.CheckpointManager(run_dir)
    return sorted((float(manager.meta(step)["metrics"]["time"]), step) for step in manager.steps())


def pick_rows(marks: Sequence[float], seconds: float, azjax_seconds: Sequence[float],
              reference_seconds: Sequence[float]) -> list[dict]:
    """The rows of the comparison: each of `marks` that the budget of `seconds` reached, in their order, then the
    final point (at the later of the two runs' ends). Each row holds the index of azjax's latest checkpoint
    (`azjax_seconds`, ascending) and of the reference's latest snapshot (`reference_seconds`) at or before its time,
    None where there was none yet. A mark past the budget gets no row: it would show the final figures again, at a
    time neither run trained to."""

    def latest(times: Sequence[float], at: float) -> int | None:
        reached = [index for index, time_s in enumerate(times) if time_s <= at]
        return reached[-1] if reached else None

    rows = [{"seconds": mark, "azjax": latest(azjax_seconds, mark), "reference": latest(reference_seconds, mark)}
            for mark in marks if mark <= seconds]
    end = max([*azjax_seconds[-1:], *reference_seconds[-1:]], default=seconds)
    rows.append({"seconds": round(end, 1), "final": True, "azjax": latest(azjax_seconds, end),
                 "reference": latest(reference_seconds, end)})
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="connect_four", help="a game with labelled positions (default: "
                        "connect_four)")
    parser.add_argument("--seconds", type=float, default=600.0, help="training time of each (default: 600)")
    parser.add_argument("--out", type=Path, default=Path("runs/time_to_strength"), help="output directory")
    parser.add_argument("--marks", type=float, nargs="+", default=[60, 90, 150, 300, 600],
                        help="seconds at which to compare the two, those up to --seconds (default: 60 90 150 300 "
                        "600); the end of the runs is compared too")
    parser.add_argument("--reference-steps", type=int, default=64, help="moves per game per reference iteration "
                        "(pgx's max_num_steps; default: 64, a Connect Four game and a half)")
    parser.add_argument("--checkpoint-every", type=int, default=5, help="azjax's checkpoints, in iterations")
    parser.add_argument("--devices", type=int, help="azjax's device count (default: its own layout rule)")
    parser.add_argument("--games-per-seat", type=int, default=100, help="games each way in the final match")
    parser.add_argument("--preset", default="cpu", choices=["cpu", "gpu"], help="the preset both start from "
                        "(default: cpu; gpu on an accelerator)")
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="config overrides of both "
                        "(network, search, games, batch size, learning rate, seed)")
    args = parser.parse_args(argv)
    labelled = positions.load(args.game)
    if labelled is None:
        parser.error(f"{args.game} has no labelled positions to judge strength on")
    config = preset_config(args.game, args.preset, ["num_iterations=1000000", *args.set])
    azjax_dir = args.out / "azjax"
    if azjax_dir.exists():
        parser.error(f"{azjax_dir} exists; pass a new --out")

    note_written(azjax_dir)
    trainer.train(config, azjax_dir, max_seconds=args.seconds, checkpoint_every=args.checkpoint_every,
                  keep_checkpoints=1_000_000, eval_every=0, progress=True, num_devices=args.devices)
    reference = train_reference(config, args.seconds, args.reference_steps)

    key = jax.random.key(0)

    def strength(variables: dict) -> dict:
        report = evaluation.judge_bot(key, network_bots.greedy_bot(make_agent(config, variables)), labelled)
        return report.to_dict()

    manager = checkpointing.CheckpointManager(azjax_dir)
    azjax_curve = []
    for seconds, step in azjax_snapshots(azjax_dir):
        rate = strength(manager.restore_model(step)[1])["optimal_move_rate"]
        azjax_curve.append({"seconds": round(seconds, 1), "iteration": step, "optimal_move_rate": rate})
    reference_final = strength(reference[-1][1])["optimal_move_rate"]
    reached = next((point for point in azjax_curve if point["optimal_move_rate"] >= reference_final), None)

    rows = pick_rows(args.marks, args.seconds, [point["seconds"] for point in azjax_curve],
                     [seconds for seconds, _ in reference])
    for row in rows:  # the indices picked become the figures there
        ours, theirs = row["azjax"], row["reference"]
        row["azjax"] = None if ours is None else azjax_curve[ours]["optimal_move_rate"]
        row["reference"] = (None if theirs is None else reference_final if theirs == len(reference) - 1
                            else strength(reference[theirs][1])["optimal_move_rate"])
    final_ours = make_agent(config, manager.restore_model()[1])
    final_theirs = make_agent(config, reference[-1][1])
    match = evaluation.head_to_head(jax.random.key(1), final_ours.game, final_ours.act,
                                    final_theirs.act, args.games_per_seat, opening_moves=4)

    print(f"\nOptimal top moves of the network on {labelled.num_positions} solved {args.game} positions:")
    print(f"{'seconds':>12s} {'azjax':>8s} {'reference':>10s}")
    for row in rows:
        show = lambda value: "-" if value is None else f"{value:.3f}"  # noqa: E731
        when = f"{row['seconds']:.0f}" + (" (end)" if row.get("final") else "")
        print(f"{when:>12s} {show(row['azjax']):>8s} {show(row['reference']):>10s}")
    print(f"reference after {reference[-1][0]:.0f} s ({len(reference)} iterations): {reference_final:.3f}; azjax "
          + (f"reached it at {reached['seconds']:.0f} s (iteration {reached['iteration']})" if reached
             else "did not reach it"))
    print(f"final azjax against final reference, both with search: {match['wins']}/{match['draws']}/"
          f"{match['losses']} (W/D/L of azjax over {match['games']} games)")
    result = {
        "game": args.game, "seconds": args.seconds, "config": config_lib.to_dict(config),
        "reference_steps": args.reference_steps, "marks": rows, "azjax_curve": azjax_curve,
        "reference_iterations": len(reference), "reference_final": reference_final,
        "azjax_reached_reference_final_at": reached, "final_match": match,
    }
    (args.out / "time_to_strength.json").write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    run_main(main)
