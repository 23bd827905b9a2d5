"""``publish``: a static, shareable tree of reports, redacted files and the index.

The run directories keep their raw files (nothing is lost); what leaves the machine is only what
publish chose and made: per run the report, ``run.json``, ``checks.json``,
``params.resolved.yaml``, ``command.*``, ``metrics.jsonl`` (verl's file logger writes strings
too) and the log, each suite night's ``suite.json`` and each baseline proposal's review page and
record (so the published index can say "candidate ready"; never the candidate file itself),
every one through redaction in one function, :func:`_copy_redacted`.

Nothing is read through a link: the runs tree is walked with directory descriptors
(:func:`os.fwalk`), files are opened with ``O_NOFOLLOW``, so a ``run.log`` pointing at
``/etc/passwd``, a run directory linked in from elsewhere, or a link swapped in after the walk is
skipped and reported, never copied. The destination may neither be inside the runs root nor
contain it. Every file goes to a unique temp file in its folder and is renamed into place, the
index last, so concurrent publishes to one destination each leave a complete site. Links in the
index are relative, so the tree works from any web server path, an artifact store, a local
folder opened offline, or GitHub Pages (a ``.nojekyll`` marker keeps Pages from rewriting it).

The site is the nightly's memory, the way asv's and github-action-benchmark's history lives in
the pages they publish: publishing adds to what the destination holds and never replaces it.
The runs root's ledger is merged into the site's (:func:`workbook.history.ledger.merge`), each
run's files are copied in beside the runs already there, a suite night's ``suite.json`` keeps the
entries other cron slots published (merged by key), and the retention
(:mod:`workbook.report.retention`) keeps full pages for the newest nights only, all under one
lock on the site (:data:`SITE_LOCK`). So publishes of any runs roots, in any order and again,
leave the same site. The runs a runs root was seeded with from a site
(:mod:`workbook.report.seed`) are not published again: the site has them.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbook.core import redaction
from workbook.core.atomic import flock_within
from workbook.core.layout import (
    INDEX,
    PROPOSAL_FILE,
    PROPOSAL_PAGE,
    PRUNED_FILE,
    RUN_FILES,
    RUN_MARKERS,
    SEEDED_FILE,
    SITE_LOCK,
    SUITE_FILE,
    TREND_CACHE,
    read_json_object,
    write_atomic,
    write_json,
)
from workbook.errors import InputError
from workbook.history.ledger import merge, read_all
from workbook.report.index import write_index
from workbook.report.retention import KEEP_NIGHTS, prune
from workbook.report.summary import scan

# What a run contributes to the site (each redacted); nothing else of a run directory leaves it
# (but the retention's note, PRUNED_FILE, of a run a site already pruned).
PUBLISHED_FILES = ("report", "run", "checks", "params", "command_json", "command_sh", "metrics",
                   "log")
# what a folder that is not a run contributes (a suite night, a baseline proposal)
FOLDER_FILES = (SUITE_FILE, PROPOSAL_PAGE, PROPOSAL_FILE)
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK  # no link, no blocking on a FIFO
LOCK_WAIT_S = 600.0  # a publish waits this long for another into the same site
# A run's files to copy, given its folder's descriptor; None leaves the run out.
Chooser = Callable[[Path, int], Sequence[str] | None]


@dataclass
class Publication:
    """What a publish did: the index, the files it wrote, and what it refused and why."""

    index: Path
    copied: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "<path>: <why>", one line each


class _Skip(Exception):
    """A file publish will not copy (a link, not a regular file, changed while copied)."""


def publish(runs_root: Path, dest: Path, *, keep_nights: int = KEEP_NIGHTS) -> Path:
    """Add every run's report, redacted files and ledger to ``dest``; return the index."""
    return publish_site(runs_root, dest, keep_nights=keep_nights).index


