"""The real APPS rows and model-written programs beside the project (../shared/apps-data, or the folder
APPS_SHARED_DATA names), as the benchmarks read them."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def shared() -> Path:
    """The data folder; the benchmark ends with one line saying where it looked when the rows are not there."""
    folder = Path(os.environ.get("APPS_SHARED_DATA", REPO.parent / "shared" / "apps-data"))
    if not (folder / "apps_test_rows.jsonl").is_file():
        sys.exit(f"no shared APPS data at {folder}; set APPS_SHARED_DATA to the apps-data folder")
    return folder


def write_model_candidates(data: Path, path: Path) -> int:
    """A generations file at `path` of every model program in candidates.jsonl whose problem has a row in
    apps_test_rows.jsonl (every test); returns how many programs it holds."""
    ids = {json.loads(line)["problem_id"] for line in (data / "apps_test_rows.jsonl").open()}
    programs = 0
    with path.open("w") as out:
        for line in (data / "candidates.jsonl").open():
            rec = json.loads(line)
            if rec["problem_id"] in ids:
                programs += 1
                out.write(json.dumps({"problem_id": rec["problem_id"], "code": rec["code"]}) + "\n")
    return programs
