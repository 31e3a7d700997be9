"""aiaudit.linux.kernel.config: the kernel config and its Kconfig choices."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.linux.kernel.config import config_choice, kernel_config


def test_config_choice_only_the_choice_symbols(make_root) -> None:
    text = ("CONFIG_TRANSPARENT_HUGEPAGE=y\n"
            "CONFIG_TRANSPARENT_HUGEPAGE_SHMEM_HUGE_ALWAYS=y\n"
            "# CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS is not set\n"
            "  CONFIG_TRANSPARENT_HUGEPAGE_MADVISE=y\n"
            "CONFIG_CPU_FREQ_DEFAULT_GOV_SCHEDUTIL=y\n")
    host = Host(str(make_root({"/boot/config-6.14.0": text})))
    c = config_choice(host, "TRANSPARENT_HUGEPAGE", ("always", "madvise", "never"))
    assert c is not None
    assert (c.value, c.path, c.line, c.text) == (
        "madvise", "/boot/config-6.14.0", 4, "CONFIG_TRANSPARENT_HUGEPAGE_MADVISE=y")
    # without choices: any upper-case word after the prefix (the first one)
    g = config_choice(host, "CPU_FREQ_DEFAULT_GOV")
    assert g is not None and (g.value, g.line) == ("schedutil", 5)
    assert config_choice(host, "NO_SUCH") is None


def test_newest_boot_config_offline(make_root) -> None:
    host = Host(str(make_root({"/boot/config-6.1.0": "A\n", "/boot/config-6.10.2": "B\n",
                               "/boot/config-5.15.0": "C\n"})))
    assert kernel_config(host) == ("/boot/config-6.10.2", "B\n")
    assert config_choice(Host(str(make_root({}))), "X") is None
