# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Host identity: the same names in every output (hostname, machine id, DMI UUID, OS, image).

Live, the hostname and kernel come from ``/proc`` and the DMI product UUID from ``/sys`` (root
only); offline only files of the scanned root are read.  ``image_id`` names the golden image
the root was built from, in both modes (a live node built from an image says which one):

1. ``os-release(5)`` ``IMAGE_ID`` / ``IMAGE_VERSION`` (set by mkosi and other image
   builders), with ``BUILD_ID`` when present: ``gpu-node:2024.06 build 417``;
2. else the first of the image stamp files in :data:`IMAGE_ID_FILES` that says something:
   Amazon Linux ``/etc/image-id`` (``image_file``, or ``image_name:image_version``), Ubuntu
   cloud images' ``/etc/cloud/build.info`` (``build_name:serial``), NVIDIA DGX OS
   ``/etc/dgx-release`` (``DGX_NAME:DGX_SWBUILD_VERSION``), diskimage-builder's
   ``/etc/dib-builddate.txt`` and plain one-line stamps (``/etc/image_id``,
   ``/etc/buildinfo``).

Each stamp is split into the image's *name*, *version* and *build*: :func:`scan_name` names a
scan by the image name (offline) or the hostname, never by version or build, so that every
output keeps one identity across builds of an image.
"""

from __future__ import annotations

import re
from typing import Callable

from aiaudit.core.errors import HostError
from aiaudit.core.host import Host
from aiaudit.core.model import HostInfo
from aiaudit.core.startup.records import record

_MACHINE_ID = re.compile(r"^[0-9a-f]{32}$")
"""machine-id(5): 32 lower-case hex digits; an image ships it empty or ``uninitialized``."""


def _first_line(host: Host, path: str) -> str | None:
    text = _read(host, path)
    if text is None:
        return None
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    return line or None


def _read(host: Host, path: str) -> str | None:
    try:
        return host.read_text(path, cap=65536)
    except HostError:
        return None


def _kv(text: str) -> dict[str, str]:
    from aiaudit.core.identity import parse_os_release

    return parse_os_release(text)


def _joined(*parts: str | None) -> str | None:
    got = [p for p in parts if p]
    return ":".join(got) if got else None


@record
class ImageStamp:
    """What an image stamp says: the image's name, version and build (each may be absent),
    and its display form."""

    display: str
    """``name:version build N``, or the stamp's own one-line form."""
    name: str | None = None
    """Stable across builds of one image: it names the scan (:func:`scan_name`)."""
    version: str | None = None
    build: str | None = None


def _stamp(name: str | None, version: str | None, build: str | None = None,
           display: str | None = None) -> ImageStamp | None:
    shown = display or _joined(name, version)
    if build:
        shown = f"{shown} build {build}" if shown else f"build {build}"
    return ImageStamp(shown, name, version, build) if shown else None


def _amazon_image_id(text: str) -> ImageStamp | None:
    """Amazon Linux ``/etc/image-id`` (``image_name="..."`` lines), or a one-line id."""
    kv = _kv(text)
    if kv:
        return _stamp(kv.get("image_name"), kv.get("image_version"),
                      display=kv.get("image_file"))
    return _plain(text)


def _cloud_build_info(text: str) -> ImageStamp | None:
    """Ubuntu cloud images' ``/etc/cloud/build.info``: ``build_name: server``, ``serial:``."""
    kv = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            kv[key.strip()] = value.strip()
    return _stamp(kv.get("build_name"), kv.get("serial"))


def _dgx_release(text: str) -> ImageStamp | None:
    """NVIDIA DGX OS ``/etc/dgx-release``: ``DGX_NAME``, ``DGX_SWBUILD_VERSION``."""
    kv = _kv(text)
    if not kv.get("DGX_SWBUILD_VERSION"):
        return None
    return _stamp(kv.get("DGX_NAME") or "DGX", kv["DGX_SWBUILD_VERSION"])


def _plain(text: str) -> ImageStamp | None:
    """A one-line stamp (a date, a build tag): it says which build, not which image, so it
    gives no name."""
    lines = text.strip().splitlines()
    first = lines[0].strip() if lines else ""
    return ImageStamp(first, version=first) if first else None


IMAGE_ID_FILES: tuple[tuple[str, Callable[[str], ImageStamp | None]], ...] = (
    ("/etc/image-id", _amazon_image_id),
    ("/etc/image_id", _plain),
    ("/etc/cloud/build.info", _cloud_build_info),
    ("/etc/dgx-release", _dgx_release),
    ("/etc/dib-builddate.txt", _plain),
    ("/etc/buildinfo", _plain),
)
"""Files that image builders drop to identify a golden image, with how to read each."""


