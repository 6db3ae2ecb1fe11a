"""The original APPS harness's way of running a program (hendrycks/apps `eval/testing_util.py`, b45c0ed), inside
our child: the `apps` judge profile. Standard library only (numpy is used only if the program's prefix imports it).

Server side: `full_source` builds the text the original executes: its 15-line import prefix, then the program
(call-based) or the program rewritten into `def code():` (standard input). Child side: `run_stdin` and `run_call`
load it as the original's `RuntimeModule.from_string` does and run one test its way. What the child reports is
plain data about the program's own run; the verdict is decided in the pytest process (`judge/apps.py`).

How the original runs a program, and what is reproduced here:
  * It `exec`s the prefixed source into a fresh dict `g` (so `__name__` is not defined there and resolves to the
    builtins' name, "builtins": an `if __name__ == "__main__":` block never runs), then copies the names into a
    module object as keyword arguments: a top-level name `name` or `docstring` collides with that call's own
    parameters and fails the load.
  * Any exception while loading, or looking up the method (`code`, or `fn_name` on the module or on one
    `Solution()` instance when the text "class Solution" occurs anywhere in the program), is its -2 (compile
    error). A `SystemExit` or other BaseException there escapes the harness (its whole candidate gets -1s).
  * Standard input: `code()` runs with `builtins.open` mocked to read the input, `sys.stdin` a StringIO of it, and
    `readline`/`readlines`/`read` patched on the *real* stdin object (the decorator order of the original), with
    `sys.stdout` a StringIO whose `close` is a one-argument lambda. A `SystemExit` inside `code()` ends it
    normally; any other exception is its -1. The captured text is sent back; writes to the real stdout are not.
  * Call-based: `method(*args)`, then a top-level tuple becomes a list; when its first item is a tuple, the list
    of its items as lists is sent too (the original compares that against the expected value's first item).
    Values are sent as tagged JSON (`encode`), which keeps what plain JSON would lose and the original's `==`
    sees: tuples, sets, dict key types, bytes, complex numbers, fractions, decimals and numpy values.

The reliability guard and every fence and limit of the child apply as for any other run.
"""

from __future__ import annotations

import json
import sys
import types

# The original's import prefix, verbatim (one string literal there, a newline after every line).
PREFIX = (
    "import sys\nimport time\nimport itertools\nfrom itertools import accumulate, product, permutations, combinations\n"
    "import collections\nfrom collections import Counter, OrderedDict, deque, defaultdict, ChainMap\n"
    "from functools import lru_cache\nimport math\n"
    "from math import sqrt, sin, cos, tan, ceil, fabs, floor, gcd, exp, log, log2\nimport fractions\n"
    "from typing import List, Tuple\nimport numpy as np\nimport random\nimport heapq\nfrom heapq import *\n"
)

# Names pyext's `RuntimeModule.from_string` leaves out when it copies the executed names into the module (the
# globals its own module had when it was imported).
_PYEXT_OWN = frozenset(("__name__", "__doc__", "__package__", "__loader__", "__spec__", "__file__", "__cached__",
                        "__builtins__"))
# The parameters of pyext's `from_objects(name, docstring, **d)`: a program name equal to one fails the load.
_PYEXT_PARAMS = frozenset(("name", "docstring"))


class LoadError(Exception):
    """The original's -2: the program did not load (or its method could not be found)."""


class Escaped(Exception):
    """A BaseException (SystemExit, KeyboardInterrupt, ...) left the original's `run_test`: in the original this
    ends the candidate's whole process, which then scores -1 on every test."""


def transform_stdin(source: str) -> str:
    """A standard-input program as the original rewrites it: every line that does not start with "from " or
    "import " gets a tab; the first such line is preceded by `stdin = sys.stdin`, `stdout = sys.stdout` and
    `def code():`; import lines after that point get a tab too (they become statements of `code`)."""
    lines = [line + "\n" if line.startswith(("from ", "import ")) else "\t" + line + "\n"
             for line in source.split("\n")]
    out = []
    started = False
    for line in lines:
        if line.startswith("\t") and not started:
            out.append("stdin = sys.stdin\nstdout = sys.stdout\ndef code():\n")
            out.append(line)
            started = True
        elif started and line.startswith(("from ", "import ")):
            out.append("\t" + line)
        else:
            out.append(line)
    return "".join(out)


