"""Run the real systemd-sysctl and procps ``sysctl --system`` on generated configurations.

Each case is a directory holding a fixture root (``root/etc/sysctl.d``, ``root/run/sysctl.d``,
``root/usr/local/lib/sysctl.d``, ``root/usr/lib/sysctl.d``, ``root/etc/sysctl.conf`` and a
dpkg status naming the installed procps) and one fake ``/proc/sys`` tree per program:
regular files for the keys, holding a sentinel.  One ``unshare -m`` call runs a shell loop
that, for every case, bind-mounts the case's directories over the real ones (a private mount
namespace: nothing outside it changes), runs the program and unmounts.  A key file still
starting with the sentinel was not written; otherwise its first line is the value the
program wrote last (every write starts at offset 0 and ends with a newline).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

SYSTEMD_SYSCTL = "/lib/systemd/systemd-sysctl"
UNSET = b"UNSET-SENTINEL"
"""Initial content of every fake key file.  systemd writes without truncating (and skips a
write that would not change the value), procps truncates; either way the first line is
the last value written, and the sentinel means "never written"."""
PROGRAMS = ("systemd", "procps")

KEYS = (
    "vm/swappiness",
    "vm/dirty_ratio",
    "vm/dirty_background_ratio",
    "net/ipv4/ip_local_port_range",
    "net/ipv4/conf/all/rp_filter",
    "net/ipv4/conf/default/rp_filter",
    "net/ipv4/conf/eth0/rp_filter",
    "net/ipv4/conf/eth0.100/rp_filter",
)
"""Keys present in the fake /proc/sys (slash form); globs expand against these files."""

GLOBS = (
    "net.ipv4.conf.*.rp_filter",
    "net.ipv4.conf.eth*.rp_filter",
    "net/ipv4/conf/*/rp_filter",
    "net.ipv4.conf.[ad]*.rp_filter",
    "net.ipv4.conf.eth?.rp_filter",
    "net.*.rp_filter",  # one component: glob(3) does not cross '/'
    "vm.dirty_*",
    "vm.*",
    "/net/ipv4/conf/*/rp_filter",  # procps keeps the leading slash: //net/... paths
    "net.ipv4.conf.[^a]*.rp_filter",  # glibc: [^...] negates like [!...]
    "net.ipv4.conf.eth0/*.rp_filter",  # no match: the '/' is a literal '.' here
)

DIRS = ("etc/sysctl.d", "run/sysctl.d", "usr/local/lib/sysctl.d", "usr/lib/sysctl.d")
NAMES = ("10-a.conf", "50-b.conf", "60-x.conf", "99-z.conf", "a.conf", "B.conf",
         "100-y.conf", ".hidden.conf", ".conf", "README", "x.conf.bak")

MOUNT_SCRIPT = r"""
set -u
run_case() {  # $1 case dir, $2 program name, $3... command
  c=$1; prog=$2; shift 2
  mount --bind "$c/proc-$prog" /proc/sys || return 1
  mount --bind "$c/root/etc/sysctl.d" /etc/sysctl.d || return 1
  mount --bind "$c/sysctl.conf" /etc/sysctl.conf || return 1
  mount --bind "$c/root/usr/lib/sysctl.d" /usr/lib/sysctl.d || return 1
  mount --bind "$c/root/run" /run || return 1
  mount --bind "$c/root/usr/local" /usr/local || return 1
  "$@" >"$c/$prog.log" 2>&1
  echo $? >"$c/$prog.rc"
  umount /usr/local /run /usr/lib/sysctl.d /etc/sysctl.conf /etc/sysctl.d /proc/sys
}
while read -r c; do
  run_case "$c" systemd SYSTEMD_SYSCTL || exit 1
  run_case "$c" procps sysctl --system || exit 1
