"""``kernel.sysctl``: one parametrised check for every sysctl rule.

Gather: live, the runtime value comes from ``/proc/sys``; the persisted value is what
systemd-sysctl will write at the next boot (directories, masking, strcmp order, last
assignment wins, explicit beats glob, ``-key`` exclusions; see
:mod:`aiaudit.linux.sysctl.conf`, shared per run by :mod:`aiaudit.linux.sysctl.resolved`),
with the procps ``sysctl --system`` result alongside when it differs (``/etc/sysctl.conf``
read last, older procps orders and no globs), then ufw's re-apply and tuned when it is
enabled (its profile's ``[sysctl]``, with the admin files re-applied after it:
:mod:`aiaudit.linux.sysctl.tuned`).  Which program applies the files, ufw and build-config
kernel defaults: :mod:`aiaudit.linux.sysctl.boot`.

Decide: the rule's expectation (:mod:`aiaudit.core.ruleset.predicates`) on the runtime and
the boot value (:func:`decide`).  A failure says which side is wrong: ``runtime``,
``persisted`` or ``drift`` (right now but reverts at reboot, or configured but not applied).
The fix is a drop-in that sorts last (:mod:`aiaudit.linux.sysctl.dropin`), or the line to
edit when no drop-in can win.

Sources: systemd ``src/sysctl/sysctl.c``, procps-ng ``src/sysctl.c``, sysctl.d(5), tuned
``plugins/plugin_sysctl.py``, ufw ``ufw-init-functions``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterator, Mapping

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
from aiaudit.core.errors import HostError, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.core.ruleset import predicates
from aiaudit.core.ruleset.predicates import Predicate
from aiaudit.core.startup.records import record
from aiaudit.linux.sysctl import boot as sysctl_boot
from aiaudit.linux.sysctl import conf as sp
from aiaudit.linux.sysctl.dropin import dropin_path
from aiaudit.linux.sysctl.files import SysctlConfig
from aiaudit.linux.sysctl.resolved import Resolved, resolved
from aiaudit.linux.sysctl.tuned import TunedDecision, tuned_decide, tuned_reapplies

PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["key"],
    "properties": {
        "key": {"type": "string", "minLength": 1, "pattern": "^[^*?\\[\\]\\s=]+$",
                "description": "sysctl key, dotted or slash form"},
        # op/value, min/max, set and per-field expectations (aiaudit.core.ruleset.predicates)
        **predicates.schema_properties(),
        "kernel_default": {"type": ["integer", "string"],
                           "description": "value at boot when no file sets the key"},
        "missing": {"enum": ["skip", "fail", "pass"], "default": "skip",
                    "description": "outcome when the key does not exist on the live kernel"},
        "persist": {"type": "boolean", "default": True,
                    "description": "also require the persisted (boot) value to satisfy"},
    },
    **predicates.constraint_rules(),
}


# ------------------------------------------------------------------ expectations
@record
class Expectation:
    """What a rule wants of the value (a :class:`~aiaudit.core.ruleset.predicates.Predicate`)."""

    pred: Predicate

    @classmethod
    def from_params(cls, p: Mapping[str, Any]) -> Expectation:
        """Build from rule params (see :mod:`aiaudit.core.ruleset.predicates`)."""
        return cls(Predicate.from_params(p))

    def ok(self, value: str) -> bool:
        """True if ``value`` satisfies the expectation."""
        return self.pred.ok(sp.normalize_value(value))

    def text(self) -> str:
        """Human form."""
        return self.pred.text()

    def suggest(self, current: str | None) -> str | None:
        """A value that satisfies the expectation, changing as little of ``current`` as
        possible; ``None`` if no single value can be proposed."""
        return self.pred.suggest(current)


def printable(text: str) -> str:
    """``text`` with control characters shown as ``\\xNN`` (values end up in reports)."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


# ------------------------------------------------------------------ gather: the boot value
@record(frozen=False)
class Boot:
    """What the scanned root writes to the key at boot, and why (gathered by
    :func:`gather_boot`)."""

    dec: sp.Decision
    """The boot applier's decision on the sysctl files."""
    init: sysctl_boot.Applier
    default: str | None
    """The kernel default (derived from the build config, else the rule's)."""
    kd: sysctl_boot.KernelDefault | None
    value: str | None
    """The value at boot (``None``: unknown)."""
    text: str
    """The persisted value in words, for messages."""
    is_set: bool
    """True when a line (not a kernel default) decides."""
    fix_at: sp.Decision
    """The decision whose deciding line a manual fix would change."""
    target: str | None
    """The drop-in the fix goes to (``None``: edit the deciding line)."""
    tuned: TunedDecision | None = None
    note: str = ""
    """What procps' ``sysctl --system`` would do differently (appended to messages)."""


