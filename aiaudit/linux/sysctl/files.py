"""Every sysctl.d file of the scanned root, found, ordered and parsed once per run, as
systemd-sysctl and procps find them."""

from __future__ import annotations

from dataclasses import field

from aiaudit.core.errors import HostError, NotFound, NotRegularFile, ParseError, SymlinkLoop
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.core.startup.records import record
from aiaudit.linux.packages import dpkg
from aiaudit.linux.packages.installed import dpkg_version
from aiaudit.linux.sysctl import conf as sp


# ------------------------------------------------------------------ persisted config
@record
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
    procps_glob_exclude: bool = True
    """procps >= 4.0.5: ``-pattern`` exclusions stop globs by ``fnmatch``."""
    tuned_reapply_entries: tuple[sp.Entry, ...] = ()
    """What tuned re-applies after its profile (``reapply_sysctl``): ``/run/sysctl.d`` and
    ``/etc/sysctl.d`` (same basename: /run wins), then ``/etc/sysctl.conf``."""
    dirs: tuple[str, ...] = ()
    """The directories systemd-sysctl reads, in its order (split /usr: also /lib)."""
    procps_dirs: tuple[str, ...] = ()
    """The directories ``sysctl --system`` reads, in its order (then ``/etc/sysctl.conf``)."""
    problem_evidence: tuple[Evidence, ...] = ()
    """The files behind :attr:`problems` (each exists: it could not be read or parsed)."""


