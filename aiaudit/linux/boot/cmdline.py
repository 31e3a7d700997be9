"""The kernel command line: what runs now (``/proc/cmdline``) and what the bootloader of
the scanned root will pass at the next boot.

Which file decides, in order: Boot Loader Specification entries
(``/boot/loader/entries/*.conf``, the newest non-rescue entry, ``$var`` from
``/boot/grub2/grubenv`` expanded as grub's blscfg does), else the first ``linux`` line of a
generated ``/boot/grub/grub.cfg`` / ``/boot/grub2/grub.cfg``, else ``/etc/kernel/cmdline``
(kernel-install(8)), else what ``grub-mkconfig`` would generate from ``/etc/default/grub``
and ``/etc/default/grub.d/*.cfg`` (Debian sources the drop-ins after the main file).  The
``/etc/default/grub`` result is also kept as the *generator* view: when it differs from
what is installed, the edit has not been applied (``update-grub`` / ``grub2-mkconfig`` not
run).
"""

from __future__ import annotations

import re
from dataclasses import field

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence, Snippet
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record
from aiaudit.linux.boot import loaders as bc
from aiaudit.linux.boot.loaders import Param

DEFAULT_GRUB = "/etc/default/grub"
GRUB_DROPINS = "/etc/default/grub.d"
KERNEL_CMDLINE = "/etc/kernel/cmdline"
BLS_DIR = "/boot/loader/entries"
GRUB_CFGS = ("/boot/grub/grub.cfg", "/boot/grub2/grub.cfg", "/boot/efi/EFI/debian/grub.cfg")
GRUBENVS = ("/boot/grub2/grubenv", "/boot/grub/grubenv")
DROPIN = "/etc/default/grub.d/99-aiaudit.cfg"
SEARCHED = (f"{BLS_DIR}/*.conf", *GRUB_CFGS, KERNEL_CMDLINE, DEFAULT_GRUB, f"{GRUB_DROPINS}/*.cfg")
"""Where :func:`load` looks for the next boot's command line, in its order."""
_VAR = lazy_pattern(r"\$(?:\{(\w+)\}|(\w+))")


@record
class CmdlineSource:
    """A kernel command line and the file it comes from."""

    kind: str
    """``bls``, ``grub.cfg``, ``kernel-cmdline``, ``default-grub`` or ``proc``."""
    path: str
    line: int | None
    text: str
    params: tuple[Param, ...]
    origins: dict[str, tuple[str, int]] = field(default_factory=dict)
    """For ``default-grub``: normalised param name -> (file, line) of the assignment."""

    def get(self, name: str) -> Param | None:
        """Last occurrence of ``name``."""
        return bc.last(list(self.params), name)

    def evidence(self, name: str | None = None) -> Evidence:
        """Evidence for the whole line, or for the assignment that set ``name``."""
        if self.kind == "proc":
            p = self.get(name) if name else None
            return Evidence.runtime(self.path, str(p) if p else self.text.strip()[:200])
        if name is not None and bc.norm_name(name) in self.origins:
            f, ln = self.origins[bc.norm_name(name)]
            p = self.get(name)
            return Evidence.file(f, ln, str(p) if p else None)
        p = self.get(name) if name else None
        return Evidence.file(self.path, self.line, str(p) if p else self.text.strip()[:200])

    def where(self) -> str:
        """Display location (``boot/loader/entries/x.conf:4``)."""
        loc = self.path.lstrip("/") if self.kind != "proc" else self.path
        return f"{loc}:{self.line}" if self.line else loc


@record
class BootConfig:
    """The scanned root's bootloader view of the kernel command line."""

    loader: str
    """``bls``, ``grub``, ``kernel-install`` or ``none``."""
    booted: CmdlineSource | None
    """What the bootloader will pass at the next boot."""
    generator: CmdlineSource | None
    """What ``grub-mkconfig`` would produce from ``/etc/default/grub`` (if present)."""
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    problem_evidence: tuple[Evidence, ...] = ()
    """The files behind :attr:`problems` (each exists: it could not be read or parsed)."""


class _Problems(list[str]):
    """Problem texts, with the file behind each (it exists) kept as evidence."""

    def __init__(self) -> None:
        super().__init__()
        self.evidence: list[Evidence] = []

    def add(self, path: str, exc: Exception, prefix: bool = True) -> None:
        """Record that ``path`` could not be used (``prefix``: name it in the text)."""
        text = str(exc)
        self.append(f"{path}: {text}" if prefix else text)
        line = exc.line if isinstance(exc, ParseError) else None
        for lead in (f"{path}:{line}: ", f"{path}: ", f"line {line}: "):
            if text.startswith(lead):
                text = text[len(lead):]
                break
        self.evidence.append(Evidence.file(path, line, text))


