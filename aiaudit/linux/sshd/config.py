"""The effective ``sshd_config``, computed as OpenSSH's sshd computes it.

Sources: openssh-portable ``servconf.c`` (``process_server_config_line_depth``,
``parse_server_config_depth``, ``match_cfg_line``, ``copy_set_server_options``,
``fill_default_server_options``), ``misc.c`` (``strdelim``, ``argv_split``, ``convtime``,
``a2port``), ``match.c`` (``match_pattern_list``), ``addrmatch.c`` (``addr_match_list``),
sshd_config(5); SEMANTICS §2 and §7 (behaviour observed with ``sshd -T`` of OpenSSH 9.2p1,
which wins where it disagrees with the man page).

How sshd decides, in short:

* Keywords are case-insensitive; ``Keyword=value`` works; arguments may be quoted; a token
  that *starts* with ``#`` ends the line.
* For most keywords the **first** obtained value wins; a few accumulate over lines
  (``Port``, ``AllowUsers``, ``AcceptEnv``...); list keywords such as
  ``AuthorizedKeysFile`` take the whole first line.
* ``Include`` expands globs (byte order), relative paths are under ``/etc/ssh``; the file is
  parsed in place, so an early ``Include`` of ``sshd_config.d/*.conf`` beats the main file.
* Two passes: at start-up lines inside ``Match`` blocks are inactive (except ``Match all``);
  for a connection sshd re-reads everything, applies only the lines of matching ``Match``
  blocks (first wins among them) and copies each value so set **over** the global one.
* Any bad line (unknown keyword, a global-only keyword in a ``Match`` block, a bad value,
  extra arguments) makes sshd refuse the whole configuration: :class:`ParseError`.

The parser is pure: files are read through the ``read`` and ``glob`` callbacks (the check
passes the Host's, which re-root paths under the scanned root).
"""

from __future__ import annotations

import fnmatch
import re
from typing import Callable, Iterator, Mapping, Sequence

from aiaudit.core.errors import ParseError
from aiaudit.core.startup.records import record
from aiaudit.linux.sshd.keywords import (  # noqa: F401 - the keyword table, re-exported
    ACCUMULATE,
    ADDRESSFAMILY,
    COMPRESSION,
    FACILITY,
    FINGERPRINTHASH,
    FLAG,
    FORWARDING,
    GATEWAYPORTS,
    IGNORERHOSTS,
    KEYWORD_LIST,
    KEYWORDS,
    LOGLEVEL,
    OPTIONS,
    PENALTIES_DEFAULT,
    PERMITROOTLOGIN,
    PERMITTUNNEL,
    SCALAR,
    SPECIAL,
    Keyword,
)
from aiaudit.linux.sshd.presence import MAIN_CONFIG

SSHDIR = "/etc/ssh"
"""Relative ``Include`` paths are prefixed with this (``SSHDIR``), not the including
file's folder."""
MAX_INCLUDE_DEPTH = 16
"""``SERVCONF_MAX_DEPTH``: deeper nesting (or an include loop) is fatal."""
_INT_MAX = 2**31 - 1
_WHITESPACE = " \t\r\n"

DEFAULT_HOSTKEYS = ("/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key",
                    "/etc/ssh/ssh_host_ed25519_key")
ACCUMULATE_DEFAULTS: Mapping[str, tuple[str, ...]] = {
    "port": ("22",),
    "hostkey": DEFAULT_HOSTKEYS,
}
"""Compiled-in entries of accumulating options that are filled in when no line sets them."""

AUTH_METHODS = {"publickey": "pubkeyauthentication", "password": "passwordauthentication",
                "keyboard-interactive": "kbdinteractiveauthentication",
                "hostbased": "hostbasedauthentication",
                "gssapi-with-mic": "gssapiauthentication"}
"""``AuthenticationMethods`` names and the option that enables each (``auth2.c``)."""

DERELATIVISED = frozenset({"pidfile", "modulifile", "xauthlocation", "banner",
                           "trustedusercakeys", "revokedkeys", "hostkey", "hostcertificate",
                           "hostkeyagent", "securitykeyprovider"})
"""Options whose relative paths sshd makes absolute (``servconf.c derelativise_path``:
``none`` in any case is ``none``, otherwise the daemon's working directory is prefixed;
``HostKeyAgent SSH_AUTH_SOCK`` and ``SecurityKeyProvider internal`` are kept)."""
DAEMON_CWD = "/"
"""sshd's working directory as a service (systemd starts it in ``/``): ``Banner etc/issue``
reads ``/etc/issue`` and ``sshd -T`` prints ``//etc/issue``."""
PRINTED: Mapping[str, Mapping[str, str]] = {
    "permitrootlogin": {"prohibit-password": "without-password"},
    "loglevel": {"QUIET": "SILENT"},
}
"""Canonical values that ``sshd -T`` (9.2) prints under another name (``dump_cfg_*``)."""
LIST_OPTIONS = frozenset({"allowusers", "denyusers", "allowgroups", "denygroups", "acceptenv",
                          "port", "listenaddress", "hostkey", "hostcertificate", "subsystem",
                          "setenv", "authorizedkeysfile", "authenticationmethods",
                          "permitopen", "permitlisten", "channeltimeout", "logverbose",
                          "ipqos", "rekeylimit", "pubkeyauthoptions"})
"""Options whose value is a list: their entries are kept apart (an entry may contain a
space, ``AllowUsers "a b"``), as ``sshd -T`` prints them one per line or word."""

SERVICES = {"ssh": 22}
"""Service names ``a2port`` resolves with ``getservbyname`` (the scanned root's
/etc/services is not consulted; other names are an error, not a guess)."""


# --------------------------------------------------------------------- lexing
def strdelim(s: str | None) -> tuple[str | None, str | None]:
    """``misc.c strdelim``: the next token of ``s`` and the rest.

    Splits on whitespace or a single ``=``; a token starting with ``"`` runs to the next
    ``"``.  Returns ``(None, None)`` when a quote is not closed, ``(s, None)`` at the end.
    """
    if s is None:
        return None, None
    m = re.search(r'[ \t\r\n"=]', s)
    if m is None:
        return s, None
    i = m.start()
    if s[i] == '"':
        t = s[:i] + s[i + 1:]
        j = t.find('"', i)
        if j < 0:
            return None, None
        rest = t[j + 1:]
        return t[:j], rest.lstrip(_WHITESPACE)
    tok = s[:i]
    wspace = s[i] == "="
    rest = s[i + 1:].lstrip(_WHITESPACE)
    if rest.startswith("=") and not wspace:
        rest = rest[1:].lstrip(_WHITESPACE)
    return tok, rest


