"""``files.fact``: a file as a fact (like goss's file resource), read through the Host.

What it checks: one rule states what must be true of one path of the scanned root: it
exists or is absent, is a regular file, a directory or a symlink whose target resolves
(inside the root) to a given path; its permission bits are at most a mode (no bit outside
it); its owner and group are among allowed names; it contains (or does not contain) a line
matching a pattern.

How it decides: ``lstat`` of the path, then (for a symlink) the target resolved inside the
root only: a link that escapes it is reported, never followed.  Owner and group names come
from the root's ``/etc/passwd`` and ``/etc/group``.  Patterns run in
:mod:`aiaudit.core.ruleset.linematch` (linear time, so a catastrophic regex in a ruleset
cannot stall a scan); a pattern it refuses is an error result saying why.  One result for
the path: every stated fact, and which ones do not hold.

Sources: goss's ``file`` resource (the model); lstat(2), inode(7) (file types and
permission bits); passwd(5), group(5).
"""

from __future__ import annotations

import os
import stat as st
from typing import Any, Iterator

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError, NotFound, PathEscape, SymlinkLoop
from aiaudit.core.host import Host
from aiaudit.core.ruleset.linematch import (
    MAX_PATTERN,
    Budget,
    Pattern,
    PatternError,
    TooCostly,
    compile_pattern,
)
from aiaudit.linux.accounts import passwd as pw

_PATH = {"type": "string", "pattern": "^/[^\\x00]*$", "maxLength": 4096}
_NAMES = {"type": "array", "minItems": 1,
          "items": {"oneOf": [{"type": "string", "minLength": 1, "pattern": "^[^\\s:]+$"},
                              {"type": "integer", "minimum": 0}]}}
_PATTERNS = {"type": "array", "minItems": 1,
             "items": {"type": "string", "minLength": 1, "maxLength": MAX_PATTERN,
                       "format": "aiaudit-line-pattern"}}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["path"],
    "properties": {
        "path": {**_PATH, "description": "absolute path on the audited host"},
        "state": {"enum": ["present", "absent", "file", "directory", "symlink"],
                  "default": "present",
                  "description": "present (any type), absent, a regular file, a directory "
                                 "or a symlink (symlinks followed for file/directory)"},
        "target": {**_PATH, "description": "with state symlink: where the link must "
                                           "resolve to, inside the root"},
        "mode_max": {"type": "string", "pattern": "^0?[0-7]{3,4}$",
                     "description": "no permission bit outside this octal mode (0644)"},
        "owner": {**_NAMES, "description": "allowed owners (names from the root's "
                                           "/etc/passwd, or uids)"},
        "group": {**_NAMES, "description": "allowed groups (names or gids)"},
        "contains": {**_PATTERNS, "description": "each pattern matches some line"},
        "not_contains": {**_PATTERNS, "description": "no line matches any of these"},
        "ignore_case": {"type": "boolean", "default": False,
                        "description": "patterns compare case-folded"},
    },
    "dependentSchemas": {"target": {"properties": {"state": {"const": "symlink"}},
                                    "required": ["state"]}},
}


