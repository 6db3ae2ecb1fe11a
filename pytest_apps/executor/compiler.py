"""Compilation of candidate programs, once per program (cached by a hash of its name and source).

Runs in the server; children get the code object marshalled. Standard library only.
"""

from __future__ import annotations

import hashlib
import marshal

from . import appsstyle
from .protocol import STYLE_APPS_HARNESS, STYLE_REAL


def _syntax_error_line(e: BaseException) -> str:
    import traceback

    try:
        return traceback.format_exception_only(type(e), e)[-1].strip()
    except Exception:  # pragma: no cover
        return f"{type(e).__name__}: {e}"


class Compiler:
    def __init__(self) -> None:
        self.cache: dict[str, tuple] = {}
        self.compiles = 0
        self._marshalled: dict = {}  # code object -> its marshal bytes

    def marshalled(self, code) -> bytes:
        """The bytes a child loads `code` from; made once per program, not once per test."""
        blob = self._marshalled.get(code)
        if blob is None:
            if len(self._marshalled) > 64:
                self._marshalled.clear()
            blob = self._marshalled[code] = marshal.dumps(code)
        return blob

    def get(self, source: str, filename: str, style: str = STYLE_REAL, mode: str = "stdin") -> tuple:
        """-> (code or None, error line). `style` "real" compiles the program as `python prog.py` would; "apps-harness"
        compiles what the original APPS harness executes (its import prefix, and for standard input the program
        rewritten into a function: see appsstyle.py)."""
        key = hashlib.sha256(f"{style}\0{mode}\0{filename}\0".encode() + source.encode("utf-8", "surrogatepass")
                             ).hexdigest()
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        self.compiles += 1
        text = appsstyle.full_source(source, mode) if style == STYLE_APPS_HARNESS else source
        try:
            result = (compile(text, filename, "exec", dont_inherit=True), "")
        except SyntaxError as e:
            result = (None, _syntax_error_line(e))
        except (ValueError, RecursionError, MemoryError, OverflowError) as e:  # null bytes, too deep
            result = (None, f"{type(e).__name__}: {e}")
        if len(self.cache) > 512:
            self.cache.clear()
        self.cache[key] = result
        return result