def argv_split(s: str) -> list[str]:
    """``misc.c argv_split`` with ``terminate_on_comment``: whitespace-separated arguments,
    ``'``/``"`` quoting anywhere in a token, ``\\`` escapes of quotes, backslash and space;
    a token starting with ``#`` ends the line.  Raises :class:`ValueError` on an open quote."""
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        if s[i] in " \t":
            i += 1
            continue
        if s[i] == "#":
            break
        quote = ""
        arg: list[str] = []
        while i < n:
            c = s[i]
            if c == "\\" and i + 1 < n and (s[i + 1] in "'\"\\" or (not quote and
                                                                    s[i + 1] == " ")):
                i += 1
                arg.append(s[i])
            elif not quote and c in " \t":
                break
            elif not quote and c in "\"'":
                quote = c
            elif quote and c == quote:
                quote = ""
            else:
                arg.append(c)
            i += 1
        if i >= n and quote:
            raise ValueError("invalid quotes")
        out.append("".join(arg))
    return out


# --------------------------------------------------------------------- values
def convtime(s: str) -> int:
    """``misc.c convtime``: ``90``, ``1m30s``, ``2h`` → seconds; -1 when invalid."""
    if not s:
        return -1
    total = 0
    mult = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    for m in re.finditer(r"([+-]?\d+)([a-zA-Z]?)|(.)", s):
        if m.group(3) is not None:
            return -1
        digits = m.group(1).lstrip("+-").lstrip("0") or "0"
        if len(digits) > 20:
            return -1  # convtime: overflow
        secs = -int(digits) if m.group(1).startswith("-") else int(digits)
        unit = m.group(2).lower()
        if secs < 0 or unit not in mult:
            return -1
        if secs > _INT_MAX // mult[unit]:
            return -1
        secs *= mult[unit]
        if total > _INT_MAX - secs:
            return -1
        total += secs
    return total


def strtonum(s: str, lo: int, hi: int) -> int | None:
    """OpenBSD ``strtonum`` (base 10, optional sign and leading blanks): int or ``None``."""
    m = re.fullmatch(r"[ \t\n\v\f\r]*([+-]?\d+)", s)
    if m is None:
        return None
    digits = m.group(1).lstrip("+-").lstrip("0") or "0"
    if len(digits) > 20:
        return None  # strtonum: "too large" / "too small" (ERANGE)
    v = -int(digits) if m.group(1).startswith("-") else int(digits)
    return v if lo <= v <= hi else None


def _scanf_int(s: str) -> tuple[int, str] | None:
    """glibc ``sscanf("%d")``: leading blanks, a sign and digits (``strtol``, saturating at
    the 64-bit limits, then truncated to a 32-bit ``int`` as the store does), and the rest
    of the text; ``None`` when no digits start it."""
    m = re.match(r"[ \t\n\v\f\r]*([+-]?)(\d+)", s)
    if m is None:
        return None
    digits = m.group(2).lstrip("0") or "0"
    neg = m.group(1) == "-"
    if len(digits) > 19 or int(digits) > (1 << 63) - (0 if neg else 1):
        v = -(1 << 63) if neg else (1 << 63) - 1  # strtol: ERANGE, LONG_MIN / LONG_MAX
    else:
        v = -int(digits) if neg else int(digits)
    v &= 0xFFFFFFFF
    return (v - (1 << 32) if v >= 1 << 31 else v), s[m.end():]


def max_startups(arg: str) -> str | None:
    """``MaxStartups`` as sshd reads it (servconf.c sMaxStartups): ``sscanf(arg,
    "%d:%d:%d")`` must give 3 numbers (begin <= full, 1 <= rate <= 100) or 1 (then full =
    begin, rate 30); begin and full above 0.  The value ``sshd -T`` prints
    (``begin:rate:full``), or ``None`` where sshd stops with "Invalid MaxStartups spec"."""
    nums: list[int] = []
    rest = arg
    while len(nums) < 3:
        got = _scanf_int(rest)
        if got is None:
            break
        nums.append(got[0])
        rest = got[1]
        if len(nums) < 3:
            if not rest.startswith(":"):
                break
            rest = rest[1:]
    if len(nums) == 3:
        begin, rate, full = nums
        if begin > full or not 1 <= rate <= 100:
            return None
    elif len(nums) == 1:
        begin, rate, full = nums[0], 30, nums[0]
    else:
        return None
    if full <= 0 or begin <= 0:
        return None
    return f"{begin}:{rate}:{full}"


def a2port(s: str) -> int:
    """``misc.c a2port``: a number 0-65535 or a known service name; -1 when invalid."""
    v = strtonum(s, 0, 65535)
    if v is not None:
        return v
    return SERVICES.get(s, -1)


def choice_value(kw: Keyword, arg: str) -> str | None:
    """The canonical value for ``arg`` (matched case-insensitively, as ``strcasecmp``), or
    ``None`` when sshd would refuse it."""
    low = arg.lower()
    for spelling, canon in kw.choices:
        if spelling.lower() == low:
            return canon
    return None


def include_pattern(arg: str) -> str:
    """The glob sshd expands for an ``Include`` argument (relative = under ``/etc/ssh``)."""
    return arg if arg[:1] in ("/", "~") else f"{SSHDIR}/{arg}"


def glob_matches(pattern: str, path: str) -> bool:
    """True if ``glob(3)`` (no flags) would return ``path`` for ``pattern``, as far as names
    go: component by component, a wildcard does not match a leading dot."""
    pp, cp = pattern.split("/"), path.split("/")
    if len(pp) != len(cp):
        return False
    for pat, name in zip(pp, cp, strict=True):
        if name.startswith(".") and not pat.startswith(".") and any(c in pat for c in "*?["):
            return False
        if not fnmatch.fnmatchcase(name, pat):
            return False
    return True


# --------------------------------------------------------------------- model
@record
class MatchBlock:
    """One ``Match`` line: the block runs to the next ``Match`` or the end of its file."""

    file: str
    line: int
    criteria: tuple[tuple[str, str], ...]
    """(criterion in lower case, pattern list), e.g. ``(("user", "alice,bob"),)``."""
    text: str
    """The line as written (without the keyword), e.g. ``User alice``."""

    @property
    def is_all(self) -> bool:
        """True for ``Match all`` (active for every connection, and at start-up)."""
        return self.criteria == (("all", ""),)

    @property
    def can_match(self) -> bool:
        """False when a criterion's list has only negated patterns (``User !root``): sshd's
        ``match_pattern_list`` / ``addr_match_list`` never return a positive match for it,
        so the block applies to no connection."""
        for attr, arg in self.criteria:
            if attr in ("user", "group", "host", "address", "localaddress", "rdomain") and \
                    all(p.startswith("!") for p in arg.split(",")):
                return False
        return True

    @property
    def label(self) -> str:
        """``Match User alice (etc/ssh/sshd_config:42)``."""
        return f"Match {self.text} ({self.file.lstrip('/')}:{self.line})"


@record
class Directive:
    """One configuration line (neither ``Match`` nor ``Include``)."""

    keyword: Keyword
    args: tuple[str, ...]
    value: str
    """Normalised value: canonical choice, seconds, number, or the arguments joined."""
    file: str
    line: int
    raw: str
    block: MatchBlock | None
    """The ``Match`` block the line is in (``None``: global)."""
    include_chain: tuple[tuple[str, int], ...] = ()
    """The ``Include`` lines (file, line) that led to this file, outermost first."""


