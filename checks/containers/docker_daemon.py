"""``containers.docker_daemon``: one setting of the Docker daemon, as dockerd applies it.

What it checks: one option of ``/etc/docker/daemon.json`` merged with the flags of
``docker.service``'s ``ExecStart`` (dockerd merges both and refuses a key given in both):
``userns-remap``, ``no-new-privileges``, ``live-restore``, ``tcp-tls`` (a ``tcp://``
listener in ``hosts`` needs ``tlsverify: true``: ``tls`` alone encrypts but lets any client
in) and ``nvidia-runtime`` (where the node has NVIDIA GPUs: ``runtimes.nvidia`` as
``nvidia-ctk runtime configure`` writes it, or CDI specs in ``/etc/cdi`` / ``/var/run/cdi``
with ``features.cdi``).

How it decides: gather daemon.json and the unit's flags
(:mod:`aiaudit.linux.containers.docker`); a configuration dockerd refuses to start with (a
syntax error, a key given twice, a directive both a key and a flag, a boolean of another
type) is an error; else the option's value decides.

Sources: dockerd(8) "Daemon configuration file"; moby ``daemon/config``
(``getConflictFreeConfiguration``, ``findConfigurationConflicts``); Docker's "Protect the
Docker daemon socket"; the NVIDIA Container Toolkit's install guide.
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
from aiaudit.core.host import Host
from aiaudit.linux.containers import docker
from aiaudit.linux.containers.docker import DAEMON_JSON, DaemonJson

OPTIONS = ["userns-remap", "no-new-privileges", "live-restore", "tcp-tls", "nvidia-runtime"]
MERGE = ("Add it to /etc/docker/daemon.json (keep the other keys; a key may not also be a "
         "dockerd flag in the unit) and restart dockerd.")
WANT = {"userns-remap": "a user (e.g. default)", "no-new-privileges": "true",
        "live-restore": "true"}
WHY = {"userns-remap": "root in a container is root on the host (files it writes through bind "
                       "mounts belong to uid 0)",
       "no-new-privileges": "setuid binaries in an image can gain privileges",
       "live-restore": "restarting or upgrading dockerd kills every running training "
                       "container"}
SNIPPET = {"userns-remap": '"userns-remap": "default"',
           "no-new-privileges": '"no-new-privileges": true',
           "live-restore": '"live-restore": true'}
NVIDIA_WANT = "nvidia runtime or CDI"
TCP_WANT = "no tcp:// without tlsverify"


def run(ctx: CheckContext) -> Iterator[Result]:
    """One daemon.json setting, as dockerd will apply it."""
    host, opt = ctx.host, ctx.params["option"]
    if not docker.docker_installed(host):
        yield Result(Status.SKIP, "dockerd", "Docker Engine is not installed (no dockerd, no "
                     "docker.service)")
        return
    try:
        daemon = docker.read_daemon_json(host)
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "daemon.json", f"{exc} (dockerd refuses to start)",
                     evidence=(Evidence.file(DAEMON_JSON),))
        return
    words, where = docker.exec_flags(host)
    refused = _refused(opt, daemon, words, where)
    if refused is not None:
        yield refused
    elif opt in docker.SETTINGS:
        yield _setting(opt, daemon, words)
    elif opt == "tcp-tls":
        yield _tcp_tls(daemon, words, where)
    else:
        yield from _nvidia_runtime(host, daemon)


def _evidence(daemon: DaemonJson, key: str) -> tuple[Evidence, ...]:
    """The daemon.json line of ``key``, or dockerd's default for it."""
    if key in daemon.config:
        return (Evidence.file(DAEMON_JSON, docker.daemon_json_line(daemon, key),
                              f'"{key}": {str(daemon.config[key])[:80]}'),)
    return (Evidence.default(f"dockerd default for {key}"),)


def _refused(opt: str, daemon: DaemonJson, words: list[str], where: str | None
             ) -> Result | None:
    """An error result when dockerd would refuse the configuration of ``opt``'s keys."""
    keys = docker.json_keys(opt)
    both = docker.flag_conflicts(daemon.config, words, keys)
    if both:
        return Result(Status.ERROR, opt, f"{', '.join(both)} is set both in daemon.json and as "
                      f"a dockerd flag ({where}): dockerd refuses to start ('the following "
                      "directives are specified both as a flag and in the configuration file')",
                      evidence=_evidence(daemon, both[0]), remediation=Remediation(
                          "Keep the setting in one place: drop the flag from docker.service "
                          "(a drop-in with an empty ExecStart= and a new one) or the key from "
                          "daemon.json."))
    bools = docker.non_booleans(daemon.config, keys)
    if bools:
        return Result(Status.ERROR, opt, f'{bools[0]} is {daemon.config[bools[0]]!r} in '
                      "daemon.json, not true/false: dockerd refuses to start",
                      evidence=_evidence(daemon, bools[0]))
    return None


