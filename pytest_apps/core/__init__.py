"""The shared vocabulary, as plain data: outcome and verdict kinds (`outcome`), the record of one case
(`record`), the resolved settings of a run and the option table they come from (`settings`), and JSON text
without the integer-length limit, and the JSON report's layout (`jsontext`), and the harness's own failure
(`errors`, its `HarnessError`); the project's ini file as pytest finds it, for a front end without pytest
(`inifile`); writing a report file without ever replacing what is not a regular file of ours (`writing`); and
a count with its noun in the singular or the plural (`wording`).

Everything here is plain data that crosses process boundaries (executor child to server to worker, xdist
worker to controller). It imports nothing from the rest of the package, and nothing from pytest.
"""