@record
class Setting:
    """The effective value of one option and where it came from."""

    option: str
    """Canonical keyword name (``KbdInteractiveAuthentication`` for the alias)."""
    value: str | None
    """Normalised value; ``None`` if unset and without a compiled-in default."""
    directive: Directive | None = None
    """The deciding line; ``None`` = compiled-in default."""
    entries: tuple[Directive, ...] = ()
    """For accumulating options: every line that added to the list."""
    values: tuple[str, ...] = ()
    """For accumulating options the resulting list; for others the deciding line's
    arguments (a list keyword such as ``SetEnv`` keeps its whole first line)."""
    default_note: str = ""
    """For a compiled-in default that depends on the OpenSSH release: which release's."""

    @property
    def is_default(self) -> bool:
        """True when no line set the option (the compiled-in default applies)."""
        return self.directive is None and not self.entries

    @property
    def source(self) -> str:
        """``etc/ssh/sshd_config:12`` or ``compiled-in default``."""
        d = self.directive or (self.entries[0] if self.entries else None)
        if d is None:
            return "compiled-in default"
        return f"{d.file.lstrip('/')}:{d.line}"

    @property
    def is_list(self) -> bool:
        """True for list options (:data:`LIST_OPTIONS`)."""
        return self.option.lower() in LIST_OPTIONS

    def printed(self, ports: Sequence[str] = ("22",)) -> list[str]:
        """The value as ``sshd -T`` prints it, one entry per printed line (or word, for
        lists printed on one line): ``without-password``, ``SILENT``, ``//etc/issue``,
        ``[::1]:22``; ``ports`` (the effective ``Port`` list) completes ListenAddress
        lines without a port."""
        opt = self.option.lower()
        if self.value is None:
            return []
        if opt == "listenaddress":
            out: list[str] = []
            for d in self.entries:
                la = parse_listen(d.args)
                if isinstance(la, ListenAddress):
                    out += listen_printed(la, ports)
            return out
        if opt in DERELATIVISED:
            lines = self.entries or ((self.directive,) if self.directive else ())
            if lines:
                return [derelativise(opt, d.args[0]) for d in lines]
            return list(self.values) or [self.value]
        if self.is_list:
            return self.items
        return [PRINTED.get(opt, {}).get(self.value, self.value)]

    @property
    def items(self) -> list[str]:
        """The entries of a list option (a compiled-in default split into words)."""
        if self.value is None:
            return []
        return list(self.values) or self.value.split()

    def as_json(self) -> dict[str, object]:
        """JSON form: ``value`` (a list for list options), ``sshd_T`` (what ``sshd -T``
        prints) and ``source``."""
        value: object = self.items if self.is_list and self.value is not None else self.value
        out: dict[str, object] = {"value": value, "sshd_T": self.printed(),
                                  "source": self.source}
        if self.default_note:
            out["default"] = self.default_note
        return out


@record
class Connection:
    """Connection parameters for ``Match`` (like ``sshd -T -C user=..,host=..,addr=..``).

    A missing field makes its criterion not match (as ``sshd -T`` in test mode).
    ``groups``: the user's group names (primary and supplementary), ``None`` if unknown.
    """

    user: str | None = None
    groups: tuple[str, ...] | None = None
    host: str | None = None
    addr: str | None = None
    laddr: str | None = None
    lport: int | None = None
    rdomain: str | None = None


@record
class IncludeLine:
    """One argument of an ``Include`` line and the files it expanded to."""

    file: str
    line: int
    patterns: tuple[str, ...]
    """The argument as written (one per record)."""
    files: tuple[str, ...]
    block: MatchBlock | None


# --------------------------------------------------------------------- file reading
Reader = Callable[[str], str]
"""``read(host_path) -> text``; raises ``OSError``-like errors for unreadable files."""
Globber = Callable[[str], Sequence[str]]
"""``glob(host_pattern) -> host paths`` sorted bytewise (C-locale ``glob(3)``)."""


@record
class _Line:
    lineno: int
    raw: str
    keyword: Keyword | None
    rest: str
    args: tuple[str, ...]


def _lex_file(path: str, text: str, release: tuple[int, int] | None = None) -> list[_Line]:
    out: list[_Line] = []
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip(_WHITESPACE + "\f")
        kwtok, rest = strdelim(line)
        if kwtok == "":
            kwtok, rest = strdelim(rest)
        if not kwtok or kwtok.startswith("#"):
            continue
        if rest is None or rest == "":
            raise ParseError(f'no argument after keyword "{kwtok}"', line=lineno, source=path)
        kw = KEYWORDS.get(kwtok.lower())
        if kw is None or (release is not None and kw.since > release):
            raise ParseError(f"Bad configuration option: {kwtok}", line=lineno, source=path)
        try:
            args = tuple(argv_split(rest))
        except ValueError:
            raise ParseError("invalid quotes", line=lineno, source=path) from None
        out.append(_Line(lineno, raw.strip(), kw, rest, args))
    return out


# --------------------------------------------------------------------- value checks
def _err(msg: str, path: str, line: int) -> ParseError:
    return ParseError(msg, line=line, source=path)


def _validate(kw: Keyword, ln: _Line, path: str) -> tuple[str, tuple[str, ...]]:
    """(normalised value, arguments used) for a line, or ParseError as sshd would refuse."""
    args, n = ln.args, ln.lineno
    t = kw.vtype
    if t in ("rest", "cmd"):
        value = ln.rest.lstrip(_WHITESPACE)
        if t == "cmd" and not value.startswith("/") and value.lower() != "none":
            raise _err(f"{kw.name.lower()} must be an absolute path", path, n)
        return value, args
    if t == "ignore":
        return " ".join(args), args
    if not args or args[0] == "":
        raise _err("missing argument.", path, n)
    single = _SINGLE.get(t)
    if single is not None:
        if len(args) > 1:
            raise _err(f"keyword {kw.name} extra arguments at end of line", path, n)
        return single(kw, args[0], path, n), args
    return _list_value(kw, args, path, n), args


def _choice(kw: Keyword, a: str, path: str, n: int) -> str:
    v = choice_value(kw, a)
    if v is None:
        raise _err(f'unsupported option "{a}".', path, n)
    return v


def _int(kw: Keyword, a: str, path: str, n: int) -> str:
    iv = strtonum(a, 0, _INT_MAX)
    if iv is None:
        raise _err(f"{kw.name.lower()} integer value invalid.", path, n)
    return str(iv)


def _time(_kw: Keyword, a: str, path: str, n: int) -> str:
    tv = convtime(a)
    if tv < 0:
        raise _err("invalid time value.", path, n)
    return str(tv)


def _maxstartups(_kw: Keyword, a: str, path: str, n: int) -> str:
    ms = max_startups(a)
    if ms is None:
        raise _err("Invalid MaxStartups spec.", path, n)
    return ms


def _port(_kw: Keyword, a: str, path: str, n: int) -> str:
    p = a2port(a)
    if p <= 0:
        raise _err("Badly formatted port number.", path, n)
    return str(p)


