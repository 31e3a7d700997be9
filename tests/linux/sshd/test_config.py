"""Unit tests of :mod:`aiaudit.linux.sshd.config` (no sshd needed; the oracle tests compare the
same behaviour with the real program).  Cases follow SEMANTICS §2.7 and §7."""

from __future__ import annotations

import fnmatch
from typing import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.sshd import config as sp


def fs(files: Mapping[str, str]) -> sp.SshdConfig:
    """Parse ``/etc/ssh/sshd_config`` from an in-memory file system."""

    def read(path: str) -> str:
        if path not in files:
            raise FileNotFoundError(path)
        return files[path]

    def glob(pattern: str) -> list[str]:
        return sorted((p for p in files if sp.glob_matches(pattern, p)), key=str.encode)

    return sp.load(read, glob)


def val(text: str, key: str, conn: sp.Connection | None = None) -> str | None:
    return sp.parse_text(text).value(key, conn).value


# ------------------------------------------------------------------ lexing
@pytest.mark.parametrize("line, tok, rest", [
    ("Port 22", "Port", "22"),
    ("Port=22", "Port", "22"),
    ("Port = 22", "Port", "22"),
    ("Port  =22", "Port", "22"),
    ('"Port" 22', "Port", "22"),
    ("Port==22", "Port", "=22"),
])
def test_strdelim(line: str, tok: str, rest: str) -> None:
    assert sp.strdelim(line) == (tok, rest)


@pytest.mark.parametrize("text, args", [
    ("a b", ["a", "b"]),
    ('"a b" c', ["a b", "c"]),
    ("a'b c'd", ["ab cd"]),
    ("a\\ b", ["a b"]),
    ("no # comment", ["no"]),
    ("no#x", ["no#x"]),
    ("\t x\t", ["x"]),
])
def test_argv_split(text: str, args: list[str]) -> None:
    assert sp.argv_split(text) == args


def test_open_quote_is_invalid() -> None:
    with pytest.raises(ParseError, match="invalid quotes"):
        sp.parse_text('Banner "/etc/issue\n')


@pytest.mark.parametrize("text, secs", [("90", 90), ("1m30s", 90), ("2H", 7200), ("1w", 604800),
                                        ("0", 0), ("1x", -1), ("-5", -1), ("", -1), ("m", -1)])
def test_convtime(text: str, secs: int) -> None:
    assert sp.convtime(text) == secs


# ------------------------------------------------------------------ first value wins
def test_first_value_wins_and_case() -> None:
    text = "passwordauthentication NO\nPasswordAuthentication yes\n"
    s = sp.parse_text(text).value("PasswordAuthentication")
    assert (s.value, s.directive.line) == ("no", 1)  # type: ignore[union-attr]


def test_equals_syntax() -> None:
    assert val("PasswordAuthentication=no\n", "passwordauthentication") == "no"


def test_alias_first_spelling_wins() -> None:
    assert val("ChallengeResponseAuthentication no\nKbdInteractiveAuthentication yes\n",
               "KbdInteractiveAuthentication") == "no"
    assert val("KbdInteractiveAuthentication yes\nChallengeResponseAuthentication no\n",
               "ChallengeResponseAuthentication") == "yes"


def test_accumulate_vs_first_line() -> None:
    cfg = sp.parse_text("AcceptEnv A B\nAcceptEnv C\nAuthorizedKeysFile x y\n"
                        "AuthorizedKeysFile z\nPort 22\nPort 2222\n")
    assert cfg.value("AcceptEnv").values == ("A", "B", "C")
    assert cfg.value("AuthorizedKeysFile").value == "x y"
    assert cfg.value("Port").values == ("22", "2222")


def test_defaults() -> None:
    cfg = sp.parse_text("# nothing\n")
    s = cfg.value("PermitRootLogin")
    assert s.is_default and s.value == "prohibit-password" and s.source == "compiled-in default"
    assert cfg.value("Port").values == ("22",)
    assert cfg.value("UsePAM").value == "no"
    assert sp.effective_value(cfg, "KbdInteractiveAuthentication") == "yes"


def test_without_password_is_prohibit_password() -> None:
    assert val("PermitRootLogin without-password\n", "PermitRootLogin") == "prohibit-password"


