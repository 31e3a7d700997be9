"""``memory.swap``: swap is off, now and at boot.

Live: ``/proc/swaps`` (mm/swapfile.c ``swap_show``).  At boot
(:mod:`aiaudit.linux.storage.swap`): ``/etc/fstab`` swap lines (not ``noauto``), enabled
``.swap`` units (not masked), zram-generator devices (zram-generator.conf(5)).  GPT
auto-discovered swap partitions are not visible offline.  With ``must_be_off: false`` the
rule does not apply.

Decide: :func:`aiaudit.core.verdict.verdict`.  The fix comments out the fstab swap lines in
place, masks the units, overrides the zram-generator configuration and runs ``swapoff -a``;
where nothing configured turns swap on (only the running state is wrong), ``swapoff -a``
alone.
"""

from __future__ import annotations

from typing import Any, Iterator

from aiaudit.api import (
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.verdict import verdict
from aiaudit.linux.storage import fstab, swap
from aiaudit.linux.storage.swap import FSTAB

SWAP_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "must_be_off": {"type": "boolean", "default": True,
                        "description": "fail when swap is active or configured"},
        "persist": {"type": "boolean", "default": True},
    },
}
NOTHING = ("no swap configured (fstab, .swap units, zram-generator; GPT auto-discovered swap "
           "partitions are not visible offline)")


def _active(host: Host) -> tuple[list[str], list[Evidence]]:
    """Active swap areas (live), with the /proc/swaps evidence."""
    if not host.live:
        return [], []
    swaps = fstab.parse_swaps(host.read_text("/proc/swaps"))
    active = [f"{s.filename} ({s.type}, {s.size_kb} kB)" for s in swaps]
    return active, [Evidence.runtime("/proc/swaps", "; ".join(active) or "none")]


def _configured(host: Host) -> tuple[list[str], list[str], list[Evidence]]:
    """(swap the next boot turns on, the enabled .swap units among it, evidence)."""
    configured: list[str] = []
    ev: list[Evidence] = []
    for m in swap.fstab_swaps(host.try_read_text(FSTAB) or ""):
        configured.append(f"{m.spec} ({FSTAB.lstrip('/')}:{m.line})")
        ev.append(Evidence.file(FSTAB, m.line, m.raw.strip()))
    units = swap.enabled_swap_units(host)
    for unit, wants in units:
        configured.append(f"{unit} (enabled in {wants.lstrip('/')})")
        ev.append(Evidence.file(f"{wants}/{unit}"))
    for f, line, sec in swap.zram_swaps(host):
        configured.append(f"zram-generator {sec} ({f.lstrip('/')}:{line})")
        ev.append(Evidence.file(f, line, f"[{sec}]"))
    return configured, [unit for unit, _ in units], ev


def _remediation(configured: list[str], units: list[str]) -> Remediation:
    """Swap off now, and out of fstab, units and zram-generator."""
    from aiaudit.core import edits  # the fix's edit script: only for a failure

    # /etc/fstab is not a drop-in: the fix edits it in place (also under ROOT=)
    snips = [Snippet.edit(FSTAB, edits.COMMENT_SWAP, "comment out swap lines")]
    snips += [Snippet.mask(u, "stop the swap unit at boot") for u in units]
    if any(c.startswith("zram-generator") for c in configured):
        snips.append(Snippet.file("/etc/systemd/zram-generator.conf",
                                  "# no zram swap on training hosts (aiaudit)\n",
                                  "an empty /etc config overrides the vendor one"))
    snips.append(Snippet.command("swapoff -a", "turn swap off now"))
    return Remediation("Turn swap off now and remove it from the boot configuration.",
                       tuple(snips))


SWAPOFF = Remediation(
    "Turn swap off now with `swapoff -a`; the boot configuration turns none on (fstab, "
    ".swap units, zram-generator), so it is already right. If swap is back after a reboot, "
    "a GPT auto-discovered swap partition or a script running swapon turned it on.",
    (Snippet.command("swapoff -a", "turn swap off now"),))
"""The fix for drift: swap is on now, nothing configured turns it on at boot."""


def run(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate the swap rule: gather active and configured swap, decide, report."""
    host, p = ctx.host, ctx.params
    if not p.get("must_be_off", True):
        yield Result(Status.SKIP, "swap", "the ruleset allows swap (must_be_off: false)")
        return
    try:
        active, ev = _active(host)
        configured, units, boot_ev = _configured(host)
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "swap", f"swap configuration cannot be determined: {exc}",
                     evidence=Evidence.unreadable(exc))
        return
    boot_txt = ", ".join(configured) if configured else NOTHING
    boot_ok = not configured
    if host.live and not p.get("persist", True) and not active:
        boot_ok = True
    now = ", ".join(active) or "off"
    status, aspect, msg = verdict(host.live, not active, boot_ok, boot_set=bool(configured),
                                  what="swap", runtime_txt=now, boot_txt=boot_txt, want="off")
    rem = None
    if status is Status.FAIL:  # nothing configured: only the running state is wrong
        rem = SWAPOFF if active and not configured else _remediation(configured, units)
    yield Result(status, "swap", msg, expected="off", actual=now if host.live else boot_txt,
                 aspect=aspect, evidence=(*ev, *boot_ev), remediation=rem)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``memory.swap``."""
    return [CheckSpec(
        id="memory.swap", title="Swap is off",
        run=run, params_schema=SWAP_SCHEMA,
        description=(
            "Live: /proc/swaps. Boot: /etc/fstab swap lines, enabled .swap units, "
            "zram-generator config."))]
