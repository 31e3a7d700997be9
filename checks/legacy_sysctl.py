"""``kernel.sysctl``: one parametrised check for every sysctl rule.

Live, the runtime value comes from ``/proc/sys``; the persisted value is what systemd-sysctl
will write at the next boot (directories, masking, strcmp order, last assignment wins,
explicit beats glob, ``-key`` exclusions; see :mod:`aiaudit.linux.sysctl.conf`), with the procps
``sysctl --system`` result alongside when it differs (``/etc/sysctl.conf`` read last,
older procps orders and no globs), then tuned when it is enabled (its profile's
``[sysctl]``, with the admin files re-applied after it).  Which program applies the
files, ufw's re-apply and build-config kernel defaults: :mod:`aiaudit.linux.sysctl.boot`.
A failure says which side is wrong: ``runtime``, ``persisted`` or ``drift`` (right now
but reverts at reboot, or configured but not applied).
"""

from __future__ import annotations

import heapq
import posixpath
from dataclasses import replace
from typing import Any, Callable, Iterator, Mapping, Sequence

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
from aiaudit.core.records import record
from aiaudit.core.ruleset import predicates
from aiaudit.core.ruleset.predicates import Predicate
from aiaudit.linux.sysctl import boot as sysctl_boot
from aiaudit.linux.sysctl import conf as sp
from aiaudit.linux.sysctl.files import (
    SysctlConfig,
    load_config,
)

DROPIN = "/etc/sysctl.d/99-zz-aiaudit.conf"
"""Remediation drop-in: in /etc (beats same-named vendor files) and sorting after
Debian's ``99-sysctl.conf`` link, so its lines are the last assignment at boot."""

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


def unknown_default(host: Host, key: str, display: str) -> str:
    """Why the kernel default of ``key`` (slash form) is unknown, for the ``default``
    evidence: what :func:`aiaudit.linux.sysctl.boot.kernel_default` looked for, or that it
    derives none for the key."""
    from aiaudit.linux.kernel.config import kernel_config_missing

    if key not in sysctl_boot.DERIVED_DEFAULTS:
        return (f"kernel default unknown: aiaudit derives none for {display} and the "
                "rule sets no kernel_default")
    cmdline = "no numa_balancing= on the kernel command line, " \
        if key == "kernel/numa_balancing" else ""
    return f"kernel default unknown: {cmdline}{kernel_config_missing(host)}"


class Resolved:
    """The effective sysctl set of one run: :class:`SysctlConfig` indexed so that each rule
    decides its key from the lines that can set that key, not from every line of every
    file (with 2,000 sysctl.d files each rule re-scanned ~12,000 lines: +60 M instructions
    per rule).  Built once per run (:func:`resolved`) and shared by every sysctl rule.

    The deciders of :mod:`aiaudit.linux.sysctl.conf` still decide, on the subsequence of the
    entries (in file order) that can matter for the key; the answer is the same as on all
    entries:

    - systemd-sysctl: a literal line for another key neither is ``key``'s explicit value
      nor a glob, and deleting/re-adding it in the ordered map leaves the order of the glob
      keys unchanged, so the literal lines of ``key`` plus every glob decide the same.
    - procps: a literal line decides only when its path (normalised as procps_decide does)
      is the target; a literal line stops a glob only when its path is exactly the
      expanded path, which then normalises to the target.  That holds when the target is
      already normal (no ``..`` component); otherwise every entry is used.
    """

    def __init__(self, cfg: SysctlConfig) -> None:
        self.cfg = cfg
        self._systemd = _Buckets(cfg.entries, lambda e: e.key)
        self._procps = _Buckets(cfg.procps_entries, _procps_path)
        self._tuned: dict[str, list[sp.Entry]] | None = None

    def systemd_entries(self, key: str) -> list[sp.Entry]:
        """The entries, in file order, that can decide ``key`` for systemd-sysctl (its
        literal lines and every glob); also every line :func:`fnmatch_key` accepts."""
        return self._systemd.get(key)

    def systemd_decide(self, key: str) -> sp.Decision:
        """:func:`aiaudit.linux.sysctl.conf.systemd_decide` of ``key`` on the whole set."""
        return sp.systemd_decide(self.systemd_entries(key), key)

    def procps_decide(self, key: str) -> sp.Decision:
        """:func:`aiaudit.linux.sysctl.conf.procps_decide` of ``key`` on the whole set."""
        target = sp.PROC_SYS + key
        if posixpath.normpath(target) != target:
            entries: Sequence[sp.Entry] = self.cfg.procps_entries
        else:
            entries = self._procps.get(target)
        return sp.procps_decide(entries, key, globs=self.cfg.procps_globs,
                                glob_exclude=self.cfg.procps_glob_exclude)

    def tuned_reapplied(self, key: str) -> list[sp.Entry]:
        """The literal lines that tuned's ``reapply_sysctl`` writes to ``key``, in order."""
        if self._tuned is None:
            self._tuned = {}
            for e in self.cfg.tuned_reapply_entries:
                if not e.is_glob and e.value is not None:
                    self._tuned.setdefault(e.key, []).append(e)
        return self._tuned.get(key, [])


