"""The HTML report: rendered in a real headless Chromium and checked for what a person sees.

Chromium comes from the Debian packages (`apt-get install -y chromium`); without it the browser tests skip
with that reason. The pure-Python tests (escaping, encoding, size and time at the full test split) always run.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pytest_apps.report.html import KINDS, encode_row, problem_cells, render_html, write_html

KIND_NAMES = [k for k in KINDS if k not in ("not_run", "broken", "harness_error", "no_code")]
XSS_PROGRAM = (
    "print('</pre><script>document.title=\"pwned\"</script>')\n"
    "# <img src=x onerror=\"document.title='pwned'\"> </details></div></main>\n"
)


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


CHROMIUM = _chromium()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless Chromium not installed (Debian/Ubuntu: apt-get install -y chromium)",
)


def browser(tmp_path: Path, page: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    profile = tmp_path / "chromium-profile"
    profile.mkdir(exist_ok=True)
    command = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", "--force-device-scale-factor=1", "--window-size=1280,1800",
        f"--user-data-dir={profile}", *args, page.resolve().as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def dump_dom(tmp_path: Path, page: Path) -> str:
    return browser(tmp_path, page, "--dump-dom").stdout


# ---------------------------------------------------------------------------------------------------------
# Documents


def case_tests(kinds: list[str]) -> list[dict]:
    return [{"case": i, "kind": k, "step": "exact" if k == "pass" else "", "time": 0.01, "memory": 1 << 24}
            for i, k in enumerate(kinds)]


def problem_entry(pid: str, tier: str, kinds: list[str] | None, total: int, **extra) -> dict:
    """A per-problem dict shaped like `ProblemResult.to_dict()`."""
    kinds = kinds or []
    failing = [k for k in kinds if k != "pass"]
    if extra.get("verdict"):
        verdict = extra.pop("verdict")
    elif failing:
        verdict = "fail"
    elif len(kinds) < total:
        verdict = "incomplete"
    else:
        verdict = "pass"
    entry = {
        "id": pid, "difficulty": tier, "format": "stdin", "candidate": f"/c/{pid}.py", "verdict": verdict,
        "reason": "", "tests_passed": kinds.count("pass"), "tests_run": len(kinds), "tests_total": total,
        "first_failure": "", "first_failure_detail": {}, "program": None, "tests": case_tests(kinds),
    }
    if verdict == "fail":
        first = kinds.index(failing[0])
        entry["reason"] = f"test {first}: {failing[0]}"
        entry["first_failure"] = f"/c/{pid}.py::test_{first}"
        entry["first_failure_detail"] = {
            "input": "1 2\n", "expected": "3\n", "got": "4\n", "first_diff": "line 1: expected '3', got '4'",
            "reason": "line 1: expected '3', got '4'", "stderr_tail": "",
        }
        entry["program"] = "a, b = map(int, input().split())\nprint(a + b + 1)\n"
    if verdict == "no_code":
        entry.update(candidate=None, tests=[], tests_run=0, tests_passed=0, reason="no candidate program")
    entry.update(extra)
    return entry


def figures(problems: list[dict], wall_time: float = 12.5, partial: bool = False) -> dict:
    n = len(problems)
    passed = sum(p["verdict"] == "pass" for p in problems)
    with_code = [p for p in problems if p["verdict"] not in ("no_code", "broken")]
    per_tier = {}
    for tier in ("introductory", "interview", "competition"):
        members = [p for p in problems if p["difficulty"] == tier]
        tp = sum(p["verdict"] == "pass" for p in members)
        per_tier[tier] = {"problems": len(members), "passed": tp,
                          "strict_accuracy": round(tp / len(members), 6) if members else None}
    outcomes = {k: 0 for k in ("pass", "wrong_answer", "runtime_error", "timeout", "memory_limit",
                               "output_limit", "compile_error", "no_code")}
    for p in problems:
        if p["verdict"] == "no_code":
            outcomes["no_code"] += max(p["tests_total"], 1)
        for t in p["tests"]:
            outcomes[t["kind"]] = outcomes.get(t["kind"], 0) + 1
    verdicts: dict[str, int] = {}
    for p in problems:
        verdicts[p["verdict"]] = verdicts.get(p["verdict"], 0) + 1
    incomplete = [p["id"] for p in problems if p["verdict"] == "incomplete"]
    return {
        "problems": n, "problems_with_code": len(with_code), "passed": passed,
        "strict_accuracy": round(passed / n, 6) if n else None,
        "strict_accuracy_with_code": round(passed / len(with_code), 6) if with_code else None,
        "test_case_average": round(sum(p["tests_passed"] / p["tests_total"] for p in problems
                                       if p["tests_total"]) / n, 6) if n else None,
        "test_case_average_partial": partial or bool(incomplete),
        "per_tier": per_tier, "problem_verdicts": verdicts, "outcomes": outcomes,
        "harness_errors": outcomes.get("harness_error", 0), "incomplete": len(incomplete),
        "incomplete_problems": incomplete, "tests_run": sum(p["tests_run"] for p in problems),
        "tests_total": sum(p["tests_total"] for p in problems), "skipped_rows": 0, "skipped_reasons": {},
        "wall_time": wall_time, "missing_ids": [],
    }


def document(problems: list[dict], **figure_args) -> dict:
    return {
        "version": 1,
        "settings": {"dataset": "sample", "split": "test", "revision": None, "limit": None, "offset": 0,
                     "only": [], "difficulty": [], "max_tests": 20, "candidates": "solutions", "timeout": 4.0,
                     "memory": None},
        "source": {"dataset": "sample", "split": "test", "revision": None, "resolved_revision": "abc123"},
        "summary": figures(problems, **figure_args),
        "skipped_rows": [],
        "problems": problems,
    }


def small_document() -> dict:
    problems = [
        problem_entry("1001", "introductory", ["pass"] * 4, 4),
        problem_entry("1002", "introductory", ["pass", "wrong_answer", "pass", "pass"], 4),
        problem_entry("1003", "interview", ["runtime_error"] * 3, 3),
        problem_entry("1004", "interview", ["pass", "timeout", "memory_limit"], 3),
        problem_entry("1005", "competition", ["compile_error"] * 2, 2),
        problem_entry("1006", "competition", None, 3, verdict="no_code"),
        problem_entry("1007", "competition", ["pass", "output_limit"], 5),  # 3 tests did not run
        problem_entry("1008", "interview", ["pass"] * 3, 3),
        problem_entry("1009", "interview", ["pass"] * 2, 3),  # incomplete: its last test did not run
    ]
    problems[2]["program"] = XSS_PROGRAM
    problems[2]["first_failure_detail"] = {
        "input": "<script>document.title='pwned'</script>", "expected": "&amp; 3 </textarea>",
        "got": "<img src=x onerror=\"document.title='pwned'\">", "first_diff": "", "reason": "boom",
        "stderr_tail": "Traceback ...\nValueError: </pre><b>bold</b>",
    }
    problems[2]["reason"] = "test 0: runtime_error (ValueError: <svg onload=alert(1)>)"
    return document(problems)


def synthetic_document(n: int = 5000, seed: int = 7) -> dict:
    """A full-test-split-sized run: 5,000 problems, 1 to ~200 tests each (about 100k cells)."""
    rng = random.Random(seed)
    tiers = ["introductory"] * 1000 + ["interview"] * 3000 + ["competition"] * 1000
    program = "\n".join(f"    x{i} = solve(data[{i}]) + {i}  # step {i}" for i in range(40))
    program = "import sys\n\ndef main():\n    data = sys.stdin.read().split()\n" + program + "\nmain()\n"
    problems = []
    for i in range(n):
        total = min(200, max(1, int(rng.lognormvariate(2.6, 0.8))))
        roll = rng.random()
        pid = str(i)
        if roll < 0.08:
            problems.append(problem_entry(pid, tiers[i], None, total, verdict="no_code"))
            continue
        if roll < 0.35:
            kinds = ["pass"] * total
        else:
            bad = rng.choice(["wrong_answer", "wrong_answer", "runtime_error", "timeout", "compile_error",
                              "memory_limit", "output_limit"])
            if bad == "compile_error":
                kinds = [bad] * total
            else:
                kinds = [bad if rng.random() < 0.4 else "pass" for _ in range(total)]
                kinds[rng.randrange(total)] = bad
        entry = problem_entry(pid, tiers[i], kinds, total)
        if entry["verdict"] == "fail":
            entry["program"] = program[: rng.randrange(300, len(program))]
            entry["first_failure_detail"] = {
                "input": "\n".join(str(rng.randrange(10**9)) for _ in range(8)) + "... [2412 more chars]",
                "expected": " ".join(str(rng.randrange(10**6)) for _ in range(30)),
                "got": " ".join(str(rng.randrange(10**6)) for _ in range(30)),
                "first_diff": "line 1: expected '1', got '2'", "reason": "line 1: expected '1', got '2'",
                "stderr_tail": "Traceback (most recent call last):\n  File \"x.py\", line 3\nValueError: x"
                if kinds.count("runtime_error") else "",
            }
        problems.append(entry)
    return document(problems, wall_time=5123.4)


# ---------------------------------------------------------------------------------------------------------
# Pure tests


def test_cells_cover_every_test_and_mark_tests_that_did_not_run():
    assert problem_cells(problem_entry("1", "interview", ["pass", "timeout"], 4)) == [
        "pass", "timeout", "not_run", "not_run"]
    assert problem_cells(problem_entry("2", "interview", None, 3, verdict="no_code")) == ["no_code"] * 3
    assert problem_cells({"verdict": "broken", "tests_total": 0, "tests": []}) == ["broken"]
    assert encode_row(["pass"] * 20 + ["wrong_answer"] + ["pass"] * 2) == "p20wp2"


def test_untrusted_text_is_escaped_everywhere_and_nothing_loads_from_the_network():
    page = render_html(small_document())
    for raw in ("<script>document.title", "<img src=x", "<svg onload", "</pre><b>", "</textarea>"):
        assert raw not in page
    assert "&lt;img src=x onerror=" in page and "&lt;/pre&gt;&lt;b&gt;bold" in page
    assert page.count("<script") == 2  # the JSON data and our one script
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:|//)""", page, re.I)
    assert "@import" not in page and "url(" not in page
    assert "default-src 'none'" in page and "script-src 'sha256-" in page