def _userenv(_kw: Keyword, a: str, _path: str, _n: int) -> str:
    # servconf.c sPermitUserEnvironment: yes/no (strcasecmp) or a pattern list
    return a.lower() if a.lower() in ("yes", "no") else a


def _str(kw: Keyword, a: str, _path: str, _n: int) -> str:
    return absolute(derelativise(kw.opt, a)) if kw.opt in DERELATIVISED else a


_SINGLE: Mapping[str, Callable[[Keyword, str, str, int], str]] = {
    "choice": _choice, "int": _int, "time": _time, "maxstartups": _maxstartups,
    "port": _port, "userenv": _userenv, "str": _str}
"""Value types that take exactly one argument, and how each is read (or refused)."""


def _list_value(kw: Keyword, args: tuple[str, ...], path: str, n: int) -> str:
    """The value of a keyword that takes several arguments (``words``, ``envname``,
    ``setenv``, ``subsystem``, ``listen``, ``authmethods``), or ParseError."""
    t = kw.vtype
    if t == "authmethods":
        _check_authmethods(args, path, n)
    elif t == "envname" and any("=" in x for x in args):
        x = next(x for x in args if "=" in x)
        raise _err(f'Invalid environment name "{x}"', path, n)
    elif t == "setenv" and any("=" not in x for x in args):
        raise _err("Invalid environment.", path, n)
    elif t == "subsystem" and len(args) < 2:
        raise _err("Missing subsystem command.", path, n)
    elif t == "listen":
        return _validate_listen(kw, args, path, n)
    if t in ("words", "envname") and any(x == "" for x in args):
        raise _err(f"empty {kw.name} pattern", path, n)
    return " ".join(args)


def _check_authmethods(args: tuple[str, ...], path: str, n: int) -> None:
    """servconf.c sAuthenticationMethods, auth2.c auth2_methods_valid."""
    if "any" in args and len(args) > 1:
        raise _err('"any" must appear alone in AuthenticationMethods', path, n)
    for lst in args:
        if lst != "any" and any(m.split(":", 1)[0] not in AUTH_METHODS
                                for m in lst.split(",")):
            raise _err("invalid authentication method list.", path, n)


def derelativise(opt: str, arg: str, cwd: str = DAEMON_CWD) -> str:
    """``derelativise_path`` for option ``opt``: the path sshd uses (``//etc/issue`` for
    ``etc/issue``, as ``sshd -T`` prints it; see :func:`absolute`)."""
    if arg.lower() == "none":
        return "none"
    if (opt == "hostkeyagent" and arg == "SSH_AUTH_SOCK") or (
            opt == "securitykeyprovider" and arg.lower() == "internal"):
        return arg
    if arg.startswith(("/", "~")):
        return arg
    return f"{cwd.rstrip('/')}/{arg}" if cwd != "/" else f"//{arg}"


def absolute(value: str) -> str:
    """A derelativised path without the doubled slash of the ``/`` working directory
    (``//etc/issue`` names ``/etc/issue``): the form rules compare."""
    return value[1:] if value.startswith("//") and not value.startswith("///") else value


@record
class ListenAddress:
    """One ``ListenAddress`` line: ``ADDR[:PORT] [rdomain NAME]``."""

    host: str
    """Address or host name, brackets removed."""
    port: int
    """0 = every ``Port``."""
    rdomain: str | None = None


def parse_listen(args: Sequence[str]) -> ListenAddress | str:
    """``servconf.c sListenAddress``: the parsed line, or sshd's error message."""
    got = _listen_host_port(args[0])
    if isinstance(got, str):
        return got
    host, port = got
    rdomain = None
    if len(args) > 1:
        if args[1] != "rdomain" or len(args) < 3:
            return "bad ListenAddress syntax"
        rdomain = args[2]
        # sshd asks the kernel (SO_BINDTODEVICE) whether the name is a device of the host
        # it runs on; only names no device can have are refused here
        if not rdomain or len(rdomain) > 15 or "/" in rdomain or rdomain in (".", ".."):
            return "bad routing domain"
    return ListenAddress(host, port, rdomain)


def _listen_host_port(arg: str) -> tuple[str, int] | str:
    """(host, port; 0 = every Port) of ``ADDR``, ``ADDR:PORT`` or ``[ADDR]:PORT``
    (``put_host_port`` syntax, a bare IPv6 address has no port), or sshd's error."""
    if "[" not in arg and arg.count(":") >= 2:  # a bare IPv6 address
        return arg, 0
    if arg.startswith("["):
        end = arg.find("]")
        if end < 0:
            return "bad address:port usage"
        head, rest = arg[:end + 1], arg[end + 1:]
        if rest and rest[0] != ":":
            return "bad address:port usage"
    else:
        cut = min((i for i in (arg.find(":"), arg.find("/")) if i >= 0), default=len(arg))
        head, rest = arg[:cut], arg[cut:]
        if rest.startswith("/"):
            return "bad address:port usage"
    host = head[1:-1] if head.startswith("[") and head.endswith("]") else head
    if not rest:
        return host, 0
    port = a2port(rest[1:])
    if port <= 0:
        return "bad port number"
    return host, port


def _validate_listen(kw: Keyword, args: tuple[str, ...], path: str, n: int) -> str:
    got = parse_listen(args)
    if isinstance(got, str):
        raise _err(got, path, n)
    if len(args) > 3:
        raise _err(f"keyword {kw.name} extra arguments at end of line", path, n)
    return " ".join(args)


def listen_family_error(la: ListenAddress, family: str) -> str | None:
    """What ``getaddrinfo`` says when sshd resolves ``la`` for ``AddressFamily`` at start-up
    (fatal: ``bad addr or host: ADDR (REASON)``), for what can be told without a resolver:
    a numeric address of the other family, or a string that can be no host name."""
    parsed = addr_pton(la.host)
    if parsed is None:
        if ":" in la.host or re.fullmatch(r"[0-9.]+", la.host):
            return f"bad addr or host: {la.host} (Name or service not known)"
        return None  # a host name: resolved by the host sshd runs on
    bits = parsed[0]
    if (family == "inet" and bits == 128) or (family == "inet6" and bits == 32):
        return f"bad addr or host: {la.host} (Address family for hostname not supported)"
    return None


def listen_printed(la: ListenAddress, ports: Sequence[str]) -> list[str]:
    """``sshd -T`` lines for one ListenAddress (``[::1]:22``, one per Port when the line
    has none; ``rdomain NAME`` appended).  Numeric addresses are shown in
    ``getnameinfo`` form (``10.1`` is ``10.0.0.1``); host names as written."""
    parsed = addr_pton(la.host)
    host = la.host
    if parsed is not None:
        import ipaddress  # only for numeric ListenAddress lines: not at every start-up

        bits, value = parsed
        host = str(ipaddress.IPv4Address(value) if bits == 32 else ipaddress.IPv6Address(value))
    if ":" in host:
        host = f"[{host}]"
    tail = f" rdomain {la.rdomain}" if la.rdomain else ""
    return [f"{host}:{p}{tail}" for p in ([str(la.port)] if la.port else ports)]


