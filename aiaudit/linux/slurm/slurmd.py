"""Which ``slurm.conf`` slurmd really reads.

slurmd (22.05, ``src/slurmd/slurmd/slurmd.c``; slurmd(8)) takes ``-f FILE`` first, else the
``SLURM_CONF`` environment variable, else the compiled-in ``/etc/slurm/slurm.conf``
(``/etc/slurm-llnl`` on old Debian packages); it hands the file it uses to the prolog as
``SLURM_CONF``.  ``tests/linux/slurm/test_slurmd.py`` checks this order against the real
slurmd.

Live, the running slurmd's ``/proc/<pid>/cmdline`` and ``/proc/<pid>/environ`` decide.
Offline, its unit does as systemd would start it: ``Environment=`` (an empty assignment
resets the list), then ``EnvironmentFile=`` files (they override ``Environment=``; a ``-``
prefix allows a missing file), then ``ExecStart=`` with ``$VAR`` (split into words) and
``${VAR}`` (one word) expanded, as systemd.service(5) documents.
"""

from __future__ import annotations

import re
import shlex

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record
from aiaudit.linux.packages.installed import dpkg_version
from aiaudit.linux.procs import proc_of
from aiaudit.linux.slurm import conf as sp
from aiaudit.linux.systemd import units as systemd

