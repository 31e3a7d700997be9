"""How a GPU's health reads from ``nvidia-smi -q -x`` (:mod:`aiaudit.linux.gpu.nvsmi`), as an
HPC admin reads it: ECC, pending memory repairs, clock slowdowns.

Sources: NVIDIA's "GPU Memory Error Management" guide (A100 and later: a pending row remap
needs a GPU reset, a remapping failure an RMA; the row-remapper state is not reported while
MIG is enabled, but the volatile uncorrectable ECC counters are, per GPU and per MIG
instance) and "Dynamic Page Retirement" (Kepler to Volta: retirement pending until the next
reset); NVML's ``nvmlClocksEventReasons`` (HW slowdown, HW thermal slowdown, HW power brake
and SW thermal slowdown are the board or the driver protecting the GPU; SW power cap holds
clocks to the power limit, which every busy GPU reaches at its default limit; the
applications-clocks reason holds clocks to the applications clocks, a finding only when
they were lowered below their defaults; idle, sync boost and display clocks are not
findings).  A field the GPU reports as ``N/A`` is never taken for "nothing pending": the
verdict says it is not reported, and why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiaudit.core.model import Status
from aiaudit.core.startup.records import record

if TYPE_CHECKING:  # the reader is imported where nvidia-smi runs
    from aiaudit.linux.gpu.nvsmi import GpuHealth

HW_FINDINGS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
               "sw_thermal_slowdown")
"""Reasons that are a finding whenever they are active."""

JUDGED_REASONS = ("applications_clocks_setting", "sw_power_cap", *HW_FINDINGS)
"""Reasons ``gpu.smi_health`` judges by default."""

LABELS = {
    "gpu_idle": "GPU idle",
    "applications_clocks_setting": "applications clocks setting",
    "sw_power_cap": "SW power cap",
    "hw_slowdown": "HW slowdown",
    "hw_thermal_slowdown": "HW thermal slowdown",
    "hw_power_brake_slowdown": "HW power brake slowdown",
    "sync_boost": "sync boost",
    "sw_thermal_slowdown": "SW thermal slowdown",
    "display_clocks_setting": "display clocks setting",
}


@record
class Verdict:
    """One GPU judged for one property."""

    status: Status
    message: str
    expected: str
    actual: str
    data: dict[str, Any]


def _label(reason: str) -> str:
    return LABELS.get(reason, reason.replace("_", " "))


def unreported_why(g: GpuHealth) -> str:
    """Why a GPU reports a field as ``N/A``, as far as its modes tell."""
    if g.virtualization == "VGPU":
        return "a vGPU guest: the host owns this state"
    if g.mig == "Enabled":
        return "MIG mode is enabled"
    if g.driver_model:
        return f"Windows driver model {g.driver_model}"
    return "this GPU or driver does not report it"


def _ecc_why(g: GpuHealth) -> str:
    if g.ecc_current == "Disabled":
        return "ECC is disabled"
    why = unreported_why(g)
    return "no ECC memory, or not exposed" if why.startswith("this GPU") else why


def ecc(g: GpuHealth) -> Verdict:
    """ECC on now and staying on after the next reset."""
    cur, pend = g.ecc_current, g.ecc_pending
    data = {"current_ecc": cur, "pending_ecc": pend}
    if cur is None:
        why = _ecc_why(g)
        return Verdict(Status.SKIP, f"ECC is not reported by this GPU (N/A: {why})",
                       "Enabled", "N/A", data)
    if cur == "Enabled" and pend == "Disabled":
        return Verdict(Status.FAIL, "ECC is on now but pending Disabled: it turns off at the "
                       "next GPU reset", "Enabled", "Enabled, pending Disabled", data)
    if cur == "Enabled":
        return Verdict(Status.PASS, "ECC is enabled", "Enabled", "Enabled", data)
    note = " (pending Enabled: reset the GPU to apply)" if pend == "Enabled" else ""
    return Verdict(Status.FAIL, f"ECC is {cur}{note}: memory errors corrupt training "
                   "silently", "Enabled", cur, data)


def _repairs_pending(g: GpuHealth) -> list[str]:
    bad = []
    if g.pages_pending_blacklist == "Yes" or g.pages_pending_retirement == "Yes":
        bad.append("retired pages pending (reset the GPU to retire them)")
    if g.rows_pending == "Yes":
        bad.append("row remapping pending (reset the GPU)")
    if g.rows_failure == "Yes":
        bad.append("a row remapping failed (RMA the GPU)")
    bad += [f"{r.replace('_', ' ')} (reset the GPU)" for r in g.repairs_pending
            if r != "unrepairable_memory"]
    if "unrepairable_memory" in g.repairs_pending:
        bad.append("unrepairable memory (RMA the GPU)")
    return bad


def _mig_counts(g: GpuHealth) -> Verdict:
    """MIG enabled, row remapping not reported: what MIG mode does report, the volatile
    uncorrectable ECC counts of the GPU and of each MIG instance."""
    counts = [c for c in (g.volatile_uncorrectable, g.mig_uncorrectable) if c is not None]
    data = {"mig": "Enabled", "volatile_uncorrectable": g.volatile_uncorrectable,
            "mig_uncorrectable": g.mig_uncorrectable}
    if not counts:
        return Verdict(Status.SKIP, "row remapping and page retirement are not reported in "
                       "MIG mode (N/A), and no volatile ECC error count either",
                       "nothing pending", "not reported", data)
    n = sum(counts)
    if n:
        return Verdict(Status.FAIL, f"{n} uncorrectable ECC error(s) since the last reset; "
                       "row remapping is not reported in MIG mode, so a remap is likely "
                       "pending: drain the node and reset the GPU", "no uncorrectable error",
                       f"{n} uncorrectable", data)
    return Verdict(Status.SKIP, "row remapping and page retirement are not reported in MIG "
                   "mode (N/A); what MIG mode reports, the volatile uncorrectable ECC "
                   "counts of the GPU and its MIG instances, are 0", "nothing pending",
                   "not reported (MIG); 0 uncorrectable", data)


def memory_errors(g: GpuHealth) -> Verdict:
    """No page retirement, row remapping or v13 repair pending and no remapping failure;
    "not reported" where the GPU reports none of them."""
    data: dict[str, Any] = {
        "pending_blacklist": g.pages_pending_blacklist,
        "pending_retirement": g.pages_pending_retirement,
        "remapped_row_pending": g.rows_pending, "remapped_row_failure": g.rows_failure,
        "repairs_pending": list(g.repairs_pending)}
    bad = _repairs_pending(g)
    if bad:
        return Verdict(Status.FAIL, "; ".join(bad), "nothing pending", "; ".join(bad), data)
    read = []
    if g.pages_pending_blacklist or g.pages_pending_retirement:
        read.append("page retirement")
    if g.rows_pending or g.rows_failure:
        read.append("row remapping")
    if read:
        return Verdict(Status.PASS, f"nothing pending ({' and '.join(read)} reported: no "
                       "pending retirement or remap, no remapping failure)",
                       "nothing pending", "nothing pending", data)
    if g.mig == "Enabled":
        return _mig_counts(g)
    return Verdict(Status.SKIP, "page retirement and row remapping are not reported by this "
                   f"GPU (N/A: {unreported_why(g)})", "nothing pending", "not reported",
                   data)


def lowered_power_limit(g: GpuHealth) -> str | None:
    """``"power limit 200 W is below the default 350 W"`` when the limit in force or the
    one set is below the default; ``None`` otherwise or when not reported."""
    default = g.default_power_limit_w
    set_ = [w for w in (g.power_limit_w, g.requested_power_limit_w) if w is not None]
    if default is None or not set_ or min(set_) >= default:
        return None
    return f"power limit {min(set_):g} W is below the default {default:g} W"


def lowered_app_clocks(g: GpuHealth) -> str | None:
    """``"applications clocks 900 MHz below the default 1410 MHz"`` (graphics or memory)."""
    for what, cur, dflt in (("graphics", g.app_clock_mhz, g.default_app_clock_mhz),
                            ("memory", g.app_mem_clock_mhz, g.default_app_mem_clock_mhz)):
        if cur is not None and dflt is not None and cur < dflt:
            return f"{what} applications clock {cur:g} MHz is below the default {dflt:g} MHz"
    return None


def _contextual(g: GpuHealth, reason: str, lowered: str | None) -> tuple[str | None, str]:
    """(finding or None, note) for SW power cap and applications clocks, whose being
    active is normal at the defaults."""
    if reason == "sw_power_cap":
        if lowered:
            return f"SW power cap active with a {lowered}", ""
        at = f" ({g.power_limit_w:g} W)" if g.power_limit_w else ""
        return None, f"SW power cap active at the default power limit{at}: normal under load"
    low = lowered_app_clocks(g)
    if low:
        return f"applications clocks setting active: {low}", ""
    return None, "applications clocks setting active at the default applications clocks"


def throttle(g: GpuHealth, judged: tuple[str, ...] = JUDGED_REASONS) -> Verdict:
    """No HW slowdown, thermal or power brake; no lowered power limit or applications
    clocks; SW power cap at the default limit and idle reasons are not findings."""
    active = [r for r, on in g.reasons if on]
    lowered = lowered_power_limit(g) if "sw_power_cap" in judged else None
    data: dict[str, Any] = {"active": active, "power_limit_w": g.power_limit_w,
                            "requested_power_limit_w": g.requested_power_limit_w,
                            "default_power_limit_w": g.default_power_limit_w}
    if not g.reasons and not lowered:
        return Verdict(Status.SKIP, "clock event reasons are not reported by this GPU "
                       f"(N/A: {unreported_why(g)})", "none active", "not reported", data)
    findings: list[str] = []
    notes: list[str] = []
    for r in active:
        if r in ("sw_power_cap", "applications_clocks_setting") and r in judged:
            finding, note = _contextual(g, r, lowered)
            findings += [finding] if finding else []
            notes += [note] if note else []
        elif r in judged:
            findings.append(_label(r))
        else:
            notes.append(f"{_label(r)} (not a finding)")
    if lowered and not any(lowered in f for f in findings):
        findings.append(lowered)
    if findings:
        what = ", ".join(findings)
        return Verdict(Status.FAIL, f"clocks held down: {what}", "none active", what, data)
    extra = f"; {'; '.join(notes)}" if notes else ""
    return Verdict(Status.PASS, f"no clock slowdown finding{extra}", "none active",
                   ", ".join(_label(r) for r in active) or "none", data)



# ------------------------------------------------------------ memory health with thresholds
RETIRED_PAGES_LIMIT = 63
"""Retired pages (single- plus double-bit) at which a GPU fails: DCGM's
``DCGM_LIMIT_MAX_RETIRED_PAGES`` (``dcgm_gpu_hardware_limits.h``, raised from 60 "to match
the field diag"); the driver retires at most 64 pages per GPU (NVIDIA GPU Memory Error
Management, "Row Remapping", on page retirement of earlier GPUs)."""

THRESHOLD_SOURCES = (
    "max_volatile_uncorrectable 0: DCGM's memory health watch (any uncorrectable ECC "
    "error since the last GPU reset fails: a page to retire or a row to remap); "
    "retired_pages_limit 63: DCGM_LIMIT_MAX_RETIRED_PAGES, NVIDIA's field diagnostic "
    "limit (the driver retires at most 64 pages per GPU); a row remapping failure and "
    "SRAM Threshold Exceeded: NVIDIA's RMA policy (GPU Memory Error Management guide); "
    "max_aggregate_uncorrectable and max_banks_without_spare_rows: NVIDIA sets no limit, "
    "unset by default (a site policy)")
"""Where the default thresholds of ``gpu.memory_health`` come from (``aiaudit explain``)."""


@record
class MemoryLimits:
    """Thresholds of :func:`memory_health` (``None``: reported, not judged)."""

    max_volatile_uncorrectable: int | None = 0
    max_aggregate_uncorrectable: int | None = None
    retired_pages_limit: int | None = RETIRED_PAGES_LIMIT
    """Fails when the retired pages reach it (DCGM's ``>=``)."""
    max_banks_without_spare_rows: int | None = None


def volatile_total(g: GpuHealth) -> int | None:
    """Uncorrectable errors since the last reset; with MIG the larger of the GPU's count
    and the sum over its instances (NVIDIA does not say whether they overlap)."""
    counts = [c for c in (g.volatile_uncorrectable, g.mig_uncorrectable) if c is not None]
    return max(counts) if counts else None


def retired_total(g: GpuHealth) -> int | None:
    """Pages retired for single- and double-bit errors together (DCGM adds them)."""
    got = [c for c in g.retired_pages if c is not None]
    return sum(got) if got else None


Reading = tuple[str, str, int, int | None, str]
"""(key, what, count, largest count allowed or None, what a count over it means)."""


def _memory_readings(g: GpuHealth, lim: MemoryLimits) -> list[Reading]:
    """The counts the GPU reports, each with its limit."""
    ret_max = None if lim.retired_pages_limit is None else lim.retired_pages_limit - 1
    cand: list[tuple[str, str, int | None, int | None, str]] = [
        ("volatile_uncorrectable", "uncorrectable ECC error(s) since the last GPU reset",
         volatile_total(g), lim.max_volatile_uncorrectable,
         "drain the node and reset the GPU"),
        ("aggregate_uncorrectable", "uncorrectable ECC error(s) over the GPU's life",
         g.aggregate_uncorrectable, lim.max_aggregate_uncorrectable, "over the site's limit"),
        ("retired_pages", "retired page(s)", retired_total(g), ret_max,
         f"at the limit of {lim.retired_pages_limit}: replace the GPU (RMA)"),
        ("banks_without_spare_rows", "memory bank(s) without a spare row",
         g.banks_without_spare_rows, lim.max_banks_without_spare_rows,
         "the next uncorrectable error there is a remapping failure"),
    ]
    return [(k, what, n, most, why) for k, what, n, most, why in cand if n is not None]


def memory_health(g: GpuHealth, lim: MemoryLimits) -> Verdict:
    """Uncorrectable ECC counts, retired pages and spare rows against ``lim``; a row
    remapping failure and SRAM Threshold Exceeded always fail (NVIDIA's RMA policy);
    "not reported" where the GPU reports none of them."""
    readings = _memory_readings(g, lim)
    data: dict[str, Any] = {k: n for k, _, n, _, _ in readings}
    data |= {"remapped_row_failure": g.rows_failure, "rows_remapped": list(g.rows_remapped),
             "sram_threshold_exceeded": g.sram_threshold_exceeded,
             "limits": {"max_volatile_uncorrectable": lim.max_volatile_uncorrectable,
                        "max_aggregate_uncorrectable": lim.max_aggregate_uncorrectable,
                        "retired_pages_limit": lim.retired_pages_limit,
                        "max_banks_without_spare_rows": lim.max_banks_without_spare_rows}}
    bad = [f"{n} {what} ({why})" for _, what, n, most, why in readings
           if most is not None and n > most]
    if g.rows_failure == "Yes":
        bad.append("a row remapping failed (replace the GPU: RMA)")
    if g.sram_threshold_exceeded == "Yes":
        bad.append("SRAM uncorrectable errors exceeded NVIDIA's RMA threshold")
    if bad:
        return Verdict(Status.FAIL, "; ".join(bad), "within the limits", "; ".join(bad), data)
    if not readings and g.rows_failure is None and g.sram_threshold_exceeded is None:
        return Verdict(Status.SKIP, "memory error counts are not reported by this GPU "
                       f"(N/A: {unreported_why(g)})", "within the limits", "not reported",
                       data)
    seen = [f"{n} {what}" + (f" (at most {most})" if most is not None else "")
            for _, what, n, most, _ in readings]
    if g.rows_failure is not None:
        seen.append("no row remapping failure")
    corr, unc = g.rows_remapped
    if unc or corr:
        seen.append(f"{unc or 0} row(s) remapped for uncorrectable and {corr or 0} for "
                    "correctable errors (spare rows in use, not a finding)")
    if volatile_total(g) is None:
        seen.append(f"ECC error counts not reported (N/A: {_ecc_why(g)})")
    return Verdict(Status.PASS, "; ".join(seen), "within the limits", "; ".join(seen), data)