def gather_boot(host: Host, key: str, display: str, params: Mapping[str, Any],
                evidence: list[Evidence], data: dict[str, Any]) -> Boot:
    """The boot value of ``key``: the applier's decision, the kernel default, then ufw and
    tuned writing after it.  Appends the evidence and report data as it goes."""
    res = resolved(host)
    dec, other, init = _decisions(host, res, key, data)
    kd = _kernel_default(host, key)
    dflt = kd.value if kd is not None else params.get("kernel_default")
    default = None if dflt is None else str(dflt)
    td = _tuned(host, res, key, data)
    _file_evidence(dec, kd, default, display, evidence, data)
    note = _procps_note(res.cfg, dec, other, evidence, data)
    boot = Boot(dec, init, default, kd, dec.value if dec.value is not None else default,
                persisted_text(dec, kd, default, init), dec.value is not None, dec,
                _target(res, init, dec, key), td, note)
    _apply_ufw(host, boot, key, evidence, data)
    if td is not None:  # tuned starts after systemd-sysctl and writes its profile
        boot.value, boot.text, boot.is_set = td.value, td.text, True
        evidence.append(td.evidence)
        data["tuned"] = {"value": td.value, "source": td.evidence.source,
                         "reapplied": td.reapplied}
    if boot.value is None and dec.excluded_by is None and not res.cfg.problems:
        # nothing sets the key and its default is unknown: say what was looked for (with
        # an unreadable file the value is unknown: that file is the evidence)
        why = unknown_default(host, key, display, kd)
        evidence.append(Evidence.default(searched(host, res.cfg, init, display), why))
        if boot.text == "not set (kernel default unknown)":  # say why where it is said
            boot.text = f"not set ({why})"
    return boot


def _for_every_default(exp: Any, boot: Boot) -> bool | None:
    """Whether the rule holds for every value the unknown kernel default can have
    (``True``/``False``), or depends on which (``None``); the boot text names the range."""
    assert boot.kd is not None
    answers = {exp.ok(c) for c in boot.kd.candidates}
    return answers.pop() if len(answers) == 1 else None


def _kernel_default(host: Host, key: str) -> sysctl_boot.KernelDefault | None:
    """The default the kernel that boots gives ``key``: from its build config, else from
    its builder's patch (a value of ``None``: unknown)."""
    kd = sysctl_boot.kernel_default(host, key)
    if kd is not None:
        return kd
    from aiaudit.linux.sysctl.patched import patched_default

    pd = patched_default(host, key)
    return None if pd is None else sysctl_boot.KernelDefault(pd.value, pd.text, pd.evidence)


def _decisions(host: Host, res: Resolved, key: str, data: dict[str, Any]
               ) -> tuple[sp.Decision, sp.Decision | None, sysctl_boot.Applier]:
    """(the applier's decision, procps' when systemd-sysctl applies, the applier)."""
    dec = res.systemd_decide(key)
    pdec = res.procps_decide(key)
    init = sysctl_boot.applier(host)
    if init.name == "procps":  # no systemd: procps' init script runs `sysctl --system`
        data["applier"] = {"program": "procps", "reason": init.reason}
        return pdec, None, init
    return dec, pdec, init


def _tuned(host: Host, res: Resolved, key: str, data: dict[str, Any]) -> TunedDecision | None:
    """What tuned writes at boot; an unreadable profile is noted in ``data``, not fatal."""
    try:
        return tuned_decide(host, res, key)
    except (HostError, ParseError) as exc:
        data["tuned_error"] = str(exc)
        return None


def _file_evidence(dec: sp.Decision, kd: sysctl_boot.KernelDefault | None,
                   default: str | None, display: str, evidence: list[Evidence],
                   data: dict[str, Any]) -> None:
    """The deciding line (or exclusion), else where the kernel default comes from."""
    if dec.entry is not None:
        evidence.append(Evidence.file(dec.entry.file, dec.entry.line, dec.entry.raw.strip()))
        data["persisted"] = {"value": dec.value, "source": dec.entry.source}
    elif dec.excluded_by is not None:
        evidence.append(Evidence.file(dec.excluded_by.file, dec.excluded_by.line,
                                      dec.excluded_by.raw.strip()))
    if kd is not None and dec.value is None:
        evidence.extend(kd.evidence)
    elif default is not None and dec.value is None:
        evidence.append(Evidence.default(f"kernel default for {display}", default))