# --------------------------------------------------------------------- Match
def match_pattern(s: str, pattern: str) -> bool:
    """``match.c match_pattern``: ``*`` and ``?`` wildcards, everything else literal."""
    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, s, re.DOTALL) is not None


def match_pattern_list(s: str, patterns: str, dolower: bool = False) -> int:
    """``match.c match_pattern_list``: 1 on a positive match, -1 when a negated pattern
    matches (it wins), 0 otherwise (so ``!root`` alone never matches)."""
    got = 0
    for sub in patterns.split(","):
        neg = sub.startswith("!")
        if neg:
            sub = sub[1:]
        if dolower:
            sub = sub.lower()
        if match_pattern(s, sub):
            if neg:
                return -1
            got = 1
    return got


def addr_pton(text: str) -> tuple[int, int] | None:
    """``addrmatch.c addr_pton`` (``getaddrinfo`` with ``AI_NUMERICHOST``): (bits, value)
    of a numeric address.  IPv4 takes the ``inet_aton`` forms (``10.1`` is 10.0.0.1,
    ``010.0.0.1`` is octal) as glibc does."""
    if ":" not in text:
        try:
            import socket

            return 32, int.from_bytes(socket.inet_aton(text), "big")
        except (OSError, ValueError):
            return None
    import ipaddress  # an IPv6 literal: rare, and the module costs 16 M instructions

    try:
        return 128, int(ipaddress.IPv6Address(text))
    except ValueError:
        return None


def addr_pton_cidr(entry: str) -> tuple[int, int, int] | int:
    """``addrmatch.c addr_pton_cidr``: (bits, network, mask length); -1 when the entry is
    not an address (it is then matched as a wildcard string); -2 when it is an address
    with a mask too long for its family or host bits set (invalid)."""
    addr, slash, mask = entry.partition("/")
    masklen = None
    if slash:
        digits = mask.lstrip("0") or "0"
        if not (mask.isascii() and mask.isdigit()) or len(digits) > 3 or int(digits) > 128:
            return -1
        masklen = int(digits)
    parsed = addr_pton(addr)
    if parsed is None:
        return -1
    bits, value = parsed
    if masklen is None:
        masklen = bits
    if masklen > bits:
        return -2
    if value & ((1 << (bits - masklen)) - 1):
        return -2
    return bits, value, masklen


def addr_match_list(addr: str | None, patterns: str) -> int:
    """``addrmatch.c addr_match_list``: 1 match, 0 none, -1 negated match, -2 invalid."""
    ret = 0
    ip = addr_pton(addr) if addr is not None else None
    for entry in patterns.split(","):
        neg = entry.startswith("!")
        if neg:
            entry = entry[1:]
        if entry == "":
            return -2
        net = addr_pton_cidr(entry)
        if net == -2:
            return -2
        if isinstance(net, tuple):
            bits, value, masklen = net
            shift = bits - masklen
            found = ip is not None and ip[0] == bits and ip[1] >> shift == value >> shift
        else:
            found = addr is not None and match_pattern(addr, entry)
        if found:
            if neg:
                return -1
            ret = 1
    return ret


def _match_allowed(kw: Keyword, release: tuple[int, int] | None) -> bool:
    """Whether ``kw`` may appear in a ``Match`` block of ``release`` (unknown: as the
    newest release allows)."""
    return kw.match or (kw.match_since is not None
                        and (release is None or release >= kw.match_since))


MATCH_SINCE: Mapping[str, tuple[int, int]] = {"invalid-user": (9, 9), "version": (10, 0)}
"""Match criteria newer releases added (``invalid-user`` takes no argument)."""


def _static_match(crit: tuple[tuple[str, str], ...], release_name: Callable[[], str]
                  ) -> bool | None:
    """Whether a block applies whatever the connection: ``False`` when a ``version``
    criterion does not match the release (or the release is unknown: sshd -T of an
    unknown release cannot be reproduced), ``True`` when only ``version`` criteria are
    given and all match; ``None`` when the connection decides."""
    versions = [arg for attr, arg in crit if attr == "version"]
    if not versions:
        return None
    name = release_name()
    if not name or not all(match_pattern_list(name, a) == 1 for a in versions):
        return False
    return True if len(versions) == len(crit) else None


def _parse_match(rest: str, path: str, n: int, release: tuple[int, int] | None = None
                 ) -> tuple[tuple[str, str], ...]:
    """Criteria of a ``Match`` line (``match_cfg_line`` syntax checks)."""
    crit: list[tuple[str, str]] = []
    cp: str | None = rest
    while True:
        attrib, cp = strdelim(cp)
        if attrib is None or attrib == "":
            break
        if attrib.startswith("#"):
            break
        if attrib.lower() == "all":
            arg, _rest = strdelim(cp)
            if crit or (arg is not None and arg != "" and not arg.startswith("#")):
                raise _err("'all' cannot be combined with other Match attributes", path, n)
            return (("all", ""),)
        item, cp = _match_criterion(attrib, cp, release, path, n)
        crit.append(item)
    if not crit:
        raise _err("One or more attributes required for Match", path, n)
    return tuple(crit)


def _match_criterion(attrib: str, cp: str | None, release: tuple[int, int] | None,
                     path: str, n: int) -> tuple[tuple[str, str], str | None]:
    """One criterion of a ``Match`` line and the rest of the line (the criteria
    ``release`` knows; ``invalid-user`` takes no argument)."""
    a = attrib.lower()
    since = MATCH_SINCE.get(a)
    if since is not None and release is not None and release < since:
        raise _err(f"Unsupported Match attribute {attrib}", path, n)
    if a == "invalid-user":
        return (a, ""), cp
    arg, cp = strdelim(cp)
    if arg is None or arg == "" or arg.startswith("#"):
        raise _err(f"Missing Match criteria for {attrib}", path, n)
    if a not in ("user", "group", "host", "address", "localaddress", "localport",
                 "rdomain", "version"):
        raise _err(f"Unsupported Match attribute {attrib}", path, n)
    if a in ("address", "localaddress") and addr_match_list(None, arg) != 0:
        raise _err(f"Invalid Match {a} argument '{arg}'", path, n)
    if a == "localport" and a2port(arg) == -1:
        raise _err(f"Invalid LocalPort '{arg}' on Match line", path, n)
    return (a, arg), cp


def match_connection(block: MatchBlock, conn: Connection) -> bool:
    """True if ``conn`` satisfies every criterion of ``block`` (they are ANDed)."""
    for attr, arg in block.criteria:
        if attr == "all":
            return True
        criterion = _CRITERIA.get(attr)
        if criterion is None or not criterion(conn, arg):  # unknown: refused by _parse_match
            return False
    return True


def _match_group(conn: Connection, arg: str) -> bool:
    if conn.user is None or not conn.groups:
        return False
    # groupaccess.c ga_match_pattern_list: a negated match on any group wins
    hits = [match_pattern_list(g, arg) for g in conn.groups]
    return -1 not in hits and 1 in hits


