"""Writing what aiaudit produces: reports to files (atomically) and stdout, one error line
on stderr, and the deadline that bounds rendering and writing."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from aiaudit.core.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from aiaudit.core.model import RunResult
    from aiaudit.core.plugins import Registry


DEFAULT_FORMAT = "text"
"""The report format of ``scan`` and ``render`` when ``--format`` is not given."""


def parse_outputs(args: argparse.Namespace, known: Mapping[str, object], *,
                   format_to_stdout: bool = False) -> list[tuple[str, str | None]]:
    """[(format, path or None for stdout)].

    Without ``--output``, stdout gets the ``--format`` report (default text).  Each
    ``--output`` writes one report to a file, ``FORMAT:FILE`` in that format and a plain
    ``FILE`` in the ``--format`` one, and stdout then gets nothing; except that, with
    ``format_to_stdout`` (``scan`` and ``render``, whose ``--format`` defaults to ``None``
    so that "given" is known), a ``--format`` given explicitly is never dropped in
    silence: when no ``--output`` is in that format (``--format json -o html:x.html``),
    its report goes to stdout as well.  ``-o html:x.html`` without ``--format`` writes
    nothing to stdout, as before."""
    explicit = format_to_stdout and args.format is not None
    default = DEFAULT_FORMAT if args.format is None else args.format
    if default not in known:
        raise UsageError(f"unknown format {default!r} (known: {', '.join(sorted(known))})")
    outs: list[tuple[str, str | None]] = []
    for spec in args.output:
        fmt, sep, path = spec.partition(":")
        if sep and fmt in known:
            outs.append((fmt, path))
        elif sep and fmt and "/" not in fmt and not os.path.exists(spec):
            raise UsageError(f"--output {spec}: unknown format {fmt!r} "
                             f"(known: {', '.join(sorted(known))})")
        else:
            outs.append((default, spec))
    for _, path in outs:
        if not path:
            raise UsageError("--output needs a file name")
    if not outs or (explicit and all(fmt != default for fmt, _ in outs)):
        outs.append((default, None))
    return outs


def one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


class OutputError(UsageError):
    """A report (or the --state file) could not be rendered or written; the message names
    which and why."""


class ReportDeadline(BaseException):
    """Raised in the main thread when rendering and writing overrun the scan deadline.  A
    BaseException, so that a reporter's ``except Exception`` cannot swallow it."""




REPORT_HARD_GRACE_S = 2.0
"""When the alarm cannot interrupt the main thread (a plugin that ignores or blocks
SIGALRM, a call that retries after it), the watchdog thread ends the process this long after
the deadline.  Code that holds the GIL for good stops the watchdog too: only a process
outside (a worker with a hard kill) could end that."""


def error(message: str) -> None:
    """One ``aiaudit: error:`` line on stderr (see :func:`to_stderr`)."""
    to_stderr(f"aiaudit: error: {message}")


def to_stderr(line: str) -> None:
    """``line`` on stderr as one line a terminal shows and does not obey: every control
    character (ESC, BEL, CR, a line feed, C1, bidi overrides) escaped
    (:func:`~aiaudit.core.escape.human_safe`), since messages carry file names, values and
    plugin text.  A closed stderr (``2>&-``: ``sys.stderr`` is ``None``) or one that
    cannot be written gets nothing: ``print(file=None)`` would write the line to stdout,
    into the report."""
    from aiaudit.core.escape import human_safe

    stream = sys.stderr
    if stream is None:
        return
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(human_safe(line), file=stream, flush=True)


@contextlib.contextmanager
def report_deadline(seconds: float, what: str) -> Iterator[None]:
    """Bound the block to ``seconds``: a SIGALRM timer raises :class:`ReportDeadline` in the
    main thread (a busy reporter, a catastrophic regex, a write to a pipe nobody reads); a
    watchdog thread ends the process with one message and exit code 2 if the main thread
    does not give way within :data:`REPORT_HARD_GRACE_S` more (a reporter that ignores
    SIGALRM)."""
    import signal
    import threading

    def hard_exit() -> None:
        with contextlib.suppress(OSError):
            os.write(2, f"aiaudit: error: {what} not finished {seconds:.3g} s after the "
                        f"rules; stopped\n".encode())
        os._exit(ExitCode.USAGE)

    def on_alarm(_signum: int, _frame: object) -> None:
        raise ReportDeadline

    watchdog = threading.Timer(seconds + REPORT_HARD_GRACE_S, hard_exit)
    watchdog.daemon = True
    main = threading.current_thread() is threading.main_thread() and hasattr(signal,
                                                                             "setitimer")
    old = signal.signal(signal.SIGALRM, on_alarm) if main else None
    try:
        if main:
            signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
        watchdog.start()
        yield
    finally:
        watchdog.cancel()
        if main:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old if old is not None else signal.SIG_DFL)


