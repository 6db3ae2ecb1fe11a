"""The options on pytest's command line and in its ini file: declared from the one table in `core.settings`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.settings import OPTIONS, argparse_kwargs


def add_options(parser: Any) -> None:
    group = parser.getgroup("apps", "APPS benchmark (pytest-apps)")
    group.addoption("--apps", action="store_true", dest="apps", default=None,
                    help="Collect and run the APPS benchmark (implied by any selection option).")
    parser.addini("apps", "Enable the APPS benchmark collection.", type="bool", default=False)
    for opt in OPTIONS:
        group.addoption(opt.flag, **argparse_kwargs(opt))
        ini_type = {"list": "linelist", "bool": "bool"}.get(opt.kind, "string")
        parser.addini(opt.dest, opt.help, type=ini_type)


def is_active(getoption: Callable[[str], Any], getini: Callable[[str], Any]) -> bool:
    if getoption("apps"):
        return True
    if any(getoption(opt.dest) is not None for opt in OPTIONS if opt.selects):
        return True
    return bool(getini("apps"))
