"""Small formats of the readiness checks: apt.conf, apt lists, daemon.json, TOML,
apptainer.conf; every parser gives a value or a ParseError for any text.  (PCI/RDMA sysfs,
modprobe.d and nvidia-smi XML are tested beside their modules: tests/linux/pci/,
tests/linux/kmod/, tests/linux/gpu/.)"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.containers import apptainer, jsonconf, tomlconf
from aiaudit.linux.packages import aptconf, aptlists


def test_aptconf_scopes_and_last_wins() -> None:
    text = ('// c\nAPT::Periodic::Unattended-Upgrade "0";\n'
            'APT { Periodic { Unattended-Upgrade "1"; Update-Package-Lists "1"; }; };\n'
            '/* block\n comment */ Unattended-Upgrade::Allowed-Origins { "a"; "b"; };\n'
            '#clear APT::Periodic::Update-Package-Lists;\n')
    got = aptconf.parse(text)
    assert got["apt::periodic::unattended-upgrade"] == ("1", 3)
    assert "apt::periodic::update-package-lists" not in got
    with pytest.raises(ParseError):
        aptconf.parse("APT { x \"1\";\n")


def test_apt_list_names() -> None:
    n = "deb.debian.org_debian-security_dists_bookworm-security_main_binary-amd64_Packages"
    assert aptlists.suite_of(n) == ("bookworm-security", "amd64")
    assert aptlists.is_security_suite(n)
    old = "security.debian.org_dists_stretch_updates_main_binary-amd64_Packages"
    assert aptlists.suite_of(old)[0] == "stretch/updates" and aptlists.is_security_suite(old)
    assert not aptlists.is_security_suite(
        "archive.ubuntu.com_ubuntu_dists_jammy-updates_main_binary-amd64_Packages.lz4")
    assert aptlists.suite_of("x_dists_jammy_main_i18n_Translation-en") is None
    text = ("Package: a\nVersion: 1\nArchitecture: all\n\nPackage: b\nArchitecture: amd64\n"
            "Version: 2:1.0-1\n\n")
    assert aptlists.packages(text, {"b"}) == [("b", "2:1.0-1", "amd64")]


def test_daemon_json() -> None:
    assert jsonconf.parse_object("") == {}
    assert jsonconf.parse_object('{"live-restore": true}') == {"live-restore": True}
    with pytest.raises(ParseError, match="twice"):
        jsonconf.parse_object('{"a": 1, "a": 2}')
    with pytest.raises(ParseError) as exc:
        jsonconf.parse_object('{\n"a": }')
    assert exc.value.line == 2
    with pytest.raises(ParseError, match="not an object"):
        jsonconf.parse_object("[1]")
    with pytest.raises(ParseError):
        jsonconf.parse_object("[" * 5000 + "]" * 5000)


def test_toml_and_apptainer() -> None:
    assert tomlconf.parse('a = false\n[t]\nb = "@/sbin/ldconfig"\n') == {
        "a": False, "t": {"b": "@/sbin/ldconfig"}}
    with pytest.raises(ParseError) as exc:
        tomlconf.parse("a = \n")
    assert exc.value.line == 1
    assert apptainer.parse("# c\nallow setuid = yes\nallow setuid=no\n") == {
        "allow setuid": ("no", 3)}


@given(st.text(max_size=300))
def test_any_text(text: str) -> None:
    for fn in (aptconf.parse, jsonconf.parse_object, tomlconf.parse, apptainer.parse,
               aptlists.packages):
        try:
            fn(text)
        except ParseError:
            pass


_LIST_FIELD = st.sampled_from(["Package", "Version", "Architecture", "Depends", "Description"])


@st.composite
def _apt_list(draw: st.DrawFn) -> str:
    """A Packages list: stanzas with their fields in any order, ``Field:value`` with zero
    or more spaces, continuation lines that look like fields, and blank or whitespace-only
    separator lines."""
    out = []
    for i in range(draw(st.integers(0, 6))):
        fields = draw(st.lists(_LIST_FIELD, min_size=1, max_size=5, unique=True))
        if draw(st.booleans()) and "Package" not in fields:
            fields.append("Package")
        lines = []
        for f in fields:
            value = draw(st.sampled_from(["a", "b", "1.0-1", "2:3", "all", "amd64"]))
            lines.append(f"{f}:{' ' * draw(st.integers(0, 2))}{value}")
            if draw(st.integers(0, 4)) == 0:
                lines.append(f" Package: fake{i}")
        sep = draw(st.sampled_from(["\n", " \n", "\t\n", "\n\n"]))
        out.append("\n".join(lines) + "\n" + (sep if i else ""))
    return "".join(reversed(out))


def _packages_reference(text: str, wanted: set[str] | None) -> list[tuple[str, str, str]]:
    """Stanzas split at every blank or whitespace-only line, the three fields read line by
    line (a later line wins)."""
    out, stanza = [], []
    for line in [*text.split("\n"), ""]:
        if line.strip(" \t"):
            stanza.append(line)
            continue
        fields = dict(m.groups() for m in map(re.compile(
            r"(Package|Version|Architecture): *(\S+) *$").match, stanza) if m)
        stanza = []
        if "Package" in fields and "Version" in fields and (
                wanted is None or fields["Package"] in wanted):
            out.append((fields["Package"], fields["Version"], fields.get("Architecture", "")))
    return out


@given(_apt_list(), st.sampled_from([None, {"a"}, {"b"}, {"a", "b"}]))
def test_packages_match_a_stanza_split(text: str, wanted: set[str] | None) -> None:
    """The walk over ``Package:`` lines finds what splitting the list into stanzas finds."""
    assert aptlists.packages(text, wanted) == _packages_reference(text, wanted)


def test_an_integer_too_long_to_convert_is_a_parse_error_with_its_line() -> None:
    """int() refuses 4,300 digits with a bare ValueError: daemon.json and config.toml
    name the file and line instead (bench/fuzz_parsers.py --pathological found both)."""
    with pytest.raises(ParseError) as exc:
        jsonconf.parse_object('{\n"a": 1,\n"b": ' + "9" * 5000 + "}", "daemon.json")
    assert exc.value.line == 3 and "daemon.json:3: an integer of 5000" in str(exc.value)
    with pytest.raises(ParseError) as exc:
        tomlconf.parse("x = 1\nkey = " + "9" * 65536 + "\n", "config.toml")
    assert exc.value.line == 2 and "more than 1000 digits" in str(exc.value)
    assert jsonconf.parse_object('{"a": ' + "9" * 1000 + "}")["a"] == int("9" * 1000)