class _Facts:
    """What holds (``good``) and what does not (``bad``) of the path, with the evidence of
    the lines that matched."""

    def __init__(self) -> None:
        self.good: list[str] = []
        self.bad: list[str] = []
        self.undecided: list[str] = []
        """Facts the budget did not let the matcher decide (an error unless another fact
        fails)."""
        self.evidence: list[Evidence] = []
        self.extra_bits = 0
        """Permission bits the inode has outside ``mode_max`` (what the fix removes)."""


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result for the path: every stated fact, and which ones do not hold."""
    host, p = ctx.host, ctx.params
    path = str(p["path"]).rstrip("/") or "/"
    state = str(p.get("state", "present"))
    icase = bool(p.get("ignore_case", False))
    try:
        want_in = [compile_pattern(x, ignore_case=icase) for x in p.get("contains") or ()]
        want_out = [compile_pattern(x, ignore_case=icase) for x in p.get("not_contains") or ()]
    except PatternError as exc:
        yield Result(Status.ERROR, path, f"pattern refused: {exc}")
        return
    expected = _expected(p)
    try:
        lst = host.lstat(path)
    except NotFound:
        lst = None
    except HostError as exc:
        yield Result(Status.ERROR, path, f"cannot examine {path}: {exc}", expected=expected)
        return
    if lst is None or state == "absent":
        yield _existence(path, state, lst, expected)
        return
    facts = _Facts()
    info = _link_facts(host, path, p, lst, facts)
    if info is not None:
        _inode_facts(host, p, info, facts)
    if want_in or want_out:
        try:
            text = host.read_text(path)
        except HostError as exc:
            yield Result(Status.ERROR, path, f"cannot read {path}: {exc}", expected=expected)
            return
        _content_facts(path, text, want_in, want_out, facts)
    yield _verdict(path, p, facts, expected)


def _existence(path: str, state: str, lst: os.stat_result | None, expected: str) -> Result:
    """The result when the path is absent, or when the rule wants it absent."""
    if lst is None:
        ok = state == "absent"
        return Result(Status.PASS if ok else Status.FAIL, path, f"{path} does not exist",
                      expected=expected, actual="absent", aspect=Aspect.CONFIG,
                      evidence=(Evidence.default(f"{path} (absent)"),),
                      remediation=None if ok else Remediation(f"Create {path} as the rule "
                                                              f"states ({expected})."))
    kind = "symlink" if st.S_ISLNK(lst.st_mode) else "file or directory"
    return Result(Status.FAIL, path, f"{path} exists ({kind})", expected=expected,
                  actual="present", aspect=Aspect.CONFIG, evidence=(Evidence.file(path),),
                  remediation=Remediation(f"Remove {path} (or move it aside) if nothing "
                                          "needs it."))


def _link_facts(host: Host, path: str, p: Any, lst: os.stat_result, facts: _Facts
                ) -> os.stat_result | None:
    """The symlink facts (where it resolves, inside the root only) and the inode the rest
    is about: the path's own, its target's, or ``None`` for a link that escapes the root,
    dangles or loops."""
    state = str(p.get("state", "present"))
    if not st.S_ISLNK(lst.st_mode):
        if state == "symlink":
            facts.bad.append("is not a symlink")
        return lst
    raw = host.readlink(path)
    info: os.stat_result | None
    try:
        resolved: str | None = host.resolve(path)
        info = host.stat(path)
        link_txt = f"symlink to {raw} (resolves to {resolved})"
    except PathEscape:
        resolved, info = None, None
        link_txt = f"symlink to {raw}, which escapes the root (not followed)"
    except (NotFound, SymlinkLoop, HostError) as exc:
        resolved, info = None, None
        link_txt = f"symlink to {raw}, dangling or looping ({exc})"
    facts.good.append(link_txt)
    if state == "symlink" and p.get("target") and resolved != p["target"].rstrip("/"):
        facts.bad.append(f"resolves to {resolved or 'nothing inside the root'}, not "
                         f"{p['target']}")
    if info is None and state in ("file", "directory"):
        facts.bad.append(f"is a {link_txt}")
    return info


def _names(host: Host, path: str, parse: Any) -> dict[int, str]:
    """``{id: name}`` of the root's passwd or group file (``{}`` when it cannot be read:
    ids are then shown as numbers)."""
    try:
        text = host.try_read_text(path) or ""
        rows = parse(text)[0]
    except Exception:  # HostError, ParseError: ids are then shown as numbers
        return {}
    return {r.uid if hasattr(r, "uid") else r.gid: r.name for r in rows}


def _allowed(value: int, names: dict[int, str], allowed: list[Any]) -> bool:
    """``value`` (an id) is one of ``allowed`` (ids, or names through ``names``)."""
    return any(a == value if isinstance(a, int) else a == names.get(value) for a in allowed)


def _inode_facts(host: Host, p: Any, info: os.stat_result, facts: _Facts) -> None:
    """Type, permission bits, owner and group of the inode."""
    state = str(p.get("state", "present"))
    if state == "file" and not st.S_ISREG(info.st_mode):
        facts.bad.append("is not a regular file")
    if state == "directory" and not st.S_ISDIR(info.st_mode):
        facts.bad.append("is not a directory")
    mode = st.S_IMODE(info.st_mode)
    facts.good.append(f"mode {mode:04o}")
    if p.get("mode_max"):
        limit = int(p["mode_max"], 8)
        if mode & ~limit:
            facts.extra_bits = mode & ~limit
            facts.bad.append(f"mode {mode:04o} has bits outside {limit:04o} "
                             f"({mode & ~limit:04o})")
    users = _names(host, "/etc/passwd", pw.parse_passwd)
    groups = _names(host, "/etc/group", pw.parse_group)
    owner = users.get(info.st_uid, str(info.st_uid))
    group = groups.get(info.st_gid, str(info.st_gid))
    facts.good.append(f"owner {owner}:{group}")
    if p.get("owner") and not _allowed(info.st_uid, users, p["owner"]):
        facts.bad.append(f"owner {owner} not in {', '.join(map(str, p['owner']))}")
    if p.get("group") and not _allowed(info.st_gid, groups, p["group"]):
        facts.bad.append(f"group {group} not in {', '.join(map(str, p['group']))}")


def _content_facts(path: str, text: str, want_in: list[Pattern], want_out: list[Pattern],
                   facts: _Facts) -> None:
    """Each ``contains`` pattern matches a line (its first match is evidence); no
    ``not_contains`` pattern matches one (its first match is evidence).  Every character
    of every line is searched (a line ends at a line feed), within one work budget for
    the rule: a pattern the budget cannot decide is undecided (an error result unless
    another fact fails: never a pass)."""
    budget = Budget()
    for pat, wanted in [*((x, True) for x in want_in), *((x, False) for x in want_out)]:
        try:
            hit = pat.first_line(text, budget)
        except TooCostly as exc:
            facts.undecided.append(f"whether a line matches {pat.source!r} (it needs {exc} "
                                   f"on this file of {len(text):,} characters)")
            continue
        if hit is None and wanted:
            facts.bad.append(f"no line matches {pat.source!r}")
        elif hit is not None:
            if not wanted:
                facts.bad.append(f"line {hit[0]} matches {pat.source!r}")
            facts.evidence.append(Evidence.file(path, hit[0], _excerpt(hit[1], pat)))


EXCERPT = 200
"""Characters of a matching line shown as evidence."""


def _excerpt(line: str, pat: Pattern) -> str:
    """The matching ``line`` as evidence: all of it when short, else its start and the
    part around the pattern's required literal (``alice ALL=(ALL) … NOPASSWD: ALL`` for a
    line padded with 70,000 spaces: the reader sees what matched)."""
    if len(line) <= EXCERPT:
        return line
    pos = pat.required_at(line)
    if pos < EXCERPT - 60:
        return line[:EXCERPT]
    return f"{line[:80].rstrip()} … {line[max(pos - 40, 80):pos + 80].lstrip()}"


def _verdict(path: str, p: Any, facts: _Facts, expected: str) -> Result:
    """PASS when every stated fact holds, else FAIL naming those that do not."""
    evidence = tuple(facts.evidence) or (Evidence.file(path),)
    actual = ", ".join(facts.good)
    undecided = "; ".join(facts.undecided)
    if facts.bad:  # a fact that fails decides, whatever the undecided ones would say
        unknown = f"; not decided: {undecided}" if undecided else ""
        fix = _remediation(path, p, facts.bad, facts.extra_bits)
        return Result(Status.FAIL, path, f"{path} {'; '.join(facts.bad)} ({actual}){unknown}",
                      expected=expected, actual=actual, aspect=Aspect.CONFIG,
                      evidence=evidence, remediation=fix)
    if undecided:
        return Result(Status.ERROR, path, f"{path}: cannot decide {undecided}; simplify "
                      "the pattern", expected=expected, actual=actual, aspect=Aspect.CONFIG,
                      evidence=evidence)
    return Result(Status.PASS, path, f"{path}: {actual}", expected=expected, actual=actual,
                  aspect=Aspect.CONFIG, evidence=evidence)


def _expected(p: dict[str, Any] | Any) -> str:
    """The rule's facts as the result's ``expected``."""
    parts = [str(p.get("state", "present"))]
    if p.get("target"):
        parts.append(f"-> {p['target']}")
    if p.get("mode_max"):
        parts.append(f"mode <= {p['mode_max']}")
    if p.get("owner"):
        parts.append(f"owner {'/'.join(map(str, p['owner']))}")
    if p.get("group"):
        parts.append(f"group {'/'.join(map(str, p['group']))}")
    parts += [f"has a line ~ {x!r}" for x in p.get("contains") or ()]
    parts += [f"no line ~ {x!r}" for x in p.get("not_contains") or ()]
    return ", ".join(parts)


_CLASSES = (("u", ((0o400, "r"), (0o200, "w"), (0o100, "x"), (0o4000, "s"))),
            ("g", ((0o40, "r"), (0o20, "w"), (0o10, "x"), (0o2000, "s"))),
            ("o", ((0o4, "r"), (0o2, "w"), (0o1, "x"), (0o1000, "t"))))
"""chmod(1)'s symbolic classes and the bits each letter names (``o-t``: the sticky bit)."""


