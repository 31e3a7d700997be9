# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Frozen data model shared by checks, the runner and reporters.

Data flows one way: a check yields :class:`Result` objects; the runner turns each into a
:class:`Finding` (rule id, severity, waiver applied) and collects them in one
:class:`RunResult`, which every reporter renders.  Nothing here does I/O.
"""

from __future__ import annotations

import enum
from dataclasses import field
from typing import Any, Mapping

from aiaudit.core.errors import NotFound
from aiaudit.core.startup.records import record


class Status(str, enum.Enum):
    """Outcome of one rule for one subject."""

    PASS = "pass"
    """The host is as the rule expects."""
    FAIL = "fail"
    """The host is not as the rule expects."""
    ERROR = "error"
    """The rule could not be evaluated (unreadable file, invalid config, timeout...)."""
    SKIP = "skip"
    """The rule does not apply to this host (the reason is the message)."""
    WAIVED = "waived"
    """A failure covered by a valid waiver; it does not fail the gate."""

    def __str__(self) -> str:
        return self.value


class Severity(str, enum.Enum):
    """How bad a failed rule is.  Set by the ruleset, never by a check."""

    INFO = "info"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        """0 for info up to 4 for critical; used for thresholds and sorting."""
        return _SEVERITY_RANK[self]

    def __str__(self) -> str:
        return self.value


_SEVERITY_RANK = {s: i for i, s in enumerate(Severity)}

SEVERITIES: tuple[str, ...] = tuple(s.value for s in Severity)
"""The severity names in ascending order."""

IMAGE_KINDS: tuple[str, ...] = ("bootable", "stateless", "container")
"""The kinds of scanned root (:attr:`HostInfo.image_kind`, ``--image-kind``)."""


class Aspect(str, enum.Enum):
    """Which side of a setting a result is about.

    ``runtime`` is the state the kernel/daemon has now, ``persisted`` is what the
    configuration will produce at the next boot, and ``drift`` is a disagreement between
    the two (right now but reverts at reboot, or configured but not applied).
    """

    RUNTIME = "runtime"
    PERSISTED = "persisted"
    DRIFT = "drift"
    CONFIG = "config"

    def __str__(self) -> str:
        return self.value


@record
class Evidence:
    """Where a value came from: a file and line, or a /proc, /sys path or command.

    ``source`` is the display form: ``etc/sysctl.d/10-x.conf:3`` for a file under the scanned
    root (relative, like a SARIF artifact), ``/proc/sys/vm/swappiness`` for live state.
    """

    source: str
    """Display form of the location (``path`` or ``path:line``)."""
    value: str | None = None
    """The raw value or line text found there."""
    path: str | None = None
    """The path as seen on the audited host (absolute), when it is a file."""
    line: int | None = None
    """1-based line number in ``path``."""
    kind: str = "file"
    """``file`` (a config file), ``runtime`` (/proc, /sys), ``command`` or ``default``."""

    @classmethod
    def file(cls, path: str, line: int | None = None, value: str | None = None) -> Evidence:
        """Evidence for a config file on the audited host (``path`` absolute)."""
        rel = path.lstrip("/")
        source = f"{rel}:{line}" if line is not None else rel
        return cls(source=source, value=value, path=path, line=line, kind="file")

    @classmethod
    def runtime(cls, path: str, value: str | None = None) -> Evidence:
        """Evidence for live kernel state read from ``path`` (``/proc/...``, ``/sys/...``)."""
        return cls(source=path, value=value, path=path, kind="runtime")

    @classmethod
    def command(cls, argv: str, value: str | None = None) -> Evidence:
        """Evidence from a command run on the live host."""
        return cls(source=argv, value=value, kind="command")

    @classmethod
    def default(cls, what: str, value: str | None = None) -> Evidence:
        """Evidence that a compiled-in or documented default decided."""
        return cls(source=what, value=value, kind="default")

    @classmethod
    def unreadable(cls, exc: Exception) -> tuple[Evidence, ...]:
        """The path a read failed on, as the evidence of the error result it causes: a live
        ``/proc`` or ``/sys`` path as ``runtime``, a file that exists (too large, not a
        regular file, refused) as ``file``, a file that does not as a ``default`` naming it
        (never a location to link to).  ``()`` when the error names no path."""
        path = getattr(exc, "path", None)
        if not path:
            return ()
        reason = str(exc)
        reason = reason[len(path) + 2:] if reason.startswith(f"{path}: ") else reason
        if path.startswith(("/proc/", "/sys/")):
            return (cls.runtime(path, reason),)
        if isinstance(exc, NotFound):
            return (cls.default(path.lstrip("/"), reason),)
        return (cls.file(path, value=reason),)


class SnippetKind(str, enum.Enum):
    """What a :class:`Snippet` does (a ``str`` enum: ``kind == "file"`` holds, and the JSON
    report carries the value)."""

    FILE = "file"
    """Write :attr:`Snippet.content` to :attr:`Snippet.path`, with :attr:`Snippet.mode`."""
    ENABLE = "enable"
    """Make unit ``content`` start at boot (``systemctl enable``, also offline with
    ``--root``)."""
    MASK = "mask"
    """Make unit ``content`` never start (``systemctl mask``)."""
    EDIT = "edit"
    """Apply the in-place edit ``content`` (an operation of :mod:`aiaudit.core.edits`) to
    the file ``path``."""
    APPLY = "apply"
    """Make the running service take the installed files, the guarded way the bundle knows:
    ``sshd`` validates with ``sshd -t`` and reloads, ``nftables PORTS`` loads the ruleset
    with a timed rollback."""
    COMMAND = "command"
    """Run the shell command ``content`` now."""

    def __str__(self) -> str:
        return self.value


DEFAULT_FILE_MODE = 0o644
"""The mode a file snippet is installed with unless it says otherwise."""


def merged_mode(a: int, b: int) -> int:
    """The mode of one file that two file snippets both write: only the permissions both
    give (a file one fix keeps private stays private when another fix adds lines to it)."""
    return a & b


@record
class Snippet:
    """One piece of a fix: a file to drop in, or a command to run now."""

    kind: SnippetKind
    """What the snippet does (see :class:`SnippetKind`)."""
    content: str
    """File content, unit name, edit operation, apply target, or the shell command."""
    path: str | None = None
    """Target path on the host for ``file`` and ``edit`` snippets."""
    description: str = ""
    """One line saying what the snippet does."""
    mode: int = DEFAULT_FILE_MODE
    """The file mode a ``file`` snippet is installed with (permission bits, e.g.
    ``0o600``); other kinds ignore it."""

    def shell(self) -> str:
        """What a person would type for a non-file snippet (shown in reports; the bundle
        runs its own guarded version of ``edit`` and ``apply``)."""
        if self.kind in (SnippetKind.ENABLE, SnippetKind.MASK):
            return f"systemctl {self.kind} {self.content.strip()}"
        if self.kind == SnippetKind.EDIT:
            return f"# edit {self.path} in place: {self.content}"
        if self.kind == SnippetKind.APPLY and self.content == "sshd":
            return "sshd -t && systemctl reload ssh"
        if self.kind == SnippetKind.APPLY:
            return ("nft -c -f /etc/nftables.conf && nft -f /etc/nftables.conf  "
                    "# aiaudit remediate: with a timed rollback")
        return self.content

    @classmethod
    def file(cls, path: str, content: str, description: str = "", *,
             mode: int = DEFAULT_FILE_MODE) -> Snippet:
        """A drop-in file to install at ``path`` with ``mode`` (``0o644`` unless said)."""
        return cls(kind=SnippetKind.FILE, content=content, path=path, description=description,
                   mode=mode)

    @classmethod
    def enable(cls, unit: str, description: str = "") -> Snippet:
        """Enable systemd unit ``unit`` (a persisted fix: it starts at every boot)."""
        return cls(kind=SnippetKind.ENABLE, content=unit, description=description)

    @classmethod
    def mask(cls, unit: str, description: str = "") -> Snippet:
        """Mask systemd unit ``unit`` (a persisted fix: it never starts)."""
        return cls(kind=SnippetKind.MASK, content=unit, description=description)

    @classmethod
    def edit(cls, path: str, op: str, description: str = "") -> Snippet:
        """Edit the file at ``path`` in place with operation ``op`` (see
        :mod:`aiaudit.core.edits`)."""
        return cls(kind=SnippetKind.EDIT, content=op, path=path, description=description)

    @classmethod
    def apply(cls, target: str, description: str = "") -> Snippet:
        """Make a running service take the installed configuration (``sshd``, or
        ``nftables PORTS`` with the TCP ports an SSH session may use)."""
        return cls(kind=SnippetKind.APPLY, content=target, description=description)

    @classmethod
    def command(cls, content: str, description: str = "") -> Snippet:
        """A command that fixes the running state now."""
        return cls(kind=SnippetKind.COMMAND, content=content, description=description)


@record
class Remediation:
    """How to fix a failing result."""

    summary: str
    snippets: tuple[Snippet, ...] = ()
    manual: str = ""
    """A step the snippets cannot do and a person must (e.g. "remove elevator= from the
    tuned profile"); empty when applying the snippets is the whole fix."""
    followup: str = ""
    """A step after applying the snippets that makes configuration they already fix take
    effect (regenerate the bootloader configuration, reboot): the persisted configuration
    is right once the snippets are in place, unlike :attr:`manual`."""
    provisioner: str = ""
    """What only the provisioner that boots a stateless image can change (the kernel
    command line it passes: Warewulf, xCAT, a PXE configuration), and how; empty when the
    fix is the scanned root's own.  The snippets install nothing for it (a runtime command
    may fix a running node now): a fix bundle lists it "for the provisioner"."""


@record
class Result:
    """What a check found for one subject.  Checks never set severity: the rule does."""

    status: Status
    subject: str
    """What the result is about: a sysctl key, a device, a user, a file..."""
    message: str
    """One human sentence; for ``skip`` the reason, for ``error`` what went wrong."""
    expected: str | None = None
    actual: str | None = None
    aspect: Aspect | None = None
    evidence: tuple[Evidence, ...] = ()
    remediation: Remediation | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    """Extra machine-readable facts (JSON-serialisable), e.g. per-field comparison."""


def error_result(message: str, subject: str = "-") -> Result:
    """An ``error`` result (the rule could not be evaluated)."""
    return Result(status=Status.ERROR, subject=subject, message=message)


@record
class Waiver:
    """An accepted exception for a rule (and optionally subject/host patterns)."""

    rule: str
    reason: str
    owner: str
    expires: str
    """ISO date (YYYY-MM-DD); the waiver stops applying after that day."""
    subject: str | None = None
    host: str | None = None
    source: str = ""
    """Where the waiver was declared (file:line)."""


@record
class Finding:
    """A :class:`Result` bound to the rule that produced it."""

    rule_id: str
    check: str
    severity: Severity
    title: str
    result: Result
    waiver: Waiver | None = None

    @property
    def status(self) -> Status:
        """The effective status (``waived`` when a waiver applied to a failure)."""
        return Status.WAIVED if self.waiver is not None else self.result.status


@record
class HostInfo:
    """Identity of the scanned host or image."""

    hostname: str
    machine_id: str | None
    os_name: str | None
    os_version: str | None
    os_id: str | None
    kernel: str | None
    root: str
    mode: str
    """``live`` or ``offline``."""
    product_uuid: str | None = None
    image_id: str | None = None
    """Display form of the image the root was built from (name, version and build)."""
    image_name: str | None = None
    """The image's name without version or build (``IMAGE_ID``): stable across builds, so
    it names the scan in SARIF categories, JUnit class names and metric labels."""
    image_version: str | None = None
    """The image's version (``IMAGE_VERSION``, a build serial...)."""
    image_build: str | None = None
    """The image's build id (``BUILD_ID``)."""
    os_release_path: str | None = None
    """The ``os-release`` file that was read (``/etc/os-release`` or
    ``/usr/lib/os-release``), when the root has one."""
    image_kind: str | None = None
    """What the scanned root is (:data:`IMAGE_KINDS`): ``bootable`` (a host that boots
    with its own boot loader), ``stateless`` (an image a provisioner boots: init, but the
    kernel command line comes from the provisioner) or ``container`` (no init, no kernel);
    ``None`` in reports saved before it was recorded."""
    image_kind_reason: str | None = None
    """What decided :attr:`image_kind` (the files found, or ``--image-kind``)."""


@record
class RuleInfo:
    """The descriptive part of a rule, as reporters need it."""

    id: str
    check: str
    severity: Severity
    title: str
    rationale: str = ""
    references: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    description: str = ""
    """What the bound check does (from the check spec)."""
    remediation: str = ""
    """Generic fix text from the ruleset, shown when a result carries none."""


@record
class RunResult:
    """Everything one scan produced; the single input of every reporter."""

    tool_version: str
    run_id: str
    started: str
    """UTC start time, RFC 3339."""
    duration_s: float
    host: HostInfo
    ruleset: str
    ruleset_version: str
    rules: tuple[RuleInfo, ...]
    findings: tuple[Finding, ...]
    fail_on: Severity = Severity.HIGH
    notices: tuple[str, ...] = ()
    """Run-level remarks (expired or unused waivers, deadline reached...)."""
    training_user: str | None = None
    """The training user the limits rules judged (``None``: none was known)."""
    training_user_source: str | None = None
    """Where :attr:`training_user` came from: ``--user``, ``$SUDO_USER``,
    ``$SLURM_JOB_USER`` or ``ruleset settings.user``."""
    scan_counts: Mapping[str, Mapping[str, int]] | None = None
    """Counts per severity and status of the whole scan when :attr:`findings` is a subset
    (``--changes-since``/``--state`` show only changes); ``None`` when they are the whole
    scan.  The exit code is computed from the whole scan, so reports show these totals."""
    ruleset_source: str = ""
    """Which file the ruleset came from: ``aiaudit.rulesets/NAME.yaml`` for a shipped one, a
    plugin's origin, or the absolute path of a ruleset file (``""``: not known)."""
    change_summary: Mapping[str, Any] | None = None
    """Set on a run reduced to its changes (``--changes-since`` / ``--state``):
    ``{"since", "previous_run", "scan_counts", "changes"}`` where ``scan_counts`` are the
    whole scan's counts per status (what the exit code reflects) and ``changes`` the number
    of results per change kind (and ``unchanged``)."""
    rule_durations: Mapping[str, float] = field(default_factory=dict)
    """Seconds each rule's check ran, by rule id (a rule stopped at its budget: the
    budget; a rule the deadline left out: absent)."""

    def counts(self) -> dict[str, int]:
        """Number of findings per effective status (every status present, zeros kept)."""
        out = {s.value: 0 for s in Status}
        for f in self.findings:
            out[f.status.value] += 1
        return out

    def counts_by_severity(self) -> dict[str, dict[str, int]]:
        """Number of findings per severity and effective status (of :attr:`findings`)."""
        out = {sev.value: {s.value: 0 for s in Status} for sev in Severity}
        for f in self.findings:
            out[f.severity.value][f.status.value] += 1
        return out


SEVERITY_ORDER: tuple[Severity, ...] = tuple(Severity)
"""Least severe first."""

STATUS_ORDER: tuple[Status, ...] = (Status.FAIL, Status.ERROR, Status.WAIVED, Status.SKIP,
                                    Status.PASS)
"""Worst first: the order in which reports list results."""


def sorted_findings(run: RunResult) -> list[Finding]:
    """The findings in report order: rule order of the ruleset, then subject."""
    order = {r.id: i for i, r in enumerate(run.rules)}
    return sorted(run.findings, key=lambda f: (order.get(f.rule_id, len(order)), f.rule_id,
                                               f.result.subject))