def _procps_note(cfg: SysctlConfig, dec: sp.Decision, other: sp.Decision | None,
                 evidence: list[Evidence], data: dict[str, Any]) -> str:
    """The note when procps' ``sysctl --system`` would leave another value than
    systemd-sysctl writes (empty when they agree or procps decides)."""
    if other is None or (
            (other.value is None) == (dec.value is None)
            and sp.normalize_value(other.value or "") == sp.normalize_value(dec.value or "")):
        return ""
    src = other.entry.source if other.entry else "nothing"
    ver = f" {cfg.procps_version}" if cfg.procps_version else ""
    left = "it unchanged" if other.value is None else f"'{other.value}'" \
        if not other.value.strip() else other.value
    data["procps"] = {"value": other.value, "source": src if other.entry else None}
    if other.entry is not None and other.entry is not dec.entry:
        evidence.append(Evidence.file(other.entry.file, other.entry.line,
                                      other.entry.raw.strip()))
    return (f" Note: `sysctl --system` (procps{ver}) would leave {left} (from {src}), "
            "but systemd-sysctl decides at boot.")


def persisted_text(dec: sp.Decision, kd: sysctl_boot.KernelDefault | None,
                   default: str | None, init: sysctl_boot.Applier) -> str:
    """The persisted value in words: the deciding line, an exclusion or the default."""
    if dec.value is not None:
        text = f"{dec.value} (set at {dec.entry.source})" if dec.entry else dec.value
        if init.name == "procps":
            text += ", by `sysctl --system` (no systemd on this root)"
        return text
    if dec.excluded_by is not None:
        return f"not set (excluded at {dec.excluded_by.source})"
    if kd is not None:
        return f"not set ({kd.text})"
    if default is not None:
        return f"not set (kernel default {default})"
    return "not set (kernel default unknown)"


def _target(res: Resolved, init: sysctl_boot.Applier, dec: sp.Decision, key: str
            ) -> str | None:
    """The drop-in for the fix; ``None`` when procps decides from /etc/sysctl.conf, which
    it reads after every drop-in."""
    if init.name == "procps" and dec.entry is not None and dec.entry.file == sp.SYSCTL_CONF:
        return None
    return dropin_path(res, key)


def _apply_ufw(host: Host, boot: Boot, key: str, evidence: list[Evidence],
               data: dict[str, Any]) -> None:
    """ufw-init's ``sysctl -p`` runs after the boot applier: its value wins."""
    ud = sysctl_boot.ufw_decide(host, boot.init, key)
    if ud is None:
        return
    udec, ufw = ud
    assert udec.entry is not None
    boot.value, boot.is_set = udec.value, True
    boot.text = (f"{udec.value} (re-applied from {udec.entry.source} when ufw starts, "
                 f"after {boot.init.name}: {ufw.reason})")
    evidence.append(Evidence.file(udec.entry.file, udec.entry.line, udec.entry.raw.strip()))
    data["ufw"] = {"value": udec.value, "source": udec.entry.source}
    boot.fix_at, boot.target = udec, None


def searched(host: Host, cfg: SysctlConfig, init: sysctl_boot.Applier, display: str) -> str:
    """Where the boot value of ``display`` was looked for, in display form (root-relative),
    for the ``default`` evidence when nothing sets it: the directories the boot applier
    reads (:attr:`SysctlConfig.dirs`, or procps' and ``/etc/sysctl.conf``), ufw's sysctl
    file when ufw re-applies one, and the tuned profile when tuned starts."""
    from aiaudit.linux.tuned import profiles as tuned

    places = [d.lstrip("/") for d in (cfg.procps_dirs if init.name == "procps" else cfg.dirs)]
    if init.name == "procps":
        places.append(sp.SYSCTL_CONF.lstrip("/"))
    ufw = sysctl_boot.ufw_sysctl(host, init)
    if ufw is not None and ufw.path:
        places.append(f"{ufw.path.lstrip('/')} (ufw)")
    st = tuned.load(host)
    if st.active:
        places.append(f"the [sysctl] of {st.describe()}")
    listed = ", ".join(places[:-1]) + " or " + places[-1] if len(places) > 1 else places[0]
    return f"{display}: no line in {listed}"


