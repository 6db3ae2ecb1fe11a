"""Judging: pure functions from plain data (the expected output and what the executor saw) to a verdict
(`cascade`: the standard-input and call-based comparison cascades).

May import `core` only; it never runs candidate code and knows nothing of reports or pytest.
"""