done <"$1"
"""


def available() -> str | None:
    """``None`` if the oracle can run here, else the reason it cannot."""
    if os.geteuid() != 0:
        return "needs root (mount namespaces)"
    for prog in ("unshare", "mount", "sysctl", "dpkg-query"):
        if shutil.which(prog) is None:
            return f"{prog} not installed"
    if not os.access(SYSTEMD_SYSCTL, os.X_OK):
        return f"{SYSTEMD_SYSCTL} not installed"
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        return f"unshare -m fails: {probe.stderr.decode(errors='replace').strip()}"
    if not os.path.isfile("/etc/sysctl.conf"):
        return "/etc/sysctl.conf missing (needed as a bind-mount target)"
    return None


def procps_version() -> str:
    """Full Debian version of the installed procps (written into each case's dpkg status)."""
    return subprocess.run(["dpkg-query", "-W", "-f=${Version}", "procps"],
                          capture_output=True, text=True, check=True).stdout.strip()


@dataclass
class Case:
    """One configuration: files by host path, symlinks, directories, sysctl.conf."""

    name: str
    files: dict[str, str] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    dirs: list[str] = field(default_factory=list)

    def listing(self) -> str:
        """The configuration as text, for failure messages."""
        out = [f"--- case {self.name}"]
        for p, t in sorted(self.links.items()):
            out.append(f"{p} -> {t}")
        for d in self.dirs:
            out.append(f"{d}/ (directory)")
        for p, text in sorted(self.files.items()):
            out.append(f"{p}:")
            out.extend(f"    | {line}" for line in text.splitlines())
        return "\n".join(out)


def materialise(case: Case, base: Path, procps: str) -> Path:
    """Write ``case`` under ``base/<name>``; return the case directory."""
    c = base / case.name
    root = c / "root"
    for d in DIRS:
        (root / d).mkdir(parents=True, exist_ok=True)
    status = root / "var/lib/dpkg/status"
    status.parent.mkdir(parents=True)
    status.write_text(f"Package: procps\nStatus: install ok installed\nVersion: {procps}\n\n")
    for path, text in case.files.items():
        p = root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for path, target in case.links.items():
        p = root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, p)
    for d in case.dirs:
        (root / d.lstrip("/")).mkdir(parents=True, exist_ok=True)
    # The bind-mount source for /etc/sysctl.conf: an empty file stands for "absent"
    # (procps reads nothing from either, and systemd never reads it directly).
    conf = root / "etc/sysctl.conf"
    (c / "sysctl.conf").write_text(conf.read_text() if conf.is_file() else "")
    for prog in PROGRAMS:
        for key in KEYS:
            f = c / f"proc-{prog}" / key
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_bytes(UNSET + b"\n")
    return c


def run_all(case_dirs: list[Path], work: Path) -> None:
    """Run both programs on every case, in one private mount namespace per CPU (each
    namespace has its own mounts, so the shards do not see each other)."""
    script = work / "oracle.sh"
    script.write_text(MOUNT_SCRIPT.replace("SYSTEMD_SYSCTL", SYSTEMD_SYSCTL))
    shards = max(1, min(os.cpu_count() or 1, 8, len(case_dirs)))
    procs = []
    for i in range(shards):
        lst = work / f"cases-{i}.txt"
        lst.write_text("".join(f"{c}\n" for c in case_dirs[i::shards]))
        procs.append(subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", str(script), str(lst)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"oracle namespace script failed ({proc.returncode}): "
                               f"{err[-2000:]}")


def written(case_dir: Path, prog: str) -> dict[str, str | None]:
    """What ``prog`` left in each key: the value written last, or ``None``."""
    out: dict[str, str | None] = {}
    for key in KEYS:
        first = (case_dir / f"proc-{prog}" / key).read_bytes().split(b"\n", 1)[0]
        out[key] = None if first == UNSET else first.decode()
    return out


# ------------------------------------------------------------------ the generator
def _spell(rng: random.Random, key: str) -> str:
    """One of the spellings systemd and procps accept for ``key``."""
    dotted = key.translate(str.maketrans("./", "/."))
    r = rng.random()
    if r < 0.05:
        return dotted.replace(".", "..", 1)  # repeated separator
    if r < 0.08:
        return dotted + "\v"  # C isspace (procps strips it), not systemd WHITESPACE
    return rng.choice((dotted, dotted, key, "/" + key))