def write_atomic(path: str, text: str) -> None:
    """Write ``path`` through a temporary file in the same directory, fsync and a rename,
    so a reader (the next --state run, a log shipper) never sees an empty or half file.

    A symlink is followed (the file it names is replaced); an existing file keeps its mode
    and, where permitted, its owner; a path that is not a regular file (``/dev/stdout``, a
    FIFO, ``/dev/null``) is written directly, never replaced.  Raises :class:`OutputError`.
    """
    import stat

    try:
        try:
            st: os.stat_result | None = os.stat(path)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            return
        target = os.path.realpath(path)
        folder, name = os.path.split(target)
        tmp = os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                if st is not None:
                    os.fchmod(fh.fileno(), stat.S_IMODE(st.st_mode))
                    with contextlib.suppress(OSError):
                        os.fchown(fh.fileno(), st.st_uid, st.st_gid)
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL byte in the name (only through the API)
        raise OutputError(f"cannot write {path!r}: {exc}") from None


def write_stdout(text: str) -> None:
    """Write ``text`` to stdout, all of it or an error: a closed stdout, a full disk
    (``/dev/full``) or a closed pipe (EPIPE) is :class:`OutputError`.

    The bytes go to the file descriptor with ``os.write`` until all are taken: a
    ``sys.stdout.write`` + ``flush`` that the kernel accepts only partly (a pipe whose reader
    left after 64 KiB) returns without an error and drops the rest (CPython 3.11).  After a
    failure stdout is pointed at /dev/null, so the flush at exit cannot fail again."""
    stream = sys.stdout
    if stream is None:
        raise OutputError("cannot write to stdout: it is closed")
    try:
        try:
            fd = stream.fileno()
        except (OSError, ValueError, AttributeError):  # not a file (tests capture it)
            stream.write(text)
            stream.flush()
            return
        stream.flush()  # whatever was printed before
        data = memoryview(text.encode("utf-8", "replace"))
        while data:
            data = data[os.write(fd, data):]
    except (OSError, ValueError) as exc:
        silence_stdout()
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise OutputError(f"cannot write to stdout: {why}") from None


def say(text: str = "") -> None:
    """One line on stdout, through :func:`write_stdout` (errors are not silent)."""
    write_stdout(text + "\n")


def silence_stdout() -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def occupy_closed_std_fds() -> None:
    """A closed fd 0, 1 or 2 (``>&-``) is opened on /dev/null: otherwise the next file
    aiaudit opens would become "stdout", and a report would land in it.  ``sys.stdout``
    stays ``None``, so writing a report there is still an error."""
    for fd, flags in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            with contextlib.suppress(OSError):
                got = os.open(os.devnull, flags)
                if got != fd:
                    os.dup2(got, fd)
                    os.close(got)


def emit(reg: Registry, run: RunResult, outputs: list[tuple[str, str | None]], *,
          verbose: bool = False, debug: bool = False,
          sarif_category: str | None = None, pretty: bool = False) -> list[str]:
    """Render ``run`` once per requested output and write each (stdout or its file,
    atomically).  A reporter that fails or a write that fails costs only that output: one
    message on stderr each, the others are still written.  Returns the messages (empty:
    all written).  :class:`ReportDeadline` ends the loop: what was written stays, the rest
    is named as not written."""
    from aiaudit.core.escape import text_safe

    problems: list[str] = []
    for i, (fmt, path) in enumerate(outputs):
        where = path if path is not None else "stdout"
        try:
            tty = path is None and sys.stdout is not None and sys.stdout.isatty()
            color = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
            text = render_report(reg.reporters[fmt], run, {"color": color, "verbose": verbose,
                                                       "sarif_category": sarif_category,
                                                       "pretty": pretty or tty},
                           debug)
            # text_safe: undecodable file names (surrogate escapes) must not crash the write
            text = text_safe(text)
            if path is None:
                write_stdout(text)
            else:
                write_atomic(path, text)
        except OutputError as exc:
            problems.append(f"{exc}; the {fmt} report for {where} was not written")
            error(problems[-1])
        except ReportDeadline:
            lost = ", ".join(f"{f}:{p if p is not None else 'stdout'}" for f, p in outputs[i:])
            error(f"not written by the deadline: {lost}")
            raise
    return problems


def render_report(spec: Any, run: RunResult, options: dict[str, Any], debug: bool) -> str:
    """``spec.render``, with whatever a (third-party) reporter does wrong turned into one
    :class:`OutputError` naming the format and the module that provides it."""
    try:
        text = spec.render(run, options)
    except (KeyboardInterrupt, ReportDeadline):
        raise
    except BaseException as exc:  # SystemExit and GeneratorExit included: only this output
        if debug:
            raise
        detail = f": {one_line(str(exc), 200)}" if str(exc) else ""
        raise OutputError(f"reporter {spec.name!r} ({_provider(spec)}) failed: "
                           f"{type(exc).__name__}{detail}") from None
    if not isinstance(text, str):
        raise OutputError(f"reporter {spec.name!r} ({_provider(spec)}) returned "
                           f"{type(text).__name__}, not text")
    return text


def _provider(spec: Any) -> str:
    """Who provides a reporter, for messages: its plugin (where the registry records it),
    else the module of its render function."""
    plugin = getattr(spec, "plugin", None)
    if plugin:
        return f"plugin {plugin}"
    return f"module {getattr(spec.render, '__module__', None) or '?'}"
