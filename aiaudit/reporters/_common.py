"""Helpers shared by the built-in reporters (not a plugin: the name starts with ``_``).

Every machine-readable format names the host the same way and computes the same stable
identity for a result, so that SARIF alerts, JUnit test names, SIEM events and Prometheus
series about one finding can be correlated across runs and formats.
"""

from __future__ import annotations

import re

from aiaudit.model import Finding, RunResult, Severity, Status

# XML 1.0 section 2.2 "Char": #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] |
# [#x10000-#x10FFFF].  Everything else (C0 controls, lone surrogates from undecodable file
# names, U+FFFE/U+FFFF) cannot appear in an XML document, not even as a character reference.
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_SURROGATES = re.compile("[\ud800-\udfff]")

SEVERITY_ORDER: tuple[Severity, ...] = tuple(Severity)
STATUS_ORDER: tuple[Status, ...] = (Status.FAIL, Status.ERROR, Status.WAIVED, Status.SKIP,
                                    Status.PASS)
"""Worst first: the order in which reports list results."""


def xml_safe(text: object) -> str:
    """``text`` with every character XML 1.0 forbids replaced by ``\\xNN``/``\\uNNNN``.

    Hostile config files can put NUL, escape or form-feed characters into evidence values;
    escaping (rather than dropping) keeps what was there visible to the reader.
    """
    return _XML_FORBIDDEN.sub(lambda m: _escape_char(m.group()), str(text))


def _escape_char(c: str) -> str:
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def text_safe(text: object) -> str:
    """``text`` encodable as UTF-8: lone surrogates (undecodable bytes in file names read
    with ``surrogateescape``) become U+FFFD."""
    return _SURROGATES.sub("\ufffd", str(text))


def host_label(run: RunResult) -> str:
    """The name that separates hosts and images in every output.

    An offline scan of a golden image is named by its image id (``IMAGE_ID`` in
    os-release, or an image-id file) so that two builds of one image are one "host";
    otherwise the hostname.
    """
    h = run.host
    if h.mode == "offline" and h.image_id:
        return h.image_id
    return h.hostname or "unknown"


def safe_id(text: str) -> str:
    """``text`` reduced to characters safe in ids, class names and URIs."""
    out = re.sub(r"[^A-Za-z0-9._:@+-]+", "_", text).strip("_")
    return out or "unknown"


def fingerprint(run: RunResult, finding: Finding) -> str:
    """Stable identity of a finding across runs: hash of rule id, host and subject.

    Neither the message nor the values are part of it, so the same problem on the same host
    keeps its identity when the wrong value changes.
    """
    key = "\x1f".join((finding.rule_id, host_label(run), finding.result.subject))
    import hashlib

    return hashlib.sha256(text_safe(key).encode("utf-8")).hexdigest()


def sorted_findings(run: RunResult) -> list[Finding]:
    """The findings in report order: rule order of the ruleset, then subject."""
    order = {r.id: i for i, r in enumerate(run.rules)}
    return sorted(run.findings, key=lambda f: (order.get(f.rule_id, len(order)), f.rule_id,
                                               f.result.subject))


def remediation_text(finding: Finding, *, markdown: bool = False) -> str:
    """The finding's fix as text (or markdown): summary, files to drop in, commands."""
    rem = finding.result.remediation
    if rem is None:
        return ""
    lines = [rem.summary]
    if rem.manual:
        lines += ["", f"By hand: {rem.manual}"] if markdown else [f"By hand: {rem.manual}"]
    for s in rem.snippets:
        body = s.content.rstrip("\n")
        if s.kind == "file":
            head = f"Drop in {s.path}:"
            lines += (["", f"{head}", "", "```", body, "```"] if markdown
                      else [head, *("    " + ln for ln in body.splitlines())])
        elif s.kind == "enable":
            cmd = f"systemctl enable {body}"
            lines += (["", "Enable at boot:", "", "```sh", cmd, "```"] if markdown
                      else ["Enable at boot:", f"    $ {cmd}"])
        else:
            body = s.shell().rstrip("\n")
            lines += (["", "Run now:", "", "```sh", body, "```"] if markdown
                      else ["Run now:", *("    $ " + ln for ln in body.splitlines())])
    return "\n".join(lines)
