"""Oracle driver: runs the REAL pam_limits module (libpam-modules) over a corpus of cases.

Run as root inside fresh mount and PID namespaces, so that this process is PID 1 (pam_limits
on Debian reads its starting values from ``/proc/1/limits``) and bind mounts stay private::

    unshare -m -p -f --mount-proc python3 pam_limits_driver.py < cases.json > results.json

Each case (JSON): ``files`` (``{"limits.conf": text|null, "limits.d/NAME": text}``, paths
relative to /etc/security; ``null`` = absent; ``{"link": target}`` = symlink), ``passwd``,
``group`` (file contents), ``user``, ``args`` (pam_limits module arguments), or instead
``pamd`` (``{name: text}`` for /etc/pam.d) and ``service`` (the service to open), ``pid1`` and
``child`` (``{"nofile": [soft, hard], "memlock": [soft, hard]}``, -1 = unlimited): the limits
of PID 1 and of the process that opens the session; ``items`` (default nofile and memlock;
also core, nproc) the limits to report.  Each result: ``open`` (the return code of
pam_open_session) and those limits of the session process after it.

Directory users (``nss``: ``{"nsswitch": text, "passwd": text, "group": text}``): the users
and groups only NSS knows, served by libnss-extrausers from ``/var/lib/extrausers`` and named
by the case's ``/etc/nsswitch.conf``; ``/etc/ssh`` then holds only ``sshd_config``
(``sshd_config`` of the case, default ``UsePAM yes``).  ``scan`` (an argv): after the session,
the driver runs it in the same namespaces (the same files, NSS and PID 1) and adds ``scan``
(``{"rc": code, "out": stdout, "err": stderr}``) to the result: a live aiaudit scan judged on
exactly what the real module saw.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile

SERVICE = "aiaudit-oracle"
RES = {"nofile": resource.RLIMIT_NOFILE, "memlock": resource.RLIMIT_MEMLOCK,
       "core": resource.RLIMIT_CORE, "nproc": resource.RLIMIT_NPROC}


def _lim(v: int) -> int:
    return resource.RLIM_INFINITY if v == -1 else v


def _out(v: int) -> int:
    return -1 if v == resource.RLIM_INFINITY else v


def _set(spec: dict) -> None:
    for name, (soft, hard) in spec.items():
        resource.setrlimit(RES[name], (_lim(soft), _lim(hard)))


class _Conv(ctypes.Structure):
    _fields_ = [("conv", ctypes.c_void_p), ("appdata_ptr", ctypes.c_void_p)]


_CONV_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                            ctypes.c_void_p)


def _refuse(n, msg, resp, data):  # pam_limits only converses to report "too many logins"
    return 19  # PAM_CONV_ERR


_REFUSE = _CONV_FN(_refuse)


def _session(libpam, case: dict) -> dict:
    _set(case.get("child") or {})
    pamh = ctypes.c_void_p()
    conv = _Conv(ctypes.cast(_REFUSE, ctypes.c_void_p), None)
    service = case.get("service", SERVICE)
    rc = libpam.pam_start(service.encode(), case["user"].encode(), ctypes.byref(conv),
                          ctypes.byref(pamh))
    if rc != 0:
        return {"start": rc}
    rc = libpam.pam_open_session(pamh, 0)
    out = {"open": rc}
    for name in case.get("items", ("nofile", "memlock")):  # core, nproc: on request
        soft, hard = resource.getrlimit(RES[name])
        out[name] = [_out(soft), _out(hard)]
    return out


def _write_tree(sec: str, files: dict) -> None:
    for name in os.listdir(sec):
        p = os.path.join(sec, name)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        else:
            os.unlink(p)
    os.mkdir(os.path.join(sec, "limits.d"))
    for rel, content in files.items():
        if content is None:
            continue
        p = os.path.join(sec, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if isinstance(content, dict) and "link" in content:
            os.symlink(content["link"], p)
        elif isinstance(content, dict) and "dir" in content:
            os.mkdir(p)
        else:
            with open(p, "wb") as fh:
                fh.write(content.encode("latin-1"))


def _overwrite(path: str, text: str) -> None:
    with open(path, "w") as fh:  # same inode: the bind mount keeps showing it
        fh.write(text)


def main() -> int:
    if os.getpid() != 1 or os.geteuid() != 0:
        print("must run as root as PID 1 of a new PID namespace", file=sys.stderr)
        return 2
    cases = json.load(sys.stdin)
    tmp = tempfile.mkdtemp(prefix="pam-oracle-")
    try:
        return _run(cases, tmp)
    finally:
        for dst in ("/etc/security", "/etc/pam.d", "/etc/passwd", "/etc/group", *NSS_MOUNTS):
            subprocess.run(["umount", dst], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


NSS_MOUNTS = ("/etc/nsswitch.conf", "/var/lib/extrausers", "/etc/ssh")


def _nss_binds(tmp: str) -> dict[str, str]:
    """Bind the case-owned NSS files (nsswitch.conf, the extrausers folder, /etc/ssh) over
    the machine's, in this private mount namespace; their paths here."""
    paths = {"nsswitch": os.path.join(tmp, "nsswitch.conf"),
             "extrausers": os.path.join(tmp, "extrausers"), "ssh": os.path.join(tmp, "ssh")}
    _overwrite(paths["nsswitch"], "")
    os.mkdir(paths["extrausers"])
    os.mkdir(paths["ssh"])
    for src, dst in zip(paths.values(), NSS_MOUNTS, strict=True):
        subprocess.run(["mount", "--bind", src, dst], check=True)
    return paths