DEFAULT_CONFS = ("/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf")
UNIT = "slurmd.service"
_VAR = lazy_pattern(r"\$\{(\w+)\}|\$(\w+)")
_ASSIGN = lazy_pattern(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


@record
class ConfChoice:
    """The slurm.conf slurmd uses and why."""

    path: str | None
    """Host path (``None``: no slurm.conf found)."""
    how: str
    """``-f /x on the running slurmd's command line``, ``the default path``..."""
    evidence: tuple[Evidence, ...] = ()


def flag_value(argv: list[str]) -> str | None:
    """The value of slurmd's last ``-f FILE`` / ``-fFILE`` (getopt: later options win)."""
    out = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            break
        if a == "-f" and i + 1 < len(argv):
            out, i = argv[i + 1], i + 2
            continue
        if a.startswith("-f") and len(a) > 2:
            out = a[2:]
        i += 1
    return out


def env_file(text: str) -> dict[str, str]:
    """systemd ``EnvironmentFile=``: ``KEY=VALUE`` lines, ``#``/``;`` comments, quotes
    removed."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        if raw.lstrip()[:1] in ("#", ";"):
            continue
        m = _ASSIGN().match(raw)
        if not m:
            continue
        val = m.group(2).strip()
        try:
            words = shlex.split(val, comments=False)
            val = " ".join(words) if len(words) != 1 else words[0]
        except ValueError:
            pass
        out[m.group(1)] = val
    return out


def expand_exec(cmd: str, env: dict[str, str]) -> list[str]:
    """``ExecStart=`` words with ``$VAR`` (a whole word: split on whitespace) and
    ``${VAR}`` expanded from ``env``."""
    try:
        words = shlex.split(cmd.lstrip("-@:+!"))
    except ValueError:
        words = cmd.split()
    out: list[str] = []
    for w in words:
        m = re.fullmatch(r"\$(\w+)", w)
        if m:
            out.extend(env.get(m.group(1), "").split())
            continue
        out.append(_VAR().sub(lambda x: env.get(x.group(1) or x.group(2), ""), w))
    return out


def conf_choice(host: Host, pid: str | None = None) -> ConfChoice:
    """The slurm.conf of the scanned root's slurmd (memoized); ``pid`` is the running
    slurmd's (live only)."""
    return host.memo(("slurmd-conf", pid), lambda: _choice(host, pid))


def _default(host: Host, why: str) -> ConfChoice:
    path = next((p for p in DEFAULT_CONFS if host.is_file(p)), None)
    return ConfChoice(path, f"the default path ({why})")


def _choice(host: Host, pid: str | None) -> ConfChoice:
    if host.live and pid is not None:
        got = _from_proc(host, pid)
        if got is not None:
            return got
    try:
        unit = systemd.load_unit(host, UNIT)
    except (HostError, ParseError):
        return _default(host, f"{UNIT} cannot be read")
    if not unit.exists:
        return _default(host, f"no {UNIT}")
    got_env = _unit_environment(host, unit)
    if isinstance(got_env, str):
        return _default(host, got_env)
    env, origin = got_env
    starts = unit.get_all("Service", "ExecStart")
    argv = expand_exec(starts[-1].value, env) if starts else []
    flag = flag_value(argv[1:])
    if flag and flag.startswith("/"):
        ev = [Evidence.file(starts[-1].file, starts[-1].line, f"ExecStart={starts[-1].value}")]
        return ConfChoice(flag, f"-f {flag} on {UNIT}'s command line", tuple(ev))
    conf = env.get("SLURM_CONF")
    if conf and conf.startswith("/"):
        return ConfChoice(conf, f"SLURM_CONF={conf} in {UNIT}'s environment",
                          (origin["SLURM_CONF"],))
    return _default(host, f"{UNIT} sets neither -f nor SLURM_CONF")


def _unit_environment(host: Host, unit: systemd.Unit
                      ) -> tuple[dict[str, str], dict[str, Evidence]] | str:
    """The environment systemd starts the unit with (``Environment=``, an empty assignment
    resetting it, then ``EnvironmentFile=`` files overriding it) and where each variable
    comes from; or why systemd would not start it (a required file is missing)."""
    env: dict[str, str] = {}
    origin: dict[str, Evidence] = {}
    for a in unit.get_all("Service", "Environment"):
        if not a.value.strip():
            env.clear()
            continue
        try:
            words = shlex.split(a.value)
        except ValueError:
            continue
        for w in words:
            k, eq, v = w.partition("=")
            if eq:
                env[k] = v
                origin[k] = Evidence.file(a.file, a.line, f"Environment={w}")
    for a in unit.get_all("Service", "EnvironmentFile"):
        path = a.value.strip()
        optional = path.startswith("-")
        path = path.lstrip("-")
        if not path.startswith("/"):
            continue
        try:
            text = host.try_read_text(path)
        except HostError:
            text = None
        if text is None:
            if not optional:  # systemd refuses to start the unit
                return f"{path} ({a.file}:{a.line}) is missing"
            continue
        for k, v in env_file(text).items():
            env[k] = v
            origin[k] = Evidence.file(path, None, f"{k}={v}")
    return env, origin


def _from_proc(host: Host, pid: str) -> ConfChoice | None:
    try:
        argv = host.read_text(f"/proc/{pid}/cmdline").split("\x00")
    except HostError:
        return None
    flag = flag_value([a for a in argv[1:] if a])
    if flag and flag.startswith("/"):
        return ConfChoice(flag, f"-f {flag} on the running slurmd's command line (pid {pid})",
                          (Evidence.runtime(f"/proc/{pid}/cmdline", " ".join(argv).strip()),))
    try:
        environ = host.read_text(f"/proc/{pid}/environ").split("\x00")
    except HostError:
        return None  # unreadable: fall back to the unit
    for var in environ:  # getenv: the first one
        if var.startswith("SLURM_CONF="):
            conf = var[len("SLURM_CONF="):]
            if conf.startswith("/"):
                return ConfChoice(conf, f"SLURM_CONF={conf} in the running slurmd's "
                                  f"environment (pid {pid})",
                                  (Evidence.runtime(f"/proc/{pid}/environ", var),))
    return _default(host, f"the running slurmd (pid {pid}) sets neither -f nor SLURM_CONF")


SLURM_CONFS = DEFAULT_CONFS


def running_conf_choice(host: Host) -> ConfChoice:
    """:func:`conf_choice` for the slurmd that runs now (live: its ``/proc`` entry decides),
    or as its unit would start it (offline)."""
    return conf_choice(host, proc_of(host, "slurmd") if host.live else None)


def slurm_conf(host: Host) -> tuple[str | None, dict[str, sp.Setting], list[str]]:
    """(path, {lowercased key: last setting}, problems) of the slurm.conf slurmd reads."""
    choice = running_conf_choice(host)
    path = choice.path
    settings: dict[str, sp.Setting] = {}
    problems: list[str] = []
    if path is None:
        return None, settings, problems
    if not host.is_file(path):
        problems.append(f"{path} ({choice.how}) is not a readable file")
        return path, settings, problems
    base = path.rsplit("/", 1)[0]

    def load(p: str, depth: int) -> None:
        try:
            items, includes = sp.parse(host.read_text(p), p)
        except (HostError, ParseError) as exc:
            problems.append(str(exc))
            return
        for s in items:
            settings[s.key.lower()] = s  # a repeated key: the last one read wins
        for _n, pat in includes:
            full = pat if pat.startswith("/") else f"{base}/{pat}"
            for inc in host.glob(full) if depth < 8 else []:
                load(inc, depth + 1)

    load(path, 0)
    return path, settings, problems


def installed(host: Host) -> bool:
    """Slurm's node daemon is present: a slurm.conf, a slurmd unit or package."""
    if any(host.is_file(p) for p in SLURM_CONFS):
        return True
    if dpkg_version(host, "slurmd") or dpkg_version(host, "slurm-wlm"):
        return True
    return any(host.exists(f"{d}/slurmd.service") for d in
               ("/etc/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"))
