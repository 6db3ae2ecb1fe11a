"""Judging: pure functions from plain data (the expected output and what the executor saw) to a verdict.

`profiles`: the table of judge profiles (which semantics decide a run, how its programs run, its preload and
memory floor) and the reference audit's digest; one cascade per profile: `seed` (the seed runner's strict
standard-input and call-based cascades), `apps` (the original APPS harness's verdicts), `taco` (TACO's
verdicts: its prelude, its ``code()`` wrapping and its comparison), `livecodebench` (LiveCodeBench's line and
Decimal comparison and strict returned values), `codecontests` (CodeContests' tester's token comparison);
`toolkit`: what every cascade shares (the
checker type and its verdict, the verdict of a run that did not end by itself, failure texts); `checkers`:
per-problem checkers for problems with several right answers (trusted code, run here on plain data); `special`:
TACO's special-judge list and the built-in checkers for its case-insensitive and floating-point problems.

May import `core` only; it never runs candidate code and knows nothing of reports or pytest.
"""
