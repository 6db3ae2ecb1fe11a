"""`python -m pytest_apps generate ...`: run the agent as its own step, writing the generations folder
that a later `pytest --apps-agent ...` (same agent, model and generations folder) evaluates without
calling the agent again.

It takes the same `--apps-*` options as the plugin (and reads no ini file), e.g.

    python -m pytest_apps generate --apps-dataset sample --apps-agent pytest_apps.agents:openai_chat \\
        --apps-model gpt-4o-mini --apps-concurrency 8
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .core.settings import OPTIONS, OptionError, argparse_kwargs, resolve


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pytest_apps", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser("generate", help="ask the agent for the selected problems' programs")
    gen.add_argument("--rootdir", default=os.getcwd(), help="relative paths are resolved against it")
    for opt in OPTIONS:
        gen.add_argument(opt.flag, **argparse_kwargs(opt))
    return parser


def _progress(line: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r" + line)
    else:
        sys.stderr.write(line + "\n")
    sys.stderr.flush()


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .candidates.agent import generate_for
    from .candidates.sources import CandidateError
    from .dataset.loading import open_rows
    from .dataset.problems import Selection, select
    from .dataset.rows import DatasetError

    try:
        settings = resolve(lambda name: getattr(args, name, None), lambda name: None, args.rootdir)
        if not settings.agent:
            raise OptionError("generate: give --apps-agent module:callable")
        selection = Selection(settings.difficulty, settings.only, settings.offset, settings.limit)
        _, rows = open_rows(settings.dataset_ref(), settings.split, settings.revision, stop=selection.stop_hint())
        parsed = select(rows, selection, settings.max_tests)
        folder = settings.candidates_path
        stats = generate_for(settings, parsed.problems, folder, progress=_progress)
    except (OptionError, CandidateError, DatasetError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if sys.stderr.isatty() and stats.generated:
        sys.stderr.write("\n")
    print(
        f"{folder}: {stats.generated} generated ({stats.failed} failed), {stats.reused} reused, "
        f"{stats.seconds:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
