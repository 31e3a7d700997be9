"""Training-user resource limits: what pam_limits gives the training user at login.

``limits.effective`` computes the soft or hard ``nofile``/``memlock`` limit a session of the
training user gets through each login service (sshd by default), exactly as the scanned
root's pam_limits build decides (see :mod:`aiaudit.linux.pam_limits.conf`): whether the service's
PAM session stack loads pam_limits (and, for sshd, ``UsePAM``), the module's ``conf=``
argument, limits.conf then limits.d in strcmp order, domain ranks, the ``-`` type, "no
limits" lines, Debian's patches (root not matched by ``*``/``@group``; starting values from
/proc/1/limits with soft nofile capped at 1024 before PAM 1.7) and the limits the service
itself runs with when pam_limits leaves a limit alone.  ``limits.pam_stack`` says whether
pam_limits runs at all; ``user.not_root`` flags training as root.
"""

from __future__ import annotations

from dataclasses import field, replace
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
from aiaudit.core.errors import HostError, NotFound, NotRegularFile, ParseError
from aiaudit.core.host import Host
from aiaudit.core.records import record
from aiaudit.linux.accounts import passwd as pw
from aiaudit.linux.accounts.users import (
    Accounts,
    training_user,
)
from aiaudit.linux.packages import dpkg
from aiaudit.linux.packages.installed import dpkg_version
from aiaudit.linux.pam_limits import conf as lp
from aiaudit.linux.pam_limits import pam as pp
from aiaudit.linux.procs import proc_of
from aiaudit.linux.systemd import units as systemd

LIMITS_CONF = "/etc/security/limits.conf"
LIMITS_D = "/etc/security/limits.d"
VENDOR_LIMITS_CONF = "/usr/lib/security/limits.conf"
VENDOR_LIMITS_D = "/usr/lib/security/limits.d"
DROPIN = "/etc/security/limits.d/zz-aiaudit-training.conf"
"""Remediation drop-in: sorts after every usual name (strcmp: ``z`` > digits, capitals,
``_``), so among lines of the same rank it is read last and wins."""
PAM_DIRS = ("/etc/pam.d", "/usr/lib/pam.d")
"""Service files: /etc first; libpam >= 1.4 (vendordir builds) falls back to /usr/lib."""

# PID 1's limits when they cannot be read (offline scans).  systemd as PID 1 raises its own
# limits at start (src/core/main.c: bump_file_max_and_nr_open() sets fs.nr_open to
# 1073741816 and bump_rlimit_nofile() takes nofile to it; bump_rlimit_memlock() raises
# memlock to 64 MiB) -- UNCONFIRMED for every version; without systemd the kernel's boot
# values apply (INR_OPEN_CUR 1024 / INR_OPEN_MAX 4096; MLOCK_LIMIT 64 KiB before 5.16).
SYSTEMD_NR_OPEN = 1073741816
PID1_SYSTEMD = {"nofile": (SYSTEMD_NR_OPEN, SYSTEMD_NR_OPEN),
                "memlock": (64 * 1024**2, 64 * 1024**2)}
PID1_KERNEL = {"nofile": (1024, 4096), "memlock": (65536, 65536)}
# systemd's built-in defaults for services (systemd-system.conf(5)): DefaultLimitNOFILE
# 1024:524288 (v240+), DefaultLimitMEMLOCK 8M (v253+, earlier the kernel's 64 KiB).
SYSTEMD_DEFAULTS = {"nofile": (1024, 524288), "memlock": (8 * 1024**2, 8 * 1024**2)}
FD_SETSIZE = 1024
ITEM_KEYS = {"nofile": "NOFILE", "memlock": "MEMLOCK"}
SERVICE_UNITS = {"sshd": ("ssh.service", "sshd.service")}
SERVICE_COMM = {"sshd": "sshd"}
CALLER_SERVICES = frozenset({"su", "su-l", "sudo", "sudo-i", "runuser", "runuser-l"})
"""Services run by a user's own shell: a session keeps that caller's limits."""






def subject_for(acc: Accounts, user: pw.Account, assume: bool | None = None) -> lp.Subject:
    """A pam_limits subject whose group tests say "unknown" (``None``) where NSS may add
    members the files do not show; ``assume`` replaces that unknown with a guess."""
    db = acc.db
    remote = bool(acc.remote_group)

    def check(g: pw.Group | None) -> bool | None:
        if g is not None and (user.gid == g.gid or user.name in g.members
                              or g.gid in db.supplementary_gids(user)):
            return True
        return assume if remote else False

    return lp.Subject(user.name, user.uid, user.gid,
                      in_group=lambda name: check(db.group(name)),
                      in_gid=lambda gid: check(db.group_by_gid(gid)))


# ------------------------------------------------------------------ the PAM build
@record
class PamBuild:
    """Which pam_limits behaviour the scanned root has."""

    debian: bool
    version: str | None
    vt: tuple[int, ...]
    note: str

    @property
    def kernel_start(self) -> bool:
        """Debian patch 027 before 1.7.0-1: always start from /proc/1/limits (set_all)."""
        return self.debian and (not self.vt or self.vt < (1, 7))

    @property
    def nr_open(self) -> bool:
        """Unlimited nofile becomes fs.nr_open (upstream 1.5.2)."""
        return not self.vt or self.vt >= (1, 5, 2)

    @property
    def missing_conf_fatal(self) -> bool:
        """A missing limits.conf fails the session (``fopen`` check before 1.5.3)."""
        return bool(self.vt) and self.vt < (1, 5, 3)

    @property
    def vendordir(self) -> bool:
        """/usr/lib/security fallbacks (1.5.3+ vendordir builds; Debian does not use it)."""
        return not self.debian and (not self.vt or self.vt >= (1, 5, 3))


