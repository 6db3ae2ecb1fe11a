"""Reports: case records rolled up into per-problem verdicts and run figures (`rollup`, with `passk`), their
confidence intervals (`confidence`, from the statistics in `stats`), the comparison with a baseline report
(`comparison`, as terminal lines in `comparison_text`), the case records as the controller receives them,
kept lean (`received`), gates on the figures for CI (`gates`), the reference audit (`audit`), what a TACO run
adds to the summary (`taco`: limits and the special-judge list), and the writers: the terminal summary
(`terminal`), the HTML page (`html`), the Markdown summary (`markdown`) and the predictions file (`predictions`).

May import `core` and `dataset`; knows nothing of execution, judging or pytest.
"""
