"""The compiled-in initial value of a sysctl, read from a real kernel image (a test
oracle for kernel defaults and distribution patches, issue 27).

``extract(vmlinuz)`` decompresses the ``vmlinux`` inside a bzImage (zstd or xz payload,
the tools the host has); ``initial_values(vmlinux, names)`` finds each name's
``struct ctl_table`` entry (a pointer to the ``procname`` string, then the ``data``
pointer) and reads the ``int`` the data pointer names: from ``.data`` as stored, 0 in
``.bss``.  Only for sysctls whose ``data`` is a plain global (not per network namespace,
not per CPU); the callers list such names.  Uses ``readelf`` (binutils) for the section
table.  Checked by hand on Debian 12's 6.1.192-3 and Debian 13's 6.12.117-1 images
(fs.protected_symlinks 1, kernel.perf_event_paranoid 3, kernel.yama.ptrace_scope 0,
vm.swappiness 60)."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

MAGICS = ((b"\x28\xb5\x2f\xfd", ["zstd", "-dc"]), (b"\xfd7zXZ\x00", ["xz", "-dc"]))


def available() -> str | None:
    """Why the oracle cannot run here, or ``None``."""
    for tool in ("readelf", "zstd", "xz"):
        if shutil.which(tool) is None:
            return f"{tool} not installed"
    return None


def extract(vmlinuz: Path, out: Path) -> Path:
    """Decompress the kernel inside ``vmlinuz`` to ``out``."""
    data = vmlinuz.read_bytes()
    for magic, cmd in MAGICS:
        i = data.find(magic)
        if i >= 0:
            p = subprocess.run(cmd, input=data[i:], capture_output=True, timeout=300)
            out.write_bytes(p.stdout)  # trailing bytes after the stream make it exit 1
            return out
    raise ValueError(f"{vmlinuz}: no zstd or xz payload")


def _sections(vmlinux: Path) -> list[tuple[str, str, int, int, int]]:
    out = subprocess.run(["readelf", "-SW", str(vmlinux)], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    secs = []
    for line in out.splitlines():
        p = line.replace("[ ", "[").split()
        if len(p) > 5 and p[0].startswith("[") and p[0].endswith("]") and p[1] != "Name":
            secs.append((p[1], p[2], int(p[3], 16), int(p[4], 16), int(p[5], 16)))
    return secs


def initial_values(vmlinux: Path, names: list[str]) -> dict[str, int]:
    """{procname: initial value} of the names found (a name whose entry is not found, or
    whose data is not in ``.data``/``.bss``, is left out)."""
    data = vmlinux.read_bytes()
    secs = _sections(vmlinux)

    def v2o(v: int) -> tuple[str | None, int | None]:
        for name, typ, addr, off, size in secs:
            if addr <= v < addr + size:
                return name, (None if typ == "NOBITS" else off + v - addr)
        return None, None

    def o2v(o: int) -> int | None:
        for _name, typ, addr, off, size in secs:
            if typ != "NOBITS" and addr and off <= o < off + size:
                return addr + o - off
        return None

    found: dict[str, int] = {}
    for procname in names:
        s = data.find(b"\x00" + procname.encode() + b"\x00")
        va = o2v(s + 1) if s >= 0 else None
        if va is None:
            continue
        ptr = struct.pack("<Q", va)
        i = data.find(ptr)
        while i >= 0:
            dptr = struct.unpack("<Q", data[i + 8:i + 16])[0]
            sec, off = v2o(dptr)
            if sec in (".data", ".bss"):
                found[procname] = 0 if off is None else struct.unpack(
                    "<i", data[off:off + 4])[0]
                break
            i = data.find(ptr, i + 1)
    return found