DISTRO_PAM: dict[tuple[str, str], str] = {
    ("debian", "10"): "1.3.1", ("debian", "11"): "1.4.0", ("debian", "12"): "1.5.2",
    ("debian", "13"): "1.7.0",
    ("ubuntu", "20.04"): "1.3.1", ("ubuntu", "22.04"): "1.4.0", ("ubuntu", "24.04"): "1.5.3",
}
"""Upstream PAM version of each Debian/Ubuntu release (packages.debian.org,
packages.ubuntu.com ``libpam-modules``), used when the root has no dpkg record."""
DEFAULT_DISTRO_PAM = ("debian", "12")


def pam_build(host: Host) -> PamBuild:
    """Detect distro family (os-release) and PAM version (dpkg) of the scanned root."""

    def load() -> PamBuild:
        from aiaudit.core.identity import os_release

        osr = os_release(host)
        ids = {osr.get("ID", "")} | set(osr.get("ID_LIKE", "").split())
        debian = bool(ids & {"debian", "ubuntu"})
        full = dpkg_version(host, "libpam-modules") or dpkg_version(host, "libpam0g")
        if full:
            up = dpkg.upstream_version(full)
            return PamBuild(debian, full, dpkg.version_tuple(up),
                            f"{'Debian' if debian else 'dpkg'} PAM {full}")
        if debian:
            # no dpkg record (a stripped image): the release's own PAM, applied as if dpkg
            # had said so, so that every version-dependent rule agrees with the note
            rel = (next(iter(ids & {"ubuntu"}), "debian"), osr.get("VERSION_ID", ""))
            up = DISTRO_PAM.get(rel, DISTRO_PAM[DEFAULT_DISTRO_PAM])
            how = (f"{rel[0].capitalize()} {rel[1]}'s PAM {up}" if rel in DISTRO_PAM
                   else f"PAM {up} (Debian 12's; release {rel[1] or 'unknown'} not known)")
            return PamBuild(True, None, dpkg.version_tuple(up),
                            f"Debian-family root without a dpkg record of libpam-modules: "
                            f"assuming {how}")
        name = osr.get("PRETTY_NAME") or osr.get("ID") or "unknown distribution"
        return PamBuild(False, None, (), f"{name}: upstream pam_limits semantics "
                        "(version unknown, assumed >= 1.5.3)")

    return host.memo(("limits-pam-build",), load)


# ------------------------------------------------------------------ PAM stacks
@record
class LimitsCall:
    """A ``session ... pam_limits.so`` line reached from a service's stack."""

    file: str
    line: int
    control: str
    args: tuple[str, ...]
    raw: str

    @property
    def conf(self) -> str | None:
        """The ``conf=`` argument (last one wins, as ``_pam_parse`` overwrites)."""
        out = None
        for a in self.args:
            if a.startswith("conf="):
                out = a[5:]
        return out

    @property
    def set_all(self) -> bool:
        """``set_all`` argument."""
        return "set_all" in self.args

    @property
    def fatal(self) -> bool:
        """A failure of this line denies the session."""
        c = self.control
        if c.startswith("["):
            return "default=ignore" not in c and "default=ok" not in c
        return c in ("required", "requisite")


@record(frozen=False)
class Stack:
    """Where the service's session stack runs pam_limits."""

    service: str
    file: str | None
    calls: list[LimitsCall] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    """Errors that make libpam fail the whole session (a missing ``@include`` aborts
    ``pam_start``; a missing ``include`` denies the stack), checked with the real libpam."""


def _service_file(host: Host, name: str) -> str | None:
    for d in PAM_DIRS:
        if host.is_file(f"{d}/{name}"):
            return f"{d}/{name}"
    return None


def pam_stack(host: Host, service: str) -> Stack:
    """Follow the service's file (or ``other``), ``@include``, ``include`` and
    ``substack`` to every ``session`` line loading pam_limits."""

    def load() -> Stack:
        path = _service_file(host, service)
        st = Stack(service, path)
        if path is None:
            other = _service_file(host, "other")
            if other is None:
                st.problems.append(f"no PAM configuration for {service} (nor 'other')")
                return st
            st.file = other
            path = other

        def walk(p: str, only: str | None, depth: int) -> None:
            if depth > 16:
                st.problems.append(f"{p}: includes nested too deeply")
                return
            st.files.append(p)
            try:
                lines = pp.parse(host.read_text(p), p)
            except (HostError, ParseError) as exc:
                st.broken.append(str(exc))
                return
            for ln in lines:
                if ln.type == "@include":
                    inc = _include_path(host, ln.module)
                    if inc:
                        walk(inc, only, depth + 1)
                    else:
                        st.broken.append(f"{p}:{ln.line}: @include {ln.module} not found")
                    continue
                if only is not None and ln.type != only:
                    continue
                if ln.type != "session":
                    continue
                if ln.control in ("include", "substack"):
                    inc = _include_path(host, ln.module)
                    if inc:
                        walk(inc, "session", depth + 1)
                    else:
                        st.broken.append(f"{p}:{ln.line}: {ln.control} {ln.module} "
                                         "not found")
                    continue
                if ln.module_name == "pam_limits.so":
                    st.calls.append(LimitsCall(p, ln.line, ln.control, ln.args, ln.raw))

        walk(path, None, 0)
        return st

    return host.memo(("limits-pam-stack", service), load)


