"""The pytest front end: everything that knows pytest. The hooks (`hooks`, the `pytest11` entry point) stay
thin and hand plain data to plain functions: option declarations (`options`), the run plan (`plan`), what one
pytest process holds (`state`), collection and items (`collect`), xdist scheduling and transport
(`scheduling`, `transport`), workers on other machines (`remote`, their node ids `nodeids`, xdist's
gateways `gateways`), CPU pinning (`cpus`), terminal statistics (`termstats`), the agent's progress
line (`progress`) and the report writers' glue (`writers`).

May import every lower layer; nothing outside this package imports pytest.
"""
