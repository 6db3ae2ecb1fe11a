"""What pytest decides before it knows this plugin's options, put right: the rootdir and the ini file.

pytest determines them (`determine_setup`) from the command line's free arguments before it loads the
plugins of installed packages, so in `pytest --apps-dataset /data/rows.jsonl` it cannot yet know that
`/data/rows.jsonl` is an option's value: an existing path there counts as a test path, and the rootdir
moves to `/data`, the project's ini file (and its `apps_*` settings, `addopts`, `pythonpath`) is not read,
`.pytest_cache` is written beside the data and node ids are spelled from there. `--apps-dataset=/data/rows.jsonl`
is read right from the start.

`pytest_load_initial_conftests` is the first hook that sees the command line once our options are known, and
it runs before any conftest is loaded and before the command line is parsed into `config.option`. There
the setup is determined again, pytest's own way, from the free arguments alone; when it differs, the
corrected rootdir and ini file (with the ini's `addopts` and `pythonpath`) replace the ones taken from our
values. Those live in private attributes of pytest's `Config`: where a pytest keeps them otherwise, nothing
is changed and one warning names the option and the spelling that avoids the problem.
"""

from __future__ import annotations

import copy
import inspect
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..core.settings import OPTIONS

VALUE_FLAGS = frozenset(opt.flag for opt in OPTIONS if opt.kind != "bool")


def spaced_values(args: Sequence[str], flags: Iterable[str] = VALUE_FLAGS) -> list[tuple[str, str]]:
    """Our options written `--opt VALUE` (the value an argument of its own), as (flag, value), in order."""
    flags = set(flags)
    out = []
    i = 0
    while i < len(args) - 1:
        if args[i] == "--":
            break
        if args[i] in flags:
            out.append((args[i], args[i + 1]))
            i += 2
        else:
            i += 1
    return out


def misplaced_line(spaced: Sequence[tuple[str, str]], rootpath: Path, inipath: Path | None) -> str:
    """The one line for a run whose rootdir or ini file pytest took from our options' values."""
    flag, value = spaced[0]
    more = "; likewise " + ", ".join(f"{f}={v}" for f, v in spaced[1:]) if len(spaced) > 1 else ""
    return (f"apps: pytest took the value of {flag} {value} for a test path, so its rootdir is {rootpath} and its "
            f"ini file {inipath or 'none'}; write {flag}={value} (an '=' between option and value){more}")


def correct_setup(config: Any, parser: Any, args: list[str]) -> str | None:
    """Determine the rootdir and ini file again now that our options are known, and apply them when they
    differ from pytest's (`args`, the command line pytest goes on to parse, is updated in place with the
    ini's `addopts`). Returns the line to warn with when they differ and cannot be applied, else None."""
    started = Path(config.invocation_params.dir)
    spaced = [(f, v) for f, v in spaced_values(args) if os.path.exists(started / v.split("::")[0])]
    if not spaced:
        return None
    line = misplaced_line(spaced, config.rootpath, config.inipath)
    try:
        addopts = [str(a) for a in config.getini("addopts")]
        given = args[len(addopts):] if args[: len(addopts)] == addopts else list(args)
        setup = determined(config, parser, given)
    except Exception:  # noqa: BLE001 (another pytest's internals: warn instead)
        return line
    if (setup[0], setup[1]) == (config.rootpath, config.inipath):
        return None
    try:
        apply_setup(config, parser, args, given, setup)
    except (AttributeError, KeyError, TypeError):
        return line
    return None if (config.rootpath, config.inipath) == (setup[0], setup[1]) else line


def determined(config: Any, parser: Any, given: list[str]) -> tuple[Any, ...]:
    """pytest's own `determine_setup` on the free arguments as parsed with our options known."""
    from _pytest.config.findpaths import determine_setup

    ns = parser.parse_known_args(given)
    kwargs = {"inifile": ns.inifilename, "override_ini": getattr(ns, "override_ini", None),
              "args": ns.file_or_dir, "rootdir_cmd_arg": ns.rootdir or None,
              "invocation_dir": Path(config.invocation_params.dir)}
    accepted = inspect.signature(determine_setup).parameters
    return tuple(determine_setup(**{k: v for k, v in kwargs.items() if k in accepted}))


def apply_setup(config: Any, parser: Any, args: list[str], given: list[str], setup: tuple[Any, ...]) -> None:
    """Put the determined setup in place of pytest's, as its `Config.parse` would have from the start."""
    state = vars(config)
    inicfg = "_inicfg" if "_inicfg" in state else "inicfg"
    for name in ("_rootpath", "_inipath", "_inicache", inicfg):
        if name not in state:
            raise AttributeError(name)
    old_paths = [str(p) for p in config.getini("pythonpath")]
    state["_rootpath"], state["_inipath"], state[inicfg] = setup[0], setup[1], setup[2]
    if len(setup) > 3 and "_ignored_config_files" in state:
        state["_ignored_config_files"] = setup[3]
    config._inicache.clear()
    parser.extra_info["rootdir"] = str(config.rootpath)
    parser.extra_info["inifile"] = str(config.inipath)
    addopts = [str(a) for a in config.getini("addopts")]
    args[:] = addopts + given
    if addopts:
        config.pluginmanager.consider_preparse(addopts, exclude_only=False)
    ns = parser.parse_known_args(args, namespace=copy.copy(config.option))
    if ns.confcutdir is None:
        ns.confcutdir = str(config.inipath.parent if config.inipath is not None else config.rootpath)
    config.known_args_namespace = ns
    if hasattr(type(config), "_configure_python_path"):
        # this pytest put the ini's `pythonpath` on sys.path already (older ones do it in this very hook,
        # after this plugin), and takes the ini's entries off at the end
        for path in old_paths:
            if path in sys.path:
                sys.path.remove(path)
        for path in reversed(config.getini("pythonpath")):
            sys.path.insert(0, str(path))
