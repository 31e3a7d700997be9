"""``containers.nvidia_toolkit``: the NVIDIA Container Toolkit is patched and locked down.

What it checks, by ``property``:

- ``version``: the installed toolkit package is at least ``min_version`` (NVIDIA security
  bulletins: CVE-2024-0132 fixed in 1.16.2, CVE-2025-23359 in 1.17.4,
  CVE-2025-23266/23267 in 1.17.8: container escapes to host root).
- ``config``: ``/etc/nvidia-container-runtime/config.toml`` sets
  ``accept-nvidia-visible-devices-envvar-when-unprivileged = false`` (default true: any
  unprivileged container gets every GPU with ``NVIDIA_VISIBLE_DEVICES=all``) and
  ``nvidia-container-cli.ldconfig`` starts with ``@`` (the host's ldconfig).

How it decides: the package version from the dpkg (or rpm) database in Debian version
order; the TOML document as the toolkit reads it (:mod:`aiaudit.linux.containers.toolkit`).
Skips where neither the package nor the configuration file is present.

Sources: NVIDIA Container Toolkit security bulletins; ``nvidia-container-toolkit``
``internal/config`` (defaults); ``nvidia-ctk config`` documentation.
"""

from __future__ import annotations

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
from aiaudit.linux.containers import toolkit
from aiaudit.linux.containers.toolkit import ENVVAR_KEY, TOOLKIT_TOML
from aiaudit.linux.packages.dpkg import upstream_version, version_key

LDCONFIG = "nvidia-container-cli.ldconfig"


def run(ctx: CheckContext) -> Iterator[Result]:
    """NVIDIA Container Toolkit version and config.toml settings."""
    host, p = ctx.host, ctx.params
    ver = toolkit.installed_version(host)
    if ver is None and not host.exists(TOOLKIT_TOML):
        yield Result(Status.SKIP, "nvidia-container-toolkit", "the NVIDIA Container Toolkit is "
                     "not installed")
        return
    if p["property"] == "version":
        yield _version(ver, p["min_version"])
        return
    try:
        text, cfg = toolkit.read_config(host)
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "config.toml", str(exc), evidence=(Evidence.file(TOOLKIT_TOML),))
        return
    yield _envvar(text, cfg)
    yield _ldconfig(text, cfg)


def _version(ver: tuple[str, str] | None, want: str) -> Result:
    """The installed package against ``min_version``."""
    if ver is None:
        return Result(Status.SKIP, "nvidia-container-toolkit", f"{TOOLKIT_TOML} exists but no "
                      "toolkit package is in the package database")
    name, full = ver
    up = upstream_version(full)
    ev = (Evidence.file("/var/lib/dpkg/status", None, f"{name} {full}"),)
    if version_key(up) < version_key(want):
        return Result(Status.FAIL, name, f"{name} {up} is older than {want}: container "
                      "escapes to host root are published for it (NVIDIA security "
                      "bulletins)", expected=f">= {want}", actual=up, evidence=ev,
                      remediation=Remediation("Upgrade the toolkit.", (Snippet.command(
                          "apt-get install --only-upgrade nvidia-container-toolkit "
                          "nvidia-container-toolkit-base libnvidia-container1 "
                          "libnvidia-container-tools", "upgrade the toolkit"),)))
    return Result(Status.PASS, name, f"{name} {up} (>= {want})", expected=f">= {want}",
                  actual=up, evidence=ev)


def _envvar(text: str, cfg: dict[str, Any]) -> Result:
    """``accept-nvidia-visible-devices-envvar-when-unprivileged`` is false."""
    val = toolkit.envvar_accepted(cfg)
    ev = (Evidence.file(TOOLKIT_TOML, toolkit.config_line(text, ENVVAR_KEY),
                        f"{ENVVAR_KEY} = {str(val).lower()}")
          if ENVVAR_KEY in cfg else Evidence.default(f"toolkit default for {ENVVAR_KEY}", "true"),)
    if val is False:
        return Result(Status.PASS, ENVVAR_KEY, f"{ENVVAR_KEY} is false", expected="false",
                      actual="false", aspect=Aspect.CONFIG, evidence=ev)
    return Result(Status.FAIL, ENVVAR_KEY, f"{ENVVAR_KEY} is {str(val).lower()}"
                  + ("" if ENVVAR_KEY in cfg else " (the default)")
                  + ": any unprivileged container gets every GPU by setting "
                  "NVIDIA_VISIBLE_DEVICES=all, bypassing the scheduler's GPU allocation",
                  expected="false", actual=str(val).lower(), aspect=Aspect.CONFIG,
                  evidence=ev, remediation=Remediation(
                      f"Set `{ENVVAR_KEY} = false` at the top level of {TOOLKIT_TOML} (GPUs are "
                      "then requested with --gpus / CDI / volume mounts only).",
                      (Snippet.command(f"nvidia-ctk config --in-place --set {ENVVAR_KEY}=false",
                                       "write the setting"),)))


def _ldconfig(text: str, cfg: dict[str, Any]) -> Result:
    """``nvidia-container-cli.ldconfig`` is the host's (``@...``)."""
    ldc = toolkit.ldconfig(cfg)
    if toolkit.ldconfig_from_container(ldc):
        return Result(Status.FAIL, LDCONFIG, f"ldconfig = {ldc!r} runs the container image's "
                      "ldconfig during the privileged hook",
                      expected=toolkit.DEFAULT_LDCONFIG, actual=ldc, aspect=Aspect.CONFIG,
                      evidence=(Evidence.file(TOOLKIT_TOML, toolkit.config_line(text, "ldconfig"),
                                              ldc),),
                      remediation=Remediation(f'Set ldconfig = "@/sbin/ldconfig" in the '
                                              f"[nvidia-container-cli] table of {TOOLKIT_TOML}."))
    return Result(Status.PASS, LDCONFIG,
                  f"ldconfig is {ldc!r} (the host's)" if ldc else
                  "ldconfig is the default @/sbin/ldconfig (the host's)",
                  expected="@...", actual=str(ldc or toolkit.DEFAULT_LDCONFIG),
                  aspect=Aspect.CONFIG)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``containers.nvidia_toolkit``."""
    return [CheckSpec(
        id="containers.nvidia_toolkit",
        title="The NVIDIA Container Toolkit is patched and locked down",
        run=run,
        params_schema={"type": "object", "additionalProperties": False,
                       "required": ["property"], "properties": {
                           "property": {"enum": ["version", "config"]},
                           "min_version": {"type": "string", "pattern": r"^\d+(\.\d+)*$",
                                           "default": "1.17.8"}}},
        description="Package version against min_version; config.toml's "
                    "accept-nvidia-visible-devices-envvar-when-unprivileged and "
                    "nvidia-container-cli.ldconfig.")]