def _procps_path(e: sp.Entry) -> str:
    """The path procps_decide compares with the target for a literal line."""
    path = sp.PROC_SYS + e.key
    if "//" in path or "/." in path or path.endswith("/"):
        return posixpath.normpath(path)
    return path


class _Buckets:
    """Entries by a key of literal lines, with every glob line, keeping file order."""

    def __init__(self, entries: Sequence[sp.Entry], keyfn: Callable[[sp.Entry], str]) -> None:
        self._by: dict[str, list[tuple[int, sp.Entry]]] = {}
        self._globs: list[tuple[int, sp.Entry]] = []
        for i, e in enumerate(entries):
            if e.is_glob:
                self._globs.append((i, e))
            else:
                self._by.setdefault(keyfn(e), []).append((i, e))

    def get(self, key: str) -> list[sp.Entry]:
        """Literal lines of ``key`` and every glob line, in file order."""
        lits = self._by.get(key, [])
        if not self._globs:
            return [e for _, e in lits]
        return [e for _, e in heapq.merge(lits, self._globs, key=lambda t: t[0])]


def resolved(host: Host) -> Resolved:
    """The run's effective sysctl set (loaded and indexed once per run, per Host)."""
    def build() -> Resolved:
        return Resolved(host.memo(("sysctl-config",), lambda: load_config(host)))

    return host.memo(("sysctl-resolved",), build)




@record
class TunedDecision:
    """What tuned does to a key after systemd-sysctl (SEMANTICS §3.3)."""

    value: str
    evidence: Evidence
    text: str
    """``set by tuned profile X (file:line)`` or ``... then re-applied from file:line``."""
    reapplied: bool
    """True when a re-applied admin file, not the profile, decided."""


def tuned_decide(host: Host, cfg: SysctlConfig | Resolved, key: str) -> TunedDecision | None:
    """The value tuned leaves in ``key`` when it starts at boot, or ``None`` when tuned is
    not active or its profile does not set the key.  tuned writes its profile's
    ``[sysctl]`` options (keys mapped naively, ``.`` to ``/``), then, with
    ``reapply_sysctl`` on (the default), re-applies the admin files of /run and /etc (never
    /usr/lib or /usr/local/lib), so an admin file still wins over the profile."""
    from aiaudit.linux.tuned import profiles as tuned

    st = tuned.load(host)
    if not st.active or st.profile is None:
        return None
    opt = None
    for unit in st.profile.units.values():
        if unit.type != "sysctl" or not unit.enabled:
            continue
        for k, o in unit.options.items():
            if k not in ("type", "enabled", "replace", "devices") and \
                    k.strip().replace(".", "/") == key:
                opt = o
    if opt is None:
        return None
    where = f"{opt.file.lstrip('/')}:{opt.line}"
    ev = Evidence.file(opt.file, opt.line, f"{key.replace('/', '.')}={opt.value}")
    if _tuned_reapplies(host):
        again = (cfg.tuned_reapplied(key) if isinstance(cfg, Resolved) else
                 [e for e in cfg.tuned_reapply_entries
                  if not e.is_glob and e.key == key and e.value is not None])
        if again:
            last = again[-1]
            return TunedDecision(last.value or "", Evidence.file(last.file, last.line,
                                                                 last.raw.strip()),
                                 f"{last.value} (tuned {st.describe()} sets {opt.value} at "
                                 f"{where}, then re-applies {_loc(last)})", True)
    return TunedDecision(opt.value, ev, f"{opt.value} (set by {st.describe()} at {where}, "
                         "after systemd-sysctl)", False)


