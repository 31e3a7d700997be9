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
from aiaudit.core.model import Evidence, Remediation, Snippet
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
GIVEN = "the command line given with --kernel-cmdline"
"""Where a command line stated by the person scanning comes from (display form)."""
GRUB_MKCONFIGS = ("/usr/sbin/grub-mkconfig", "/usr/sbin/grub2-mkconfig", "/sbin/grub-mkconfig",
                  "/sbin/grub2-mkconfig")
"""The generator of grub.cfg (grub2-common on Debian, grub2-tools on RHEL)."""
SEARCHED = (f"{BLS_DIR}/*.conf", *GRUB_CFGS, KERNEL_CMDLINE, DEFAULT_GRUB, f"{GRUB_DROPINS}/*.cfg")
"""Where :func:`load` looks for the next boot's command line, in its order."""
_VAR = lazy_pattern(r"\$(?:\{(\w+)\}|(\w+))")


@record
class CmdlineSource:
    """A kernel command line and the file it comes from."""

    kind: str
    """``bls``, ``grub.cfg``, ``kernel-cmdline``, ``default-grub``, ``proc`` or ``given``
    (``--kernel-cmdline``)."""
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
        if self.kind == "given":
            p = self.get(name) if name else None
            return Evidence.default(GIVEN, str(p) if p else self.text.strip()[:200])
        if self.kind == "proc":
            p = self.get(name) if name else None
            return Evidence.runtime(self.path, str(p) if p else self.text.strip()[:200])
        if name is not None and bc.norm_name(name) in self.origins:
            f, ln = self.origins[bc.norm_name(name)]
            p = self.get(name)
            return Evidence.file(f, ln, str(p) if p else None)
        p = self.get(name) if name else None
        return Evidence.file(self.path, self.line, str(p) if p else self.text.strip()[:200])

    def where(self, name: str | None = None) -> str:
        """Display location (``boot/loader/entries/x.conf:4``); with ``name``, of the
        assignment that set that parameter (``etc/default/grub:4``, not the line of the
        last ``GRUB_CMDLINE_*`` assignment)."""
        if self.kind == "given":
            return GIVEN
        if name is not None and bc.norm_name(name) in self.origins:
            f, ln = self.origins[bc.norm_name(name)]
            return f"{f.lstrip('/')}:{ln}"
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
    unknown: str = ""
    """Why :attr:`booted` is ``None`` although the root boots: its command line comes from
    a provisioner and was not given (``--kernel-cmdline``), or the root is a container
    image, which has no kernel of its own; empty otherwise."""
    kind: str = "bootable"
    """The kind of root (:func:`aiaudit.core.identity.root_kind`)."""
    grub_dropins: bool = True
    """Whether the root's ``grub-mkconfig`` reads ``/etc/default/grub.d/*.cfg`` (a Debian
    patch; RHEL's ``grub2-mkconfig`` does not)."""

    @property
    def from_provisioner(self) -> bool:
        """The command line comes from outside the root (a provisioner, or as given with
        ``--kernel-cmdline``): only whoever passes it can change it."""
        return self.loader in ("provisioner", "given")


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


CMDLINE_VARS = ("GRUB_CMDLINE_LINUX", "GRUB_CMDLINE_LINUX_DEFAULT")
"""What grub-mkconfig passes to normal entries, in this order (10_linux.in)."""


def reads_grub_dropins(host: Host) -> bool:
    """Whether a drop-in in ``/etc/default/grub.d`` takes effect: grub is there (its
    generator, ``/etc/default/grub`` or a generated ``grub.cfg``) and its
    ``grub-mkconfig`` sources ``/etc/default/grub.d/*.cfg``.  The generator itself says
    (Debian's patch adds the loop; RHEL's ``grub2-mkconfig`` has none), else the
    distribution (Debian and Ubuntu, or a tree with no os-release: a bare configuration
    tree keeps the drop-ins)."""
    for path in GRUB_MKCONFIGS:
        try:
            text = host.try_read_text(path)
        except HostError:
            continue
        if text is not None:
            return "default/grub.d" in text
    from aiaudit.core.identity import os_release, root_kind

    if not any(host.exists(p) for p in (DEFAULT_GRUB, *GRUB_CFGS)):
        # no grub at all: nothing reads /etc/default/grub.d, unless the root is a bare
        # configuration tree, judged as the (Debian-like) host it configures
        return root_kind(host).bare

    osr = os_release(host)
    family = f"{osr.get('ID', '')} {osr.get('ID_LIKE', '')}".split()
    return not osr or "debian" in family or "ubuntu" in family


