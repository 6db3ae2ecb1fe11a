"""The controller's dealings with pytest-xdist's execnet gateways: which workers cannot see its files, which
machine each worker is on, how a command line reaches remote workers without xdist's rsync, and what a
gateway that went down left unfinished.

What this relies on in pytest-xdist (3.x; `tests/test_remote.py` checks each, so an upgrade that changes
one fails there, loudly):

- `pytest_xdist_setupnodes(config, specs)` runs before any gateway is made; the `dsession` plugin's
  `nodemanager` then exists, and its `roots` (a list of paths) and `rsync_roots(gateway)` are what each new
  gateway is given. `WorkerController.setup` rewrites the controller's command line with
  `workermanage.make_reltoroot(nodemanager.roots, args)` for every gateway that is not a popen without
  `chdir` (ssh ones always have a `chdir`): every token that is an existing path must lie under a root, or
  the run stops with "not relative to an rsync root".
- A scheduler of the `loadscope` family keeps `assigned_work[node] = {scope: {nodeid: done}}`, and
  `pytest_testnodedown` is called before a crashed node's work is taken back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any


def is_remote(spec: Any) -> bool:
    """Whether a worker of this gateway may not see the controller's files at the controller's paths: anything
    but a plain popen (ssh, socket, a popen with a chdir or through another gateway)."""
    return not spec.popen or bool(spec.chdir) or bool(spec.via)


def machine_of(spec: Any) -> str:
    """The machine a gateway's worker runs on, as the spec names it ("" for this one)."""
    if spec.popen and not spec.via:
        return ""
    target = spec.ssh or spec.socket or spec.vagrant_ssh or ("popen" if spec.popen else str(spec))
    return f"{target} via {spec.via}" if spec.via else str(target)


def machine_place(spec: Any, specs: Sequence[Any]) -> tuple[int, int]:
    """(this worker's position among the workers on its machine, how many there are). A replacement for a
    crashed worker reuses its spec, and so its slot."""
    machine = machine_of(spec)
    same = [s for s in specs if machine_of(s) == machine]
    for i, s in enumerate(same):
        if s is spec:
            return i, len(same)
    return len(same), len(same) + 1


def identity_roots(tokens: Iterable[str]) -> list[Path]:
    """Roots under which `make_reltoroot` gives every token back as it is (it rewrites a token under root R as
    `R.name + "/" + the rest`): "/" for absolute paths, a relative path's first part for relative ones. Only
    a bare name X comes back as "X/." (and "." as "/."): pytest-apps's own options are read from the plan on a
    remote worker, and its paths are never looked up there."""
    roots: list[Path] = []
    dot = False
    for token in tokens:
        path = Path(str(token).split("::")[0])
        try:
            if not path.exists():
                continue
        except OSError:
            continue
        if path.is_absolute():
            root = Path(path.anchor)
        elif not path.parts:
            dot = True  # "." goes last: as a root it would take every relative token
            continue
        else:
            root = Path(path.parts[0])
        if root not in roots:
            roots.append(root)
    return roots + ([Path(".")] if dot else [])


def pass_command_line(config: Any, tokens: Sequence[str]) -> None:
    """Let remote workers start with the controller's command line as given, without `--rsyncdir`: roots that
    keep each token as it is, and no copying unless the user asked for it (`--rsyncdir`, ini `rsyncdirs`),
    in which case xdist copies what it always copies. (xdist's rsync is deprecated; remote workers of an APPS
    run need nothing copied: the plan and the test data come through execnet.)"""
    dsession = config.pluginmanager.getplugin("dsession")
    manager = getattr(dsession, "nodemanager", None)
    if manager is None or not isinstance(getattr(manager, "roots", None), list) or not hasattr(manager, "rsync"):
        raise RuntimeError(
            "pytest-apps cannot reach this pytest-xdist's rsync roots (dsession.nodemanager.roots); remote "
            "gateways need the command line's paths under --rsyncdir roots with this version"
        )
    asked = bool(config.getoption("rsyncdir", None) or config.getini("rsyncdirs"))
    copied = list(manager.roots) if asked else []
    manager.roots = copied + [r for r in identity_roots(tokens) if r not in copied]

    def rsync_roots(gateway: Any) -> None:
        for root in copied:
            manager.rsync(gateway, root, **manager.rsyncoptions)

    manager.rsync_roots = rsync_roots  # this instance's; xdist calls it for each new gateway


def unfinished(sched: Any, node: Any) -> list[str] | None:
    """Node ids a worker had been given that had not finished (the one it was running included); None when
    the scheduler does not say."""
    work = getattr(sched, "assigned_work", None)
    if not isinstance(work, dict) or node not in work:
        return None
    return [nodeid for unit in work[node].values() for nodeid, done in unit.items() if not done]


def never_ran(sched: Any, finished: int, planned: int) -> int:
    """How many selected tests did not finish, given how many did: the cases a lost worker took with it, and
    those of a run xdist stopped because of it. Selected: what the workers collected (after deselection),
    or, when xdist stopped before it had every worker's collection, any worker's it has, else ``planned``."""
    collection = getattr(sched, "collection", None)
    if not collection:
        collections = list((getattr(sched, "registered_collections", None) or {}).values())
        collection = max(collections, key=len) if collections else None
    total = len(collection) if collection else planned
    return max(0, total - finished)


def down_record(node: Any, error: object, pending: list[str] | None) -> dict[str, Any]:
    """What the report says of a worker that went down."""
    return {
        "worker": node.gateway.id,
        "machine": machine_of(node.gateway.spec) or "localhost",
        "error": str(error).strip().splitlines()[0] if str(error).strip() else "",
        "unfinished": None if pending is None else len(pending),
        "crashed": "",
    }

