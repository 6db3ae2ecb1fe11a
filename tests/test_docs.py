"""The README's pointers into docs/ and the documentation's navigation (the strict MkDocs build in .ci/run
checks the links between the docs pages themselves)."""

from __future__ import annotations

import re
import shlex
import shutil

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


def quickstart() -> list[str]:
    """The README's two quickstart commands, without the install step before `&&` and the comment after `#`."""
    readme = (REPO / "README.md").read_text()
    block = readme.split("## Quickstart", 1)[1].split("```console", 1)[1].split("```", 1)[0]
    return [line.split("&&", 1)[1].split("#", 1)[0].strip() for line in block.strip().splitlines()]


def test_the_quickstarts_benchmark_command_runs_offline_as_written(pytester) -> None:
    """The first command, in a project holding the checkout's solutions/: the sample, offline, every problem
    passing, the summary printed and the JSON report where the README says."""
    bench, _ = quickstart()
    assert bench == "pytest --apps-dataset=sample"
    shutil.copytree(SOLUTIONS, pytester.path / "solutions")
    result = run(pytester, *shlex.split(bench)[1:])
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*APPS summary*", "strict accuracy: 100.00% *"])
    assert (pytester.path / "reports" / "apps-report.json").is_file()


def test_the_quickstarts_test_command_is_what_ci_runs() -> None:
    _, tests = quickstart()
    assert tests == "nox -s tests-oldest tests-newest"
    ci = re.search(r"^python -m nox --sessions (.+)$", (REPO / ".ci" / "run").read_text(), flags=re.MULTILINE)
    assert ci is not None and ci.group(1).split()[-2:] == ["tests-oldest", "tests-newest"]
