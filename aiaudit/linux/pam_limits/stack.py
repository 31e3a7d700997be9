"""The PAM session stack of a service: every ``session ... pam_limits.so`` line it reaches.

libpam (``pam_handlers.c``) reads ``/etc/pam.d/<service>`` (libpam >= 1.4 vendordir builds
fall back to ``/usr/lib/pam.d``), else the ``other`` file; Debian's ``@include`` pulls in
every line of another file, ``include`` and ``substack`` the lines of one type.  A missing
``@include`` aborts ``pam_start`` and a missing ``include`` denies the stack: both fail
every session (checked against the real libpam, ``tests/oracle``).  Parsing is
:mod:`aiaudit.linux.pam_limits.pam`.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Callable

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.core.startup.records import record
from aiaudit.linux.pam_limits import pam as pp

PAM_DIRS = ("/etc/pam.d", "/usr/lib/pam.d")
"""Service files: /etc first; libpam >= 1.4 (vendordir builds) falls back to /usr/lib."""
MAX_DEPTH = 16
"""Include nesting followed before giving up (a loop)."""


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


def service_file(host: Host, name: str) -> str | None:
    """The file libpam reads for service ``name`` (/etc/pam.d first), or ``None``."""
    for d in PAM_DIRS:
        if host.is_file(f"{d}/{name}"):
            return f"{d}/{name}"
    return None


def include_path(host: Host, name: str) -> str | None:
    """The file an include names: an absolute path as is, else a service file."""
    if name.startswith("/"):
        return name if host.is_file(name) else None
    return service_file(host, name)


def pam_stack(host: Host, service: str) -> Stack:
    """Follow the service's file (or ``other``), ``@include``, ``include`` and
    ``substack`` to every ``session`` line loading pam_limits (memoized per run)."""
    return host.memo(("limits-pam-stack", service), lambda: _load(host, service))


def _load(host: Host, service: str) -> Stack:
    path = service_file(host, service)
    st = Stack(service, path)
    if path is None:
        path = service_file(host, "other")
        if path is None:
            st.problems.append(f"no PAM configuration for {service} (nor 'other')")
            return st
        st.file = path
    _walk(host, st, path, None, 0)
    return st


def _walk(host: Host, st: Stack, path: str, only: str | None, depth: int) -> None:
    """Add the pam_limits session lines of ``path`` (``only``: the one type an
    ``include``/``substack`` takes) to ``st``."""
    if depth > MAX_DEPTH:
        st.problems.append(f"{path}: includes nested too deeply")
        return
    st.files.append(path)
    try:
        lines = pp.parse(host.read_text(path), path)
    except (HostError, ParseError) as exc:
        st.broken.append(str(exc))
        return
    for ln in lines:
        if ln.type == "@include":
            _follow(host, st, path, ln, f"@include {ln.module}", only, depth)
        elif ln.type != "session" or (only is not None and ln.type != only):
            continue
        elif ln.control in ("include", "substack"):
            _follow(host, st, path, ln, f"{ln.control} {ln.module}", "session", depth)
        elif ln.module_name == "pam_limits.so":
            st.calls.append(LimitsCall(path, ln.line, ln.control, ln.args, ln.raw))


def _follow(host: Host, st: Stack, path: str, ln: pp.PamLine, what: str, only: str | None,
            depth: int) -> None:
    inc = include_path(host, ln.module)
    if inc:
        _walk(host, st, inc, only, depth + 1)
    else:
        st.broken.append(f"{path}:{ln.line}: {what} not found")


SSHD_CONFIG = "/etc/ssh/sshd_config"


MAX_INCLUDE_DEPTH = 4
"""``Include`` nesting the simple reading follows."""


def sshd_use_pam(host: Host) -> tuple[bool | None, Evidence | None]:
    """Does sshd run PAM?  ``None`` when sshd_config is absent.

    Uses the full sshd_config model (:func:`aiaudit.linux.sshd.effective.effective_setting`,
    what ``sshd -T`` prints) when it can be imported, else a simple reading: first value
    wins, ``Include`` globs followed, lines under ``Match`` ignored (``UsePAM`` is not
    allowed there), compiled-in default ``no``."""
    effective_setting: Callable[[Host, str], Any] | None
    try:
        from aiaudit.linux.sshd.effective import effective_setting
    except ImportError:
        effective_setting = None
    if effective_setting is not None:
        try:
            s = effective_setting(host, "UsePAM")
        except Exception:  # the sshd model's failure must not break the limits checks
            s = None
        if s is not None and s.value is not None:
            d = s.directive
            ev = (Evidence.file(d.file, d.line, d.raw) if d is not None else
                  Evidence.default("sshd compiled-in default UsePAM", s.value))
            return s.value.lower() == "yes", ev
    return simple_use_pam(host)


def simple_use_pam(host: Host) -> tuple[bool | None, Evidence | None]:
    """``UsePAM`` from sshd_config without the full model (see :func:`sshd_use_pam`)."""
    text = host.try_read_text(SSHD_CONFIG)
    if text is None:
        return None, None
    got = _scan(host, SSHD_CONFIG, text, 0)
    if got is None:
        return False, Evidence.default("sshd compiled-in default UsePAM", "no")
    return got


def _scan(host: Host, path: str, text: str, depth: int) -> tuple[bool, Evidence] | None:
    """The first ``UsePAM`` of ``text`` (and the files it includes) before any ``Match``."""
    for n, raw in enumerate(text.splitlines(), 1):
        words = raw.split("#", 1)[0].replace("=", " ").split()
        if not words:
            continue
        key = words[0].lower()
        if key == "match":
            return None  # later lines belong to Match blocks
        if key == "include" and depth < MAX_INCLUDE_DEPTH:
            got = _scan_includes(host, words[1:], depth)
            if got:
                return got
        if key == "usepam" and len(words) > 1:
            return words[1].lower() == "yes", Evidence.file(path, n, raw.strip())
    return None


def _scan_includes(host: Host, patterns: list[str], depth: int
                   ) -> tuple[bool, Evidence] | None:
    for pat in patterns:
        full = pat if pat.startswith("/") else f"/etc/ssh/{pat}"
        for inc in host.glob(full):
            sub = host.try_read_text(inc)
            if sub is not None:
                got = _scan(host, inc, sub, depth + 1)
                if got:
                    return got
    return None


def not_applicable(host: Host, service: str) -> str | None:
    """Why ``service`` has no sessions to judge on this root (``sshd is not installed``, no
    PAM configuration at all), or ``None``.  ``limits.pam_stack`` and ``limits.effective``
    both skip with this reason, so they tell the same story."""
    if service == "sshd":
        if not (host.exists("/usr/sbin/sshd") or host.exists(SSHD_CONFIG)):
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
