# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Third-party checks in a worker process that the runner can kill.

A thread cannot be stopped, and a check that holds the interpreter lock in C code (a
catastrophic regular expression, ``sum(range(10**12))``) stops every other thread too: the
runner could not even notice its deadline.  So the checks of third-party plugins run in a
child process, forked from the scan (it inherits the registry, the ruleset and the
:class:`~aiaudit.core.host.Host` with its cache, nothing is re-imported), one rule after another.
The child reports on a pipe when each rule starts and what it gave; the runner reads the
pipe in a thread and kills the child (``SIGKILL``) when the running rule overruns its budget
or the scan deadline, records an ``error`` result for it, and forks a new child for the rules
after it.  A child that dies (``os._exit``, a signal) costs the rule it was running.

In the child, stdout is stderr (file descriptor 1 too): a plugin that prints cannot corrupt
the report on stdout.  The child leads its own process group, killed as one (so what a
check started goes with it); a ``KeyboardInterrupt`` raised by a check is an error result
like any exception, and a real Ctrl-C ends the scan, which kills its workers on the way
out.  The child dies with the scan (``PR_SET_PDEATHSIG``), never outliving it.

Built-in checks stay in threads of the scan: a fork costs about a millisecond, and a scan
with no third-party rule never forks.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import struct
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

from aiaudit.core.model import error_result

if TYPE_CHECKING:
    from aiaudit.api import CheckContext
    from aiaudit.core.host import Deadline
    from aiaudit.core.model import Result
    from aiaudit.core.ruleset import Rule

MAX_FRAME = 16 * 1024 * 1024
"""Largest message from the child (the pickled results of one rule), in bytes: more is an
``error`` result for that rule, never a memory spike in the scan."""

_HEADER = struct.Struct("!I")


class Worker:
    """A forked child that runs ``rules[i]`` for each ``i`` of ``indices``, in order, and
    what the parent needs to watch it (same shape as the runner's thread batches).

    ``run_rule(rule, ctx)`` turns a rule into results in the child (exceptions already
    caught); ``make_ctx`` builds its context.
    """

    def __init__(self, rules: Sequence[Rule], indices: Sequence[int],
                 make_ctx: Callable[[Rule], CheckContext],
                 run_rule: Callable[[Rule, CheckContext], list[Result]],
                 deadline: Deadline, rule_timeout: float,
                 after_fork: Callable[[], None] | None = None) -> None:
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.results: dict[int, list[Result]] = {}
        self.indices = list(indices)
        self.running: int | None = None
        """The rule the child runs now (``None`` between rules)."""
        self.started = time.monotonic()
        self.budget = rule_timeout
        self.capped = False
        self.deadline_at: int | None = None
        """Set when the child found the scan deadline passed before rule ``deadline_at``."""
        self.ended = False
        """The pipe reached its end: the child exited or was killed."""
        self.status: int | None = None
        """The child's wait status once reaped."""
        self.broken: str | None = None
        """Why the last frame could not be read (too large, garbled)."""
        self._deadline = deadline
        self._rule_timeout = rule_timeout
        self._pid_lock = threading.Lock()
        self._reaped = False
        for stream in (sys.stdout, sys.stderr):  # no buffered text duplicated in the child
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(rfd)
            _child(wfd, rules, self.indices, make_ctx, run_rule, deadline, rule_timeout,
                   after_fork)
        os.close(wfd)
        self.pid = pid
        self._rfd = rfd
        threading.Thread(target=self._read, name="aiaudit-worker", daemon=True).start()

    # ------------------------------------------------------------------ parent
    def _read(self) -> None:
        """Read the child's frames until the pipe ends; update the state."""
        try:
            with os.fdopen(self._rfd, "rb", buffering=0) as fh:
                while True:
                    head = _read_exact(fh, _HEADER.size)
                    if head is None:
                        break
                    (size,) = _HEADER.unpack(head)
                    if size > MAX_FRAME:
                        with self.lock:
                            self.broken = (f"the check's results were over the "
                                           f"{MAX_FRAME}-byte limit")
                        break
                    body = _read_exact(fh, size)
                    if body is None:
                        break
                    try:
                        msg = pickle.loads(body)
                    except Exception as exc:
                        with self.lock:
                            self.broken = f"unreadable results ({type(exc).__name__})"
                        break
                    with self.changed:
                        self._apply(msg)
                        self.changed.notify_all()
        except OSError:
            pass
        if self.broken:
            self.kill()
        self._reap()
        with self.changed:
            self.ended = True
            self.changed.notify_all()

    def _apply(self, msg: tuple[Any, ...]) -> None:
        kind = msg[0]
        if kind == "start":
            _, i, started, budget, capped = msg
            self.running, self.started, self.budget, self.capped = i, started, budget, capped
        elif kind == "done":
            _, i, results = msg
            self.results[i] = results
            self.running = None
        elif kind == "deadline":
            self.deadline_at = msg[1]
            self.running = None

    def _reap(self) -> None:
        """Wait for the child to exit, then reap it under ``_pid_lock``: :meth:`kill`
        never signals a reaped (and possibly reused) process id."""
        try:
            os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)  # a zombie: id still ours
        except ChildProcessError:
            pass
        with self._pid_lock:
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:
                status = None
            self._reaped = True
            # what a check started and left behind (a `sleep` holding the scan's stderr,
            # which a prolog's `$(...)` would wait for) ends with the worker: the group's id
            # cannot be reused while a member is alive, so this signals only the leftovers
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        self.status = status

    def kill(self) -> None:
        """End the child now (``SIGKILL``), unless it is already reaped."""
        with self._pid_lock:
            if self._reaped:
                return
            try:  # its process group: what the check started dies with it
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def watch(self) -> tuple[int, float, bool] | None:
        """Wait until the child has run every rule (``None``) or its running rule overruns
        its budget (then kill it and return that rule's index, its budget, capped).  A
        child that ends in the middle of a rule returns that rule with budget ``-1``."""
        with self.changed:
            while True:
                if self.ended:
                    if self.running is not None and self.running not in self.results:
                        return self.running, -1.0, False
                    return None
                if self.running is None and self._next_index() is None:
                    return None  # every rule answered (a grandchild may keep the pipe)
                if self.running is None:
                    # between rules: the child checks the deadline itself before each
                    self.changed.wait(0.05 if self._deadline.at is None else
                                      max(0.01, self._deadline.remaining() or 0.0) + 0.05)
                    if (self.running is None and not self.ended
                            and self._deadline.expired()):
                        # the child is stuck before a rule (writing?): treat as the next
                        nxt = self._next_index()
                        if nxt is None:
                            continue
                        self.kill()
                        return nxt, 0.0, True
                    continue
                index, started, budget = self.running, self.started, self.budget
                left = started + budget - time.monotonic()
                if left > 0:
                    self.changed.wait(left)
                    continue
                if self.running == index and index not in self.results:
                    capped = self.capped
                    self.kill()
                    return index, budget, capped

    def _next_index(self) -> int | None:
        for i in self.indices:
            if i not in self.results:
                return i
        return None

    def pending_after(self, index: int) -> list[int]:
        """The rules of this worker after ``index`` (to hand to the next worker)."""
        return [i for i in self.indices if i > index and i not in self.results]

    def wait_ended(self, timeout: float = 2.0) -> None:
        """Wait (briefly) until the pipe is closed and the child reaped."""
        with self.changed:
            self.changed.wait_for(lambda: self.ended, timeout)

    def describe_end(self) -> str:
        """How the child ended, for the error result of the rule it was running."""
        if self.broken:
            return self.broken
        st = self.status
        if st is None:
            return "the worker process ended"
        if os.WIFSIGNALED(st):
            sig = os.WTERMSIG(st)
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = str(sig)
            return f"the worker process was killed by {name}"
        return f"the worker process exited with status {os.WEXITSTATUS(st)}"