OS_RELEASE_PATHS = ("/etc/os-release", "/usr/lib/os-release")
"""os-release(5): ``/etc`` first, then ``/usr/lib``."""


def os_release(host: Host) -> dict[str, str]:
    """``os-release`` fields of the scanned root (``/etc`` first, then ``/usr/lib``)."""
    return _os_release(host)[0]


def _os_release(host: Host) -> tuple[dict[str, str], str | None]:
    """The ``os-release`` fields and the file they came from."""
    for path in OS_RELEASE_PATHS:
        text = _read(host, path)
        if text is not None:
            return _kv(text), path
    if host.is_real_root:
        return _distro_fallback(), None
    return {}, None


def _distro_fallback() -> dict[str, str]:
    """Old systems without os-release (RHEL/CentOS 6, old SLES): let the ``distro`` library
    read ``/etc/*-release`` and ``lsb_release`` data.  Only for the real ``/``: distro reads
    the files itself, which must never happen inside another scan root."""
    import distro

    d = distro.LinuxDistribution(include_lsb=False, include_uname=False,
                                 include_oslevel=False)
    out = {"ID": d.id(), "VERSION_ID": d.version(), "PRETTY_NAME": d.name(pretty=True)}
    return {k: v for k, v in out.items() if v}


def image_stamp(host: Host, osr: dict[str, str]) -> ImageStamp | None:
    """What identifies the image the scanned root was built from, or ``None``."""
    if osr.get("IMAGE_ID"):
        return _stamp(osr["IMAGE_ID"], osr.get("IMAGE_VERSION"), osr.get("BUILD_ID"))
    for path, extract in IMAGE_ID_FILES:
        text = _read(host, path)
        value = extract(text) if text is not None else None
        if value:
            return ImageStamp(" ".join(value.display.split())[:200],
                              *(_short(x) for x in (value.name, value.version, value.build)))
    return None


def _short(text: str | None) -> str | None:
    return " ".join(text.split())[:200] or None if text else None


def image_identity(host: Host, osr: dict[str, str]) -> str | None:
    """The display form of :func:`image_stamp` (``gpu-node:2024.06 build 417``)."""
    stamp = image_stamp(host, osr)
    return stamp.display if stamp else None


def scan_name(h: HostInfo) -> str:
    """The stable name of what was scanned, shared by every output's identity (the SARIF
    category, fingerprints, JUnit class names, metric labels).

    An offline scan of a golden image is named by the image's *name*, never its version or
    build, so that a new build of the same image continues the same alerts and series;
    a root that has its own machine id is a host's disk, not an image, and is named by its
    hostname, as a live scan is (two hosts built from one image stay apart).  The version
    and build are reported beside it (SARIF ``run.properties``, JUnit properties).
    """
    if h.mode == "offline" and h.image_name and not h.machine_id:
        return h.image_name
    if h.hostname and h.hostname != "unknown":
        return h.hostname
    return h.image_name or h.machine_id or "unknown"


def machine_id(host: Host) -> str | None:
    """``/etc/machine-id`` when it holds a real id (not empty or ``uninitialized``, as an
    image that will get its id at first boot ships it)."""
    value = _first_line(host, "/etc/machine-id")
    return value if value and _MACHINE_ID.match(value) else None


def host_info(host: Host) -> HostInfo:
    """Identity of the scanned host or image, read through ``host`` only."""
    if host.live:
        hostname = _first_line(host, "/proc/sys/kernel/hostname")
        kernel = _first_line(host, "/proc/sys/kernel/osrelease")
        uuid = _first_line(host, "/sys/class/dmi/id/product_uuid")
    else:
        hostname, kernel, uuid = None, None, None
    hostname = hostname or _first_line(host, "/etc/hostname") or "unknown"
    osr, osr_path = _os_release(host)
    stamp = image_stamp(host, osr)
    kind = root_kind(host)
    return HostInfo(
        hostname=hostname,
        machine_id=machine_id(host),
        os_name=osr.get("PRETTY_NAME") or osr.get("NAME"),
        os_version=osr.get("VERSION_ID"),
        os_id=osr.get("ID"),
        kernel=kernel,
        root=host.root,
        mode=host.mode,
        product_uuid=uuid,
        image_id=stamp.display if stamp else None,
        image_name=stamp.name if stamp else None,
        image_version=stamp.version if stamp else None,
        image_build=stamp.build if stamp else None,
        os_release_path=osr_path,
        image_kind=kind.kind,
        image_kind_reason=kind.reason,
    )


_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        if value[0] == '"':
            inner = re.sub(r'\\([\\$"`])', r"\1", inner)
        return inner
    return value


