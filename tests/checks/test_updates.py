"""``updates.*``: pending security updates from dpkg status and apt's -security lists
(Debian version order checked against ``dpkg --compare-versions``), and unattended
upgrades."""

from __future__ import annotations

import gzip
import lzma
import os
import shutil
import subprocess
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiaudit.core.model import Status
from aiaudit.linux.packages.dpkg import version_key
from tests.helpers import run_check

SEC = ("/var/lib/apt/lists/deb.debian.org_debian-security_dists_bookworm-security_main_"
       "binary-amd64_Packages")
MAIN = "/var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages"


def status(*pkgs: tuple[str, str, str]) -> str:
    return "".join(f"Package: {p}\nStatus: install ok installed\nArchitecture: {a}\n"
                   f"Version: {v}\n\n" for p, v, a in pkgs)


def packages(*pkgs: tuple[str, str, str]) -> str:
    return "".join(f"Package: {p}\nArchitecture: {a}\nVersion: {v}\n\n" for p, v, a in pkgs)


def test_pending_and_not(make_root) -> None:
    st_ = status(("openssl", "3.0.11-1~deb12u1", "amd64"), ("tzdata", "2024a-0+deb12u1", "all"),
                 ("libc6", "2.36-9+deb12u4", "amd64"))
    lists = packages(("openssl", "3.0.11-1~deb12u2", "amd64"), ("tzdata", "2024a-0+deb12u1",
                                                                "all"),
                     ("libc6", "2.36-9+deb12u4", "i386"), ("unrelated", "9", "amd64"))
    [r] = run_check("updates.security_pending", make_root(
        {"/var/lib/dpkg/status": st_, SEC: lists, MAIN: packages(("openssl", "9.9", "amd64"))}))
    assert r.status is Status.FAIL
    assert set(r.data["pending"]) == {"openssl"}  # main suite and foreign arch do not count
    [r] = run_check("updates.security_pending", make_root(
        {"/var/lib/dpkg/status": st_, SEC: packages(("openssl", "3.0.11-1~deb12u1", "amd64"))}))
    assert r.status is Status.PASS


def test_compressed_lists(make_root) -> None:
    st_ = status(("bash", "5.2.15-2", "amd64"))
    body = packages(("bash", "5.2.15-2+b7", "amd64")).encode()
    import lz4.frame

    for suffix, data in ((".gz", gzip.compress(body)), (".xz", lzma.compress(body)),
                         (".lz4", lz4.frame.compress(body))):
        [r] = run_check("updates.security_pending", make_root(
            {"/var/lib/dpkg/status": st_, SEC + suffix: data}))
        assert r.status is Status.FAIL, suffix


def test_decompression_bomb_is_bounded(make_root, monkeypatch) -> None:
    from aiaudit.checks import legacy_updates as updates

    monkeypatch.setattr(updates, "LIST_CAP", 1 << 20)
    st_ = status(("bash", "5.2.15-2", "amd64"))
    bomb = gzip.compress(b"Package: x\n" + b"\n" * (8 << 20))
    [r] = run_check("updates.security_pending", make_root(
        {"/var/lib/dpkg/status": st_, SEC + ".gz": bomb}))
    assert r.status is Status.ERROR and "decompressed" in r.message


@pytest.mark.parametrize("suffix", [".gz", ".xz", ".bz2", ".lz4", ".zst"])
def test_corrupt_compressed_list_is_an_error(make_root, suffix: str) -> None:
    [r] = run_check("updates.security_pending", make_root(
        {"/var/lib/dpkg/status": status(("bash", "5", "amd64")), SEC + suffix: b"garbage"}))
    assert r.status is Status.ERROR


def test_stale_lists_and_missing_lists(make_root) -> None:
    st_ = status(("bash", "5.2.15-2", "amd64"))
    root = make_root({"/var/lib/dpkg/status": st_, SEC: packages(("bash", "5.2.15-2", "amd64"))})
    old = time.time() - 30 * 86400
    os.utime(root / SEC.lstrip("/"), (old, old))
    [r] = run_check("updates.security_pending", root)
    assert r.status is Status.FAIL and "days old" in r.message
    [r] = run_check("updates.security_pending", make_root({"/var/lib/dpkg/status": st_}))
    assert r.status is Status.SKIP
    [r] = run_check("updates.security_pending", make_root(
        {"/var/lib/dpkg/status": st_, MAIN: packages(("bash", "5.2.15-2", "amd64"))}))
    assert r.status is Status.FAIL and "does not even download" in r.message
    [r] = run_check("updates.security_pending", make_root(
        {"/var/lib/dpkg/status": st_, MAIN: packages(("bash", "5.2.15-2", "amd64")),
         "/etc/apt/sources.list.d/debian.sources": "Types: deb\nURIs: http://deb.debian.org/"
         "debian-security\nSuites: bookworm-security\n"}))
    assert r.status is Status.FAIL and "never downloaded" in r.message