def _tuned_reapplies(host: Host) -> bool:
    """tuned-main.conf ``reapply_sysctl`` (default 1)."""
    from aiaudit.linux.tuned import profiles as tuned

    try:
        text = host.try_read_text(tuned.MAIN_CONF) or ""
    except HostError:
        return True
    for raw in text.splitlines():
        k, sep, v = raw.partition("=")
        if sep and k.strip() == "reapply_sysctl":
            return v.strip().lower() not in ("0", "false", "no", "off")
    return True


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


# ------------------------------------------------------------------ the check
def printable(text: str) -> str:
    """``text`` with control characters shown as ``\\xNN`` (values end up in reports)."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def _loc(e: sp.Entry) -> str:
    return f"{e.file.lstrip('/')}:{e.line}"


def dropin_path(cfg: SysctlConfig | Resolved, key: str) -> str | None:
    """Where the fix for ``key`` goes: :data:`DROPIN`, unless a file that sets the key sorts
    at or after it (e.g. ``99-zzz-local.conf``); then a name that sorts after every such
    file (strcmp order), so the fix really is the last assignment at boot.  ``None`` when no
    sensible name sorts last (a setter named with bytes above ``z``): edit that file."""
    d, _, name = DROPIN.rpartition("/")
    entries = cfg.systemd_entries(key) if isinstance(cfg, Resolved) else cfg.entries
    setters = [e.file.rpartition("/")[2].encode("utf-8", "surrogateescape")
               for e in entries if fnmatch_key(e, key) and e.value is not None]
    for _ in range(8):
        if not any(b >= name.encode() for b in setters):
            return f"{d}/{name}"
        name = "z" + name
    return None


def fnmatch_key(entry: sp.Entry, key: str) -> bool:
    """True if ``entry`` (explicit or glob) sets ``key``."""
    return sp.fnmatch_fast(key, entry.key) if entry.is_glob else entry.key == key


def _remediation(key: str, display: str, exp: Expectation, current: str | None,
                 decision: sp.Decision | None, live: bool, target: str | None) -> Remediation:
    value = exp.suggest(current)
    where = ""
    if decision is not None and decision.entry is not None:
        where = f"; or change {_loc(decision.entry)}"
        if target is None:
            return Remediation(f"Change {_loc(decision.entry)} so that {display} is "
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
            runtime = printable(sp.normalize_value(host.read_text(proc_path)))
        except NotFound:
            outcome = p.get("missing", "skip")
            msg = f"{display} does not exist on this kernel ({proc_path} absent)"
            yield Result(Status(outcome), display, msg, expected=want, actual="absent",
                         aspect=Aspect.RUNTIME, evidence=(Evidence.runtime(proc_path),))
            return
        evidence.append(Evidence.runtime(proc_path, runtime))
        data["runtime"] = runtime

    res = resolved(host)
    cfg = res.cfg
    dec = res.systemd_decide(key)
    pdec = res.procps_decide(key)
    init = sysctl_boot.applier(host)
    other: sp.Decision | None = pdec
    if init.name == "procps":  # no systemd: procps' init script runs `sysctl --system`
        dec, other = pdec, None
        data["applier"] = {"program": "procps", "reason": init.reason}
    kd = sysctl_boot.kernel_default(host, key)
    default = kd.value if kd is not None else p.get("kernel_default")
    boot = dec.value if dec.value is not None else (None if default is None else str(default))
    try:
        td = tuned_decide(host, res, key)
    except (HostError, ParseError) as exc:
        td = None
        data["tuned_error"] = str(exc)
    if dec.entry is not None:
        evidence.append(Evidence.file(dec.entry.file, dec.entry.line, dec.entry.raw.strip()))
        data["persisted"] = {"value": dec.value, "source": _loc(dec.entry)}
    elif dec.excluded_by is not None:
        evidence.append(Evidence.file(dec.excluded_by.file, dec.excluded_by.line,
                                      dec.excluded_by.raw.strip()))
    if kd is not None and dec.value is None:
        evidence.extend(kd.evidence)
    elif default is not None and dec.value is None:
        evidence.append(Evidence.default(f"kernel default for {display}", str(default)))
    note = ""
    if other is not None and (
            (other.value is None) != (dec.value is None)
            or sp.normalize_value(other.value or "") != sp.normalize_value(dec.value or "")):
        src = _loc(other.entry) if other.entry else "nothing"
        ver = f" {cfg.procps_version}" if cfg.procps_version else ""
        left = "it unchanged" if other.value is None else f"'{other.value}'" \
            if not other.value.strip() else other.value
        note = (f" Note: `sysctl --system` (procps{ver}) would leave {left} (from {src}), "
                "but systemd-sysctl decides at boot.")
        data["procps"] = {"value": other.value, "source": src if other.entry else None}
        if other.entry is not None and other.entry is not dec.entry:
            evidence.append(Evidence.file(other.entry.file, other.entry.line,
                                          other.entry.raw.strip()))
    if dec.value is not None:
        persisted_txt = f"{dec.value} (set at {_loc(dec.entry)})" if dec.entry else dec.value
    elif dec.excluded_by is not None:
        persisted_txt = f"not set (excluded at {_loc(dec.excluded_by)})"
    elif kd is not None:
        persisted_txt = f"not set ({kd.text})"
    elif default is not None:
        persisted_txt = f"not set (kernel default {default})"
    else:
        persisted_txt = "not set (kernel default unknown)"
    if init.name == "procps" and dec.value is not None:
        persisted_txt += ", by `sysctl --system` (no systemd on this root)"
    persisted_set = dec.value is not None
    fix_at, target = dec, dropin_path(res, key)
    if init.name == "procps" and dec.entry is not None and dec.entry.file == sp.SYSCTL_CONF:
        target = None  # procps reads /etc/sysctl.conf after every drop-in
    ud = sysctl_boot.ufw_decide(host, init, key)
    if ud is not None:  # ufw-init's `sysctl -p` runs after the boot applier
        udec, ufw = ud
        assert udec.entry is not None
        boot, persisted_set = udec.value, True
        persisted_txt = (f"{udec.value} (re-applied from {_loc(udec.entry)} when ufw starts, "
                         f"after {init.name}: {ufw.reason})")
        evidence.append(Evidence.file(udec.entry.file, udec.entry.line, udec.entry.raw.strip()))
        data["ufw"] = {"value": udec.value, "source": _loc(udec.entry)}
        fix_at, target = udec, None
    if td is not None:  # tuned starts after systemd-sysctl and writes its profile
        boot, persisted_txt, persisted_set = td.value, td.text, True
        evidence.append(td.evidence)
        data["tuned"] = {"value": td.value, "source": td.evidence.source,
                         "reapplied": td.reapplied}
    if boot is None and dec.excluded_by is None and not cfg.problems:
        # nothing sets the key and its default is unknown: say what was looked for (with
        # an unreadable file the value is unknown: that file is the evidence)
        evidence.append(Evidence.default(searched(host, cfg, init, display),
                                         unknown_default(host, key, display)))

    def result(status: Status, aspect: Aspect, msg: str, actual: str | None,
               extra: tuple[Evidence, ...] = ()) -> Result:
        rem = None
        if status is Status.FAIL:
            rem = _remediation(key, display, exp, runtime or boot, fix_at, host.live,
                               target)
            if td is not None and not td.reapplied and not _tuned_reapplies(host):
                # reapply_sysctl = 0: the profile value is the last write at boot
                rem = replace(rem, manual=f"the tuned profile sets {display} after every "
                              f"sysctl.d file ({td.evidence.source}) and reapply_sysctl is "
                              "off: change the profile's [sysctl] value")
        return Result(status, display, msg + note, expected=want, actual=actual, aspect=aspect,
                      evidence=(*evidence, *extra), remediation=rem, data=data)

    unknown = "; ".join(cfg.problems)
    try:
        boot_ok = None if boot is None else exp.ok(boot)
        rt_ok = exp.ok(runtime) if runtime is not None else None
    except ValueError as exc:
        yield result(Status.ERROR, Aspect.RUNTIME if host.live else Aspect.PERSISTED,
                     f"{display}: cannot compare the value: {exc}", runtime or boot)
        return
    if not host.live:
        if unknown:
            yield result(Status.ERROR, Aspect.PERSISTED,
                         f"persisted value of {display} cannot be determined: {unknown}", None,
                         cfg.problem_evidence)
        elif boot_ok:
            yield result(Status.PASS, Aspect.PERSISTED, f"{display} at boot: {persisted_txt}",
                         boot)
        else:
            yield result(Status.FAIL, Aspect.PERSISTED,
                         f"{display} at boot: {persisted_txt}; expected {want}", boot)
        return

    assert runtime is not None
    check_persist = bool(p.get("persist", True))
    if not rt_ok:
        if unknown:
            yield result(Status.FAIL, Aspect.RUNTIME,
                         f"{display} is {runtime}; expected {want}; the persisted value cannot "
                         f"be determined: {unknown}", runtime, cfg.problem_evidence)
        elif boot_ok and persisted_set:
            yield result(Status.FAIL, Aspect.DRIFT,
                         f"{display} is {runtime} now, but the persisted {persisted_txt} "
                         "is right: it was changed at runtime or never applied", runtime)
        elif boot_ok:
            yield result(Status.FAIL, Aspect.RUNTIME,
                         f"{display} is {runtime} now; nothing persists it and the kernel "
                         f"default {default} would be right: something changed it at runtime",
                         runtime)
        elif persisted_set:
            yield result(Status.FAIL, Aspect.PERSISTED,
                         f"{display} is {runtime} now and the configuration sets "
                         f"{persisted_txt}; expected {want}", runtime)
        else:
            yield result(Status.FAIL, Aspect.RUNTIME,
                         f"{display} is {runtime}; expected {want}; persisted: {persisted_txt}",
                         runtime)
        return
    if not check_persist:
        yield result(Status.PASS, Aspect.RUNTIME, f"{display} is {runtime}", runtime)
        return
    if unknown:
        yield result(Status.ERROR, Aspect.PERSISTED,
                     f"{display} is {runtime} now, but the persisted value cannot be "
                     f"determined: {unknown}", runtime, cfg.problem_evidence)
    elif boot_ok is False:
        yield result(Status.FAIL, Aspect.DRIFT,
                     f"{display} is {runtime} now, but at boot it will be {persisted_txt}: "
                     "the setting reverts at reboot", runtime)
    elif boot_ok is None:
        yield result(Status.PASS, Aspect.RUNTIME,
                     f"{display} is {runtime}; not persisted in any sysctl.d file (kernel "
                     "default unknown to this rule, so a reboot may change it)", runtime)
    else:
        yield result(Status.PASS, Aspect.RUNTIME,
                     f"{display} is {runtime}; at boot: {persisted_txt}", runtime)


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
            "config (/proc/config.gz live, /boot/config-*). Fails as runtime, persisted or "
            "drift."
        ),
    )]
