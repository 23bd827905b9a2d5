"""Whether a run's timings can be compared with its baseline's, given what else ran on the machine.

A step time measured while other processes took CPU from the run is slower for reasons no change
to verl explains. Every run records the machine's conditions (:mod:`workbook.launch.conditions`:
CPU others used, the calibration workload's time); a baseline records those of the runs it was
blessed from (:func:`blessed_conditions`). Before a timing is compared, :func:`timing_comparable`
says whether the run's machine was like the blessed runs' machine:

- **busier**: the CPU other processes used while the run trained exceeds the most the blessed
  runs saw by more than ``BUSY_MARGIN_CORES``;
- **a slower CPU**: the calibration workload, before or after the run, took more than
  ``CALIBRATION_MARGIN`` times its time at blessing (a lower clock, a throttled or smaller
  machine of the same model);
- **a host busy with other VMs**: the hypervisor took (stole) more than ``STEAL_MARGIN_CORES``
  beyond what it took at blessing;
- **another CPU**: the run's CPU name, family and model differ from the blessed runs' (a cloud
  VM of another generation under the same masked name).

Either makes the comparison ``not_comparable`` (shown grey with the reason), never a pass or a
failure. A run or a baseline that recorded no conditions (files from before they were recorded,
an imported log, or a run whose launcher said its processes ran elsewhere: a KubeRay job, a Ray
job on another machine's cluster) is compared as before.
A machine *idler* than at blessing is comparable: its timings can only look better.

Pure functions of plain mappings: the caller reads ``run.json``'s ``conditions`` and the
baseline's ``conditions``.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbook.core.quoting import cut
from workbook.core.values import finite

# CPU other processes may use beyond the most the blessed runs saw, in cores, before a timing is
# not comparable. benchmarks/timing_noise.py on the project's 2-core VM (2026-12-01, 3 runs per
# group): idle runs saw 0.03-0.08 cores of others (0.18 with an editor and a shell at work), runs
# beside one busy loop 0.82-0.87, and those were up to 36 % slower on update_actor, beyond the idle
# band. Normalizing by the calibration time or the run's CPU share did not narrow the spread, so
# the comparison is gated on this instead.
BUSY_MARGIN_CORES = 0.25
# How much slower than at blessing the calibration workload may run (a slower or throttled CPU);
# its run-to-run spread on that VM was about 1 % (0.0239-0.0248 s over 9 runs, idle or loaded),
# so 10 % is ten times the noise. It was 25 % until a CI machine of the same kind ran the
# unchanged scenario 30 % slower (2026-12-01) and the timings were judged, not set aside.
CALIBRATION_MARGIN = 1.10
# CPU a hypervisor may take from the VM beyond what it took at blessing, in cores. The blessed
# runs on the project's VM saw 0.001-0.011 cores stolen.
STEAL_MARGIN_CORES = 0.10


def blessed_conditions(runs_conditions: Sequence[Mapping[str, Any] | None]) -> dict[str, Any]:
    """What a baseline keeps of its runs' conditions: mean and max CPU others used and CPU the
    hypervisor stole, the mean calibration time, the machine's cpus and CPU, and how many runs
    recorded conditions (``n``).

    Runs that recorded none are left out; ``{}`` when none did (the baseline then compares
    timings as before).
    """
    recorded = [c for c in runs_conditions if _number(c, "others_cores") is not None]
    if not recorded:
        return {}
    others = [v for c in recorded if (v := _number(c, "others_cores")) is not None]
    calibrations = [v for c in recorded if (v := _number(c, "calibration_s")) is not None]
    steals = [v for c in recorded if (v := _number(c, "steal_cores")) is not None]
    cpus = [int(v) for c in recorded if (v := _number(c, "cpus")) is not None and v >= 1]
    names = {c["cpu"] for c in recorded if c is not None and isinstance(c.get("cpu"), str)}
    out: dict[str, Any] = {
        "others_cores": round(statistics.fmean(others), 4),
        "others_cores_max": round(max(others), 4),
        "calibration_s": round(statistics.fmean(calibrations), 6) if calibrations else None,
        "steal_cores": round(statistics.fmean(steals), 4) if steals else None,
        "steal_cores_max": round(max(steals), 4) if steals else None,
        "cpus": max(cpus) if cpus else None,
        "cpu": names.pop() if len(names) == 1 else None,
        "n": len(recorded),
    }
    return {k: v for k, v in out.items() if v is not None}


# Why runs' machines were unlike (:class:`Unlike`'s ``kind``), in the order they are looked for.
OTHER_CPU, STOLEN, BUSIER, SLOWER = "cpu", "steal", "busy", "calibration"


@dataclass(frozen=True)
class Unlike:
    """Why runs cannot be blessed together: the first rule they break, the two runs at its
    ends (``high``: the one that ran on the second CPU, with more stolen, busier or slower;
    ``low``: the one it is compared with) and the sentence bless refuses with."""

    kind: str
    high: str
    low: str
    text: str


def unlike_conditions(runs_conditions: Sequence[Mapping[str, Any] | None],
                      names: Sequence[str]) -> str | None:
    """Why runs cannot be blessed together: their machines were unlike, else None (the
    sentence of :func:`unlike_runs`)."""
    found = unlike_runs(runs_conditions, names)
    return found.text if found else None


def unlike_runs(runs_conditions: Sequence[Mapping[str, Any] | None],
                names: Sequence[str]) -> Unlike | None:
    """The first reason runs' machines were too unlike to bless together, else None.

    A baseline's timings come from its runs; one run measured beside other work widens the band
    and, as the baseline's busiest run, lets the busy check admit machines as busy as it was. So
    the runs' CPU of others may spread by at most ``BUSY_MARGIN_CORES``, the CPU stolen from
    them by at most ``STEAL_MARGIN_CORES``, their calibration times by at most
    ``CALIBRATION_MARGIN``, and they ran on one CPU (``names[i]`` names run ``i`` in the
    message). Runs that recorded no conditions are left out. The one rule bless and a baseline
    proposal both apply (:func:`workbook.history.proposal.select_sources`).
    """
    cpus: dict[str, str] = {}  # each CPU and the first run on it
    for c, n in zip(runs_conditions, names, strict=True):
        if isinstance(c, Mapping) and isinstance(c.get("cpu"), str):
            cpus.setdefault(c["cpu"], n)
    if len(cpus) >= 2:
        (one, first), (other, second) = list(cpus.items())[:2]
        return Unlike(OTHER_CPU, second, first, (
            f"{first} ran on {one} and {second} on {other}: bless runs from one kind of "
            "machine"))
    (low, calm), (high, stolen) = _ends([_number(c, "steal_cores") for c in runs_conditions], names)
    if high - low > STEAL_MARGIN_CORES:
        return Unlike(STOLEN, stolen, calm, (
            f"the hypervisor took {high:.2f} cores from the machine during {stolen}, "
            f"{low:.2f} during {calm}: bless runs measured alike, on a quiet host"))
    (low, quiet), (high, busy) = _ends([_number(c, "others_cores") for c in runs_conditions], names)
    if high - low > BUSY_MARGIN_CORES:
        return Unlike(BUSIER, busy, quiet, (
            f"the machine was busier during {busy} (other processes used {high:.2f} "
            f"cores) than during {quiet} ({low:.2f}): bless runs measured alike, on an "
            "idle machine"))
    (fast, quick), (slow, sluggish) = _ends([v if (v := _calibration(c)) and v > 0 else None
                                             for c in runs_conditions], names)
    if slow > fast * CALIBRATION_MARGIN:
        return Unlike(SLOWER, sluggish, quick, (
            f"the CPU was {slow / fast:.2f}x slower during {sluggish} than during {quick} "
            "(the calibration workload): bless runs from one kind of machine"))
    return None


def _ends(values: Sequence[float | None], names: Sequence[str]
          ) -> tuple[tuple[float, str], tuple[float, str]]:
    """The lowest and the highest of the runs' ``values``, each with its run's name (runs
    without one left out); no spread at all, two zeros, unless two runs have one."""
    found = [(v, n) for v, n in zip(values, names, strict=True) if v is not None]
    return (min(found), max(found)) if len(found) >= 2 else ((0.0, ""), (0.0, ""))


def timing_comparable(run: Mapping[str, Any] | None,
                      blessed: Mapping[str, Any] | None, *, same_cpu: bool = True) -> str | None:
    """None when the run's timings can be compared with the baseline's, else why not.

    The reason is what a ``not_comparable`` row shows, e.g. "the machine was 3.1x busier: other
    processes used 0.93 of 2 cores while it ran, 0.30 at blessing" (``same_cpu`` False: the
    caller already said the CPU differs). A run or a baseline without
    conditions (older files, an imported log, a run that ran elsewhere) is comparable.
    """
    if not run or not blessed:
        return None
    other_cpu = _other_cpu(run, blessed) if same_cpu else None  # else said by the caller
    reasons = [r for r in (other_cpu, _busier(run, blessed),
                           _stolen(run, blessed), _slower_cpu(run, blessed)) if r]
    return "; ".join(reasons) or None


def described(run: Mapping[str, Any] | None, blessed: Mapping[str, Any] | None) -> str:
    """The machine a timing was measured on beside the blessed one, in a few words, for a timing
    that failed: "others 0.05 cores (0.04 at blessing), stolen 0.00 (0.00), calibration 0.0243 s
    (0.0242 s)". Empty when the run recorded no conditions."""
    if not isinstance(run, Mapping) or _number(run, "others_cores") is None:
        return ""
    then = blessed if isinstance(blessed, Mapping) else {}
    parts = []
    for label, key, unit in (("others", "others_cores", " cores"), ("stolen", "steal_cores", ""),
                             ("calibration", "calibration_s", " s")):
        now = _calibration(run) if key == "calibration_s" else _number(run, key)
        if now is None:
            continue
        was = _number(then, key)
        digits = ".3g" if key == "calibration_s" else ".2f"
        parts.append(f"{label} {now:{digits}}{unit}"
                     + (f" ({was:{digits}}{unit} at blessing)" if was is not None else ""))
    if isinstance(run.get("cpu"), str):
        parts.append(f"on {cut(run['cpu'], 80)}")
    return "machine: " + ", ".join(parts) if parts else ""


