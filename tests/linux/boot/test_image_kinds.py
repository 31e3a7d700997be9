"""The next boot's command line by kind of root, ``--kernel-cmdline``, which grub files are
read at all, and the line a grub parameter is cited at."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.linux.boot import cmdline as boot
from tests.helpers import ROOTS, run_check

DEBIAN = "ID=debian\nVERSION_ID=12\n"
ROCKY = 'ID="rocky"\nID_LIKE="rhel centos fedora"\nVERSION_ID="9.4"\n'


def _load(root, live: bool = False, **kw) -> boot.BootConfig:
    return boot.load(Host(str(root), live=live, **kw))


def test_grub_messages_cite_the_line_that_set_the_parameter(make_root) -> None:
    """The parameter was set on line 4; a later ``GRUB_CMDLINE_LINUX`` (line 5) must not be
    cited for it, in the message or the evidence."""
    grub = ('GRUB_DEFAULT=0\n'
            'GRUB_TIMEOUT=5\n'
            '# low latency\n'
            'GRUB_CMDLINE_LINUX_DEFAULT="quiet intel_idle.max_cstate=1 processor.max_cstate=1"\n'
            'GRUB_CMDLINE_LINUX=""\n')
    root = make_root({"/etc/default/grub": grub})
    src = _load(root).booted
    # the whole line: the last assignment that leaves words in it (line 5 sets it empty)
    assert src is not None and src.where() == "etc/default/grub:4"
    assert src.where("intel_idle.max_cstate") == "etc/default/grub:4"
    assert src.evidence("intel_idle.max_cstate").source == "etc/default/grub:4"
    (r,) = run_check("cpu.cstates", root, {"max_latency_us": 10})
    assert "on etc/default/grub:4" in r.message and "grub:5" not in r.message
    assert r.evidence[0].source == "etc/default/grub:4"


def test_origin_follows_variables_and_the_later_variable(make_root) -> None:
    grub = ('EXTRA="iommu=pt"\n'                                          # 1
            'GRUB_CMDLINE_LINUX="$EXTRA quiet"\n'                         # 2
            'GRUB_CMDLINE_LINUX_DEFAULT="intel_iommu=on"\n'               # 3
            'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX rd.shell=0"\n'       # 4
            'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT quiet"\n')  # 5
    src = _load(make_root({"/etc/default/grub": grub})).booted
    assert src is not None
    # iommu came in through $EXTRA (line 1), not from "intel_iommu" on line 3
    assert src.where("iommu") == "etc/default/grub:1"
    assert src.where("intel_iommu") == "etc/default/grub:3"
    assert src.where("rd.shell") == "etc/default/grub:4"
    # quiet is in both; LINUX_DEFAULT comes later on the command line, so line 5 counts
    assert src.where("quiet") == "etc/default/grub:5"


def test_container_image_has_no_command_line() -> None:
    cfg = _load(ROOTS / "image-container-debian12" / "root", kernel_cmdline="iommu=pt")
    assert cfg.booted is None and cfg.kind == "container"
    assert cfg.unknown.startswith("container image: no init")


def test_stateless_image_needs_the_command_line_given() -> None:
    root = ROOTS / "image-stateless-warewulf-debian12" / "root"
    cfg = _load(root)
    assert cfg.booted is None and cfg.loader == "provisioner" and cfg.from_provisioner
    assert cfg.unknown.startswith("the kernel command line comes from the provisioner: pass "
                                  "it with `--kernel-cmdline '...'` to check it")
    cfg = _load(root, kernel_cmdline='quiet iommu=pt foo="a b"')
    assert cfg.booted is not None and cfg.booted.kind == "given" and cfg.loader == "given"
    assert str(cfg.booted.get("foo")) == 'foo="a b"'
    assert cfg.booted.where("iommu") == boot.GIVEN
    ev = cfg.booted.evidence("iommu")
    assert (ev.kind, ev.source, ev.value) == ("default", boot.GIVEN, "iommu=pt")


def test_live_stateless_node_takes_proc_cmdline(make_root) -> None:
    root = make_root({"/proc/cmdline": "wwid=52:54:00:6a:1f:01 quiet iommu=pt\n",
                      "/etc/os-release": DEBIAN, "/etc/default/grub": 'GRUB_CMDLINE_LINUX=""\n'})
    cfg = _load(root, live=True)
    assert cfg.loader == "provisioner" and cfg.booted is not None
    assert cfg.booted.kind == "proc" and cfg.booted.get("iommu") is not None
    assert "what the provisioner passes" in cfg.notes[0]


def test_given_command_line_on_a_bootable_root_replaces_its_files() -> None:
    cfg = _load(ROOTS / "image-bootable-debian12" / "root", kernel_cmdline="iommu=pt")
    assert cfg.loader == "given" and cfg.booted is not None and cfg.booted.get("iommu")


def test_grub_dropins_only_where_grub_mkconfig_reads_them(make_root) -> None:
    drop = {"/etc/default/grub.d/99-aiaudit.cfg":
            'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT iommu=pt"\n'}
    grub = {"/etc/default/grub": 'GRUB_CMDLINE_LINUX_DEFAULT="quiet"\n'}
    # Debian's grub-mkconfig sources them (its patch: for x in .../default/grub.d/*.cfg)
    deb = {**grub, **drop, "/etc/os-release": DEBIAN, "/bin/sh": "",
           "/usr/sbin/grub-mkconfig": "#!/bin/sh\nfor x in ${sysconfdir}/default/grub.d/*.cfg"
                                      " ; do . $x; done\n"}
    cfg = _load(make_root(deb))
    assert cfg.grub_dropins and cfg.booted is not None and cfg.booted.get("iommu")
    # RHEL's grub2-mkconfig has no such loop: the drop-in is a file nothing reads
    rhel = {**grub, **drop, "/etc/os-release": ROCKY, "/bin/sh": "",
            "/usr/sbin/grub2-mkconfig": "#!/bin/sh\n. ${sysconfdir}/default/grub\n"}
    cfg = _load(make_root(rhel))
    assert not cfg.grub_dropins and cfg.booted is not None and cfg.booted.get("iommu") is None
    assert any("not read" in n for n in cfg.notes)
    # without the generator, the distribution says
    cfg = _load(make_root({**grub, **drop, "/etc/os-release": ROCKY, "/bin/sh": ""}))
    assert not cfg.grub_dropins
    cfg = _load(make_root({**grub, **drop, "/etc/os-release": DEBIAN, "/bin/sh": ""}))
    assert cfg.grub_dropins
    # no grub at all (only the drop-in) in an operating system tree: nothing reads it
    no_grub = {**drop, "/etc/os-release": DEBIAN, "/bin/sh": ""}
    assert not boot.reads_grub_dropins(Host(str(make_root(no_grub)), live=False))
    # a bare configuration tree (no os-release): judged as the Debian-like host it configures
    assert boot.reads_grub_dropins(Host(str(make_root(drop)), live=False))


def test_fix_where_the_command_line_comes_from(make_root) -> None:
    params = ["iommu=pt"]
    # bootable Debian: the grub drop-in and update-grub
    host = Host(str(ROOTS / "image-bootable-debian12" / "root"), live=False)
    rem = boot.params_remediation(host, boot.load(host), params)
    assert [s.path for s in rem.snippets if s.kind == "file"] == [boot.DROPIN]
    assert not rem.provisioner
    # a stateless image: nothing installed in it, the provisioner's step instead
    host = Host(str(ROOTS / "image-stateless-xcat-rocky9" / "root"), live=False,
                kernel_cmdline="quiet")
    rem = boot.params_remediation(host, boot.load(host), params)
    assert rem.snippets == () and rem.provisioner.startswith("xCAT: chdef")
    assert "the kernel command line the provisioner passes" in rem.summary
    # RHEL grub without drop-in support: no drop-in, a person edits /etc/default/grub
    rhel = {"/etc/default/grub": 'GRUB_CMDLINE_LINUX="quiet"\n', "/etc/os-release": ROCKY,
            "/bin/sh": "", "/usr/sbin/grub2-mkconfig": "#!/bin/sh\n"}
    host = Host(str(make_root(rhel)), live=False)
    rem = boot.params_remediation(host, boot.load(host), params)
    assert rem.snippets == () and "GRUB_CMDLINE_LINUX in /etc/default/grub" in rem.manual
