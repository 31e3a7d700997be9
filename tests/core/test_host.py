"""The Host: root confinement, file types, caps, caches, live state and commands."""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from pathlib import Path

import pytest

from aiaudit.core.errors import (
    CommandError,
    HostError,
    LiveStateUnavailable,
    NotFound,
    NotRegularFile,
    PathEscape,
    TooLarge,
)
from aiaudit.core.host import CACHE_BUDGET, Deadline, Host, which


def _within(seconds: float, fn):
    """Run ``fn`` in a thread; fail (instead of hanging the suite) if it blocks."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["exc"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"blocked for more than {seconds}s"
    if "exc" in box:
        raise box["exc"]  # type: ignore[misc]
    return box.get("value")


# ------------------------------------------------------------------ confinement
def test_absolute_symlink_is_rerooted(make_root) -> None:
    root = make_root({"/etc/hostname": "fixture-host\n"},
                     links={"/etc/link": "/etc/hostname", "/etc/dirlink": "/etc"})
    host = Host(str(root))
    assert host.read_text("/etc/link") == "fixture-host\n"
    assert host.read_text("/etc/dirlink/dirlink/hostname") == "fixture-host\n"
    assert host.resolve("/etc/link") == "/etc/hostname"


def test_relative_dotdot_escape_is_refused(make_root) -> None:
    root = make_root({"/etc/a": "x"}, links={"/etc/up": "../../../../../../etc/passwd",
                                              "/etc/ok": "../etc/a"})
    host = Host(str(root))
    with pytest.raises(PathEscape):
        host.read_text("/etc/up")
    with pytest.raises(PathEscape):
        host.read_text("/../etc/passwd")
    assert host.read_text("/etc/ok") == "x"
    assert not host.exists("/etc/up")


@pytest.mark.parametrize("links", [
    {"/etc/a": "b", "/etc/b": "a"},
    {"/etc/a": "a"},
    {"/etc/a": "/etc/a/x"},
])
def test_symlink_loops(make_root, links) -> None:
    host = Host(str(make_root(links=links)))
    with pytest.raises(HostError, match="symbolic links"):
        host.read_text("/etc/a")
    assert not host.exists("/etc/a") and host.lstat_exists("/etc/a")


def test_dangling_link_and_missing_file(make_root) -> None:
    host = Host(str(make_root(links={"/etc/dangling": "/nowhere"})))
    with pytest.raises(NotFound):
        host.read_text("/etc/dangling")
    with pytest.raises(NotFound):
        host.read_text("/etc/missing")
    assert host.try_read_text("/etc/missing") is None
    assert host.readlink("/etc/dangling") == "/nowhere"


def test_dev_null_link_is_mask_and_not_read(make_root) -> None:
    host = Host(str(make_root(links={"/etc/sysctl.d/x.conf": "/dev/null"})))
    assert host.is_masked("/etc/sysctl.d/x.conf")
    with pytest.raises(NotFound):  # re-rooted: <root>/dev/null does not exist
        host.read_text("/etc/sysctl.d/x.conf")


def test_fifo_is_never_opened(make_root) -> None:
    root = make_root(dirs=("/etc",))
    os.mkfifo(root / "etc/fifo")
    os.symlink("fifo", root / "etc/fifo-link")
    host = Host(str(root))
    for path in ("/etc/fifo", "/etc/fifo-link"):
        with pytest.raises(NotRegularFile, match="FIFO"):
            _within(5, lambda p=path: host.read_text(p))
    assert not host.is_file("/etc/fifo")


def test_device_is_never_opened(make_root) -> None:
    root = make_root(dirs=("/dev",))
    try:
        os.mknod(root / "dev/zero", stat.S_IFCHR | 0o666, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("cannot create device nodes here")
    with pytest.raises(NotRegularFile, match="character device"):
        _within(5, lambda: Host(str(root)).read_bytes("/dev/zero"))


def test_directory_is_not_a_file(make_root) -> None:
    host = Host(str(make_root(dirs=("/etc/sysctl.d",))))
    with pytest.raises(NotRegularFile, match="directory"):
        host.read_text("/etc/sysctl.d")


def test_size_cap(make_root) -> None:
    root = make_root({"/etc/big": "x" * 11, "/etc/small": "x" * 10})
    host = Host(str(root), read_cap=10)
    assert host.read_text("/etc/small") == "x" * 10
    with pytest.raises(TooLarge):
        host.read_text("/etc/big")
    assert Host(str(root)).read_text("/etc/big", cap=11) == "x" * 11


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        Host(str(tmp_path / "missing"))


# ------------------------------------------------------------------ live state
def test_live_state_refused_offline(make_root) -> None:
    root = make_root({"/proc/sys/vm/swappiness": "60\n", "/sys/block/sda/queue/x": "1\n"})
    offline = Host(str(root))
    assert not offline.live
    for call in (lambda: offline.read_text("/proc/sys/vm/swappiness"),
                 lambda: offline.listdir("/sys/block"),
                 lambda: offline.stat("/proc")):
        with pytest.raises(LiveStateUnavailable):
            call()
    live = Host(str(root), live=True)
    assert live.read_text("/proc/sys/vm/swappiness") == "60\n"
    assert live.listdir("/sys/block") == ["sda"]


def test_real_root_is_live_by_default() -> None:
    host = Host("/")
    assert host.live and host.is_real_root and host.allow_commands
    assert host.read_text("/proc/sys/kernel/ostype").strip() == "Linux"


# ------------------------------------------------------------------ listing order
NAMES = ["b", "B", "a", "_x", "Z1", "10-x", "9-x", "\u00e9", "A~"]


def test_listdir_and_glob_are_bytewise(make_root) -> None:
    root = make_root({f"/d/{n}.conf": "" for n in NAMES} | {"/d/.hidden.conf": ""})
    host = Host(str(root))
    want = sorted([f"{n}.conf" for n in NAMES] + [".hidden.conf"], key=lambda s: s.encode())
    assert host.listdir("/d") == want
    assert want[:3] == [".hidden.conf", "10-x.conf", "9-x.conf"]
    # wildcards skip dotfiles unless the pattern starts with '.'
    assert host.glob("/d/*.conf") == [f"/d/{n}" for n in want if not n.startswith(".")]
    assert host.glob("/d/.*.conf") == ["/d/.hidden.conf"]
    assert host.listdir("/missing") == []


def test_glob_follows_links_inside_root(make_root) -> None:
    root = make_root({"/real/a/x": "1", "/real/b/x": "2"}, links={"/lnk": "/real"})
    host = Host(str(root))
    assert host.glob("/lnk/*/x") == ["/lnk/a/x", "/lnk/b/x"]
    assert host.glob("/real/?/x") == ["/real/a/x", "/real/b/x"]


# ------------------------------------------------------------------ caches
def test_reads_are_cached(make_root) -> None:
    root = make_root({"/etc/a": "1"})
    host = Host(str(root))
    assert host.read_text("/etc/a") == "1"
    (root / "etc/a").write_text("2")
    assert host.read_text("/etc/a") == "1" and host.reads == 1


def test_memo_runs_factory_once_and_caches_errors(make_root) -> None:
    host = Host(str(make_root()))
    calls: list[int] = []

    def factory() -> int:
        calls.append(1)
        return len(calls)

    assert host.memo("k", factory) == 1 and host.memo("k", factory) == 1
    assert calls == [1]

    def broken() -> int:
        calls.append(1)
        raise ValueError("boom")

    for _ in range(2):
        with pytest.raises(ValueError, match="boom"):
            host.memo("bad", broken)
    assert len(calls) == 2


# ------------------------------------------------------------------ commands
def test_commands_refused_for_other_roots(make_root) -> None:
    root = make_root({"/usr/bin/true": "#!/bin/sh\n"})
    for host in (Host(str(root), live=True), Host(str(root)), Host("/", live=False)):
        with pytest.raises(LiveStateUnavailable):
            host.run(["true"])


def test_command_runs_from_real_system() -> None:
    res = Host("/").run(["sh", "-c", "echo $PATH; echo err >&2; exit 3"])
    assert res.returncode == 3 and res.stderr == "err\n"
    assert res.stdout.strip() == "/usr/sbin:/usr/bin:/sbin:/bin"
    with pytest.raises(CommandError, match="not installed"):
        Host("/").run(["no-such-program-aiaudit"])
    assert which("/tmp/evil") is None and which("sh") is not None


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_command_timeout_kills_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    host = Host("/")
    t0 = time.monotonic()
    with pytest.raises(CommandError, match="timed out"):
        host.run(["sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"], timeout=0.5)
    # a deadline test, so wall time: the 0.5 s timeout must stop a command that sleeps 60 s;
    # generous for a loaded machine, far below the sleep
    assert time.monotonic() - t0 < 30
    pid = int(pidfile.read_text())
    for _ in range(50):
        if not _alive(pid):
            break
        time.sleep(0.05)
    assert not _alive(pid), "the grandchild survived the timeout"


def test_command_limited_by_scan_deadline() -> None:
    host = Host("/", deadline=Deadline(0.3))
    t0 = time.monotonic()
    with pytest.raises(CommandError, match="timed out"):
        host.run(["sleep", "60"], timeout=60)
    # a deadline test, so wall time: the 0.3 s scan deadline, not the 60 s timeout, must
    # stop a command that sleeps; generous for a loaded machine, far below either
    assert time.monotonic() - t0 < 20


def test_prefix_cache_gives_the_same_answers_as_a_cold_host(tmp_path) -> None:
    """Resolving with the directory-prefix cache warm must equal resolving each path in a
    fresh Host (symlinks to directories, relative links with '..', absolute links)."""
    import itertools

    root = tmp_path / "r"
    (root / "devices/pci/nvme/nvme0n1/queue").mkdir(parents=True)
    (root / "devices/pci/nvme/nvme0n1/queue/scheduler").write_text("[none]\n")
    (root / "block").mkdir()
    os.symlink("../devices/pci/nvme/nvme0n1", root / "block/nvme0n1")
    os.symlink("/devices/pci", root / "abs")
    os.symlink("nvme0n1/queue", root / "devices/pci/nvme/q")
    os.symlink("../../block", root / "devices/pci/up")
    names = ["block", "nvme0n1", "queue", "scheduler", "abs", "nvme", "q", "up", "devices",
             "pci", "missing"]
    warm = Host(str(root))
    checked = 0
    for n in range(1, 4):
        for combo in itertools.product(names, repeat=n):
            path = "/" + "/".join(combo)
            cold = Host(str(root))
            try:
                want = cold.resolve(path)
            except Exception as exc:
                want = type(exc)
            try:
                got = warm.resolve(path)
            except Exception as exc:
                got = type(exc)
            assert got == want, path
            checked += 1
    assert checked > 1000


def _slow_host(root: Path) -> Host:
    """A Host that always takes the full component-by-component walk."""
    host = Host(str(root), live=True)
    host._resolve_fast = lambda path, strict: None  # type: ignore[method-assign]
    return host


def test_fast_resolve_equals_the_full_walk(tmp_path) -> None:
    """The one-lstat-per-new-component walk below a resolved directory gives the same
    answer (value or error) as the full walk, for resolve, non-strict resolve and reads:
    links to directories (relative, absolute, escaping), a file used as a directory, a
    FIFO and a dangling link at depth."""
    import itertools

    root = tmp_path / "r"
    d = root / "sys/devices/cpu0/cpuidle/state0"
    d.mkdir(parents=True)
    (d / "disable").write_text("0\n")
    os.mkfifo(d / "fifo")
    os.symlink("../../../../../../etc", root / "sys/devices/cpu0/esc")   # climbs out
    os.symlink("/sys/devices/cpu0", root / "sys/devices/cpu1")           # re-rooted
    os.symlink("cpuidle/state0", root / "sys/devices/cpu0/s")           # relative
    os.symlink("/nowhere", root / "sys/devices/cpu0/dangling")
    names = ["sys", "devices", "cpu0", "cpu1", "cpuidle", "state0", "disable", "fifo", "esc",
             "s", "dangling", "missing", "..", "."]
    warm = Host(str(root), live=True)
    checked = 0
    for n in range(1, 6):
        for combo in itertools.product(names, repeat=n):
            if n > 3 and combo[:2] != ("sys", "devices"):
                continue
            path = "/" + "/".join(combo)
            slow = _slow_host(root)
            for call in (lambda h, p=path: h.resolve(p),
                         lambda h, p=path: h.resolve(p, strict=False),
                         lambda h, p=path: h.read_bytes(p)):
                try:
                    want = call(slow)
                except Exception as exc:
                    want = type(exc)
                try:
                    got = _within(5, lambda c=call: c(warm))
                except Exception as exc:
                    got = type(exc)
                assert got == want, path
            checked += 1
    assert checked > 3000


def test_fast_resolve_refuses_a_link_that_escapes_below_a_resolved_dir(make_root) -> None:
    root = make_root({"/sys/devices/cpu0/online": "1\n", "/etc/secret": "no\n"},
                     links={"/sys/devices/cpu0/up": "../../../../../etc",
                            "/sys/devices/cpu0/abs": "/etc"})
    (tmp := root.parent / "outside-etc").mkdir()
    (tmp / "secret").write_text("outside\n")
    host = Host(str(root), live=True)
    assert host.read_text("/sys/devices/cpu0/online") == "1\n"   # cpu0 now a resolved dir
    with pytest.raises(PathEscape):
        host.read_text("/sys/devices/cpu0/up/secret")
    assert host.read_text("/sys/devices/cpu0/abs/secret") == "no\n"   # re-rooted
    assert host.resolve("/sys/devices/cpu0/abs/secret") == "/etc/secret"


def test_fast_resolve_never_opens_a_fifo_at_depth(make_root) -> None:
    root = make_root({"/sys/devices/cpu0/cpuidle/state0/latency": "2\n"})
    os.mkfifo(root / "sys/devices/cpu0/cpuidle/state0/disable")
    host = Host(str(root), live=True)
    assert host.read_text("/sys/devices/cpu0/cpuidle/state0/latency") == "2\n"
    with pytest.raises(NotRegularFile, match="FIFO"):
        _within(5, lambda: host.read_text("/sys/devices/cpu0/cpuidle/state0/disable"))
    assert host.reads == 1


def _hostile_tree(tmp_path: Path) -> Path:
    root = tmp_path / "h"
    d = root / "sys/devices/cpu0"
    (d / "cpuidle/state0").mkdir(parents=True)
    (d / "cpuidle/state0/disable").write_text("0\n")
    (d / "online").write_text("1\n")
    (d / "big").write_text("x" * 100)
    (d / "empty").write_text("")
    os.mkfifo(d / "fifo")
    os.symlink("online", d / "link")                        # to a file, relative
    os.symlink("/etc", d / "etcdir")                        # re-rooted directory
    os.symlink("../../../../../../../etc", d / "up")        # climbs out of the root
    (root / "etc").mkdir()
    (root / "etc/passwd").write_text("root-in-tree\n")
    return root


def test_read_many_equals_read_bytes(tmp_path) -> None:
    """Every outcome of read_many (value or error in place) is what read_bytes gives for
    the same path, on a hostile tree, with directories resolved before or not."""
    root = _hostile_tree(tmp_path)
    d = "/sys/devices/cpu0"
    paths = [f"{d}/online", f"{d}/big", f"{d}/empty", f"{d}/fifo", f"{d}/link",
             f"{d}/etcdir/passwd", f"{d}/up/passwd", f"{d}/cpuidle/state0/disable",
             f"{d}/cpuidle/state0", f"{d}/missing", f"{d}/nodir/x", f"{d}/online/x",
             f"{d}/./online", f"{d}/../cpu0/online", "relative/x", "/etc/passwd"]
    for warm in (False, True):
        ref = _slow_host(root)
        ref.read_cap = 50
        fast = Host(str(root), live=True, read_cap=50)
        if warm:
            fast.listdir(d, resolve_dirs=True)
            fast.listdir(f"{d}/cpuidle", resolve_dirs=True)
        want = []
        for p in paths:
            try:
                want.append(ref.read_bytes(p))
            except HostError as exc:
                want.append(type(exc))
        got = _within(5, lambda h=fast: h.read_many(paths + paths))   # 2nd half: cached
        assert [g if isinstance(g, bytes) else type(g) for g in got] == want + want
        assert fast.reads == ref.reads
    with pytest.raises(PathEscape):
        fast.read_bytes(f"{d}/up/passwd")                 # the error is cached as well
    offline = Host(str(root)).read_many([f"{d}/online"])
    assert isinstance(offline[0], LiveStateUnavailable)


def test_listdir_resolve_dirs_remembers_only_real_directories(tmp_path) -> None:
    root = _hostile_tree(tmp_path)
    d = "/sys/devices/cpu0"
    host = Host(str(root), live=True)
    assert host.listdir(d, resolve_dirs=True) == Host(str(root), live=True).listdir(d)
    assert host._prefixes[f"{d}/cpuidle"] == f"{d}/cpuidle"
    assert f"{d}/etcdir" not in host._prefixes and f"{d}/up" not in host._prefixes
    # below a remembered directory: one lstat; through a link: re-rooted or refused
    assert host.read_many([f"{d}/cpuidle/state0/disable"]) == [b"0\n"]
    assert host.read_text(f"{d}/etcdir/passwd") == "root-in-tree\n"
    with pytest.raises(PathEscape):
        host.read_text(f"{d}/up/passwd")
    assert host.listdir("/nowhere", resolve_dirs=True) == []
    assert host.listdir(f"{d}/online", resolve_dirs=True) == []


def test_reads_whole_files_of_any_kind(tmp_path) -> None:
    """A file is read to its end whatever its size says: on-disk files (size exact),
    procfs (size 0, more than one read) and the size cap at the boundary."""
    root = tmp_path / "r"
    root.mkdir()
    for n in (0, 1, 65535, 65536, 65537, 200_000):
        (root / f"f{n}").write_bytes(b"x" * n)
        assert Host(str(root)).read_bytes(f"/f{n}") == b"x" * n
    with pytest.raises(TooLarge):
        Host(str(root), read_cap=65535).read_bytes("/f65536")
    assert Host(str(root), read_cap=65536).read_bytes("/f65536") == b"x" * 65536
    if Path("/proc/self/mountinfo").exists():
        host = Host("/", live=True)
        assert host.read_text("/proc/self/mountinfo") == \
            Path("/proc/self/mountinfo").read_text()


def test_a_path_with_a_nul_byte_is_absent_not_a_crash(tmp_path) -> None:
    """A NUL byte in a path (named by a broken or hostile config file) makes os calls raise
    ValueError; the Host answers as for any absent file."""
    from aiaudit.core.errors import CommandError, NotFound

    (tmp_path / "etc").mkdir()
    host = Host(str(tmp_path))
    for call in (lambda: host.read_bytes("/etc/a\x00b"), lambda: host.read_text("/\x00"),
                 lambda: host.resolve("/etc/\x00", strict=False), lambda: host.lstat("/a\x00"),
                 lambda: host.stat("/etc/\x00")):
        with pytest.raises(NotFound):
            call()
    assert host.listdir("/etc/\x00") == [] and host.glob("/etc/\x00*") == []
    assert not host.exists("/etc/\x00") and not host.is_dir("/\x00")
    assert not host.is_file("/etc/x\x00") and host.readlink("/etc/\x00") is None
    assert host.try_read_text("/etc/\x00") is None
    assert isinstance(host.read_many(["/etc/a\x00b"])[0], NotFound)
    live = Host("/")
    if live.allow_commands:
        with pytest.raises(CommandError):
            live.run(["true", "a\x00b"])


# ------------------------------------------------------------------ commands
def test_command_output_is_capped_while_read() -> None:
    """``yes`` writes forever: the Host keeps at most the cap, kills it, and says so."""
    if which("yes") is None:
        pytest.skip("no yes(1)")
    code = (
        "from aiaudit.core.host import Host\n"
        "from aiaudit.core.errors import CommandError\n"
        "try:\n"
        "    Host('/', allow_commands=True).run(['yes'], timeout=20)\n"
        "except CommandError as exc:\n"
        "    print(exc)\n")
    from tests.hostile_trees import child_run

    got = child_run([sys.executable, "-c", code], timeout=30)
    assert "output over the 8388608-byte cap" in got.stdout, got.stderr
    assert got.maxrss_mb < 100, got.maxrss_mb  # 8 MiB kept, never the whole stream
    assert got.seconds < 10


def test_command_timeout_still_holds() -> None:
    if which("sleep") is None:
        pytest.skip("no sleep(1)")
    t0 = time.monotonic()
    with pytest.raises(CommandError, match="timed out"):
        Host("/", allow_commands=True).run(["sleep", "60"], timeout=0.3)
    # a deadline test, so wall time: the 0.3 s timeout must stop a command that sleeps
    # 60 s; generous for a loaded machine, far below the sleep
    assert time.monotonic() - t0 < 20


# ------------------------------------------------------------------ host cache budget
def test_host_cache_keeps_at_most_its_budget(tmp_path: Path) -> None:
    body = b"#" * (3 * 1024 * 1024)
    for i in range(12):
        (tmp_path / f"f{i}").write_bytes(body)
    host = Host(str(tmp_path))
    for i in range(12):
        assert host.read_bytes(f"/f{i}") == body
    assert host._cached <= CACHE_BUDGET
    reads = host.reads
    host.read_bytes("/f0")      # cached: within the budget
    host.read_bytes("/f11")     # past the budget: read again
    assert host.reads == reads + 1


def test_read_range_and_chunks_are_confined(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/data").write_bytes(bytes(range(256)) * 10)
    os.symlink("/../../../../etc/passwd", tmp_path / "etc/up")
    host = Host(str(tmp_path))
    assert host.read_range("/etc/data", 255, 3) == b"\xff\x00\x01"
    assert host.read_range("/etc/data", 2559, 100) == b"\xff"
    assert b"".join(host.read_chunks("/etc/data", cap=4096, chunk=1000)) == \
        bytes(range(256)) * 10
    with pytest.raises(TooLarge, match="read cap"):
        list(host.read_chunks("/etc/data", cap=100))
    with pytest.raises(PathEscape, match="outside the scanned root"):
        host.read_range("/etc/up", 0, 10)


def test_glob_results_are_cached_for_the_run(tmp_path: Path) -> None:
    (tmp_path / "etc/x.d").mkdir(parents=True)
    (tmp_path / "etc/x.d/a.conf").write_text("")
    host = Host(str(tmp_path))
    assert host.glob("/etc/x.d/*.conf") == ["/etc/x.d/a.conf"]
    (tmp_path / "etc/x.d/b.conf").write_text("")  # a scan sees one state of the host
    got = host.glob("/etc/x.d/*.conf")
    assert got == ["/etc/x.d/a.conf"]
    got.append("mutated")
    assert host.glob("/etc/x.d/*.conf") == ["/etc/x.d/a.conf"]


# ------------------------------------------------------------------ kernel log
def _kmsg_readable() -> bool:
    try:
        os.close(os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK))
    except OSError:
        return False
    return True


def _kmsg_records(host: Host, **kw) -> list[bytes]:
    blocks = list(host.read_kmsg(**{"cap": 1 << 26, "max_records": 1 << 20, **kw}))
    assert all(b.endswith(b"\n") for b in blocks)  # whole records only
    return [ln for b in blocks for ln in b.split(b"\n") if ln and not ln.startswith(b" ")]


def test_read_kmsg_reads_the_live_log_without_consuming_it() -> None:
    """Two readers each get the whole buffer from the oldest record (a reader has its own
    position; nothing is cleared), record by record, ending at EAGAIN without blocking."""
    if not _kmsg_readable():
        pytest.skip("/dev/kmsg cannot be opened here (kernel.dmesg_restrict, no device)")
    host = Host("/", live=True)
    first = _within(10, lambda: _kmsg_records(host))
    again = _within(10, lambda: _kmsg_records(Host("/", live=True)))
    assert first and again
    assert first[0] == again[0]  # the oldest record is still there: not consumed
    head = first[0].split(b";", 1)[0].split(b",")
    assert len(head) >= 4 and all(p.isdigit() for p in head[:3])  # prio,seq,usec,flags
    seqs = [int(r.split(b",", 2)[1]) for r in first]
    assert seqs == sorted(seqs)
    assert len(_kmsg_records(host, max_records=2)) == 2  # bounded
    assert len(_kmsg_records(host, cap=1)) == 1  # the byte cap stops it
    if len(first) > 3:  # small blocks: the same records, cut at record boundaries
        assert _kmsg_records(host, block=1) == first[:len(_kmsg_records(host, block=1))]


def test_read_kmsg_only_on_the_real_live_root(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/kmsg").write_text("6,1,2,-;text\n")
    for host in (Host(str(tmp_path), live=True), Host(str(tmp_path)), Host("/", live=False)):
        with pytest.raises(LiveStateUnavailable, match="real / live"):
            list(host.read_kmsg(cap=100, max_records=10))
