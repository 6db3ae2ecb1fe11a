"""Code extraction: model text in, one program (or None for "no code") out.

The rule, applied in order:

1. Cut everything up to and including the last ``</think>`` (case-insensitive): a reasoning model's
   scratch work often holds draft code that is not its answer.
2. Scanning the fenced blocks from the last to the first, take the first one labelled ``python`` or ``py``
   (case-insensitive) whose stripped text is non-empty, does not start with ``{`` or ``[`` (a JSON
   example labelled python), and parses as Python.
3. Only if none qualifies, the same over bare ````` fences (no label).
4. No qualifying block: ``None`` ("no code").

An opening ``python``/``py`` fence after the last closed block, never closed, runs to the end of the text: a
generation cut at its token limit. It is the last block, so it is taken when it qualifies (it parses); one cut
mid-statement does not parse and is no code.

Later blocks win because models usually end with their final answer after drafts and examples.
"""

from __future__ import annotations

import ast
import re
import warnings

from ..core.outcome import GENERATION_FAILED
from ..core.wording import counted

_THINK_END = re.compile(r"</think\s*>", re.IGNORECASE)
# An opening fence at the start of a line (up to 3 spaces of indent, as CommonMark allows), its info
# string, the body, and a closing fence of at least three backticks (also accepted right after code on
# the last line, which models often write).
_BLOCK = re.compile(
    r"^[ ]{0,3}```[ \t]*([^\n`]*?)[ \t]*\n(.*?)(?:^[ ]{0,3}|(?<=\S))```",
    re.MULTILINE | re.DOTALL,
)
PYTHON_LABELS = ("python", "py")
_OPEN = re.compile(r"^[ ]{0,3}```[ \t]*(python|py)\b[^\n`]*\n(.*)\Z", re.MULTILINE | re.DOTALL | re.IGNORECASE)


def after_thinking(text: str) -> str:
    """The text after the last ``</think>`` (all of it when there is none)."""
    last = None
    for last in _THINK_END.finditer(text):
        pass
    return text if last is None else text[last.end():]


def blocks(text: str) -> list[tuple[str, str]]:
    """The fenced blocks of `text` in order, as (label, body); the label is the info string's first word."""
    out = []
    end = 0
    for m in _BLOCK.finditer(text):
        info = m.group(1).strip()
        out.append((info.split()[0] if info else "", m.group(2)))
        end = m.end()
    rest = _OPEN.search(text, end)  # a final python block left open: a truncated generation
    if rest is not None and "```" not in rest.group(2):
        out.append((rest.group(1), rest.group(2)))
    return out


def qualifies(body: str) -> bool:
    stripped = body.strip()
    if not stripped or stripped[0] in "{[":
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like are not our business
            ast.parse(stripped)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def extract_code(text: str | None) -> str | None:
    """The program in a model's answer, or None when there is none."""
    if not text:
        return None
    found = blocks(after_thinking(text))
    for wanted in (lambda label: label.lower() in PYTHON_LABELS, lambda label: label == ""):
        for label, body in reversed(found):
            if wanted(label) and qualifies(body):
                return body.strip("\n")
    return None


# The first line of the text a failed generation is written as (generation.py), followed by "generation failed:
# <why>": an answer without code, which the next run asks the agent for again.
FAILED_MARK = "<!-- pytest-apps: generation failed -->"


def failed_generation(text: str | None) -> str:
    """Why the generation this text records failed ("" when it is a model's answer)."""
    if not text or not text.startswith(FAILED_MARK):
        return ""
    rest = text[len(FAILED_MARK):].strip()
    return rest.splitlines()[0] if rest else GENERATION_FAILED


def missing_code(text: str | None) -> str:
    """What was looked for in model text from which `extract_code` took no program, in a few words."""
    failed = failed_generation(text)
    if failed:
        return failed
    if not text or not text.strip():
        return "no text (an empty answer)"
    answer = after_thinking(text)
    where = " after its last </think>" if answer is not text else ""
    found = blocks(answer)
    if not found:
        return f"no ```python fenced block{where}"
    return (f"none of its {counted(len(found), 'fenced block')}{where} holds Python that parses "
            "(looked for ```python or ```py, then bare ```)")


def looks_like_markdown(text: str) -> bool:
    """True when a "program" field really holds model text (a fence line or a think block)."""
    return bool(re.search(r"^[ ]{0,3}```", text, re.MULTILINE)) or bool(_THINK_END.search(text))