def test_json_in_the_page_cannot_close_its_script_element():
    doc = small_document()
    doc["problems"][0]["id"] = "</script><script>document.title='pwned'</script>"
    page = render_html(doc)
    data = page.split('<script type="application/json" id="grid-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(data)["ids"][0] == doc["problems"][0]["id"]


def test_write_html_is_atomic_and_leaves_no_temporary_file(tmp_path: Path):
    out = write_html(small_document(), tmp_path / "sub" / "report.html")
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in out.parent.iterdir()] == ["report.html"]


def test_full_test_split_renders_fast_and_stays_small():
    doc = synthetic_document()
    cells = sum(len(problem_cells(p)) for p in doc["problems"])
    assert 80_000 <= cells <= 140_000
    start = time.perf_counter()
    page = render_html(doc)
    elapsed = time.perf_counter() - start
    size = len(page.encode("utf-8"))
    assert elapsed < 5.0, f"rendering took {elapsed:.2f} s"
    assert size < 20 * 2**20, f"page is {size / 2**20:.1f} MiB"


# ---------------------------------------------------------------------------------------------------------
# In a real browser


class _Collect(HTMLParser):
    """Elements of interest from the DOM Chromium dumped after the script ran."""

    def __init__(self) -> None:
        super().__init__()
        self.attrs: dict[str, dict[str, str]] = {}
        self.figures: dict[str, list[str]] = {}
        self.tiers: dict[str, str] = {}
        self.legend: dict[str, int] = {}
        self.failures: list[str] = []
        self.tags: list[str] = []
        self._figure: str | None = None
        self._in_value = False

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        self.tags.append(tag)
        if "id" in a:
            self.attrs[a["id"]] = a
        if "data-figure" in a:
            self._figure = a["data-figure"]
            self.figures[self._figure] = []
        if a.get("class") == "cv" and self._figure:
            self._in_value = True
        if "data-tier" in a:
            self.tiers[a["data-tier"]] = a.get("data-accuracy", "")
        if a.get("class", "").startswith("li") and "data-kind" in a:
            self.legend[a["data-kind"]] = int(a["data-count"])
        if tag == "details" and "fail" in a.get("class", ""):
            self.failures.append(a["data-id"])

    def handle_data(self, data):
        if self._in_value and self._figure:
            self.figures[self._figure].append(data)

    def handle_endtag(self, tag):
        if self._in_value and tag == "div":
            self._in_value = False