_CRITERIA: Mapping[str, Callable[[Connection, str], bool]] = {
    "user": lambda c, arg: c.user is not None and match_pattern_list(c.user, arg) == 1,
    "group": _match_group,
    "host": lambda c, arg: c.host is not None and match_pattern_list(
        c.host.lower(), arg, True) == 1,
    "address": lambda c, arg: c.addr is not None and addr_match_list(c.addr, arg) == 1,
    "localaddress": lambda c, arg: c.laddr is not None and addr_match_list(c.laddr,
                                                                          arg) == 1,
    "localport": lambda c, arg: c.lport is not None and a2port(arg) == c.lport,
    "rdomain": lambda c, arg: c.rdomain is not None and match_pattern_list(c.rdomain,
                                                                          arg) == 1,
    # decided at start-up by _static_match; here the block already passed it
    "version": lambda c, arg: True,
    # sshd -T -C never marks its user invalid (observed with 10.0p1): no modelled
    # connection matches
    "invalid-user": lambda c, arg: False,
}
"""``servconf.c match_cfg_line``: whether a connection satisfies one criterion (a missing
connection field never matches, as ``sshd -T -C`` in test mode)."""


# --------------------------------------------------------------------- the configuration
MatchFn = Callable[[MatchBlock], bool]

_NEVERMATCH, _MATCH_ONLY = 1, 2


class SshdConfig:
    """A parsed sshd configuration (main file and everything it includes).

    Build it with :func:`load`; ask :meth:`effective` for the values a connection gets.
    """

    def __init__(self, main: str, read: Reader, glob: Globber) -> None:
        self.main = main
        self.reader = read
        self.globber = glob
        self._lexed: dict[str, list[_Line]] = {}
        self._globs: dict[str, tuple[str, ...]] = {}
        self.files: list[str] = []
        """Every file read, in first-read order."""
        self.blocks: list[MatchBlock] = []
        """Every ``Match`` block in parse order."""
        self.includes: list[IncludeLine] = []
        """Every ``Include`` line (with the files it expanded to)."""
        self._startup: list[tuple[Directive, bool]] | None = None
        self.defaults: Mapping[str, str] = {}
        """Compiled-in values of options the keyword table leaves unset (``ciphers``...),
        for the installed release (:mod:`aiaudit.linux.sshd.defaults`)."""
        self.defaults_note = ""
        self.release: tuple[int, int] | None = None
        """The OpenSSH release whose sshd reads the configuration (``(10, 0)``), which
        decides the keywords and Match criteria it knows; ``None``: unknown (every keyword
        of :data:`KEYWORD_LIST` is accepted)."""
        self.release_name: str | Callable[[], str] = ""
        """``OpenSSH_10.0p2 Debian-7+deb13u4``: what ``Match version`` compares
        (``SSH_RELEASE``), or a function that finds it (called once, only for a
        configuration with such a line)."""
        self.netdev: Callable[[str], bool | None] | None = None
        """Whether a network device exists on the host sshd runs on (``None``: unknown);
        sshd refuses ``ListenAddress ... rdomain NAME`` for a NAME that is no device
        (``valid_rdomain``: ``SO_BINDTODEVICE``)."""
        self._startup_set: dict[str, list[Directive]] | None = None
        self._known: Mapping[str, list[_Line]] = {}
        """Lines of files already read and split by the configuration this one derives
        from (:meth:`with_file`)."""
        self._checked: dict[int, tuple[str, tuple[str, ...]] | ParseError] = {}
        """:func:`_validate` of each line (by ``id``; the lines live in ``_lexed``): every
        pass re-reads every line, and a run makes one pass per Match block."""

    def release_label(self) -> str:
        """:attr:`release_name`, found once."""
        if callable(self.release_name):
            self.release_name = self.release_name()
        return self.release_name

    def with_file(self, path: str, text: str) -> SshdConfig:
        """This configuration as sshd would read it with ``path`` holding ``text`` (found by
        every Include glob that matches it): a new, checked configuration (ParseError if
        sshd would refuse it) that reuses what was read, split and validated of the other
        files.  Used to ask whether a drop-in would win."""
        def read(p: str) -> str:
            return text if p == path else self.reader(p)

        def glob(pattern: str) -> Sequence[str]:
            found = list(self.globber(pattern))
            if path not in found and glob_matches(pattern, path):
                found = sorted([*found, path], key=lambda p: p.encode())
            return found

        new = SshdConfig(self.main, read, glob)
        new._known = {p: ls for p, ls in {**self._known, **self._lexed}.items() if p != path}
        new.defaults, new.defaults_note, new.netdev = (self.defaults, self.defaults_note,
                                                       self.netdev)
        new.release, new.release_name = self.release, self.release_name
        new._checked = dict(self._checked)  # ids of lines that stay alive in new._known
        for ln in (*self._lexed.get(path, ()), *self._known.get(path, ())):
            new._checked.pop(id(ln), None)  # replaced lines: their ids may be reused
        new.check()
        return new

    # -- reading
    def _lines(self, path: str) -> list[_Line]:
        if path not in self._lexed:
            known = self._known.get(path)
            if known is not None:
                self._lexed[path] = known
            else:
                try:
                    text = self.reader(path)
                except ParseError:
                    raise
                except Exception as exc:  # the callback's error: sshd exits (fopen failed)
                    raise ParseError(f"cannot read: {exc}", source=path) from None
                self._lexed[path] = _lex_file(path, text, self.release)
            self.files.append(path)
        return self._lexed[path]

    def _validate(self, kw: Keyword, ln: _Line, path: str) -> tuple[str, tuple[str, ...]]:
        hit = self._checked.get(id(ln))
        if hit is None:
            try:
                hit = _validate(kw, ln, path)
            except ParseError as exc:
                hit = exc
            self._checked[id(ln)] = hit
        if isinstance(hit, ParseError):
            raise hit
        return hit

    def _expand(self, pattern: str, path: str, n: int) -> tuple[str, ...]:
        if pattern not in self._globs:
            try:
                found = tuple(self.globber(pattern))
            except Exception as exc:
                raise _err(f'include "{pattern}" glob failed: {exc}', path, n) from None
            self._globs[pattern] = found
        return self._globs[pattern]

    # -- the walk sshd does for each pass
    def _walk(self, matcher: MatchFn | None) -> list[tuple[Directive, bool]]:
        """Every directive in parse order with whether it is active.

        ``matcher`` ``None`` = start-up pass (only ``Match all`` is active; a global-only
        keyword inside an inactive block is fatal); otherwise the connection pass (lines
        outside Match blocks are inactive, a block is active when ``matcher`` says so).
        """
        return _Pass(self, matcher).run()

    def check(self) -> None:
        """Parse everything once as sshd does at start-up; ParseError if sshd would refuse
        the configuration."""
        if self._startup is None:
            self._startup = self._walk(None)
            self._check_subsystems()
            self._check_sensible()

    def _check_subsystems(self) -> None:
        # servconf.c sSubsystem (9.2): a second definition of a name is fatal, even in a
        # later file; from 9.5 the first definition wins and later ones are ignored
        # (observed with 10.0p1's sshd -t / -T; SEMANTICS §2.2)
        if self.release is not None and self.release >= (9, 5):
            return
        seen: set[str] = set()
        assert self._startup is not None
        for d, active in self._startup:
            if d.keyword.opt == "subsystem" and active:
                name = d.args[0]
                if name in seen:
                    raise _err(f"Subsystem '{name}' already defined.", d.file, d.line)
                seen.add(name)

    def _check_sensible(self) -> None:
        # sshd.c main() after loading the configuration: checks on the start-up values
        assert self._startup is not None
        g = Effective(_collect(self._startup), {})
        family = g["AddressFamily"] or "any"
        for d in g.get("ListenAddress").entries:
            la = parse_listen(d.args)
            bad = listen_family_error(la, family) if isinstance(la, ListenAddress) else None
            if bad:
                raise _err(bad, d.file, d.line)
        for kind in ("Keys", "Principals"):
            cmd = g.get(f"Authorized{kind}Command")
            user = g.get(f"Authorized{kind}CommandUser")
            if cmd.directive is not None and (cmd.value or "").lower() != "none" \
                    and user.directive is None:
                raise _err(f"Authorized{kind}Command set without "
                           f"Authorized{kind}CommandUser", cmd.directive.file,
                           cmd.directive.line)
        am = g.get("AuthenticationMethods")
        if am.directive is not None and am.value != "any":
            enabled = {m for m, opt in AUTH_METHODS.items() if g[opt] == "yes"}
            if not any(all(x.split(":", 1)[0] in enabled for x in lst.split(","))
                       for lst in am.directive.args):
                raise _err("AuthenticationMethods cannot be satisfied by enabled "
                           "authentication methods", am.directive.file, am.directive.line)

    # -- effective values
    def effective(self, conn: Connection | MatchFn | None = None) -> Effective:
        """The configuration a connection gets.

        ``conn`` ``None`` = no connection criteria (what ``sshd -T`` prints: only
        ``Match all`` blocks apply); a :class:`Connection`; or a predicate on
        :class:`MatchBlock` (e.g. ``lambda b: b == blk`` for "a connection that matches
        exactly this block").
        """
        self.check()
        assert self._startup is not None
        if conn is None:
            matcher: MatchFn = _never
        elif isinstance(conn, Connection):
            c = conn

            def matcher(b: MatchBlock) -> bool:
                return match_connection(b, c)
        else:
            matcher = conn
        if self._startup_set is None:  # shared, read-only, by every Effective
            self._startup_set = _collect(self._startup)
        return Effective(self._startup_set, _collect(self._walk(matcher)),
                         self.defaults, self.defaults_note)

    def value(self, keyword: str, conn: Connection | MatchFn | None = None) -> Setting:
        """Effective value of one keyword (any spelling, aliases resolved)."""
        return self.effective(conn).get(keyword)


