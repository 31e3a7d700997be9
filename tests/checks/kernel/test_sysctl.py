"""``kernel.sysctl``: the check itself, offline and live (runtime, persisted, drift), with
the boot applier, ufw and kernel defaults from the build config.  The deciders it uses are
tested against the real programs in ``tests/linux/sysctl/test_conf_oracle.py``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aiaudit.core.host import Host
from aiaudit.core.model import Aspect, Status
from aiaudit.linux.sysctl import conf as sp
from aiaudit.linux.sysctl.dropin import DROPIN
from aiaudit.linux.sysctl.files import load_config
from tests.helpers import run_check

SWAP = {"key": "vm.swappiness", "op": "le", "value": 10, "kernel_default": 60}


def _one(results):
    assert len(results) == 1, results
    return results[0]


def test_offline_pass_names_deciding_line(make_root) -> None:
    root = make_root({"/usr/lib/sysctl.d/50-v.conf": "vm.swappiness = 60\n",
                      "/etc/sysctl.d/60-x.conf": "# tuned\nvm.swappiness = 5\n"})
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert (r.status, r.aspect, r.actual) == (Status.PASS, Aspect.PERSISTED, "5")
    assert [e.source for e in r.evidence] == ["etc/sysctl.d/60-x.conf:2"]
    assert r.remediation is None


def test_offline_fail_has_remediation(make_root) -> None:
    root = make_root({"/usr/lib/sysctl.d/50-v.conf": "vm.swappiness = 60\n"})
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.PERSISTED)
    assert "usr/lib/sysctl.d/50-v.conf:1" in r.remediation.summary
    snip = r.remediation.snippets[0]
    assert (snip.kind, snip.path, snip.content) == ("file", DROPIN, "vm.swappiness = 10\n")
    assert all(s.kind != "command" for s in r.remediation.snippets)  # offline: no sysctl -w


def test_offline_kernel_default_decides(make_root) -> None:
    root = make_root(dirs=("/etc/sysctl.d",))
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert r.status is Status.FAIL and "kernel default 60" in r.message
    assert r.evidence[0].kind == "default"
    r = _one(run_check("kernel.sysctl", root, {**SWAP, "kernel_default": 1}))
    assert r.status is Status.PASS


SYSTEMD_ROOT = {"/usr/lib/systemd/systemd": ""}
"""Files that make a fixture root one where systemd is the init system."""


KPTR = {"key": "kernel.kptr_restrict", "op": "ge", "value": 1}
"""A rule without ``kernel_default`` for a key whose default aiaudit does not derive."""


@pytest.mark.parametrize("files,looked", [
    pytest.param(SYSTEMD_ROOT, "etc/sysctl.d, run/sysctl.d, usr/local/lib/sysctl.d or "
                 "usr/lib/sysctl.d", id="systemd-sysctl"),
    pytest.param({}, "etc/sysctl.d, run/sysctl.d, usr/local/lib/sysctl.d, usr/lib/sysctl.d, "
                 "lib/sysctl.d or etc/sysctl.conf", id="procps"),
])
def test_offline_nothing_sets_key_names_what_was_looked_for(make_root, files, looked) -> None:
    """Nothing sets the key and its default is unknown: an error, never a failure (issue
    27), that says where the boot applier looked (its own directories) and why the default
    is unknown, as a default evidence (no file to point at)."""
    root = make_root({"/etc/sysctl.d/10-x.conf": "vm.swappiness = 5\n", **files})
    r = _one(run_check("kernel.sysctl", root, KPTR))
    assert r.status is Status.ERROR and r.actual is None
    # why the default is unknown is said in the message, once (the evidence says it too,
    # and the text report prints it once)
    assert r.message == (f"kernel.kptr_restrict at boot: not set ({r.evidence[0].value}); "
                         "whether it is >= 1 cannot be told")
    [ev] = r.evidence
    assert ev.kind == "default" and ev.path is None
    assert ev.source == f"kernel.kptr_restrict: no line in {looked}"
    assert ev.value == ("kernel default unknown: kernel.kptr_restrict has no default that can "
                        "be read from the kernel's files (a rule may state it as kernel_default)")


def test_offline_derived_default_without_kernel_config(make_root) -> None:
    """kernel.dmesg_restrict's default comes from the kernel config: without one the
    evidence says which files were missing; with one, that file and line decide."""
    dmesg = {"key": "kernel.dmesg_restrict", "op": "eq", "value": 1}
    root = make_root(SYSTEMD_ROOT, dirs=("/etc/sysctl.d", "/boot"))
    r = _one(run_check("kernel.sysctl", root, dmesg))
    assert r.status is Status.ERROR
    [ev] = r.evidence
    assert (ev.kind, ev.value) == ("default", "kernel default unknown: no boot/config-*")
    assert ev.source.startswith("kernel.dmesg_restrict: no line in etc/sysctl.d, ")
    (root / "boot/config-6.1.0").write_text("CONFIG_X=y\n# CONFIG_SECURITY_DMESG_RESTRICT "
                                           "is not set\n")
    r = _one(run_check("kernel.sysctl", root, dmesg))
    assert r.status is Status.FAIL and "kernel default 0" in r.message
    assert [(e.kind, e.source) for e in r.evidence] == [("file", "boot/config-6.1.0:2")]


def test_offline_tuned_and_ufw_are_named_where_they_run(make_root) -> None:
    """An enabled ufw's sysctl file and an active tuned profile were consulted too."""
    root = make_root({**SYSTEMD_ROOT,
                      "/etc/ufw/ufw.conf": "ENABLED=yes\n",
                      "/etc/default/ufw": "IPT_SYSCTL=/etc/ufw/sysctl.conf\n",
                      "/etc/ufw/sysctl.conf": "net.ipv4.ip_forward=0\n",
                      "/usr/lib/systemd/system/ufw.service": "[Unit]\n",
                      "/etc/tuned/active_profile": "throughput-performance\n",
                      "/usr/lib/tuned/throughput-performance/tuned.conf":
                          "[sysctl]\nvm.swappiness=10\n",
                      "/usr/lib/systemd/system/tuned.service": "[Unit]\n"},
                     links={"/etc/systemd/system/multi-user.target.wants/ufw.service":
                            "/usr/lib/systemd/system/ufw.service",
                            "/etc/systemd/system/multi-user.target.wants/tuned.service":
                            "/usr/lib/systemd/system/tuned.service"})
    r = _one(run_check("kernel.sysctl", root, KPTR))
    assert r.status is Status.ERROR
    assert r.evidence[-1].source.endswith(
        "usr/lib/sysctl.d, etc/ufw/sysctl.conf (ufw) or the [sysctl] of tuned profile "
        "throughput-performance")