def _include_path(host: Host, name: str) -> str | None:
    if name.startswith("/"):
        return name if host.is_file(name) else None
    return _service_file(host, name)


def sshd_use_pam(host: Host) -> tuple[bool | None, Evidence | None]:
    """Does sshd run PAM?  ``None`` when sshd_config is absent.

    Uses the full sshd_config model (``aiaudit.checks.legacy_sshd.effective_setting``, what
    ``sshd -T`` prints) when that check is installed, else a simple reading: first value
    wins, ``Include`` globs followed, lines under ``Match`` ignored (``UsePAM`` is not
    allowed there), compiled-in default ``no``."""
    try:
        from aiaudit.linux.sshd.effective import effective_setting
    except ImportError:
        effective_setting = None
    if effective_setting is not None:
        try:
            s = effective_setting(host, "UsePAM")
        except Exception:  # another check's failure must not break this one
            s = None
        if s is not None and s.value is not None:
            d = s.directive
            ev = (Evidence.file(d.file, d.line, d.raw) if d is not None else
                  Evidence.default("sshd compiled-in default UsePAM", s.value))
            return s.value.lower() == "yes", ev
    return _simple_use_pam(host)


def _simple_use_pam(host: Host) -> tuple[bool | None, Evidence | None]:
    path = "/etc/ssh/sshd_config"
    text = host.try_read_text(path)
    if text is None:
        return None, None

    def scan(p: str, t: str, depth: int) -> tuple[bool, Evidence] | None:
        for n, raw in enumerate(t.splitlines(), 1):
            words = raw.split("#", 1)[0].replace("=", " ").split()
            if not words:
                continue
            key = words[0].lower()
            if key == "match":
                return None  # later lines belong to Match blocks
            if key == "include" and depth < 4:
                for pat in words[1:]:
                    full = pat if pat.startswith("/") else f"/etc/ssh/{pat}"
                    for inc in host.glob(full):
                        sub = host.try_read_text(inc)
                        if sub is not None:
                            got = scan(inc, sub, depth + 1)
                            if got:
                                return got
            if key == "usepam" and len(words) > 1:
                return words[1].lower() == "yes", Evidence.file(p, n, raw.strip())
        return None

    got = scan(path, text, 0)
    if got is None:
        return False, Evidence.default("sshd compiled-in default UsePAM", "no")
    return got


# ------------------------------------------------------------------ limits files
def limits_files(host: Host, build: PamBuild, conf: str | None
                 ) -> tuple[list[tuple[str, list[lp.Line] | str]], list[str]]:
    """The files pam_limits reads, in order, parsed; a ``str`` entry is a read error that
    fails the session.  Second value: notes for the message."""
    notes: list[str] = []
    out: list[tuple[str, list[lp.Line] | str]] = []

    def read(path: str) -> list[lp.Line] | str | None:
        try:
            return lp.parse(host.read_bytes(path), path)
        except NotFound:
            return None
        except NotRegularFile as exc:
            if host.is_dir(path):
                notes.append(f"{path} is a directory: read as empty")
                return []
            return f"{exc} (the module would block or fail on it)"
        except HostError as exc:
            return str(exc)

    if conf:
        got = read(conf)
        out.append((conf, got if got is not None else "no such file (conf= argument)"))
        notes.append(f"conf={conf}: limits.d is not read")
        return out, notes
    main = LIMITS_CONF
    got = read(main)
    if got is None and build.vendordir:
        main = VENDOR_LIMITS_CONF
        got = read(main)
    if got is None:
        if build.missing_conf_fatal:
            out.append((LIMITS_CONF, "no such file (PAM < 1.5.3 refuses every session "
                                     "without it; limits.d is then not read)"))
            return out, notes
        notes.append(f"{LIMITS_CONF} absent")
    else:
        out.append((main, got))
    names: dict[str, str] = {}
    for d in (LIMITS_D, VENDOR_LIMITS_D) if build.vendordir else (LIMITS_D,):
        for fn in host.listdir(d):
            if fn.endswith(".conf") and not fn.startswith(".") and fn not in names:
                names[fn] = f"{d}/{fn}"
    for fn in sorted(names, key=lambda s: s.encode("utf-8", "surrogateescape")):
        path = names[fn]
        if host.readlink(path) is not None and not host.exists(path):
            out.append((path, "dangling symlink (fopen fails: the session is refused)"))
            break
        got = read(path)
        if got is None:
            got = "no such file"
        out.append((path, got))
        if isinstance(got, str):
            break
    return out, notes


def limits_search(build: PamBuild) -> str:
    """Where :func:`limits_files` looks for the files pam_limits reads (no ``conf=``), for
    a ``default`` evidence text: ``etc/security/limits.conf, etc/security/limits.d/*.conf``
    (with the /usr/lib/security fallbacks of a vendordir build), root-relative."""
    confs = (LIMITS_CONF, VENDOR_LIMITS_CONF) if build.vendordir else (LIMITS_CONF,)
    dirs = (LIMITS_D, VENDOR_LIMITS_D) if build.vendordir else (LIMITS_D,)
    return ", ".join([c.lstrip("/") for c in confs] + [f"{d.lstrip('/')}/*.conf" for d in dirs])


