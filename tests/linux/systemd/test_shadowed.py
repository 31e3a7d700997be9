"""Overridden ``Limit*=`` assignments of a unit and the drop-in a fix must write, checked
against systemd itself: ``systemd-analyze verify --root`` loads the unit with its drop-ins
offline and, at debug level, dumps the drop-in paths in the order applied and the effective
``LimitNOFILE``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from aiaudit.core.host import Host
from aiaudit.linux.pam_limits.start import unit_limits
from aiaudit.linux.systemd import shadowed
from aiaudit.linux.systemd.units import load_unit

UNIT = "slurmd.service"
VENDOR = "/usr/lib/systemd/system"
SITE = "/etc/systemd/system"

CASES: dict[str, dict[str, str]] = {
    # a site's 10-fix.conf loses to the vendor's 50-vendor.conf: names sort across dirs
    "site-loses-to-vendor": {
        f"{SITE}/{UNIT}.d/10-fix.conf": "[Service]\nLimitNOFILE=5000\n",
        f"{VENDOR}/{UNIT}.d/50-vendor.conf": "[Service]\nLimitNOFILE=6000\n"},
    # a same-named /etc drop-in hides the vendor one; service.d applies to every service
    "same-name-hides": {
        f"{SITE}/{UNIT}.d/50-vendor.conf": "[Service]\nLimitNOFILE=7000\n",
        f"{VENDOR}/{UNIT}.d/50-vendor.conf": "[Service]\nLimitNOFILE=6000\n",
        f"{VENDOR}/service.d/60-all.conf": "[Service]\nLimitNOFILE=8000:9000\n"},
    "same-file-twice": {
        f"{SITE}/{UNIT}.d/zzz-site.conf": "[Service]\nLimitNOFILE=3000\nLimitNOFILE=3500\n"},
    "empty-resets": {
        f"{SITE}/{UNIT}.d/90-reset.conf": "[Service]\nLimitNOFILE=\n"},
}
BASE = "[Unit]\nDescription=x\n[Service]\nExecStart=/bin/true\nLimitNOFILE=4000\n"


def _root(tmp: Path, files: dict[str, str]) -> Path:
    for path, text in {f"{VENDOR}/{UNIT}": BASE, **files}.items():
        p = tmp / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp


def _systemd(root: Path) -> tuple[list[str], tuple[int, int] | None]:
    """(drop-in paths in the order systemd applies them, effective soft:hard nofile)."""
    if not shutil.which("systemd-analyze"):
        if os.environ.get("CI"):
            pytest.fail("systemd-analyze is needed under CI")
        pytest.skip("needs systemd-analyze")
    got = subprocess.run(["systemd-analyze", "verify", f"--root={root}", "--man=no", UNIT],
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, "SYSTEMD_LOG_LEVEL": "debug"}, cwd="/")
    out = got.stdout + got.stderr
    drops = [p.removeprefix(str(root)) for p in re.findall(r"DropIn Path: (\S+)", out)]
    hard = re.search(r"^\s*LimitNOFILE: (\d+)", out, re.M)
    soft = re.search(r"^\s*LimitNOFILESoft: (\d+)", out, re.M)
    vals = (int(soft.group(1)), int(hard.group(1))) if soft and hard else None
    return drops, vals


@pytest.mark.parametrize("case", sorted(CASES))
def test_overridden_assignments_match_systemd(tmp_path: Path, case: str) -> None:
    root = _root(tmp_path, CASES[case])
    drops, real = _systemd(root)
    host = Host(str(root), live=False)
    unit = load_unit(host, UNIT)
    assert list(unit.dropins) == drops
    start = unit_limits(host, (UNIT,))
    if real is not None and case != "empty-resets":
        assert start.values["nofile"] == real
    lost = start.overridden["nofile"]
    win = unit.get("Service", "LimitNOFILE")
    assert win is not None
    every = [a for a in unit.assignments if a.key == "LimitNOFILE"]
    # every assignment but the effective one is named, each once, with why it lost
    assert [a for a, _ in lost] == every[:-1] and every[-1] == win
    for _a, why in lost:
        assert f"at {win.file.lstrip('/')}:{win.line}" in why
    [first, *_] = shadowed.evidence(lost)
    assert first.source == f"usr/lib/systemd/system/{UNIT}:5"
    assert first.value.startswith("LimitNOFILE=4000 (overridden: ")


def test_site_loses_to_vendor_wording(tmp_path: Path) -> None:
    start = unit_limits(Host(str(_root(tmp_path, CASES["site-loses-to-vendor"])),
                             live=False), (UNIT,))
    lost = dict((f"{a.file}:{a.line}", why) for a, why in start.overridden["nofile"])
    why = lost[f"{SITE}/{UNIT}.d/10-fix.conf:2"]
    assert why.startswith(f"LimitNOFILE=6000 at usr/lib/systemd/system/{UNIT}.d/50-vendor"
                          ".conf:2 is read later (the unit file is read first, then its "
                          "drop-ins sorted by file name across /etc")


@pytest.mark.parametrize("case", sorted(CASES))
def test_fix_dropin_wins_in_systemd(tmp_path: Path, case: str) -> None:
    root = _root(tmp_path, CASES[case])
    host = Host(str(root), live=False)
    target = shadowed.winning_dropin(UNIT, load_unit(host, UNIT).dropins,
                                     "zz-aiaudit-limits.conf")
    if case == "same-file-twice":
        assert target.endswith("/zzzz-aiaudit-limits.conf")
    fix = root / target.lstrip("/")
    fix.parent.mkdir(parents=True, exist_ok=True)
    fix.write_text("[Service]\nLimitNOFILE=4444\n")
    drops, real = _systemd(root)
    assert drops[-1] == target
    assert real == (4444, 4444)
    if case == "same-file-twice":  # the usual name would have lost to zzz-site.conf
        fix.unlink()
        plain = root / f"etc/systemd/system/{UNIT}.d/zz-aiaudit-limits.conf"
        plain.write_text("[Service]\nLimitNOFILE=4444\n")
        assert _systemd(root)[1] == (3500, 3500)


def test_default_limit_loses_to_the_units_own(tmp_path: Path) -> None:
    root = _root(tmp_path, {"/etc/systemd/system.conf":
                            "[Manager]\nDefaultLimitNOFILE=65536\n"})
    start = unit_limits(Host(str(root), live=False), (UNIT,))
    [(a, why)] = start.overridden["nofile"]
    assert a.key == "DefaultLimitNOFILE" and "applies only to units that set none" in why


def test_slurm_job_limits_failure_names_overridden_and_fix_wins(make_root) -> None:
    """The check that reads slurmd's drop-ins: a site's 10-fix.conf raising MEMLOCK loses
    to the vendor's 50-vendor.conf; the failure names it, and the fix's drop-in sorts after
    a site zzz- file."""
    from aiaudit.core.model import Status
    from tests.checks.limits.roots import DEBIAN
    from tests.helpers import run_check

    root = make_root({
        **DEBIAN,
        f"{VENDOR}/{UNIT}": "[Service]\nExecStart=/usr/sbin/slurmd -D\n",
        f"{SITE}/{UNIT}.d/10-fix.conf": "[Service]\nLimitMEMLOCK=infinity\n",
        f"{VENDOR}/{UNIT}.d/50-vendor.conf": "[Service]\nLimitMEMLOCK=64K\n",
        f"{SITE}/{UNIT}.d/zzz-site.conf": "[Service]\nLimitNOFILE=131072\n",
        "/etc/slurm/slurm.conf": "PropagateResourceLimits=NONE\n"})
    [mem] = [r for r in run_check("slurm.job_limits", root) if "memlock" in r.subject]
    assert mem.status is Status.FAIL
    over = [e for e in mem.evidence if e.source == f"etc/systemd/system/{UNIT}.d/10-fix.conf:2"]
    assert over and over[0].value.startswith("LimitMEMLOCK=infinity (overridden: "
                                             "LimitMEMLOCK=64K at usr/lib/systemd/system/")
    assert mem.data["overridden"][0]["source"] == f"etc/systemd/system/{UNIT}.d/10-fix.conf:2"
    snip = mem.remediation.snippets[0]
    assert snip.path == f"/etc/systemd/system/{UNIT}.d/zzzz-aiaudit-limits.conf"


def test_limits_effective_names_the_units_overridden_limit(make_root) -> None:
    """sshd without PAM: the session keeps ssh.service's own LimitNOFILE, decided by the
    vendor's 50-vendor.conf over the site's 10-fix.conf: the failure names the site line."""
    from aiaudit.core.model import Status
    from tests.checks.limits.roots import DEBIAN
    from tests.helpers import run_check

    ssh = "ssh.service"
    root = make_root({
        **DEBIAN,
        "/etc/ssh/sshd_config": "UsePAM no\n",
        f"{VENDOR}/{ssh}": "[Service]\nExecStart=/usr/sbin/sshd -D\nLimitNOFILE=100000\n",
        f"{SITE}/{ssh}.d/10-fix.conf": "[Service]\nLimitNOFILE=200000\n",
        f"{VENDOR}/{ssh}.d/50-vendor.conf": "[Service]\nLimitNOFILE=4096\n"})
    [r] = run_check("limits.effective", root, {"item": "nofile", "type": "hard",
                                                "min": 65536}, user="alice")
    assert r.status is Status.FAIL, r.message
    sources = [e.source for e in r.evidence]
    assert f"usr/lib/systemd/system/{ssh}.d/50-vendor.conf:2" in sources
    over = {d["source"]: d["why"] for d in r.data["overridden"]}
    assert set(over) == {f"usr/lib/systemd/system/{ssh}:3",
                         f"etc/systemd/system/{ssh}.d/10-fix.conf:2"}
    assert "is read later (the unit file is read first" in \
        over[f"etc/systemd/system/{ssh}.d/10-fix.conf:2"]
