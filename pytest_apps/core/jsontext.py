"""JSON text to Python values, without the 4300-digit limit on integers.

APPS data and candidates' return values may hold integers longer than `int(str)` accepts by default;
`Decimal` converts them without that limit.
"""

from __future__ import annotations

import decimal
import json
import sys
from typing import Any


def parse_int(text: str) -> int:
    if len(text) <= 4000:
        return int(text)
    return int(decimal.Decimal(text))


def loads(text: str | bytes) -> Any:
    return json.loads(text, parse_int=parse_int)


def dumps(value: Any) -> str:
    """`json.dumps`, lifting this process's int-to-str digit limit if a value needs it (APPS data does)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except ValueError:
        sys.set_int_max_str_digits(0)
        return json.dumps(value, ensure_ascii=False)
