"""One metrics model for a run: per step, metric name -> number, and where each came from.

NaN stays NaN (verl writes it as JSON ``null``); a metric a step did not log is simply absent.
Names are canonical (see ``names.py``); the name as logged is kept in ``original_names``.

A long run has 10^5 steps of about 100 metrics, so a dict of float objects per step (and a
source string per value) would cost gigabytes. A step is stored as the row it was logged as:
its names, a tuple shared by every step that logged the same keys, its values packed as C
doubles (8 bytes each) and one source for the row. ``steps`` and ``sources`` are read-only
mapping views over those rows, so ``metrics.steps[s].get(name)`` still reads like dicts.

A run's metrics read from its files also say which of its sources they came from
(:class:`MetricsSource`, ``RunMetrics.origin``): verl's file logger, the console log or
TensorBoard event files, and how many steps each held.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from struct import Struct
from typing import TypeVar

_DOUBLE = Struct("d")
_packers: dict[int, Struct] = {}


def packer(count: int) -> Struct:
    """The ``Struct`` that packs ``count`` doubles (cached: rows repeat their length)."""
    found = _packers.get(count)
    if found is None:
        found = _packers[count] = Struct(f"{count}d")
    return found


def pack(values: Sequence[float]) -> bytes:
    """Numbers as the packed doubles a row stores (ints and bools become floats)."""
    return packer(len(values)).pack(*values)


class _Layout:
    """The names of a row and where each one sits, shared by every row with those names."""

    __slots__ = ("index", "names", "struct")

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.index = {name: i for i, name in enumerate(names)}
        self.struct = packer(len(names))


_layouts: dict[tuple[str, ...], _Layout] = {}


def _layout(names: tuple[str, ...]) -> _Layout:
    found = _layouts.get(names)
    if found is None:
        if len(_layouts) >= 4096:  # bounded; rows keep their layout, only sharing is lost
            _layouts.clear()
        found = _layouts[names] = _Layout(names)
    return found


class _Row:
    """One step: names (via the layout), packed values, and one source or one per name."""

    __slots__ = ("layout", "packed", "sources")

    def __init__(self, layout: _Layout, packed: bytes, sources: str | tuple[str, ...]) -> None:
        self.layout = layout
        self.packed = packed
        self.sources = sources

    def get(self, name: str) -> float | None:
        i = self.layout.index.get(name)
        return None if i is None else _DOUBLE.unpack_from(self.packed, 8 * i)[0]

    def values(self) -> tuple[float, ...]:
        return self.layout.struct.unpack(self.packed)

    def source_list(self) -> Sequence[str]:
        sources = self.sources
        return [sources] * len(self.layout.names) if isinstance(sources, str) else sources

    def merge(self, names: Sequence[str], values: Sequence[float], sources: str | Sequence[str]) -> None:
        """Add or replace values; the row object stays the same, so views of it see the change."""
        if not names:
            return
        if names == self.layout.names and isinstance(sources, str):  # the same row again
            self.packed = self.layout.struct.pack(*values)
            self.sources = sources
            return
        merged = dict(zip(self.layout.names, self.values(), strict=True))
        merged.update(zip(names, values, strict=True))
        origin = dict(zip(self.layout.names, self.source_list(), strict=True))
        if isinstance(sources, str):
            origin.update(dict.fromkeys(names, sources))
        else:
            origin.update(zip(names, sources, strict=True))
        self.layout = _layout(tuple(merged))
        self.packed = self.layout.struct.pack(*merged.values())
        distinct = set(origin.values())
        self.sources = distinct.pop() if len(distinct) == 1 else tuple(origin.values())


class _OfRow:
    """A read-only mapping over one row's names (the views below)."""

    __slots__ = ("_row",)

    def __init__(self, row: _Row) -> None:
        self._row = row

    def __contains__(self, name: object) -> bool:
        return name in self._row.layout.index

    def __iter__(self) -> Iterator[str]:
        return iter(self._row.layout.names)

    def __len__(self) -> int:
        return len(self._row.layout.names)

    def __repr__(self) -> str:
        return repr(dict(self.items()))  # type: ignore[attr-defined]