def test_duplicate_subsystem_is_refused() -> None:
    # OpenSSH 9.2 (observed); newer releases ignore the duplicate
    with pytest.raises(ParseError, match="already defined"):
        sp.parse_text("Subsystem sftp /a\nSubsystem sftp /b\n")


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize("text, where", [
    ("NoSuchOption yes\n", ":1:"),
    ("Port 22\nMatch User alice\n  Port 2222\n", ":3:"),
    ("PasswordAuthentication maybe\n", ":1:"),
    ("PasswordAuthentication no#x\n", ":1:"),
    ("PasswordAuthentication no extra\n", ":1:"),
    ("MaxAuthTries\n", ":1:"),
    ("Match User nobody\n  PasswordAuthentication maybe\n", ":2:"),
    ("Match\n", ":1:"),
    ("Match all User root\n", ":1:"),
    ("Match Address 10.0.0.1/8\n", ":1:"),
    ("Match Foo bar\n", ":1:"),
    ("AuthenticationMethods publickey\nAuthenticationMethods any\n", ":2:"),
    ("PasswordAuthentication no\nPubkeyAuthentication no\nAuthenticationMethods publickey\n",
     ":3:"),
    ("AuthorizedKeysCommand /bin/x\n", ":1:"),
    ("ForceCommand=\n", ":1:"),
])
def test_refused(text: str, where: str) -> None:
    with pytest.raises(ParseError) as exc:
        sp.parse_text(text)
    assert where in str(exc.value)


def test_match_all_allows_global_keywords() -> None:
    cfg = sp.parse_text("Port 22\nMatch all\nPort 2222\nUsePAM yes\n")
    assert cfg.value("Port").values == ("22", "2222")
    assert cfg.value("UsePAM").value == "yes"


# ------------------------------------------------------------------ Match
MATCHY = """\
PasswordAuthentication no
AllowUsers root
Match User alice,bob
  PasswordAuthentication yes
  AllowUsers alice
Match Address 10.0.0.0/8,!10.9.9.9 User *
  X11Forwarding yes
  AllowUsers extra
Match Group gpu
  MaxAuthTries 2
Match User !root
  PermitRootLogin yes
"""


def test_match_overrides_earlier_global() -> None:
    cfg = sp.parse_text(MATCHY)
    assert cfg.value("PasswordAuthentication").value == "no"
    alice = sp.Connection(user="alice")
    s = cfg.value("PasswordAuthentication", alice)
    assert s.value == "yes" and s.directive.block.text == "User alice,bob"  # type: ignore


def test_match_lists_replace_and_add_up() -> None:
    cfg = sp.parse_text(MATCHY)
    assert cfg.value("AllowUsers").values == ("root",)
    both = sp.Connection(user="alice", addr="10.1.2.3")
    assert cfg.value("AllowUsers", both).values == ("alice", "extra")


@pytest.mark.parametrize("conn, x11", [
    (sp.Connection(user="carol", addr="10.1.2.3"), "yes"),
    (sp.Connection(user="carol", addr="10.9.9.9"), "no"),
    (sp.Connection(user="carol", addr="192.168.1.1"), "no"),
    (sp.Connection(addr="10.1.2.3"), "no"),  # User * needs a user (ANDed)
])
def test_match_address_cidr_and_negation(conn: sp.Connection, x11: str) -> None:
    assert sp.parse_text(MATCHY).value("X11Forwarding", conn).value == x11


def test_match_group_and_negation_alone() -> None:
    cfg = sp.parse_text(MATCHY)
    assert cfg.value("MaxAuthTries", sp.Connection(user="u", groups=("u", "gpu"))).value == "2"
    assert cfg.value("MaxAuthTries", sp.Connection(user="u", groups=None)).value == "6"
    # `Match User !root` alone never matches (match_pattern_list needs a positive match)
    assert cfg.value("PermitRootLogin", sp.Connection(user="carol")).value == \
        "prohibit-password"


def test_match_host_is_case_insensitive_and_localport() -> None:
    cfg = sp.parse_text("Match Host *.EXAMPLE.com\n  Banner /b\nMatch LocalPort 2222\n"
                        "  Banner /c\n")
    assert cfg.value("Banner", sp.Connection(host="A.example.COM")).value == "/b"
    assert cfg.value("Banner", sp.Connection(lport=2222)).value == "/c"
    assert cfg.value("Banner").value == "none"


def test_blocks_are_listed() -> None:
    cfg = sp.parse_text(MATCHY)
    assert [b.label for b in cfg.blocks][:1] == ["Match User alice,bob (etc/ssh/sshd_config:3)"]


# ------------------------------------------------------------------ Include
def test_dropin_beats_main_and_byte_order() -> None:
    cfg = fs({
        "/etc/ssh/sshd_config": "Include /etc/ssh/sshd_config.d/*.conf\n"
                                "PasswordAuthentication yes\n",
        "/etc/ssh/sshd_config.d/50-cloud-init.conf": "PasswordAuthentication yes\n",
        "/etc/ssh/sshd_config.d/B.conf": "X11Forwarding yes\n",
        "/etc/ssh/sshd_config.d/a.conf": "X11Forwarding no\n",
        "/etc/ssh/sshd_config.d/00-hard.conf": "PasswordAuthentication no\n",
        "/etc/ssh/sshd_config.d/.hidden.conf": "MaxAuthTries 1\n",
    })
    pa = cfg.value("PasswordAuthentication")
    assert (pa.value, pa.directive.file) == ("no", "/etc/ssh/sshd_config.d/00-hard.conf")  # type: ignore
    assert cfg.value("X11Forwarding").value == "yes"  # "B" < "a" in byte order
    assert cfg.value("MaxAuthTries").value == "6"