def _default_grub(host: Host, problems: _Problems, notes: list[str],
                  read_dropins: bool = True) -> CmdlineSource | None:
    files = [DEFAULT_GRUB] if host.is_file(DEFAULT_GRUB) else []
    dropins = [f"{GRUB_DROPINS}/{fn}" for fn in host.listdir(GRUB_DROPINS)
               if fn.endswith(".cfg")]
    if dropins and not read_dropins:
        notes.append(f"{GRUB_DROPINS.lstrip('/')}/*.cfg not read: no grub-mkconfig here "
                     f"sources {GRUB_DROPINS} (grub absent, or without Debian's patch)")
        dropins = []
    files += dropins
    if not files:
        return None
    env: dict[str, str] = {}
    origins: dict[str, dict[str, tuple[str, int]]] = {}
    last_line: tuple[str, int] = (files[0], 0)
    for f in files:
        try:
            assigns, env, fnotes = bc.parse_shell_assignments(host.read_text(f), env)
        except (HostError, ParseError) as exc:
            problems.add(f, exc)
            continue
        notes.extend(f"{f} {n}" for n in fnotes)
        for a in assigns:
            origins[a.name] = _assignment_origins(a, f, origins)
            # the line cited for the whole command line: the last assignment that leaves
            # words in it (not a later GRUB_CMDLINE_LINUX="" after the line with "quiet")
            if a.name in CMDLINE_VARS and (a.value.strip() or not last_line[1]):
                last_line = (f, a.line)
    text = " ".join(env.get(v, "") for v in CMDLINE_VARS)
    params = tuple(bc.parse_cmdline(text))
    final: dict[str, tuple[str, int]] = {}
    for v in CMDLINE_VARS:  # the later variable's word is the one that counts (bc.last)
        final.update(origins.get(v, {}))
    keep = {p.key for p in params}
    return CmdlineSource("default-grub", last_line[0], last_line[1] or None, text.strip(),
                         params, {k: v for k, v in final.items() if k in keep})


def _assignment_origins(a: bc.ShellAssignment, path: str,
                        origins: dict[str, dict[str, tuple[str, int]]]
                        ) -> dict[str, tuple[str, int]]:
    """Where each parameter of ``a``'s value was written: a word in the assignment's own
    text is from its line; one that came in through ``$VAR`` keeps the line where that
    variable got it (``GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT quiet"``
    leaves earlier parameters at their lines)."""
    out: dict[str, tuple[str, int]] = {}
    _, _, value_text = a.raw.partition("=")
    for m in _VAR().finditer(value_text):
        out.update(origins.get(m.group(1) or m.group(2), {}))
    literal = _VAR().sub(" ", value_text).replace('"', " ").replace("'", " ")
    for p in bc.parse_cmdline(literal):
        out.pop(p.key, None)  # re-insert: a later word wins (dict order = command line)
        out[p.key] = (path, a.line)
    # no filtering by the value's words here (parsing every expanded value again costs
    # O(n^2) on a file that grows a variable line by line): the final command line keeps
    # only its own parameters
    return out


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
    """What the next boot's command line is, by the kind of root: as given with
    ``--kernel-cmdline``; none for a container image (no kernel); the provisioner's for a
    stateless image (``/proc/cmdline`` on a running node, else unknown); the boot loader's
    files of a bootable root (:func:`_from_loader`)."""
    from aiaudit.core.identity import root_kind

    rk = root_kind(host)
    if rk.kind == "container":
        return BootConfig("none", None, None, unknown=f"container image: {rk.reason}",
                          kind=rk.kind)
    if host.kernel_cmdline is not None:
        text = host.kernel_cmdline
        src = CmdlineSource("given", GIVEN, None, text.strip(), tuple(bc.parse_cmdline(text)))
        return BootConfig("given", src, None, kind=rk.kind)
    if rk.kind == "stateless":
        proc = proc_cmdline(host)
        if proc is not None:
            return BootConfig("provisioner", proc, None, kind=rk.kind, notes=(
                "the running command line (/proc/cmdline) is taken as what the provisioner "
                "passes at every boot",))
        return BootConfig("provisioner", None, None, kind=rk.kind,
                          unknown=provisioner_unknown(rk.reason))
    return _from_loader(host)


