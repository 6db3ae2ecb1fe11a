"""The README's pointers into docs/ and the documentation's navigation (the strict MkDocs build in .ci/run
checks the links between the docs pages themselves)."""

from __future__ import annotations

import re

from conftest import REPO


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
