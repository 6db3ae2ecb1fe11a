"""The server's figures in Prometheus' text format (version 0.0.4), what monitoring systems scrape: requests by
endpoint and HTTP status, the queue's length and the requests running, each endpoint's latency (p50 and p99 over
its last `WINDOW` requests, plus the count and sum), test verdicts by kind (judged requests) and how `/run_code`
runs ended (exited, timeout, memory, ...), and the executor's faults.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable

WINDOW = 4096  # latencies kept per endpoint for the quantiles
PREFIX = "pytest_apps_serve"


def quantile(values: list[float], q: float) -> float:
    """The `q` quantile of sorted `values` (nearest rank); 0.0 for none."""
    if not values:
        return 0.0
    return values[min(len(values) - 1, max(0, int(round(q * len(values) + 0.5)) - 1))]


def _labels(**labels: str) -> str:
    inner = ",".join(f'{k}="{str(v).replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
                     for k, v in labels.items())
    return "{" + inner + "}"


class Metrics:
    """Counters and latency windows, safe to update from the event loop and worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[tuple[str, int]] = Counter()
        self.verdicts: Counter[str] = Counter()
        self.endings: Counter[str] = Counter()
        self._latency: dict[str, deque[float]] = {}
        self._count: Counter[str] = Counter()
        self._sum: Counter[str] = Counter()

    def request(self, endpoint: str, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[(endpoint, status)] += 1
            self._latency.setdefault(endpoint, deque(maxlen=WINDOW)).append(seconds)
            self._count[endpoint] += 1
            self._sum[endpoint] += seconds

    def tests(self, kinds: Iterable[str]) -> None:
        with self._lock:
            self.verdicts.update(kinds)

    def ending(self, status: str) -> None:
        with self._lock:
            self.endings[status] += 1

    def latency(self, endpoint: str, q: float) -> float:
        with self._lock:
            values = sorted(self._latency.get(endpoint, ()))
        return quantile(values, q)

    def text(self, queue: int, running: int, workers: int, faults: int, aside: int = 0, held: int = 0,
             stepped: int = 0, parked: int = 0, parks: int = 0, starts: tuple[int, int] = (0, 0),
             beyond: tuple[int, int] = (0, 0)) -> str:
        """The exposition text; `aside`: the runs beside the workers now, `held`: the runs holding a worker while
        they wait for a place there, `beyond`: the runs that gave their worker back while they wait for one (now,
        and in all), `stepped`: the runs that ever stepped aside, `parked`: the runs parked now to
        give their place to newer ones, `parks`: the times one was, `starts`: the executors started while a request
        waited for one, and ahead of the requests (serve/pool.py)."""
        out: list[str] = []

        def family(name: str, kind: str, what: str, samples: Callable[[], Iterable[tuple[str, float]]]) -> None:
            out.append(f"# HELP {PREFIX}_{name} {what}")
            out.append(f"# TYPE {PREFIX}_{name} {kind}")
            out.extend(f"{PREFIX}_{name}{labels} {value:g}" for labels, value in samples())

        with self._lock:
            requests = sorted(self.requests.items())
            windows = {k: sorted(v) for k, v in sorted(self._latency.items())}
            counts, sums = dict(self._count), dict(self._sum)
            verdicts, endings = sorted(self.verdicts.items()), sorted(self.endings.items())
        family("requests_total", "counter", "HTTP requests answered, by endpoint and status",
               lambda: [(_labels(endpoint=e, code=str(c)), n) for (e, c), n in requests])
        family("queue_length", "gauge", "requests waiting for a worker", lambda: [("", queue)])
        family("running", "gauge", "requests running on an executor", lambda: [("", running)])
        family("workers", "gauge", "requests that can run at once", lambda: [("", workers)])
        family("aside", "gauge", "long runs that gave their worker to the queue and run beside the workers",
               lambda: [("", aside)])
        family("held", "gauge", "long runs holding a worker while every place beside the workers is taken",
               lambda: [("", held)])
        family("beyond", "gauge", "long runs that gave their worker back and run beyond the places while they wait "
               "for one, every worker being held", lambda: [("", beyond[0])])
        family("went_beyond_total", "counter", "runs that went beyond the places", lambda: [("", beyond[1])])
        family("stepped_aside_total", "counter", "runs that stepped aside", lambda: [("", stepped)])
        family("parked", "gauge", "long runs parked (frozen, their own time stopped) to give their place beside the "
               "workers to newer ones", lambda: [("", parked)])
        family("parked_total", "counter", "times a run aside was parked", lambda: [("", parks)])
        family("executor_starts_total", "counter", "executors started while a request waited for one, or in standby "
               "ahead of it", lambda: [(_labels(when="request"), starts[0]), (_labels(when="standby"), starts[1])])

        def latency() -> list[tuple[str, float]]:
            rows = []
            for endpoint, values in windows.items():
                rows += [(_labels(endpoint=endpoint, quantile=str(q)), quantile(values, q)) for q in (0.5, 0.99)]
                rows += [(f"_sum{_labels(endpoint=endpoint)}", sums[endpoint]),
                         (f"_count{_labels(endpoint=endpoint)}", counts[endpoint])]
            return rows

        out.append(f"# HELP {PREFIX}_request_seconds request latency, quantiles over the last {WINDOW} requests")
        out.append(f"# TYPE {PREFIX}_request_seconds summary")
        out.extend(f"{PREFIX}_request_seconds{labels} {value:g}" for labels, value in latency())
        family("test_verdicts_total", "counter", "judged tests, by verdict kind",
               lambda: [(_labels(verdict=k), n) for k, n in verdicts])
        family("run_code_endings_total", "counter", "/run_code runs, by how they ended",
               lambda: [(_labels(ending=k), n) for k, n in endings])
        family("executor_faults_total", "counter", "runs the executor failed (each made once more on a renewed one)",
               lambda: [("", faults)])
        return "\n".join(out) + "\n"
