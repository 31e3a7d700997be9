"""What kind of root is scanned, and what that means for the rules that judge the next
boot.

The kind itself (:func:`aiaudit.core.identity.root_kind`, in the report header) is one of

- ``bootable``: a host with its own boot loader, which holds its kernel command line;
- ``stateless``: an image a provisioner boots (Warewulf, xCAT, PXE): it has an init, and
  usually a kernel, but the kernel command line comes from the provisioner, so nothing in
  the image can say it; files for a boot loader it lacks are read by nothing;
- ``container``: no init and no kernel: it runs under its host's kernel, clock and
  services and is rebuilt rather than patched, so boot-time rules do not apply.

Boot-time rules ask here: :func:`container_skip` for a container image,
:func:`cmdline_skip` where the decision needs the next boot's command line and the image
cannot say it, :func:`units_run` before trusting (or writing) a systemd unit,
:func:`provisioner_steps` for a fix only the provisioner can make, and
:func:`image_followup` for a fix installed into a stateless image.
"""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.core.identity import RootKind, root_kind
from aiaudit.core.model import Evidence, Result, Status

INITS = ("/sbin/init", "/usr/sbin/init", "/lib/systemd/systemd", "/usr/lib/systemd/systemd")
"""An init program: without one (and without a kernel or boot loader) the root is a
container image, which runs under its host's kernel and clock and is rebuilt rather than
patched."""

__all__ = ["INITS", "NOT_BOOTED", "NO_UNITS", "RootKind", "boots", "cmdline_skip", "container_skip",
           "image_followup", "kind", "provisioner_steps", "units_run"]


def kind(host: Host) -> RootKind:
    """The kind of the scanned root (memoized; ``--image-kind`` wins)."""
    return root_kind(host)


def boots(host: Host) -> bool:
    """Whether the root boots by itself or from a provisioner (it is not a container
    image); a live scan of a host (not of a container) describes a booted system.  A bare
    configuration tree (no operating system files) boots only if it has an init."""
    rk = root_kind(host)
    if rk.kind == "container":
        return False
    return not rk.bare or host.live or rk.init is not None


NOT_BOOTED = ("no init (/sbin/init, systemd) in this root: a container image uses its "
              "host's clock and services")


def units_run(host: Host) -> bool:
    """Whether systemd reads the root's unit files at boot (its init is systemd): a unit,
    a ``.wants`` link or an enabled service in a sysvinit root or a container image is a
    file nothing reads, and a fix must not write one."""
    return root_kind(host).systemd


NO_UNITS = ("this root's init is not systemd: a unit would be a file nothing reads; set "
            "it at boot with the init system the root has")
"""The manual step of a fix that would write a unit into a root that does not boot
systemd (:func:`units_run`)."""


def container_skip(host: Host, subject: str, what: str) -> Result | None:
    """A ``skip`` for a boot-time rule on a container image (``what``: the setting, e.g.
    ``the CPU frequency governor``), else ``None``."""
    rk = root_kind(host)
    if rk.kind != "container":
        return None
    # a command line given with --kernel-cmdline is no kernel's here: say it is not used
    given = ("; the command line given with --kernel-cmdline is not used (a container has "
             "no kernel of its own)") if host.kernel_cmdline is not None else ""
    return Result(Status.SKIP, subject, f"not applicable to a container image: {what} is "
                  f"its host's ({rk.reason}); scan the host it runs on{given}",
                  evidence=(Evidence.default("kind of root", f"container: {rk.reason}"),))


def cmdline_skip(host: Host, subject: str, unknown: str) -> Result:
    """A ``skip`` for a rule whose decision needs the next boot's kernel command line,
    which the root cannot say (``unknown``: :attr:`BootConfig.unknown
    <aiaudit.linux.boot.cmdline.BootConfig.unknown>`, naming ``--kernel-cmdline``)."""
    rk = root_kind(host)
    return Result(Status.SKIP, subject, unknown,
                  evidence=(Evidence.default("kind of root", f"{rk.kind}: {rk.reason}"),))


WAREWULF_ARGS = ("Warewulf: wwctl profile set PROFILE --kernelargs='<its arguments>,{words}' "
                 "(or wwctl node set NODE ...; the option replaces the list: wwctl profile "
                 "list -a PROFILE shows the current one), then reboot the nodes")
"""Warewulf 4 (userdocs: node and profile ``Kernel.Args``, ``--kernelargs``)."""
XCAT_ARGS = ("xCAT: chdef -t osimage -o IMAGE addkcmdline='<its options> {words}' "
             "(linuximage.addkcmdline, the kernel options of the diskless image: lsdef -t "
             "osimage -o IMAGE -i addkcmdline shows them), nodeset NODES osimage=IMAGE, then "
             "reboot the nodes")
"""xCAT (man5 linuximage ``addkcmdline``; ``nodeset`` writes the boot configuration)."""
PXE_ARGS = ("another provisioner or PXE/iPXE configuration: append {words} to the kernel "
            "line it serves, then reboot the nodes")


def provisioner_steps(host: Host, params: list[str]) -> str:
    """How the provisioner adds kernel ``params`` (the one whose files the image has, else
    the usual ones): text for :attr:`~aiaudit.core.model.Remediation.provisioner`."""
    words = " ".join(params)
    who = root_kind(host).provisioner
    steps = {"Warewulf": [WAREWULF_ARGS], "xCAT": [XCAT_ARGS]}.get(
        who or "", [WAREWULF_ARGS, XCAT_ARGS, PXE_ARGS])
    return "; ".join(s.format(words=words) for s in steps)


WAREWULF_BUILD = "wwctl image build IMAGE (Warewulf < 4.6: wwctl container build)"
XCAT_BUILD = "packimage IMAGE"


def image_followup(host: Host) -> str:
    """For a fix installed into a stateless image: the step that ships it to the nodes
    (the image is rebuilt and the nodes rebooted), or ``""`` for another kind of root."""
    rk = root_kind(host)
    if rk.kind != "stateless":
        return ""
    build = {"Warewulf": WAREWULF_BUILD, "xCAT": XCAT_BUILD}.get(
        rk.provisioner or "", f"{WAREWULF_BUILD} or {XCAT_BUILD}")
    if host.live:
        return ("a stateless node: install the fix into its image on the provisioner "
                f"(ROOT=<image root> sh install.sh), rebuild the image ({build}) and reboot "
                "the nodes; a file written on a running node is lost at its next boot")
    return (f"a stateless image: after installing the fix into it, rebuild it ({build}) "
            "and reboot the nodes")