def unknown_default(host: Host, key: str, display: str,
                    kd: sysctl_boot.KernelDefault | None = None) -> str:
    """Why the kernel default of ``key`` (slash form) is unknown, for the ``default``
    evidence: why the kernel that boots leaves it unknown (``kd``), what
    :func:`aiaudit.linux.sysctl.boot.kernel_default` looked for, or that it derives none
    for the key."""
    from aiaudit.linux.kernel.config import kernel_config_missing

    if kd is not None:
        return kd.text
    if key not in sysctl_boot.DERIVED_DEFAULTS:
        return (f"kernel default unknown: {display} has no default that can be read from "
                "the kernel's files (a rule may state it as kernel_default)")
    cmdline = "no numa_balancing= on the kernel command line, " \
        if key == "kernel/numa_balancing" else ""
    return f"kernel default unknown: {cmdline}{kernel_config_missing(host)}"


# ------------------------------------------------------------------ decide
@record
class Verdict:
    """One result before remediation, evidence and data are attached."""

    status: Status
    aspect: Aspect
    message: str
    actual: str | None
    problems: bool = False
    """True when the unreadable files are evidence too."""


def decide(display: str, want: str, runtime: str | None, boot: Boot, boot_ok: bool | None,
           rt_ok: bool | None, unknown: str, check_persist: bool) -> Verdict:
    """The outcome from the runtime value (``None`` offline) and the boot value, and
    whether each satisfies the rule (``None``: unknown); ``unknown`` says why the boot value
    cannot be determined (unreadable files), empty when it can."""
    if runtime is None:
        return _decide_offline(display, want, boot, boot_ok, unknown)
    if not rt_ok:
        return _decide_runtime_wrong(display, want, runtime, boot, boot_ok, unknown)
    if not check_persist:
        return Verdict(Status.PASS, Aspect.RUNTIME, f"{display} is {runtime}", runtime)
    if unknown:
        return Verdict(Status.ERROR, Aspect.PERSISTED, f"{display} is {runtime} now, but the "
                       f"persisted value cannot be determined: {unknown}", runtime, True)
    if boot_ok is False:  # `actual` names both: the runtime value alone equals `expected`
        return Verdict(Status.FAIL, Aspect.DRIFT, f"{display} is {runtime} now, but at boot "
                       f"it will be {boot.text}: the setting reverts at reboot",
                       f"{runtime} now, {boot.value} at boot")
    if boot_ok is None:
        return Verdict(Status.PASS, Aspect.RUNTIME, f"{display} is {runtime}; not persisted "
                       "in any sysctl.d file (kernel default unknown to this rule, so a reboot "
                       "may change it)", runtime)
    return Verdict(Status.PASS, Aspect.RUNTIME, f"{display} is {runtime}; at boot: "
                   f"{boot.text}", runtime)


def _decide_offline(display: str, want: str, boot: Boot, boot_ok: bool | None,
                    unknown: str) -> Verdict:
    """Offline only the boot value can be judged."""
    if unknown:
        return Verdict(Status.ERROR, Aspect.PERSISTED, f"persisted value of {display} cannot "
                       f"be determined: {unknown}", None, True)
    if boot_ok:
        return Verdict(Status.PASS, Aspect.PERSISTED, f"{display} at boot: {boot.text}",
                       boot.value)
    if boot_ok is None:  # nothing sets it and the kernel default is unknown: never a FAIL
        return Verdict(Status.ERROR, Aspect.PERSISTED, f"{display} at boot: {boot.text}; "
                       f"whether it is {want} cannot be told", None)
    return Verdict(Status.FAIL, Aspect.PERSISTED, f"{display} at boot: {boot.text}; "
                   f"expected {want}", boot.value)


def _decide_runtime_wrong(display: str, want: str, runtime: str, boot: Boot,
                          boot_ok: bool | None, unknown: str) -> Verdict:
    """The runtime value fails: say whether the configuration is wrong too."""
    if unknown:
        return Verdict(Status.FAIL, Aspect.RUNTIME, f"{display} is {runtime}; expected "
                       f"{want}; the persisted value cannot be determined: {unknown}",
                       runtime, True)
    if boot_ok and boot.is_set:
        return Verdict(Status.FAIL, Aspect.DRIFT, f"{display} is {runtime} now, but the "
                       f"persisted {boot.text} is right: it was changed at runtime or never "
                       "applied", runtime)
    if boot_ok:
        return Verdict(Status.FAIL, Aspect.RUNTIME, f"{display} is {runtime} now; nothing "
                       f"persists it and the kernel default {boot.default} would be right: "
                       "something changed it at runtime", runtime)
    if boot.is_set:
        return Verdict(Status.FAIL, Aspect.PERSISTED, f"{display} is {runtime} now and the "
                       f"configuration sets {boot.text}; expected {want}", runtime)
    return Verdict(Status.FAIL, Aspect.RUNTIME, f"{display} is {runtime}; expected {want}; "
                   f"persisted: {boot.text}", runtime)


