"""aiaudit.linux.kernel.config: the kernel config and its Kconfig choices."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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


_CONFIG_PIECES = ["CONFIG_A=y", "CONFIG_AB=m", "# CONFIG_A is not set", "  CONFIG_A=\"x\"",
                  "CONFIG_A_B=y", "#CONFIG_A is not set", "x CONFIG_A=y", "\t", " ", "\n",
                  "\n\n", "\r\n", "CONFIG_THP_ALWAYS=y", "CONFIG_THP_MADVISE=y"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_CONFIG_PIECES), max_size=30).map("".join),
       st.sampled_from(["CONFIG_A", "CONFIG_A=", "# CONFIG_A is not set", "CONFIG_THP_"]))
def test_lines_with_is_a_scan_of_every_line(text: str, needle: str) -> None:
    """The lines found by searching are those a walk over every line keeps."""
    from aiaudit.linux.kernel.config import lines_with

    walked = [(n, raw.strip()) for n, raw in enumerate(text.split("\n"), 1) if needle in raw]
    assert list(lines_with(text, needle)) == walked
