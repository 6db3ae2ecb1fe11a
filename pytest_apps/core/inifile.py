"""The project's ini file as pytest finds it, for a front end that runs without pytest (`python -m pytest_apps
generate`), so that it reads the same `apps_*` options a pytest run in the same folder reads.

pytest looks in the folder it starts from, then in each folder above, and in each for `pytest.ini`,
`.pytest.ini` (either wins even when empty), `pyproject.toml` with a `[tool.pytest.ini_options]` table,
`tox.ini` with a `[pytest]` section, `setup.cfg` with a `[tool:pytest]` section, in that order; the first
found is the ini file and its folder the rootdir. No pytest here: the standard library reads the files.
"""

from __future__ import annotations

import configparser
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class IniError(Exception):
    """An ini file that cannot be read; the message is one line naming it."""


@dataclass(frozen=True)
class IniFile:
    path: Path | None  # None: no ini file
    values: Mapping[str, Any] = field(default_factory=dict)

    @property
    def folder(self) -> Path | None:
        return None if self.path is None else self.path.parent

    def get(self, name: str, kind: str = "string") -> Any:
        """An option's value as pytest's `getini` gives it: a `list` option as its lines, else the text (or
        the TOML value); None when the file does not set it."""
        value = self.values.get(name)
        if value is None or kind != "list" or isinstance(value, list):
            return value
        return [line.strip() for line in str(value).splitlines() if line.strip()]


def find_ini(start: str | Path) -> IniFile:
    """The ini file pytest would read for a run started in `start` (with no test paths), and its values."""
    folder = Path(start).resolve()
    for where in (folder, *folder.parents):
        for name, section in (("pytest.ini", "pytest"), (".pytest.ini", "pytest"), ("pyproject.toml", None),
                              ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
            file = where / name
            if not file.is_file():
                continue
            values = _toml_values(file) if section is None else _ini_values(file, section, name.endswith("pytest.ini"))
            if values is not None:
                return IniFile(file, values)
    return IniFile(None)


def _toml_values(file: Path) -> dict[str, Any] | None:
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise IniError(f"{file}: cannot be read ({exc}); fix it, as pytest would refuse it too") from None
    table = data.get("tool", {}).get("pytest", {}).get("ini_options")
    return dict(table) if isinstance(table, dict) else None


def _ini_values(file: Path, section: str, always: bool) -> dict[str, Any] | None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(file.read_text(encoding="utf-8"), str(file))
    except (OSError, UnicodeDecodeError, configparser.Error) as exc:
        raise IniError(f"{file}: cannot be read ({str(exc).splitlines()[0]}); fix it, as pytest would refuse it "
                       "too") from None
    if parser.has_section(section):
        return dict(parser.items(section))
    return {} if always else None
