"""``fabric.nvlink_errors``: no NVLink link retrained or logged errors beyond its limits since
the previous scan (live, real ``/``, with ``--state``).

Gathers ``nvidia-smi nvlink --errorcounters`` (run once per scan,
:mod:`aiaudit.linux.gpu.nvlink`), the boot id and the uptime, and the previous scan's values
for the same rule and GPU (``Result.data``, kept in the ``--state`` file as
``infiniband.link_errors`` keeps its own).  Decides per GPU and link, on the growth since
the previous scan:

- ``recovery`` (``Recovery Errors``; NVLink 5: failed link recovery events: the link went
  into recovery, each time stalling traffic — flapping) and ``replay`` (transmit replays
  after a receive error): any growth fails by default, as NVIDIA DCGM's health watch decides
  (``DcgmHealthWatch::MonitorLwLink``: a replay or recovery count grown by
  ``DCGM_LIMIT_MAX_LWLINK_ERROR`` = 1 is a failure);
- ``packet`` (NVLink 5 errors that FEC and replay did not absorb: malformed packets, buffer
  overruns, Rx errors, Tx discards, effective errors): more than 10 between scans by
  default (aiaudit's choice; DCGM's rule for them is not public);
- ``crc`` (receive CRC errors; NVLink 5's raw symbol errors): corrected by replay or FEC,
  noise unless the rate is high: more than ``max_crc_per_second`` (default 100 per second
  over the time between the scans: DCGM's ``DCGM_LIMIT_MAX_LWLINK_CRC_ERROR``, "CRC errors
  only matter at rates of 100+ per second"); ``max_growth.crc`` also judges the growth.

Without a previous scan, after a reboot (boot id) or when a counter went down (``nvidia-smi
nvlink -r``, driver reload), the values are the new baseline (skip, recorded in the result
for the next ``--state`` run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Status,
    hookimpl,
)

if TYPE_CHECKING:
    from aiaudit.core.host import Host
    from aiaudit.linux.gpu.nvlink import GpuCounters

CMD = "nvidia-smi nvlink --errorcounters"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
UPTIME = "/proc/uptime"
DEFAULT_MAX_GROWTH = {"recovery": 0, "replay": 0, "packet": 10}
"""Growth tolerated between two scans (``crc`` is judged by rate unless set here)."""
DEFAULT_CRC_PER_SECOND = 100.0
"""NVIDIA DCGM ``dcgm_gpu_hardware_limits.h``: "CRC errors only matter at rates of 100+
per second"."""
CATEGORIES = ("recovery", "replay", "packet", "crc")
REQUIRE_GPU: dict[str, Any] = {
    "type": "boolean", "default": False,
    "description": "fail instead of skip when there is no NVIDIA GPU and driver"}
FIX = Remediation("Drain the node and find the link: `nvidia-smi nvlink -e` (per-link "
                  "counters), Xid 74 and SXid lines in the kernel log; reset the GPU or reboot "
                  "and watch whether the count grows again; a link that keeps retraining "
                  "needs the baseboard, NVSwitch tray or NVLink bridge serviced.  Clear the "
                  "counters with `nvidia-smi nvlink -r` after the repair.")


def _gate(host: Host, params: Mapping[str, Any]) -> Result | None:
    from aiaudit.linux.gpu import driver

    blocked = driver.gate(host, params, "the NVLink error counters")
    if blocked:
        return blocked
    if not host.allow_commands:
        return Result(Status.SKIP, "nvidia-smi", "the NVLink error counters are read from "
                      "nvidia-smi nvlink, which is run only when scanning the real / live; "
                      "it is never run from a scanned root or a --live snapshot")
    return None


def _uptime(host: Host) -> float | None:
    text = host.try_read_text(UPTIME)
    try:
        return float(text.split()[0]) if text else None
    except (ValueError, IndexError):
        return None


