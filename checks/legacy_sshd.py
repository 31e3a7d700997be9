"""SSH daemon hardening: the effective ``sshd_config`` as sshd computes it.

``ssh.sshd_option`` compares any keyword's effective value with an expectation;
``ssh.sshd_kbdinteractive`` decides keyboard-interactive authentication together with
``UsePAM`` (with PAM it is password authentication under another name).  Both read the
configuration through :mod:`aiaudit.linux.sshd.config` (first value wins, ``Include`` re-rooted
under the scanned root, ``Match`` blocks, compiled-in defaults), report the global value
(what ``sshd -T`` prints) and, separately, each ``Match`` block that sets the keyword, since
a matching block overrides the global value for the connections it matches.
A configuration sshd would refuse is an error result naming file and line, not a guess.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

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
from aiaudit.core.errors import ParseError
from aiaudit.core.host import Host
from aiaudit.core.ruleset import predicates
from aiaudit.core.ruleset.predicates import Predicate
from aiaudit.linux.packages import dpkg
from aiaudit.linux.packages.installed import dpkg_version
from aiaudit.linux.sshd import config as sp
from aiaudit.linux.sshd.effective import (
    Passes,
    load_config,
    passes,
)

DROPIN = "/etc/ssh/sshd_config.d/00-aiaudit.conf"
"""Remediation drop-in.  sshd keeps the *first* value it reads and Debian's main file
includes ``sshd_config.d/*.conf`` on its first line, so a name that sorts first wins."""
RELOAD = Snippet.apply("sshd", "validate with sshd -t, then reload a running sshd (the "
                       "previous files come back when sshd refuses the new ones)")
"""Validate, then make the running daemon re-read its configuration: the bundle runs
``sshd -t -f /etc/ssh/sshd_config`` and reloads ``ssh.service`` (Debian) or
``sshd.service`` only when one runs."""

_VALUE = {"type": ["integer", "string"]}

OPTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["keyword"],
    "properties": {
        "keyword": {"type": "string", "minLength": 1, "pattern": "^[A-Za-z0-9]+$",
                    "description": "sshd_config keyword (any case; aliases allowed)"},
        # op/value, min/max, set and per-field expectations (aiaudit.core.ruleset.predicates);
        # values, bounds and elements as sshd accepts them (yes/no, times such as 5m)
        **predicates.schema_properties(_VALUE, bound=_VALUE),
        "fix": {"type": ["integer", "string"],
                "description": "value the remediation proposes (default: derived from op)"},
        "match_blocks": {"type": "boolean", "default": True,
                         "description": "also report each Match block that sets the keyword"},
    },
    **predicates.constraint_rules(),
}

KBD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "allow_second_factor": {
            "type": "boolean", "default": True,
            "description": "pass when AuthenticationMethods only allows keyboard-interactive "
                           "after another method (e.g. publickey,keyboard-interactive MFA)"},
    },
}














# ------------------------------------------------------------------ helpers
def version_note(host: Host) -> str:
    """A caveat when the scanned root's OpenSSH predates the semantics modelled here
    (OpenSSH 8.7 merged ChallengeResponseAuthentication into KbdInteractiveAuthentication
    and changed its default; the parser follows 9.x)."""
    full = dpkg_version(host, "openssh-server")
    if full is None:
        return ""
    up = dpkg.upstream_version(full)
    if dpkg.version_tuple(up) >= (8, 7):
        return ""
    return (f" Note: openssh-server {up} is older than 8.7; this result follows OpenSSH 9.x "
            "semantics (ChallengeResponseAuthentication was a separate option before 8.7).")


def _where(d: sp.Directive) -> str:
    return f"{d.file.lstrip('/')}:{d.line}"


def _evidence(s: sp.Setting) -> tuple[Evidence, ...]:
    if s.directive is not None:
        return (Evidence.file(s.directive.file, s.directive.line, s.directive.raw),)
    if s.entries:
        return tuple(Evidence.file(d.file, d.line, d.raw) for d in s.entries)
    return (Evidence.default(f"{s.default_note or 'compiled-in default'} of {s.option}"
                             + ("" if s.default_note else " (OpenSSH)"),
                             s.value if s.value is not None else "unset"),)


def block_subject(block: sp.MatchBlock) -> str:
    """The result subject for a Match block: ``Match User alice``, its criteria without file
    and line, so that a comment added above the block does not rename the result (the
    deciding line is in the evidence and message)."""
    return "Match " + " ".join(block.text.split())


def _error(exc: ParseError, subject: str = "sshd_config",
           what: str = "sshd would refuse this configuration") -> Result:
    ev: tuple[Evidence, ...] = ()
    if exc.source:
        ev = (Evidence.file(exc.source, exc.line),)
    return Result(Status.ERROR, subject, f"{what}: {exc}", aspect=Aspect.CONFIG, evidence=ev)


_BLOCK_ERROR = "sshd would drop connections matching this block (re-reading the " \
    "configuration for them fails)"


def normalise_param(kw: sp.Keyword, value: Any) -> Any:
    """A rule's expected value in the parser's canonical form (``No`` → ``no``,
    ``without-password`` → ``prohibit-password``, ``1m`` → ``60``)."""
    if isinstance(value, list):
        return [normalise_param(kw, v) for v in value]
    text = str(value)
    if kw.vtype == "choice":
        return sp.choice_value(kw, text) or text
    if kw.vtype == "time" and sp.convtime(text) >= 0:
        return sp.convtime(text)
    if kw.opt in sp.DERELATIVISED:  # `etc/issue` is the file sshd reads, /etc/issue
        return sp.absolute(sp.derelativise(kw.opt, text))
    return value


def suggest(op: str, value: Any) -> str | None:
    """A value that satisfies ``op value`` (``None``: no single value to propose)."""
    if op in ("eq", "le", "ge"):
        return str(value)
    if op == "in":
        return str(value[0] if isinstance(value, list) else value)
    if op in ("lt", "gt") and isinstance(value, int):
        return str(value - 1 if op == "lt" else value + 1)
    return None


def _with_dropin(cfg: sp.SshdConfig, text: str) -> sp.SshdConfig:
    """The configuration as sshd would read it with :data:`DROPIN` added (the other files
    are not read, split and validated again)."""
    return cfg.with_file(DROPIN, text)


def _with_main(cfg: sp.SshdConfig, text: str) -> sp.SshdConfig:
    """The configuration as sshd would read it with the main file's text replaced."""
    real_read = cfg.reader

    def read(path: str) -> str:
        return text if path == cfg.main else real_read(path)

    return sp.load(read, cfg.globber, cfg.main)


def _fixes(make: Callable[[], sp.SshdConfig], option: str,
           ok: Callable[[sp.Setting], bool]) -> bool:
    """True if the configuration ``make`` builds gives ``option`` an acceptable value."""
    try:
        return ok(make().value(option))
    except ParseError:
        return False


def remediation(cfg: sp.SshdConfig, setting: sp.Setting, line: str,
                ok: Callable[[sp.Setting], bool]) -> Remediation:
    """Fix for a failing global value: the drop-in when sshd would let it win, else an
    in-place edit of the main file (its global lines of the keyword commented out, the line
    inserted before the first ``Match``) when that wins, else the line to edit by hand and
    why.  Each is checked by re-evaluating the configuration with the fix applied."""
    d = setting.directive or (setting.entries[0] if setting.entries else None)
    reload = RELOAD
    wins = _fixes(lambda: _with_dropin(cfg, line + "\n"), setting.option, ok)
    if wins:
        also = f" (it then overrides {_where(d)})" if d is not None else ""
        return Remediation(
            f"Add `{line}` in {DROPIN}{also}; sshd keeps the first value it reads, and the "
            "main file includes sshd_config.d/*.conf before its own lines.",
            (Snippet.file(DROPIN, line + "\n", f"set {setting.option} (first value wins)"),
             reload))
    why = _why_dropin_loses(cfg, d)
    from aiaudit.core import edits  # the in-place edit: only when no drop-in can win

    op = edits.set_directive_op(line)
    if edits.valid(op) and (d is None or d.block is None):
        try:
            main = cfg.reader(cfg.main)
        except Exception:  # the reader's own error: no edit can be proven
            main = None
        if main is not None and _fixes(lambda: _with_main(cfg, edits.apply(op, main)),
                                       setting.option, ok):
            return Remediation(
                f"A drop-in would not take effect ({why}): edit {cfg.main} in place "
                f"(backed up first): comment out its global {setting.option} lines and "
                f"insert `{line}` before the first Match block.",
                (Snippet.edit(cfg.main, op, f"set {setting.option} in the main file"),
                 reload))
    target = f"change {_where(d)} to `{line}`" if d is not None else f"add `{line}` to " \
        f"{sp.MAIN_CONFIG} before any Match block"
    return Remediation(f"A drop-in would not take effect ({why}): {target}.", (reload,),
                       manual=target[0].upper() + target[1:] + ".")


def _why_dropin_loses(cfg: sp.SshdConfig, d: sp.Directive | None) -> str:
    if d is not None and d.block is not None:
        return (f"{_where(d)} is inside `Match {d.block.text}`, which overrides global "
                "values")
    incs = [i for i in cfg.includes if i.block is None and any(
        sp.glob_matches(sp.include_pattern(p), DROPIN) for p in i.patterns)]
    if not incs:
        return f"{sp.MAIN_CONFIG} has no Include of /etc/ssh/sshd_config.d/*.conf"
    if d is not None and d.file == cfg.main and not d.include_chain:
        inc = incs[0]
        if inc.file == cfg.main and inc.line > d.line:
            return (f"the Include at {inc.file.lstrip('/')}:{inc.line} comes after the "
                    f"deciding line {_where(d)}")
    if d is not None:
        return f"{_where(d)} is read before it"
    return "another file read earlier decides"




def evaluate(cfg: sp.SshdConfig | Passes, keyword: str, match_blocks: bool
             ) -> Iterator[tuple[sp.MatchBlock | None, sp.Setting | ParseError]]:
    """The global setting, then (optionally) the setting for a connection matching each
    Match block (other than ``Match all``) whose own lines decide the keyword."""
    shared = cfg if isinstance(cfg, Passes) else Passes(cfg)
    yield None, shared.value(keyword)
    if not match_blocks:
        return
    opt = sp.KEYWORDS[keyword.lower()].opt
    for block in dict.fromkeys(shared.config.blocks):  # a file included twice repeats its blocks
        if block.is_all or not block.can_match:  # `Match User !root` matches nobody
            continue
        try:
            s = shared.value(keyword, block)
        except ParseError as exc:
            yield block, exc
            continue
        d = s.directive or (s.entries[0] if s.entries else None)
        if d is not None and d.block is not None and not d.block.is_all \
                and d.keyword.opt == opt:
            yield block, s


# ------------------------------------------------------------------ ssh.sshd_option
def run_option(ctx: CheckContext) -> Iterator[Result]:
    """Compare one keyword's effective value (global and per Match block)."""
    p = ctx.params
    kw = sp.KEYWORDS.get(str(p["keyword"]).lower())
    deprecated = kw is not None and kw.vtype == "ignore"  # Protocol, UseLogin...
    if kw is None or (kw.cls == sp.SPECIAL and not deprecated):
        yield Result(Status.ERROR, str(p["keyword"]),
                     f"{p['keyword']!r} is not an sshd_config keyword this check can evaluate")
        return
    name = kw.name if deprecated else sp.OPTIONS[kw.opt].name
    loaded = load_config(ctx.host)
    if loaded.skip:
        yield Result(Status.SKIP, name, loaded.skip)
        return
    if loaded.config is None:
        assert loaded.error is not None
        yield _error(loaded.error, name)
        return
    cfg = loaded.config
    note = version_note(ctx.host)
    try:
        pred = Predicate.from_params(p, lambda v: normalise_param(kw, v))
    except ValueError as exc:  # a bound that is not a number (nor a time)
        yield Result(Status.ERROR, name, f"{name}: {exc}")
        return
    if deprecated:  # judged on what sshd does (checks/_sshd_deprecated.py)
        from aiaudit.linux.sshd import deprecated as _sshd_deprecated

        yield from _sshd_deprecated.results(cfg, kw, pred, note, RELOAD)
        return
    want_txt = pred.text()

    def ok(s: sp.Setting) -> bool:
        try:
            return s.value is not None and pred.ok(s.value)
        except ValueError:  # not a number under a range: cannot hold
            return False

    fix_value = str(p["fix"]) if "fix" in p else pred.suggest(
        cfg.value(name).value if pred.fields is not None or
         any(k in p for k in predicates.SET_KEYS) else None)
    try:
        results = list(evaluate(passes(ctx.host, cfg), name,
                                bool(p.get("match_blocks", True))))
    except ParseError as exc:
        yield _error(exc, name)
        return
    global_value = None
    for block, s in results:
        subject = name if block is None else block_subject(block)
        if isinstance(s, ParseError):
            yield _error(s, subject, _BLOCK_ERROR)
            continue
        if block is None:
            global_value = s.value
        where = s.source
        shown = s.value if s.value is not None else "unset"
        if ok(s):
            msg = f"{name} is {shown} ({where})"
            if block is not None:
                msg = f"for connections matching this block {msg}"
            yield Result(Status.PASS, subject, msg + note, expected=want_txt, actual=s.value,
                         aspect=Aspect.CONFIG, evidence=_evidence(s), data=s.as_json())
            continue
        if block is None:
            msg = f"{name} is {shown} ({where}); expected {want_txt}"
            if fix_value is not None:
                rem = remediation(cfg, s, f"{name} {fix_value}", ok)
            else:
                how = f"Set {name} so that it is {want_txt} (the first value sshd reads " \
                    f"wins; now decided by {where})."
                rem = Remediation(how, (RELOAD,), manual=how)
        else:
            msg = (f"connections matching this block get {name} {shown} ({where}) "
                   f"whatever the global value (now {global_value}); expected {want_txt}")
            target = f"`{name} {fix_value}`" if fix_value is not None else want_txt
            how = (f"Change {where} to {target} or remove it: a matching Match block "
                   "overrides every global value, so a drop-in cannot fix it.")
            rem = Remediation(how, (RELOAD,), manual=how)
        yield Result(Status.FAIL, subject, msg + note, expected=want_txt, actual=s.value,
                     aspect=Aspect.CONFIG, evidence=_evidence(s), remediation=rem,
                     data=s.as_json())


# ------------------------------------------------------------------ ssh.sshd_kbdinteractive
def _second_factor_only(methods: str) -> bool:
    """True if every AuthenticationMethods list that offers keyboard-interactive also needs
    a method other than passwords (``publickey,keyboard-interactive``)."""
    if methods in ("any", ""):
        return False
    for lst in methods.split():
        names = {m.split(":", 1)[0] for m in lst.split(",")}
        if "keyboard-interactive" in names and names <= {"keyboard-interactive", "password"}:
            return False
    return True


def run_kbd(ctx: CheckContext) -> Iterator[Result]:
    """Keyboard-interactive authentication is off, or harmless (no PAM, or only a second
    factor after a key)."""
    subject = "KbdInteractiveAuthentication"
    loaded = load_config(ctx.host)
    if loaded.skip:
        yield Result(Status.SKIP, subject, loaded.skip)
        return
    if loaded.config is None:
        assert loaded.error is not None
        yield _error(loaded.error, subject)
        return
    cfg = loaded.config
    note = version_note(ctx.host)
    allow_2fa = bool(ctx.params.get("allow_second_factor", True))
    shared = passes(ctx.host, cfg)
    try:
        pam = shared.value("UsePAM")
        items = list(evaluate(shared, subject, True))
    except ParseError as exc:
        yield _error(exc, subject)
        return
    want = "no (or UsePAM no)"
    for block, s in items:
        name = subject if block is None else block_subject(block)
        if isinstance(s, ParseError):
            yield _error(s, name, _BLOCK_ERROR)
            continue
        methods = shared.value("AuthenticationMethods", block)
        ev = (*_evidence(s), *_evidence(pam))
        if s.value == "no":
            yield Result(Status.PASS, name, f"keyboard-interactive authentication is off "
                         f"({s.source}){note}", expected=want, actual="no", aspect=Aspect.CONFIG,
                         evidence=ev)
            continue
        if pam.value != "yes":
            yield Result(Status.PASS, name, f"KbdInteractiveAuthentication is yes ({s.source})"
                         f" but UsePAM is {pam.value} ({pam.source}): no PAM conversation "
                         f"can ask for a password{note}", expected=want, actual="yes",
                         aspect=Aspect.CONFIG, evidence=ev)
            continue
        if allow_2fa and methods.value and _second_factor_only(methods.value):
            yield Result(Status.PASS, name, "keyboard-interactive is only a further factor "
                         f"(AuthenticationMethods {methods.value}, {methods.source}){note}",
                         expected=want, actual="yes", aspect=Aspect.CONFIG,
                         evidence=(*ev, *_evidence(methods)))
            continue
        msg = (f"KbdInteractiveAuthentication is yes ({s.source}) with UsePAM yes "
               f"({pam.source}): PAM asks for the password over keyboard-interactive, so "
               "password logins work even with PasswordAuthentication no")
        if block is None:
            rem = remediation(cfg, s, f"{subject} no", lambda x: x.value == "no")
        else:
            msg = f"connections matching this block: {msg}"
            how = (f"Change {s.source} to `{subject} no`: a matching Match block "
                   "overrides global values.")
            rem = Remediation(how, (RELOAD,), manual=how)
        yield Result(Status.FAIL, name, msg + note, expected=want, actual="yes",
                     aspect=Aspect.CONFIG, evidence=ev, remediation=rem)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register the sshd checks."""
    return [
        CheckSpec(
            id="ssh.sshd_option",
            title="An sshd_config keyword has the expected effective value",
            run=run_option,
            params_schema=OPTION_SCHEMA,
            description=(
                "Computes the effective sshd configuration as OpenSSH does: "
                "/etc/ssh/sshd_config and its Includes (globs in byte order, relative to "
                "/etc/ssh, re-rooted under --root), the first value read wins, accumulating "
                "keywords, aliases, compiled-in defaults.  Reports the global value (what "
                "`sshd -T` prints) and each Match block that sets the keyword.  A "
                "configuration sshd would refuse is an error naming file:line."),
        ),
        CheckSpec(
            id="ssh.sshd_kbdinteractive",
            title="Keyboard-interactive authentication cannot be used for passwords",
            run=run_kbd,
            params_schema=KBD_SCHEMA,
            description=(
                "With UsePAM yes, keyboard-interactive authentication runs the PAM auth "
                "stack, which asks for the password (sshd_config(5) UsePAM): a password "
                "login path even when PasswordAuthentication is no.  Passes when it is off, "
                "when UsePAM is no, or (optionally) when AuthenticationMethods only allows "
                "it after another method."),
        ),
    ]