def _listing(host: Host, dirs: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    return [(d, host.listdir(d)) for d in dirs]


def _procps_variant(host: Host) -> tuple[str | None, tuple[str, ...], bool, bool]:
    """(version, directory order, glob support, glob exclusions) of the scanned root's
    procps.  Glob exclusions (``-net.ipv4.conf.*.rp_filter`` stopping other globs) came in
    4.0.5 (procps 39748b78); 4.0.2 only honours an exclusion spelled exactly as the path."""
    full = dpkg_version(host, "procps")
    if full is None:
        return None, sp.PROCPS4_DIRS, True, True
    version = dpkg.upstream_version(full)
    vt = dpkg.version_tuple(version)
    if vt >= (4,):
        return version, sp.PROCPS4_DIRS, True, vt >= (4, 0, 5)
    if (3, 3, 15) <= vt < (3, 3, 17):
        return version, sp.PROCPS_OLD_DIRS, False, False
    return version, sp.PROCPS4_DIRS, False, False


class _Files:
    """Reads and parses each sysctl file once for both programs (systemd-sysctl and procps
    read mostly the same files), collecting what could not be used and why."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.problems: list[str] = []
        """Files systemd-sysctl reads that could not be read: the boot value is unknown."""
        self.problem_ev: list[Evidence] = []
        self.notes: list[str] = []
        self.parsed: dict[tuple[str, bool], list[sp.Entry]] = {}
        self._masked: dict[str, bool] = {}

    def entries(self, cf: sp.ConfFile, procps: bool = False) -> list[sp.Entry]:
        """The entries of ``cf`` as systemd-sysctl (or, ``procps``, ``sysctl --system``)
        parses it; an unusable file gives none, with a note or a problem."""
        if (cf.path, procps) in self.parsed:
            return self.parsed[cf.path, procps]
        out: list[sp.Entry] = []
        if cf.path not in self._masked:
            self._masked[cf.path] = self.host.is_masked(cf.path)
        if self._masked[cf.path]:
            if not procps:
                self.notes.append(f"{cf.path} is masked (symlink to /dev/null)")
        else:
            out = self._parse(cf, procps)
        self.parsed[cf.path, procps] = out
        return out

    def _parse(self, cf: sp.ConfFile, procps: bool) -> list[sp.Entry]:
        try:
            text = self.host.read_text(cf.path)
            return sp.parse_procps(text, cf.path) if procps else sp.parse(text, cf.path)[0]
        except (NotRegularFile, SymlinkLoop) as exc:
            if not procps:
                self.notes.append(f"{exc}; systemd-sysctl cannot use it either")
        except NotFound:
            if not procps:
                self.notes.append(f"{cf.path}: dangling symlink, ignored")
        except (HostError, ParseError) as exc:
            if not procps:
                self.problems.append(str(exc))
                self.problem_ev.append(_problem_evidence(cf.path, exc))
            elif (cf.path, False) not in self.parsed:
                # only `sysctl --system` reads it (a dotfile, sysctl.conf without the
                # 99-sysctl.conf link): the boot value is still known
                self.notes.append(f"{exc}; only `sysctl --system` reads it")
        return []

    def tuned_entries(self) -> list[sp.Entry]:
        """What tuned re-applies (plugin_sysctl._apply_system_sysctl: SYSCTL_CONFIG_DIRS =
        /run, /etc, the first directory holding a basename wins, sorted by name, then
        /etc/sysctl.conf); a file systemd reads keeps systemd's verdict."""
        tfiles = sp.order_files(_listing(self.host, TUNED_REAPPLY_DIRS))
        if self.host.is_file(sp.SYSCTL_CONF):
            tfiles.append(sp.ConfFile("sysctl.conf", sp.SYSCTL_CONF))
        out: list[sp.Entry] = []
        for cf in tfiles:
            if (cf.path, False) in self.parsed:  # systemd reads it too: its verdict stands
                out += self.parsed[cf.path, False]
                continue
            try:  # only tuned re-applies it (sysctl.conf without the 99-sysctl.conf link)
                out += sp.parse(self.host.read_text(cf.path), cf.path)[0]
            except (HostError, ParseError) as exc:
                self.notes.append(f"{exc}; only tuned's reapply_sysctl reads it")
        return out


def load_config(host: Host) -> SysctlConfig:
    """Find, order and parse every sysctl.d file of the scanned root (uncached: see
    :func:`loaded` for the run's shared copy)."""
    split_usr = host.readlink("/lib") is None and host.is_dir("/lib/sysctl.d")
    dirs = sp.SYSTEMD_DIRS_SPLIT_USR if split_usr else sp.SYSTEMD_DIRS
    fs = _Files(host)
    files = sp.order_files(_listing(host, dirs))
    entries = [e for cf in files for e in fs.entries(cf)]
    version, pdirs, globs, glob_exclude = _procps_variant(host)
    # procps PreloadSystem keeps dotfiles (any name of 5+ characters ending in .conf)
    pfiles = sp.order_files(_listing(host, pdirs), hidden=True)
    pentries = [e for cf in pfiles for e in fs.entries(cf, procps=True)]
    if host.is_file(sp.SYSCTL_CONF):
        pentries += fs.entries(sp.ConfFile("sysctl.conf", sp.SYSCTL_CONF), procps=True)
    tentries = fs.tuned_entries()
    return SysctlConfig(tuple(files), tuple(entries), tuple(pentries), version, globs,
                        tuple(fs.problems), tuple(fs.notes), glob_exclude, tuple(tentries),
                        dirs, pdirs, tuple(fs.problem_ev))


def loaded(host: Host) -> SysctlConfig:
    """The run's :class:`SysctlConfig` (:func:`load_config` once per run, per Host)."""
    return host.memo(("sysctl-config",), lambda: load_config(host))


def _problem_evidence(path: str, exc: Exception) -> Evidence:
    """The file (it exists) that made the persisted value unknown, with the problem as its
    value: the line of a parse error, else the file."""
    line = exc.line if isinstance(exc, ParseError) else None
    msg = str(exc)
    for prefix in (f"{path}:{line}: ", f"{path}: ", f"line {line}: "):
        if msg.startswith(prefix):
            msg = msg[len(prefix):]
            break
    return Evidence.file(path, line, msg)


TUNED_REAPPLY_DIRS = ("/run/sysctl.d", "/etc/sysctl.d")
"""tuned ``plugins/plugin_sysctl.py`` ``SYSCTL_CONFIG_DIRS``, in its priority order."""