def not_found() -> str:
    """``no kernel command line in boot/loader/entries/*.conf, ...``: every place
    :func:`load` looked (:data:`SEARCHED`, root-relative), for a ``default`` evidence when
    it found none."""
    return "no kernel command line in " + ", ".join(p.lstrip("/") for p in SEARCHED)


def load(host: Host) -> BootConfig:
    """The bootloader configuration (memoized per run)."""
    return host.memo(("boot-cmdline",), lambda: _load(host))


def proc_cmdline(host: Host) -> CmdlineSource | None:
    """``/proc/cmdline`` of the running kernel (live only)."""
    if not host.live:
        return None
    try:
        text = host.read_text("/proc/cmdline")
    except HostError:
        return None
    return CmdlineSource("proc", "/proc/cmdline", None, text, tuple(bc.parse_cmdline(text)))


def _grubenv(host: Host) -> dict[str, str]:
    for p in GRUBENVS:
        try:
            text = host.try_read_text(p)
        except HostError:
            continue
        if text:
            out = {}
            for line in text.splitlines():
                if "=" in line and not line.startswith("#"):
                    k, _, v = line.partition("=")
                    out[k.strip()] = v
            return out
    return {}


def _default_grub(host: Host, problems: _Problems, notes: list[str]) -> CmdlineSource | None:
    files = [DEFAULT_GRUB] if host.is_file(DEFAULT_GRUB) else []
    files += [f"{GRUB_DROPINS}/{fn}" for fn in host.listdir(GRUB_DROPINS) if fn.endswith(".cfg")]
    if not files:
        return None
    env: dict[str, str] = {}
    origins: dict[str, tuple[str, int]] = {}
    last_line: tuple[str, int] = (files[0], 0)
    for f in files:
        try:
            assigns, env, fnotes = bc.parse_shell_assignments(host.read_text(f), env)
        except (HostError, ParseError) as exc:
            problems.add(f, exc)
            continue
        notes.extend(f"{f} {n}" for n in fnotes)
        for a in assigns:
            if a.name in ("GRUB_CMDLINE_LINUX", "GRUB_CMDLINE_LINUX_DEFAULT"):
                last_line = (f, a.line)
                for p in bc.parse_cmdline(a.value):
                    if p.key not in origins or str(p) in a.raw or p.name in a.raw:
                        origins[p.key] = (f, a.line)
    text = f"{env.get('GRUB_CMDLINE_LINUX', '')} {env.get('GRUB_CMDLINE_LINUX_DEFAULT', '')}"
    params = tuple(bc.parse_cmdline(text))
    keep = {p.key for p in params}
    return CmdlineSource("default-grub", last_line[0], last_line[1] or None, text.strip(),
                         params, {k: v for k, v in origins.items() if k in keep})


def _bls(host: Host, problems: _Problems, notes: list[str]) -> CmdlineSource | None:
    names = [n for n in host.listdir(BLS_DIR) if n.endswith(".conf")]
    if not names:
        return None
    # grub's blscfg and systemd-boot sort entries newest first; rescue entries are not the
    # default.  Picking the last file name (they embed the kernel version) approximates it.
    normal = [n for n in names if "rescue" not in n] or names
    name = sorted(normal, key=_version_key)[-1]
    path = f"{BLS_DIR}/{name}"
    try:
        entry = bc.parse_bls(host.read_text(path))
    except (HostError, ParseError) as exc:
        problems.add(path, exc)
        return None
    text = entry.options
    if "$" in text:
        env = _grubenv(host)
        text = _VAR().sub(lambda m: env.get(m.group(1) or m.group(2), ""), text)
        notes.append(f"{path}: variables expanded from grubenv")
    if len(normal) > 1:
        notes.append(f"{len(normal)} BLS entries; the default is taken to be {name}")
    return CmdlineSource("bls", path, entry.options_line, text,
                         tuple(bc.parse_cmdline(text)))


def _version_key(name: str) -> list[tuple[int, str]]:
    return [(int(p), "") if p.isdigit() else (0, p) for p in re.split(r"(\d+)", name)]


