"""What the kernel command line and the kernel build make of the IOMMU for host devices.

Sources: admin-guide/kernel-parameters.txt (``iommu=pt``, ``iommu.passthrough=1``,
``intel_iommu=off``, ``amd_iommu=off``); arch/x86/kernel/pci-dma.c ``iommu_setup``
(``iommu=`` options are comma-separated and matched by prefix); drivers/iommu/iommu.c
``iommu_set_def_domain_type`` (``iommu.passthrough=`` is a kstrtobool; between ``pt`` and
``nopt`` the last word on the line wins, each sets the default domain type again);
lib/kstrtox.c ``kstrtobool``; drivers/iommu/Kconfig (``CONFIG_IOMMU_DEFAULT_PASSTHROUGH``,
``CONFIG_IOMMU_DEFAULT_DMA_LAZY``, ``CONFIG_IOMMU_DEFAULT_DMA_STRICT``: the build's default
domain type).  Live, ``/sys/kernel/iommu_groups/<n>/type`` says ``identity`` for
passthrough, ``DMA`` / ``DMA-FQ`` for translated and ``unmanaged`` for VFIO
(Documentation/ABI/testing/sysfs-kernel-iommu_groups).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from aiaudit.core.startup import lazy_pattern

if TYPE_CHECKING:
    from aiaudit.linux.boot.loaders import Param

OFF, PASSTHROUGH, TRANSLATED = "off", "pt", "translated"
"""What the command line makes of the IOMMU: disabled, identity domains, DMA domains."""

_DEFAULT = lazy_pattern(r"CONFIG_IOMMU_DEFAULT_(PASSTHROUGH|DMA_LAZY|DMA_STRICT)=y")


def kstrtobool(value: str | None) -> bool | None:
    """The kernel's ``kstrtobool``: ``1``/``y``/``on`` true, ``0``/``n``/``off`` false (by
    the first one or two characters), anything else ``None`` (the parameter is ignored)."""
    v = (value or "").lower()
    if v[:1] in ("1", "y"):
        return True
    if v[:1] in ("0", "n"):
        return False
    if v[:2] == "on":
        return True
    if v[:2] == "of":
        return False
    return None


def _iommu_words(prm: Param) -> tuple[bool, str | None]:
    """(``off`` among the words, the last of ``pt``/``nopt``) of one ``iommu=``."""
    off, mode = False, None
    for tok in (prm.value or "").split(","):
        if tok.startswith("off"):
            off = True
        if tok.startswith("pt"):
            mode = PASSTHROUGH
        if tok.startswith("nopt"):
            mode = TRANSLATED
    return off, mode


def cmdline_mode(params: Iterable[Param]) -> tuple[str, Param] | None:
    """What the command line ``params`` make of the IOMMU for host devices:
    ``(OFF, p)`` (the IOMMU disabled), ``(PASSTHROUGH, p)`` or ``(TRANSLATED, p)``, ``p``
    the deciding word, or ``None`` when it says nothing."""
    mode: tuple[str, Param] | None = None
    off: Param | None = None
    for prm in params:
        key = prm.key
        if key == "iommu":
            is_off, word = _iommu_words(prm)
            off = prm if is_off else off
            mode = (word, prm) if word else mode
        elif key == "iommu.passthrough":
            pt = kstrtobool(prm.value)
            if pt is not None:
                mode = (PASSTHROUGH if pt else TRANSLATED, prm)
        elif key in ("intel_iommu", "amd_iommu") and "off" in (prm.value or "").split(","):
            off = prm
    return (OFF, off) if off is not None else mode


def default_domain(config_text: str) -> tuple[bool, int, str] | None:
    """The kernel build's default DMA domain from its ``.config`` text: (passthrough?,
    line number, the line), or ``None`` when it has no ``CONFIG_IOMMU_DEFAULT_*`` choice."""
    for n, line in enumerate(config_text.splitlines(), 1):
        m = _DEFAULT().fullmatch(line.strip())
        if m:
            return m.group(1) == "PASSTHROUGH", n, line.strip()
    return None
