"""Kernel command line, /etc/default/grub shell assignments, BLS entries, grub.cfg."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.boot import loaders as bc


def _pairs(text: str) -> list[tuple[str, str | None]]:
    return [(p.name, p.value) for p in bc.parse_cmdline(text)]


def test_cmdline_basic_and_quotes() -> None:
    assert _pairs('root=/dev/sda1 ro quiet a="b c" "d=e f"') == [
        ("root", "/dev/sda1"), ("ro", None), ("quiet", None), ("a", "b c"), ("d", "e f")]


def test_cmdline_stops_at_double_dash() -> None:
    assert _pairs("quiet -- --init-arg x=1") == [("quiet", None)]


def test_last_occurrence_wins_and_dashes_equal_underscores() -> None:
    params = bc.parse_cmdline("intel_idle.max_cstate=6 intel-idle.max_cstate=1")
    p = bc.last(params, "intel_idle.max_cstate")
    assert p is not None and p.value == "1"
    assert bc.last(params, "processor.max_cstate") is None


@given(st.text(max_size=200))
def test_cmdline_never_crashes(text: str) -> None:
    for p in bc.parse_cmdline(text):
        assert isinstance(p.name, str)


def test_shell_self_reference_and_quotes() -> None:
    text = ('GRUB_CMDLINE_LINUX_DEFAULT="quiet"\n'
            'export GRUB_CMDLINE_LINUX=\'console=ttyS0\'  # serial\n'
            'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT intel_idle.max_cstate=1"\n'
            'GRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT} idle=poll"\n'
            'if [ -x /bin/true ]; then :; fi\n')
    assigns, env, notes = bc.parse_shell_assignments(text)
    assert env["GRUB_CMDLINE_LINUX_DEFAULT"] == "quiet intel_idle.max_cstate=1 idle=poll"
    assert env["GRUB_CMDLINE_LINUX"] == "console=ttyS0"
    assert [a.line for a in assigns] == [1, 2, 3, 4]
    assert any("line 5" in n for n in notes)


def test_shell_multiline_value_counts_lines() -> None:
    assigns, env, _ = bc.parse_shell_assignments('A="x\ny"\nB=2\n')
    assert env == {"A": "x\ny", "B": "2"} and assigns[1].line == 3


@pytest.mark.parametrize("text", ['A="x', "A='x", "A\x00=1"])
def test_shell_rejects(text: str) -> None:
    with pytest.raises(ParseError):
        bc.parse_shell_assignments(text)


@settings(max_examples=200)
@given(st.text(alphabet=st.sampled_from(list("AB=$\"'\\ \n#{}x;")), max_size=60))
def test_shell_never_crashes(text: str) -> None:
    try:
        bc.parse_shell_assignments(text)
    except ParseError:
        pass


_GRUB_CASES = [
    'GRUB_CMDLINE_LINUX_DEFAULT="quiet splash"\n',
    'GRUB_CMDLINE_LINUX_DEFAULT="quiet"\nGRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT'
    ' intel_idle.max_cstate=1"\n',
    "GRUB_CMDLINE_LINUX_DEFAULT='a b'\"$GRUB_CMDLINE_LINUX_DEFAULT\"c\\ d\n",
    'X=1\nGRUB_CMDLINE_LINUX_DEFAULT="${X}x $X y"\n',
    'GRUB_CMDLINE_LINUX_DEFAULT="a \\"q\\" \\$b"\n',
    'export GRUB_CMDLINE_LINUX_DEFAULT=idle=poll; GRUB_TIMEOUT=5\n',
    'GRUB_CMDLINE_LINUX_DEFAULT="line1\nline2"\n',
]


@pytest.mark.oracle
@pytest.mark.parametrize("text", _GRUB_CASES)
def test_shell_matches_real_sh(text: str, tmp_path) -> None:
    """grub-mkconfig sources /etc/default/grub with sh: compare with the real shell."""
    sh = shutil.which("sh")
    if sh is None:
        if os.environ.get("CI"):
            pytest.fail("sh is required in CI")
        pytest.skip("no sh")
    f = tmp_path / "grub"
    f.write_text(text)
    out = subprocess.run([sh, "-c", f'. "{f}"; printf %s "$GRUB_CMDLINE_LINUX_DEFAULT"'],
                         capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"})
    _, env, _ = bc.parse_shell_assignments(text)
    assert env.get("GRUB_CMDLINE_LINUX_DEFAULT", "") == out.stdout


def test_bls_options_concatenated() -> None:
    e = bc.parse_bls("title Fedora\nversion 6.8\n# c\noptions root=UUID=1 ro\noptions quiet\n")
    assert e.options == "root=UUID=1 ro quiet" and e.options_line == 4 and e.version == "6.8"


def test_grub_cfg_first_linux_line() -> None:
    text = ("menuentry 'Debian' {\n  linux /vmlinuz-6.1 root=UUID=1 ro quiet\n}\n"
            "menuentry 'other' {\n  linux /vmlinuz-5 root=x\n}\n")
    linux, bls = bc.parse_grub_cfg(text)
    assert linux is not None and linux.args == "root=UUID=1 ro quiet" and linux.line == 2
    assert linux.entry == "Debian" and not bls
    assert bc.parse_grub_cfg("insmod blscfg\nblscfg\n") == (None, True)


@given(st.text(max_size=200))
def test_bls_and_grubcfg_never_crash(text: str) -> None:
    for fn in (bc.parse_bls, bc.parse_grub_cfg):
        try:
            fn(text)
        except ParseError:
            pass


_SEG = st.one_of(
    st.text(alphabet="abc=._-019", min_size=1, max_size=6),
    st.sampled_from(["$X", "${X}", "$GRUB_CMDLINE_LINUX_DEFAULT", "\\ ", "\\$X"]),
    st.lists(st.sampled_from(["a", " ", ".", "$X", "${X}", '\\"', "\\\\", "\\$X", "b="]),
             max_size=5).map(lambda parts: '"' + "".join(parts) + '"'),
    st.text(alphabet="ab =.$X\"", max_size=8).map(lambda t: f"'{t}'"),
)


@pytest.mark.oracle
@settings(max_examples=60, deadline=None)
@given(st.lists(_SEG, min_size=1, max_size=5).map("".join))
def test_shell_value_property_matches_sh(value: str) -> None:
    sh = shutil.which("sh")
    if sh is None:
        if os.environ.get("CI"):
            pytest.fail("sh is required in CI")
        pytest.skip("no sh")
    text = f'X="x y"\nGRUB_CMDLINE_LINUX_DEFAULT=quiet\nGRUB_CMDLINE_LINUX_DEFAULT={value}\n'
    out = subprocess.run([sh, "-c", text + 'printf %s "$GRUB_CMDLINE_LINUX_DEFAULT"'],
                         capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    if out.returncode != 0:
        return
    _, env, _ = bc.parse_shell_assignments(text)
    assert env["GRUB_CMDLINE_LINUX_DEFAULT"] == out.stdout


def test_a_long_line_of_assignments_is_linear_and_its_notes_capped() -> None:
    from aiaudit.linux.boot.loaders import MAX_NOTES, parse_shell_assignments
    from tests.helpers import CpuTime

    with CpuTime() as t:
        out, env, notes = parse_shell_assignments("a=b " * 100_000)
    assert t.seconds < 5 and len(out) == 100_000 and env["a"] == "b", t.seconds
    assert len(notes) == MAX_NOTES + 1 and notes[-1].startswith("... and 99")