def test_offline_broken_file_is_the_evidence_of_the_error(make_root) -> None:
    """An unreadable sysctl.d file makes the value unknown: that file (which exists) is the
    evidence, with the problem, and no 'nothing sets it' default is claimed."""
    root = make_root({**SYSTEMD_ROOT, "/etc/sysctl.d/50-broken.conf": b"kernel.x = 1\n\x00"})
    r = _one(run_check("kernel.sysctl", root, KPTR))
    assert r.status is Status.ERROR and "50-broken.conf" in r.message
    assert [(e.kind, e.path, e.line) for e in r.evidence] == [
        ("file", "/etc/sysctl.d/50-broken.conf", None)]
    assert "binary content" in (r.evidence[0].value or "")
    assert not r.evidence[0].value.startswith("/etc")  # the path is the source, not the value
    live = make_root({**SYSTEMD_ROOT, "/etc/sysctl.d/50-broken.conf": b"\x00",
                      "/proc/sys/kernel/kptr_restrict": "0\n"})
    r = _one(run_check("kernel.sysctl", live, KPTR, live=True))
    assert r.status is Status.FAIL and "cannot be determined" in r.message
    assert [e.source for e in r.evidence] == ["/proc/sys/kernel/kptr_restrict",
                                              "etc/sysctl.d/50-broken.conf"]