def _grub_cfg(host: Host, problems: _Problems) -> tuple[CmdlineSource | None, bool]:
    for path in GRUB_CFGS:
        try:
            text = host.try_read_text(path)
        except HostError as exc:
            problems.add(path, exc, prefix=False)
            continue
        if text is None:
            continue
        try:
            linux, bls = bc.parse_grub_cfg(text)
        except ParseError as exc:
            problems.add(path, exc)
            continue
        if linux is None:
            return None, bls
        args = " ".join(w for w in linux.args.split() if not w.startswith("$"))
        return CmdlineSource("grub.cfg", path, linux.line, args,
                             tuple(bc.parse_cmdline(args))), bls
    return None, False


def _load(host: Host) -> BootConfig:
    problems = _Problems()
    notes: list[str] = []
    generator = _default_grub(host, problems, notes)
    bls = _bls(host, problems, notes)
    if bls is not None:
        return BootConfig("bls", bls, generator, tuple(problems), tuple(notes),
                          tuple(problems.evidence))
    cfg, _ = _grub_cfg(host, problems)
    if cfg is not None:
        return BootConfig("grub", cfg, generator, tuple(problems), tuple(notes),
                          tuple(problems.evidence))
    try:
        kc = host.try_read_text(KERNEL_CMDLINE)
    except HostError as exc:
        problems.add(KERNEL_CMDLINE, exc, prefix=False)
        kc = None
    if kc is not None:
        src = CmdlineSource("kernel-cmdline", KERNEL_CMDLINE, 1, kc.strip(),
                            tuple(bc.parse_cmdline(kc)))
        return BootConfig("kernel-install", src, generator, tuple(problems), tuple(notes),
                          tuple(problems.evidence))
    if generator is not None:
        notes.append("no generated grub.cfg found; using what grub-mkconfig would generate")
        return BootConfig("grub", generator, generator, tuple(problems), tuple(notes),
                          tuple(problems.evidence))
    return BootConfig("none", None, None, tuple(problems), tuple(notes),
                      tuple(problems.evidence))


PARAMS_MANUAL = ("kernel parameters take effect only after the bootloader configuration is "
                 "regenerated (the command above; for an image, run it in a chroot of it) and "
                 "the host reboots")
"""The step a kernel-parameter fix always leaves to a person: regenerate and reboot."""


def params_step(cfg: BootConfig) -> dict[str, str]:
    """:data:`PARAMS_MANUAL` as the ``Remediation`` keyword it is for ``cfg``: a
    ``followup`` when the bundle's grub drop-in alone fixes what the next boot is judged by
    (no generated grub.cfg yet: ``/etc/default/grub`` decides), else ``manual`` (grub.cfg,
    BLS entries or the kernel-install entry must be regenerated before the boot changes)."""
    no_grub_cfg = cfg.loader == "none" or (cfg.loader == "grub" and cfg.booted is not None
                                           and cfg.booted is cfg.generator)
    if no_grub_cfg:
        return {"followup": PARAMS_MANUAL}
    return {"manual": PARAMS_MANUAL}


def set_params(cfg: BootConfig, params: list[str]) -> tuple[str, tuple[Snippet, ...]]:
    """How to add kernel ``params`` for the bootloader found: (summary, snippets)."""
    words = " ".join(params)
    if cfg.loader == "bls":
        snips = [Snippet.command(f'grubby --update-kernel=ALL --args="{words}"',
                                 "add the parameters to every BLS boot entry")]
        summary = (f"Add `{words}` to the kernel command line with grubby (BLS entries; "
                   "with ALL it also updates GRUB_CMDLINE_LINUX for new kernels)")
        return summary + ", then reboot.", tuple(snips)
    if cfg.loader == "kernel-install":
        return (f"Append `{words}` to /etc/kernel/cmdline, reinstall the boot entry, then "
                "reboot.", (
                    Snippet.command(f"echo \"$(cat /etc/kernel/cmdline) {words}\" > "
                                    "/etc/kernel/cmdline.new && mv /etc/kernel/cmdline.new "
                                    "/etc/kernel/cmdline", "append the parameters"),
                    Snippet.command('kernel-install add "$(uname -r)" '
                                    '"/usr/lib/modules/$(uname -r)/vmlinuz"',
                                    "regenerate the boot entry"),
                ))
    regen = ("grub2-mkconfig -o /boot/grub2/grub.cfg"
             if cfg.booted is not None and cfg.booted.path.startswith("/boot/grub2")
             else "update-grub")
    return (f"Add `{words}` to GRUB_CMDLINE_LINUX_DEFAULT in a {GRUB_DROPINS} drop-in, run "
            f"`{regen}`, then reboot.", (
                Snippet.file(DROPIN,
                             f'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT {words}"\n',
                             "kernel parameters for grub-mkconfig"),
                Snippet.command(regen, "regenerate grub.cfg"),
            ))