class _Pass:
    """One walk of sshd over every line of the configuration (servconf.c
    ``parse_server_config_depth``, ``process_server_config_line_depth``): the start-up pass
    (``matcher`` ``None``) or a connection pass.  The pass state (whether the current
    block applies, which block it is, whether ``AuthenticationMethods`` was set) runs
    across included files; an included file starts in its includer's state, which is
    restored after it."""

    def __init__(self, config: SshdConfig, matcher: MatchFn | None) -> None:
        self.config = config
        self.matcher = matcher
        self.record = matcher is None and config._startup is None
        """The first start-up pass records the Match blocks and Include lines."""
        self.active = matcher is None
        self.block: MatchBlock | None = None
        self.authmethods = False
        self.out: list[tuple[Directive, bool]] = []

    def run(self) -> list[tuple[Directive, bool]]:
        """Walk the main file (and what it includes); every directive with whether it is
        active in this pass."""
        self.file(self.config.main, 0 if self.matcher is None else _MATCH_ONLY, 0, ())
        return self.out

    def file(self, path: str, flags: int, depth: int,
             chain: tuple[tuple[str, int], ...]) -> None:
        """Every line of one file; ``flags`` (``_NEVERMATCH``, ``_MATCH_ONLY``) are the
        include's, ``chain`` the Include lines that led here."""
        if depth > MAX_INCLUDE_DEPTH:
            src, line = chain[-1]
            raise _err("Too many recursive configuration includes", src, line)
        for ln in self.config._lines(path):
            kw = ln.keyword
            assert kw is not None
            if kw.vtype == "match":
                self.match(ln, path, flags)
                flags &= ~_MATCH_ONLY
            elif kw.vtype == "include":
                self.include(ln, path, flags, depth, chain)
            else:
                self.directive(kw, ln, path, chain)

    def match(self, ln: _Line, path: str, flags: int) -> None:
        """A ``Match`` line: the lines up to the next one apply when it matches (at
        start-up only ``Match all``; never inside a file included from an inactive
        block)."""
        crit = _parse_match(ln.rest, path, ln.lineno, self.config.release)
        blk = MatchBlock(path, ln.lineno, crit, ln.rest.strip())
        if self.record:
            self.config.blocks.append(blk)
        static = _static_match(crit, self.config.release_label)
        if flags & _NEVERMATCH or static is False:
            value = False
        elif static is True:  # `Match version` alone: decided at start-up already
            value = True
        elif self.matcher is None:
            value = blk.is_all
        else:
            value = blk.is_all or self.matcher(blk)
        self.active, self.block = value, blk

    def include(self, ln: _Line, path: str, flags: int, depth: int,
                chain: tuple[tuple[str, int], ...]) -> None:
        """An ``Include`` line: each argument's files, parsed in place, in glob order."""
        if not ln.args:
            raise _err("Include missing filename argument", path, ln.lineno)
        for arg in ln.args:
            if arg == "":
                raise _err("Include empty filename", path, ln.lineno)
            pat = include_pattern(arg)
            files = self.config._expand(pat, path, ln.lineno) if pat[0] == "/" else ()
            if self.record:
                self.config.includes.append(IncludeLine(path, ln.lineno, (arg,), files,
                                                        self.block))
            oactive, oblock = self.active, self.block
            sub = _MATCH_ONLY if flags & _MATCH_ONLY else (0 if oactive else _NEVERMATCH)
            for f in files:
                self.file(f, sub, depth + 1, (*chain, (path, ln.lineno)))
                self.active, self.block = oactive, oblock

    def directive(self, kw: Keyword, ln: _Line, path: str,
                  chain: tuple[tuple[str, int], ...]) -> None:
        """Any other line: validated (even when inactive, as sshd does), then recorded."""
        active = self.active
        if not active and not _match_allowed(kw, self.config.release):
            if self.matcher is None:
                raise _err(f"Directive '{kw.name}' is not allowed within a Match block",
                           path, ln.lineno)
            return
        value, args = self.config._validate(kw, ln, path)
        if kw.vtype == "listen" and len(args) >= 3 and self.config.netdev is not None \
                and self.config.netdev(args[2]) is False:
            raise _err("bad routing domain", path, ln.lineno)
        if kw.vtype == "ignore":
            return
        if kw.vtype == "authmethods":
            # observed (9.2): "any" is refused once an active line of this pass has set
            # the option, even on a line that is itself inactive
            if "any" in args and self.authmethods:
                raise _err('"any" must appear alone in AuthenticationMethods', path,
                           ln.lineno)
            if active:
                self.authmethods = True
        self.out.append((Directive(kw, args, value, path, ln.lineno, ln.raw, self.block,
                                   chain), active))