def full_source(source: str, mode: str) -> str:
    """The text the original executes for `source` ("stdin" or "call" mode)."""
    return PREFIX + (transform_stdin(source) if mode == "stdin" else source)


# --------------------------------------------------------------------------------------------------------------
# child side


def _load(code, source: str, mode: str, fn_name: str | None):
    """Execute the prefixed program as pyext's `from_string` does and find the method the original calls."""
    g: dict = {}
    try:
        exec(code, g)
    except MemoryError:  # our memory limit, not the program's failure to load
        raise
    except Exception as exc:  # noqa: BLE001 - the original's `except Exception` around the load
        raise LoadError(_line(exc)) from exc
    except BaseException as exc:  # noqa: BLE001
        raise Escaped(_line(exc)) from exc
    names = {k: v for k, v in g.items() if k not in _PYEXT_OWN}
    clash = sorted(_PYEXT_PARAMS & names.keys())
    if clash:
        raise LoadError(f"TypeError: from_objects() got multiple values for argument {clash[0]!r} (the original "
                        f"harness cannot load a program that defines a top-level {clash[0]!r})")
    module = types.ModuleType("tmp_sol", "")
    module.__dict__.update(names)
    module.__file__ = "<runtime_module>"
    sys.modules["tmp_sol"] = module
    target = module
    method_name = "code"
    if mode == "call":
        method_name = fn_name or ""
        if "class Solution" in source:
            try:
                target = module.Solution()
            except Exception as exc:  # noqa: BLE001
                raise LoadError(_line(exc)) from exc
            except BaseException as exc:  # noqa: BLE001
                raise Escaped(_line(exc)) from exc
    try:
        return getattr(target, method_name)
    except Exception as exc:  # noqa: BLE001 - the original's bare except around getattr
        raise LoadError(_line(exc)) from exc


def run_stdin(code, source: str, text: str) -> str:
    """Run one standard-input test the original's way; the text it captured. Raises LoadError (-2), Escaped, or
    the program's exception (-1)."""
    from io import StringIO
    from unittest.mock import mock_open, patch

    method = _load(code, source, "stdin", None)
    lines = iter(text.split("\n"))

    @patch("builtins.open", _LazyOpen(mock_open, text))
    @patch("sys.stdin", StringIO(text))
    @patch("sys.stdin.readline", lambda *args: next(lines))
    @patch("sys.stdin.readlines", lambda *args: text.split("\n"))
    @patch("sys.stdin.read", lambda *args: text)
    def call(fn):
        try:
            return fn()
        except SystemExit:
            pass

    real_stdout = sys.stdout
    captured = StringIO()
    captured.close = lambda x: 1  # as the original: calling close() raises TypeError
    sys.stdout = captured
    try:
        try:
            call(method)
        except Exception:
            raise
        except BaseException as exc:  # noqa: BLE001 - not caught by the original: it ends the candidate
            raise Escaped(_line(exc)) from exc
        return captured.getvalue()
    finally:
        sys.stdout = real_stdout


class _LazyOpen:
    """The original's `mock_open(read_data=text)`, made on the program's first `open(...)`: every call goes to
    that mock, so what the program sees is the same, but a program that never opens a file does not pay for it
    (building the mock takes about 25 ms, most of a test's time otherwise)."""

    def __init__(self, factory, text: str) -> None:
        self._factory = factory
        self._text = text
        self._mock = None

    def __call__(self, *args, **kwargs):
        if self._mock is None:
            self._mock = self._factory(read_data=self._text)
        return self._mock(*args, **kwargs)


def run_call(code, source: str, fn_name: str, args: list) -> str:
    """Run one call-based test the original's way; the JSON text of {"v": value, "a": alternative} (tagged, see
    `encode`). Raises LoadError (-2), Escaped, or the program's exception (-1)."""
    method = _load(code, source, "call", fn_name)
    try:
        output = method(*args)
    except Exception:
        raise
    except BaseException as exc:  # noqa: BLE001
        raise Escaped(_line(exc)) from exc
    if isinstance(output, tuple):
        output = list(output)
    alternative = None
    try:
        if isinstance(output[0], tuple):
            alternative = [list(x) for x in output]
    except Exception:  # noqa: BLE001, S110 - the original's `except: True`
        pass
    report = {"v": encode(output)}
    if alternative is not None:
        report["a"] = encode(alternative)
    return json.dumps(report, allow_nan=True)


