"""``kernel.tcp_mem``: the runtime and persisted value judged against RAM."""

from __future__ import annotations

from aiaudit.core.model import Aspect, Status
from tests.helpers import run_check

MEM = "MemTotal:       263921664 kB\n"  # 256 GiB: 65980416 pages of 4 KiB


def root(make_root, tcp_mem: str, conf: str | None = None, pmd: str = "2097152"):
    files = {"/proc/meminfo": MEM, "/proc/sys/net/ipv4/tcp_mem": tcp_mem + "\n",
             "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size": pmd + "\n"}
    if conf:
        files["/etc/sysctl.d/60-tcp.conf"] = f"net.ipv4.tcp_mem = {conf}\n"
    return make_root(files)


def test_kernel_default_passes_small_and_huge_fail(make_root) -> None:
    pages = 263921664 * 1024 // 4096
    d = [pages // 16 * 3 // 4, pages // 16, pages // 16 * 3 // 2]
    [r] = run_check("kernel.tcp_mem", root(make_root, " ".join(map(str, d))), live=True)
    assert r.status is Status.PASS
    [r] = run_check("kernel.tcp_mem", root(make_root, "65536 131072 262144"), live=True)
    assert r.status is Status.FAIL and "below 3%" in r.message
    [r] = run_check("kernel.tcp_mem", root(make_root, f"1 2 {pages}"), live=True)
    assert r.status is Status.FAIL and "OOM" in r.message
    [r] = run_check("kernel.tcp_mem", root(make_root, "3 2 1"), live=True)
    assert r.status is Status.FAIL and "order" in r.message


def test_persisted_value_judged_too(make_root) -> None:
    pages = 263921664 * 1024 // 4096
    good = f"{pages // 20} {pages // 16} {pages // 10}"
    [r] = run_check("kernel.tcp_mem", root(make_root, good, conf="65536 131072 262144"),
                    live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.DRIFT


def test_64k_pages_change_the_judgement(make_root) -> None:
    # 262144 pages are 1 GiB with 4 KiB pages (0.4% of 256 GiB) but 16 GiB with 64 KiB
    [r] = run_check("kernel.tcp_mem", root(make_root, "131072 196608 262144", pmd="536870912"),
                    live=True)
    assert r.status is Status.PASS


def test_offline_skips(make_root) -> None:
    [r] = run_check("kernel.tcp_mem", make_root({}))
    assert r.status is Status.SKIP


def test_fix_is_the_kernels_own_value(make_root) -> None:
    """The remediation proposes tcp_init_mem's value for this RAM, in the sysctl drop-in
    where a persisted value is wrong, and that value passes."""
    [r] = run_check("kernel.tcp_mem", root(make_root, "65536 131072 262144",
                                           conf="65536 131072 262144"), live=True)
    assert r.aspect is Aspect.RUNTIME
    file, cmd = r.remediation.snippets
    assert (file.kind, file.path) == ("file", "/etc/sysctl.d/99-zz-aiaudit.conf")
    value = file.content.split("=", 1)[1].strip()
    assert cmd.content == f"sysctl -w net.ipv4.tcp_mem='{value}'"
    [ok] = run_check("kernel.tcp_mem", root(make_root, value), live=True)
    assert ok.status is Status.PASS


def test_unparsable_persisted_value_is_an_error(make_root) -> None:
    pages = 263921664 * 1024 // 4096
    good = f"{pages // 20} {pages // 16} {pages // 10}"
    [r] = run_check("kernel.tcp_mem", root(make_root, good, conf="lots"), live=True)
    assert r.status is Status.ERROR and "60-tcp.conf:1" in r.message


def test_drift_fix_applies_the_boot_value_only(make_root) -> None:
    """Issue 30: the runtime value is wrong and the boot value is right: write the boot
    value now (the persisted one, else the kernel's own for this RAM), no drop-in."""
    pages = 263921664 * 1024 // 4096
    good = f"{pages // 20} {pages // 16} {pages // 10}"
    [r] = run_check("kernel.tcp_mem", root(make_root, "65536 131072 262144", conf=good),
                    live=True)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.DRIFT)
    assert "60-tcp.conf:1), which is right" in r.message
    assert [(s.kind, s.content) for s in r.remediation.snippets] == [
        ("command", f"sysctl -w net.ipv4.tcp_mem='{good}'")]
    assert "already right" in r.remediation.summary
    [r] = run_check("kernel.tcp_mem", root(make_root, "65536 131072 262144"), live=True)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.RUNTIME)
    assert "no sysctl.d file sets it" in r.message
    [cmd] = r.remediation.snippets
    assert cmd.kind == "command" and cmd.content.startswith("sysctl -w net.ipv4.tcp_mem='")
    value = cmd.content.split("'")[1]
    [ok] = run_check("kernel.tcp_mem", root(make_root, value), live=True)
    assert ok.status is Status.PASS
