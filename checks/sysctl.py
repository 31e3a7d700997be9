"""``kernel.sysctl``: one parametrised check for every sysctl rule.

Live, the runtime value comes from ``/proc/sys``; the persisted value is what systemd-sysctl
will write at the next boot (directories, masking, strcmp order, last assignment wins,
explicit beats glob, ``-key`` exclusions; see :mod:`aiaudit.parsers.sysctl`), with the procps
``sysctl --system`` result alongside when it differs (``/etc/sysctl.conf`` read last, older
procps orders and no globs).  A failure says which side is wrong: ``runtime``, ``persisted``
or ``drift`` (right now but reverts at reboot, or configured but not applied).
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
from aiaudit.compare import OPS, describe, describe_fields, fields_hold, holds
from aiaudit.errors import HostError, NotFound, NotRegularFile, ParseError, SymlinkLoop
from aiaudit.host import Host
from aiaudit.packages import dpkg_version
from aiaudit.parsers import dpkg
from aiaudit.parsers import sysctl as sp

DROPIN = "/etc/sysctl.d/99-zz-aiaudit.conf"
"""Remediation drop-in: in /etc (beats same-named vendor files) and sorting after
Debian's ``99-sysctl.conf`` link, so its lines are the last assignment at boot."""

_VALUE = {"type": ["integer", "number", "string"]}
_FIELD = {
    "type": "object",
    "additionalProperties": False,
    "required": ["op", "value"],
    "properties": {"op": {"enum": [o for o in OPS if o not in ("in", "not_in")]},
                   "value": _VALUE},
}

PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["key"],
    "properties": {
        "key": {"type": "string", "minLength": 1, "pattern": "^[^*?\\[\\]\\s=]+$",
                "description": "sysctl key, dotted or slash form"},
        "op": {"enum": list(OPS), "description": "comparison of the whole value"},
        "value": {"oneOf": [_VALUE, {"type": "array", "items": _VALUE, "minItems": 1}]},
        "fields": {
            "type": "array", "minItems": 1,
            "items": {"oneOf": [{"type": "null"}, _FIELD]},
            "description": "per-field comparison of a multi-value key (null = any)",
        },
        "kernel_default": {"type": ["integer", "string"],
                           "description": "value at boot when no file sets the key"},
        "missing": {"enum": ["skip", "fail", "pass"], "default": "skip",
                    "description": "outcome when the key does not exist on the live kernel"},
        "persist": {"type": "boolean", "default": True,
                    "description": "also require the persisted (boot) value to satisfy"},
    },
    "oneOf": [
        {"required": ["op", "value"], "not": {"required": ["fields"]}},
        {"required": ["fields"], "not": {"anyOf": [{"required": ["op"]},
                                                   {"required": ["value"]}]}},
    ],
}


# ------------------------------------------------------------------ persisted config
@dataclass(frozen=True)
class SysctlConfig:
    """All sysctl configuration of the scanned root, parsed once per run."""

    files: tuple[sp.ConfFile, ...]
    entries: tuple[sp.Entry, ...]
    """systemd-sysctl entries in processing order."""
    procps_entries: tuple[sp.Entry, ...]
    """``sysctl --system`` entries in processing order (``/etc/sysctl.conf`` last)."""
    procps_version: str | None
    procps_globs: bool
    problems: tuple[str, ...] = ()
    """Files that could not be read: the persisted value is unknown."""
    notes: tuple[str, ...] = field(default_factory=tuple)