def test_offline_procps_difference_is_noted(make_root) -> None:
    root = make_root({"/etc/sysctl.conf": "vm.swappiness = 80\n",
                      "/etc/sysctl.d/10-x.conf": "vm.swappiness = 5\n", **SYSTEMD_ROOT})
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert r.status is Status.PASS  # systemd-sysctl decides at boot: no link, no sysctl.conf
    assert "sysctl --system" in r.message and "etc/sysctl.conf:1" in r.message
    assert r.data["procps"] == {"value": "80", "source": "etc/sysctl.conf:1"}


def _live(make_root, runtime: str | None, files: dict[str, str]):
    proc = {} if runtime is None else {"/proc/sys/vm/swappiness": runtime + "\n"}
    return make_root({**proc, **files}, dirs=("/proc/sys/vm",))


@pytest.mark.parametrize("runtime,files,status,aspect", [
    ("5", {"/etc/sysctl.d/10.conf": "vm.swappiness=5\n"}, Status.PASS, Aspect.RUNTIME),
    ("60", {"/etc/sysctl.d/10.conf": "vm.swappiness=60\n"}, Status.FAIL, Aspect.PERSISTED),
    # right now, but reverts at reboot
    ("5", {"/etc/sysctl.d/10.conf": "vm.swappiness=60\n"}, Status.FAIL, Aspect.DRIFT),
    ("5", {}, Status.FAIL, Aspect.DRIFT),  # nothing persists it; kernel default 60
    # configured right, but not applied
    ("60", {"/etc/sysctl.d/10.conf": "vm.swappiness=5\n"}, Status.FAIL, Aspect.DRIFT),
    ("60", {}, Status.FAIL, Aspect.RUNTIME),
])
def test_live_runtime_persisted_drift(make_root, runtime, files, status, aspect) -> None:
    r = _one(run_check("kernel.sysctl", _live(make_root, runtime, files), SWAP, live=True))
    assert (r.status, r.aspect) == (status, aspect), r.message
    assert r.evidence[0].source == "/proc/sys/vm/swappiness"
    if status is Status.FAIL:
        kinds = [s.kind for s in r.remediation.snippets]
        if aspect is Aspect.DRIFT and runtime == "60":  # configured right: apply it, only
            assert [s.shell() for s in r.remediation.snippets] == ["sysctl --system"]
        elif runtime == "5":  # right now: persisting it is the whole fix
            assert kinds == ["file"]
        else:
            assert kinds == ["file", "command"]
            assert r.remediation.snippets[1].content == "sysctl -w vm.swappiness='10'"


def test_live_persist_false_ignores_boot_value(make_root) -> None:
    root = _live(make_root, "5", {"/etc/sysctl.d/10.conf": "vm.swappiness=60\n"})
    r = _one(run_check("kernel.sysctl", root, {**SWAP, "persist": False}, live=True))
    assert (r.status, r.aspect) == (Status.PASS, Aspect.RUNTIME)


@pytest.mark.parametrize("missing", ["skip", "fail", "pass"])
def test_live_missing_key(make_root, missing) -> None:
    root = _live(make_root, None, {})
    r = _one(run_check("kernel.sysctl", root, {**SWAP, "missing": missing}, live=True))
    assert r.status.value == missing and "does not exist" in r.message


def test_tab_separated_runtime_and_fields(make_root) -> None:
    root = make_root({"/proc/sys/net/ipv4/tcp_rmem": "4096\t131072\t6291456\n",
                      "/etc/sysctl.d/10.conf": "net.ipv4.tcp_rmem = 4096 131072 6291456\n"})
    params = {"key": "net.ipv4.tcp_rmem",
              "fields": [None, {"op": "ge", "value": 87380}, {"op": "ge", "value": 67108864}]}
    r = _one(run_check("kernel.sysctl", root, params, live=True))
    assert r.status is Status.FAIL and r.actual == "4096 131072 6291456"
    assert r.remediation.snippets[0].content == "net.ipv4.tcp_rmem = 4096 131072 67108864\n"


