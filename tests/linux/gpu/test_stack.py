"""The NVIDIA stack as :mod:`aiaudit.linux.gpu.stack` finds it: the rpm database, the
kernel module search."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiaudit.core.host import Host
from aiaudit.core.model import Status
from aiaudit.linux.gpu import stack as gs
from tests.checks.gpu.trees import ROCKY, stack
from tests.helpers import run_check
from tests.linux.kmod.test_modinfo import make_ko


def _rpmdb(tmp_path: Path, packages: list[tuple[str, str, str, int | None]]) -> bytes:
    import sqlite3

    from tests.linux.packages.test_rpm import make_header

    path = tmp_path / "rpmdb.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")  # as rpm >= 4.16 leaves it
    conn.execute("CREATE TABLE Packages (hnum INTEGER PRIMARY KEY AUTOINCREMENT, blob BLOB "
                 "NOT NULL)")
    conn.executemany("INSERT INTO Packages (blob) VALUES (?)",
                     [(make_header(*p),) for p in packages])
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path.read_bytes()


@pytest.mark.skipif(not hasattr(__import__("sqlite3").Connection, "deserialize"),
                    reason="sqlite3 deserialize needs Python >= 3.11")
def test_rpm_database_gives_module_version(make_root, tmp_path) -> None:
    db = _rpmdb(tmp_path, [("bash", "5.1.8", "9.el9", None),
                           ("kmod-nvidia-latest-dkms", "550.54.15", "1.el9", 3),
                           ("nvidia-driver-cuda-libs", "550.54.15", "1.el9", 3)])
    assert db[18:20] == b"\x02\x02"  # WAL mode on disk
    root = stack(make_root, module=None, lib="550.54.15", osr=ROCKY,
                 files={"/var/lib/rpm/rpmdb.sqlite": db})
    res = run_check("gpu.driver_match", root)
    assert res[0].status is Status.PASS
    assert res[0].evidence[0].source == "var/lib/rpm/rpmdb.sqlite"
    assert "3:550.54.15-1.el9" in res[0].evidence[0].value
    root = stack(make_root, module=None, lib="535.129.03", osr=ROCKY,
                 files={"/var/lib/rpm/rpmdb.sqlite": db})
    assert run_check("gpu.driver_match", root)[0].status is Status.FAIL
    garbage = stack(make_root, module=None, lib="535.129.03", osr=ROCKY,
                    files={"/var/lib/rpm/rpmdb.sqlite": b"SQLite format 3\0" + b"\xff" * 200})
    assert run_check("gpu.driver_match", garbage)[0].status is Status.FAIL  # no module at all


def test_kernel_side_searches_the_newest_kernel_with_a_module(make_root) -> None:
    """Offline: kernels newest first; the first with any nvidia.ko decides (an unreadable
    one is a problem, not a reason to look at older kernels); live, a loaded module
    decides and no module file is read."""
    old = "/lib/modules/5.15.0-91-generic/updates/dkms/nvidia.ko"
    new = "/lib/modules/6.8.0-31-generic/updates/dkms/nvidia.ko"
    root = make_root({old: make_ko("535.129.03"), new: make_ko("550.54.15"),
                      "/lib/modules/6.10.0-1-generic/modules.dep": ""})
    ks = gs.kernel_side(Host(str(root)))
    assert ks.installed is not None and ks.installed.version == "550.54.15"
    assert ks.kernel == "6.8.0-31-generic" and not ks.problems
    assert ks.kernels == ("6.10.0-1-generic", "6.8.0-31-generic")
    root = make_root({old: make_ko("535.129.03"), new: b"not an ELF file"})
    ks = gs.kernel_side(Host(str(root)))
    assert ks.installed is None and ks.kernel is None
    assert [e.path for e in ks.unreadable] == [new] and ks.problems[0].startswith(new)
    root = make_root({new: b"not an ELF file", "/sys/module/nvidia/version": "570.26\n"})
    ks = gs.kernel_side(Host(str(root), live=True))
    assert ks.loaded is not None and ks.effective == ks.loaded and ks.installed is None
    assert ks.kernels == () and not ks.problems
    assert ks.notes == ()
    root = make_root({old: make_ko("535.129.03")})
    ks = gs.kernel_side(Host(str(root), live=True))
    assert ks.loaded is None and ks.notes == ("the nvidia kernel module is not loaded",)
    assert ks.installed is not None and ks.effective == ks.installed
