"""`python -m pytest_apps generate ...`: run the agent as its own step, writing the generations folder
that a later `pytest --apps-agent ...` (same agent, model and generations folder) evaluates without
calling the agent again. `python -m pytest_apps diff OLD.json NEW.json`: compare two saved JSON reports
as `--apps-baseline` does, without running anything. `python -m pytest_apps serve`: SandboxFusion's HTTP API
served by the warm executors (docs/serving.md).

`generate` takes the same `--apps-*` options as the plugin and reads the same ini file a pytest run started in
`--rootdir` (default: the current folder) reads (its `apps_*` options; the command line wins), e.g.

    python -m pytest_apps generate --apps-dataset sample --apps-agent pytest_apps.agents:openai_chat \\
        --apps-model gpt-4o-mini --apps-concurrency 8
    python -m pytest_apps diff reports/main.json reports/apps-report.json --apps-fail-on-regression
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from .core.settings import OPTIONS, OptionError, Settings, argparse_kwargs, rerun_args, resolve
from .judge import profiles


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pytest_apps", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser("generate", help="ask the agent for the selected problems' programs")
    gen.add_argument("--rootdir", default=os.getcwd(), help="relative paths are resolved against it")
    for opt in OPTIONS:
        gen.add_argument(opt.flag, **argparse_kwargs(opt))
    diff = commands.add_parser("diff", help="compare two saved JSON reports, the newer against the older (its "
                               "baseline), without running anything")
    diff.add_argument("old", metavar="OLD.json", help="the baseline's JSON report")
    diff.add_argument("new", metavar="NEW.json", help="the JSON report compared with it")
    diff.add_argument("--json", action="store_true", help="print the comparison as JSON (the report's baseline section)")
    serve = commands.add_parser("serve", help="serve SandboxFusion's HTTP API (/run_code, /submit) and /judge with "
                                "the warm executors (needs the serve extra)")
    from .serve.cli import add_arguments

    add_arguments(serve)
    for opt in OPTIONS:
        if opt.name in DIFF_OPTIONS:
            diff.add_argument(opt.flag, **argparse_kwargs(opt))
    return parser


DIFF_OPTIONS = ("baseline-any", "fail-on-regression", "markdown")


def diff(args: argparse.Namespace) -> int:
    """`diff OLD.json NEW.json`: the comparison's lines (or JSON); 1 when --apps-fail-on-regression finds a
    problem that passed in OLD and does not pass in NEW, 2 for a file that cannot be used."""
    import json

    from .report.comparison import CLI_ANYWAY, BaselineError, compare, load_report
    from .report.comparison_text import baseline_lines, newly_failing_lines
    from .report.gates import regression_verdict

    try:
        old, new = load_report(args.old), load_report(args.new)
        comparison = compare(old, new, allow_mismatch=args.apps_baseline_any, baseline_report=args.old,
                             report=args.new, anyway=CLI_ANYWAY)
    except BaselineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    data = comparison.to_dict()
    run = new.get("run") or {}
    incomplete = None if run.get("complete", True) else (run.get("incomplete") or "incomplete run")
    gate = regression_verdict(args.apps_fail_on_regression, comparison, incomplete)
    if args.apps_markdown:
        from .report.markdown import markdown_text, write_markdown

        write_markdown(markdown_text({**new, "baseline": data}), args.apps_markdown)
    if args.json:
        print(json.dumps(data, indent=1))
    else:
        lines = [f"report {args.new}", *baseline_lines(data)]
        lines += [gate.message] if gate else []
        rerun = rerun_args(Settings.from_dict(new.get("settings") or {}))
        print("\n".join(lines + newly_failing_lines(data, rerun)))
    return 1 if gate is not None and not gate.passed else 0


def _progress(line: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r" + line)
    else:
        sys.stderr.write(line + "\n")
    sys.stderr.flush()


def settings_from_args(args: argparse.Namespace) -> Settings:
    """`generate`'s settings: its command line, then the ini file a pytest run started in `--rootdir` reads
    (relative paths there from its folder, the path options' defaults in it), as the plugin resolves them."""
    from .core.inifile import IniError, find_ini

    try:
        ini = find_ini(args.rootdir)
    except IniError as exc:
        raise OptionError(str(exc)) from None
    kinds = {opt.dest: opt.kind for opt in OPTIONS}
    return resolve(lambda name: getattr(args, name, None), lambda name: ini.get(name, kinds.get(name, "string")),
                   args.rootdir, ini.folder, ini.folder or "", check=profiles.checked)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "diff":
        return diff(args)
    if args.command == "serve":
        from .serve.cli import run as serve

        return serve(args)
    from .candidates.generation import GenerationInterrupted, generate_for
    from .candidates.sources import CandidateError
    from .dataset import index
    from .dataset.rows import DatasetError
    from .engine.spec import selection_of

    try:
        settings = settings_from_args(args)
        if not settings.agent:
            raise OptionError("generate: give --apps-agent=module:callable")
        # the problems as the plugin selects them, through the same problem index (only their questions are used)
        parsed = index.load(settings.dataset_ref(), settings.split, settings.revision, selection_of(settings),
                            settings.max_tests, sink=lambda problem, cases: None).parsed
        folder = settings.candidates_path
        stats = generate_for(settings, parsed.problems, folder, progress=_progress)
    except GenerationInterrupted as exc:  # what was generated is kept: say what, and end as the signal asks
        print(f"\n{exc}" if sys.stderr.isatty() else str(exc), file=sys.stderr)
        return 128 + signal.Signals[exc.signame].value
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


def run() -> int:
    """`main`, ending quietly when the reader of its output went away (`... --json | head`), as a shell tool
    that SIGPIPE ends does (status 141), not with a traceback."""
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # the interpreter flushes stdout again at exit: point it at /dev/null so that flush cannot fail too
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    return status


if __name__ == "__main__":
    sys.exit(run())