def limits_file_evidence(host: Host, path: str, what: str) -> Evidence:
    """Evidence for a file pam_limits reads that decided: ``file`` where it exists (a
    dangling link or unreadable file is there to point at), else ``default``."""
    if host.exists(path) or host.readlink(path) is not None:
        return Evidence.file(path, None, what)
    return Evidence.default(path.lstrip("/"), what)


# ------------------------------------------------------------------ starting values
@record
class Start:
    """Limits a process has before pam_limits runs, and where they come from."""

    values: dict[str, tuple[int, int]]
    evidence: tuple[Evidence, ...]
    what: str


def pid1_limits(host: Host) -> Start:
    """PID 1's limits: /proc/1/limits live, the documented fallback offline."""
    if host.live:
        try:
            vals = lp.parse_proc_limits(host.read_text("/proc/1/limits"))
            if all(i in vals for i in ITEM_KEYS):
                return Start(vals, (Evidence.runtime("/proc/1/limits"),), "PID 1's limits")
        except (HostError, ParseError):
            pass
    if _has_systemd(host):
        return Start(dict(PID1_SYSTEMD), (Evidence.default(
            "PID 1's limits (offline: systemd raises its own to nofile 1073741816, memlock "
            "64 MiB)"),), "PID 1's limits (offline: systemd's own)")
    return Start(dict(PID1_KERNEL), (Evidence.default(
        "PID 1's limits (offline, no systemd: kernel boot values nofile 1024:4096, memlock "
        "64 KiB)"),), "PID 1's limits (offline: kernel defaults)")






def unit_limits(host: Host, units: tuple[str, ...]) -> Start:
    """Limits systemd starts the first existing unit of ``units`` with: its ``Limit*=``
    (unit file + drop-ins), else the manager's ``DefaultLimit*=``, else systemd's
    built-in defaults."""
    vals: dict[str, tuple[int, int]] = {}
    ev: list[Evidence] = []
    unit = None
    for name in units:
        try:
            u = systemd.load_unit(host, name)
        except (HostError, ParseError):
            continue
        if u.exists:
            unit = u
            break
    try:
        mgr = systemd.manager_config(host)
    except (HostError, ParseError):
        mgr = []
    from aiaudit.linux.systemd.unitfile import last

    for item, key in ITEM_KEYS.items():
        a = unit.get("Service", f"Limit{key}") if unit else None
        if a is None or not a.value:
            a = last(mgr, "Manager", f"DefaultLimit{key}")
        if a is not None and a.value:
            try:
                vals[item] = lp.parse_systemd_limit(a.value, item)
                ev.append(Evidence.file(a.file, a.line, f"{a.key}={a.value}"))
                continue
            except ParseError:
                pass
        vals[item] = SYSTEMD_DEFAULTS[item]
        ev.append(Evidence.default(f"systemd default DefaultLimit{key}",
                                   ":".join(lp.fmt(v) for v in SYSTEMD_DEFAULTS[item])))
    what = f"{unit.name}'s limits" if unit else "systemd's default service limits"
    return Start(vals, tuple(ev), what)


def service_limits(host: Host, service: str) -> Start:
    """Limits of the process that opens the session (what a limit left alone keeps)."""
    comm = SERVICE_COMM.get(service)
    if host.live and comm:
        pid = proc_of(host, comm)
        if pid:
            path = f"/proc/{pid}/limits"
            try:
                vals = lp.parse_proc_limits(host.read_text(path))
                if all(i in vals for i in ITEM_KEYS):
                    return Start(vals, (Evidence.runtime(path),), f"the running {comm}'s limits")
            except (HostError, ParseError):
                pass
    start = unit_limits(host, SERVICE_UNITS.get(service, ()))
    if service not in SERVICE_UNITS:
        # not a daemon with a unit: the session process inherits from whoever started it
        who = (f"the caller's limits (the shell that ran {service})"
               if service in CALLER_SERVICES
               else f"the limits of the process that runs {service} (the login service)")
        start = replace(start, what=f"{who}, estimated here as systemd's default service "
                        "limits")
    return start


# ------------------------------------------------------------------ effective limits
@record(frozen=False)
class Effective:
    """What one login of the user through one service gets."""

    service: str
    status: str
    """``ok``, ``refused`` (the session fails), ``unknown`` (cannot be decided)."""
    values: dict[str, tuple[int, int]] = field(default_factory=dict)
    deciders: dict[str, tuple[Evidence, Evidence]] = field(default_factory=dict)
    message: str = ""
    evidence: list[Evidence] = field(default_factory=list)
    conf_target: str | None = None
    """Where a remediation line must go (the conf= file, else the limits.d drop-in)."""
    pam_applies: bool = True
    nolimits: lp.Line | None = None
    ignored: list[tuple[lp.Line, str]] = field(default_factory=list)
    """Matching lines pam_limits ignored (lost on rank, bad value...), with why."""
    clamped: dict[str, str] = field(default_factory=dict)
    """Items whose soft value was above the hard one and clamped to it: what asked for it."""


