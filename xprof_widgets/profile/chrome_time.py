"""Chrome trace times as exact integer picoseconds.

Chrome's `ts` and `dur` are microseconds written as decimals. PyTorch's profiler writes epoch
microseconds with a fraction (`1712195495406752.8`): seventeen significant digits, more than a
float keeps, and 1.7e21 picoseconds, more than int64 holds. So the JSON's own text is kept for
numbers too long for a float, times are computed as Python integers of picoseconds, and the
trace's origin is subtracted before they enter the int64 columns. `displayTimeUnit` only says
how a viewer should print times; the values are microseconds whatever it says.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

_PS_PER_US = 10**6
_FLOAT_SAFE_CHARS = 16
"""A JSON number of at most 16 characters has at most 15 significant digits, which a float
gives back exactly through its shortest repr."""


class ExactFloat(float):
    """A JSON number too long for a float, carrying the text it was written as."""

    text: str


def parse_float(text: str) -> float:
    """`json.loads`'s `parse_float`: a float, keeping the text of the ones a float would round."""
    if len(text) <= _FLOAT_SAFE_CHARS:
        return float(text)
    value = ExactFloat(text)
    value.text = text
    return value


def is_number(value: Any) -> bool:
    """Whether a JSON value is a number (bools are not)."""
    kind = type(value)
    return kind is float or kind is int or kind is ExactFloat


def picoseconds(value: Any) -> int:
    """A `ts` or `dur` (number, numeric string or Decimal, finite) as exact picoseconds,
    rounded half to even below the picosecond."""
    kind = type(value)
    if kind is int:
        return value * _PS_PER_US
    if kind is float:
        text = repr(value)
    elif kind is ExactFloat:
        text = value.text
    else:
        return _rounded(_decimal(value) * _PS_PER_US)
    whole, _, fraction = text.partition(".")
    if len(fraction) > 6 or "e" in text or "E" in text:
        return _rounded(Decimal(text) * _PS_PER_US)
    sign = -1 if whole.startswith("-") else 1
    return int(whole) * _PS_PER_US + sign * int((fraction + "000000")[:6])


def exact_us(value: Any) -> Decimal:
    """A `ts` as an exact Decimal of microseconds (for differences such as E minus B)."""
    kind = type(value)
    if kind is ExactFloat:
        return Decimal(value.text)
    if kind is float:
        return Decimal(repr(value))
    return _decimal(value)


def _decimal(value: Any) -> Decimal:
    if type(value) is str:
        try:
            return Decimal(value.strip())
        except InvalidOperation:
            return Decimal(float(value))  # what float() accepts and Decimal does not
    return Decimal(value)


def _rounded(value: Decimal) -> int:
    return int(value.to_integral_value(rounding=ROUND_HALF_EVEN))
