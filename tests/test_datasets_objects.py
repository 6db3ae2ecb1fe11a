"""`load_problems(dataset=...)` with the objects `datasets` gives people: a Dataset, an IterableDataset (read
lazily), a DatasetDict; the same problems and verdicts as the same rows in a .jsonl file; bad input is a clear
error or a counted skipped row; nothing cached."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_apps import DatasetError, Evaluator, load_problems
from pytest_apps.dataset import index
from pytest_apps.dataset.loading import sample_path

datasets = pytest.importorskip("datasets", reason="datasets is optional (pip install 'pytest-apps[datasets]')")

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"

SAMPLE_ROWS = [json.loads(line) for line in sample_path().read_text().splitlines() if line.strip()]
EXTRA_ROWS = [
    # inputs and outputs differ in length: a "broken" problem that scores 0 and runs nothing
    {"problem_id": 900101, "question": "Echo the input.", "difficulty": "interview", "starter_code": "",
     "input_output": json.dumps({"inputs": ["1\n", "2\n"], "outputs": ["1\n"]})},
    # no usable tests: a skipped row, counted
    {"problem_id": 900102, "question": "Nothing to test.", "input_output": "", "difficulty": "interview",
     "starter_code": ""},
]
ROWS = SAMPLE_ROWS + EXTRA_ROWS

# Right and wrong programs, so that the verdicts compared below are not all "pass".
PROGRAMS = {
    "900001": (SOLUTIONS / "900001.py").read_text(),
    "900002": "def reverse_words(s):\n    return s\n",  # wrong answer
    "900003": "def broken(:\n    pass\n",  # compile error
    "900004": None,  # no code
    "900005": "import sys\nn = sys.stdin.read().split()\nprint(1 // (len(n) % 2))\n",  # fails on some inputs
    "900006": (SOLUTIONS / "900006.py").read_text(),
    "900101": "print(input())\n",
}


def decoded(row: dict) -> dict:
    """The row as some copies hold it: input_output and solutions already parsed."""
    out = dict(row)
    for key in ("input_output", "solutions"):
        if isinstance(out.get(key), str):
            out[key] = json.loads(out[key]) if out[key].strip() else None
    return out


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def verdicts(problems) -> list[tuple]:
    with Evaluator(workers=1, timeout=2.0) as ev:
        results = ev.score_many([(p, PROGRAMS.get(p.id)) for p in problems])
        figures = ev.summary(results, problems).figures
    per_test = [
        (r.id, r.verdict, r.reason, r.tests_passed, r.tests_total, r.first_failure_detail,
         [(t["case"], t["kind"], t["step"]) for t in r.tests])
        for r in results
    ]
    return [per_test, {k: v for k, v in figures.items() if k != "wall_time"}]


def same_load(a, b) -> None:
    assert list(a) == list(b)  # Problem is a frozen dataclass: every field, test sizes included
    assert a.skipped == b.skipped and a.missing == b.missing


# ------------------------------------------------------------------------------------------ same results


def test_a_dataset_gives_the_problems_and_verdicts_of_the_same_rows_in_a_jsonl_file(tmp_path):
    from_file = load_problems(dataset=write_jsonl(tmp_path / "rows.jsonl", ROWS))
    from_dataset = load_problems(dataset=datasets.Dataset.from_list(ROWS))
    same_load(from_dataset, from_file)
    assert len(from_file) == 7 and [s.problem_id for s in from_file.skipped] == ["900102"]
    assert verdicts(from_dataset) == verdicts(from_file)


def test_decoded_input_output_and_solutions_give_the_same_problems_and_verdicts(tmp_path):
    """Copies that hold input_output as an object and solutions as a list (an IterableDataset from a
    generator: mixed types per column are fine there)."""
    rows = [decoded(r) for r in ROWS]
    assert isinstance(rows[0]["input_output"], dict) and isinstance(rows[0]["solutions"], list)
    stream = datasets.IterableDataset.from_generator(lambda: iter(rows))
    from_stream = load_problems(dataset=stream)
    from_file = load_problems(dataset=write_jsonl(tmp_path / "rows.jsonl", ROWS))
    same_load(from_stream, from_file)
    assert verdicts(from_stream) == verdicts(from_file)


def test_real_rows_with_decoded_fields_in_a_typed_dataset(shared_data, tmp_path):
    """The real APPS rows, input_output stored as a struct column and solutions as a list column."""
    rows = [json.loads(line) for line in (shared_data / "apps_test_rows.jsonl").read_text().splitlines()]
    typed = datasets.Dataset.from_list([decoded(r) for r in rows])
    assert typed.features["input_output"]["inputs"].feature.dtype == "string"  # really a struct, not text
    same_load(load_problems(dataset=typed, max_tests=0), load_problems(dataset=shared_data / "apps_test_rows.jsonl",
                                                                       max_tests=0))


def test_a_dataset_dict_gives_the_asked_split():
    both = datasets.DatasetDict(
        {"train": datasets.Dataset.from_list(SAMPLE_ROWS[:2]), "test": datasets.Dataset.from_list(SAMPLE_ROWS[2:])}
    )
    assert [p.id for p in load_problems(dataset=both)] == ["900003", "900004", "900005", "900006"]
    assert [p.id for p in load_problems(dataset=both, split="train")] == ["900001", "900002"]
    streamed = datasets.IterableDatasetDict({"test": both["test"].to_iterable_dataset()})
    assert [p.id for p in load_problems(dataset=streamed, limit=1)] == ["900003"]
    with pytest.raises(DatasetError) as info:
        load_problems(dataset=both, split="validation")
    assert str(info.value) == "the DatasetDict has no split 'validation' (it has train, test); pass split= one of them"


def test_the_format_the_caller_set_does_not_matter():
    plain = load_problems(dataset=datasets.Dataset.from_list(SAMPLE_ROWS))
    for kind in ("numpy", "pandas", "arrow"):
        same_load(load_problems(dataset=datasets.Dataset.from_list(SAMPLE_ROWS).with_format(kind)), plain)


def test_columns_of_its_own_are_not_read():
    rows = [{**r, "prompt_ids": [1, 2, 3]} for r in SAMPLE_ROWS]
    same_load(load_problems(dataset=datasets.Dataset.from_list(rows)), load_problems(dataset="sample"))


# --------------------------------------------------------------------------------------------------- lazy


def counting(rows: list[dict]):
    """An IterableDataset over rows, and the list of rows its generator has produced so far."""
    produced: list[int] = []

    def gen():
        for row in rows:
            produced.append(row["problem_id"])
            yield row

    return datasets.IterableDataset.from_generator(gen), produced


def test_an_iterable_dataset_is_read_only_as_far_as_the_selection_needs():
    rows = [{**SAMPLE_ROWS[i % 6], "problem_id": i} for i in range(1000)]
    stream, produced = counting(rows)
    assert [p.id for p in load_problems(dataset=stream, limit=3)] == ["0", "1", "2"]
    assert produced == [0, 1, 2]

    stream, produced = counting(rows)
    assert [p.id for p in load_problems(dataset=stream, offset=5, limit=2)] == ["5", "6"]
    assert produced == list(range(7))

    stream, produced = counting(rows)  # with a tier filter, reading stops once the selection is complete
    assert [p.id for p in load_problems(dataset=stream, difficulty="competition", limit=2)] == ["4", "5"]
    assert produced == list(range(7))


# ------------------------------------------------------------------------------------------ bad input


def test_rows_that_are_not_apps_shaped_are_skipped_and_counted():
    good = SAMPLE_ROWS[0]
    rows = [
        good,
        {**good, "problem_id": None},
        {**good, "problem_id": 2, "input_output": "{not json"},
        {**good, "problem_id": 3, "question": ""},
        {**good, "problem_id": 4, "input_output": json.dumps([1, 2])},
    ]
    stream = datasets.IterableDataset.from_generator(lambda: iter(rows))
    loaded = load_problems(dataset=stream)
    assert [p.id for p in loaded] == ["900001"]
    reasons = {s.problem_id: s.reason for s in loaded.skipped}
    assert set(reasons) == {"1", "2", "3", "4"}
    assert "problem_id is None, not an integer" in reasons["1"] and "datasets.IterableDataset" in reasons["1"]
    assert reasons["2"].startswith("input_output is not JSON")
    assert reasons["3"] == "empty question"
    assert reasons["4"] == "input_output is not an object (a list)"


@pytest.mark.parametrize("thing", [[{"problem_id": 1}], {"problem_id": 1}, 42], ids=["list", "dict", "int"])
def test_another_type_is_a_value_error(thing):
    with pytest.raises(ValueError, match=r"is not a dataset; pass a hub id, 'sample', .* datasets Dataset"):
        load_problems(dataset=thing)


def test_a_dataset_without_problem_ids_is_a_one_line_error():
    with pytest.raises(DatasetError) as info:
        load_problems(dataset=datasets.Dataset.from_list([{"text": "hello"}]))
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("datasets.Dataset(1 row) has no problem_id column (columns: text)")


def test_a_failing_iterable_dataset_is_a_one_line_error():
    def gen():
        yield SAMPLE_ROWS[0]
        raise ConnectionError("the stream\nwent away")

    with pytest.raises(DatasetError) as info:
        load_problems(dataset=datasets.IterableDataset.from_generator(gen))
    assert str(info.value) == (
        "datasets.IterableDataset(generator/default, train): reading row 1 failed (ConnectionError: the stream went away)"
    )


# ------------------------------------------------------------------------------------ identity, no cache


def test_the_source_describes_the_object_and_nothing_is_cached(tmp_path, monkeypatch):
    # a cache folder of this test's own: the session's is shared with other xdist workers, which write to it
    cache = tmp_path / "cache"
    monkeypatch.setenv("PYTEST_APPS_CACHE", str(cache))
    built = index.stats["built"]
    loaded = load_problems(dataset=datasets.Dataset.from_list(SAMPLE_ROWS, split="test"))
    assert loaded.source == {"dataset": "datasets.Dataset(test, 6 rows)", "split": "test", "revision": None,
                             "resolved_revision": None, "index": "none"}
    assert loaded.settings["dataset"] == "datasets.Dataset(test, 6 rows)"  # JSON-serialisable, for the report
    assert index.stats["built"] == built and not (cache.exists() and any(cache.rglob("*")))
    parquet = tmp_path / "rows.parquet"
    datasets.Dataset.from_list(SAMPLE_ROWS).to_parquet(str(parquet))
    from_builder = datasets.load_dataset("parquet", data_files={"test": str(parquet)}, split="test")
    assert load_problems(dataset=from_builder).source["dataset"] == "datasets.Dataset(parquet/default, test, 6 rows)"


def test_a_path_object_is_a_path(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", SAMPLE_ROWS)
    same_load(load_problems(dataset=path), load_problems(dataset=str(path)))