def parse(dom: str) -> _Collect:
    collected = _Collect()
    collected.feed(dom)
    return collected


@needs_chromium
def test_the_browser_shows_the_headline_figures_tier_bars_and_a_grid_in_the_right_colours(tmp_path: Path):
    doc = small_document()
    page = write_html(doc, tmp_path / "report.html")
    dom = dump_dom(tmp_path, page)
    seen = parse(dom)
    assert 'data-rendered="1"' in dom, "the page's script did not run (CSP hash mismatch?)"
    f = doc["summary"]
    assert seen.figures["strict_accuracy"] == [f"{100 * f['strict_accuracy']:.2f}%"] == ["22.22%"]
    assert seen.figures["strict_accuracy_with_code"] == ["25.00%"]
    assert seen.figures["problems"] == ["9"] and seen.figures["passed"] == ["2"]
    assert seen.figures["wall_time"] == ["12.5 s"]
    assert 'class="badge">partial<' in dom  # problem 1009 is incomplete, so the average is partial
    assert seen.tiers == {"introductory": "0.5", "interview": "0.25", "competition": "0.0"}
    assert re.search(r'data-tier="introductory".*?class="fill" style="width:\s*50(\.0+)?%', dom)

    # The grid: every test cell drawn, in its kind's colour (read back from the canvas by the page).
    stats = seen.attrs["grid-stats"]
    expected = {"pass": 14, "wrong_answer": 1, "runtime_error": 3, "timeout": 1, "memory_limit": 1,
                "compile_error": 2, "no_code": 3, "output_limit": 1, "not_run": 4}
    assert int(stats["data-cells"]) == int(stats["data-decoded-cells"]) == sum(expected.values()) == 30
    assert json.loads(stats["data-drawn"]) == expected
    assert {k: n for k, n in seen.legend.items() if n} == expected
    canvas = seen.attrs["grid"]
    assert int(canvas["width"]) >= 5 * 10 and int(canvas["height"]) >= 9 * 10

    # Failing problems: listed, collapsed, and their untrusted text shown as text.
    assert seen.failures == ["1002", "1003", "1004", "1005", "1007"]
    assert "<details open" not in dom
    assert "pwned" not in dom.split("<title>", 1)[1].split("</title>", 1)[0]
    assert "img" not in seen.tags and "svg" not in seen.tags and "<b>bold</b>" not in dom
    assert "&lt;img src=x onerror=" in dom and "print('&lt;/pre&gt;&lt;script&gt;" in dom


