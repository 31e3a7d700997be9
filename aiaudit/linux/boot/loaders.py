"""Kernel command lines and the files bootloaders build them from.

Sources: lib/cmdline.c ``next_arg`` (double quotes only, a quote may start the word or the
value, ``--`` ends kernel parameters), kernel/params.c ``parameq`` (``-`` and ``_`` are the
same in parameter names), admin-guide/kernel-parameters.rst; grub ``util/grub.d/10_linux.in``
(normal entries get ``$GRUB_CMDLINE_LINUX $GRUB_CMDLINE_LINUX_DEFAULT``, recovery entries
only ``$GRUB_CMDLINE_LINUX``), ``/etc/default/grub`` is sourced by ``grub-mkconfig`` as shell;
Boot Loader Specification (``options`` lines of ``/boot/loader/entries/*.conf`` are
concatenated); kernel-install(8) (``/etc/kernel/cmdline``).
"""

from __future__ import annotations

from aiaudit.core.errors import ParseError
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record


@record
class Param:
    """One kernel command line word."""

    name: str
    """Parameter name as written (``intel_idle.max_cstate``)."""
    value: str | None
    """Value after ``=`` (quotes removed), ``None`` for a bare flag."""

    @property
    def key(self) -> str:
        """Normalised name for comparison (``-`` is ``_``, kernel/params.c ``dash2underscore``)."""
        return norm_name(self.name)

    def __str__(self) -> str:
        if self.value is None:
            return self.name
        v = f'"{self.value}"' if any(c.isspace() for c in self.value) else self.value
        return f"{self.name}={v}"


def norm_name(name: str) -> str:
    """Normalise a parameter name (``-`` and ``_`` are equivalent)."""
    return name.replace("-", "_")


def parse_cmdline(text: str) -> list[Param]:
    """Split a kernel command line the way ``next_arg`` does; words after ``--`` are for
    init and are dropped.  Never raises."""
    out: list[Param] = []
    s = text.replace("\x00", " ")
    i, n = 0, len(s)
    while i < n:
        while i < n and s[i].isspace():
            i += 1
        if i >= n:
            break
        start = i
        in_quote = False
        equals = -1
        while i < n and (in_quote or not s[i].isspace()):
            if equals < 0 and s[i] == "=":
                equals = i - start
            if s[i] == '"':
                in_quote = not in_quote
            i += 1
        word = s[start:i]
        quoted = word.startswith('"')
        if quoted:
            word = word[1:]
            equals -= 1
            if word.endswith('"'):
                word = word[:-1]
        if equals < 0 or equals >= len(word):
            if word == "--":
                break
            out.append(Param(word, None))
            continue
        name, val = word[:equals], word[equals + 1:]
        if val.startswith('"'):
            val = val[1:]
            if val.endswith('"'):
                val = val[:-1]
        out.append(Param(name, val))
    return out


def last(params: list[Param], name: str) -> Param | None:
    """The last occurrence of ``name`` (later words override earlier ones for ordinary
    ``module.param`` and ``__setup`` parameters)."""
    key = norm_name(name)
    for p in reversed(params):
        if p.key == key:
            return p
    return None


# ------------------------------------------------------------------ shell assignments
@record
class ShellAssignment:
    """``NAME=value`` in a sourced shell file, with ``$VAR`` already expanded."""

    name: str
    value: str
    line: int
    raw: str