class StepValues(_OfRow, Mapping[str, float]):
    """Read-only ``{metric: value}`` of one step (compares equal to the same dict)."""

    __slots__ = ()

    def __getitem__(self, name: str) -> float:
        value = self._row.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def get(self, name: str, default: float | None = None) -> float | None:  # type: ignore[override]
        value = self._row.get(name)
        return default if value is None else value

    def to_dict(self) -> dict[str, float]:
        return dict(zip(self._row.layout.names, self._row.values(), strict=True))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return self.to_dict() == (other.to_dict() if isinstance(other, StepValues) else dict(other))

    def __repr__(self) -> str:
        return repr(self.to_dict())


class StepSources(_OfRow, Mapping[str, str]):
    """Read-only ``{metric: source}`` of one step, e.g. ``{"actor/pg_loss": "run.log:120"}``."""

    __slots__ = ()

    def __getitem__(self, name: str) -> str:
        i = self._row.layout.index[name]
        sources = self._row.sources
        return sources if isinstance(sources, str) else sources[i]


SOURCE_NAMES = {  # how a page names each source, and in a list of the others
    "jsonl": ("verl's file logger", "file logger"),
    "tensorboard": ("TensorBoard event files", "TensorBoard"),
    "console": ("the console log", "console log"),
}


@dataclass(frozen=True)
class MetricsSource:
    """Which of a run's sources its metrics came from: the one holding the most steps (ties:
    the file logger, then TensorBoard, then the console log), the steps each source read held,
    of ``total`` steps in all, and what could not be read."""

    chosen: str  # "jsonl", "tensorboard", "console", or "" when no source held a step
    steps: dict[str, int]
    total: int
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        return {"chosen": self.chosen, "steps": dict(self.steps), "total": self.total,
                "notes": list(self.notes)}

    def text(self) -> str:
        """``verl's file logger (console log held 0 of 15 steps)``."""
        if not self.chosen:
            said = "no source held a step"
        else:
            said = SOURCE_NAMES[self.chosen][0]
            held = [f"{SOURCE_NAMES[k][1]} held {n} of {self.total} steps"
                    for k, n in self.steps.items()
                    if k != self.chosen or n < self.total]
            said += f" ({'; '.join(held)})" if held else ""
        return "; ".join((said, *self.notes))


_View = TypeVar("_View", StepValues, StepSources)


class ByStep(Mapping[int, _View]):
    """``{step: view of that step}``, read-only, in the order the steps were first logged."""

    __slots__ = ("_rows", "_view")

    def __init__(self, rows: dict[int, _Row], view: type[_View]) -> None:
        self._rows = rows
        self._view: type[_View] = view

    def __getitem__(self, step: int) -> _View:
        return self._view(self._rows[step])

    def __contains__(self, step: object) -> bool:
        return step in self._rows

    def __iter__(self) -> Iterator[int]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


