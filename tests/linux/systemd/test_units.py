"""systemd units: unit file and drop-in lookup through one listing per unit directory."""

from __future__ import annotations

import pytest

from aiaudit.core.errors import HostError
from aiaudit.core.host import Host
from aiaudit.linux.systemd import units as systemd

FILES = {
    "lib/systemd/system/foo-bar@.service": "[Service]\nExecStart=/bin/a\n",
    "etc/systemd/system/service.d/10-all.conf": "[Service]\nNice=1\n",
    "usr/lib/systemd/system/foo-.service.d/20-prefix.conf": "[Service]\nNice=2\n",
    "etc/systemd/system/foo-bar@.service.d/30-tmpl.conf": "[Service]\nExecStart=\n",
    "run/systemd/system/foo-bar@x.service.d/40-own.conf": "[Service]\nExecStart=/bin/b\n",
    "usr/lib/systemd/system/foo-bar@x.service.d/40-own.conf": "[Service]\nNice=9\n",
}
LINKS = {"etc/systemd/system/gone.service": "/dev/null"}
NAMES = ("foo-bar@x.service", "foo-bar@.service", "foo-baz.service", "gone.service",
         "absent.service")


def _deny_listing(monkeypatch, denied) -> None:
    """Make ``Host.listdir`` fail with EACCES for the paths where ``denied(path)``."""
    real = Host.listdir

    def listdir(self: Host, path: str) -> list[str]:
        if denied(path):
            raise HostError(f"{path}: Permission denied")
        return real(self, path)

    monkeypatch.setattr(Host, "listdir", listdir)


def _load_all(root: str) -> dict[str, systemd.Unit]:
    host = Host(root)
    return {n: systemd.load_unit(host, n) for n in NAMES}


def test_unit_with_template_prefix_and_own_dropins(make_root) -> None:
    root = make_root(FILES, links=LINKS)
    unit = _load_all(str(root))["foo-bar@x.service"]
    assert unit.path == "/lib/systemd/system/foo-bar@.service"
    # one file per name across directories (/run beats /usr/lib), sorted by name
    assert unit.dropins == ("/etc/systemd/system/service.d/10-all.conf",
                            "/usr/lib/systemd/system/foo-.service.d/20-prefix.conf",
                            "/etc/systemd/system/foo-bar@.service.d/30-tmpl.conf",
                            "/run/systemd/system/foo-bar@x.service.d/40-own.conf")
    assert [a.value for a in unit.get_all("Service", "ExecStart")] == ["/bin/b"]
    assert unit.get("Service", "Nice").value == "2"
    assert _load_all(str(root))["gone.service"].masked


def test_same_units_without_the_directory_listings(make_root, monkeypatch) -> None:
    # the listings only skip lookups of names that are not there
    root = make_root(FILES, links=LINKS)
    fast = _load_all(str(root))
    monkeypatch.setattr(systemd, "_dir_names", lambda host, d: None)
    assert _load_all(str(root)) == fast


def test_unlistable_unit_directory_falls_back(make_root, monkeypatch) -> None:
    root = make_root(FILES)
    _deny_listing(monkeypatch, lambda p: p == "/lib/systemd/system")
    unit = _load_all(str(root))["foo-bar@x.service"]
    assert unit.path == "/lib/systemd/system/foo-bar@.service"


@pytest.mark.parametrize("name", NAMES)
def test_listing_is_read_once_per_directory(make_root, monkeypatch, name: str) -> None:
    root = make_root(FILES)
    host = Host(str(root))
    calls: list[str] = []
    real = Host.listdir
    monkeypatch.setattr(Host, "listdir",
                        lambda self, p: calls.append(p) or real(self, p))
    systemd.load_unit(host, name)
    systemd.load_unit(host, "other.service")
    # each unit directory listed once per run; drop-in directories only where they exist
    unit_dirs = [c for c in calls if c in systemd.UNIT_DIRS]
    assert len(unit_dirs) == len(set(unit_dirs)) == len(systemd.UNIT_DIRS)
    assert all(host.is_dir(c) for c in calls if c not in systemd.UNIT_DIRS)


def test_is_enabled_from_one_listing_of_the_wants_dirs(make_root, monkeypatch) -> None:
    root = make_root({"lib/systemd/system/a.service": "", "lib/systemd/system/t@.service": ""},
                     links={"etc/systemd/system/multi-user.target.wants/a.service":
                            "/lib/systemd/system/a.service",
                            "lib/systemd/system/sysinit.target.wants/t@.service":
                            "../t@.service",
                            "etc/systemd/system/gone.target.requires/d.service": "/nowhere",
                            "etc/systemd/system/m.service": "/dev/null"})
    host = Host(str(root))
    got = {n: systemd.is_enabled(host, n)
           for n in ("a.service", "t@x.service", "d.service", "m.service", "b.service")}
    assert got["a.service"].enabled and "multi-user.target" in got["a.service"].reason
    assert got["t@x.service"].evidence == "/lib/systemd/system/sysinit.target.wants/t@.service"
    assert got["d.service"].enabled  # a dangling link still enables (lstat, not stat)
    assert got["m.service"].masked and not got["b.service"].enabled
    # a wants directory that cannot be listed is probed entry by entry, as before
    _deny_listing(monkeypatch, lambda p: p.endswith(".wants"))
    host = Host(str(root))
    assert {n: systemd.is_enabled(host, n) for n in got} == got


def test_boot_services_from_the_wants_listings(make_root, monkeypatch) -> None:
    from aiaudit.linux.systemd import bootcmds as tuning

    root = make_root({"lib/systemd/system/a.service": "", "lib/systemd/system/b.service": ""},
                     links={"etc/systemd/system/multi-user.target.wants/b.service": "/x",
                            "etc/systemd/system/multi-user.target.wants/a.timer": "/x",
                            "lib/systemd/system/sysinit.target.wants/a.service": "/x",
                            "lib/systemd/system/sysinit.target.wants/b.service": "/x"})
    assert tuning._wanted_services(Host(str(root))) == ["b.service", "a.service"]
    _deny_listing(monkeypatch, lambda p: p == "/lib/systemd/system")
    with pytest.raises(HostError):  # an unreadable unit directory stays an error
        tuning._wanted_services(Host(str(root)))


def test_unit_evidence_link_file_or_search_path(make_root) -> None:
    root = make_root({"/lib/systemd/system/off.service": "[Service]\n",
                      "/lib/systemd/system/on.service": "[Service]\n"},
                     {"/etc/systemd/system/multi-user.target.wants/on.service":
                      "/lib/systemd/system/on.service",
                      "/etc/systemd/system/gone.service": "/dev/null"})
    host = Host(str(root))
    on = systemd.unit_evidence(host, "on.service")
    assert (on.kind, on.path) == ("file", "/etc/systemd/system/multi-user.target.wants/on.service")
    off = systemd.unit_evidence(host, "off.service")
    assert (off.kind, off.path, off.value) == (
        "file", "/lib/systemd/system/off.service", "no target wants off.service (not enabled)")
    masked = systemd.unit_evidence(host, "gone.service")
    assert (masked.kind, masked.path, masked.value) == (
        "file", "/etc/systemd/system/gone.service", "gone.service is masked")
    absent = systemd.unit_evidence(host, "absent.service")
    assert (absent.kind, absent.value) == ("default", "not installed")
    assert absent.source == "unit " + systemd.search_text(("absent.service",))
    assert absent.source.endswith(", ".join(d.lstrip("/") for d in systemd.UNIT_DIRS))
