"""``time.sync``: an enabled (and, live, running) time synchronisation daemon."""

from __future__ import annotations

from aiaudit.core.model import Aspect, Status
from tests.helpers import run_check

INIT = {"/usr/lib/systemd/systemd": "\x7fELF"}
UNIT = "[Service]\nExecStart=/usr/sbin/chronyd\n[Install]\nWantedBy=multi-user.target\n"
WANT = {"/etc/systemd/system/multi-user.target.wants/chrony.service":
        "/lib/systemd/system/chrony.service"}


def test_offline(make_root) -> None:
    unit = {**INIT, "/lib/systemd/system/chrony.service": UNIT}
    [r] = run_check("time.sync", make_root(unit, WANT))
    assert r.status is Status.PASS and r.aspect is Aspect.PERSISTED
    [r] = run_check("time.sync", make_root(unit))
    assert r.status is Status.FAIL
    # a dangling wants link without the unit file is not an installed daemon
    [r] = run_check("time.sync", make_root(INIT, WANT))
    assert r.status is Status.FAIL


def test_container_image_skips(make_root) -> None:
    [r] = run_check("time.sync", make_root({"/etc/os-release": "ID=debian\n"}))
    assert r.status is Status.SKIP and "container image" in r.message
    [r] = run_check("updates.unattended", make_root({"/etc/apt/sources.list": ""}))
    assert r.status is Status.SKIP
    [r] = run_check("irq.balance", make_root({}))
    assert r.status is Status.SKIP


def test_live(make_root) -> None:
    files = {"/lib/systemd/system/chrony.service": UNIT, "/proc/1/comm": "systemd\n"}
    [r] = run_check("time.sync", make_root(files, WANT), live=True)
    assert r.status is Status.FAIL and "not running" in r.message
    files["/proc/812/comm"] = "chronyd\n"
    [r] = run_check("time.sync", make_root(files, WANT), live=True)
    assert r.status is Status.PASS
    [r] = run_check("time.sync", make_root(files), live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.DRIFT


def test_offline_nothing_installed_names_the_search(make_root) -> None:
    from aiaudit.linux.systemd.units import UNIT_DIRS

    [r] = run_check("time.sync", make_root(INIT))
    assert r.status is Status.FAIL
    [e] = r.evidence
    assert e.kind == "default" and e.value == "none installed"
    assert e.source.startswith("time sync units: chrony.service, chronyd.service")
    assert all(d.lstrip("/") in e.source for d in UNIT_DIRS)


def test_offline_unit_installed_not_enabled_is_file_evidence(make_root) -> None:
    unit = {**INIT, "/lib/systemd/system/chrony.service": UNIT}
    [r] = run_check("time.sync", make_root(unit))
    assert r.status is Status.FAIL
    files = [e for e in r.evidence if e.kind == "file"]
    assert [(e.path, e.value) for e in files] == [
        ("/lib/systemd/system/chrony.service", "no target wants chrony.service (not enabled)")]
    [d] = [e for e in r.evidence if e.kind == "default"]
    assert "chrony.service," not in d.source and "chronyd.service" in d.source
    assert d.value == "not installed"


def test_live_nothing_running_names_the_processes(make_root) -> None:
    [r] = run_check("time.sync", make_root({"/proc/1/comm": "systemd\n"}), live=True)
    assert r.status is Status.FAIL
    looked = r.evidence[-1]
    assert looked.kind == "default" and "chronyd" in looked.source
    assert looked.value == "none running"


def test_offline_masked_unit_is_the_mask_link(make_root) -> None:
    unit = {**INIT, "/lib/systemd/system/systemd-timesyncd.service": UNIT}
    root = make_root(unit, {"/etc/systemd/system/systemd-timesyncd.service": "/dev/null"})
    [r] = run_check("time.sync", root)
    assert r.status is Status.FAIL
    [mask] = [e for e in r.evidence if e.kind == "file"]
    assert (mask.path, mask.value) == ("/etc/systemd/system/systemd-timesyncd.service",
                                       "systemd-timesyncd.service is masked")


def test_live_enabled_not_running_starts_the_unit(make_root) -> None:
    """Drift fix (issue 30): the unit is enabled and nothing runs: start it, nothing else
    (no install, no enable)."""
    files = {"/lib/systemd/system/chrony.service": UNIT, "/proc/1/comm": "systemd\n"}
    [r] = run_check("time.sync", make_root(files, WANT), live=True)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.DRIFT)
    assert "boot configuration is right" in r.message
    assert [(s.kind, s.content) for s in r.remediation.snippets] == [
        ("command", "systemctl start chrony.service")]
    assert "already right" in r.remediation.summary
    # nothing enabled, nothing running: still the install-and-enable fix
    [r] = run_check("time.sync", make_root(files), live=True)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.RUNTIME)
    [cmd] = [s.content for s in r.remediation.snippets]
    assert cmd.startswith("apt-get install -y ") and cmd.endswith(
        " chrony && systemctl enable --now chrony")


def test_live_running_not_enabled_enables_its_unit(make_root) -> None:
    """The opposite: chronyd runs, chrony.service is installed and not enabled: enable it
    (it runs: nothing to install); a daemon without an installed unit keeps the install
    fix."""
    files = {"/lib/systemd/system/chrony.service": UNIT, "/proc/1/comm": "systemd\n",
             "/proc/812/comm": "chronyd\n"}
    [r] = run_check("time.sync", make_root(files), live=True)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.DRIFT)
    assert [(s.kind, s.content) for s in r.remediation.snippets] == [
        ("enable", "chrony.service")]
    del files["/lib/systemd/system/chrony.service"]
    [r] = run_check("time.sync", make_root(files), live=True)
    assert r.remediation.snippets[0].content.startswith("apt-get install -y ")
    # the root's distribution decides the command and the unit's name
    files["/etc/os-release"] = 'ID="rocky"\nID_LIKE="rhel centos fedora"\n'
    [r] = run_check("time.sync", make_root(files), live=True)
    assert r.remediation.snippets[0].content == (
        "dnf install -y chrony && systemctl enable --now chronyd")


def test_image_fix_is_for_its_build_not_a_pasted_command(make_root) -> None:
    """Scanning an image with no time sync installed: installing chrony is a step for the
    image's build (a command in the report would install on the machine it is pasted on)."""
    [r] = run_check("time.sync", make_root({**INIT, "/etc/os-release": "ID=debian\n"}))
    assert r.status is Status.FAIL and r.remediation.snippets == ()
    assert r.remediation.manual.startswith("In the image's build, not on this machine: "
                                           "`apt-get install -y ")
    assert r.remediation.manual.endswith(" chrony && systemctl enable chrony`.")