def remediation(display: str, exp: Expectation, current: str | None,
                decision: sp.Decision | None, live: bool, target: str | None) -> Remediation:
    """The fix: persist a satisfying value in the drop-in ``target`` (and apply it now when
    live), or change the deciding line when no drop-in sorts after it or no single value
    can be proposed.  A ``current`` value that already satisfies (right now, but reverts at
    reboot) is the one persisted."""
    value = current if current is not None and exp.ok(current) else exp.suggest(current)
    where = ""
    if decision is not None and decision.entry is not None:
        where = f"; or change {decision.entry.source}"
        if target is None:
            return Remediation(f"Change {decision.entry.source} so that {display} is "
                               f"{exp.text()} (no drop-in name sorts after that file).")
    if value is None or target is None:
        return Remediation(f"Set {display} so that it is {exp.text()}{where}.")
    snippets = [Snippet.file(target, f"{display} = {value}\n",
                             f"persist {display} (sorts last in /etc/sysctl.d)")]
    now = ""
    if live:
        snippets.append(Snippet.command(f"sysctl -w {display}='{value}'",
                                        f"apply {display} now"))
        now = ", and apply it now"
    return Remediation(f"Persist {display} = {value} in {target}{where}{now}.",
                       tuple(snippets))


# ------------------------------------------------------------------ results
def read_runtime(host: Host, key: str) -> str:
    """The live value of ``key`` (slash form), printable; NotFound when the kernel has no
    such key."""
    return printable(sp.normalize_value(host.read_text(f"/proc/sys/{key}")))


