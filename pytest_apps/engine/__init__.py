"""The engine: one case of one candidate, run through the executor and judged, into a plain record
(`run`, with `result`), and the short text of a failing case (`failtext`).

Shared by every front end (the pytest items, the Python API), so a program scores the same whichever way it
runs. May import `core`, `dataset`, `executor`, `judge` and `candidates`; knows nothing of reports or pytest.
"""