_NAME = lazy_pattern(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=")
_REST = lazy_pattern(r"[^\S\n]*([^\n]{0,80})")
"""The start of the rest of a line: leading blanks skipped, 80 characters at most."""
_VAR = lazy_pattern(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def parse_shell_assignments(text: str, env: dict[str, str] | None = None
                            ) -> tuple[list[ShellAssignment], dict[str, str], list[str]]:
    """Evaluate the plain assignments of a shell file that is ``source``d (like
    ``/etc/default/grub``): quoting, ``$VAR``/``${VAR}`` expansion against ``env`` and
    earlier assignments, continuation lines.  Returns (assignments, resulting env, notes
    about lines that are not plain assignments and were not evaluated).

    Raises :class:`ParseError` on an unterminated quote or binary content.
    """
    if "\x00" in text:
        raise ParseError("binary content (NUL byte)")
    sh = _ShellReader(text, dict(env or {}))
    out: list[ShellAssignment] = []
    notes: list[str] = []
    while sh.i < sh.n:
        if sh.skip_blank():
            continue
        start_line, start = sh.line, sh.i
        m = _NAME().match(text, sh.i)
        if not m:
            notes.append(f"line {start_line}: not evaluated: {sh.skip_line()}")
            continue
        sh.i = m.end()
        val = sh.word(start_line)
        rest = sh.rest_of_line()
        if rest and not rest.startswith(("#", ";")):
            notes.append(f"line {start_line}: trailing words not evaluated: {rest}")
        sh.env[m.group(1)] = val
        out.append(ShellAssignment(m.group(1), val, start_line, text[start:sh.i]))
    if len(notes) > MAX_NOTES:  # a broken file: the first few say enough
        notes[MAX_NOTES:] = [f"... and {len(notes) - MAX_NOTES} more such notes"]
    return out, sh.env, notes


class _ShellReader:
    """A position (and its line number) in a sourced shell file, and the variables
    assigned so far: the pieces :func:`parse_shell_assignments` reads one by one."""

    def __init__(self, text: str, env: dict[str, str]) -> None:
        self.text, self.n, self.env = text, len(text), env
        self.i = 0
        self.line = 1

    def skip_blank(self) -> bool:
        """Skip a newline, a blank, an empty statement (``;``) or a comment at the
        position; False when something else is there."""
        c = self.text[self.i]
        if c == "\n":
            self.line += 1
            self.i += 1
        elif c in " \t;":
            self.i += 1
        elif c == "#":
            j = self.text.find("\n", self.i)
            self.i = self.n if j < 0 else j
        else:
            return False
        return True

    def skip_line(self) -> str:
        """Skip a statement that is not an assignment, up to the end of its line; return
        its start for a note."""
        j = self.text.find("\n", self.i)
        j = self.n if j < 0 else j
        stmt = self.text[self.i:j].strip()
        self.i = j
        return stmt[:80]

    def rest_of_line(self) -> str:
        """What follows an assignment on its line, for a note: at most 80 characters are
        looked at, not the whole line again after each of its assignments (a 1 MiB line of
        a=b took 17 s)."""
        m = _REST().match(self.text, self.i)
        shown = m.group(1) if m else ""
        return shown if len(shown) == 80 else shown.rstrip()

    def word(self, start_line: int) -> str:
        """The value of an assignment: the word at the position, quotes removed and
        variables expanded."""
        text, n = self.text, self.n
        value: list[str] = []
        while self.i < n and text[self.i] not in " \t\n;":
            c = text[self.i]
            if c == "'":
                value.append(self._single_quoted(start_line))
            elif c == '"':
                value.append(self._double_quoted(start_line))
            elif c == "\\" and self.i + 1 < n:
                if text[self.i + 1] == "\n":
                    self.line += 1
                else:
                    value.append(text[self.i + 1])
                self.i += 2
            elif c == "$":
                value.append(self._variable())
            else:
                value.append(c)
                self.i += 1
        return "".join(value)

    def _single_quoted(self, start_line: int) -> str:
        j = self.text.find("'", self.i + 1)
        if j < 0:
            raise ParseError("unterminated single quote", line=start_line)
        chunk = self.text[self.i + 1:j]
        self.line += chunk.count("\n")
        self.i = j + 1
        return chunk

    def _variable(self) -> str:
        """``$NAME`` or ``${NAME}`` expanded (a lone ``$`` is itself)."""
        m = _VAR().match(self.text, self.i)
        if m is None:
            self.i += 1
            return "$"
        self.i = m.end()
        return self.env.get(m.group(1) or m.group(2), "")

    def _double_quoted(self, start_line: int) -> str:
        text, n = self.text, self.n
        j = self.i + 1
        buf: list[str] = []
        while j < n and text[j] != '"':
            if text[j] == "\\" and j + 1 < n and text[j + 1] in '$`"\\\n':
                if text[j + 1] != "\n":
                    buf.append(text[j + 1])
                else:
                    self.line += 1
                j += 2
                continue
            if text[j] == "$":
                m = _VAR().match(text, j)
                if m:
                    buf.append(self.env.get(m.group(1) or m.group(2), ""))
                    j = m.end()
                    continue
            if text[j] == "\n":
                self.line += 1
            buf.append(text[j])
            j += 1
        if j >= n:
            raise ParseError("unterminated double quote", line=start_line)
        self.i = j + 1
        return "".join(buf)


MAX_NOTES = 20
"""Notes kept from one file by :func:`parse_shell_assignments`."""


# ------------------------------------------------------------------ BLS and grub.cfg
@record
class BlsEntry:
    """A Boot Loader Specification entry (``/boot/loader/entries/*.conf``)."""

    title: str | None
    version: str | None
    options: str
    """All ``options`` lines joined with a space."""
    options_line: int | None
    """Line of the first ``options`` line."""


def parse_bls(text: str) -> BlsEntry:
    """Parse one BLS entry file (``key value`` lines, ``#`` comments)."""
    if "\x00" in text:
        raise ParseError("binary content (NUL byte)")
    title = version = None
    opts: list[str] = []
    first = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, _, val = line.partition(" ")
        val = val.strip()
        if key == "title":
            title = val
        elif key == "version":
            version = val
        elif key == "options":
            opts.append(val)
            first = first or n
    return BlsEntry(title, version, " ".join(opts), first)


@record
class GrubCfgLinux:
    """The first ``linux`` command of a generated ``grub.cfg`` (the default entry when
    ``GRUB_DEFAULT=0``)."""

    args: str
    line: int
    entry: str | None


_MENU = lazy_pattern(r"""^\s*menuentry\s+(?:'([^']*)'|"([^"]*)")""")
_LINUX = lazy_pattern(r"^\s*(?:linux|linuxefi|linux16)\s+(\S+)\s*(.*)$")


def parse_grub_cfg(text: str) -> tuple[GrubCfgLinux | None, bool]:
    """(first ``linux`` line, whether the config loads BLS entries with ``blscfg``)."""
    if "\x00" in text:
        raise ParseError("binary content (NUL byte)")
    entry = None
    bls = False
    for n, raw in enumerate(text.splitlines(), 1):
        if raw.strip() == "blscfg":
            bls = True
        m = _MENU().match(raw)
        if m:
            entry = m.group(1) if m.group(1) is not None else m.group(2)
            continue
        m = _LINUX().match(raw)
        if m:
            return GrubCfgLinux(m.group(2).strip(), n, entry), bls
    return None, bls
