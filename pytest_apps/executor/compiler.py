"""Compilation of candidate programs, once per program (cached by a hash of its name and source).

Runs in the server; children get the code object marshalled. Standard library only.
"""

from __future__ import annotations

import hashlib
import marshal

RETURN_OUTSIDE = "'return' outside function"


def _syntax_error_line(e: BaseException) -> str:
    import traceback

    try:
        return traceback.format_exception_only(type(e), e)[-1].strip()
    except Exception:  # pragma: no cover
        return f"{type(e).__name__}: {e}"


def _wrap_in_function(source: str, filename: str):
    """APPS's harness runs standard-input programs inside a function, so some reference solutions
    use a top-level `return`. Wrap the module body in a function that declares every name it binds
    `global`, so that the rest keeps module semantics, and call it."""
    import ast
    import symtable

    tree = ast.parse(source, filename)
    args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                         defaults=[])
    func = ast.FunctionDef(name="__apps_main__", args=args, body=tree.body, decorator_list=[], returns=None,
                           type_comment=None)
    probe = ast.Module(body=[func], type_ignores=[])
    ast.fix_missing_locations(probe)
    table = symtable.symtable(ast.unparse(probe), filename, "exec").get_children()[0]
    names = sorted(s.get_name() for s in table.get_symbols()
                   if s.is_local() and not s.is_annotated() and not s.is_parameter())
    if names:
        func.body = [ast.Global(names=names, lineno=1, col_offset=0)] + func.body
    call = ast.Expr(ast.Call(func=ast.Name(id="__apps_main__", ctx=ast.Load()), args=[], keywords=[]))
    mod = ast.Module(body=[func, call], type_ignores=[])
    ast.fix_missing_locations(mod)
    return compile(mod, filename, "exec", dont_inherit=True)


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

    def get(self, source: str, filename: str) -> tuple:
        """-> (code or None, error line, wrapped)"""
        key = hashlib.sha256(filename.encode() + b"\0" + source.encode("utf-8", "surrogatepass")).hexdigest()
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        self.compiles += 1
        try:
            result = (compile(source, filename, "exec", dont_inherit=True), "", False)
        except SyntaxError as e:
            result = (None, _syntax_error_line(e), False)
            if e.msg == RETURN_OUTSIDE:
                try:
                    result = (_wrap_in_function(source, filename), "", True)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    pass
        except (ValueError, RecursionError, MemoryError, OverflowError) as e:  # null bytes, too deep
            result = (None, f"{type(e).__name__}: {e}", False)
        if len(self.cache) > 512:
            self.cache.clear()
        self.cache[key] = result
        return result
