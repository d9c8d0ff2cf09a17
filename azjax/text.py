"""Wording shared by every printed message: a count beside its noun, a figure that rounding cannot overstate, the
first line of an error quoted."""

from __future__ import annotations

import math


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and `noun`, in the plural unless `count` is 1: "1 record", "2 records", "3 symmetries".

    `plural` overrides the regular plural (noun + "s", or "ies" for a consonant then "y").
    """
    if count == 1:
        return f"{count} {noun}"
    if plural is None:
        plural = noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s"
    return f"{count} {plural}"


def figure(value: float, digits: int = 3) -> str:
    """`value` with `digits` decimals, and more where those would round a value that is not whole to a whole
    number: an optimal-move rate of 4519 / 4520 reads 0.9998, not 1.000 (which would claim every position)."""
    text = f"{value:.{digits}f}"
    while digits < 12 and math.isfinite(value) and value != round(value) and float(text) == round(value):
        digits += 1
        text = f"{value:.{digits}f}"
    return text


def first_line(error: BaseException) -> str:
    """The first line of an error's message (its type's name if it has none), cut to 300 characters: what a message
    of ours quotes of an error raised by a library (orbax, tensorstore) whose full text may run to pages."""
    text = str(error).strip().splitlines()
    line = text[0] if text else type(error).__name__
    return line if len(line) <= 300 else line[:297] + "..."
