"""The plugin installed but not turned on costs a pytest run almost nothing: the `pytest11` entry point imports
only what declaring the options needs, and everything else (numpy, the API, the engine, the judges, the
executor, the dataset readers) loads when the plugin turns on. Checked in fresh interpreters, since this test
session itself has long imported all of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Modules a dormant run must not import: each is most of the cost of importing the whole package.
HEAVY = ("numpy", "pyarrow", "huggingface_hub", "pytest_apps.api", "pytest_apps.engine", "pytest_apps.judge",
         "pytest_apps.executor", "pytest_apps.report", "pytest_apps.candidates", "pytest_apps.dataset")


def imported_by(code: str) -> list[str]:
    """The modules a fresh interpreter holds after running `code` (this checkout's package first on the path)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, env=env, timeout=120, check=True).stdout
    return json.loads(out.splitlines()[-1])


def heavy_in(names: list[str]) -> list[str]:
    return [name for name in names if any(name == h or name.startswith(h + ".") for h in HEAVY)]


def test_entry_point_imports_only_what_declaring_options_needs() -> None:
    import pytest_apps.plugin.hooks as entry  # (the pytest11 entry point pyproject.toml names)

    assert entry.__name__ in (REPO / "pyproject.toml").read_text()
    loaded = imported_by("import pytest\nimport pytest_apps.plugin.hooks")
    assert "pytest_apps.plugin.hooks" in loaded
    assert heavy_in(loaded) == []


def test_package_import_is_lazy_but_its_names_resolve() -> None:
    assert heavy_in(imported_by("import pytest_apps")) == []
    loaded = imported_by("from pytest_apps import Evaluator, load_problems, Problem, Summary\n"
                         "import pytest_apps\n"
                         "assert all(getattr(pytest_apps, name) for name in pytest_apps.__all__)\n"
                         "assert set(pytest_apps.__all__) <= set(dir(pytest_apps))")
    assert "pytest_apps.api" in loaded


def test_unknown_package_attribute_is_an_attribute_error() -> None:
    import pytest_apps

    with pytest.raises(AttributeError, match="no_such_name"):
        pytest_apps.no_such_name  # noqa: B018


def test_dormant_pytest_run_imports_nothing_heavy(pytester: pytest.Pytester) -> None:
    """A real pytest run in a project that does not use the plugin: the test itself sees what its process holds."""
    pytester.makepyfile(test_plain=f"""
        import sys
        HEAVY = {HEAVY!r}
        def test_nothing_heavy():
            assert "pytest_apps.plugin.hooks" in sys.modules  # the entry point is loaded...
            heavy = [n for n in sys.modules if any(n == h or n.startswith(h + ".") for h in HEAVY)]
            assert heavy == []  # ...and nothing else of ours
        """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=1)


def test_active_run_loads_the_rest(sample_project: pytest.Pytester) -> None:
    """Turned on, the same entry point brings in the engine and runs cases (the bundled sample's solutions)."""
    result = sample_project.runpytest_subprocess("--apps-dataset", "sample", "-p", "no:cacheprovider", "-q")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*passed*"])


def test_seed_judge_loads_numpy_only_for_its_numeric_step() -> None:
    """A pasted node id's process imports the seed judge: an exact answer must not cost it numpy's import."""
    exact = imported_by("from pytest_apps.judge.seed import compare_stdin\n"
                        "assert compare_stdin('1 2\\n', '1 2') == 'exact'")
    assert "numpy" not in exact
    numeric = imported_by("from pytest_apps.judge.seed import compare_stdin\n"
                          "assert compare_stdin('0.5\\n', '0.5000001') == 'numeric'\n"
                          "assert compare_stdin('0.5\\n', '0.6') is None")
    assert "numpy" in numeric


def test_an_active_plugin_imports_numpy_only_when_a_comparison_needs_it() -> None:
    loaded = imported_by("import pytest_apps.plugin.hooks\nimport pytest_apps.plugin.roles\n"
                         "from pytest_apps.judge import taco\n"
                         "assert taco.compare_stdin('7\\n', '7') == 'exact'")
    assert "pytest_apps.engine.run" in loaded and "numpy" not in loaded
    numeric = imported_by("from pytest_apps.judge import taco\n"
                          "assert taco.compare_stdin('12', '1\\n2\\n') == 'chars_numeric'")
    assert "numpy" in numeric


def test_turning_the_plugin_on_imports_the_report_writers_only_for_the_controller() -> None:
    """What an xdist worker imports when the plugin turns on (plugin/roles.py) holds neither the controller's
    plugin nor the report modules (its summary, writers, baseline comparison): a worker writes no report, and
    each of them started slower by their import."""
    loaded = imported_by("import pytest\nimport pytest_apps.plugin.hooks\nimport pytest_apps.plugin.roles")
    assert "pytest_apps.plugin.roles" in loaded and "pytest_apps.plugin.worker" in loaded
    unwanted = ("pytest_apps.report", "pytest_apps.plugin.writers", "pytest_apps.plugin.controller", "numpy")
    assert [name for name in loaded if any(name == u or name.startswith(u + ".") for u in unwanted)] == []