def publish_site(runs_root: Path, dest: Path, *, keep_nights: int = KEEP_NIGHTS) -> Publication:
    """Publish ``runs_root`` into ``dest``, adding to what it holds (see the module docstring);
    what was skipped is listed, never copied."""
    runs_root = Path(runs_root)
    root, site = places(runs_root, Path(dest))
    if not scan(root).runs:
        raise InputError(f"{runs_root}: no run directories found")
    done = Publication(Path(dest) / INDEX)  # named as the caller named the destination
    site.mkdir(parents=True, exist_ok=True)
    names = (*(RUN_FILES[key] for key in PUBLISHED_FILES), PRUNED_FILE)
    seeded = seeded_runs(root)

    def chosen(rel: Path, dir_fd: int) -> Sequence[str] | None:
        if rel.as_posix() in seeded:
            return None  # taken from a site, which has it
        if _exists(PRUNED_FILE, dir_fd) and os.path.lexists(site / rel / RUN_FILES["run"]):
            return None  # a pruned copy never overwrites the pages the destination kept
        return names

    with site_lock(site):
        merge(read_all(runs_root, store=False), site)  # first: a site without one builds its own
        copy_tree(runs_root, site, chosen, done)
        prune(site, keep_nights)
        shutil.rmtree(site / TREND_CACHE, ignore_errors=True)  # charts the new index no longer shows
        write_atomic(site / ".nojekyll", "")  # GitHub Pages: serve the tree as it is
        write_index(site, published=True)  # last: it lists what the site now holds
    return done


def copy_tree(runs_root: Path, dest: Path, choose: Chooser, done: Publication) -> int:
    """Copy the runs of ``runs_root`` (the files ``choose`` names for each) and the records of
    its other folders into ``dest`` under the same relative paths, each through redaction and
    never through a link; a suite night's record is merged with the one ``dest`` holds. The
    number of runs copied."""
    runs_root = Path(runs_root)
    root, site = runs_root.resolve(), Path(dest).resolve()
    pending: list[tuple[Path, int, str]] = []  # folder files, copied once runs were found
    runs = 0
    try:
        for folder, dir_fd, is_run in _walk(root, runs_root, done.skipped):
            rel = folder.relative_to(root)
            if is_run:
                rel = rel if folder != root else Path(root.name)
                names = choose(rel, dir_fd)
                runs += names is not None
                for name in names or ():
                    _publish_file(folder, dir_fd, name, site, rel, runs_root, done)
            else:
                pending += [(rel, os.dup(dir_fd), name) for name in FOLDER_FILES
                            if _exists(name, dir_fd)]
        for rel, dir_fd, name in pending:
            _publish_file(root / rel, dir_fd, name, site, rel, runs_root, done)
    finally:
        for _rel, dir_fd, _name in pending:
            os.close(dir_fd)
    return runs


def seeded_runs(runs_root: Path) -> set[str]:
    """The runs (relative paths) a runs root was seeded with from a site (:data:`SEEDED_FILE`)."""
    runs = read_json_object(Path(runs_root) / SEEDED_FILE).get("runs")
    return {str(r) for r in runs} if isinstance(runs, list) else set()


@contextmanager
def site_lock(site: Path) -> Iterator[None]:
    """Hold the site's lock (:data:`SITE_LOCK`), waiting up to :data:`LOCK_WAIT_S` for another
    publish into it."""
    path = Path(site) / SITE_LOCK
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        raise InputError(f"{path}: cannot take the site's lock ({exc.strerror})") from None
    try:
        if not flock_within(fd, LOCK_WAIT_S):
            raise InputError(f"{path}: another publish held the site for {LOCK_WAIT_S:.0f} s")
        yield
    finally:
        os.close(fd)  # closing releases the lock


