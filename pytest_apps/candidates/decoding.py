"""Bytes of a candidate's file to text, as Python reads a source file.

A program file is decoded as `python prog.py` decodes it: UTF-8 (a BOM allowed), or the encoding its PEP 263
coding line declares (`tokenize.detect_encoding`). What python refuses to read is not turned into U+FFFD
and run: the candidate is refused with the line `python prog.py` prints, and scores a compile error.
Generations files (JSON text) are UTF-8, a BOM allowed; a bad byte there is an error naming the file's line.
"""

from __future__ import annotations

import codecs
import io
import tokenize
from pathlib import Path

PEP_263 = "https://peps.python.org/pep-0263/"


class SourceRefused(Exception):
    """Python would not read this source; the message is what `python prog.py` says (one line)."""


def source_text(data: bytes, filename: str) -> str:
    """The text of a program file as Python decodes it; raises SourceRefused with python's own message."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        declared = _declared(data)
        if declared:  # an unknown coding, a BOM with another coding declared: in python's words
            bom = " with BOM" if data.startswith(codecs.BOM_UTF8) else ""
            raise SourceRefused(f"SyntaxError: encoding problem: {declared}{bom} (in file {filename})") from None
        encoding = "utf-8-sig"  # a first line that is not UTF-8, without a coding line: found below
    try:
        return data.decode(encoding)  # "utf-8-sig" drops the BOM
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        if encoding in ("utf-8", "utf-8-sig"):
            declared = "" if _declared(data) else ", but no encoding declared"
            raise SourceRefused(
                f"SyntaxError: Non-UTF-8 code starting with '\\x{data[exc.start]:02x}' in file "
                f"{filename} on line {line}{declared}; see {PEP_263} for details"
            ) from None
        raise SourceRefused(f"SyntaxError: {exc.reason}: byte {data[exc.start]:#04x} on line {line} of {filename}, "
                            f"which declares the encoding {encoding}") from None


def _declared(data: bytes) -> str:
    """The encoding a PEP 263 coding line of the first two lines names ("" without one)."""
    for line in data.splitlines()[:2]:
        found = tokenize.cookie_re.match(line.decode("latin-1"))
        if found:
            return found.group(1)
    return ""


def utf8_text(data: bytes, filename: str) -> str:
    """The text of a UTF-8 file (a BOM allowed); raises SourceRefused naming the line and column of a byte
    that is not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start
        line = data.count(b"\n", 0, start) + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise SourceRefused(f"{filename}:{line}: byte {data[start]:#04x} at column {column} is not UTF-8; "
                            "save the file as UTF-8") from None


def read_source(path: Path) -> tuple[str, str]:
    """A program file's text and, when python would refuse it, why (else ""): the text is then the bytes
    decoded with U+FFFD for what is not UTF-8, kept for the report only (it never runs)."""
    data = path.read_bytes()
    try:
        return source_text(data, str(path)), ""
    except SourceRefused as exc:
        return data.decode("utf-8", errors="replace"), str(exc)