def _start_ev(start: Start, idx: int) -> Evidence:
    if not start.evidence:
        return Evidence.default(start.what)
    return start.evidence[min(idx, len(start.evidence) - 1)]


def _side_ev(side: lp.Side, start: Start, idx: int) -> Evidence:
    """What decided ``side``; for a soft side clamped to the hard one, the hard side's
    line (or starting value), saying so."""
    if side.line is not None:
        ev = Evidence.file(side.line.file, side.line.line, side.line.raw)
    else:
        ev = _start_ev(start, idx)
    if side.clamped:
        asked = f" (set at {side.clamped_line.where})" if side.clamped_line else ""
        ev = replace(ev, value=f"{ev.value or ev.source} [soft clamped: the soft value"
                     f"{asked} is above this hard limit, so the soft limit is the hard one]")
    return ev


def effective(host: Host, acc: Accounts, user: pw.Account, service: str) -> Effective:
    """Decide the limits of a session of ``user`` opened through ``service``."""
    return host.memo(("limits-effective", user.name, service),
                     lambda: _effective(host, acc, user, service))


def _keep(eff: Effective, start: Start, why: str) -> Effective:
    eff.values = {i: start.values[i] for i in ITEM_KEYS}
    eff.deciders = {i: (_start_ev(start, n),) * 2 for n, i in enumerate(ITEM_KEYS)}
    eff.message = why
    return eff


def _effective(host: Host, acc: Accounts, user: pw.Account, service: str) -> Effective:
    build = pam_build(host)
    eff = Effective(service, "ok", conf_target=DROPIN)
    inherited = service_limits(host, service)
    if service == "sshd":
        use_pam, ev = sshd_use_pam(host)
        if ev is not None:
            eff.evidence.append(ev)
        if use_pam is False:
            eff.pam_applies = False
            return _keep(eff, inherited, "sshd runs without PAM (UsePAM no): sessions keep "
                         f"{inherited.what}")
    stack = pam_stack(host, service)
    if stack.broken:
        eff.status = "refused"
        eff.message = (f"the PAM configuration of {service} is broken ({'; '.join(stack.broken)}"
                       f"): libpam refuses every session")
        eff.evidence += [Evidence.file(f) for f in stack.files[:1]]
        return eff
    if not stack.calls:
        eff.pam_applies = False
        why = "; ".join(stack.problems) or f"no session pam_limits.so in {stack.file}"
        return _keep(eff, inherited, f"pam_limits does not run for {service} ({why}): "
                     f"sessions keep {inherited.what}")
    who = subject_for(acc, user)
    values = {i: inherited.values[i] for i in ITEM_KEYS}
    deciders = {i: (_start_ev(inherited, n),) * 2 for n, i in enumerate(ITEM_KEYS)}
    what = inherited.what
    notes: list[str] = []
    # Every pam_limits line of the stack runs in turn (a service may load it twice, e.g. via
    # common-session and its own file); each starts from what the previous one left.
    for call in stack.calls:
        eff.evidence.append(Evidence.file(call.file, call.line, call.raw))
        where = f"{call.file.lstrip('/')}:{call.line}"
        kernel = build.kernel_start or call.set_all
        start = pid1_limits(host) if kernel else Start(dict(values), tuple(
            deciders[i][0] for i in ITEM_KEYS), what)
        rank = lp.KERNEL if kernel else lp.NONE
        sides: dict[str, tuple[lp.Side, lp.Side]] = {}
        for item in ITEM_KEYS:
            soft, hard = start.values[item]
            if item == "nofile" and kernel and build.kernel_start:
                soft = min(soft, FD_SETSIZE)  # Debian: soft nofile from PID 1 capped at 1024
            sides[item] = (lp.Side(soft, rank), lp.Side(hard, rank))
        files, file_notes = limits_files(host, build, call.conf)
        nr_open = kernel_nr_open(host)
        variant = lp.Variant(debian_root=build.debian,
                             nr_open=nr_open if build.nr_open else None)
        dec = lp.decide(files, who, sides, variant)
        if dec.uncertain and _same(dec, [lp.decide(files, subject_for(acc, user, guess), sides,
                                                   variant) for guess in (False, True)]):
            dec.uncertain = []  # membership unknown, but it cannot change the outcome
        if dec.uncertain:
            eff.status = "unknown"
            eff.message = ("group membership cannot be decided from the files (groups also "
                           f"come from {', '.join(acc.remote_group)} via nsswitch.conf): "
                           + ", ".join(f"{ln.where} '{ln.raw}'" for ln in dec.uncertain))
            eff.evidence += [Evidence.file(ln.file, ln.line, ln.raw) for ln in dec.uncertain]
            return eff
        if dec.status == "failed":
            if call.fatal:
                eff.status = "refused"
                eff.message = (f"pam_limits fails the session ({dec.reason}) and is "
                               f"'{call.control}' at {where}: logins of {user.name} through "
                               f"{service} are refused")
                return eff
            notes.append(f"pam_limits at {where} fails ({dec.reason}) but is "
                         f"'{call.control}': it changes nothing")
            continue
        if dec.status == "nolimits":
            ln = dec.nolimits_line
            assert ln is not None
            eff.nolimits = ln
            eff.evidence.append(Evidence.file(ln.file, ln.line, ln.raw))
            notes.append(f"'{ln.raw}' at {ln.where} matches {user.name}: pam_limits at "
                         f"{where} sets no limits at all, the session keeps {what}")
            deciders = {i: (Evidence.file(ln.file, ln.line, ln.raw),) * 2 for i in ITEM_KEYS}
            continue
        eff.nolimits = None
        eff.ignored = dec.ignored
        eff.conf_target = call.conf or DROPIN
        notes += file_notes
        for n, item in enumerate(ITEM_KEYS):
            soft, hard = dec.limits.get(item, sides[item])
            if item == "nofile" and hard.value > nr_open:
                # setrlimit(RLIMIT_NOFILE) above fs.nr_open fails with EPERM
                # (kernel/sys.c do_prlimit): upstream pam_limits then returns
                # PAM_PERM_DENIED; Debian's patch 032 ignores it and the process keeps the
                # nofile limit it had (checked with the real module).
                src = hard.line.where if hard.line else "the starting value"
                if not build.debian:
                    eff.status = "refused"
                    eff.message = (f"nofile {lp.fmt(hard.value)} (from {src}) is above "
                                   f"fs.nr_open {nr_open}: setrlimit fails and pam_limits at "
                                   f"{where} denies the session")
                    if hard.line:
                        eff.evidence.append(Evidence.file(hard.line.file, hard.line.line,
                                                          hard.line.raw))
                    return eff
                notes.append(f"nofile {lp.fmt(hard.value)} (from {src}) is above fs.nr_open "
                             f"{nr_open}: the kernel refuses it and Debian's pam_limits "
                             f"ignores that, so nofile stays {what}")
                continue
            values[item] = (soft.value, hard.value)
            deciders[item] = (_side_ev(soft, start, n), _side_ev(hard, start, n))
            if soft.clamped:
                eff.clamped[item] = soft.clamped_line.where if soft.clamped_line else \
                    "the starting value"
            else:
                eff.clamped.pop(item, None)
        unset = [i for i in ITEM_KEYS
                 if all(sd.line is None for sd in dec.limits.get(i, sides[i]))]
        if unset and kernel:
            notes.append(f"no line sets {'/'.join(unset)}: pam_limits starts from PID 1's "
                         "limits" + (" (soft nofile capped at 1024)" if build.kernel_start
                                     else ""))
        elif unset:
            notes.append(f"no line sets {'/'.join(unset)}: the session keeps {what}")
        what = f"what pam_limits at {where} set"
    eff.values, eff.deciders = values, deciders
    eff.message = f"pam_limits: {build.note}" + "".join(f"; {n}" for n in notes) + "."
    return eff


