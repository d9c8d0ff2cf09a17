"""The wording of counts in printed messages (azjax/text.py)."""

from __future__ import annotations

import pytest

from azjax.text import counted, figure


@pytest.mark.parametrize(
    ("count", "noun", "plural", "said"),
    [
        (1, "record", None, "1 record"),
        (2, "record", None, "2 records"),
        (0, "visit", None, "0 visits"),
        (1, "symmetry", None, "1 symmetry"),
        (8, "symmetry", None, "8 symmetries"),
        (3, "day", None, "3 days"),  # a vowel before the y: a plain s
        (1, "test position", None, "1 test position"),
        (2, "index", "indices", "2 indices"),
    ],
)
def test_a_count_takes_the_singular_only_at_one(count, noun, plural, said):
    assert counted(count, noun, plural) == said


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (4519 / 4520, "0.9998"),  # one labelled position of 4520 missed: not 1.000
        (1.0, "1.000"),
        (0.99934, "0.999"),
        (0.6796875, "0.680"),
        (0.0002, "0.0002"),  # not 0.000 either
        (0.0, "0.000"),
        (float("nan"), "nan"),
    ],
)
def test_a_figure_that_is_not_whole_never_reads_as_whole(value, said):
    assert figure(value) == said


def test_a_rate_of_labelled_positions_never_reads_100_percent_short_of_all():
    from azjax.solver.positions import Rate

    assert str(Rate(4519, 4520)).startswith("99.98% [")
    assert str(Rate(4520, 4520)).startswith("100.0% [")
    assert str(Rate(1, 3)).startswith(" 33.3% [")