VERSIONS = ["1.0", "1.0-1", "1:0.9", "1.0~rc1", "1.0+deb12u1", "1.0-1~bpo1", "1.0.0",
            "2.36-9+deb12u4", "2.36-9+deb12u10", "3.0.11-1~deb12u2", "0", "1.0a", "1.0-0ubuntu1"]


def _dpkg_lt(a: str, b: str) -> bool:
    return subprocess.run(["dpkg", "--compare-versions", a, "lt", b],
                          check=False).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dpkg") is None and not os.environ.get("CI"),
                    reason="needs dpkg (the oracle)")
def test_version_order_matches_dpkg() -> None:
    wrong = [(a, b) for a in VERSIONS for b in VERSIONS
             if (version_key(a) < version_key(b)) != _dpkg_lt(a, b)]
    assert not wrong


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dpkg") is None and not os.environ.get("CI"),
                    reason="needs dpkg (the oracle)")
@settings(max_examples=40, deadline=None)
@given(st.from_regex(r"[0-9]{1,3}(\.[0-9a-z~+]{1,4}){0,3}(-[0-9a-z.~+]{1,6})?", fullmatch=True),
       st.from_regex(r"[0-9]{1,3}(\.[0-9a-z~+]{1,4}){0,3}(-[0-9a-z.~+]{1,6})?", fullmatch=True))
def test_random_versions_match_dpkg(a: str, b: str) -> None:
    assert (version_key(a) < version_key(b)) == _dpkg_lt(a, b)


AUTO = ('APT::Periodic::Update-Package-Lists "1";\nAPT::Periodic::Unattended-Upgrade "1";\n')



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


APT_TREES = {
    "plain": {"20auto-upgrades": AUTO},
    "scoped-later-wins": {"20auto-upgrades": AUTO,
                          "50unattended-upgrades.conf": 'APT { Periodic {\n'
                                                        '  Unattended-Upgrade "7"; }; };\n'},
    "ignored-names": {"20auto-upgrades": AUTO, "99off.disabled": 'APT::Periodic::'
                      'Unattended-Upgrade "0";\n', "98off.bak": 'APT::Periodic::'
                      'Unattended-Upgrade "0";\n', "97off~": 'APT::Periodic::'
                      'Unattended-Upgrade "0";\n'},
    "comments-and-clear": {"10a": '# hash\n/* block\n*/ APT::Periodic::Update-Package-Lists '
                                  '"1"; // end\nAPT::Periodic::Unattended-Upgrade "1";\n',
                           "20b": "#clear APT::Periodic::Unattended-Upgrade;\n"},
    "main-file-last": {"20auto-upgrades": AUTO, "@main": 'APT::Periodic::'
                       'Unattended-Upgrade "0";\n'},
}


@pytest.mark.skipif(shutil.which("apt-config") is None and not os.environ.get("CI"),
                    reason="needs apt-config (the oracle)")
@pytest.mark.parametrize("name", sorted(APT_TREES))
def test_apt_conf_matches_apt_config(make_root, tmp_path, name: str) -> None:
    """Our reading of apt.conf.d + apt.conf against apt's own: APT_CONFIG points
    Dir::Etc::parts/main at the tree (apt-pkg pkgInitConfig reads parts, then main)."""
    from aiaudit.checks.legacy_updates import apt_config

    from aiaudit.core.host import Host

    files = {("/etc/apt/apt.conf" if n == "@main" else f"/etc/apt/apt.conf.d/{n}"): t
             for n, t in APT_TREES[name].items()}
    root = make_root(files)
    main = tmp_path / f"{name}-main.conf"
    main.write_text(f'Dir::Etc::parts "{root}/etc/apt/apt.conf.d";\n'
                    f'Dir::Etc::main "{root}/etc/apt/apt.conf";\n')
    ours, problems = apt_config(Host(str(root)))
    assert not problems
    for key in ("APT::Periodic::Unattended-Upgrade", "APT::Periodic::Update-Package-Lists"):
        res = subprocess.run(["apt-config", "shell", "V", key], capture_output=True, text=True,
                             env={**os.environ, "APT_CONFIG": str(main)}, check=True)
        real = res.stdout.strip()[3:-1] if res.stdout.strip() else ""
        got = ours.get(key.lower())
        assert (got[0] if got else "") == real, (key, got, res.stdout)


# ------------------------------------------------------------------ evidence of unattended
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
