"""APPS rows to problems: raw rows from local files (`rows`), the hub (`hub`) and `datasets` objects a caller
holds (`objects`), opened by `loading`; rows parsed, skipped with a reason, capped and selected (`problems`);
the parsed split cached on disk (`index`).

May import `core`; knows nothing of candidates, execution, judging, reports or pytest.
"""
