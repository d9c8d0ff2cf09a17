"""azjax: AlphaZero in functional JAX.

Shape letters used in docstrings across the package: B batch, T time (moves), A actions, H/W board height and
width, C channels, S simulations.
"""

from azjax import games

__all__ = ["games"]
