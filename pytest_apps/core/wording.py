"""A count with its noun, as every message, report and header line says one: `1 case`, `2 cases`, `0 cases`."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str = "") -> str:
    """`n` and `noun`, the noun in the singular for exactly one and in the plural (`plural`, else `noun` + "s")
    for any other count."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
