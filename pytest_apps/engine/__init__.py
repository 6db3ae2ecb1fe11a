"""The engine: what a run is, decided once from its settings (`spec`: the judging, the limits, the preload, the
judge key of a record, the problems selected), one case of one candidate run through the executor and judged,
into a plain record (`run`, with `result`), one program's cases in order (`problem`), the short text of a failing
case (`failtext`), the limits a problem runs under (`limits`, TACO's own per-row limits), TACO's special-judge
list applied to a run's problems (`special`), a timeout or near-limit verdict run again on a quiet machine before
it is final (`confirm`), the record store keyed by what decides a case (`records`), and executors living in Ray
actors (`cluster`, one shared actor per node), or in one pool of this machine shared by every process that scores
(`machine`, with `waiting`, the deadline loop both share).

Shared by every front end (the pytest items, the Python API), so a program scores the same whichever way it
runs. May import `core`, `dataset`, `executor`, `judge` and `candidates`; knows nothing of reports or pytest.
"""
