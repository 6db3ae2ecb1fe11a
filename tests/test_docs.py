"""The README's pointers into docs/ and the documentation's navigation (the strict MkDocs build in .ci/run
checks the links between the docs pages themselves)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys

from conftest import REPO, SOLUTIONS, run


def test_every_link_of_the_readme_names_a_file_that_exists() -> None:
    readme = (REPO / "README.md").read_text()
    links = [link.split("#")[0] for link in re.findall(r"\]\(([^)\s]+)\)", readme) if "://" not in link]
    assert "docs/options.md" in links
    missing = [link for link in links if not (REPO / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_every_docs_page_is_in_the_navigation_and_every_entry_is_a_page() -> None:
    config = (REPO / "mkdocs.yml").read_text()
    nav = re.findall(r"^\s*- [^:\n]+: (\S+\.md)\s*$", config, flags=re.MULTILINE)
    pages = sorted(p.name for p in (REPO / "docs").glob("*.md"))
    assert sorted(nav) == pages


def quickstart_lines() -> list[str]:
    """The README's two quickstart lines, without the comment after `#`."""
    readme = (REPO / "README.md").read_text()
    block = readme.split("## Quickstart", 1)[1].split("```console", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]


def quickstart() -> list[str]:
    """The README's two quickstart commands, without the install step before `&&`."""
    return [line.split("&&", 1)[1].strip() for line in quickstart_lines()]


def test_the_quickstarts_benchmark_command_runs_offline_as_written(pytester, monkeypatch) -> None:
    """The first command, in a project holding the checkout's solutions/: the plugin installed alone (none of
    the test extras: here they cannot be imported), the sample, offline, every problem passing, the summary
    printed and the JSON report where the README says."""
    import os
    import tomllib

    install = quickstart_lines()[0].split("&&", 1)[0].strip()
    assert install == "python -m pip install -e .", "the first command installs the plugin alone"
    bench, _ = quickstart()
    assert bench == "pytest --apps-dataset=sample"
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    blocked = pytester.mkdir("not-installed")
    for name in {re.match(r"[A-Za-z0-9_.-]+", x).group().lower().replace("-", "_") for x in extras} | {"pandas"}:
        (blocked / f"{name}.py").write_text(f"raise ImportError('{name}: a test extra, not installed')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(blocked), os.environ.get("PYTHONPATH")])))
    hidden = subprocess.run([sys.executable, "-c", "import scipy"], capture_output=True, text=True)
    assert "a test extra, not installed" in hidden.stderr  # (what the run below cannot import)
    shutil.copytree(SOLUTIONS, pytester.path / "solutions")
    result = run(pytester, *shlex.split(bench)[1:])
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*APPS summary*", "strict accuracy: 100.00% *"])
    assert (pytester.path / "reports" / "apps-report.json").is_file()


def test_the_quickstarts_test_command_is_what_ci_runs() -> None:
    assert "'.[test]'" in quickstart_lines()[1].split("&&", 1)[0]  # the test extras belong to the project's tests
    _, tests = quickstart()
    assert tests == "nox -s tests-oldest tests-newest"
    ci = re.search(r"^python -m nox --sessions (.+)$", (REPO / ".ci" / "run").read_text(), flags=re.MULTILINE)
    assert ci is not None and ci.group(1).split()[-2:] == ["tests-oldest", "tests-newest"]
