"""Our cases' reports cross from an xdist worker to the controller as one JSON string, and come back as
the reports pytest's own transport would have given."""

from __future__ import annotations

import pytest
from _pytest import reports

from pytest_apps.plugin.transport import PACKED, pack, unpack

pytestmark = pytest.mark.interfaces  # (noxfile.py runs these against the oldest releases too)


def case_report(**over) -> pytest.TestReport:
    fields = dict(nodeid="solutions/7.py::test_3", location=("solutions/7.py", 0, "APPS problem 7 test 3"),
                  keywords={"test_3": 1, "apps_interview": 1}, outcome="failed",
                  longrepr="problem 7 test 3: wrong answer\ninput:\n    1 2\n", when="call",
                  sections=[("Captured stdout call", "x\n")], duration=0.01, start=1.0, stop=1.01,
                  user_properties=[("apps", '{"problem": "7"}'), ("other", 5)])
    fields.update(over)
    return pytest.TestReport(**fields)


def by_pytest(report: pytest.TestReport) -> pytest.TestReport:
    return reports.pytest_report_from_serializable(reports.pytest_report_to_serializable(report))


@pytest.mark.parametrize("report", [
    case_report(),
    case_report(outcome="passed", longrepr=None, when="teardown", user_properties=[], sections=[]),
    case_report(outcome="skipped", when="setup", longrepr=("solutions/7.py", 0, "Skipped: problem already failed")),
], ids=["failure", "pass", "skip"])
def test_round_trip_equals_pytest_transport(report):
    data = pack(report)
    assert set(data) == {"$report_type", "json"} and data["$report_type"] == PACKED
    assert all(isinstance(v, str) for v in data.values())  # one string for execnet to carry
    got, expected = unpack(data), by_pytest(report)
    assert type(got) is pytest.TestReport
    for name in ("nodeid", "location", "keywords", "outcome", "longrepr", "when", "sections", "duration",
                 "user_properties"):
        assert getattr(got, name) == getattr(expected, name), name
        assert type(getattr(got, name)) is type(getattr(expected, name)), name
    assert got.longreprtext == expected.longreprtext


def test_other_reports_keep_pytests_path():
    other = case_report(location=("tests/test_x.py", 3, "test_x"))
    assert pack(other) is None
    assert pack(reports.CollectReport("x", "passed", None, [])) is None
    assert unpack(reports.pytest_report_to_serializable(other)) is None


def test_a_property_json_cannot_carry_falls_back_to_pytests_path():
    assert pack(case_report(user_properties=[("blob", b"\x00bytes")])) is None
