"""`python -m pytest_apps serve`: SandboxFusion's HTTP API (`/run_code`, `/submit`) and a batched `/judge`, served
by the warm executors, so a trainer that scores code through a SandboxFusion server switches by changing one URL.

A front end beside `api.py`: it reads requests (`schema.py`, `judged.py`), runs them on executors through the engine
every front end shares (`jobs.py`), admits them through a bounded queue (`pool.py`), counts them (`metrics.py`),
and serves them over HTTP with Starlette on uvicorn (`app.py`, `cli.py`), or as replicas on a Ray cluster through
Ray Serve (`replicas.py`). Nothing below it imports it. Needs the ``serve`` extra: ``pip install 'pytest-apps[serve]'``
(``serve-ray`` for the replicas).
"""