def _nss_case(paths: dict[str, str], case: dict) -> None:
    nss = case["nss"]
    _overwrite(paths["nsswitch"], nss["nsswitch"])
    for name in ("passwd", "group"):
        _overwrite(os.path.join(paths["extrausers"], name), nss[name])
    _overwrite(os.path.join(paths["ssh"], "sshd_config"),
               case.get("sshd_config", "UsePAM yes\n"))


def _scan(argv: list[str]) -> dict:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    return {"rc": proc.returncode, "out": proc.stdout, "err": proc.stderr[-4000:]}


def _run(cases: list[dict], tmp: str) -> int:
    sec, pamd = os.path.join(tmp, "security"), os.path.join(tmp, "pam.d")
    os.mkdir(sec)
    os.mkdir(pamd)
    for name in ("passwd", "group"):
        _overwrite(os.path.join(tmp, name), "")
    for src, dst in ((sec, "/etc/security"), (pamd, "/etc/pam.d"),
                     (os.path.join(tmp, "passwd"), "/etc/passwd"),
                     (os.path.join(tmp, "group"), "/etc/group")):
        subprocess.run(["mount", "--bind", src, dst], check=True)
    nss_paths = _nss_binds(tmp) if any("nss" in c for c in cases) else None
    libpam = ctypes.CDLL("libpam.so.0")
    results = []
    for case in cases:
        if nss_paths is not None and "nss" in case:
            _nss_case(nss_paths, case)
        _write_tree(sec, case.get("files") or {})
        _overwrite(os.path.join(tmp, "passwd"), case["passwd"])
        _overwrite(os.path.join(tmp, "group"), case["group"])
        for name in os.listdir(pamd):
            os.unlink(os.path.join(pamd, name))
        stack = case.get("pamd") or {
            SERVICE: f"session required pam_limits.so {case.get('args', '')}\n"}
        for name, text in stack.items():
            _overwrite(os.path.join(pamd, name), text)
        _set(case.get("pid1") or {})
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                res = _session(libpam, case)
            except BaseException as exc:  # report, never hang the corpus
                res = {"error": repr(exc)}
            os.write(w, json.dumps(res).encode())
            os._exit(0)
        os.close(w)
        chunks = []
        while True:
            b = os.read(r, 65536)
            if not b:
                break
            chunks.append(b)
        os.close(r)
        os.waitpid(pid, 0)
        results.append(json.loads(b"".join(chunks) or b'{"error": "no output"}'))
        if case.get("scan"):
            results[-1]["scan"] = _scan(case["scan"])
    json.dump(results, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
