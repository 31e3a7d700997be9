"""pam_limits configuration (limits.conf(5), pam_limits(8)) and the module's decision.

Parsing follows ``modules/pam_limits/pam_limits.c`` (``parse_config_file``,
``parse_uid_range``, ``process_limit``) as built in Debian 12 (PAM 1.5.2), checked against
the real module (``tests/oracle``):

* Files are read with ``fgets(buf, 1024)``: a line longer than 1023 bytes is cut and its
  tail is parsed as a new line (even the tail of a comment).  A NUL ends the C string.
* Leading white space is skipped, everything from the first ``#`` is a comment, and
  ``sscanf("%s%s%s%s")`` takes up to four white-space separated fields (C ``isspace``:
  space, ``\\t \\n \\v \\f \\r``); further fields are ignored (``nofile 70000 extra`` = 70000).
* ``type`` is lowercased; ``item`` and ``value`` only on four-field lines; the domain is
  case-sensitive.  A domain with ``:`` is a uid/gid range; a bad range skips the line.
* Four fields: a limit.  Two fields with a type starting with ``-``: a "no limits" line.
  Anything else: ``invalid line - skipped``.
* Values: ``-1``, ``-``, ``unlimited``, ``infinity`` = unlimited; otherwise ``strtoul``
  base 10 (trailing garbage ignored: ``8G`` = 8, ``0x100`` = 0; ``-5`` wraps); no digits:
  ``wrong limit value``, line ignored.  ``memlock`` is in KiB (x1024, saturating at
  unlimited); unlimited ``nofile`` becomes ``fs.nr_open`` (PAM >= 1.5.2).
* Precedence (``process_limit``): each side keeps the value of the best-ranked source
  (user and uid ranges 0 < ``@group`` 1 < ``%group`` 2 < ``%`` 3 < ``*`` 4 < PID 1 5 < not
  set 6); a line of equal or better rank overwrites; in a ``-`` line a lost soft side
  returns before the hard side.  ``%`` domains are ignored for every item but maxlogins.
* Debian patch 027: for uid 0 only lines naming ``root`` or a range holding uid 0 apply
  (``@:0`` and ``%:0`` included: the range is compared with the uid, at user rank);
  ``*``, ``@group`` and ``%group`` never do.  "No limits" lines are not gated.
"""

from __future__ import annotations

import math
import re
from dataclasses import field
from typing import Callable, Iterable, Mapping

from aiaudit.core.errors import ParseError
from aiaudit.core.parsing import to_int
from aiaudit.core.startup.records import record
from aiaudit.linux.accounts import passwd as pw
from aiaudit.linux.accounts.users import Accounts

RLIM_INFINITY = 2**64 - 1
"""``RLIM_INFINITY`` on 64-bit Linux."""

ULONG_MAX = 2**64 - 1
LINE_LENGTH = 1024
"""``fgets`` buffer size of pam_limits: lines are read in chunks of 1023 bytes."""

# Source ranks (pam_limits.c LIMITS_DEF_*): lower wins.
USER, GROUP, ALLGROUP, ALL, DEFAULT, KERNEL, NONE = range(7)
RANK_NAMES = {USER: "user", GROUP: "group", ALLGROUP: "%group", ALL: "%", DEFAULT: "*",
              KERNEL: "PID 1", NONE: "inherited"}

ITEMS = ("cpu", "fsize", "data", "stack", "core", "rss", "nproc", "nofile", "memlock", "as",
         "locks", "sigpending", "msgqueue", "nice", "rtprio", "rttime")
"""rlimit items pam_limits knows (``maxlogins``, ``maxsyslogins``, ``priority``,
``nonewprivs`` are not rlimits and are not evaluated here)."""
KIB_ITEMS = frozenset({"fsize", "data", "stack", "core", "rss", "memlock", "as"})
OTHER_ITEMS = frozenset({"maxlogins", "maxsyslogins", "priority", "nonewprivs"})
UNLIMITED_WORDS = frozenset({"-1", "-", "unlimited", "infinity"})

_C_SPACE = b" \t\n\v\f\r"
_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")