def _read_exact(fh: Any, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = fh.read(min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


# ---------------------------------------------------------------------- child
def _child(wfd: int, rules: Sequence[Rule], indices: Sequence[int],
           make_ctx: Callable[[Rule], CheckContext],
           run_rule: Callable[[Rule, CheckContext], list[Result]],
           deadline: Deadline, rule_timeout: float,
           after_fork: Callable[[], None] | None) -> None:
    """The child's whole life: run the rules, write frames, ``os._exit``."""
    code = 0
    try:
        _child_setup()
        if after_fork is not None:
            after_fork()
        out = os.fdopen(wfd, "wb", buffering=0)
        for i in indices:
            remaining = deadline.remaining()
            if remaining is not None and remaining <= 0:
                _send(out, ("deadline", i))
                break
            capped = remaining is not None and remaining < rule_timeout
            budget = remaining if capped else rule_timeout
            _send(out, ("start", i, time.monotonic(), budget, capped))
            rule = rules[i]
            body = _done(rule, i, run_rule(rule, make_ctx(rule)))
            out.write(_HEADER.pack(len(body)) + body)
    except BaseException:  # the parent sees the pipe end mid-rule: an error result
        code = 70
    os._exit(code)


def _done(rule: Rule, i: int, results: list[Result]) -> bytes:
    """The frame body saying that rule ``i`` gave ``results``: an error result instead when
    they cannot be pickled or are over :data:`MAX_FRAME` bytes."""
    try:
        body = pickle.dumps(("done", i, results), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # a result field holds something that cannot travel
        return pickle.dumps(("done", i, [error_result(
            f"check {rule.check.id} ({rule.check.origin}) returned a result that "
            f"cannot be passed on: {type(exc).__name__}: {exc}")]))
    if len(body) > MAX_FRAME:
        return pickle.dumps(("done", i, [error_result(
            f"check {rule.check.id} ({rule.check.origin}) returned more than "
            f"{MAX_FRAME} bytes of results")]))
    return body


def _child_setup() -> None:
    """Stdout to stderr, default SIGINT and SIGTERM, die with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        os.setpgid(0, 0)  # its own process group, killed as one (a real Ctrl-C still
    except OSError:       # ends it: the scan kills its workers on the way out)
        pass
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the runner kills it at the end anyway
        pass
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(70)


def _send(out: Any, msg: tuple[Any, ...]) -> None:
    body = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_HEADER.pack(len(body)) + body)
