"""Host identity: hostname, machine id, DMI UUID, OS and the image a root was built from."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from aiaudit.core.host import Host
from aiaudit.core.identity import host_info
from tests.helpers import cli

MID = "3f0c0e6a1b8d4c2e9f7a6b5c4d3e2f10"
CONTAINER_REASON = ("no init (sbin/init, lib/systemd/systemd) and no kernel (boot/vmlinuz-*, "
                    "lib/modules/*/vmlinuz): a container image runs under its host's kernel, "
                    "init and boot configuration")


def test_offline_reads_only_files(make_root) -> None:
    root = make_root({
        "/etc/hostname": "gpu-a1\n",
        "/etc/machine-id": MID + "\n",
        "/etc/os-release": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n'
                           'VERSION_ID="12"\n',
        # live state inside the image is never read offline
        "/proc/sys/kernel/hostname": "builder\n",
        "/proc/sys/kernel/osrelease": "6.1.0\n",
        "/sys/class/dmi/id/product_uuid": "abcd\n",
    })
    info = host_info(Host(str(root), live=False))
    assert (info.hostname, info.machine_id, info.os_id, info.os_version) == (
        "gpu-a1", MID, "debian", "12")
    assert info.os_name == "Debian GNU/Linux 12 (bookworm)"
    assert (info.kernel, info.product_uuid, info.mode) == (None, None, "offline")
    assert info.root == os.path.realpath(root)
    assert info.image_id is None


def test_live_reads_proc_and_dmi(make_root) -> None:
    root = make_root({
        "/etc/hostname": "stale-name\n",
        "/proc/sys/kernel/hostname": "gpu-a1\n",
        "/proc/sys/kernel/osrelease": "6.1.0-18-amd64\n",
        "/sys/class/dmi/id/product_uuid": "4c4c4544-0042-3510-8052-b4c04f4e3232\n",
    })
    info = host_info(Host(str(root), live=True))
    assert (info.hostname, info.kernel, info.product_uuid, info.mode) == (
        "gpu-a1", "6.1.0-18-amd64", "4c4c4544-0042-3510-8052-b4c04f4e3232", "live")


@pytest.mark.parametrize("content,expected", [
    ("uninitialized\n", None),   # machine-id(5): an image gets its id at first boot
    ("", None),
    ("not-a-machine-id\n", None),
    (MID.upper() + "\n", None),
    (MID + "\n", MID),
])
def test_machine_id_must_be_real(make_root, content: str, expected: str | None) -> None:
    root = make_root({"/etc/machine-id": content})
    assert host_info(Host(str(root), live=False)).machine_id == expected


@pytest.mark.parametrize("files,expected", [
    ({"/etc/os-release": "ID=debian\nIMAGE_ID=gpu-node\nIMAGE_VERSION=2024.06\n"},
     "gpu-node:2024.06"),
    ({"/usr/lib/os-release": "IMAGE_ID=gpu-node\nBUILD_ID=417\n"}, "gpu-node build 417"),
    # os-release wins over stamp files
    ({"/etc/os-release": "IMAGE_ID=mk\n", "/etc/image-id": "other\n"}, "mk"),
    # Amazon Linux /etc/image-id
    ({"/etc/image-id": 'image_name="al2023-ami"\nimage_version="2023"\n'
                       'image_file="al2023-ami-2023.4.20240416.0-kernel-6.1-x86_64.xfs.gpt"\n'},
     "al2023-ami-2023.4.20240416.0-kernel-6.1-x86_64.xfs.gpt"),
    ({"/etc/image-id": 'image_name="amzn2-ami-hvm"\nimage_version="2"\n'}, "amzn2-ami-hvm:2"),
    ({"/etc/image-id": "golden-2024-06-01\n"}, "golden-2024-06-01"),
    # Ubuntu cloud images
    ({"/etc/cloud/build.info": "build_name: server\nserial: 20240423\n"}, "server:20240423"),
    # NVIDIA DGX OS
    ({"/etc/dgx-release": 'DGX_NAME="DGX Server"\nDGX_SWBUILD_VERSION="6.2.1"\n'},
     "DGX Server:6.2.1"),
    ({"/etc/dgx-release": 'DGX_NAME="DGX Server"\n'}, None),
    # diskimage-builder
    ({"/etc/dib-builddate.txt": "2024-06-01 10:11\n"}, "2024-06-01 10:11"),
    ({"/etc/image_id": "\n\n"}, None),
])
def test_image_identity(make_root, files: dict[str, str], expected: str | None) -> None:
    root = make_root(files)
    assert host_info(Host(str(root), live=False)).image_id == expected
    # a live node built from the image names it too
    assert host_info(Host(str(root), live=True)).image_id == expected


@pytest.mark.parametrize("files,name,version,build", [
    ({"/etc/os-release": "IMAGE_ID=gpu-node\nIMAGE_VERSION=2024.06\nBUILD_ID=417\n"},
     "gpu-node", "2024.06", "417"),
    ({"/etc/image-id": 'image_name="amzn2-ami-hvm"\nimage_version="2"\n'},
     "amzn2-ami-hvm", "2", None),
    ({"/etc/cloud/build.info": "build_name: server\nserial: 20240423\n"},
     "server", "20240423", None),
    ({"/etc/dgx-release": 'DGX_NAME="DGX Server"\nDGX_SWBUILD_VERSION="6.2.1"\n'},
     "DGX Server", "6.2.1", None),
    # a one-line stamp says which build, not which image
    ({"/etc/dib-builddate.txt": "2024-06-01 10:11\n"}, None, "2024-06-01 10:11", None),
])
def test_image_stamp_is_split_into_name_version_build(make_root, files, name, version,
                                                      build) -> None:
    h = host_info(Host(str(make_root(files)), live=False))
    assert (h.image_name, h.image_version, h.image_build) == (name, version, build)


def _offline(make_root, version: str, build: str, **extra: str):
    files = {"/etc/hostname": "localhost\n", "/etc/machine-id": "uninitialized\n",
             "/etc/os-release": f"ID=debian\nIMAGE_ID=gpu-node\nIMAGE_VERSION={version}\n"
                                f"BUILD_ID={build}\n", **extra}
    return host_info(Host(str(make_root(files)), live=False))


def test_scan_name_is_the_image_name_across_builds(make_root) -> None:
    from aiaudit.core.identity import scan_name

    a = _offline(make_root, "2024.06", "417")
    b = _offline(make_root, "2024.07", "502")
    assert a.image_id != b.image_id
    assert scan_name(a) == scan_name(b) == "gpu-node"


def test_scan_name_keeps_two_hosts_of_one_image_apart(make_root) -> None:
    """Live (or a host's own disk, which has a machine id), hosts built from one image
    are named by their hostnames."""
    from aiaudit.core.identity import scan_name

    names = set()
    for host in ("gpu-a", "gpu-b"):
        h = _offline(make_root, "2024.06", "417", **{"/etc/hostname": host + "\n",
                                                     "/etc/machine-id": MID + "\n"})
        names.add(scan_name(h))
        live = replace(h, mode="live")
        assert scan_name(live) == host
    assert names == {"gpu-a", "gpu-b"}


def test_image_stamp_that_is_not_a_file_is_ignored(make_root) -> None:
    root = make_root(dirs=("/etc/image-id",), files={"/etc/buildinfo": "b-7\n"})
    os.mkfifo(root / "etc" / "image_id")
    assert host_info(Host(str(root), live=False)).image_id == "b-7"


def test_every_output_names_the_host(make_root) -> None:
    root = make_root({"/etc/hostname": "img\n", "/etc/machine-id": "uninitialized\n",
                      "/etc/os-release": "ID=debian\nIMAGE_ID=gpu-node\nIMAGE_VERSION=7\n"})
    r = cli("scan", "--root", str(root), "--format", "json", "--only", "SYSCTL-VM-SWAPPINESS")
    host = json.loads(r.out)["host"]
    assert host == {"hostname": "img", "machine_id": None, "product_uuid": None,
                    "os": {"name": None, "id": "debian", "version": None}, "kernel": None,
                    "root": os.path.realpath(root), "mode": "offline",
                    "image_id": "gpu-node:7", "image_name": "gpu-node", "image_version": "7",
                    "os_release_path": "/etc/os-release", "image_kind": "container",
                    "image_kind_reason": CONTAINER_REASON}
    text = cli("scan", "--root", str(root), "--only", "SYSCTL-VM-SWAPPINESS").out
    assert text.splitlines()[0].endswith(" · host img, image gpu-node:7 · container image")
    assert text.splitlines()[1].startswith(f"offline scan of root {os.path.realpath(root)} ")
