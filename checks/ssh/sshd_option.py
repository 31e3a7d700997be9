"""``ssh.sshd_option``: an sshd_config keyword has the expected effective value.

Gather: the configuration as sshd computes it (:mod:`aiaudit.linux.sshd.config`: first
value wins, ``Include`` re-rooted under the scanned root, ``Match`` blocks, compiled-in
defaults of the installed release), parsed once per run and shared
(:mod:`aiaudit.linux.sshd.effective`).  Decide: the rule's expectation
(:mod:`aiaudit.core.ruleset.predicates`, values normalised as sshd reads them) on the
global value (what ``sshd -T`` prints) and, separately, on each ``Match`` block that sets
the keyword, since a matching block overrides the global value for the connections it
matches (:func:`aiaudit.linux.sshd.results.evaluate`).  Deprecated keywords (``Protocol``,
``UsePrivilegeSeparation``...) are judged on what sshd does
(:mod:`aiaudit.linux.sshd.deprecated`).  The fix is a drop-in when sshd would let it win,
else the edit that does (:mod:`aiaudit.linux.sshd.fix`).  A configuration sshd would refuse
is an error result naming file and line, not a guess.

Sources: sshd_config(5); openssh-portable ``servconf.c``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Status,
    hookimpl,
)
from aiaudit.core.errors import ParseError
from aiaudit.core.ruleset import predicates
from aiaudit.core.ruleset.predicates import Predicate
from aiaudit.linux.sshd import keywords
from aiaudit.linux.sshd.effective import Passes, load_config, passes
from aiaudit.linux.sshd.fix import RELOAD, remediation
from aiaudit.linux.sshd.results import (
    BLOCK_ERROR,
    block_subject,
    disabled_by,
    error_result,
    evaluate,
    evidence,
    version_note,
)

if TYPE_CHECKING:  # the parser is imported once there is a configuration to parse
    from aiaudit.linux.sshd import config as sp

_VALUE = {"type": ["integer", "string"]}
_ORDERED = predicates.ordered_value(
    [{"type": "string", "pattern": "^\\s*([0-9]+[sSmMhHdDwW]?)+\\s*$"}],
    "a number or a time such as 5m (sshd_config(5) TIME FORMATS)")

OPTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["keyword"],
    "properties": {
        "keyword": {"type": "string", "minLength": 1, "pattern": "^[A-Za-z0-9]+$",
                    "description": "sshd_config keyword (any case; aliases allowed)"},
        # op/value, min/max, set and per-field expectations (aiaudit.core.ruleset.predicates);
        # values, bounds and elements as sshd accepts them (yes/no, times such as 5m)
        **predicates.schema_properties(_VALUE, bound=_VALUE, ordered=_ORDERED),
        "fix": {"type": ["integer", "string"],
                "description": "value the remediation proposes (default: derived from op)"},
        "match_blocks": {"type": "boolean", "default": True,
                         "description": "also report each Match block that sets the keyword"},
    },
    **predicates.constraint_rules(ordered=_ORDERED),
}


def normalise_param(kw: keywords.Keyword, value: Any) -> Any:
    """A rule's expected value in the parser's canonical form (``No`` → ``no``,
    ``without-password`` → ``prohibit-password``, ``1m`` → ``60``)."""
    from aiaudit.linux.sshd import config as sp  # loaded: the configuration was parsed

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


# ------------------------------------------------------------------ decide
class Judge:
    """One rule's expectation on a keyword, and the results it gives each setting."""

    def __init__(self, cfg: sp.SshdConfig, name: str, pred: Predicate,
                 fix_value: str | None, note: str) -> None:
        self.cfg, self.name, self.pred = cfg, name, pred
        self.fix_value, self.note = fix_value, note
        self.shared: sp.SshdConfig | Passes = cfg
        """The run's shared passes, once :func:`_judged` has them."""
        self.want = pred.text()

    def ok(self, s: sp.Setting) -> bool:
        """True if ``s`` has a value the rule accepts."""
        try:
            return s.value is not None and self.pred.ok(s.value)
        except ValueError:  # not a number under a range: cannot hold
            return False

    def result(self, block: sp.MatchBlock | None, s: sp.Setting,
               global_value: str | None, off: sp.Setting | None = None) -> Result:
        """The result for the global setting (``block`` ``None``) or a Match block's;
        ``off``: the ``DisableForwarding yes`` that turns this forwarding off anyway."""
        name = self.name
        subject = name if block is None else block_subject(block)
        shown = s.value if s.value is not None else "unset"
        if off is not None and not self.ok(s) and self.pred.ok("no"):
            msg = (f"{name} is {shown} ({s.source}), but DisableForwarding yes "
                   f"({off.source}) turns it off")
            return Result(Status.PASS, subject, msg + self.note, expected=self.want,
                          actual="no", aspect=Aspect.CONFIG,
                          evidence=evidence(s) + evidence(off), data=s.as_json())
        if self.ok(s):
            msg = f"{name} is {shown} ({s.source})"
            if block is not None:
                msg = f"for connections matching this block {msg}"
            return Result(Status.PASS, subject, msg + self.note, expected=self.want,
                          actual=s.value, aspect=Aspect.CONFIG, evidence=evidence(s),
                          data=s.as_json())
        if block is None:
            msg = f"{name} is {shown} ({s.source}); expected {self.want}"
            rem = self.global_fix(s)
        else:
            msg = (f"connections matching this block get {name} {shown} ({s.source}) "
                   f"whatever the global value (now {global_value}); expected {self.want}")
            rem = self.block_fix(s)
        ev, data = _with_overridden(self.shared, self.name, block, evidence(s), s.as_json())
        return Result(Status.FAIL, subject, msg + self.note, expected=self.want,
                      actual=s.value, aspect=Aspect.CONFIG, evidence=ev,
                      remediation=rem, data=data)

    def global_fix(self, s: sp.Setting) -> Remediation:
        """The checked drop-in or edit for a failing global value, or what to set by hand
        when no single value can be proposed."""
        if self.fix_value is not None:
            return remediation(self.cfg, s, f"{self.name} {self.fix_value}", self.ok)
        how = f"Set {self.name} so that it is {self.want} (the first value sshd reads " \
            f"wins; now decided by {s.source})."
        return Remediation(how, (RELOAD,), manual=how)

    def block_fix(self, s: sp.Setting) -> Remediation:
        """A Match block overrides every global value: only its own line can change."""
        target = f"`{self.name} {self.fix_value}`" if self.fix_value is not None \
            else self.want
        how = (f"Change {s.source} to {target} or remove it: a matching Match block "
               "overrides every global value, so a drop-in cannot fix it.")
        return Remediation(how, (RELOAD,), manual=how)


