"""The kind of root (bootable host, stateless image, container image): detected from what
the root contains, stated with ``--image-kind``, and what it means for boot-time rules
(:mod:`aiaudit.core.identity` ``root_kind``, :mod:`aiaudit.linux.rootkind`)."""

from __future__ import annotations

import pytest

from aiaudit.core.host import Host
from aiaudit.core.identity import host_info, root_kind
from aiaudit.core.model import Status
from aiaudit.linux import rootkind
from tests.helpers import ROOTS

DEBIAN = "ID=debian\nVERSION_ID=12\n"
SYSTEMD = {"/etc/os-release": DEBIAN, "/lib/systemd/systemd": ""}
INIT_LINK = {"/sbin/init": "/lib/systemd/systemd"}


def _kind(root, live: bool = False, **kw):
    return root_kind(Host(str(root), live=live, **kw))


@pytest.mark.parametrize(("case", "kind", "provisioner", "systemd"), [
    ("image-bootable-debian12", "bootable", None, True),
    ("image-container-debian12", "container", None, False),
    ("image-stateless-warewulf-debian12", "stateless", "Warewulf", True),
    ("image-stateless-xcat-rocky9", "stateless", "xCAT", True),
])
def test_fixture_roots_of_each_kind(case: str, kind: str, provisioner: str | None,
                                    systemd: bool) -> None:
    rk = _kind(ROOTS / case / "root")
    assert (rk.kind, rk.provisioner, rk.systemd) == (kind, provisioner, systemd)
    info = host_info(Host(str(ROOTS / case / "root"), live=False))
    assert info.image_kind == kind and info.image_kind_reason == rk.reason


def test_bootable_needs_a_boot_loader_file_not_an_aiaudit_dropin(make_root) -> None:
    base = {**SYSTEMD, "/boot/vmlinuz-6.1.0-50-amd64": ""}
    # init and a kernel, no boot loader: whoever boots it passes the command line
    rk = _kind(make_root(base, INIT_LINK))
    assert rk.kind == "stateless" and rk.provisioner is None
    assert "no boot loader configuration" in rk.reason and "sbin/init -> " in rk.reason
    # a fix bundle's grub drop-in does not make it bootable (nothing would read it)
    drop = {**base, "/etc/default/grub.d/99-aiaudit.cfg": 'GRUB_CMDLINE_LINUX_DEFAULT="x"\n'}
    assert _kind(make_root(drop, INIT_LINK)).kind == "stateless"
    for loader in ("/etc/default/grub", "/boot/grub/grub.cfg", "/boot/grub2/grub.cfg",
                   "/boot/loader/entries/x-6.1.conf", "/etc/kernel/cmdline",
                   "/boot/efi/EFI/debian/grub.cfg", "/boot/extlinux/extlinux.conf"):
        rk = _kind(make_root({**base, loader: ""}, INIT_LINK))
        assert rk.kind == "bootable" and loader.lstrip("/") in rk.reason, loader


def test_provisioner_files_win_over_a_boot_loader(make_root) -> None:
    # Warewulf images may carry grub2 (to get the kernel into /boot): still stateless
    files = {**SYSTEMD, "/etc/default/grub": 'GRUB_CMDLINE_LINUX="quiet"\n',
             "/etc/warewulf/container_exit.sh": "#!/bin/sh\n"}
    rk = _kind(make_root(files, INIT_LINK))
    assert rk.kind == "stateless" and rk.provisioner == "Warewulf"
    files = {**SYSTEMD, "/opt/xcat/xcatdsklspost": "#!/bin/sh\n"}
    assert _kind(make_root(files, INIT_LINK)).provisioner == "xCAT"


def test_container_image_and_bare_configuration_tree(make_root) -> None:
    # an operating system without init, kernel or boot loader: a container image
    rk = _kind(make_root({"/etc/os-release": DEBIAN, "/usr/bin/sh": ""}))
    assert rk.kind == "container" and not rk.systemd
    assert not rootkind.boots(Host(str(make_root({"/etc/os-release": DEBIAN})), live=False))
    # no operating system files at all (an /etc snapshot): judged as the host it configures
    rk = _kind(make_root({"/etc/sysctl.d/10-x.conf": "vm.swappiness=1\n"}))
    assert rk.kind == "bootable" and rk.bare and rk.systemd
    assert "configuration tree" in rk.reason


