"""The registry's `make`: the errors its docstring promises, for every form of name."""

from __future__ import annotations

import pytest

from azjax.games import make


@pytest.mark.parametrize("name", ["tic_tac_toe", "pgx:tic_tac_toe"])
def test_unknown_options_raise_value_error(name: str) -> None:
    # Checked against the factory's signature before it runs, so the pgx form needs no pgx installed.
    with pytest.raises(ValueError, match=rf"bad options \{{'bad_option': 1\}} for game '{name}'.*it accepts"):
        make(name, bad_option=1)
