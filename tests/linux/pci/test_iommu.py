"""How the kernel command line and the kernel build set the IOMMU
(:mod:`aiaudit.linux.pci.iommu`), read as the kernel reads them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.linux.boot.loaders import Param
from aiaudit.linux.pci import iommu


def params(line: str) -> list[Param]:
    """``a=b c`` -> the Params of a command line (no quoting needed here)."""
    out = []
    for word in line.split():
        name, eq, value = word.partition("=")
        out.append(Param(name, value if eq else None))
    return out


@pytest.mark.parametrize(("value", "want"), [
    ("1", True), ("y", True), ("Yes", True), ("on", True), ("ON", True),
    ("0", False), ("n", False), ("no", False), ("off", False), ("of", False),
    ("o", None), ("", None), (None, None), ("maybe", None), ("true", None),
])
def test_kstrtobool(value: str | None, want: bool | None) -> None:
    assert iommu.kstrtobool(value) is want


@pytest.mark.parametrize(("line", "mode", "word"), [
    ("quiet", None, None),
    ("iommu=pt", iommu.PASSTHROUGH, "iommu=pt"),
    ("iommu=pt iommu=nopt", iommu.TRANSLATED, "iommu=nopt"),   # the last word wins
    ("iommu=nopt iommu.passthrough=1", iommu.PASSTHROUGH, "iommu.passthrough=1"),
    ("iommu.passthrough=maybe", None, None),                   # ignored by kstrtobool
    ("iommu=soft,pt", iommu.PASSTHROUGH, "iommu=soft,pt"),     # comma-separated options
    ("iommu=pt intel_iommu=on,sm_on", iommu.PASSTHROUGH, "iommu=pt"),
    ("iommu=pt amd_iommu=off", iommu.OFF, "amd_iommu=off"),    # off beats any domain type
    ("iommu=off,pt", iommu.OFF, "iommu=off,pt"),
    ("intel_iommu=sm_on", None, None),
])
def test_cmdline_mode(line: str, mode: str | None, word: str | None) -> None:
    got = iommu.cmdline_mode(params(line))
    if mode is None:
        assert got is None
    else:
        assert got is not None and (got[0], str(got[1])) == (mode, word)


def test_default_domain() -> None:
    text = "CONFIG_IOMMU=y\n# CONFIG_IOMMU_DEFAULT_PASSTHROUGH is not set\n" \
           "CONFIG_IOMMU_DEFAULT_DMA_LAZY=y\n"
    assert iommu.default_domain(text) == (False, 3, "CONFIG_IOMMU_DEFAULT_DMA_LAZY=y")
    assert iommu.default_domain("CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y\n") == (
        True, 1, "CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y")
    assert iommu.default_domain("CONFIG_IOMMU=y\n") is None


@given(st.text(max_size=200))
def test_any_text(text: str) -> None:
    iommu.kstrtobool(text)
    iommu.cmdline_mode(params(text))
    iommu.default_domain(text)
