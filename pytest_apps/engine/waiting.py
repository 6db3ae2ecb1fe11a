"""Waiting for a batch's work up to its deadline."""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any


def wait_until(futures: Iterable[Future[Any]], deadline: float | None) -> set[Future[Any]]:
    """Wait for `futures` until they are all done or `deadline` (time.monotonic()) comes; those not done then."""
    left = set(futures)
    while left:
        timeout = None if deadline is None else deadline - time.monotonic()
        if timeout is not None and timeout <= 0:
            break
        _, left = wait(left, timeout=timeout, return_when=FIRST_COMPLETED)
    return left