@record
class Line:
    """One parsed line (chunk) of a limits file."""

    file: str
    line: int
    """1-based physical line on which the chunk starts."""
    raw: str
    """The chunk text after comment stripping (for evidence)."""
    kind: str
    """``limit``, ``nolimits``, ``invalid`` or ``badrange``."""
    domain: str = ""
    type: str = ""
    item: str = ""
    value: str = ""
    range_kind: str = "none"
    """``none`` (no ``:``), ``one`` (``:max``), ``min`` (``min:``) or ``mm`` (``min:max``)."""
    range_min: int = 0
    range_max: int = 0

    @property
    def where(self) -> str:
        """``path:line`` without the leading slash (the evidence form)."""
        return f"{self.file.lstrip('/')}:{self.line}"


def _chunks(data: bytes) -> Iterable[tuple[int, bytes]]:
    """``fgets(buf, 1024, f)`` loop: (physical line number, chunk)."""
    lineno, pos, n = 1, 0, len(data)
    while pos < n:
        nl = data.find(b"\n", pos, pos + LINE_LENGTH - 1)
        end = nl + 1 if nl >= 0 else min(n, pos + LINE_LENGTH - 1)
        yield lineno, data[pos:end]
        lineno += data.count(b"\n", pos, end)
        pos = end


def _c_strtoul(s: bytes) -> tuple[int, int, bool]:
    """C ``strtoul(s, &end, 10)``: (value, bytes consumed or 0 if no digits, ERANGE)."""
    m = re.match(rb"[ \t\n\v\f\r]*([+-]?)([0-9]+)", s)
    if not m:
        return 0, 0, False
    digits = m.group(2).lstrip(b"0") or b"0"
    if len(digits) > 20:  # past ULONG_MAX: strtoul's ERANGE
        return ULONG_MAX, m.end(), True
    v = int(digits)
    if v > ULONG_MAX:
        return ULONG_MAX, m.end(), True
    if m.group(1) == b"-":
        v = (-v) % (ULONG_MAX + 1)
    return v, m.end(), False


_UID_MOD = 2**32
"""``uid_t``/``gid_t`` are 32-bit: ``strtoul`` results are truncated on assignment."""


def _range(domain: bytes) -> tuple[str, int, int] | None:
    """``parse_uid_range``: (kind, min, max) or ``None`` for an invalid range."""
    if b":" not in domain:
        return "none", 0, 0
    pmax = domain[domain.index(b":") + 1:]
    rng = domain[1:] if domain[:1] in (b"@", b"%") else domain
    kind, lo = "mm", 0
    if rng.startswith(b":"):
        kind = "one"
    else:
        v, used, erange = _c_strtoul(rng)
        if erange or not used or rng[used:used + 1] != b":":
            return None
        lo = v % _UID_MOD
    if not pmax:
        return None if kind == "one" else ("min", lo, 0)
    v, used, erange = _c_strtoul(pmax)
    if erange or not used or used != len(pmax):
        return None
    hi = v % _UID_MOD
    return kind, (hi if kind == "one" else lo), hi


def parse(data: bytes | str, file: str = "") -> list[Line]:
    """Every non-empty line of one limits file, classified.  Never raises for any input
    (the module accepts any bytes); ``ParseError`` is reserved for callers' misuse."""
    if isinstance(data, str):
        data = data.encode("utf-8", errors="surrogateescape")
    if not isinstance(data, bytes):
        raise ParseError("limits file content must be bytes or text", source=file)
    out: list[Line] = []
    for lineno, chunk in _chunks(data):
        buf = chunk.split(b"\x00", 1)[0]
        buf = buf.lstrip(_C_SPACE)
        buf = buf.split(b"#", 1)[0].split(b"\n", 1)[0]
        if not buf:
            continue
        fields = buf.split()[:4]  # bytes.split() splits on ASCII white space = C isspace
        raw = buf.decode("latin-1").strip()
        domain = fields[0]
        ltype = fields[1].translate(_LOWER) if len(fields) > 1 else b""
        rng = _range(domain)
        dom = domain.decode("latin-1")
        if rng is None:
            out.append(Line(file, lineno, raw, "badrange", dom))
            continue
        kind, lo, hi = rng
        if len(fields) == 4:
            out.append(Line(file, lineno, raw, "limit", dom, ltype.decode("latin-1"),
                            fields[2].translate(_LOWER).decode("latin-1"),
                            fields[3].translate(_LOWER).decode("latin-1"), kind, lo, hi))
        elif len(fields) == 2 and ltype.startswith(b"-"):
            out.append(Line(file, lineno, raw, "nolimits", dom, ltype.decode("latin-1"),
                            range_kind=kind, range_min=lo, range_max=hi))
        else:
            out.append(Line(file, lineno, raw, "invalid", dom))
    return out


