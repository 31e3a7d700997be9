"""``updates.unattended``: unattended-upgrades (apt.conf periodic settings, the timer) and
dnf-automatic."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.helpers import run_check

AUTO = ('APT::Periodic::Update-Package-Lists "1";\nAPT::Periodic::Unattended-Upgrade "1";\n')


def status(*pkgs: tuple[str, str, str]) -> str:
    return "".join(f"Package: {p}\nStatus: install ok installed\nArchitecture: {a}\n"
                   f"Version: {v}\n\n" for p, v, a in pkgs)


def unattended_root(make_root, conf: dict[str, str], installed: bool = True, timer: bool = True):
    files = {"/var/lib/dpkg/status": status(("unattended-upgrades", "2.9.1+nmu3", "all"))
             if installed else status(("bash", "5", "amd64")),
             "/lib/systemd/systemd": "\x7fELF", **conf}
    links = {}
    if timer:
        files["/lib/systemd/system/apt-daily-upgrade.timer"] = "[Timer]\nOnCalendar=daily\n"
        links["/etc/systemd/system/timers.target.wants/apt-daily-upgrade.timer"] = \
            "/lib/systemd/system/apt-daily-upgrade.timer"
    return make_root(files, links)


def test_unattended(make_root) -> None:
    ok = {"/etc/apt/apt.conf.d/20auto-upgrades": AUTO}
    [r] = run_check("updates.unattended", unattended_root(make_root, ok))
    assert r.status is Status.PASS
    [r] = run_check("updates.unattended", unattended_root(make_root, ok, installed=False))
    assert r.status is Status.FAIL and r.remediation.manual
    [r] = run_check("updates.unattended", unattended_root(make_root, ok, timer=False))
    assert r.status is Status.FAIL and "apt-daily-upgrade.timer" in r.message
    # apt.conf is read after apt.conf.d; later files win; dotted names other than .conf skipped
    off = {**ok, "/etc/apt/apt.conf": 'APT::Periodic::Unattended-Upgrade "0";\n'}
    [r] = run_check("updates.unattended", unattended_root(make_root, off))
    assert r.status is Status.FAIL
    skipped = {**ok,
               "/etc/apt/apt.conf.d/99off.disabled": 'APT::Periodic::Unattended-Upgrade "0";\n'}
    [r] = run_check("updates.unattended", unattended_root(make_root, skipped))
    assert r.status is Status.PASS


def test_dnf_automatic(make_root) -> None:
    base = {"/etc/dnf/dnf.conf": "[main]\n", "/usr/lib/systemd/systemd": "\x7fELF",
            "/usr/lib/systemd/system/dnf-automatic-install.timer": "[Timer]\nOnCalendar=daily\n"}
    [r] = run_check("updates.unattended", make_root(base))
    assert r.status is Status.FAIL
    [r] = run_check("updates.unattended", make_root(base, {
        "/etc/systemd/system/timers.target.wants/dnf-automatic-install.timer":
            "/usr/lib/systemd/system/dnf-automatic-install.timer"}))
    assert r.status is Status.PASS


def test_unattended_not_installed_points_at_the_dpkg_status_file(make_root) -> None:
    [r] = run_check("updates.unattended", unattended_root(make_root, {}, installed=False))
    assert r.status is Status.FAIL and "not installed" in r.message
    assert [(e.kind, e.path, e.value) for e in r.evidence] == [
        ("file", "/var/lib/dpkg/status", "unattended-upgrades is not installed")]


def test_unattended_without_dpkg_database_names_it_as_default(make_root) -> None:
    root = make_root({"/etc/apt/sources.list": "", "/lib/systemd/systemd": "\x7fELF"})
    [r] = run_check("updates.unattended", root)
    assert r.status is Status.FAIL
    assert [(e.kind, e.source, e.value) for e in r.evidence] == [
        ("default", "dpkg database: var/lib/dpkg/status", "no such file")]


def test_unattended_nothing_configured_names_apt_defaults_and_the_timer(make_root) -> None:
    [r] = run_check("updates.unattended", unattended_root(make_root, {}, timer=False))
    assert r.status is Status.FAIL
    got = {e.source: (e.kind, e.value) for e in r.evidence}
    assert got["APT::Periodic::Unattended-Upgrade in etc/apt/apt.conf.d/*, etc/apt/apt.conf"] \
        == ("default", "not set: apt's default is 0 (off)")
    assert any(s.startswith("unit apt-daily-upgrade.timer in ") and v == ("default",
               "not installed") for s, v in got.items())


def test_dnf_automatic_failure_names_the_timers_and_apply_updates(make_root) -> None:
    base = {"/etc/dnf/dnf.conf": "[main]\n", "/usr/lib/systemd/systemd": "\x7fELF",
            "/usr/lib/systemd/system/dnf-automatic-install.timer": "[Timer]\nOnCalendar=daily\n",
            "/etc/dnf/automatic.conf": "[commands]\napply_updates = no\n"}
    [r] = run_check("updates.unattended", make_root(base))
    assert r.status is Status.FAIL
    inst, auto, conf = r.evidence
    assert (inst.kind, inst.path) == ("file", "/usr/lib/systemd/system/dnf-automatic-install.timer")
    assert auto.kind == "default" and auto.value == "not installed"
    assert (conf.kind, conf.source, conf.value) == ("file", "etc/dnf/automatic.conf:2",
                                                    "apply_updates = no")


def test_unattended_broken_apt_conf_points_at_the_file(make_root) -> None:
    bad = {"/etc/apt/apt.conf.d/50broken": 'APT::Periodic::Unattended-Upgrade "1"\n{{{\n'}
    [r] = run_check("updates.unattended", unattended_root(make_root, bad))
    assert r.status is Status.ERROR
    assert [(e.kind, e.path) for e in r.evidence] == [("file", "/etc/apt/apt.conf.d/50broken")]
