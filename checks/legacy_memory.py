"""``memory.thp``, ``memory.shm`` and ``memory.swap``: memory settings a training host needs.

* Transparent hugepages (Documentation/admin-guide/mm/transhuge.rst): live
  ``/sys/kernel/mm/transparent_hugepage/{enabled,defrag}`` (bracketed choice).  At boot:
  the kernel default (``CONFIG_TRANSPARENT_HUGEPAGE_{ALWAYS,MADVISE,NEVER}`` in
  ``/boot/config-*`` for ``enabled``; ``madvise`` for ``defrag``, mm/huge_memory.c), then
  ``transparent_hugepage=`` on the command line the bootloader will pass (``enabled``
  only), enabled services writing the file, tuned ``[vm] transparent_hugepages`` /
  ``transparent_hugepage.defrag``.
* ``/dev/shm`` (PyTorch DataLoader workers pass tensors through it): live the last
  ``/dev/shm`` line of ``/proc/mounts`` (tmpfs shows ``size=`` only when it is not the
  default of half the RAM; ``size=0`` = unlimited; mm/shmem.c ``shmem_show_options``);
  offline the ``/etc/fstab`` entry, else systemd's default mount (half the RAM).
* Swap: live ``/proc/swaps``; at boot ``/etc/fstab`` swap lines (not ``noauto``), enabled
  ``.swap`` units, zram-generator configuration (zram-generator.conf(5)).
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.verdict import verdict
from aiaudit.linux import sysfs
from aiaudit.linux.kernel.config import kernel_config, kernel_config_missing
from aiaudit.linux.storage import fstab
from aiaudit.linux.sysfs import read_opt
from aiaudit.linux.systemd import units as systemd
from aiaudit.linux.systemd.bootcmds import oneshot_unit, sysfs_writes

THP = "/sys/kernel/mm/transparent_hugepage"
FSTAB = "/etc/fstab"
THP_UNIT = "/etc/systemd/system/aiaudit-thp-defrag.service"
ZRAM_CONFS = ("/etc/systemd/zram-generator.conf", "/run/systemd/zram-generator.conf",
              "/usr/local/lib/systemd/zram-generator.conf",
              "/usr/lib/systemd/zram-generator.conf")

THP_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["setting", "allowed"],
    "properties": {
        "setting": {"enum": ["enabled", "defrag"]},
        "allowed": {"type": "array", "minItems": 1, "items": {
            "enum": ["always", "madvise", "never", "defer", "defer+madvise"]}},
        "persist": {"type": "boolean", "default": True},
    },
}
SHM_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "min_size": {"type": "string", "pattern": r"^\d+(\.\d+)?%$|^\d+[kKmMgGtT]?$",
                     "default": "50%",
                     "description": "smallest acceptable /dev/shm: 16G or 40% (of RAM)"},
        "persist": {"type": "boolean", "default": True},
    },
}
SWAP_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "must_be_off": {"type": "boolean", "default": True,
                        "description": "fail when swap is active or configured"},
        "persist": {"type": "boolean", "default": True},
    },
}



def _kernel_config_value(host: Host, prefix: str, choices: tuple[str, ...]
                         ) -> tuple[str, str, int] | None:
    """(choice, file, line) of the ``CONFIG_<prefix>_<CHOICE>=y`` line of a Kconfig choice
    in the kernel config.  Only the choice's own symbols count: other options share the
    prefix (``CONFIG_TRANSPARENT_HUGEPAGE_SHMEM_HUGE_ALWAYS``, the shmem default since
    6.14, is not the anonymous-memory default)."""
    kc = kernel_config(host)
    if kc is None:
        return None
    path, text = kc
    names = "|".join(c.upper() for c in choices)
    for n, line in enumerate(text.splitlines(), 1):
        m = re.fullmatch(rf"CONFIG_{prefix}_({names})=y", line.strip())
        if m:
            return m.group(1).lower(), path, n
    return None


# ------------------------------------------------------------------ THP
def run_thp(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate a THP rule."""
    # only the THP rules read the boot configuration and tuned (a Slurm prolog's /dev/shm
    # rule loads this module without them)
    from aiaudit.linux.boot import cmdline as boot
    from aiaudit.linux.tuned import profiles as tuned

    host, p = ctx.host, ctx.params
    setting, allowed = p["setting"], list(p["allowed"])
    want = "one of " + ", ".join(allowed)
    what = f"transparent_hugepage/{setting}"
    path = f"{THP}/{setting}"
    ev: list[Evidence] = []
    unknown_ev: Evidence | None = None
    """What was looked for when nothing sets ``enabled`` at boot."""
    runtime = None
    if host.live:
        text = read_opt(host, path)
        if text is None:
            yield Result(Status.SKIP, what, f"{path} is absent: the kernel has no "
                         "transparent hugepage support", evidence=(Evidence.runtime(path),))
            return
        try:
            runtime = sysfs.parse_choice(text).active
        except ParseError as exc:
            yield Result(Status.ERROR, what, f"{path}: {exc}", evidence=(
                Evidence.runtime(path, text),))
            return
        ev.append(Evidence.runtime(path, text))
    try:
        value, source, explicit = None, "kernel default unknown: no /boot/config-*", False
        if setting == "defrag":
            value, source = "madvise", "kernel default (since 4.6)"
            ev.append(Evidence.default("THP defrag default", "madvise"))
        else:
            kc = _kernel_config_value(host, "TRANSPARENT_HUGEPAGE", ("always", "madvise", "never"))
            if kc is not None:
                value, source = kc[0], f"kernel default ({kc[1].lstrip('/')}:{kc[2]})"
                ev.append(Evidence.file(kc[1], kc[2]))
            cfg = boot.load(host)
            if cfg.booted is not None:
                bp = cfg.booted.get("transparent_hugepage")
                if bp is not None and bp.value:
                    value, source, explicit = bp.value, f"{bp} on {cfg.booted.where()}", True
                    ev.append(cfg.booted.evidence("transparent_hugepage"))
            if value is None:
                kconf = kernel_config(host)
                missing = kernel_config_missing(host)
                if kconf is not None:  # a config without the choice (not "no config")
                    missing = (f"{kconf[0].lstrip('/')} has no "
                               "CONFIG_TRANSPARENT_HUGEPAGE_{ALWAYS,MADVISE,NEVER}=y")
                    source = f"kernel default unknown: {missing}"
                cmdline = (f"no transparent_hugepage= on {cfg.booted.where()}" if cfg.booted
                           else boot.not_found())
                unknown_ev = Evidence.default(
                    f"{what} at boot: {cmdline}; no enabled unit writing {what}; "
                    + tuned.load(host).lacks("vm", "transparent_hugepages"),
                    f"kernel default unknown: {missing}")
        competing: list[str] = []
        for v, _path, c in sysfs_writes(host, rf"transparent_hugepage/{setting}$"):
            value, source, explicit = v, f"{c.unit} ({c.file.lstrip('/')}:{c.line})", True
            ev.append(Evidence.file(c.file, c.line, c.text))
            if v not in allowed and c.file != THP_UNIT:
                competing.append(f"{source} sets {v}: change or disable it")
        st = tuned.load(host)
        keys = ("transparent_hugepages", "transparent_hugepage") if setting == "enabled" \
            else ("transparent_hugepage.defrag",)
        for k in keys:
            o = st.get("vm", k)
            if o is not None:
                value, explicit = o.value.strip(), True
                source = f"{st.describe()} [vm] {k} ({o.file.lstrip('/')}:{o.line})"
                ev.append(Evidence.file(o.file, o.line, f"{k}={o.value}"))
                if value not in allowed:
                    # tuned writes sysfs after boot: it beats any boot parameter or unit
                    competing.append(f"{source} sets {value}: change it in the tuned profile")
                break
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, what, f"boot-time {what} cannot be determined: {exc}",
                     evidence=Evidence.unreadable(exc))
        return
    if value is None and unknown_ev is not None:  # nothing set it at boot
        ev.append(unknown_ev)
    boot_ok = None if value is None else value in allowed
    if host.live and not p.get("persist", True) and runtime in allowed:
        boot_ok = True
    status, aspect, msg = verdict(host.live, None if runtime is None else runtime in allowed,
                                  boot_ok, boot_set=explicit, what=what,
                                  runtime_txt=str(runtime),
                                  boot_txt=f"{value} ({source})" if value else source,
                                  want=want)
    rem = None
    if status is Status.FAIL:
        val = allowed[0]
        now = Snippet.command(f"echo {val} > {path}", "apply now")
        if setting == "enabled":
            bcfg = boot.load(host)
            summary, snips = boot.set_params(bcfg, [f"transparent_hugepage={val}"])
            step = {"manual": "; ".join(competing)} if competing else \
                boot.params_step(bcfg)
            rem = Remediation(summary + " Apply it now through sysfs.", (*snips, now), **step)
        else:
            rem = Remediation(f"Set THP defrag to {val} at boot with a oneshot unit "
                              f"({THP_UNIT}) and now through sysfs.", (
                                  Snippet.file(THP_UNIT, oneshot_unit(
                                      f"THP defrag {val}", f"echo {val} > {path}")),
                                  Snippet.enable(THP_UNIT.rsplit("/", 1)[1],
                                                 "run it at boot"), now),
                              manual="; ".join(competing))
    yield Result(status, what, msg, expected=want, actual=runtime or value, aspect=aspect,
                 evidence=tuple(ev), remediation=rem)