def provisioner_unknown(reason: str) -> str:
    """Why a stateless image's next command line is unknown, and how to give it
    (``reason``: what made the root a stateless image)."""
    return ("the kernel command line comes from the provisioner: pass it with "
            f"`--kernel-cmdline '...'` to check it (stateless image: {reason.split(':')[0]})")


def _from_loader(host: Host) -> BootConfig:
    """The boot loader files of a bootable root, in the order of the module docstring."""
    problems = _Problems()
    notes: list[str] = []
    dropins = reads_grub_dropins(host)
    generator = _default_grub(host, problems, notes, dropins)

    def config(loader: str, booted: CmdlineSource | None,
               gen: CmdlineSource | None) -> BootConfig:
        return BootConfig(loader, booted, gen, tuple(problems), tuple(notes),
                          tuple(problems.evidence), grub_dropins=dropins)

    bls = _bls(host, problems, notes)
    if bls is not None:
        return config("bls", bls, generator)
    cfg, _ = _grub_cfg(host, problems)
    if cfg is not None:
        return config("grub", cfg, generator)
    try:
        kc = host.try_read_text(KERNEL_CMDLINE)
    except HostError as exc:
        problems.add(KERNEL_CMDLINE, exc, prefix=False)
        kc = None
    if kc is not None:
        src = CmdlineSource("kernel-cmdline", KERNEL_CMDLINE, 1, kc.strip(),
                            tuple(bc.parse_cmdline(kc)))
        return config("kernel-install", src, generator)
    if generator is not None:
        notes.append("no generated grub.cfg found; using what grub-mkconfig would generate")
        return config("grub", generator, generator)
    return config("none", None, None)


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
    if not cfg.grub_dropins:  # a drop-in would be a file nothing reads
        if cfg.loader != "grub":
            return (f"Add `{words}` to the kernel command line of this root's boot loader, "
                    "then reboot.", ())
        return (f"Add `{words}` to GRUB_CMDLINE_LINUX in /etc/default/grub, run "
                f"`{regen}`, then reboot.", ())
    return (f"Add `{words}` to GRUB_CMDLINE_LINUX_DEFAULT in a {GRUB_DROPINS} drop-in, run "
            f"`{regen}`, then reboot.", (
                Snippet.file(DROPIN,
                             f'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT {words}"\n',
                             "kernel parameters for grub-mkconfig"),
                Snippet.command(regen, "regenerate grub.cfg"),
            ))


def params_remediation(host: Host, cfg: BootConfig, params: list[str], *, lead: str = "",
                       tail: str = "", now: tuple[Snippet, ...] = (),
                       manual: str = "") -> Remediation:
    """The fix that adds kernel ``params`` where the next boot's command line comes from:
    the boot loader's files of a bootable root (:func:`set_params`, with
    :func:`params_step`), or the provisioner, for a stateless image or a command line
    given with ``--kernel-cmdline`` (nothing is installed in the root: a file there would
    be one nothing reads).  ``now`` (runtime commands) and ``tail`` (the words that say
    them) only on a live node: scanning an image, they would act on the machine a person
    pastes them on.  ``manual``: a step a person must take besides (a tuned profile that
    sets another value)."""
    words = " ".join(params)
    if not host.live:
        now, tail = (), ""
    if cfg.from_provisioner:
        from aiaudit.linux.rootkind import provisioner_steps

        return Remediation(f"{lead}Add `{words}` to the kernel command line the provisioner "
                           f"passes, then reboot the nodes.{tail}",
                           now, manual=manual,
                           provisioner=provisioner_steps(host, params))
    summary, snips = set_params(cfg, params)
    step = params_step(cfg) if snips else {"manual": summary}
    if manual:
        step = {"manual": manual}
    return Remediation(f"{lead}{summary}{tail}", (*snips, *now), **step)