def previous(settings: Mapping[str, Any], rule_id: str) -> dict[str, dict[str, Any]] | None:
    """Per GPU subject, what the previous scan's results of ``rule_id`` recorded
    (``counters``: link -> category -> value, ``boot_id``, ``uptime_s``); ``None`` without
    a previous scan."""
    run = settings.get("previous")
    findings = getattr(run, "findings", None)
    if findings is None:
        return None
    out: dict[str, dict[str, Any]] = {}
    for f in findings:
        data = f.result.data if f.rule_id == rule_id else None
        if not isinstance(data, dict) or not isinstance(data.get("counters"), dict):
            continue
        counters = data["counters"]
        kept = {str(k): {c: v for c, v in cats.items() if c in CATEGORIES
                         and isinstance(v, int) and not isinstance(v, bool) and v >= 0}
                for k, cats in counters.items() if isinstance(cats, dict)}
        boot, up = data.get("boot_id"), data.get("uptime_s")
        out[f.result.subject] = {"counters": kept,
                                 "boot_id": boot if isinstance(boot, str) else None,
                                 "uptime_s": up if isinstance(up, (int, float))
                                 and not isinstance(up, bool) else None}
    return out


def _base(now: dict[str, dict[str, int]], before: dict[str, Any] | None,
          boot: str | None) -> dict[str, dict[str, int]]:
    """The previous values to compare with, or ``{}`` when the scan is a new baseline."""
    if before is None:
        return {}
    if before["boot_id"] and boot and before["boot_id"] != boot:
        return {}
    base: dict[str, dict[str, int]] = before["counters"]
    if not any(base.values()):
        return {}
    for link, cats in now.items():
        if any(c in base.get(link, {}) and v < base[link][c] for c, v in cats.items()):
            return {}
    return base


def _over(link: str, cat: str, growth: int, elapsed: float | None,
          limits: Mapping[str, Any]) -> str | None:
    """Why one counter's growth fails, or ``None``."""
    cap = limits["max_growth"].get(cat)
    if cap is not None and growth > cap:
        return f"link {link} {cat} +{growth} (limit {cap})"
    if cat == "crc" and elapsed and growth > 0 and growth / elapsed >= limits["crc_rate"]:
        return (f"link {link} crc +{growth} in {elapsed:.0f} s ({growth / elapsed:.0f}/s, "
                f"limit {limits['crc_rate']:g}/s)")
    return None


def _elapsed(before: dict[str, Any] | None, uptime: float | None) -> float | None:
    """Seconds between the previous scan and this one (same boot), when both uptimes are
    known."""
    then = before["uptime_s"] if before else None
    return uptime - then if uptime is not None and then is not None and uptime > then \
        else None


def _compare(now: dict[str, dict[str, int]], base: dict[str, dict[str, int]],
             elapsed: float | None, limits: Mapping[str, Any]
             ) -> tuple[dict[str, int], list[str]]:
    """(growth per category over all links, why each grown counter fails)."""
    growth: dict[str, int] = {}
    bad: list[str] = []
    for link, cats in now.items():
        for cat, value in cats.items():
            if cat not in CATEGORIES or cat not in base.get(link, {}):
                continue
            grown = value - base[link][cat]
            growth[cat] = growth.get(cat, 0) + grown
            over = _over(link, cat, grown, elapsed, limits)
            if over:
                bad.append(over)
    return growth, bad


