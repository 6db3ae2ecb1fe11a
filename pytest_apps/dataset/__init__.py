"""APPS rows to problems: raw rows from local files (`rows`), the hub (`hub`, a remote Parquet file read a row
group at a time by `ranges`) and `datasets` objects a caller holds (`objects`), opened by `loading`; rows parsed,
skipped with a reason, capped and selected (`problems`); the parsed split cached on disk (`index`). What a TACO
row adds to the APPS schema (its tiers, tags, limits and test-split index) is `taco`.

May import `core`; knows nothing of candidates, execution, judging, reports or pytest.
"""