def warm_up() -> None:
    """In the zygote, once, when it preloads for this style: run a test of each kind, so that what every test
    would otherwise do for the first time (mock's name resolution and its compiled pattern, mock_open's file
    spec, the prefix's imports) is done before the fork."""
    from unittest.mock import mock_open

    mock_open(read_data="")
    source = "import sys\nsys.stdout.write(open(0).read() + input())\n"
    run_stdin(compile(full_source(source, "stdin"), "<warm-up>", "exec"), source, "x\ny")
    source = "def f(x):\n    return (x,)\n"
    run_call(compile(full_source(source, "call"), "<warm-up>", "exec"), source, "f", [1])
    sys.modules.pop("tmp_sol", None)


def _line(exc: BaseException) -> str:
    import traceback

    try:
        return traceback.format_exception_only(type(exc), exc)[-1].strip()
    except BaseException:  # noqa: BLE001
        return type(exc).__name__


# --------------------------------------------------------------------------------------------------------------
# tagged JSON: a return value as plain data that keeps the distinctions the original's `==` sees

_NUMPY_KINDS = "biufcUS"  # numpy dtype kinds sent as arrays and scalars; others are opaque
_PLAIN = frozenset((int, float, str, bool, type(None)))


def encode(value, depth: int = 0):
    """`value` as JSON-ready plain data. Lists, str, int, float, bool and None stay themselves; everything else is a
    one-key object: {"$t": items} tuple, {"$d": [[key, value], ...]} dict, {"$s": items} set, {"$f": items}
    frozenset, {"$b": hex} bytes, {"$c": [re, im]} complex, {"$q": [num, den]} Fraction, {"$D": text} Decimal,
    {"$a": [dtype, shape, items]} numpy array, {"$n": [dtype, item]} numpy scalar, {"$o": type name} anything
    else (equal to nothing, as an object without its own `==` is). Subclasses of these types are sent as the type
    they derive from."""
    if depth > 200:
        raise RecursionError("return value nested too deeply to send")
    kind = type(value)
    if kind in _PLAIN:
        return value
    d = depth + 1
    if kind is list:
        return [encode(x, d) for x in value]
    module = kind.__module__
    if module.startswith("numpy"):  # before the Python types: numpy's float64 derives from float, and compares
        dtype = getattr(value, "dtype", None)  # with a list element by element, as a float does not
        if dtype is not None and dtype.kind in _NUMPY_KINDS and hasattr(value, "tolist"):
            if getattr(value, "ndim", 0):
                return {"$a": [dtype.str, list(value.shape), _encode_items(value.tolist(), d)]}
            return {"$n": [dtype.str, _encode_items(value.item(), d)]}
        return {"$o": kind.__qualname__}
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, list):
        return [encode(x, d) for x in value]
    if isinstance(value, tuple):
        return {"$t": [encode(x, d) for x in value]}
    if isinstance(value, dict):
        return {"$d": [[encode(k, d), encode(v, d)] for k, v in value.items()]}
    if isinstance(value, frozenset):
        return {"$f": [encode(x, d) for x in value]}
    if isinstance(value, set):
        return {"$s": [encode(x, d) for x in value]}
    if isinstance(value, (bytes, bytearray)):
        return {"$b": bytes(value).hex()}
    if isinstance(value, complex):
        return {"$c": [value.real, value.imag]}
    if module == "fractions" and kind.__name__ == "Fraction":
        return {"$q": [value.numerator, value.denominator]}
    if module == "decimal" and kind.__name__ == "Decimal":
        return {"$D": str(value)}
    return {"$o": kind.__qualname__}


def _encode_items(items, depth: int):
    """numpy's `tolist()`/`item()`: nested lists of Python scalars (complex and bytes included)."""
    if isinstance(items, list):
        return [_encode_items(x, depth + 1) for x in items]
    return encode(items, depth)