def _same(dec: lp.Decision, guesses: list[lp.Decision]) -> bool:
    """True if every guess about unknown memberships gives the same outcome; ``dec`` then
    takes it."""
    def key(d: lp.Decision) -> tuple:
        return d.status, {i: (s.value, h.value) for i, (s, h) in d.limits.items()}

    if any(key(g) != key(guesses[0]) for g in guesses[1:]):
        return False
    g = guesses[0]
    dec.status, dec.reason, dec.nolimits_line = g.status, g.reason, g.nolimits_line
    dec.limits, dec.ignored = g.limits, g.ignored
    return True


def kernel_nr_open(host: Host) -> int:
    """``fs.nr_open``: live from /proc; offline what systemd as PID 1 sets it to, else the
    kernel default 1048576."""
    if host.live:
        try:
            return int(host.read_text("/proc/sys/fs/nr_open").strip())
        except (HostError, ValueError):
            pass
    return SYSTEMD_NR_OPEN if _has_systemd(host) else 1048576


def _has_systemd(host: Host) -> bool:
    return any(host.exists(p) for p in ("/lib/systemd/systemd", "/usr/lib/systemd/systemd"))


# ------------------------------------------------------------------ the checks
MIN_SCHEMA = {"oneOf": [{"type": "integer", "minimum": 0}, {"const": "unlimited"}]}
_SERVICES = {"type": "array", "items": {"type": "string", "pattern": "^[A-Za-z0-9_.@+-]+$"},
             "minItems": 1, "default": ["sshd"],
             "description": "PAM services that start training sessions"}

EFFECTIVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["item", "type"],
    "properties": {
        "item": {"enum": list(ITEM_KEYS)},
        "type": {"enum": ["soft", "hard"]},
        "min": {**MIN_SCHEMA, "description": "least acceptable value (count for nofile, KiB for "
                "memlock as in limits.conf, or 'unlimited')"},
        "max": {**MIN_SCHEMA, "description": "greatest acceptable value (same units; "
                "'unlimited' allows any)"},
        "services": _SERVICES,
    },
}
DEFAULT_MIN = {"nofile": 65536, "memlock": "unlimited"}


def want_value(item: str, p: Mapping[str, Any]) -> tuple[int, str]:
    """(minimum in rlimit units, limits.conf spelling)."""
    m = p.get("min")
    if m is None:
        m = DEFAULT_MIN[item]
    if m == "unlimited":
        return lp.RLIM_INFINITY, "unlimited"
    return (int(m) * 1024 if item in lp.KIB_ITEMS else int(m)), str(m)