def _setting(opt: str, daemon: DaemonJson, words: list[str]) -> Result:
    """``userns-remap``, ``no-new-privileges`` or ``live-restore``."""
    value: Any = docker.setting_value(daemon.config, words, opt)
    if docker.setting_holds(opt, value):
        return Result(Status.PASS, opt, f"{opt} is {value}", expected=WANT[opt],
                      actual=str(value), aspect=Aspect.CONFIG, evidence=_evidence(daemon, opt))
    return Result(Status.FAIL, opt, f"{opt} is {value if value is not None else 'not set'}"
                  f": {WHY[opt]}", expected=WANT[opt], actual=str(value), aspect=Aspect.CONFIG,
                  evidence=_evidence(daemon, opt), remediation=Remediation(
                      f"Set {SNIPPET[opt]} in daemon.json. {MERGE}"))


def _tcp_tls(daemon: DaemonJson, words: list[str], where: str | None) -> Result:
    """No ``tcp://`` listener without ``tlsverify``."""
    tcp = docker.tcp_listeners(daemon.config, words)
    evs = _evidence(daemon, "hosts") + (
        (Evidence.file(where.rsplit(":", 1)[0], int(where.rsplit(":", 1)[1])),) if where else ())
    if not tcp:
        return Result(Status.PASS, "hosts", "dockerd listens on no TCP address",
                      expected=TCP_WANT, actual="no tcp://", aspect=Aspect.CONFIG, evidence=evs)
    if docker.tls_verified(daemon.config, words):
        return Result(Status.PASS, "hosts", f"dockerd listens on {', '.join(tcp)} with "
                      "tlsverify (client certificates required)", expected=TCP_WANT,
                      actual="tlsverify", aspect=Aspect.CONFIG, evidence=evs)
    return Result(Status.FAIL, "hosts", f"dockerd listens on {', '.join(tcp)} without "
                  "tlsverify: anyone who reaches the port is root on this host",
                  expected=TCP_WANT, actual=", ".join(tcp), aspect=Aspect.CONFIG, evidence=evs,
                  remediation=Remediation(
                      "Remove the tcp:// listener (use ssh://user@host as DOCKER_HOST), or set "
                      "tlsverify with tlscacert/tlscert/tlskey. " + MERGE))


def _no_nvidia_gpu(host: Host) -> str | None:
    """Why the NVIDIA runtime does not apply to this root, or ``None`` when it does: live,
    no NVIDIA GPU on the PCI bus; offline, no NVIDIA driver installed."""
    from aiaudit.linux.gpu import stack as gs  # only for the nvidia-runtime option

    if host.live and not gs.gpus(host).pci:
        return "no NVIDIA GPU on the PCI bus"
    if not host.live and gs.kernel_side(host).installed is None and \
            not gs.nvidia_packages(host):
        return "no NVIDIA driver in this root"
    return None


def _nvidia_runtime(host: Host, daemon: DaemonJson) -> Iterator[Result]:
    """The NVIDIA runtime or CDI, where the node has NVIDIA GPUs."""
    why = _no_nvidia_gpu(host)
    if why is not None:
        yield Result(Status.SKIP, "nvidia runtime", why)
        return
    cfg = daemon.config
    names = docker.nvidia_runtimes(cfg)
    cdi = docker.cdi_specs(host)
    if names:
        yield Result(Status.PASS, "nvidia runtime", f"runtime {names[0]} is configured"
                     + (" and is the default" if cfg.get("default-runtime") in names else ""),
                     expected=NVIDIA_WANT, actual=names[0], aspect=Aspect.CONFIG,
                     evidence=_evidence(daemon, "runtimes"))
    elif cdi and docker.cdi_enabled(cfg):
        yield Result(Status.PASS, "nvidia runtime", f"CDI is enabled and {cdi[0]} describes "
                     "the GPUs (--device nvidia.com/gpu=all)", expected=NVIDIA_WANT,
                     actual="CDI", aspect=Aspect.CONFIG, evidence=(Evidence.file(cdi[0]),))
    else:
        yield Result(Status.FAIL, "nvidia runtime", "daemon.json configures no NVIDIA runtime "
                     "and no CDI: `docker run --gpus all` fails with 'could not select device "
                     "driver'", expected=NVIDIA_WANT, actual="none", aspect=Aspect.CONFIG,
                     evidence=_evidence(daemon, "runtimes"), remediation=Remediation(
                         "Register the NVIDIA runtime with Docker and restart it.", (
                             Snippet.command("nvidia-ctk runtime configure --runtime=docker "
                                             "&& systemctl restart docker",
                                             "add runtimes.nvidia to daemon.json"),)))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``containers.docker_daemon``."""
    return [CheckSpec(
        id="containers.docker_daemon", title="A Docker daemon setting is as required",
        run=run,
        params_schema={"type": "object", "additionalProperties": False,
                       "required": ["option"], "properties": {"option": {"enum": OPTIONS}}},
        description="daemon.json (duplicate keys and syntax errors refused as dockerd does) "
                    "merged with the flags of docker.service's ExecStart.")]