def parse_value(item: str, value: str, *, nr_open: int | None) -> int | None:
    """The rlimit a value gives for ``item`` (bytes for KiB items), or ``None`` when the
    module ignores it (``wrong limit value``).  ``nr_open``: what unlimited ``nofile``
    becomes (``None``: stays ``RLIM_INFINITY``, PAM < 1.5.2)."""
    if item not in ("nice",) and value in UNLIMITED_WORDS:
        v = RLIM_INFINITY
    else:
        v, used, _erange = _c_strtoul(value.encode("latin-1"))
        if not used:
            return None  # ERANGE saturates at ULONG_MAX = RLIM_INFINITY
    if item in KIB_ITEMS and v != RLIM_INFINITY:
        v = RLIM_INFINITY if v >= RLIM_INFINITY // 1024 else v * 1024
    elif item == "cpu" and v != RLIM_INFINITY:
        v = RLIM_INFINITY if v >= RLIM_INFINITY // 60 else v * 60
    if item == "nofile" and v == RLIM_INFINITY and nr_open is not None:
        v = nr_open
    return v


# ---------------------------------------------------------------- the decision
@record
class Side:
    """One side (soft or hard) of an rlimit and what decided it."""

    value: int
    rank: int
    line: Line | None = None
    """The config line that set it (``None`` for a starting value); for a soft side
    clamped to the hard one, the line that set the hard side."""
    clamped: bool = False
    """A soft side above the hard one, lowered to it (``setrlimit`` needs soft <= hard,
    pam_limits ``setup_limits``)."""
    clamped_line: Line | None = None
    """For a clamped soft side: the line that asked for the higher soft value."""


@record
class Subject:
    """The user pam_limits opens the session for, with membership tests.

    ``in_group(name)`` / ``in_gid(gid)`` return True, False or ``None`` (unknown: the group
    database extends beyond the files, e.g. sssd/LDAP via nsswitch.conf)."""

    name: str
    uid: int
    gid: int
    in_group: Callable[[str], bool | None]
    in_gid: Callable[[int], bool | None]


@record
class Variant:
    """Which pam_limits build decides (see :mod:`aiaudit.linux.pam_limits.files`)."""

    debian_root: bool = False
    """Debian patch 027: ``*``/``@group``/``%`` lines skip uid 0."""
    nr_open: int | None = 1048576
    """Unlimited nofile becomes this (PAM >= 1.5.2); ``None`` for older PAM."""


@record(frozen=False)
class Decision:
    """Outcome of pam_limits for one user over a sequence of files."""

    status: str = "applied"
    """``applied`` (limits set), ``nolimits`` (a matching ``<domain> -`` line: nothing is
    set, the process keeps what it inherited) or ``failed`` (the session is refused)."""
    reason: str = ""
    nolimits_line: Line | None = None
    limits: dict[str, tuple[Side, Side]] = field(default_factory=dict)
    """Final (soft, hard) per item, soft clamped to hard, for items with a source."""
    uncertain: list[Line] = field(default_factory=list)
    """Lines whose domain match is unknown (NSS-only membership)."""
    ignored: list[tuple[Line, str]] = field(default_factory=list)
    """Matching lines the module ignored, with why (bad value, % domain...)."""
    shadowed: list[Shadow] = field(default_factory=list)
    """Matching lines whose value did not survive: a later line of the same or a better
    rank overwrote it, or a line of a better rank had set the side before it."""


@record
class Shadow:
    """A matching limit line that lost one side of its item to another line."""

    line: Line
    side: str
    """``soft`` or ``hard``: the side it lost."""
    by: Line
    """The line that holds that side instead (at the time it lost)."""
    why: str
    """Why it lost, in pam_limits' terms."""