def _never(_b: MatchBlock) -> bool:
    return False


def _collect(walked: list[tuple[Directive, bool]]) -> dict[str, list[Directive]]:
    """Active directives per option, in parse order."""
    out: dict[str, list[Directive]] = {}
    for d, active in walked:
        if active:
            out.setdefault(d.keyword.opt, []).append(d)
    return out


def _pattern_match(name: str, pattern: str) -> bool:
    """OpenSSH ``match_pattern``: ``*`` and ``?`` wildcards, nothing else special."""
    return fnmatch.fnmatchcase(name, pattern.replace("[", "[[]"))


def assemble_names(value: str, default: str) -> str | None:
    """An algorithm list written relative to the compiled-in ``default`` as sshd assembles
    it (kex.c ``kex_assemble_names``): ``+a,b`` appends the names not already in the
    default, ``^a,b`` puts them first (the default's other names follow), ``-a,b*`` removes
    the default's names that match a pattern.  ``None`` where the answer needs the table of
    every algorithm the build supports (a wildcard after ``+`` or ``^``): the value is then
    shown as written."""
    op, names = value[0], [n for n in value[1:].split(",") if n]
    base = [n for n in default.split(",") if n]
    if op == "-":
        return ",".join(n for n in base if not any(_pattern_match(n, p) for p in names))
    if any(c in n for n in names for c in "*?"):
        return None
    first, then = (base, names) if op == "+" else (names, base)
    out = list(dict.fromkeys(first))
    out += [n for n in dict.fromkeys(then) if n not in out]
    return ",".join(out)


class Effective:
    """Effective values for one connection: the connection pass over the start-up pass."""

    def __init__(self, startup: dict[str, list[Directive]],
                 matched: dict[str, list[Directive]],
                 defaults: Mapping[str, str] | None = None, defaults_note: str = "") -> None:
        self._g = startup
        self._m = matched
        self._defaults = defaults or {}
        self._defaults_note = defaults_note

    def lines(self, keyword: str) -> tuple[list[Directive], list[Directive]]:
        """The lines that set ``keyword``'s option, in the order sshd reads them: (the
        start-up pass's, the matching blocks'); :mod:`aiaudit.linux.sshd.shadowed` tells
        which of them lost."""
        opt = KEYWORDS[keyword.lower()].opt
        return list(self._g.get(opt, [])), list(self._m.get(opt, []))

    def get(self, keyword: str) -> Setting:
        """The :class:`Setting` of ``keyword`` (case-insensitive; aliases resolved)."""
        kw = KEYWORDS.get(keyword.lower())
        if kw is None or kw.cls == SPECIAL:
            raise KeyError(keyword)
        opt = kw.opt
        canon = OPTIONS[opt]
        lines = self._g.get(opt, [])
        if (canon.match or canon.match_since is not None) and self._m.get(opt):
            # copy_set_server_options: a value set in a matching block replaces the global
            lines = self._m[opt]
        if canon.cls == ACCUMULATE:
            if not lines:
                dflt = ACCUMULATE_DEFAULTS.get(opt, ())
                return Setting(canon.name, " ".join(dflt) or None, values=dflt)
            vals = tuple(_accumulated(canon, lines))
            return Setting(canon.name, " ".join(vals), entries=tuple(lines), values=vals)
        if not lines:
            if opt in self._defaults:
                return Setting(canon.name, self._defaults[opt],
                               default_note=self._defaults_note)
            return Setting(canon.name, canon.default)
        value = lines[0].value
        if opt in self._defaults and value[:1] in ("+", "-", "^"):
            assembled = assemble_names(value, self._defaults[opt])
            if assembled is not None:
                return Setting(canon.name, assembled, lines[0], values=lines[0].args,
                               default_note=self._defaults_note)
        return Setting(canon.name, value, lines[0], values=lines[0].args)

    def __getitem__(self, keyword: str) -> str | None:
        return self.get(keyword).value

    def items(self) -> Iterator[tuple[str, Setting]]:
        """Every option (canonical name) with its setting."""
        for opt, kw in OPTIONS.items():
            yield kw.name, self.get(opt)


def _accumulated(kw: Keyword, lines: list[Directive]) -> Iterator[str]:
    if kw.vtype == "subsystem":  # a repeated name survives parsing only from 9.5: first wins
        names: set[str] = set()
        for d in lines:
            if d.args[0] not in names:
                names.add(d.args[0])
                yield " ".join(d.args)
    elif kw.vtype == "listen":
        for d in lines:
            yield " ".join(d.args)
    elif kw.vtype in ("port", "str"):
        for d in lines:
            yield d.value
    else:
        for d in lines:
            yield from d.args


def load(read: Reader, glob: Globber, main: str = MAIN_CONFIG,
         defaults: Mapping[str, str] | None = None, defaults_note: str = "",
         netdev: Callable[[str], bool | None] | None = None,
         release: tuple[int, int] | None = None,
         release_name: str | Callable[[], str] = "") -> SshdConfig:
    """Parse ``main`` and its includes; raises :class:`ParseError` when sshd would refuse
    the configuration (``file:line`` in the message).  ``defaults``: compiled-in values of
    release-dependent options (``ciphers``, ``macs``, ``kexalgorithms``,
    ``hostkeyalgorithms``) and ``defaults_note`` saying which release; ``netdev`` tells
    whether a network device exists (live scans), for ``ListenAddress ... rdomain``;
    ``release`` (``(10, 0)``) and ``release_name`` (``OpenSSH_10.0p1``): the installed
    sshd, which decides the keywords and Match criteria known (``None``: any)."""
    cfg = SshdConfig(main, read, glob)
    cfg.release, cfg.release_name = release, release_name
    cfg.netdev = netdev
    cfg.defaults = dict(defaults or {})
    cfg.defaults_note = defaults_note
    cfg.check()
    return cfg


def parse_text(text: str, path: str = MAIN_CONFIG) -> SshdConfig:
    """Parse a single configuration text (``Include`` finds nothing)."""
    def read(p: str) -> str:
        if p == path:
            return text
        raise FileNotFoundError(p)

    return load(read, lambda _p: (), path)


def effective_value(cfg: SshdConfig, keyword: str,
                    conn: Connection | MatchFn | None = None) -> str | None:
    """The effective (normalised) value of any keyword, e.g. ``effective_value(cfg,
    "UsePAM")`` → ``"yes"``; for reuse by other checks."""
    return cfg.value(keyword, conn).value