def run(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate one sysctl rule: runtime (live), persisted (boot), and drift."""
    host, p = ctx.host, ctx.params
    display = p["key"]
    key = sp.normalize_key(display)
    exp = Expectation.from_params(p)
    want = exp.text()
    evidence: list[Evidence] = []
    data: dict[str, Any] = {}
    runtime: str | None = None
    if host.live:
        proc_path = f"/proc/sys/{key}"
        try:
            runtime = read_runtime(host, key)
        except NotFound:
            msg = f"{display} does not exist on this kernel ({proc_path} absent)"
            yield Result(Status(p.get("missing", "skip")), display, msg, expected=want,
                         actual="absent", aspect=Aspect.RUNTIME,
                         evidence=(Evidence.runtime(proc_path),))
            return
        evidence.append(Evidence.runtime(proc_path, runtime))
        data["runtime"] = runtime
    boot = gather_boot(host, key, display, p, evidence, data)
    cfg = resolved(host).cfg
    try:
        boot_ok = None if boot.value is None else exp.ok(boot.value)
        if boot_ok is None and boot.kd is not None and boot.kd.candidates:
            boot_ok = _for_every_default(exp, boot)
        rt_ok = exp.ok(runtime) if runtime is not None else None
    except ValueError as exc:
        v = Verdict(Status.ERROR, Aspect.RUNTIME if host.live else Aspect.PERSISTED,
                    f"{display}: cannot compare the value: {exc}", runtime or boot.value)
    else:
        v = decide(display, want, runtime, boot, boot_ok, rt_ok, "; ".join(cfg.problems),
                   bool(p.get("persist", True)))
    rem = None
    if v.status is Status.FAIL and v.aspect is Aspect.DRIFT and rt_ok is False:
        rem = apply_persisted(display, boot)  # the configuration is right: apply it
    elif v.status is Status.FAIL:
        rem = _fix(host, display, exp, runtime or boot.value, boot, now=rt_ok is not True)
    extra = cfg.problem_evidence if v.problems else ()
    if v.status is Status.FAIL and v.aspect is not Aspect.RUNTIME:
        extra = (*extra, *_overridden(host, boot, data))
    yield Result(v.status, display, v.message + boot.note, expected=want, actual=v.actual,
                 aspect=v.aspect, evidence=(*evidence, *extra), remediation=rem, data=data)


def _overridden(host: Host, boot: Boot, data: dict[str, Any]) -> tuple[Evidence, ...]:
    """The lines the persisted value overrode, each saying why it lost (a site's
    10-fix.conf read before a vendor's 50-vendor.conf, a vendor file replaced by a
    same-named one in /etc), also in ``data["overridden"]``."""
    from aiaudit.linux.sysctl import shadowed

    cfg = resolved(host).cfg
    dirs = cfg.procps_dirs if boot.init.name == "procps" else cfg.dirs
    lost = shadowed.overridden(boot.dec, boot.init.name)
    lost += shadowed.hidden(host, dirs, boot.dec, boot.init.name)
    if lost:
        data["overridden"] = shadowed.data(lost)
    return shadowed.evidence(lost)


def _fix(host: Host, display: str, exp: Expectation, current: str | None,
         boot: Boot, now: bool = True) -> Remediation:
    """:func:`remediation`, with the tuned profile to change when tuned writes the key last
    (``reapply_sysctl = 0``); ``now`` False when the runtime value is already right (a
    setting that reverts at reboot: only persisting it is the fix)."""
    rem = remediation(display, exp, current, boot.fix_at, host.live and now, boot.target)
    td = boot.tuned
    if td is not None and not td.reapplied and not tuned_reapplies(host):
        # reapply_sysctl = 0: the profile value is the last write at boot
        rem = replace(rem, manual=f"the tuned profile sets {display} after every "
                      f"sysctl.d file ({td.evidence.source}) and reapply_sysctl is "
                      "off: change the profile's [sysctl] value")
    return rem


def apply_persisted(display: str, boot: Boot) -> Remediation:
    """The fix when the persisted value is right and only the runtime differs: make the
    program that writes it at boot write it now, nothing more (no drop-in line, no edit of
    a file that already says the right value).  tuned when it writes the key last (it
    re-applies its profile, and with ``reapply_sysctl`` the sysctl.d files, when it
    starts); ufw's ``sysctl -p`` of its file when ufw re-applies it; else the boot applier:
    ``sysctl --system``, or ``systemd-sysctl`` itself where procps would leave another
    value (its order differs: see :func:`_procps_note`)."""
    if boot.tuned is not None:
        cmd, what = "systemctl restart tuned.service", "tuned re-applies its profile"
    elif boot.fix_at is not boot.dec and boot.fix_at.entry is not None:  # ufw decides
        cmd = f"sysctl -p {boot.fix_at.entry.file}"
        what = f"load {boot.fix_at.entry.file} as ufw does when it starts"
    elif boot.init.name == "procps" or not boot.note:
        cmd, what = "sysctl --system", "apply the persisted sysctl settings"
    else:
        cmd = "systemctl restart systemd-sysctl.service"
        what = "apply the persisted sysctl settings as systemd-sysctl does at boot"
    return Remediation(f"Apply the persisted {display} = {boot.value} with `{cmd}`; the "
                       "configuration is already right.",
                       (Snippet.command(cmd, what),))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``kernel.sysctl``."""
    return [CheckSpec(
        id="kernel.sysctl",
        title="A sysctl key has the expected value at runtime and at boot",
        run=run,
        params_schema=PARAMS_SCHEMA,
        description=(
            "Live: reads /proc/sys/<key>. Persisted: the value systemd-sysctl writes at boot "
            "from /etc, /run, /usr/local/lib and /usr/lib sysctl.d (same basename: first dir "
            "wins; a /dev/null link masks; files in strcmp order; the last assignment wins; "
            "explicit keys beat globs; '-key' excludes). /etc/sysctl.conf counts only through "
            "a sysctl.d link (Debian's 99-sysctl.conf); procps `sysctl --system` differences "
            "are noted. On a root without systemd (sysvinit, containers) procps' `sysctl "
            "--system` decides instead (/etc/sysctl.conf last). An enabled ufw re-applies "
            "/etc/ufw/sysctl.conf; an enabled tuned then writes its profile's [sysctl] and "
            "re-applies the /run and /etc files (reapply_sysctl). Kernel defaults of "
            "kernel.numa_balancing and kernel.dmesg_restrict come from the kernel build "
            "config (/proc/config.gz live, /boot/config-*); those of fs.protected_symlinks "
            "and fs.protected_hardlinks from the kernel that boots (1 on Debian's kernels by "
            "its patch, unknown on a kernel whose builder is not known). Fails as runtime, "
            "persisted or drift; a boot value left to an unknown kernel default is an error "
            "offline and never a drift claim."
        ),
    )]
