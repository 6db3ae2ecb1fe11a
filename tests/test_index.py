"""The problem-index cache: selection over it equals selection over the rows, later runs skip the rows,
concurrent first runs, a damaged cache, and the plugin's report with and without the cache."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import read_report, run
from pytest_apps.dataset import index
from pytest_apps.api import load_problems, problem_cases
from pytest_apps.dataset.problems import TIERS, Selection, select
from pytest_apps.dataset.rows import Source
from pytest_apps.dataset.loading import open_rows, sample_path

# ------------------------------------------------------------------------------------------ a generated split


def gen_row(rng: random.Random, i: int) -> dict[str, Any]:
    """A row in the codeparrot schema, now and then unusable, broken, a duplicate or without an id."""
    n = rng.randint(1, 8)
    call = rng.random() < 0.3
    inputs = [[rng.randint(0, 99), [rng.randint(0, 9)] * rng.randint(0, 3)] if call else f"{rng.randint(0, 10**6)}\n"
              for _ in range(n)]
    outputs = [[rng.randint(0, 99)] if call else f"{rng.randint(0, 99)}\n" for _ in range(n)]
    io: Any = {"inputs": inputs, "outputs": outputs, **({"fn_name": "f"} if call else {})}
    row: dict[str, Any] = {
        "problem_id": rng.choice([i, i, i, str(i), rng.randint(0, 60)]),  # some duplicates
        "question": f"question {i}",
        "solutions": json.dumps([f"print({i})"]),
        "difficulty": rng.choice([*TIERS, *TIERS, "Interview ", "COMPETITION", "", "unknown"]),
        "starter_code": "",
        "url": "",
    }
    fault = rng.random()
    if fault < 0.04:
        row["question"] = "  "
    elif fault < 0.07:
        io = ""
    elif fault < 0.10:
        io = "{not json"
    elif fault < 0.12:
        io = [1, 2]
    elif fault < 0.14:
        io = {"inputs": [], "outputs": []}
    elif fault < 0.18:
        io["outputs"] = outputs[:-1] or ["x", "y"]  # lengths differ: broken, not skipped
    elif fault < 0.20:
        return {"__error__": f"rows.jsonl line {i + 1}: not JSON", "__line__": i + 1}
    elif fault < 0.22:
        del row["problem_id"]  # the row index becomes its id
    row["input_output"] = io if isinstance(io, str) else json.dumps(io)
    return row


def gen_rows(seed: int, n: int = 90) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [gen_row(rng, i) for i in range(n)]


def source_for(name: str, revision: str = "rev1") -> Source:
    return Source(name, "test", None, revision)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, tuple[list[dict], index.ProblemIndex]]]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTEST_APPS_CACHE", str(tmp_path_factory.mktemp("cache")))
        built = {}
        for seed in (1, 2, 3):
            rows = gen_rows(seed)
            built[seed] = (rows, index.build_index(source_for(f"gen-{seed}"), iter(rows)))
        yield built


ids_pool = st.sampled_from([str(i) for i in range(0, 95, 3)] + ["9999", "-1", "x"])
selections = st.builds(
    Selection,
    difficulties=st.lists(st.sampled_from([*TIERS, "Interview", " competition "]), max_size=2),
    only=st.one_of(st.just([]), st.lists(ids_pool, max_size=6), st.lists(ids_pool, min_size=2, max_size=4).map(
        lambda xs: [",".join(xs)])),
    offset=st.integers(0, 12),
    limit=st.one_of(st.none(), st.integers(0, 30)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from([1, 2, 3]), selection=selections, max_tests=st.sampled_from([-1, 0, 1, 2, 3, 5, 20]))
def test_selection_over_the_index_equals_selection_over_the_rows(generated, seed, selection, max_tests) -> None:
    rows, idx = generated[seed]
    want = select(iter(rows), selection, max_tests)
    got = index.select_entries(idx.entries(), selection, max_tests)
    assert got.problems == want.problems
    assert got.skipped == want.skipped
    assert got.missing == want.missing
    assert got.cases == {}  # the index leaves the cases in its files
    for problem in got.problems:
        cases = idx.cases(problem)
        assert len(cases) == problem.n_cases
        if not problem.broken:
            assert cases == want.cases[problem.id]


def test_the_generated_split_has_every_kind_of_row(generated) -> None:
    parsed = [select(iter(rows), Selection(), 0) for rows, _ in generated.values()]
    reasons = " | ".join(s.reason for p in parsed for s in p.skipped)
    for kind in ("duplicate", "empty question", "empty input_output", "not JSON", "not an object", "no inputs"):
        assert kind in reasons
    problems = [problem for p in parsed for problem in p.problems]
    assert any(p.broken for p in problems) and any(p.fmt == "call" for p in problems)


# ------------------------------------------------------------------------------------------- the cached path


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("PYTEST_APPS_CACHE", str(folder))
    return folder


@pytest.fixture
def rows_file(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    lines = [json.dumps(r) for r in gen_rows(7, 40) if "__error__" not in r]
    lines.insert(5, "{not json")  # a marker row from the loader
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def read_counter(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the dataset rows that index.load takes from the loader."""
    consumed = [0]
    real = index.open_rows

    def counting(*args: Any, **kwargs: Any):
        source, rows = real(*args, **kwargs)

        def counted() -> Iterator[dict]:
            for row in rows:
                consumed[0] += 1
                yield row

        return source, counted()

    monkeypatch.setattr(index, "open_rows", counting)
    return consumed