@pytest.mark.parametrize("bad", [
    pytest.param(b"vm.swappiness = 5\n\x00\x01binary", id="binary"),
    pytest.param(b"# big\n" + b"x" * (4 * 1024 * 1024 + 1), id="oversized"),
])
def test_broken_file_gives_error_for_persisted_side_only(make_root, bad) -> None:
    files: dict[str, str | bytes] = {"/proc/sys/vm/swappiness": "5\n",
                                     "/etc/sysctl.d/10.conf": "vm.swappiness = 5\n",
                                     "/etc/sysctl.d/50-broken.conf": bad}
    root = make_root(files)
    live = _one(run_check("kernel.sysctl", root, SWAP, live=True))
    assert (live.status, live.aspect) == (Status.ERROR, Aspect.PERSISTED), live.message
    assert "50-broken.conf" in live.message and live.actual == "5"
    offline = _one(run_check("kernel.sysctl", root, SWAP))
    assert offline.status is Status.ERROR
    # runtime-only rules still pass
    ok = _one(run_check("kernel.sysctl", root, {**SWAP, "persist": False}, live=True))
    assert ok.status is Status.PASS


def test_symlink_loop_is_skipped_as_systemd_does(make_root) -> None:
    """systemd-sysctl cannot open a looping link either (ELOOP): it logs and goes on with
    the other files, so the boot value is still known."""
    root = make_root({"/proc/sys/vm/swappiness": "5\n",
                      "/etc/sysctl.d/10.conf": "vm.swappiness = 5\n"})
    os.symlink("50-loop.conf", root / "etc/sysctl.d/50-loop.conf")
    r = _one(run_check("kernel.sysctl", root, SWAP, live=True))
    assert (r.status, r.actual) == (Status.PASS, "5"), r.message
    assert any("50-loop.conf" in n for n in load_config(Host(str(root))).notes)


@pytest.mark.parametrize("path", ["/etc/sysctl.conf", "/etc/sysctl.d/.hidden.conf"])
def test_broken_file_only_procps_reads_is_not_an_error(make_root, path: str) -> None:
    root = make_root({"/etc/sysctl.d/10.conf": "vm.swappiness = 5\n", path: b"\x00"})
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert (r.status, r.actual) == (Status.PASS, "5"), r.message
    cfg = load_config(Host(str(root)))
    assert not cfg.problems and any("only `sysctl --system`" in n for n in cfg.notes)
    # through the 99-sysctl.conf link systemd reads it too: then it is an error
    if path == "/etc/sysctl.conf":
        os.symlink("../sysctl.conf", root / "etc/sysctl.d/99-sysctl.conf")
        assert _one(run_check("kernel.sysctl", root, SWAP)).status is Status.ERROR


def test_fifo_in_sysctl_d_is_ignored_like_systemd(make_root) -> None:
    root = make_root({"/etc/sysctl.d/10.conf": "vm.swappiness = 5\n"})
    os.mkfifo(root / "etc/sysctl.d/20-fifo.conf")
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert r.status is Status.PASS


def test_config_parsed_once_per_run(make_root) -> None:
    from aiaudit.api import CheckContext
    from aiaudit.core.plugins import registry

    root = make_root({"/etc/sysctl.d/10.conf": "vm.swappiness = 5\nvm.dirty_ratio = 5\n"})
    host = Host(str(root), live=False)
    spec = registry().checks["kernel.sysctl"]
    for key in ("vm.swappiness", "vm.dirty_ratio", "vm.swappiness"):
        list(spec.run(CheckContext(host, {"key": key, "op": "le", "value": 10})))
    assert host.reads == 1


def test_live_scan_of_this_machine_reads_proc_sys() -> None:
    """The real host: the runtime value reported is the one in /proc/sys right now, and
    the persisted value is what the oracle-tested decider gives for the real files."""
    path = Path("/proc/sys/vm/swappiness")
    if not path.exists():
        pytest.skip("no /proc/sys/vm/swappiness here")
    r = _one(run_check("kernel.sysctl", "/", SWAP, live=True))
    assert r.data["runtime"] == path.read_text().strip()
    assert r.evidence[0].source == "/proc/sys/vm/swappiness"
    if int(r.data["runtime"]) > 10:
        assert r.status is Status.FAIL and r.aspect in (Aspect.RUNTIME, Aspect.PERSISTED,
                                                        Aspect.DRIFT)
    dec = sp.systemd_decide(load_config(Host("/")).entries, "vm/swappiness")
    assert r.data.get("persisted", {}).get("value") == dec.value