def merged_suite(theirs: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """One suite night's record from two copies (each cron slot runs its ``--only`` entries into
    the same night): every entry by key, ours where both have it, in key order, so merging in
    either order gives the same record; the leftovers of both."""
    entries = {str(e["key"]): e for record in (theirs, ours) for e in _list(record.get("entries"))
               if isinstance(e, dict) and e.get("key")}
    leftovers = [e for e in _list(theirs.get("leftovers")) if e not in _list(ours.get("leftovers"))]
    updated = max(str(theirs.get("updated") or ""), str(ours.get("updated") or ""))
    return {**theirs, **ours, "updated": updated, "entries": [entries[k] for k in sorted(entries)],
            "leftovers": leftovers + _list(ours.get("leftovers"))}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def places(runs_root: Path, dest: Path) -> tuple[Path, Path]:
    """The resolved runs root and destination, refused when one holds the other."""
    if not runs_root.is_dir():
        raise InputError(f"{runs_root}: not a directory")
    root, site = runs_root.resolve(), dest.resolve()  # links and '..' resolved, also when new
    if site == root or root in site.parents:
        raise InputError(f"{dest}: the destination is inside the runs root {runs_root} "
                         f"(it resolves to {site}); publish outside it")
    if site in root.parents:
        raise InputError(f"{dest}: the destination contains the runs root {runs_root}, so the "
                         "raw runs would be published; publish to a folder outside it")
    if site.exists() and not site.is_dir():
        raise InputError(f"{dest}: the destination exists and is not a folder")
    return root, site


def _walk(root: Path, shown: Path, skipped: list[str]) -> Iterator[tuple[Path, int, bool]]:
    """Every folder under ``root`` reached without a link: its path, descriptor, and whether it
    is a run. As in the index, hidden folders and a run's own subfolders are not searched; a link
    to a folder is recorded in ``skipped`` (named under ``shown``) and not followed."""
    for top, dirs, _files, dir_fd in os.fwalk(root, follow_symlinks=False):
        folder = Path(top)
        is_run = any(_exists(name, dir_fd) for name in RUN_MARKERS)
        keep = []
        for name in sorted(dirs):
            if name.startswith(".") or is_run:
                continue
            if _is_link(name, dir_fd):
                skipped.append(f"{_shown(folder / name, root, shown)}: a symbolic link, "
                               "not followed")
            else:
                keep.append(name)
        dirs[:] = keep
        yield folder, dir_fd, is_run


def _publish_file(folder: Path, dir_fd: int, name: str, site: Path, rel: Path,
                  shown_root: Path, done: Publication) -> None:
    """One chosen file of ``folder`` into ``site/rel``, or a line in ``done.skipped``."""
    if not _exists(name, dir_fd):
        return
    source = folder / name
    try:
        target = _site_folder(site, rel) / name
        theirs = read_json_object(target) if name == SUITE_FILE else {}
        done.copied.append(_copy_redacted(source, target, dir_fd=dir_fd))
        if theirs:  # another slot's entries of the same night stay
            write_json(target, merged_suite(theirs, read_json_object(target)))
    except _Skip as why:
        done.skipped.append(f"{shown_root / rel / name}: {why}")


def _copy_redacted(source: Path, target: Path, *, dir_fd: int | None = None) -> Path:
    """The one way a file enters the site: opened without following a link (relative to
    ``dir_fd`` when given), then that very descriptor redacted by the file's form and written
    to a unique temp file renamed into place."""
    name = source.name if dir_fd is not None else str(source)
    try:
        src = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
    except OSError as err:
        raise _Skip(_refusal(name, dir_fd, err)) from None
    try:
        return redaction.redact_opened(src, target, redaction.form_of(source), name=str(source))
    except InputError:  # a FIFO, a device, a folder: nothing a run writes
        raise _Skip("not a regular file, not copied") from None
    finally:
        os.close(src)


def _refusal(name: str, dir_fd: int | None, err: OSError) -> str:
    if _is_link(name, dir_fd):
        return "a symbolic link, not followed"
    return f"unreadable ({err.strerror}), not copied"


def _site_folder(site: Path, rel: Path) -> Path:
    """``site/rel``, made when missing; a part that is a link or a file is refused, so nothing
    is written through a link that was already in the destination."""
    site.mkdir(parents=True, exist_ok=True)
    path = site
    for part in rel.parts:
        path = path / part
        try:
            path.mkdir()
        except FileExistsError:
            pass
        if path.is_symlink() or not path.is_dir():
            raise _Skip(f"{path} in the destination is a link or not a folder, not written")
    return path


def _exists(name: str, dir_fd: int | None) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return True


def _is_link(name: str, dir_fd: int | None) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _shown(path: Path, root: Path, shown: Path) -> Path:
    return shown / path.relative_to(root)