def run_effective(ctx: CheckContext) -> Iterator[Result]:
    """One result per service: the soft or hard limit a session of the user gets."""
    p = ctx.params
    item, side = p["item"], p["type"]
    idx = 0 if side == "soft" else 1
    want, want_txt = want_value(item, p)
    exp = f">= {lp.fmt(want, item)}" if want != lp.RLIM_INFINITY else "unlimited"
    most = None if p.get("max") is None else want_value(item, {"min": p["max"]})[0]
    if most is not None and most != lp.RLIM_INFINITY:
        exp += f" and <= {lp.fmt(most, item)}"
    user, acc, early = training_user(ctx)
    if early is not None:
        yield early
        return
    assert user is not None and acc is not None
    for service in p.get("services", ["sshd"]):
        subject = f"{user.name}@{service}"
        why = not_applicable(ctx.host, service)
        if why is not None:
            yield Result(Status.SKIP, subject, why, expected=exp, aspect=Aspect.CONFIG)
            continue
        try:
            eff = effective(ctx.host, acc, user, service)
        except (HostError, ParseError) as exc:
            yield Result(Status.ERROR, subject, f"cannot evaluate: {exc}", expected=exp,
                         aspect=Aspect.CONFIG)
            continue
        if eff.status == "unknown":
            yield Result(Status.ERROR, subject, eff.message, expected=exp,
                         aspect=Aspect.CONFIG, evidence=tuple(eff.evidence))
            continue
        if eff.status == "refused":
            yield Result(Status.FAIL, subject, eff.message, expected=exp, actual="login refused",
                         aspect=Aspect.CONFIG, evidence=tuple(eff.evidence),
                         remediation=Remediation(
                             "Make pam_limits succeed: restore /etc/security/limits.conf (it "
                             "may be empty), fix the conf= path, remove dangling or "
                             "unreadable files from /etc/security/limits.d."))
            continue
        value = eff.values[item][idx]
        ev = (*tuple(eff.evidence), eff.deciders[item][idx]) if eff.deciders else \
            tuple(eff.evidence)
        data = {"soft": lp.fmt(eff.values[item][0]), "hard": lp.fmt(eff.values[item][1]),
                "service": service, "pam_limits": eff.pam_applies}
        actual = lp.fmt(value, item)
        head = f"{side} {item} of {user.name} via {service} is {actual}"
        src = eff.deciders.get(item, (None, None))[idx]
        where = f" (from {src.source})" if src is not None else ""
        if idx == 0 and item in eff.clamped and src is not None:
            where = (f" (clamped to the hard limit from {src.source}: the soft value from "
                     f"{eff.clamped[item]} is higher)")
        lost = [(ln, why) for ln, why in eff.ignored if ln.item == item][:3]
        lost_txt = ""
        if lost:
            lost_txt = " Ignored: " + "; ".join(f"{ln.where} '{ln.raw}' ({why})"
                                                for ln, why in lost) + "."
            ev = (*ev, *(Evidence.file(ln.file, ln.line, ln.raw) for ln, _ in lost))
        if value >= want and (most is None or value <= most):
            yield Result(Status.PASS, subject, f"{head}{where}.{lost_txt} {eff.message}",
                         expected=exp, actual=actual, aspect=Aspect.CONFIG, evidence=ev,
                         data=data)
            continue
        yield Result(Status.FAIL, subject,
                     f"{head}{where}, expected {exp}.{lost_txt} {eff.message}", expected=exp,
                     actual=actual, aspect=Aspect.CONFIG, evidence=ev, data=data,
                     remediation=_remediation(user, service, item, side, want, want_txt, eff))


def _remediation(user: pw.Account, service: str, item: str, side: str, want: int,
                 want_txt: str, eff: Effective) -> Remediation:
    if not eff.pam_applies:
        return Remediation(
            f"pam_limits does not run for {service}: add 'session required pam_limits.so' to "
            f"/etc/pam.d/{service}" + (" and set 'UsePAM yes' in /etc/ssh/sshd_config"
                                        if service == "sshd" else "") +
            f"; then set '{user.name} {side} {item} {want_txt}' in {DROPIN}.")
    if eff.nolimits is not None:
        return Remediation(f"Remove the 'no limits' line '{eff.nolimits.raw}' at "
                           f"{eff.nolimits.where}: it discards every limit for {user.name}.")
    # A user line has the best rank: no '*' or '@group' line can override it, and among
    # user lines the last read wins, so the drop-in sorts last.  On Debian '*' lines never
    # apply to root, so root needs its own name anyway.
    lines = [f"{user.name} {side} {item} {want_txt}"]
    if side == "soft" and eff.values[item][1] < want:
        lines.append(f"{user.name} hard {item} {want_txt}")
    target = eff.conf_target or DROPIN
    note = (f" ({target} is the conf= file of pam_limits: limits.d is not read)"
            if target != DROPIN else "")
    return Remediation(
        f"Raise {side} {item} for {user.name} in {target}{note}; new sessions get it.",
        (Snippet.file(target, "\n".join(lines) + "\n",
                      f"{side} {item} for {user.name} (a user line beats later '*' lines)"),))


STACK_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {"services": _SERVICES},
}