def parse_os_release(text: str) -> dict[str, str]:
    """Fields of an os-release file; lines that are not assignments are ignored (as
    systemd and the ``distro`` library do)."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if m:
            out[m.group(1)] = _unquote(m.group(2))
    return out


# ------------------------------------------------------------------ the kind of root
INIT_PATHS = ("/sbin/init", "/bin/init")
"""Where the kernel looks for init (init/main.c ``kernel_init``: ``/sbin/init``,
``/etc/init``, ``/bin/init``, then ``/bin/sh``, which every container image has and is no
init; ``/etc/init`` is upstart's configuration directory on old Ubuntu)."""
SYSTEMD_PATHS = ("/lib/systemd/systemd", "/usr/lib/systemd/systemd")
"""systemd's binary (Debian: ``/lib``; merged-usr and RHEL: ``/usr/lib``): a root that
has it but no ``/sbin/init`` link is taken to boot it (``init=`` names it)."""
KERNEL_GLOBS = ("/boot/vmlinuz-*", "/boot/config-*", "/lib/modules/*/vmlinuz",
                "/usr/lib/modules/*/vmlinuz", "/lib/modules/*/modules.dep",
                "/usr/lib/modules/*/modules.dep")
"""A kernel in the root: Debian's and RHEL's kernel packages install ``/boot/vmlinuz-*``
and ``/boot/config-*``, RHEL and Fedora also ``/lib/modules/<release>/vmlinuz``
(Warewulf's ``wwctl image kernels`` lists both), every kernel ``modules.dep``."""
BOOT_LOADER_FILES = ("/boot/grub/grub.cfg", "/boot/grub2/grub.cfg", "/etc/default/grub",
                     "/boot/efi/EFI/*/grub.cfg", "/boot/loader/entries/*.conf",
                     "/etc/kernel/cmdline", "/boot/loader/loader.conf",
                     "/boot/efi/loader/loader.conf", "/efi/loader/loader.conf",
                     "/boot/extlinux/extlinux.conf", "/extlinux.conf")
"""Files a boot loader of the root reads or is generated from (grub, BLS entries and
systemd-boot, kernel-install, extlinux): a root with one carries its own kernel command
line.  ``/etc/default/grub.d/*.cfg`` is not one: a fix bundle writes its drop-in there, and
an image without grub must not become bootable by it."""
WAREWULF_FILES = ("/etc/warewulf/excludes", "/etc/warewulf/image_exit.sh",
                  "/etc/warewulf/container_exit.sh")
"""Warewulf node images (warewulf/warewulf-node-images Containerfiles; Warewulf's
userdocs "Image Management": ``/etc/warewulf/excludes``, ``image_exit.sh``, formerly
``container_exit.sh``, run before ``wwctl image build``)."""
XCAT_FILES = ("/opt/xcat/xcatdsklspost",)
"""xCAT diskless images: ``genimage`` (xCAT-server/share/xcat/netboot/*/genimage,
``postscripts()``) copies ``xcatdsklspost`` into every stateless root image."""
OS_FILES = ("/etc/os-release", "/usr/lib/os-release", "/bin/sh", "/usr/bin/sh")
"""An operating system tree (every distribution and container base image has
os-release(5) or a shell): without one, a root is a bare configuration tree (an ``/etc``
snapshot), which is judged as the host it configures."""
CONTAINER_MARKERS = ("/.dockerenv", "/run/.containerenv", "/run/systemd/container")
"""Live: the running system is a container (Docker, Podman, systemd's own detection,
``systemd-detect-virt --container``)."""
LIVE_PROVISIONED = (("wwid", "Warewulf"), ("XCAT", "xCAT"))
"""Live: a ``/proc/cmdline`` parameter the provisioner's boot script passes (Warewulf's
iPXE/grub templates ``wwid=<MAC>``; xCAT's netboot ``XCAT=<master>:<port>``)."""


@record
class RootKind:
    """What the scanned root is, and the facts that said so."""

    kind: str
    """``bootable``, ``stateless`` or ``container``
    (:data:`~aiaudit.core.model.IMAGE_KINDS`)."""
    reason: str
    """What decided it, for the report header (files found, ``--image-kind``)."""
    systemd: bool
    """Whether the root boots systemd, the only reader of unit files and their ``.wants``
    links (a sysvinit root, or a container image, runs none of them)."""
    provisioner: str | None = None
    """``Warewulf`` or ``xCAT`` where its files (or live command line) name it."""
    stated: bool = False
    """``--image-kind`` said it."""
    init: str | None = None
    """The init program found (``sbin/init -> usr/lib/systemd/systemd``), if any."""
    bare: bool = False
    """A configuration tree without an operating system (no os-release, no shell): judged
    as a bootable host, though nothing in it says so."""


def root_kind(host: Host) -> RootKind:
    """The kind of the scanned root (memoized per run): as stated with ``--image-kind``,
    else detected from what the root contains (:func:`_offline_kind`) or, live, from the
    running system (:func:`_live_kind`)."""
    return host.memo(("root-kind",), lambda: _root_kind(host))


def _root_kind(host: Host) -> RootKind:
    found = _live_kind(host) if host.live else _offline_kind(host)
    if host.image_kind and host.image_kind != found.kind:
        return RootKind(host.image_kind, f"stated with --image-kind (its files suggest "
                        f"{found.kind}: {found.reason})", found.systemd and
                        host.image_kind != "container", found.provisioner, stated=True,
                        init=found.init)
    if host.image_kind:
        return RootKind(found.kind, f"stated with --image-kind; {found.reason}",
                        found.systemd, found.provisioner, stated=True, init=found.init,
                        bare=found.bare)
    return found


def _existing(host: Host, patterns: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for p in patterns:
        out += host.glob(p) if "*" in p else ([p] if host.exists(p) else [])
    return out


def _init(host: Host) -> tuple[str | None, bool]:
    """(the init program, shown as ``sbin/init -> lib/systemd/systemd``; whether it is
    systemd)."""
    for p in INIT_PATHS:
        if host.is_file(p):
            try:
                target = host.resolve(p)
            except HostError:
                target = p
            shown = p.lstrip("/") if target == p else f"{p.lstrip('/')} -> {target.lstrip('/')}"
            return shown, target.rsplit("/", 1)[-1] == "systemd"
    for p in SYSTEMD_PATHS:
        if host.is_file(p):
            return p.lstrip("/"), True
    return None, False


def _offline_kind(host: Host) -> RootKind:
    """Detect the kind from the root's files: a provisioner's image files, a boot
    loader's configuration, an init and a kernel."""
    init, systemd = _init(host)
    ww = _existing(host, WAREWULF_FILES)
    xcat = [] if ww else _existing(host, XCAT_FILES)
    if ww or xcat:
        who, files = ("Warewulf", ww) if ww else ("xCAT", xcat)
        return RootKind("stateless", f"{who} node image ({files[0].lstrip('/')}): the "
                        "provisioner boots it and passes its kernel command line",
                        systemd, who, init=init)
    loader = _existing(host, BOOT_LOADER_FILES)
    kernel = _existing(host, KERNEL_GLOBS)
    if loader:  # without an init file (a bare tree), its units are not discarded
        return RootKind("bootable", f"boot loader configuration {loader[0].lstrip('/')}"
                        + (f", init {init}" if init else ""), systemd or init is None,
                        init=init)
    if not _existing(host, OS_FILES):
        return RootKind("bootable", "a configuration tree without an operating system "
                        "(no os-release, no /bin/sh): judged as the host it configures; "
                        "--image-kind says otherwise", systemd or init is None, init=init,
                        bare=True)
    if init or kernel:
        has = ", ".join(x for x in (f"init {init}" if init else "",
                                    f"kernel {kernel[0].lstrip('/')}" if kernel else "")
                        if x)
        return RootKind("stateless", f"{has} but no boot loader configuration "
                        "(grub, BLS entries, kernel-install, systemd-boot, extlinux): "
                        "whoever boots it (a provisioner, PXE, a hypervisor) passes its "
                        "kernel command line", systemd, init=init)
    return RootKind("container", "no init (sbin/init, lib/systemd/systemd) and no kernel "
                    "(boot/vmlinuz-*, lib/modules/*/vmlinuz): a container image runs "
                    "under its host's kernel, init and boot configuration", False)


def _live_kind(host: Host) -> RootKind:
    """The running system: a container (its markers), a node a provisioner booted (its
    parameter on ``/proc/cmdline``), else a host that boots itself."""
    init, sd = _init(host)
    # the init of the next boot is /sbin/init; a running system without one (NixOS names
    # its init on the command line) booted something: its units count unless /sbin/init
    # is known not to be systemd
    systemd = sd if init is not None else True
    marker = _existing(host, CONTAINER_MARKERS)
    if marker:
        return RootKind("container", f"running in a container ({marker[0]}): its host's "
                        "kernel and boot configuration apply", False)
    words = {w.partition("=")[0]: w for w in (_read(host, "/proc/cmdline") or "").split()}
    for name, who in LIVE_PROVISIONED:
        if name in words:
            return RootKind("stateless", f"booted by {who} ({words[name][:40]} on "
                            "/proc/cmdline): the provisioner passes its kernel command "
                            "line", systemd, who, init=init)
    return RootKind("bootable", "the running system", systemd, init=init)