def drop_bits(extra: int) -> str:
    """The symbolic chmod mode that removes the permission bits ``extra`` and nothing
    else (``0o022`` -> ``go-w``): a fix never grants a bit the file does not have, as an
    octal ``chmod 0640`` would to a file at ``0402``."""
    parts: dict[str, str] = {}
    for who, bits in _CLASSES:
        letters = "".join(letter for bit, letter in bits if extra & bit)
        if letters:
            parts[who] = letters
    groups: dict[str, str] = {}
    for who, letters in parts.items():  # classes that lose the same letters share a clause
        groups[letters] = groups.get(letters, "") + who
    return ",".join(f"{who}-{letters}" for letters, who in groups.items())


def _remediation(path: str, p: Any, bad: list[str], extra: int) -> Remediation:
    """chmod and chown commands for the mode and owner facts that do not hold; every
    value one shell word (``shlex.quote``: a path ``/srv/bob's data`` or an owner name
    with ``;`` is data, never code), ``--`` before an owner that starts with ``-``."""
    import shlex

    snippets = []
    if extra and any(b.startswith("mode ") for b in bad):
        snippets.append(Snippet.command(f"chmod {drop_bits(extra)} {shlex.quote(path)}",
                                        "drop the permission bits outside the allowed mode"))
    owner = next(iter(p.get("owner") or ()), None)
    group = next(iter(p.get("group") or ()), None)
    if any(b.startswith(("owner ", "group ")) for b in bad) and (owner is not None
                                                                  or group is not None):
        spec = f"{'' if owner is None else owner}{'' if group is None else f':{group}'}"
        dashes = "-- " if spec.startswith("-") else ""
        snippets.append(Snippet.command(f"chown {dashes}{shlex.quote(spec)} "
                                        f"{shlex.quote(path)}", "set the allowed owner"))
    return Remediation(f"Make {path} hold what the rule states: {'; '.join(bad)}.",
                       tuple(snippets))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``files.fact``."""
    return [CheckSpec(
        id="files.fact", title="A file of the host has the stated type, mode, owner and content",
        run=run, params_schema=SCHEMA,
        description=(
            "Looks at one path of the scanned root through the Host (symlinks followed "
            "inside the root only): exists / absent / regular file / directory / symlink "
            "resolving to a target; permission bits at most mode_max; owner and group among "
            "the allowed (names from the root's passwd and group); a line matching each "
            "'contains' pattern and none matching 'not_contains' (linear-time matcher: "
            "no backreferences or look-around)."),
    )]
