"""``memory.thp``: transparent hugepages are in an allowed mode, now and at boot.

Live (Documentation/admin-guide/mm/transhuge.rst): the bracketed choice of
``/sys/kernel/mm/transparent_hugepage/{enabled,defrag}``; absent means the kernel has no THP
support (skipped).  At boot (:mod:`aiaudit.linux.kernel.thp`): the kernel default
(``CONFIG_TRANSPARENT_HUGEPAGE_{ALWAYS,MADVISE,NEVER}`` for ``enabled``; ``madvise`` for
``defrag``, mm/huge_memory.c), then ``transparent_hugepage=`` on the command line the
bootloader will pass (``enabled`` only), enabled services writing the file, tuned ``[vm]
transparent_hugepages`` / ``transparent_hugepage.defrag``.

Decide: :func:`aiaudit.core.verdict.verdict`.  Fix: the kernel parameter for ``enabled``, a
oneshot unit for ``defrag``; a tuned profile or unit that sets another value is named.
"""

from __future__ import annotations

from typing import Any, Iterator

from aiaudit.api import (
    Aspect,
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
from aiaudit.linux import sysfs
from aiaudit.linux.kernel.thp import FIX_UNIT, THP, ThpBoot, boot_thp, cmdline_unknown
from aiaudit.linux.sysfs import read_opt
from aiaudit.linux.systemd.bootcmds import oneshot_unit

THP_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["setting", "allowed"],
    "properties": {
        "setting": {"enum": ["enabled", "defrag"]},
        "allowed": {"type": "array", "minItems": 1, "items": {
            "enum": ["always", "madvise", "never", "defer", "defer+madvise"]}},
        "persist": {"type": "boolean", "default": True},
    },
}


def _runtime(host: Host, what: str, path: str
             ) -> tuple[str | None, list[Evidence], Result | None]:
    """(the active mode, its evidence, ``None``) live; a skip or error result last when
    the file is absent or unparsable; (``None``, [], ``None``) offline."""
    if not host.live:
        return None, [], None
    text = read_opt(host, path)
    if text is None:
        return None, [], Result(Status.SKIP, what, f"{path} is absent: the kernel has no "
                                "transparent hugepage support",
                                evidence=(Evidence.runtime(path),))
    try:
        active = sysfs.parse_choice(text).active
    except ParseError as exc:
        return None, [], Result(Status.ERROR, what, f"{path}: {exc}",
                                evidence=(Evidence.runtime(path, text),))
    return active, [Evidence.runtime(path, text)], None


def _remediation(host: Host, setting: str, path: str, val: str, competing: list[str]
                 ) -> Remediation:
    """``enabled``: the kernel parameter (tuned or units that set another value named);
    ``defrag``: a oneshot unit; both applied now through sysfs on a live host (scanning an
    image, a command would act on the machine it is pasted on)."""
    from aiaudit.linux.rootkind import NO_UNITS, image_followup, units_run

    now = (Snippet.command(f"echo {val} > {path}", "apply now"),) if host.live else ()
    also = " and now through sysfs" if host.live else ""
    if setting == "enabled":
        from aiaudit.linux.boot import cmdline as boot  # only for a failing rule

        return boot.params_remediation(host, boot.load(host), [f"transparent_hugepage={val}"],
                                       tail=" Apply it now through sysfs.", now=now,
                                       manual="; ".join(competing))
    if not units_run(host):  # a unit would be a file nothing reads
        return Remediation(f"Set THP defrag to {val} at boot with this root's init "
                           f"system{also}.", now, manual="; ".join([*competing, NO_UNITS]))
    return Remediation(f"Set THP defrag to {val} at boot with a oneshot unit "
                       f"({FIX_UNIT}){also}.", (
                           Snippet.file(FIX_UNIT, oneshot_unit(
                               f"THP defrag {val}", f"echo {val} > {path}")),
                           Snippet.enable(FIX_UNIT.rsplit("/", 1)[1], "run it at boot"), *now),
                       manual="; ".join(competing), followup=image_followup(host))



def apply_boot(path: str, b: ThpBoot) -> Remediation:
    """The fix for drift (the boot configuration is right, the running kernel is not):
    restart the unit that writes the value at boot (tuned or a service), else write the
    command line's value through sysfs; nothing to persist, no parameter to add."""
    if b.unit:
        cmd = f"systemctl restart {b.unit}"
        return Remediation(f"Apply the configured THP mode {b.value}: `{cmd}` writes it "
                           "as at boot; the boot configuration is already right.",
                           (Snippet.command(cmd, f"{b.unit} writes {path} as at boot"),))
    cmd = f"echo {b.value} > {path}"
    return Remediation(f"Apply the configured THP mode {b.value} now through sysfs "
                       f"({b.source}, already right, applies it at every boot).",
                       (Snippet.command(cmd, "apply the boot value now"),))


def run(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate a THP rule: gather the live mode and the boot value, decide, report."""
    host, p = ctx.host, ctx.params
    setting, allowed = p["setting"], list(p["allowed"])
    want = "one of " + ", ".join(allowed)
    what = f"transparent_hugepage/{setting}"
    path = f"{THP}/{setting}"
    from aiaudit.linux.rootkind import cmdline_skip, container_skip

    runtime, ev, early = _runtime(host, what, path)
    early = container_skip(host, what, "transparent hugepage policy") or early
    if early is not None:
        yield early
        return
    try:
        b = boot_thp(host, setting, allowed)
        unknown = cmdline_unknown(host) if setting == "enabled" and not b.explicit else ""
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, what, f"boot-time {what} cannot be determined: {exc}",
                     evidence=Evidence.unreadable(exc))
        return
    if unknown:  # transparent_hugepage= on the provisioner's command line decides
        yield cmdline_skip(host, what, unknown)
        return
    ev += b.evidence
    boot_ok = None if b.value is None else b.value in allowed
    if host.live and not p.get("persist", True) and runtime in allowed:
        boot_ok = True
    status, aspect, msg = verdict(host.live, None if runtime is None else runtime in allowed,
                                  boot_ok, boot_set=b.explicit, what=what,
                                  runtime_txt=str(runtime),
                                  boot_txt=f"{b.value} ({b.source})" if b.value else b.source,
                                  want=want)
    rem = _remediation(host, setting, path, allowed[0], b.competing) \
        if status is Status.FAIL else None
    if status is Status.FAIL and aspect is Aspect.DRIFT and runtime not in allowed:
        rem = apply_boot(path, b)  # the boot configuration is right: apply it, only
    yield Result(status, what, msg, expected=want, actual=runtime or b.value, aspect=aspect,
                 evidence=tuple(ev), remediation=rem)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``memory.thp``."""
    return [CheckSpec(
        id="memory.thp", title="Transparent hugepages are in an allowed mode",
        run=run, params_schema=THP_SCHEMA,
        description=(
            "Live: /sys/kernel/mm/transparent_hugepage/<setting>. Boot: kernel "
            "config default, transparent_hugepage= on the boot command line, units "
            "writing the file, tuned [vm]."))]