def judge_gpu(g: GpuCounters, before: dict[str, Any] | None, boot: str | None,
              uptime: float | None, limits: Mapping[str, Any], have_previous: bool
              ) -> Result:
    """One GPU's counters against the previous scan's (pure)."""
    from aiaudit.linux.gpu.nvlink import categories

    now = {str(k): categories(v) for k, v in g.links}
    data: dict[str, Any] = {"counters": now, "boot_id": boot, "uptime_s": uptime}
    totals = {c: sum(v.get(c, 0) for v in now.values()) for c in CATEGORIES}
    ev = (Evidence.command(CMD, f"GPU {g.index}: " + ", ".join(
        f"{c} {n}" for c, n in totals.items() if any(c in v for v in now.values()))),)
    base = _base(now, before, boot)
    if not base:
        why = ("no previous scan (run with --state FILE to compare)" if not have_previous
               else "no comparable previous value (first time seen, reboot or counters "
                    "reset)")
        return Result(Status.SKIP, g.subject, f"{g.name}: {why}; baseline recorded for "
                      f"{len(now)} links", aspect=Aspect.RUNTIME, evidence=ev, data=data)
    elapsed = _elapsed(before, uptime)
    growth, bad = _compare(now, base, elapsed, limits)
    data["growth"] = growth
    summary = ", ".join(f"{c} +{n}" for c, n in growth.items()) or "nothing compared"
    span = f" in {elapsed:.0f} s" if elapsed else ""
    if bad:
        return Result(Status.FAIL, g.subject, f"{g.name}: NVLink errors since the previous "
                      f"scan{span}: {'; '.join(bad[:8])}" + (f" (+{len(bad) - 8} more)"
                                                             if len(bad) > 8 else ""),
                      expected=_expected(limits), actual=summary, aspect=Aspect.RUNTIME,
                      evidence=ev, data=data, remediation=FIX)
    return Result(Status.PASS, g.subject, f"{g.name}: no NVLink error growth beyond the "
                  f"limits since the previous scan{span} ({summary})",
                  expected=_expected(limits), actual=summary, aspect=Aspect.RUNTIME,
                  evidence=ev, data=data)


def _expected(limits: Mapping[str, Any]) -> str:
    caps = ", ".join(f"{k} +{v}" for k, v in sorted(limits["max_growth"].items()))
    return f"at most {caps}; crc below {limits['crc_rate']:g}/s"


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result per GPU with NVLink counters."""
    host, p = ctx.host, ctx.params
    blocked = _gate(host, p)
    if blocked:
        yield blocked
        return
    from aiaudit.linux.gpu import nvlink

    got = nvlink.errors(host, float(p["timeout"]))
    if isinstance(got, str):
        yield Result(Status.ERROR, "nvidia-smi nvlink", got, evidence=(Evidence.command(CMD),))
        return
    gpus = [g for g in got if g.links]
    if not gpus:
        yield Result(Status.SKIP, "nvlink", f"no NVLink error counters: {CMD} lists no "
                     "link (no NVLink on this host)", evidence=(Evidence.command(CMD),))
        return
    limits = {"max_growth": {**DEFAULT_MAX_GROWTH, **p["max_growth"]},
              "crc_rate": float(p["max_crc_per_second"])}
    prev = previous(ctx.settings, ctx.rule_id)
    boot_text = host.try_read_text(BOOT_ID)
    boot = boot_text.strip()[:64] if boot_text else None
    uptime = _uptime(host)
    for g in gpus:
        yield judge_gpu(g, (prev or {}).get(g.subject), boot, uptime, limits,
                        prev is not None)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``fabric.nvlink_errors``."""
    return [CheckSpec(
        id="fabric.nvlink_errors",
        title="No NVLink link retrained or logged errors beyond its limits since the "
              "previous scan",
        run=run, modes=("live",),
        params_schema={"type": "object", "additionalProperties": False, "properties": {
            "require_gpu": REQUIRE_GPU,
            "max_growth": {"type": "object", "additionalProperties": False,
                           "properties": {c: {"type": "integer", "minimum": 0}
                                          for c in CATEGORIES},
                           "default": dict(DEFAULT_MAX_GROWTH),
                           "description": "growth tolerated per link between two scans, "
                                          "per counter class (a class left out keeps its "
                                          "default; crc has none: judged by rate)"},
            "max_crc_per_second": {"type": "number", "minimum": 0,
                                   "default": DEFAULT_CRC_PER_SECOND,
                                   "description": "CRC/symbol errors per second between "
                                                  "scans (NVIDIA DCGM: 100)"},
            "timeout": {"type": "number", "minimum": 1, "maximum": 60, "default": 15,
                        "description": "seconds nvidia-smi nvlink may take (run once per "
                                       "scan)"}}},
        description="Live on the real / only: nvidia-smi nvlink --errorcounters compared "
                    "with the previous --state scan per link: any recovery (the link "
                    "retrained) or replay error (NVIDIA DCGM's health watch), more than 10 "
                    "NVLink-5 packet errors (aiaudit's choice), or CRC errors at 100 per "
                    "second or more (DCGM's limit) fails; the first scan, a reboot or a counter "
                    "reset records the baseline.")]