# ------------------------------------------------------------------ /dev/shm
def _shm_size(m: fstab.Mount | None) -> sysfs.Size | None:
    """Size of a /dev/shm tmpfs mount; ``None`` = unlimited; no ``size=`` = half the RAM."""
    if m is None:
        return sysfs.Size(percent=50)
    opt = m.option("size")
    if opt is None:
        nr = m.option("nr_blocks")
        if nr is not None:
            n = sysfs.parse_size(nr)
            return sysfs.Size(bytes=(n.bytes or 0) * 4096) if n.bytes else None
        return sysfs.Size(percent=50)
    s = sysfs.parse_size(opt)
    if s.bytes == 0 or s.percent == 0:
        return None
    return s


def _ge(size: sysfs.Size | None, minimum: sysfs.Size, ram: int | None) -> bool | None:
    if size is None:
        return True  # unlimited
    if size.percent is not None and minimum.percent is not None:
        return size.percent >= minimum.percent
    a, b = size.resolve(ram), minimum.resolve(ram)
    if a is None or b is None:
        return None
    return a >= b


def run_shm(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate the /dev/shm size rule."""
    host, p = ctx.host, ctx.params
    minimum = sysfs.parse_size(p["min_size"])
    want = f">= {minimum}" + (" of RAM" if minimum.percent is not None else "")
    ev: list[Evidence] = []
    ram = None
    runtime = None
    rt_txt = ""
    try:
        if host.live:
            mi = read_opt(host, "/proc/meminfo")
            kb = fstab.meminfo_total_kb(mi or "")
            ram = kb * 1024 if kb else None
            mounts = fstab.parse(host.read_text("/proc/mounts"))
            shm = [m for m in mounts if m.target == "/dev/shm"]
            if not shm or shm[-1].fstype != "tmpfs":
                runtime_ok: bool | None = False
                rt_txt = "not a tmpfs mount" if shm else "not mounted"
            else:
                runtime = _shm_size(shm[-1])
                runtime_ok = _ge(runtime, minimum, ram)
                rt_txt = _size_txt(runtime, ram)
            ev.append(Evidence.runtime("/proc/mounts", shm[-1].raw.strip() if shm else None))
        fst = host.try_read_text(FSTAB)
        entries = [m for m in fstab.parse(fst or "") if m.target == "/dev/shm"
                   and "noauto" not in m.options]
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "/dev/shm", f"/dev/shm size cannot be determined: {exc}",
                     evidence=Evidence.unreadable(exc))
        return
    entry = entries[-1] if entries else None
    if entry is not None:
        ev.append(Evidence.file(FSTAB, entry.line, entry.raw.strip()))
        boot_size = _shm_size(entry) if entry.fstype == "tmpfs" else sysfs.Size(bytes=0)
        src = f"{FSTAB.lstrip('/')}:{entry.line}"
    else:
        boot_size = sysfs.Size(percent=50)
        src = "systemd default mount, half of RAM"
        ev.append(Evidence.default("/dev/shm without an fstab entry", "50% of RAM"))
    boot_ok = _ge(boot_size, minimum, ram)
    boot_txt = f"{_size_txt(boot_size, ram)} ({src})"
    if not host.live and boot_ok is None:
        yield Result(Status.ERROR, "/dev/shm", f"/dev/shm at boot is {boot_txt}; it cannot be "
                     f"compared with {want} offline (the RAM size is unknown)", expected=want,
                     aspect=Aspect.PERSISTED, evidence=tuple(ev))
        return
    if host.live and not p.get("persist", True) and runtime_ok:
        boot_ok = True
    status, aspect, msg = verdict(host.live, runtime_ok if host.live else None, boot_ok,
                                  boot_set=entry is not None, what="/dev/shm size",
                                  runtime_txt=rt_txt, boot_txt=boot_txt, want=want)
    rem = None
    if status is Status.FAIL:
        from aiaudit.core import edits  # the fix's edit script: only for a failure

        size = str(minimum) if minimum.percent is None else f"{minimum.percent:g}%"
        line = f"tmpfs /dev/shm tmpfs rw,nosuid,nodev,size={size} 0 0\n"
        where = (f" (replace {FSTAB.lstrip('/')}:{entry.line})" if entry is not None else "")
        # /etc/fstab is not a drop-in: the fix edits it in place instead of replacing it
        rem = Remediation(f"Mount /dev/shm with size={size} from /etc/fstab{where}: "
                          f"`{line.strip()}`, and remount it now. In containers, raise "
                          "--shm-size instead.", (
                              Snippet.edit(FSTAB, edits.SET_MOUNT + " " + line.strip(),
                                           "make it the /dev/shm line of /etc/fstab"),
                              Snippet.command(f"mount -o remount,size={size} /dev/shm",
                                              "resize now")))
    yield Result(status, "/dev/shm", msg, expected=want,
                 actual=rt_txt if host.live else boot_txt, aspect=aspect,
                 evidence=tuple(ev), remediation=rem)


def _size_txt(size: sysfs.Size | None, ram: int | None) -> str:
    if size is None:
        return "unlimited"
    if size.percent is not None:
        b = size.resolve(ram)
        return f"{size} of RAM" + (f" ({sysfs.human_bytes(b)})" if b else "")
    return str(size)


# ------------------------------------------------------------------ swap
def _zram(host: Host) -> list[tuple[str, int, str]]:
    """zram swap devices zram-generator will create: (file, line, section)."""
    chosen = None
    for f in ZRAM_CONFS:
        if host.lstat_exists(f):
            chosen = f
            break
    files = [] if chosen is None or host.is_masked(chosen) else [chosen]
    for d in ("/etc/systemd/zram-generator.conf.d", "/run/systemd/zram-generator.conf.d",
              "/usr/local/lib/systemd/zram-generator.conf.d",
              "/usr/lib/systemd/zram-generator.conf.d"):
        files += [f"{d}/{n}" for n in host.listdir(d) if n.endswith(".conf")]
    sections: dict[str, tuple[str, int, str, bool]] = {}
    for f in files:
        text = host.try_read_text(f) or ""
        sec = None
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            m = re.fullmatch(r"\[(zram\d+)\]", line)
            if m:
                sec = m.group(1)
                prev = sections.get(sec)
                sections[sec] = (f, n, sec, prev[3] if prev else True)
            elif sec and "=" in line and not line.startswith("#"):
                k, _, v = line.partition("=")
                if k.strip() in ("zram-size", "zram-fraction") and v.strip() in ("0", "0.0"):
                    sections[sec] = (*sections[sec][:3], False)
                if k.strip() == "fs-type" and v.strip() != "swap":
                    sections[sec] = (*sections[sec][:3], False)
    gen = any(host.exists(f"{d}/zram-generator") for d in (
        "/usr/lib/systemd/system-generators", "/lib/systemd/system-generators"))
    return [(f, n, s) for f, n, s, on in sections.values() if on and gen]


def run_swap(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate the swap rule."""
    host, p = ctx.host, ctx.params
    if not p.get("must_be_off", True):
        yield Result(Status.SKIP, "swap", "the ruleset allows swap (must_be_off: false)")
        return
    ev: list[Evidence] = []
    active: list[str] = []
    try:
        if host.live:
            swaps = fstab.parse_swaps(host.read_text("/proc/swaps"))
            active = [f"{s.filename} ({s.type}, {s.size_kb} kB)" for s in swaps]
            ev.append(Evidence.runtime("/proc/swaps", "; ".join(active) or "none"))
        configured: list[str] = []
        for m in fstab.parse(host.try_read_text(FSTAB) or ""):
            if m.fstype == "swap" and "noauto" not in m.options:
                configured.append(f"{m.spec} ({FSTAB.lstrip('/')}:{m.line})")
                ev.append(Evidence.file(FSTAB, m.line, m.raw.strip()))
        units: list[str] = []
        for d in systemd.ENABLE_DIRS:
            for sub in host.listdir(d):
                if sub.endswith((".wants", ".requires")):
                    for n in host.listdir(f"{d}/{sub}"):
                        # a masked unit never starts (systemctl mask: /etc/systemd/system)
                        masked = any(host.is_masked(f"{m}/{n}") for m in (
                            "/etc/systemd/system", "/run/systemd/system"))
                        if n.endswith(".swap") and n not in units and not masked:
                            units.append(n)
                            configured.append(f"{n} (enabled in {d.lstrip('/')}/{sub})")
                            ev.append(Evidence.file(f"{d}/{sub}/{n}"))
        for f, n, sec in _zram(host):
            configured.append(f"zram-generator {sec} ({f.lstrip('/')}:{n})")
            ev.append(Evidence.file(f, n, f"[{sec}]"))
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "swap", f"swap configuration cannot be determined: {exc}",
                     evidence=Evidence.unreadable(exc))
        return
    boot_txt = ", ".join(configured) if configured else "no swap configured (fstab, .swap " \
        "units, zram-generator; GPT auto-discovered swap partitions are not visible offline)"
    boot_ok = not configured
    if host.live and not p.get("persist", True) and not active:
        boot_ok = True
    status, aspect, msg = verdict(host.live, not active, boot_ok, boot_set=bool(configured),
                                  what="swap", runtime_txt=", ".join(active) or "off",
                                  boot_txt=boot_txt, want="off")
    rem = None
    if status is Status.FAIL:
        from aiaudit.core import edits  # the fix's edit script: only for a failure

        # /etc/fstab is not a drop-in: the fix edits it in place (also under ROOT=)
        snips = [Snippet.edit(FSTAB, edits.COMMENT_SWAP, "comment out swap lines")]
        snips += [Snippet.mask(u, "stop the swap unit at boot") for u in units]
        if any(c.startswith("zram-generator") for c in configured):
            snips.append(Snippet.file("/etc/systemd/zram-generator.conf",
                                      "# no zram swap on training hosts (aiaudit)\n",
                                      "an empty /etc config overrides the vendor one"))
        snips.append(Snippet.command("swapoff -a", "turn swap off now"))
        rem = Remediation("Turn swap off now and remove it from the boot configuration.",
                          tuple(snips))
    yield Result(status, "swap", msg, expected="off",
                 actual=(", ".join(active) or "off") if host.live else boot_txt,
                 aspect=aspect, evidence=tuple(ev), remediation=rem)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register the memory checks."""
    return [
        CheckSpec(id="memory.thp", title="Transparent hugepages are in an allowed mode",
                  run=run_thp, params_schema=THP_SCHEMA,
                  description=(
                      "Live: /sys/kernel/mm/transparent_hugepage/<setting>. Boot: kernel "
                      "config default, transparent_hugepage= on the boot command line, units "
                      "writing the file, tuned [vm].")),
        CheckSpec(id="memory.shm", title="/dev/shm is large enough for DataLoader workers",
                  run=run_shm, params_schema=SHM_SCHEMA,
                  description=(
                      "Live: /dev/shm in /proc/mounts (no size= means half of MemTotal). "
                      "Boot: the /etc/fstab entry, else systemd's default (half of RAM).")),
        CheckSpec(id="memory.swap", title="Swap is off",
                  run=run_swap, params_schema=SWAP_SCHEMA,
                  description=(
                      "Live: /proc/swaps. Boot: /etc/fstab swap lines, enabled .swap units, "
                      "zram-generator config.")),
    ]
