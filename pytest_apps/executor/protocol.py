"""Framing between the client, the server and the children; the run statuses they exchange.

Standard library only: the server and its children import this (as a private package, see `serve.py`) without the
rest of the package.

A frame is [4-byte big-endian length of a JSON header][JSON header][blob 0][blob 1]..., where the header's
"blobs" lists the byte lengths of the blobs that follow. The server hands a test to a waiting child with a
"go" frame whose header is marshalled instead (plain values, decoded in C: fewer pages touched after a fork).
"""

from __future__ import annotations

import json
import marshal
import os
import struct

# How a program runs (a request's "style"): as a real program, or as the original APPS harness runs it (appsstyle.py)
STYLE_REAL = "real"
STYLE_APPS_HARNESS = "apps-harness"

RUN_EXITED = "exited"
RUN_SIGNALED = "signaled"
RUN_TIMEOUT = "timeout"
RUN_MEMORY = "memory"
RUN_OUTPUT_LIMIT = "output_limit"
RUN_COMPILE_ERROR = "compile_error"
RUN_HARNESS_ERROR = "harness_error"

STDERR_TAIL = 2048  # bytes of the child's stderr kept for the report
HARNESS_EXIT = 125  # child exit code when the harness itself failed before the program ran
READY_LINE = b'{"kind": "ready"}\n'  # the child's report right before the candidate's code runs


def read_exact(fd: int, n: int) -> bytes:
    chunks = []
    while n:
        try:
            b = os.read(fd, min(n, 1 << 20))
        except InterruptedError:
            continue
        if not b:
            raise EOFError("pipe closed")
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def send_frame(fd: int, header: dict, blobs: list[bytes] = ()) -> None:
    """A frame in one gathered write where the pipe takes it: one wake-up of the reader, not one per part
    (a frame of a header and three blobs cost about 2 ms a test in four writes)."""
    header = dict(header, blobs=[len(b) for b in blobs])
    h = json.dumps(header).encode()
    write_all(fd, struct.pack(">I", len(h)) + h, *blobs)


def write_all(fd: int, *parts: bytes) -> None:
    """Write every part, in order, in as few gathered writes as the pipe takes."""
    views = [memoryview(p) for p in parts if len(p)]
    while views:
        try:
            n = os.writev(fd, views)
        except InterruptedError:
            continue
        while n:
            if n >= len(views[0]):
                n -= len(views.pop(0))
            else:
                views[0] = views[0][n:]
                n = 0


def recv_frame(fd: int) -> tuple[dict, list[bytes]]:
    (n,) = struct.unpack(">I", read_exact(fd, 4))
    header = json.loads(read_exact(fd, n))
    blobs = [read_exact(fd, k) for k in header.get("blobs", [])]
    return header, blobs


def send_go(fd: int, header: dict, blobs: list[bytes]) -> None:
    """Server -> waiting child: like `send_frame`, with a marshalled header of plain values."""
    h = marshal.dumps((header, [len(b) for b in blobs]))
    write_all(fd, struct.pack(">I", len(h)) + h, *blobs)


def recv_go(fd: int) -> tuple[dict, list[bytes]]:
    """In the child: read what `send_go` sent (data from the server, never from a candidate)."""
    (n,) = struct.unpack(">I", read_exact(fd, 4))
    header, sizes = marshal.loads(read_exact(fd, n))
    return header, [read_exact(fd, k) for k in sizes]