def _match(line: Line, who: Subject) -> tuple[int, bool | None] | None:
    """(rank, matches) of a line's domain for ``who``; ``None`` if the domain never
    matches anyone (unknown form)."""
    d = line.domain
    if d == who.name:
        return USER, True
    if d.startswith("@"):
        if line.range_kind == "none":
            return GROUP, who.in_group(d[1:])
        if line.range_kind == "one":
            return GROUP, who.in_gid(line.range_max)
        # @min: / @min:max look at the primary gid only
        ok = who.gid >= line.range_min and (line.range_kind == "min"
                                             or who.gid <= line.range_max)
        return GROUP, ok
    if d.startswith("%"):
        if line.range_kind == "none":
            return (ALL, True) if d == "%" else (ALLGROUP, who.in_group(d[1:]))
        if line.range_kind == "one":
            return ALLGROUP, who.in_gid(line.range_max)
        return None  # "range unsupported for %group matching"
    if line.range_kind == "none":
        return (DEFAULT, True) if d == "*" else None
    if line.range_kind == "one":
        return USER, who.uid == line.range_max
    ok = who.uid >= line.range_min and (line.range_kind == "min" or who.uid <= line.range_max)
    return USER, ok


def _match_debian_root(line: Line, who: Subject) -> tuple[int, bool] | None:
    """Debian patch 027 for uid 0 (observed with the real module, PAM 1.5.2-6): a limit
    line applies only if its domain is the user's name or a range (``0:``, ``:0``, and also
    ``@:0``, ``@0:10``, ``%:0`` with the prefix ignored) containing the *uid*; it then ranks
    as a user entry.  ``*``, ``@group`` and ``%group`` never apply."""
    if line.domain == who.name:
        return USER, True
    if line.range_kind == "none":
        return None
    if line.range_kind == "one":
        ok = who.uid == line.range_max
    else:
        ok = who.uid >= line.range_min and (line.range_kind == "min"
                                            or who.uid <= line.range_max)
    return (USER, True) if ok else None


def _nolimits_match(line: Line, who: Subject) -> bool | None:
    d = line.domain
    if d == who.name:
        return True
    if d.startswith("@"):
        m = _match(line, who)  # never None for an '@' domain
        return m[1] if m is not None else None
    if line.range_kind == "none":
        return False  # "* -" and "% -" are ignored
    # any other ranged domain (even "%:1000") is compared with the uid, as the module does
    if line.range_kind == "one":
        return who.uid == line.range_max
    return who.uid >= line.range_min and (line.range_kind == "min"
                                          or who.uid <= line.range_max)


def decide(files: Iterable[tuple[str, list[Line] | str]], who: Subject,
           start: Mapping[str, tuple[Side, Side]], variant: Variant,
           items: Iterable[str] = ("nofile", "memlock")) -> Decision:
    """Run pam_limits' algorithm over ``files`` (in read order; a ``str`` instead of lines
    is a read error that fails the session, as ``fopen`` failing does).

    ``start``: per item the starting (soft, hard) with rank ``KERNEL`` (Debian < 1.7 and
    ``set_all``: from /proc/1/limits) or ``NONE`` (inherited; left alone when no line sets
    it).
    """
    wanted = frozenset(items)
    cur: dict[str, list[Side]] = {i: list(start[i]) for i in wanted if i in start}
    dec = Decision()
    for path, lines in files:
        if isinstance(lines, str):
            dec.status, dec.reason = "failed", f"cannot read {path}: {lines}"
            return dec
        for ln in lines:
            if ln.kind == "nolimits":
                m = _nolimits_match(ln, who)
                if m is None:
                    dec.uncertain.append(ln)
                elif m:
                    dec.status, dec.nolimits_line = "nolimits", ln
                    return dec
            elif ln.kind == "limit":
                _limit_line(ln, who, variant, wanted, cur, dec)
    for item, (soft, hard) in cur.items():
        if soft.rank == NONE and hard.rank == NONE:
            continue
        if soft.value > hard.value:
            soft = Side(hard.value, soft.rank, hard.line, True, soft.line)
        dec.limits[item] = (soft, hard)
    return dec


