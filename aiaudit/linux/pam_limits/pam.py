"""PAM service files (pam.conf(5), libpam ``pam_handlers.c``).

A line is ``[-]type control module-path [args...]``; ``type`` is auth, account, password or
session (case-insensitive; a leading ``-`` silences a missing module), ``control`` a keyword
(``required``, ``requisite``, ``sufficient``, ``optional``, ``include``, ``substack``) or a
``[value=action ...]`` bracket, and arguments containing spaces may be bracketed.  libpam
cuts each line at the first ``#`` and joins lines ending in a backslash
(``_pam_assemble_line``).  Debian's ``@include FILE`` pulls in every line of another
service file.
"""

from __future__ import annotations

from aiaudit.core.errors import ParseError
from aiaudit.core.startup.records import record

TYPES = ("auth", "account", "password", "session")


@record
class PamLine:
    """One rule (or ``@include``) of a service file."""

    line: int
    type: str
    """``auth``/``account``/``password``/``session``, or ``@include``."""
    control: str
    """Lowercased keyword or the ``[...]`` text; for ``@include`` empty."""
    module: str
    """Module path or, for include/substack/@include, the service name."""
    args: tuple[str, ...] = ()
    silent: bool = False
    """Type written with a leading ``-``."""
    raw: str = ""

    @property
    def module_name(self) -> str:
        """Basename of the module path (``pam_limits.so``)."""
        return self.module.rsplit("/", 1)[-1]


def _split(text: str) -> list[str]:
    """Split on white space keeping ``[...]`` groups (with ``\\]`` escapes) together."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] in " \t\r\n":
            i += 1
            continue
        if text[i] == "[":
            j = i + 1
            buf = []
            while j < n and text[j] != "]":
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "]":
                    j += 1
                buf.append(text[j])
                j += 1
            out.append("[" + "".join(buf) + "]")
            i = j + 1
            continue
        j = i
        while j < n and text[j] not in " \t\r\n":
            j += 1
        out.append(text[i:j])
        i = j
    return out


def parse(text: str, source: str = "") -> list[PamLine]:
    """Rules of one service file, in order.  Malformed lines (too few fields, unknown
    type) are skipped as libpam does (it logs and ignores them)."""
    if "\x00" in text:
        raise ParseError("binary content (NUL byte)", source=source)
    out: list[PamLine] = []
    pending, start = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        if not pending:
            start = n
        line = raw.split("#", 1)[0]
        if line.rstrip().endswith("\\") and "#" not in raw:
            pending += line.rstrip()[:-1] + " "
            continue
        line = pending + line
        pending = ""
        fields = _split(line)
        if not fields:
            continue
        if fields[0] == "@include":
            if len(fields) >= 2:
                out.append(PamLine(start, "@include", "", fields[1], raw=line.strip()))
            continue
        if len(fields) < 3:
            continue
        typ = fields[0].lower()
        silent = typ.startswith("-")
        typ = typ.lstrip("-")
        if typ not in TYPES:
            continue
        control = fields[1] if fields[1].startswith("[") else fields[1].lower()
        args = tuple(a[1:-1] if a.startswith("[") else a for a in fields[3:])
        out.append(PamLine(start, typ, control, fields[2], args, silent, line.strip()))
    return out