def _calibration(conditions: Mapping[str, Any] | None) -> float | None:
    """The slower of the calibration times before and after a run (the CPU at its worst)."""
    times = [v for key in ("calibration_s", "calibration_after_s")
             if (v := _number(conditions, key)) is not None]
    return max(times) if times else None


def _other_cpu(run: Mapping[str, Any], blessed: Mapping[str, Any]) -> str | None:
    now, then = run.get("cpu"), blessed.get("cpu")
    if not isinstance(now, str) or not isinstance(then, str) or now == then:
        return None
    return f"another CPU: {cut(now, 80)}, blessed on {cut(then, 80)}"


def _stolen(run: Mapping[str, Any], blessed: Mapping[str, Any]) -> str | None:
    now = _number(run, "steal_cores")
    if now is None:
        return None
    then = _number(blessed, "steal_cores") or 0.0
    most = max(_number(blessed, "steal_cores_max") or 0.0, then)
    if now <= most + STEAL_MARGIN_CORES:
        return None
    return (f"the host was busy with other machines: its hypervisor took {now:.2f} cores from "
            f"this VM while the run went, {then:.2f} at blessing")


def _busier(run: Mapping[str, Any], blessed: Mapping[str, Any]) -> str | None:
    now, then = _number(run, "others_cores"), _number(blessed, "others_cores")
    if now is None or then is None:
        return None
    most = _number(blessed, "others_cores_max")
    most = then if most is None else max(most, then)
    if now <= most + BUSY_MARGIN_CORES:
        return None
    times = f"{now / then:.1f}x busier" if then > 0 else "busier"
    cpus = _number(run, "cpus") or _number(blessed, "cpus")
    of = f" of {cpus:g} cores" if cpus else " cores"
    seen = f" (at most {most:.2f})" if most > then else ""
    return (f"the machine was {times}: other processes used {now:.2f}{of} while it ran, "
            f"{then:.2f} at blessing{seen}")


def _slower_cpu(run: Mapping[str, Any], blessed: Mapping[str, Any]) -> str | None:
    now, then = _calibration(run), _number(blessed, "calibration_s")
    if now is None or then is None or then <= 0 or now <= then * CALIBRATION_MARGIN:
        return None
    return (f"the CPU was {now / then:.2f}x slower: the calibration workload took {now:.3g} s, "
            f"{then:.3g} s at blessing")


def _number(data: Mapping[str, Any] | None, key: str) -> float | None:
    """``data[key]`` as a finite float, None when missing or not a number."""
    return finite(data.get(key)) if isinstance(data, Mapping) else None