def _value(rng: random.Random, n: int) -> str:
    r = rng.random()
    if r < 0.2:
        return rng.choice(("1", "2"))  # repeated values: systemd keeps the first position
    if r < 0.32:
        return f"{n}  {n + 1}"  # inner spaces are kept
    if r < 0.35:
        return ""
    return str(n)


def _line(rng: random.Random, counter: list[int]) -> str:
    counter[0] += 1
    n = counter[0] * 10
    pad = lambda: rng.choice(("", " ", "  ", "\t"))  # noqa: E731
    r = rng.random()
    if r < 0.45:
        key = _spell(rng, rng.choice(KEYS))
    elif r < 0.68:
        key = rng.choice(GLOBS)
    elif r < 0.76:
        return f"{pad()}-{_spell(rng, rng.choice(KEYS))}{pad()}"  # exclusion
    elif r < 0.78:
        return f"- {_spell(rng, rng.choice(KEYS))} = {n}"  # procps keeps the space
    elif r < 0.83:
        return f"{pad()}-{rng.choice(GLOBS)}"  # exclusion written as a glob
    elif r < 0.90:
        return rng.choice(("#", ";")) + f" {_spell(rng, rng.choice(KEYS))} = {n}"
    elif r < 0.95:
        return rng.choice(("", "   ", "not an assignment", "vm.swappiness"))
    else:
        return f"{pad()}{_spell(rng, rng.choice(KEYS))}{pad()}:{pad()}{n}"  # no '='
    dash = "-" if rng.random() < 0.15 else ""
    return f"{pad()}{dash}{key}{pad()}={pad()}{_value(rng, n)}{pad()}"


def generate(seed: int, n: int) -> list[Case]:
    """``n`` random configurations covering the SEMANTICS §3.5 edge cases."""
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        counter = [i * 1000]
        case = Case(f"g{i:04d}")
        for _ in range(rng.randint(1, 5)):
            d = rng.choices(DIRS, weights=(4, 1, 1, 3))[0]
            name = rng.choice(NAMES)
            lines = [_line(rng, counter) for _ in range(rng.randint(0, 6))]
            eol = "\r\n" if rng.random() < 0.08 else "\n"  # a file edited on Windows
            case.files[f"/{d}/{name}"] = eol.join(lines) + (eol if rng.random() < 0.9 else "")
        used = sorted({p.rsplit("/", 1)[1] for p in case.files})
        r = rng.random()
        if used and r < 0.15:  # mask a name in /etc (or /run) with /dev/null
            d = rng.choice(("etc/sysctl.d", "run/sysctl.d"))
            case.files.pop(f"/{d}/{used[0]}", None)
            case.links[f"/{d}/{used[0]}"] = "/dev/null"
        elif used and r < 0.25:  # empty file in /etc
            case.files[f"/etc/sysctl.d/{rng.choice(used)}"] = ""
        elif used and r < 0.33:  # a link to a file of another directory (re-rooted)
            link = f"/etc/sysctl.d/{rng.choice(NAMES[:4])}"
            case.files.pop(link, None)
            case.links[link] = f"/usr/lib/sysctl.d/{rng.choice(used)}"
        elif used and r < 0.36:  # a directory with a .conf name
            d = f"/etc/sysctl.d/{rng.choice(used)}"
            case.files.pop(d, None)
            case.dirs.append(d)
        if rng.random() < 0.5:
            case.files.pop("/etc/sysctl.d/99-sysctl.conf", None)
            case.links["/etc/sysctl.d/99-sysctl.conf"] = "../sysctl.conf"
        if rng.random() < 0.6:
            lines = [_line(rng, counter) for _ in range(rng.randint(1, 4))]
            case.files["/etc/sysctl.conf"] = "\n".join(lines) + "\n"
        cases.append(case)
    return cases