def _limit_line(ln: Line, who: Subject, variant: Variant, wanted: frozenset[str],
                cur: dict[str, list[Side]], dec: Decision) -> None:
    """``process_limit`` for one limit line (``parse_config_file`` decided it applies)."""
    rank = _applies(ln, who, variant, wanted, dec)
    if rank is None:
        return
    if ln.type not in ("soft", "hard", "-"):
        dec.ignored.append((ln, f"unknown type {ln.type!r}"))
        return
    v = parse_value(ln.item, ln.value, nr_open=variant.nr_open)
    if v is None:
        dec.ignored.append((ln, f"wrong limit value {ln.value!r}"))
        return
    if rank in (ALL, ALLGROUP):
        dec.ignored.append((ln, "'%' domains apply to maxlogins only"))
        return
    sides = cur.setdefault(ln.item, [Side(RLIM_INFINITY, NONE), Side(RLIM_INFINITY, NONE)])
    for idx, name, types in ((0, "soft", ("soft", "-")), (1, "hard", ("hard", "-"))):
        if ln.type not in types:
            continue
        prev = sides[idx]
        if prev.rank < rank:
            # returns for the whole line: a lost soft side leaves the hard side untouched
            dec.ignored.append((ln, f"{name} side already set by a "
                                    f"{RANK_NAMES[prev.rank]} entry"))
            if prev.line is not None:
                _lost_on_rank(dec, ln, idx, prev, rank)
            return
        if prev.line is not None:
            dec.shadowed.append(Shadow(prev.line, name, ln, _overwritten_why(prev, ln, rank)))
        sides[idx] = Side(v, rank, ln)


def _lost_on_rank(dec: Decision, ln: Line, idx: int, prev: Side, rank: int) -> None:
    """Record ``ln`` losing to the better-ranked line behind ``prev`` (pam_limits
    ``process_limit``): a lost soft side of a ``-`` line skips its hard side too."""
    by = prev.line
    assert by is not None
    why = (f"{by.where} is a {_kind(prev.rank)} line, set first: it beats a "
           f"{_kind(rank)} line wherever that is read")
    sides = ("soft", "hard") if idx == 0 and ln.type == "-" else (("soft", "hard")[idx],)
    for side in sides:
        extra = " (a '-' line whose soft side loses sets no hard side either)" \
            if side == "hard" and idx == 0 else ""
        dec.shadowed.append(Shadow(ln, side, by, why + extra))


def _overwritten_why(prev: Side, ln: Line, rank: int) -> str:
    """Why the line behind ``prev`` lost to ``ln``, read later."""
    if prev.rank == rank:
        order = ("later in the same file" if prev.line is not None
                 and prev.line.file == ln.file else "read later")
        return (f"{ln.where} is also a {_kind(rank)} line and is {order}: the last one "
                "read wins (limits.conf, then limits.d by file name)")
    return (f"{ln.where} is a {_kind(rank)} line: it beats a {_kind(prev.rank)} line "
            "wherever that is read")


def _kind(rank: int) -> str:
    """A rank as a line kind: ``user``, ``group``, ``'*'``."""
    name = RANK_NAMES[rank]
    return name if name.isalpha() else f"'{name}'"


def _applies(ln: Line, who: Subject, variant: Variant, wanted: frozenset[str],
             dec: Decision) -> int | None:
    """The rank at which limit line ``ln`` applies to ``who`` for a wanted item, or
    ``None`` (recording the lines Debian's root rule drops and those whose match is
    unknown)."""
    mt: tuple[int, bool | None] | None
    if variant.debian_root and who.uid == 0:
        mt = _match_debian_root(ln, who)
        if mt is None:
            if ln.item in wanted and _match(ln, who) not in (None, (USER, False)):
                dec.ignored.append((ln, "Debian: only lines naming root or a uid "
                                        "range apply to root"))
            return None
    else:
        mt = _match(ln, who)
    if mt is None:
        return None
    rank, ok = mt
    if ok is None:
        if ln.item in wanted:
            dec.uncertain.append(ln)
        return None
    if not ok or ln.item not in wanted:
        return None
    return rank


def fmt(value: int | None, item: str = "") -> str:
    """Human form of an rlimit value (``unlimited`` for RLIM_INFINITY)."""
    if value is None:
        return "unknown"
    if value == RLIM_INFINITY:
        return "unlimited"
    if item in KIB_ITEMS and value and value % 1024 == 0:
        for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
            if value % size == 0:
                return f"{value // size} {unit}"
    return str(value)