def load(path: Path, selection: Selection | None = None, max_tests: int = 20, **kw: Any) -> index.Loaded:
    return index.load(str(path), "test", None, selection or Selection(), max_tests, **kw)


def test_a_full_scan_builds_the_index_and_the_next_run_reads_no_row(cache, rows_file, read_counter) -> None:
    built_before = index.stats["built"]
    first = load(rows_file, Selection(difficulties=["interview"]))
    assert first.index == index.BUILT and read_counter[0] == 41
    assert index.stats["built"] == built_before + 1
    second = load(rows_file, Selection(difficulties=["interview"]))
    assert second.index == index.CACHED and read_counter[0] == 41  # not one row more
    assert index.stats["built"] == built_before + 1
    assert second.parsed.problems == first.parsed.problems and second.parsed.skipped == first.parsed.skipped
    assert second.cases_dir is not None and second.cases_dir.is_relative_to(cache)
    assert second.source_dict()["index"] == "cached" and second.source_dict()["resolved_revision"]
    # any other selection and cap is served by the same index, and equals the rows' selection
    for sel, cap in ((Selection(only=["3", "17", "777"]), 2), (Selection(offset=4, limit=9), 0), (Selection(), 1)):
        got = load(rows_file, sel, cap)
        assert got.index == index.CACHED and read_counter[0] == 41
        want = select(open_rows(str(rows_file))[1], sel, cap)
        assert (got.parsed.problems, got.parsed.skipped, got.parsed.missing) == (
            want.problems, want.skipped, want.missing)


def test_a_limited_run_without_an_index_reads_only_its_rows_and_builds_nothing(cache, rows_file, read_counter) -> None:
    got = load(rows_file, Selection(limit=5))
    assert got.index == index.NONE and read_counter[0] == 5 and got.cases_dir is None
    assert len(got.parsed.cases) == len(got.parsed.problems)  # the cases came with the rows, as before
    assert not (cache / "index").exists() or not any((cache / "index").iterdir())
    load(rows_file)  # a full run builds it
    again = load(rows_file, Selection(limit=5))
    assert again.index == index.CACHED and again.parsed.problems == got.parsed.problems


