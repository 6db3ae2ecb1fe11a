"""How a case's reports travel from an xdist worker to the controller: pytest's own serialised form of
the report, packed into one JSON string.

execnet serialises nested data in Python, field by field (about 100 strings for the three reports of one
case), the largest CPU cost per case on both sides; one string crosses in one step, and `json` packs and
unpacks it in C. Only our cases' reports are packed; every
other report keeps pytest's default path.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _pytest import reports as _pytest_reports

PACKED = "AppsPackedTestReport"
LOCATION_PREFIX = "APPS problem "  # how our cases' locations read (CaseItem.reportinfo)


def is_case_report(report: Any) -> bool:
    location = getattr(report, "location", None)
    return (isinstance(report, pytest.TestReport) and isinstance(location, tuple) and len(location) == 3
            and isinstance(location[2], str) and location[2].startswith(LOCATION_PREFIX))


def pack(report: pytest.TestReport) -> dict[str, Any] | None:
    """The wire form of one of our cases' reports; None for any other report (pytest's path)."""
    if not is_case_report(report):
        return None
    data = _pytest_reports.pytest_report_to_serializable(report)
    try:
        return {"$report_type": PACKED, "json": json.dumps(data)}
    except (TypeError, ValueError):  # something only execnet can carry (a plugin's property): as before
        return None


def unpack(data: dict[str, Any]) -> pytest.TestReport | None:
    if data.get("$report_type") != PACKED:
        return None
    fields = json.loads(data["json"])
    # JSON has no tuples: give back the ones pytest's own transport keeps
    fields["location"] = tuple(fields["location"])
    fields["user_properties"] = [tuple(p) for p in fields.get("user_properties") or ()]
    fields["sections"] = [tuple(s) for s in fields.get("sections") or ()]
    if isinstance(fields.get("longrepr"), list):  # a skip: (path, line, reason)
        fields["longrepr"] = tuple(fields["longrepr"])
    return _pytest_reports.pytest_report_from_serializable(fields)