class RunMetrics:
    """Metrics of one run, keyed by step then canonical metric name."""

    def __init__(self) -> None:
        self._rows: dict[int, _Row] = {}
        # canonical name -> name as it appeared in the log, when they differ
        self.original_names: dict[str, str] = {}
        # validation dicts verl pprints outside step lines: "initial" / "final" -> metric -> value
        self.validation: dict[str, dict[str, float]] = {}
        self._layout_hint: _Layout | None = None
        # where the run's metrics came from, when read from its files (not part of equality)
        self.origin: MetricsSource | None = None

    @property
    def steps(self) -> ByStep[StepValues]:
        """step -> metric -> value (read-only; write with :meth:`put` / :meth:`put_many`)."""
        return ByStep(self._rows, StepValues)

    @property
    def sources(self) -> ByStep[StepSources]:
        """step -> metric -> where the value came from, e.g. "metrics.jsonl:3" or "run.log:120"."""
        return ByStep(self._rows, StepSources)

    def put(self, step: int, name: str, value: float, source: str, original: str | None = None) -> None:
        """Record one value; a later put for the same step and name replaces the earlier."""
        self.put_row(step, (name,), _DOUBLE.pack(value), source)
        if original is not None and original != name:
            self.original_names[name] = original

    def put_many(
        self, step: int, data: dict[str, float], source: str,
        originals: dict[str, str] | None = None, *, changes: bool = False,
    ) -> dict[str, float]:
        """Record one logged line's values at once.

        With ``changes=True`` returns the values that are new or changed, so a live reader
        yields a duplicated line (Ray job logs can repeat the trainer's lines) only once.
        """
        changed: dict[str, float] = {}
        if changes:
            row = self._rows.get(step)
            changed = dict(data) if row is None else {
                k: v for k, v in data.items() if not _same(row.get(k), v)
            }
        self.put_row(step, tuple(data), pack(list(data.values())), source, originals)
        return changed

    def put_row(
        self, step: int, names: tuple[str, ...], packed: bytes, source: str,
        originals: dict[str, str] | None = None,
    ) -> None:
        """The readers' fast path: distinct names and their values packed by :func:`pack`."""
        row = self._rows.get(step)
        if row is None:
            layout = self._layout_hint  # the previous row's, most often: no tuple to hash
            if layout is None or layout.names is not names:
                layout = self._layout_hint = _layout(names)
            self._rows[step] = _Row(layout, packed, source)
        else:
            row.merge(names, packer(len(names)).unpack(packed), source)
        if originals:
            self.original_names.update(originals)

    def fill_from(self, other: RunMetrics) -> None:
        """Add what ``other`` has and this lacks (this one wins where both have a value)."""
        copied: dict[int, _Layout] = {}
        added: set[str] = set()
        # (my layout, theirs) -> positions of theirs I lack; the layouts ride along so that
        # their ids stay theirs while this runs
        missing: dict[tuple[int, int], tuple[_Layout, _Layout, list[int]]] = {}
        for step, theirs in other._rows.items():
            mine = self._rows.get(step)
            if mine is None:
                self._rows[step] = _Row(theirs.layout, theirs.packed, theirs.sources)
                copied[id(theirs.layout)] = theirs.layout
                continue
            key = (id(mine.layout), id(theirs.layout))
            found = missing.get(key)
            if found is None:
                have = mine.layout.index
                new = [i for i, name in enumerate(theirs.layout.names) if name not in have]
                found = missing[key] = (mine.layout, theirs.layout, new)
            new = found[2]
            if new:
                names, numbers = theirs.layout.names, theirs.values()
                sources = theirs.source_list()
                mine.merge([names[i] for i in new], [numbers[i] for i in new], [sources[i] for i in new])
                added.update(names[i] for i in new)
        for layout in copied.values():
            added.update(layout.names)
        self.original_names.update(
            (name, logged) for name, logged in other.original_names.items() if name in added
        )
        for kind, values in other.validation.items():
            mine_val = self.validation.setdefault(kind, {})
            for name, value in values.items():
                mine_val.setdefault(name, value)

    def _layouts(self) -> list[_Layout]:
        """The distinct layouts of the rows (a run has a handful, however many steps)."""
        return list({id(row.layout): row.layout for row in self._rows.values()}.values())

    def names(self) -> list[str]:
        """Every metric name logged at any step, sorted."""
        return sorted({name for layout in self._layouts() for name in layout.names})

    def series(self, name: str) -> dict[int, float]:
        """``{step: value}`` in step order for one metric (steps without it are left out)."""
        out: dict[int, float] = {}
        rows = self._rows
        for step in sorted(rows):
            row = rows[step]
            i = row.layout.index.get(name)
            if i is not None:
                out[step] = _DOUBLE.unpack_from(row.packed, 8 * i)[0]
        return out

    def has(self, name: str) -> bool:
        return any(name in row.layout.index for row in self._rows.values())

    @property
    def step_numbers(self) -> list[int]:
        return sorted(self._rows)

    @property
    def last_step(self) -> int | None:
        return max(self._rows) if self._rows else None

    def __len__(self) -> int:
        return len(self._rows)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunMetrics):
            return NotImplemented
        return (
            self.steps == other.steps
            and self.sources == other.sources
            and self.original_names == other.original_names
            and self.validation == other.validation
        )

    def __repr__(self) -> str:
        return f"RunMetrics({len(self._rows)} steps, {len(self.names())} metrics)"

    def records(self) -> Iterator[dict[str, object]]:
        """File-logger shaped records in step order, NaN and infinities as ``None``."""
        for step in sorted(self._rows):
            row = self._rows[step]
            pairs = sorted(zip(row.layout.names, row.values(), strict=True))
            yield {"step": step, "data": {k: (v if math.isfinite(v) else None) for k, v in pairs}}


def _same(old: float | None, new: float) -> bool:
    """Equal, counting NaN as equal to NaN (a repeated line is not news)."""
    if old is None:
        return False
    return old == new or (math.isnan(old) and math.isnan(new))