def _with_overridden(cfg: sp.SshdConfig | Passes, name: str, block: sp.MatchBlock | None,
                     ev: tuple[Evidence, ...], data: dict[str, object]
                     ) -> tuple[tuple[Evidence, ...], dict[str, object]]:
    """A failure's evidence and data with the lines its deciding line overrode (sshd
    keeps the first value; a matching block replaces the global one), each saying why."""
    from aiaudit.linux.sshd import shadowed

    lost = shadowed.overridden(cfg, name, block)
    if not lost:
        return ev, data
    return ev + shadowed.evidence(lost), {**data, "overridden": shadowed.data(lost)}


def fix_value(p: Mapping[str, Any], cfg: sp.SshdConfig, name: str,
              pred: Predicate) -> str | None:
    """The value the remediation proposes: the rule's ``fix``, else one derived from the
    expectation (changing as little of the current value as possible for per-field and
    set expectations); ``None`` when no single value can be proposed."""
    if "fix" in p:
        return str(p["fix"])
    partial = pred.fields is not None or any(k in p for k in predicates.SET_KEYS)
    return pred.suggest(cfg.value(name).value if partial else None)


# ------------------------------------------------------------------ results
def run_option(ctx: CheckContext) -> Iterator[Result]:
    """Compare one keyword's effective value (global and per Match block)."""
    p = ctx.params
    kw = keywords.KEYWORDS.get(str(p["keyword"]).lower())
    deprecated = kw is not None and kw.vtype == "ignore"  # Protocol, UseLogin...
    if kw is None or (kw.cls == keywords.SPECIAL and not deprecated):
        yield Result(Status.ERROR, str(p["keyword"]),
                     f"{p['keyword']!r} is not an sshd_config keyword this check can evaluate")
        return
    name = kw.name if deprecated else keywords.OPTIONS[kw.opt].name
    loaded = load_config(ctx.host)
    if loaded.skip:
        yield Result(Status.SKIP, name, loaded.skip)
        return
    if loaded.config is None:
        assert loaded.error is not None
        yield error_result(loaded.error, name)
        return
    cfg = loaded.config
    note = version_note(ctx.host)
    try:
        pred = Predicate.from_params(p, lambda v: normalise_param(kw, v))
    except ValueError as exc:  # a bound that is not a number (nor a time)
        yield Result(Status.ERROR, name, f"{name}: {exc}")
        return
    if deprecated:  # judged on what sshd does
        from aiaudit.linux.sshd import deprecated as sshd_deprecated

        yield from sshd_deprecated.results(cfg, kw, pred, note)
        return
    yield from _judged(ctx, cfg, name, Judge(cfg, name, pred, fix_value(p, cfg, name, pred),
                                             note))


def _judged(ctx: CheckContext, cfg: sp.SshdConfig, name: str, judge: Judge
            ) -> Iterator[Result]:
    """The global result, then one per Match block that sets the keyword."""
    shared = passes(ctx.host, cfg)
    judge.shared = shared
    try:
        settings = list(evaluate(shared, name, bool(ctx.params.get("match_blocks", True))))
    except ParseError as exc:
        yield error_result(exc, name)
        return
    global_value = None
    for block, s in settings:
        if isinstance(s, ParseError):
            yield error_result(s, name if block is None else block_subject(block),
                               BLOCK_ERROR)
            continue
        if block is None:
            global_value = s.value
        yield judge.result(block, s, global_value, disabled_by(shared, name, block))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``ssh.sshd_option``."""
    return [CheckSpec(
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
    )]