def rlimit_value(item: str, value: int | str) -> int:
    """A value written in limits.conf units (a count; KiB for the size items, minutes for
    ``cpu``; or ``unlimited``) as the rlimit it stands for (bytes, seconds, RLIM_INFINITY),
    for comparing a policy's bound with :func:`decide`'s values."""
    if value == "unlimited":
        return RLIM_INFINITY
    n = int(value)
    if item in KIB_ITEMS:
        return n * 1024
    if item == "cpu":
        return n * 60
    return n


def conf_units(item: str, value: int) -> int | float:
    """An rlimit value as limits.conf writes it (KiB, minutes; ``inf`` for unlimited)."""
    if value == RLIM_INFINITY:
        return math.inf
    if item in KIB_ITEMS:
        return value // 1024
    if item == "cpu":
        return value // 60
    return value


# ---------------------------------------------------------------- other limit sources
PROC_NAMES = {
    "Max cpu time": "cpu", "Max file size": "fsize", "Max data size": "data",
    "Max stack size": "stack", "Max core file size": "core", "Max resident set": "rss",
    "Max processes": "nproc", "Max open files": "nofile", "Max locked memory": "memlock",
    "Max address space": "as", "Max file locks": "locks", "Max pending signals": "sigpending",
    "Max msgqueue size": "msgqueue", "Max nice priority": "nice",
    "Max realtime priority": "rtprio", "Max realtime timeout": "rttime",
}
"""Row names of ``/proc/<pid>/limits`` (``fs/proc/base.c`` ``lnames``)."""


def parse_proc_limits(text: str) -> dict[str, tuple[int, int]]:
    """``/proc/<pid>/limits``: ``{item: (soft, hard)}`` (``unlimited`` = RLIM_INFINITY)."""
    if "\x00" in text:
        raise ParseError("binary content in limits file")
    out: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        m = re.match(r"(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)", line)
        if not m or m.group(1) not in PROC_NAMES:
            continue
        vals = []
        for v in (m.group(2), m.group(3)):
            if v == "unlimited":
                vals.append(RLIM_INFINITY)
            elif v.isdigit():
                vals.append(to_int(v, what=f"{m.group(1)} value"))
            else:
                break
        if len(vals) == 2:
            out[PROC_NAMES[m.group(1)]] = (vals[0], vals[1])
    return out


_SUFFIX = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5,
           "e": 1024**6}


def _systemd_one(v: str, item: str) -> int:
    v = v.strip()
    if v.lower() == "infinity":
        return RLIM_INFINITY
    m = re.fullmatch(r"([0-9]+)([KMGTPEkmgtpe]?)", v)
    if not m or (m.group(2) and item not in KIB_ITEMS):
        raise ParseError(f"invalid resource limit value {v!r}")
    digits = m.group(1).lstrip("0") or "0"
    if len(digits) > 20:  # systemd's parse_size/safe_atollu: ERANGE
        raise ParseError(f"invalid resource limit value {v[:40]!r}... (out of range)")
    n = int(digits) * _SUFFIX[m.group(2).lower()]
    return min(n, RLIM_INFINITY)


def parse_systemd_limit(value: str, item: str) -> tuple[int, int]:
    """A systemd ``Limit*=``/``DefaultLimit*=`` value: ``N`` or ``SOFT:HARD``, ``infinity``,
    base-1024 suffixes for byte-valued limits (systemd.exec(5) "Process Properties")."""
    if "\x00" in value:
        raise ParseError("binary content")
    soft, sep, hard = value.partition(":")
    s = _systemd_one(soft, item)
    h = _systemd_one(hard, item) if sep else s
    if s > h:
        raise ParseError(f"soft limit above hard limit in {value!r}")
    return s, h


def subject_for(acc: Accounts, user: pw.Account, assume: bool | None = None) -> Subject:
    """A pam_limits subject whose group tests say "unknown" (``None``) where NSS may add
    members the files do not show; ``assume`` replaces that unknown with a guess."""
    db = acc.db
    remote = bool(acc.remote_group)

    def check(g: pw.Group | None) -> bool | None:
        if g is not None and (user.gid == g.gid or user.name in g.members
                              or g.gid in db.supplementary_gids(user)):
            return True
        return assume if remote else False

    return Subject(user.name, user.uid, user.gid,
                      in_group=lambda name: check(db.group(name)),
                      in_gid=lambda gid: check(db.group_by_gid(gid)))