def not_applicable(host: Host, service: str) -> str | None:
    """Why ``service`` has no sessions to judge on this root (``sshd is not installed``, no
    PAM configuration at all), or ``None``.  ``limits.pam_stack`` and ``limits.effective``
    both skip with this reason, so they tell the same story."""
    if service == "sshd":
        if not (host.exists("/usr/sbin/sshd") or host.exists("/etc/ssh/sshd_config")):
            return "sshd is not installed"
        if sshd_use_pam(host)[0] is False:
            return None  # sshd runs, without PAM: both checks report that
    try:
        st = pam_stack(host, service)
    except (HostError, ParseError):
        return None  # reported by the checks themselves
    if st.file is None:
        return f"no PAM configuration for {service} (neither /etc/pam.d/{service} nor 'other')"
    return None


def run_stack(ctx: CheckContext) -> Iterator[Result]:
    """One result per service: does its session stack run pam_limits?"""
    host = ctx.host
    for service in ctx.params.get("services", ["sshd"]):
        ev: list[Evidence] = []
        why = not_applicable(host, service)
        if why is not None:
            yield Result(Status.SKIP, service, why)
            continue
        if service == "sshd":
            use_pam, e = sshd_use_pam(host)
            if e is not None:
                ev.append(e)
            if use_pam is False:
                yield Result(Status.FAIL, service, "sshd runs without PAM (UsePAM no): "
                             "limits.conf is never applied to SSH sessions", expected="yes",
                             actual="UsePAM no", aspect=Aspect.CONFIG, evidence=tuple(ev),
                             remediation=Remediation("Set 'UsePAM yes' in /etc/ssh/sshd_config "
                                                     "and reload sshd."))
                continue
        try:
            st = pam_stack(host, service)
        except (HostError, ParseError) as exc:
            yield Result(Status.ERROR, service, f"cannot read the PAM stack: {exc}")
            continue
        assert st.file is not None  # not_applicable() skipped a service without one
        if st.broken:
            yield Result(Status.FAIL, service, f"the PAM configuration of {service} is broken "
                         f"({'; '.join(st.broken)}): libpam refuses every session",
                         expected="loaded", actual="broken", aspect=Aspect.CONFIG,
                         evidence=(*ev, Evidence.file(st.file)),
                         remediation=Remediation("Restore the missing PAM files or remove the "
                                                 "include lines that name them."))
            continue
        if st.calls:
            c = st.calls[0]
            yield Result(Status.PASS, service, f"{service} runs pam_limits "
                         f"({c.file.lstrip('/')}:{c.line}: {c.raw})", expected="loaded",
                         actual=c.control, aspect=Aspect.CONFIG,
                         evidence=(*ev, Evidence.file(c.file, c.line, c.raw)))
            continue
        msg = f"no 'session ... pam_limits.so' in the {service} stack ({', '.join(st.files)})"
        if st.problems:
            msg += "; " + "; ".join(st.problems)
        target = st.file if st.file.startswith("/etc/") else f"/etc/pam.d/{service}"
        yield Result(Status.FAIL, service, msg + ": limits.conf does not apply",
                     expected="loaded", actual="absent", aspect=Aspect.CONFIG,
                     evidence=(*ev, Evidence.file(st.file)),
                     remediation=Remediation(
                         f"Add 'session required pam_limits.so' to {target}.",
                         (Snippet.command(f"echo 'session required pam_limits.so' >> {target}",
                                          "load pam_limits in the session stack"),)))


def run_not_root(ctx: CheckContext) -> Iterator[Result]:
    """FAIL when the training user is uid 0."""
    user, _acc, early = training_user(ctx)
    if early is not None:
        yield early
        return
    assert user is not None
    ev = (Evidence.file("/etc/passwd", user.line, f"{user.name}:x:{user.uid}:{user.gid}"),)
    if user.uid == 0:
        yield Result(Status.FAIL, user.name, f"training runs as {user.name} (uid 0)"
                     + (f", from {ctx.user_source}" if ctx.user_source else ""),
                     expected="uid != 0", actual="uid 0", evidence=ev,
                     remediation=Remediation(
                         "Create an unprivileged training account, give it the GPU device "
                         "groups (video/render) and its limits, and start jobs as that user.",
                         (Snippet.command("useradd -m -G video,render trainer",
                                          "an unprivileged training user"),)))
        return
    yield Result(Status.PASS, user.name, f"training user {user.name} is uid {user.uid}",
                 expected="uid != 0", actual=f"uid {user.uid}", evidence=ev)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register the training-user limit checks."""
    return [
        CheckSpec(
            id="limits.effective", title="The training user's session gets a resource limit",
            run=run_effective, params_schema=EFFECTIVE_SCHEMA,
            description=(
                "For each login service: whether pam_limits runs (PAM session stack, sshd "
                "UsePAM), then the soft/hard nofile or memlock it sets for the user exactly "
                "as the scanned root's pam_limits build does (conf=, limits.conf, limits.d in "
                "strcmp order, domain ranks, '-' type, no-limits lines, Debian patches), and "
                "the service's own limits where pam_limits leaves a value alone.")),
        CheckSpec(
            id="limits.pam_stack", title="Login services run pam_limits",
            run=run_stack, params_schema=STACK_SCHEMA,
            description="Follows @include/include/substack to a 'session ... pam_limits.so' "
                        "line; for sshd also requires UsePAM yes."),
        CheckSpec(
            id="user.not_root", title="Training does not run as root", run=run_not_root,
            params_schema={"type": "object", "additionalProperties": False},
            description="The training user (--user, SLURM_JOB_USER, SUDO_USER, "
                        "settings.user) must not be uid 0 in the scanned root's passwd."),
    ]