def test_root_without_systemd_is_decided_by_procps(make_root) -> None:
    """No systemd on the root: procps' init script runs `sysctl --system`, which reads
    /etc/sysctl.conf last (no 99-sysctl.conf link needed); the fix must edit that file."""
    files = {"/etc/sysctl.conf": "vm.swappiness = 80\n",
             "/etc/sysctl.d/10-x.conf": "vm.swappiness = 5\n", "/etc/init.d/procps": ""}
    r = _one(run_check("kernel.sysctl", make_root(files), SWAP))
    assert (r.status, r.actual) == (Status.FAIL, "80"), r.message
    assert "etc/sysctl.conf:1" in r.message and "no systemd on this root" in r.message
    assert "Note:" not in r.message
    assert r.data["applier"]["program"] == "procps"
    assert r.remediation.summary.startswith("Change etc/sysctl.conf:1")
    # the same files with systemd as init: systemd-sysctl never reads sysctl.conf
    r = _one(run_check("kernel.sysctl", make_root(
        {**files, "/lib/systemd/systemd": ""}, links={"/sbin/init": "/lib/systemd/systemd"}),
        SWAP))
    assert (r.status, r.actual) == (Status.PASS, "5"), r.message


def test_procps_empty_value_is_noted(make_root) -> None:
    """procps sets an empty value, systemd sets nothing: the note must still say so."""
    root = make_root({"/etc/sysctl.conf": "vm.swappiness =\n", **SYSTEMD_ROOT},
                     dirs=("/etc/sysctl.d",))
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert "would leave '' (from etc/sysctl.conf:1)" in r.message, r.message
    assert r.data["procps"] == {"value": "", "source": "etc/sysctl.conf:1"}


UFW = {"/etc/ufw/ufw.conf": "ENABLED=yes\n",
       "/etc/default/ufw": "IPT_SYSCTL=/etc/ufw/sysctl.conf\n",
       "/etc/ufw/sysctl.conf": "#net/ipv4/ip_forward=1\nvm/swappiness=30\n",
       "/etc/systemd/system/multi-user.target.wants/ufw.service": "",
       "/etc/sysctl.d/10-x.conf": "vm.swappiness = 5\n", **SYSTEMD_ROOT}


def test_enabled_ufw_reapplies_its_sysctl_file(make_root) -> None:
    r = _one(run_check("kernel.sysctl", make_root(UFW), SWAP))
    assert (r.status, r.actual) == (Status.FAIL, "30"), r.message
    assert "etc/ufw/sysctl.conf:2 when ufw starts" in r.message
    assert "etc/ufw/sysctl.conf:2" in [e.source for e in r.evidence]
    assert r.remediation.summary.startswith("Change etc/ufw/sysctl.conf:2")
    # ENABLED=no: ufw-init exits before loading anything
    r = _one(run_check("kernel.sysctl", make_root({**UFW, "/etc/ufw/ufw.conf": "ENABLED=no\n"}),
                       SWAP))
    assert (r.status, r.actual) == (Status.PASS, "5"), r.message
    # not enabled in systemd: nothing starts ufw-init
    files = {k: v for k, v in UFW.items() if "wants" not in k}
    r = _one(run_check("kernel.sysctl", make_root(files), SWAP))
    assert (r.status, r.actual) == (Status.PASS, "5"), r.message


NUMA = {"key": "kernel.numa_balancing", "op": "eq", "value": 0, "kernel_default": 1}


