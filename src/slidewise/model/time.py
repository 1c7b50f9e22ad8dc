"""Durations: bare numbers are raw timestamp units; with a unit they are milliseconds.

Sources with ISO or epoch-second timestamps are converted to epoch
milliseconds, so ``5s`` / ``5 SECONDS`` means 5000 there.

>>> parse_duration("5s"), parse_duration("250 ms"), parse_duration("2 minutes"), parse_duration("17")
(5000, 250, 120000, 17)
"""

from __future__ import annotations

import re

from slidewise.errors import OptionError

UNIT_MS = {
    "ms": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "second": 1000,
    "seconds": 1000,
    "min": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}

#: The longest duration (window size, lateness): timestamps stay below 2**62, so ``ts + d`` fits in int64.
MAX_DURATION = (2**63 - 1) // 4

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def unit_ms(unit: str) -> int:
    """Milliseconds per ``unit`` (case-insensitive); OptionError if unknown."""
    try:
        return UNIT_MS[unit.lower()]
    except KeyError:
        raise OptionError(f"unknown time unit {unit!r}", hint="use ms, s, min, h or d (e.g. 5s, 250ms)") from None


def parse_duration(text: str | int, *, what: str = "duration") -> int:
    """``"5s"`` -> 5000 (ms); ``"17"`` -> 17 (raw units); OptionError beyond :data:`MAX_DURATION`."""
    if isinstance(text, int):
        return text
    m = _DURATION.match(str(text))
    if not m:
        raise OptionError(f"bad {what} {text!r}", hint="write a number with an optional unit, e.g. 100, 5s, 250ms")
    number, unit = m.group(1), m.group(2)
    scale = unit_ms(unit) if unit else 1
    value = int(number) * scale if number.isdigit() else int(round(float(number) * scale))
    if value > MAX_DURATION:
        raise OptionError(
            f"{what} {text!r} is out of range",
            hint=f"the allowed range is 0 to {MAX_DURATION} time units (about {MAX_DURATION // 31_557_600_000:,} years of milliseconds)",
        )
    return value
