"""Exact solvers, and the labelled positions that judge agents by them.

- `azjax.solver.exhaustive`: any small, deterministic, acyclic game (tic-tac-toe): every reachable position
  enumerated with the game's own jitted `step` and solved by backward induction; `solve`, `lookup`,
  `perfect_agent`, `policy_accuracy`.
- `azjax.solver.connect_four`: Connect Four by alpha-beta search on bitboards (numba, on the host), `Solver`.

Every value and score here is for the player to move in the position it belongs to.
"""

from azjax.solver.exhaustive import (
    Solution,
    encode_states,
    lookup,
    optimal_action_mask,
    perfect_agent,
    policy_accuracy,
    solve,
)

__all__ = [
    "Solution",
    "encode_states",
    "lookup",
    "optimal_action_mask",
    "perfect_agent",
    "policy_accuracy",
    "solve",
]
