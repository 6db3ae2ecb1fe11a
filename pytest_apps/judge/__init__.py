"""Judging: pure functions from plain data (the expected output and what the executor saw) to a verdict.

`seed`: the seed profile's standard-input and call-based comparison cascades; `apps`: the original APPS
harness's verdicts (the apps profile); `profiles`: which of the two decides a run, and the reference audit's
digest; `checkers`: per-problem checkers for problems with several right answers (trusted code, run here on
plain data).

May import `core` only; it never runs candidate code and knows nothing of reports or pytest.
"""
