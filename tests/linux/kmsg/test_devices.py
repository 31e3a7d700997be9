"""Naming the device of an AER message from sysfs (:mod:`aiaudit.linux.kmsg.devices`), on
the HGX-like node of ``tests/fixtures/roots/node-hgx-nvswitch`` (GPUs and HCAs behind PCIe
switches)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aiaudit.core.host import Host
from aiaudit.linux.kmsg.devices import describe, role
from tests.helpers import ROOTS


@pytest.fixture(scope="module")
def hgx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hgx")
    shutil.copytree(ROOTS / "node-hgx-nvswitch/root/sys", root / "sys", symlinks=True)
    return root


@pytest.mark.parametrize(("bdf", "want_role", "words"), [
    ("0000:18:00.0", "gpu", "GPU 0000:18:00.0"),
    ("0000:19:00.0", "hca", "HCA 0000:19:00.0"),
    ("0000:12:00.0", "bridge:gpu", "PCIe port 0000:12:00.0 above GPU 0000:18:00.0"),
    ("0000:12:01.0", "bridge:hca", "PCIe port 0000:12:01.0 above HCA 0000:19:00.0"),
    ("0000:10:01.0", "bridge:gpu", "PCIe port 0000:10:01.0 above GPU 0000:18:00.0"),
    ("0000:ff:1f.7", "unknown", "0000:ff:1f.7"),
])
def test_devices_are_named_from_sysfs(hgx: Path, bdf: str, want_role: str, words: str) -> None:
    assert describe(Host(str(hgx), live=True), bdf) == (want_role, words)


def test_offline_nothing_is_named(hgx: Path) -> None:
    assert describe(Host(str(hgx)), "0000:18:00.0") == ("unknown", "0000:18:00.0")


@pytest.mark.parametrize(("cls", "vendor", "want"), [
    ("0x030200", "0x10de", "gpu"), ("0x030000", "0x1002", "gpu"), ("0x038000", "0x1002", "gpu"),
    ("0x020700", "0x15b3", "hca"), ("0x020000", "0x15b3", "hca"), ("0x020000", "0x8086", "other"),
    ("0x068000", "0x10de", "nvswitch"), ("0x060400", "0x1000", "bridge"),
    ("0x010802", "0x144d", "other"),
])
def test_roles_by_class_and_vendor(cls: str, vendor: str, want: str) -> None:
    assert role(cls, vendor) == want