def test_include_after_the_line_loses() -> None:
    cfg = fs({"/etc/ssh/sshd_config": "PasswordAuthentication yes\n"
                                      "Include sshd_config.d/*.conf\n",
              "/etc/ssh/sshd_config.d/00.conf": "PasswordAuthentication no\n"})
    assert cfg.value("PasswordAuthentication").value == "yes"
    assert cfg.includes[0].files == ("/etc/ssh/sshd_config.d/00.conf",)


def test_relative_include_is_under_etc_ssh_and_no_match_is_fine() -> None:
    cfg = fs({"/etc/ssh/sshd_config": "Include extra/x.conf nothing-*.conf\n",
              "/etc/ssh/extra/x.conf": "MaxAuthTries 3\n"})
    assert cfg.value("MaxAuthTries").value == "3"


def test_match_in_included_file_ends_at_its_end() -> None:
    cfg = fs({"/etc/ssh/sshd_config": "Include /etc/ssh/inc.conf\nX11Forwarding yes\n",
              "/etc/ssh/inc.conf": "Match User alice\n  X11Forwarding no\n"})
    assert cfg.value("X11Forwarding").value == "yes"
    assert cfg.value("X11Forwarding", sp.Connection(user="alice")).value == "no"


def test_include_inside_match_is_conditional() -> None:
    cfg = fs({"/etc/ssh/sshd_config": "Match User alice\n  Include /etc/ssh/alice.conf\n",
              "/etc/ssh/alice.conf": "PasswordAuthentication no\n"})
    assert cfg.value("PasswordAuthentication").value == "yes"
    assert cfg.value("PasswordAuthentication", sp.Connection(user="alice")).value == "no"


def test_global_keyword_in_file_included_from_match_is_refused() -> None:
    with pytest.raises(ParseError, match="not allowed within a Match"):
        fs({"/etc/ssh/sshd_config": "Match User alice\n  Include /etc/ssh/a.conf\n",
            "/etc/ssh/a.conf": "Port 2222\n"})


def test_file_included_twice_is_read_twice() -> None:
    cfg = fs({"/etc/ssh/sshd_config": "Include /etc/ssh/a.conf\nInclude /etc/ssh/a.conf\n",
              "/etc/ssh/a.conf": "AcceptEnv X\n"})
    assert cfg.value("AcceptEnv").values == ("X", "X")


def test_include_loop_is_an_error_not_a_hang() -> None:
    with pytest.raises(ParseError, match="Too many recursive"):
        fs({"/etc/ssh/sshd_config": "Include /etc/ssh/sshd_config\n"})


def test_unreadable_include_is_an_error() -> None:
    def read(path: str) -> str:
        if path == "/etc/ssh/sshd_config":
            return "Include /etc/ssh/x.conf\n"
        raise PermissionError("denied")

    with pytest.raises(ParseError, match="cannot read"):
        sp.load(read, lambda p: [p])


def test_glob_matches() -> None:
    assert sp.glob_matches("/etc/ssh/sshd_config.d/*.conf", "/etc/ssh/sshd_config.d/00-a.conf")
    assert not sp.glob_matches("/etc/ssh/sshd_config.d/*.conf", "/etc/ssh/sshd_config.d/.a.conf")
    assert not sp.glob_matches("/etc/ssh/*.conf", "/etc/ssh/sub/a.conf")
    assert fnmatch.fnmatchcase("a", "a")


# ------------------------------------------------------------------ keyword table
def test_table_is_consistent() -> None:
    for kw in sp.KEYWORD_LIST:
        assert kw.opt in sp.OPTIONS or kw.cls == sp.SPECIAL, kw.name
        if kw.vtype == "choice" and kw.default is not None:
            assert kw.default in {c for _s, c in kw.choices}, kw.name
    assert len(sp.KEYWORDS) == len(sp.KEYWORD_LIST)


# ------------------------------------------------------------------ property
LINES = st.sampled_from([
    "Port 22", "Match User a", "Match all", "Include x", "PasswordAuthentication no",
    "AcceptEnv A", "# c", "", "Match Address 10.0.0.0/8", 'Banner "x', "X11Forwarding=yes",
    "AuthenticationMethods any", "Subsystem s /x",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(LINES, st.text(max_size=40)), max_size=12))
def test_any_text_gives_a_config_or_parse_error(lines: list[str]) -> None:
    text = "\n".join(lines)
    try:
        cfg = sp.parse_text(text)
    except ParseError:
        return
    try:  # the connection pass can refuse too, as `sshd -T -C` does (exit 255)
        eff = cfg.effective(sp.Connection(user="a", addr="10.0.0.1"))
    except ParseError:
        return
    for _name, s in eff.items():
        assert s.value is None or isinstance(s.value, str)