@needs_chromium
def test_a_full_test_split_report_opens_quickly_in_the_browser(tmp_path: Path):
    doc = synthetic_document()
    page = write_html(doc, tmp_path / "big.html")
    start = time.perf_counter()
    dom = dump_dom(tmp_path, page)
    elapsed = time.perf_counter() - start
    stats = parse(dom).attrs["grid-stats"]
    cells = sum(len(problem_cells(p)) for p in doc["problems"])
    assert int(stats["data-problems"]) == 5000 and int(stats["data-decoded-cells"]) == cells
    drawn = json.loads(stats["data-drawn"])
    assert sum(drawn.values()) == cells and "unknown" not in drawn
    assert elapsed < 30, f"Chromium took {elapsed:.1f} s to load and dump the page"


@needs_chromium
def test_screenshot_of_the_report(tmp_path: Path):
    page = write_html(small_document(), tmp_path / "report.html")
    shot = tmp_path / "report.png"
    browser(tmp_path, page, f"--screenshot={shot}")
    assert shot.stat().st_size > 10_000


def test_several_samples_lay_out_one_run_of_cells_per_sample():
    entry = problem_entry("5", "interview", ["pass", "pass", "wrong_answer"], 6)
    entry["tests"] = [{**t, "sample": 0} for t in case_tests(["pass", "pass", "pass"])] + [
        {**t, "sample": 2} for t in case_tests(["pass", "wrong_answer", "pass"])]
    entry["sample_results"] = [{"sample": 0, "verdict": "pass"}, {"sample": 1, "verdict": "no_code"},
                               {"sample": 2, "verdict": "fail"}]
    entry["tests_total"] = 9
    assert problem_cells(entry) == ["pass"] * 3 + ["no_code"] * 3 + ["pass", "wrong_answer", "pass"]
