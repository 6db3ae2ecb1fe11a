"""Rows to problems: raw rows from local files (`rows`), the hub (`hub`, a remote Parquet file read a row group at a
time by `ranges`) and `datasets` objects a caller holds (`objects`), opened by `loading`; each row recognised and
parsed by its dataset's entry in the table (`table`: `apps`, `taco`, `livecodebench`, `codecontests`) into the
plain values of `model` (a problem's own limits: `limits`), skipped with a reason, capped and selected
(`problems`); the parsed split cached on disk (`index`).

May import `core`; knows nothing of candidates, execution, judging, reports or pytest.
"""