@pytest.mark.parametrize("line,status,default", [
    ("# CONFIG_NUMA_BALANCING_DEFAULT_ENABLED is not set", Status.PASS, "0"),
    ("CONFIG_NUMA_BALANCING_DEFAULT_ENABLED=y", Status.FAIL, "1"),
])
def test_numa_balancing_default_from_boot_config(make_root, line, status, default) -> None:
    root = make_root({"/boot/config-6.1.0-28-amd64": f"CONFIG_NUMA_BALANCING=y\n{line}\n",
                      **SYSTEMD_ROOT}, dirs=("/etc/sysctl.d",))
    r = _one(run_check("kernel.sysctl", root, NUMA))
    assert r.status is status, r.message
    assert f"kernel default {default}" in r.message
    assert r.evidence[0].source == "boot/config-6.1.0-28-amd64:2"


def test_numa_balancing_cmdline_beats_config(make_root) -> None:
    root = make_root({"/boot/config-6.1.0-28-amd64": "CONFIG_NUMA_BALANCING_DEFAULT_ENABLED=y\n",
                      "/etc/kernel/cmdline": "root=/dev/sda1 numa_balancing=disable\n",
                      **SYSTEMD_ROOT}, dirs=("/etc/sysctl.d",))
    r = _one(run_check("kernel.sysctl", root, NUMA))
    assert r.status is Status.PASS and "numa_balancing=disable" in r.message, r.message


def test_numa_balancing_live_single_node_and_config_gz(make_root) -> None:
    """Live: /proc/config.gz is the running kernel's config; with the default enabled the
    kernel still leaves balancing off on a machine with one NUMA node."""
    import gzip

    cfg = gzip.compress(b"CONFIG_NUMA_BALANCING=y\nCONFIG_NUMA_BALANCING_DEFAULT_ENABLED=y\n")
    base = {"/proc/sys/kernel/numa_balancing": "0\n", "/proc/config.gz": cfg, **SYSTEMD_ROOT}
    r = _one(run_check("kernel.sysctl", make_root(
        {**base, "/sys/devices/system/node/online": "0\n"}, dirs=("/etc/sysctl.d",)),
        NUMA, live=True))
    assert r.status is Status.PASS and "only 1 NUMA node" in r.message, r.message
    r = _one(run_check("kernel.sysctl", make_root(
        {**base, "/sys/devices/system/node/online": "0-1\n"}, dirs=("/etc/sysctl.d",)),
        NUMA, live=True))
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.DRIFT), r.message
    assert "proc/config.gz:2" in r.message


def test_dmesg_restrict_default_from_config(make_root) -> None:
    rule = {"key": "kernel.dmesg_restrict", "op": "eq", "value": 1}
    root = make_root({"/boot/config-6.1.0-28-amd64": "CONFIG_SECURITY_DMESG_RESTRICT=y\n",
                      **SYSTEMD_ROOT}, dirs=("/etc/sysctl.d",))
    r = _one(run_check("kernel.sysctl", root, rule))
    assert r.status is Status.PASS and "CONFIG_SECURITY_DMESG_RESTRICT=y" in r.message


def test_offline_config_of_the_kernel_grub_will_boot(make_root) -> None:
    """Two kernels in /boot: the config of the one grub.cfg starts decides, not the newest."""
    grub = ("menuentry 'Debian' {\n\tlinux /boot/vmlinuz-6.1.0-28-amd64 root=/dev/sda1 ro\n}\n"
            "menuentry 'Debian, 6.12' {\n\tlinux /boot/vmlinuz-6.12.9-amd64 root=/dev/sda1\n}\n")
    root = make_root({
        "/boot/grub/grub.cfg": grub,
        "/boot/config-6.1.0-28-amd64": "# CONFIG_NUMA_BALANCING_DEFAULT_ENABLED is not set\n",
        "/boot/config-6.12.9-amd64": "CONFIG_NUMA_BALANCING_DEFAULT_ENABLED=y\n",
        **SYSTEMD_ROOT}, dirs=("/etc/sysctl.d",))
    r = _one(run_check("kernel.sysctl", root, NUMA))
    assert r.status is Status.PASS, r.message
    assert r.evidence[0].source == "boot/config-6.1.0-28-amd64:1"
