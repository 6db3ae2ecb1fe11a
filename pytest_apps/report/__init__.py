"""Reports: case records rolled up into per-problem verdicts and run figures (`rollup`, with `passk`), the
controller's lean store of records (`store`), gates on the figures for CI (`gates`), and the writers: the
terminal summary (`terminal`), the HTML page (`html`) and the predictions file (`predictions`).

May import `core` and `dataset`; knows nothing of execution, judging or pytest.
"""