def _listing(host: Host, dirs: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    return [(d, host.listdir(d)) for d in dirs]


def _procps_variant(host: Host) -> tuple[str | None, tuple[str, ...], bool]:
    """(version, directory order, glob support) of the scanned root's procps."""
    full = dpkg_version(host, "procps")
    if full is None:
        return None, sp.PROCPS4_DIRS, True
    version = dpkg.upstream_version(full)
    vt = dpkg.version_tuple(version)
    if vt >= (4,):
        return version, sp.PROCPS4_DIRS, True
    if (3, 3, 15) <= vt < (3, 3, 17):
        return version, sp.PROCPS_OLD_DIRS, False
    return version, sp.PROCPS4_DIRS, False


def load_config(host: Host) -> SysctlConfig:
    """Find, order and parse every sysctl.d file of the scanned root."""
    split_usr = host.readlink("/lib") is None and host.is_dir("/lib/sysctl.d")
    dirs = sp.SYSTEMD_DIRS_SPLIT_USR if split_usr else sp.SYSTEMD_DIRS
    problems: list[str] = []
    notes: list[str] = []
    parsed: dict[str, list[sp.Entry]] = {}

    def entries_of(cf: sp.ConfFile) -> list[sp.Entry]:
        if cf.path in parsed:
            return parsed[cf.path]
        out: list[sp.Entry] = []
        if host.is_masked(cf.path):
            notes.append(f"{cf.path} is masked (symlink to /dev/null)")
        else:
            try:
                out, _warnings = sp.parse(host.read_text(cf.path), cf.path)
            except (NotRegularFile, SymlinkLoop) as exc:
                notes.append(f"{exc}; systemd-sysctl cannot use it either")
            except NotFound:
                notes.append(f"{cf.path}: dangling symlink, ignored")
            except (HostError, ParseError) as exc:
                problems.append(str(exc))
        parsed[cf.path] = out
        return out

    files = sp.order_files(_listing(host, dirs))
    entries = [e for cf in files for e in entries_of(cf)]
    version, pdirs, globs = _procps_variant(host)
    pfiles = sp.order_files(_listing(host, pdirs))
    pentries = [e for cf in pfiles for e in entries_of(cf)]
    if host.is_file(sp.SYSCTL_CONF):
        pentries += entries_of(sp.ConfFile("sysctl.conf", sp.SYSCTL_CONF))
    return SysctlConfig(tuple(files), tuple(entries), tuple(pentries), version, globs,
                        tuple(problems), tuple(notes))


# ------------------------------------------------------------------ expectations
@dataclass(frozen=True)
class Expectation:
    """What a rule wants of the value."""

    op: str | None
    value: Any
    fields: tuple[Mapping[str, Any] | None, ...] | None

    @classmethod
    def from_params(cls, p: Mapping[str, Any]) -> Expectation:
        """Build from rule params (``op``+``value`` or ``fields``)."""
        fields = p.get("fields")
        return cls(p.get("op"), p.get("value"), tuple(fields) if fields else None)

    def ok(self, value: str) -> bool:
        """True if ``value`` satisfies the expectation."""
        if self.fields is not None:
            return not fields_hold(value, self.fields)  # type: ignore[arg-type]
        assert self.op is not None
        return holds(sp.normalize_value(value), self.op, self.value)

    def text(self) -> str:
        """Human form."""
        if self.fields is not None:
            return describe_fields(self.fields)  # type: ignore[arg-type]
        return describe(str(self.op), self.value)

    def suggest(self, current: str | None) -> str | None:
        """A value that satisfies the expectation, changing as little of ``current`` as
        possible; ``None`` if no single value can be proposed."""
        if self.fields is not None:
            parts = current.split() if current else []
            out = []
            for i, spec in enumerate(self.fields):
                have = parts[i] if i < len(parts) else None
                if spec is None:
                    if have is None:
                        return None
                    out.append(have)
                elif have is not None and holds(have, spec["op"], spec["value"]):
                    out.append(have)
                else:
                    v = _bound(spec["op"], spec["value"])
                    if v is None:
                        return None
                    out.append(v)
            return " ".join(out)
        if self.op == "in":
            vals = self.value if isinstance(self.value, list) else [self.value]
            return str(vals[0])
        return _bound(str(self.op), self.value)


def _bound(op: str, value: Any) -> str | None:
    if op in ("eq", "le", "ge"):
        return str(value)
    if op in ("lt", "gt") and isinstance(value, int):
        return str(value - 1 if op == "lt" else value + 1)
    return None


# ------------------------------------------------------------------ the check
def printable(text: str) -> str:
    """``text`` with control characters shown as ``\\xNN`` (values end up in reports)."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def _loc(e: sp.Entry) -> str:
    return f"{e.file.lstrip('/')}:{e.line}"


def dropin_path(cfg: SysctlConfig, key: str) -> str | None:
    """Where the fix for ``key`` goes: :data:`DROPIN`, unless a file that sets the key sorts
    at or after it (e.g. ``99-zzz-local.conf``); then a name that sorts after every such
    file (strcmp order), so the fix really is the last assignment at boot.  ``None`` when no
    sensible name sorts last (a setter named with bytes above ``z``): edit that file."""
    d, _, name = DROPIN.rpartition("/")
    setters = [e.file.rpartition("/")[2].encode("utf-8", "surrogateescape")
               for e in cfg.entries if fnmatch_key(e, key) and e.value is not None]
    for _ in range(8):
        if not any(b >= name.encode() for b in setters):
            return f"{d}/{name}"
        name = "z" + name
    return None


def fnmatch_key(entry: sp.Entry, key: str) -> bool:
    """True if ``entry`` (explicit or glob) sets ``key``."""
    import fnmatch

    return fnmatch.fnmatchcase(key, entry.key) if entry.is_glob else entry.key == key


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

    cfg = host.memo(("sysctl-config",), lambda: load_config(host))
    dec = sp.systemd_decide(cfg.entries, key)
    pdec = sp.procps_decide(cfg.procps_entries, key, globs=cfg.procps_globs)
    default = p.get("kernel_default")
    boot = dec.value if dec.value is not None else (None if default is None else str(default))
    if dec.entry is not None:
        evidence.append(Evidence.file(dec.entry.file, dec.entry.line, dec.entry.raw.strip()))
        data["persisted"] = {"value": dec.value, "source": _loc(dec.entry)}
    elif dec.excluded_by is not None:
        evidence.append(Evidence.file(dec.excluded_by.file, dec.excluded_by.line,
                                      dec.excluded_by.raw.strip()))
    if default is not None and dec.value is None:
        evidence.append(Evidence.default(f"kernel default for {display}", str(default)))
    note = ""
    if sp.normalize_value(pdec.value or "") != sp.normalize_value(dec.value or ""):
        src = _loc(pdec.entry) if pdec.entry else "nothing"
        ver = f" {cfg.procps_version}" if cfg.procps_version else ""
        note = (f" Note: `sysctl --system` (procps{ver}) would leave "
                f"{pdec.value if pdec.value is not None else 'it unchanged'} (from {src}), "
                "but systemd-sysctl decides at boot.")
        data["procps"] = {"value": pdec.value, "source": src if pdec.entry else None}
        if pdec.entry is not None and pdec.entry is not dec.entry:
            evidence.append(Evidence.file(pdec.entry.file, pdec.entry.line,
                                          pdec.entry.raw.strip()))
    if dec.value is not None:
        persisted_txt = f"{dec.value} (set at {_loc(dec.entry)})" if dec.entry else dec.value
    elif dec.excluded_by is not None:
        persisted_txt = f"not set (excluded at {_loc(dec.excluded_by)})"
    elif default is not None:
        persisted_txt = f"not set (kernel default {default})"
    else:
        persisted_txt = "not set (kernel default unknown)"

    def result(status: Status, aspect: Aspect, msg: str, actual: str | None) -> Result:
        rem = None
        if status is Status.FAIL:
            rem = _remediation(key, display, exp, runtime or boot, dec, host.live,
                               dropin_path(cfg, key))
        return Result(status, display, msg + note, expected=want, actual=actual, aspect=aspect,
                      evidence=tuple(evidence), remediation=rem, data=data)

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
                         f"persisted value of {display} cannot be determined: {unknown}", None)
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
                         f"be determined: {unknown}", runtime)
        elif boot_ok and dec.value is not None:
            yield result(Status.FAIL, Aspect.DRIFT,
                         f"{display} is {runtime} now, but the persisted {persisted_txt} "
                         "is right: it was changed at runtime or never applied", runtime)
        elif boot_ok:
            yield result(Status.FAIL, Aspect.RUNTIME,
                         f"{display} is {runtime} now; nothing persists it and the kernel "
                         f"default {default} would be right: something changed it at runtime",
                         runtime)
        elif dec.value is not None:
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
                     f"determined: {unknown}", runtime)
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
            "are noted. Fails as runtime, persisted or drift."
        ),
    )]
