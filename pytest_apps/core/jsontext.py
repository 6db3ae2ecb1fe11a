"""JSON text to and from Python values, without the 4300-digit limit on integers, and the report's layout.

APPS data and candidates' return values may hold integers longer than `int(str)` accepts by default;
`Decimal` converts them without that limit. `write_laid_out` writes a large document readably at the C
encoder's speed.
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


def write_laid_out(value: Any, fh: Any, levels: int = 4) -> None:
    """Write `value` to the text file `fh` as `json.dump(value, fh, indent=1)` would lay out its first `levels`
    levels of containers; each value below them takes one line of compact JSON. The same document, read back,
    and as easy to read (a report's tests one per line), but encoded by json's C encoder, which `indent` turns
    off: at a full run's end that was most of the time spent writing the report."""
    fh.writelines(_laid_out(value, 0, levels, ""))


def _laid_out(value: Any, level: int, levels: int, pad: str):
    if level >= levels or not isinstance(value, (dict, list, tuple)) or not value:
        yield json.dumps(value)
        return
    inner = pad + " "
    if isinstance(value, dict):
        yield "{"
        for n, (key, item) in enumerate(value.items()):
            key = key if isinstance(key, str) else json.dumps(key)  # as json.dump spells a non-str key
            yield ("\n" if n == 0 else ",\n") + inner + json.dumps(key) + ": "
            yield from _laid_out(item, level + 1, levels, inner)
        yield "\n" + pad + "}"
    else:
        yield "["
        for n, item in enumerate(value):
            yield ("\n" if n == 0 else ",\n") + inner
            yield from _laid_out(item, level + 1, levels, inner)
        yield "\n" + pad + "]"
