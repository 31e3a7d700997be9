"""``--syslog``: events to a Unix datagram socket the test binds itself (the socket path is
injectable), bounded messages, and no hang when the socket is absent or full."""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
from pathlib import Path

import pytest

from aiaudit.modes import syslog
from aiaudit.reporters.events import events
from tests.helpers import cli
from tests.reporters.samples import mixed_run
from tests.reporters.scans import FIXTURE_ROOT

LINE = re.compile(r"^<(\d+)>([A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d) aiaudit\[(\d+)\]: (.*)$",
                  re.S)


class Listener:
    """A syslog stand-in: a bound Unix datagram socket drained by a thread (the kernel
    queue holds only ``net.unix.max_dgram_qlen`` datagrams, 10 by default)."""

    def __init__(self, path: str, *, read: bool = True) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.05)
        self.data: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        if read:
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.data.append(self.sock.recv(1 << 20))
            except (TimeoutError, OSError):
                continue

    def messages(self) -> list[tuple[int, dict]]:
        """Stop reading; every message as (PRI, event)."""
        time.sleep(0.1)
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        out = []
        for data in self.data:
            m = LINE.match(data.decode("utf-8"))
            assert m, data[:200]
            out.append((int(m.group(1)), json.loads(m.group(4))))
        return out

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.sock.close()


@pytest.fixture
def listener(tmp_path: Path):
    lst = Listener(str(tmp_path / "log"))
    yield lst
    lst.close()


def test_send_events(listener) -> None:
    evs = events(mixed_run()) * 5
    assert syslog.send(evs, socket_path=listener.path) == len(evs)
    got = listener.messages()
    assert [e for _, e in got] == evs
    pri = {e.get("rule"): p for p, e in got}
    # facility user (1): 8 + severity
    assert pri["BLOCK-NVME-SCHEDULER"] == 8 + 3       # high failure: err
    assert pri["SYSCTL-VM-MAX-MAP-COUNT"] == 8 + 4    # medium failure: warning
    assert pri["SYSCTL-VM-SWAPPINESS"] == 8 + 6       # pass: info
    assert pri[None] == 8 + 4                         # summary of a run with failures


def test_message_size_is_bounded(listener) -> None:
    run = mixed_run()
    ev = events(run)[1]
    ev["evidence"] = [{**e, "value": "x" * 100_000} for e in ev["evidence"]]
    ev["message"] = "m" * 50_000
    syslog.send([ev], socket_path=listener.path, max_bytes=2048)
    listener.messages()
    [data] = listener.data
    assert len(data) <= 2048
    got = json.loads(LINE.match(data.decode()).group(4))
    assert got["truncated"] is True and got["rule"] == ev["rule"]
    assert got["message"].startswith("mmm")


def test_absent_socket_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(syslog.SyslogError, match="cannot connect to syslog socket"):
        syslog.send(events(mixed_run()), socket_path=str(tmp_path / "nope"))


def test_full_socket_does_not_hang(tmp_path: Path) -> None:
    stuck = Listener(str(tmp_path / "log"), read=False)  # never read: the queue fills up
    path = stuck.path
    t0 = time.monotonic()
    many = events(mixed_run()) * 2000
    with pytest.raises(syslog.SyslogError, match=r"timed out.*sent \d+ of"):
        syslog.send(many, socket_path=path, timeout=0.2, deadline=1.0)
    # a deadline test, so wall time: the 1 s deadline must stop sends that block on a full
    # socket (waiting, not working); generous for a loaded machine, far below a hang
    assert time.monotonic() - t0 < 20
    stuck.close()


def test_cli_syslog(listener) -> None:
    r = cli("scan", "--root", str(FIXTURE_ROOT), "--offline", "--format", "json",
            "--syslog", listener.path)
    assert r.code == 1, r.err  # the fixture fails a medium rule
    assert not r.err
    got = [e for _, e in listener.messages()]
    report = json.loads(r.out)
    assert len(got) == len(report["results"]) + 1
    assert {e["run_id"] for e in got} == {report["run_id"]}


def test_cli_syslog_failure_keeps_a_meaningful_exit_code(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.sock")
    r = cli("scan", "--root", str(FIXTURE_ROOT), "--offline", "--syslog", missing)
    assert r.code == 1  # the host's verdict is kept
    assert r.err.count("\n") == 1 and "--syslog" in r.err and missing in r.err
    r = cli("scan", "--root", str(FIXTURE_ROOT), "--offline", "--only",
            "SYSCTL-VM-SWAPPINESS", "--syslog", missing)
    assert r.code == 2, r.err  # otherwise: delivery failed
    assert "cannot connect" in r.err


@pytest.mark.oracle
def test_format_matches_util_linux_logger(listener) -> None:
    """Oracle: util-linux ``logger`` writing to a local socket uses the same header as
    glibc's syslog(3); aiaudit's datagram must look the same to a syslog daemon."""
    import shutil
    import subprocess

    if shutil.which("logger") is None:
        if os.environ.get("CI"):
            pytest.fail("logger (util-linux) is required in CI")
        pytest.skip("logger not installed")
    subprocess.run(["logger", "-u", listener.path, "--id=4242", "-t", "aiaudit", "-p",
                    "user.warning", '{"a":1}'], check=True, timeout=10)
    mine = syslog.format_message('{"a":1}', 4, syslog.FACILITIES["user"], pid=4242)
    listener.messages()
    [theirs] = listener.data
    stamp = re.compile(rb"^(<\d+>)[A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d ")
    assert stamp.match(theirs) and stamp.match(mine)
    assert stamp.sub(rb"\1", theirs) == stamp.sub(rb"\1", mine)


def test_stream_socket_fallback(tmp_path: Path) -> None:
    """Some syslog daemons listen on a stream socket; like glibc, fall back to it and
    end each message with NUL."""
    path = str(tmp_path / "stream")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    chunks: list[bytes] = []

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            while data := conn.recv(65536):
                chunks.append(data)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    evs = events(mixed_run())
    assert syslog.send(evs, socket_path=path) == len(evs)
    t.join(5)
    srv.close()
    msgs = b"".join(chunks).split(b"\0")
    assert msgs[-1] == b""
    got = [json.loads(LINE.match(m.decode()).group(4)) for m in msgs[:-1]]
    assert got == evs


def test_cli_default_socket_is_the_syslog_modules() -> None:
    from aiaudit.cli import options
    from aiaudit.modes import syslog

    assert options.DEFAULT_SYSLOG_SOCKET == syslog.DEFAULT_SOCKET


def test_priorities_of_a_changes_run() -> None:
    """A changes run with no change on a host that still fails: the summary is a warning
    (whole-scan counts); the closing event of a gone failure is informational."""
    from dataclasses import replace

    from aiaudit.modes.changes import changes_since

    run = mixed_run()
    quiet = changes_since(run, run, "prev.json")
    (summary,) = events(quiet)
    assert summary["counts"]["fail"] == 2 and summary["changes"]["unchanged"] == 6
    assert syslog.priority(summary) == 4
    fixed = replace(run, findings=tuple(f for f in run.findings
                                        if f.rule_id != "SYSCTL-VM-MAX-MAP-COUNT"))
    evs = events(changes_since(fixed, run, "prev.json"))
    gone = next(e for e in evs if e.get("change") == "gone")
    assert gone["previous_status"] == "fail" and syslog.priority(gone) == 6
    assert json.loads(syslog.fit(gone, 8192))["change"] == "gone"