def test_the_index_is_keyed_by_the_revision(cache, rows_file) -> None:
    assert load(rows_file).index == index.BUILT
    with rows_file.open("a") as fh:  # a changed file is another fingerprint: another index
        fh.write(json.dumps(gen_rows(8, 1)[0]) + "\n")
    assert load(rows_file).index == index.BUILT
    assert load(rows_file).index == index.CACHED


def test_no_cache_without_a_resolved_revision(cache, rows_file, monkeypatch) -> None:
    real = index.open_rows
    monkeypatch.setattr(index, "open_rows", lambda *a, **k: (source_for("x", None), real(*a, **k)[1]))
    got = load(rows_file)
    assert got.index == index.NONE and not cache.exists()


def test_reference_runs_read_the_rows_for_their_solutions(cache, rows_file) -> None:
    load(rows_file)
    got = load(rows_file, keep_solutions=True)
    assert got.index == index.NONE and got.parsed.solutions
    assert all(json.loads(s) for s in got.parsed.solutions.values())


def test_the_default_cache_is_outside_the_project(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("PYTEST_APPS_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert index.cache_root() == tmp_path / "xdg" / "pytest-apps"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert index.cache_root() == Path.home() / ".cache" / "pytest-apps"
    monkeypatch.setenv("PYTEST_APPS_CACHE", sys.prefix + "/cache")  # where a fenced candidate could read it
    assert index.cache_root() is None


# ------------------------------------------------------------------------------------ races and damage


def test_the_loser_of_a_build_race_keeps_the_winners_index(cache, rows_file) -> None:
    source, rows = open_rows(str(rows_file))
    winner = index.build_index(source, rows)
    source, rows = open_rows(str(rows_file))
    loser = index.build_index(source, rows)  # its rename finds the winner's folder in place
    assert loser.folder == winner.folder and loser.rows == winner.rows
    assert [p.name for p in winner.folder.parent.iterdir()] == [winner.folder.name]  # no leftovers


def test_concurrent_first_runs_all_succeed(cache, rows_file) -> None:
    code = (
        "import json, sys; from pytest_apps.dataset import index; from pytest_apps.dataset.problems import Selection;"
        "got = index.load(sys.argv[1], 'test', None, Selection(), 3);"
        "print(json.dumps([got.index, [p.to_dict() for p in got.parsed.problems],"
        " [c.__dict__ for c in map(index.read_cases, [index.cases_path(got.cases_dir, p) for p in got.parsed.problems],"
        " [p.n_cases for p in got.parsed.problems])]]))"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(rows_file)], stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0]
    results = [json.loads(o) for o in outs]
    assert {r[0] for r in results} <= {"built", "cached"}
    assert all(r[1:] == results[0][1:] for r in results)
    folders = list((cache / "index").iterdir())
    assert len(folders) == 1 and not folders[0].name.startswith(".")
    assert load(rows_file).index == index.CACHED


@pytest.mark.parametrize("damage", ["index garbage", "index truncated", "case file truncated", "case file gone",
                                    "wrong key"])
def test_a_damaged_index_is_ignored_and_rebuilt(cache, rows_file, damage) -> None:
    first = load(rows_file, max_tests=0)
    folder = first.cases_dir.parent
    case_file = index.cases_path(first.cases_dir, first.parsed.problems[0])
    if damage == "index garbage":
        (folder / index.INDEX_FILE).write_bytes(b"\x00garbage")
    elif damage == "index truncated":
        text = (folder / index.INDEX_FILE).read_bytes()
        (folder / index.INDEX_FILE).write_bytes(text[: len(text) // 2])
    elif damage == "case file truncated":
        case_file.write_bytes(case_file.read_bytes()[:-3])
    elif damage == "case file gone":
        case_file.unlink()
    else:
        data = json.loads((folder / index.INDEX_FILE).read_text())
        data["key"][-1] = "another revision"
        (folder / index.INDEX_FILE).write_text(json.dumps(data))
    assert index.open_index(first.source) is None
    limited = load(rows_file, Selection(limit=3), max_tests=0)  # a limited run just reads its rows
    assert limited.index == index.NONE
    rebuilt = load(rows_file, max_tests=0)
    assert rebuilt.index == index.BUILT and rebuilt.parsed.problems == first.parsed.problems
    assert index.read_cases(case_file, first.parsed.problems[0].n_cases)  # whole again
    assert load(rows_file, max_tests=0).index == index.CACHED
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]


def test_an_unwritable_cache_is_not_fatal(tmp_path, rows_file, monkeypatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("PYTEST_APPS_CACHE", str(blocker))
    got = load(rows_file)
    want = select(open_rows(str(rows_file))[1], Selection(), 20)
    assert got.index == index.NONE and got.parsed.problems == want.problems and got.parsed.cases == want.cases


# ------------------------------------------------------------------------------------------------ front ends


def test_the_api_reads_the_cached_index(cache, rows_file) -> None:
    first = load_problems(str(rows_file), max_tests=2)
    second = load_problems(str(rows_file), max_tests=2)
    assert first.source["index"] == "built" and second.source["index"] == "cached"
    assert second == first
    for a, b in zip(first, second, strict=True):
        assert problem_cases(a) == problem_cases(b) and len(problem_cases(b)) == b.n_cases


def sample_with_extras(folder: Path) -> Path:
    """The sample's rows plus a broken problem, an unusable row and a duplicate, as a local file."""
    lines = sample_path().read_text().splitlines()
    extra = [
        {"problem_id": 900101, "question": "Echo.", "difficulty": "interview",
         "input_output": json.dumps({"inputs": ["1\n", "2\n"], "outputs": ["1\n"]})},
        {"problem_id": 900102, "question": "Nothing.", "difficulty": "competition",
         "input_output": json.dumps({"inputs": [], "outputs": []})},
        json.loads(lines[0]),
    ]
    path = folder / "rows.jsonl"
    path.write_text("\n".join([*lines, *(json.dumps(r) for r in extra)]) + "\n")
    return path


def comparable(report: dict[str, Any]) -> dict[str, Any]:
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items()
                    if k not in ("wall_time", "time", "cpu_time", "memory", "report", "machine")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    out = strip(report)
    out["source"].pop("index")
    return out


def test_the_plugin_reports_the_same_with_and_without_the_cache(sample_project, monkeypatch, tmp_path) -> None:
    data = sample_with_extras(sample_project.path)
    (sample_project.path / "solutions" / "900001.py").write_text("print(0)\n")  # a failure in the report
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    base = ("--apps-dataset", str(data), "--apps-max-tests", "3")
    reports, headers = {}, {}
    for name, cache_dir, extra in (
        ("rows", blocker, ()),  # an unwritable cache: the rows are read as without a cache
        ("built", tmp_path / "cache", ()),
        ("cached", tmp_path / "cache", ()),
        ("cached -n 2", tmp_path / "cache", ("-n", "2")),
    ):
        monkeypatch.setenv("PYTEST_APPS_CACHE", str(cache_dir))
        result = run(sample_project, *base, *extra, "--apps-report", f"reports/{name}.json")
        assert result.ret == 1, result.stdout.str()
        reports[name] = read_report(sample_project, f"reports/{name}.json")
        headers[name] = [ln for ln in result.stdout.lines if ln.startswith("apps: dataset")]
    assert [r["source"]["index"] for r in reports.values()] == ["none", "built", "cached", "cached"]
    assert "problem index" not in headers["rows"][0]
    assert headers["built"][0].endswith("problem index built and cached")
    assert headers["cached"][0].endswith("problem index cached")
    want = comparable(reports["rows"])
    assert want["summary"]["problems"] == 7 and want["summary"]["tests_total"] == 6 * 3
    assert len(want["skipped_rows"]) == 2
    for name in ("built", "cached", "cached -n 2"):
        assert comparable(reports[name]) == want, name
    assert not list(sample_project.path.rglob("index.json"))  # nothing of the cache in the project
