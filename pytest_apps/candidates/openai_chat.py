"""Ready agents. `openai_chat`: any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, llama.cpp,
Ollama, LiteLLM, ...).

    pytest --apps-agent pytest_apps.agents:openai_chat --apps-model gpt-4o-mini -n 8

Model, base URL and key come from `--apps-model`, `--apps-base-url`, `--apps-api-key`, else from
`OPENAI_MODEL`, `OPENAI_BASE_URL` (or `OPENAI_API_BASE`) and `OPENAI_API_KEY`. It is written with the
standard library only (urllib): the `agents` extra needs no package, one POST per sample is all the
protocol it uses, and there is no client library whose version could change the requests under a
benchmark run.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from typing import Any

from .generation import AgentProblem

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRY_STATUS = (408, 409, 429, 500, 502, 503, 504)
DOWN_STATUS = (500, 502, 503, 504)  # with a refused or dropped connection: the endpoint is down (429 is not)
DOWN_FOR = 60.0  # seconds an endpoint that failed a request through every retry gets one attempt per request

_down: dict[str, float] = {}  # endpoint URL -> when a request to it last failed through every retry


class ChatError(Exception):
    """The endpoint refused or failed; the message names the URL and the status."""


def chat_settings(options: dict[str, Any]) -> dict[str, Any]:
    model = options.get("model") or os.environ.get("OPENAI_MODEL")
    if not model:
        raise ChatError("no model: give --apps-model=NAME or set OPENAI_MODEL")
    base = (
        options.get("base_url") or os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")
        or DEFAULT_BASE_URL
    )
    return {
        "model": model,
        "url": base.rstrip("/") + "/chat/completions",
        "key": options.get("api_key") or os.environ.get("OPENAI_API_KEY") or "",
        "temperature": options.get("temperature"),
        "samples": int(options.get("samples") or 1),
        "timeout": float(options.get("timeout") or 600.0),
    }


def is_down(url: str) -> bool:
    """Whether a request to `url` failed through every retry (refused, dropped, a server error) within the last
    DOWN_FOR seconds, with no success since."""
    since = _down.get(url)
    return since is not None and time.monotonic() - since < DOWN_FOR


def post_json(url: str, body: dict[str, Any], key: str, timeout: float, retries: int = 3) -> dict[str, Any]:
    """POST `body` as JSON; retry (with backoff) on rate limits, server errors and dropped connections. An
    endpoint that is down (`is_down`) gets one attempt, no backoff: it costs the first problem its retries,
    not every problem (the generation step stops after a few identical failures)."""
    data = json.dumps(body).encode("utf-8")
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    delay = 1.0
    retries = 0 if is_down(url) else retries
    for attempt in range(retries + 1):
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                answer = response.read()
            _down.pop(url, None)
            return json.loads(answer.decode("utf-8"))
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace").replace("\n", " ").strip() or exc.reason
            if exc.code not in RETRY_STATUS or attempt == retries:
                if exc.code in DOWN_STATUS:
                    _down[url] = time.monotonic()
                raise ChatError(f"{url}: HTTP {exc.code}: {detail}") from None
            retry_after = exc.headers.get("Retry-After") if exc.headers else None
            wait = float(retry_after) if retry_after and retry_after.isdigit() else delay
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            if attempt == retries:
                _down[url] = time.monotonic()
                raise ChatError(f"{url}: {getattr(exc, 'reason', exc)}") from None
            wait = delay
        except ValueError as exc:
            raise ChatError(f"{url}: the answer is not JSON ({exc})") from None
        time.sleep(min(wait, 30.0))
        delay *= 2
    raise AssertionError("unreachable")


def message_text(answer: dict[str, Any], url: str) -> str:
    try:
        content = answer["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ChatError(f"{url}: no choices[0].message.content in the answer") from None
    if isinstance(content, list):  # content parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def check_options(options: dict[str, Any]) -> None:
    """Raises ChatError for options no request can be made with (no model): called once, before any problem
    is asked (the plugin calls an agent's `check_options` attribute when it has one)."""
    chat_settings(options)


def openai_chat(problem: AgentProblem) -> str | list[str]:
    """One user message holding the APPS prompt; one request per sample. Returns the model's text."""
    s = chat_settings(problem.options)
    body: dict[str, Any] = {"model": s["model"], "messages": [{"role": "user", "content": problem.prompt}]}
    if s["temperature"] is not None:
        body["temperature"] = s["temperature"]
    texts = [
        message_text(post_json(s["url"], body, s["key"], s["timeout"]), s["url"]) for _ in range(s["samples"])
    ]
    return texts[0] if len(texts) == 1 else texts


openai_chat.check_options = check_options  # type: ignore[attr-defined]