def test_init_that_is_not_systemd(make_root) -> None:
    """A sysvinit root: its units and .wants links are read by nothing."""
    files = {"/etc/os-release": DEBIAN, "/lib/sysvinit/init": "", "/etc/default/grub": "",
             "/lib/systemd/systemd": ""}
    rk = _kind(make_root(files, {"/sbin/init": "/lib/sysvinit/init"}))
    assert rk.kind == "bootable" and not rk.systemd and rk.init == "sbin/init -> lib/sysvinit/init"
    rk = _kind(make_root(files, INIT_LINK))
    assert rk.systemd
    # no /sbin/init but systemd's binary (init= names it): systemd
    assert _kind(make_root({**files, "/etc/default/grub": ""})).systemd


def test_image_kind_stated_wins(make_root) -> None:
    root = make_root({"/etc/os-release": DEBIAN})
    rk = _kind(root, image_kind="stateless")
    assert rk.kind == "stateless" and rk.stated
    assert rk.reason.startswith("stated with --image-kind (its files suggest container")
    rk = _kind(root, image_kind="container")
    assert rk.kind == "container" and rk.reason.startswith("stated with --image-kind; ")
    # a bootable host stated to be a container image: boot-time rules do not apply
    rk = _kind(ROOTS / "image-bootable-debian12" / "root", image_kind="container")
    assert rk.kind == "container" and not rk.systemd


def test_live_kinds(make_root) -> None:
    assert _kind(make_root({"/proc/cmdline": "ro quiet\n"}), live=True).kind == "bootable"
    rk = _kind(make_root({"/.dockerenv": "", "/proc/cmdline": "ro\n"}), live=True)
    assert rk.kind == "container" and "/.dockerenv" in rk.reason
    rk = _kind(make_root({"/run/.containerenv": ""}), live=True)
    assert rk.kind == "container"
    rk = _kind(make_root({"/proc/cmdline": "wwid=52:54:00:6a:1f:01 quiet\n"}), live=True)
    assert (rk.kind, rk.provisioner) == ("stateless", "Warewulf")
    cmd = "imgurl=http://10.0.0.1:80/install/netboot/rootimg.cpio.gz XCAT=10.0.0.1:3001 ro\n"
    rk = _kind(make_root({"/proc/cmdline": cmd}), live=True)
    assert (rk.kind, rk.provisioner) == ("stateless", "xCAT")


def test_skips_and_fix_texts(make_root) -> None:
    host = Host(str(ROOTS / "image-container-debian12" / "root"), live=False)
    r = rootkind.container_skip(host, "cpufreq", "the CPU frequency governor")
    assert r is not None and r.status is Status.SKIP
    assert r.message.startswith("not applicable to a container image: the CPU frequency "
                                "governor is its host's")
    assert r.evidence[0].kind == "default"
    ww = Host(str(ROOTS / "image-stateless-warewulf-debian12" / "root"), live=False)
    assert rootkind.container_skip(ww, "cpufreq", "x") is None
    steps = rootkind.provisioner_steps(ww, ["iommu=pt"])
    assert steps.startswith("Warewulf: wwctl profile set PROFILE --kernelargs=") and \
        "iommu=pt" in steps and "xCAT" not in steps
    assert "wwctl image build" in rootkind.image_followup(ww)
    xcat = Host(str(ROOTS / "image-stateless-xcat-rocky9" / "root"), live=False)
    assert rootkind.provisioner_steps(xcat, ["a=1"]).startswith("xCAT: chdef -t osimage")
    assert "packimage" in rootkind.image_followup(xcat)
    # a stateless image of no known provisioner: every usual way is named
    plain = Host(str(make_root({**SYSTEMD, "/boot/vmlinuz-6.1": ""}, INIT_LINK)), live=False)
    text = rootkind.provisioner_steps(plain, ["a=1"])
    assert "Warewulf" in text and "xCAT" in text and "PXE" in text
    boot = Host(str(ROOTS / "image-bootable-debian12" / "root"), live=False)
    assert rootkind.image_followup(boot) == ""
