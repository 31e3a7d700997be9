"""``pci=realloc`` as drivers/pci/pci.c ``pci_setup`` reads it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.linux.boot.loaders import parse_cmdline
from aiaudit.linux.pci.realloc import realloc


@pytest.mark.parametrize(("line", "want"), [
    ("pci=realloc=off", "off"), ("pci=realloc=on", "on"), ("pci=realloc", "on"),
    ("pci=noaer,realloc=off", "off"), ("pci=realloc=off pci=realloc", "on"),
    ("pci=realloc pci=realloc=offline", "off"),  # strncmp(str, "off", 3)
    ("pci=realloc=maybe", None), ("pci=noaer", None), ("realloc=off", None), ("", None),
    ("pci=realloc=off,realloc=on", "on"), ("pci=reallocate", "on")])
def test_realloc(line: str, want: str | None) -> None:
    got = realloc(parse_cmdline(line))
    assert (got[0] if got else None) == want


@given(st.text(max_size=80))
def test_never_raises(text: str) -> None:
    realloc(parse_cmdline(text))
