"""``containers.*``: container runtimes on a shared GPU node do not hand out root.

- ``containers.docker_daemon``: one setting of ``/etc/docker/daemon.json`` as dockerd reads
  it (dockerd(8), "Daemon configuration file"; a flag on the unit's ``ExecStart`` counts the
  same, since dockerd merges both and refuses a key given in both):
  ``userns-remap``, ``no-new-privileges``, ``live-restore``, ``hosts`` (a ``tcp://`` listener
  needs ``tlsverify: true``: ``tls`` alone encrypts but lets any client in, Docker's
  "Protect the Docker daemon socket"), and the NVIDIA runtime when the node has NVIDIA GPUs
  (``runtimes.nvidia`` as ``nvidia-ctk runtime configure`` writes it, or CDI specs in
  ``/etc/cdi`` / ``/var/run/cdi`` with ``features.cdi``).
- ``containers.docker_socket``: ``docker.socket``'s ``SocketMode`` (default 0660) and
  ``SocketGroup`` (default ``docker``) (systemd.socket(5)); live, the mode of
  ``/run/docker.sock``.  Everyone who can write the socket is root.
- ``containers.nvidia_toolkit``: the NVIDIA Container Toolkit's version (security bulletins:
  CVE-2024-0132 fixed in 1.16.2, CVE-2025-23359 in 1.17.4, CVE-2025-23266/23267 in 1.17.8)
  and ``/etc/nvidia-container-runtime/config.toml``:
  ``accept-nvidia-visible-devices-envvar-when-unprivileged`` (default true: any
  unprivileged container may ask for every GPU with an environment variable) and
  ``nvidia-container-cli.ldconfig`` (must start with ``@``: the host's ldconfig; without it
  the container's own binary runs with the hook's privileges).
- ``containers.apptainer_setuid``: ``allow setuid`` of ``apptainer.conf`` (default ``yes``)
  with a setuid-root ``starter-suid`` installed (apptainer.conf(5), "allow setuid").
- ``containers.podman_rootless``: with podman installed, the training user has at least
  65536 subordinate uids and gids in ``/etc/subuid`` and ``/etc/subgid`` (subuid(5);
  podman's rootless tutorial).
"""

from __future__ import annotations

import re
import stat
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
from aiaudit.core.errors import HostError, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.linux.accounts.users import training_user
from aiaudit.linux.gpu import stack as gs
from aiaudit.linux.packages.dpkg import upstream_version, version_key
from aiaudit.linux.packages.installed import dpkg_version

DAEMON_JSON = "/etc/docker/daemon.json"
DOCKERD = ("/usr/bin/dockerd", "/usr/sbin/dockerd", "/usr/local/bin/dockerd")
TOOLKIT_TOML = "/etc/nvidia-container-runtime/config.toml"
APPTAINER_CONFS = ("/etc/apptainer/apptainer.conf", "/usr/local/etc/apptainer/apptainer.conf",
                   "/etc/singularity/singularity.conf",
                   "/usr/local/etc/singularity/singularity.conf")
STARTER_SUID = ("/usr/libexec/apptainer/bin/starter-suid",
                "/usr/local/libexec/apptainer/bin/starter-suid",
                "/usr/lib/x86_64-linux-gnu/singularity/bin/starter-suid",
                "/usr/libexec/singularity/bin/starter-suid",
                "/usr/local/libexec/singularity/bin/starter-suid")
PODMAN = ("/usr/bin/podman", "/usr/local/bin/podman")
SUBIDS = 65536
FLAG_OF = {"hosts": ("-H", "--host"), "tlsverify": ("--tlsverify",),
           "userns-remap": ("--userns-remap",), "no-new-privileges": ("--no-new-privileges",),
           "live-restore": ("--live-restore",), "default-runtime": ("--default-runtime",),
           "runtimes": ("--add-runtime",)}
"""dockerd flags that set the same directive as a daemon.json key."""


# ------------------------------------------------------------------ Docker
def docker_installed(host: Host) -> bool:
    """dockerd binary or docker.service present."""
    from aiaudit.linux.systemd.units import load_unit

    if any(host.is_file(p) for p in DOCKERD):
        return True
    try:
        return load_unit(host, "docker.service").exists
    except (HostError, ParseError):
        return False


def _exec_flags(host: Host) -> tuple[list[str], str | None]:
    """dockerd's ``ExecStart`` words and the file:line they come from."""
    from aiaudit.linux.systemd.units import load_unit

    try:
        unit = load_unit(host, "docker.service")
    except (HostError, ParseError):
        return [], None
    starts = [a for a in unit.get_all("Service", "ExecStart") if a.value]
    if not starts:
        return [], None
    last = starts[-1]
    return last.value.split(), f"{last.file}:{last.line}"


def _flag_values(words: list[str], *names: str) -> list[str]:
    out = []
    for i, w in enumerate(words):
        for n in names:
            if w == n and i + 1 < len(words):
                out.append(words[i + 1])
            elif w.startswith(n + "="):
                out.append(w.split("=", 1)[1])
    return out


def run_docker(ctx: CheckContext) -> Iterator[Result]:
    """One daemon.json setting, as dockerd will apply it."""
    host, opt = ctx.host, ctx.params["option"]
    if not docker_installed(host):
        yield Result(Status.SKIP, "dockerd", "Docker Engine is not installed (no dockerd, no "
                     "docker.service)")
        return
    from aiaudit.linux.containers import jsonconf  # only where Docker is installed

    try:
        text = host.read_text(DAEMON_JSON)
        cfg = jsonconf.parse_object(text, DAEMON_JSON.lstrip("/"))
    except NotFound:
        text, cfg = "", {}
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "daemon.json", f"{exc} (dockerd refuses to start)",
                     evidence=(Evidence.file(DAEMON_JSON),))
        return
    words, where = _exec_flags(host)

    def ev(key: str) -> tuple[Evidence, ...]:
        if key in cfg:
            return (Evidence.file(DAEMON_JSON, jsonconf.key_line(text, key),
                                  f'"{key}": {str(cfg[key])[:80]}'),)
        return (Evidence.default(f"dockerd default for {key}"),)

    merge = ("Add it to /etc/docker/daemon.json (keep the other keys; a key may not also be a "
             "dockerd flag in the unit) and restart dockerd.")
    # dockerd refuses to start when a directive is both a flag and a daemon.json key
    # (daemon/config findConfigurationConflicts), the classic being "hosts" with -H fd://
    # in the unit, and when a boolean key holds another type (encoding/json)
    jkeys = {"tcp-tls": ("hosts", "tlsverify"), "nvidia-runtime": ("default-runtime",
                                                                   "runtimes")}.get(opt, (opt,))
    both = [k for k in jkeys if k in cfg and any(
        w == f or w.startswith(f + "=") for w in words for f in FLAG_OF[k])]
    if both:
        yield Result(Status.ERROR, opt, f"{', '.join(both)} is set both in daemon.json and as "
                     f"a dockerd flag ({where}): dockerd refuses to start ('the following "
                     "directives are specified both as a flag and in the configuration file')",
                     evidence=ev(both[0]), remediation=Remediation(
                         "Keep the setting in one place: drop the flag from docker.service "
                         "(a drop-in with an empty ExecStart= and a new one) or the key from "
                         "daemon.json."))
        return
    bools = [k for k in ("no-new-privileges", "live-restore", "tlsverify")
             if k in cfg and k in jkeys and not isinstance(cfg[k], bool)]
    if bools:
        yield Result(Status.ERROR, opt, f'{bools[0]} is {cfg[bools[0]]!r} in daemon.json, not '
                     "true/false: dockerd refuses to start", evidence=ev(bools[0]))
        return
    if opt in ("userns-remap", "no-new-privileges", "live-restore"):
        flag = _flag_values(words, f"--{opt}")
        value: Any = cfg.get(opt)
        if value is None and (flag or f"--{opt}" in words):
            value = flag[0] if flag else True
        want = {"userns-remap": "a user (e.g. default)", "no-new-privileges": "true",
                "live-restore": "true"}[opt]
        good = bool(value) and value not in ("false", "") if opt == "userns-remap" else \
            value is True
        why = {"userns-remap": "root in a container is root on the host (files it writes "
                               "through bind mounts belong to uid 0)",
               "no-new-privileges": "setuid binaries in an image can gain privileges",
               "live-restore": "restarting or upgrading dockerd kills every running "
                               "training container"}[opt]
        if good:
            yield Result(Status.PASS, opt, f"{opt} is {value}", expected=want,
                         actual=str(value), aspect=Aspect.CONFIG, evidence=ev(opt))
        else:
            snippet = {"userns-remap": '"userns-remap": "default"',
                       "no-new-privileges": '"no-new-privileges": true',
                       "live-restore": '"live-restore": true'}[opt]
            yield Result(Status.FAIL, opt, f"{opt} is {value if value is not None else 'not set'}"
                         f": {why}", expected=want, actual=str(value), aspect=Aspect.CONFIG,
                         evidence=ev(opt), remediation=Remediation(
                             f"Set {snippet} in daemon.json. {merge}"))
        return
    if opt == "tcp-tls":
        hosts = list(cfg.get("hosts") or []) if isinstance(cfg.get("hosts"), list) else []
        hosts += _flag_values(words, "-H", "--host")
        tcp = [h for h in hosts if isinstance(h, str) and h.startswith("tcp://")]
        verify = cfg.get("tlsverify") is True or "--tlsverify" in words or \
            "--tlsverify=true" in words
        evs = ev("hosts") + ((Evidence.file(where.rsplit(":", 1)[0],
                                            int(where.rsplit(":", 1)[1])),) if where else ())
        if not tcp:
            yield Result(Status.PASS, "hosts", "dockerd listens on no TCP address",
                         expected="no tcp:// without tlsverify", actual="no tcp://",
                         aspect=Aspect.CONFIG, evidence=evs)
        elif verify:
            yield Result(Status.PASS, "hosts", f"dockerd listens on {', '.join(tcp)} with "
                         "tlsverify (client certificates required)",
                         expected="no tcp:// without tlsverify", actual="tlsverify",
                         aspect=Aspect.CONFIG, evidence=evs)
        else:
            yield Result(Status.FAIL, "hosts", f"dockerd listens on {', '.join(tcp)} without "
                         "tlsverify: anyone who reaches the port is root on this host",
                         expected="no tcp:// without tlsverify", actual=", ".join(tcp),
                         aspect=Aspect.CONFIG, evidence=evs, remediation=Remediation(
                             "Remove the tcp:// listener (use ssh://user@host as DOCKER_HOST), "
                             "or set tlsverify with tlscacert/tlscert/tlskey. " + merge))
        return
    # nvidia runtime
    g = gs.gpus(host)
    if host.live and not g.pci:
        yield Result(Status.SKIP, "nvidia runtime", "no NVIDIA GPU on the PCI bus")
        return
    if not host.live and gs.kernel_side(host).installed is None and \
            not gs.nvidia_packages(host):
        yield Result(Status.SKIP, "nvidia runtime", "no NVIDIA driver in this root")
        return
    runtimes = cfg.get("runtimes") if isinstance(cfg.get("runtimes"), dict) else {}
    names = [n for n in runtimes if "nvidia" in n.lower()]
    cdi = [p for d in ("/etc/cdi", "/var/run/cdi") for p in host.glob(f"{d}/*nvidia*")]
    features = cfg.get("features") if isinstance(cfg.get("features"), dict) else {}
    if names:
        yield Result(Status.PASS, "nvidia runtime", f"runtime {names[0]} is configured"
                     + (" and is the default" if cfg.get("default-runtime") in names else ""),
                     expected="nvidia runtime or CDI", actual=names[0], aspect=Aspect.CONFIG,
                     evidence=ev("runtimes"))
    elif cdi and features.get("cdi") is True:
        yield Result(Status.PASS, "nvidia runtime", f"CDI is enabled and {cdi[0]} describes "
                     "the GPUs (--device nvidia.com/gpu=all)", expected="nvidia runtime or CDI",
                     actual="CDI", aspect=Aspect.CONFIG, evidence=(Evidence.file(cdi[0]),))
    else:
        yield Result(Status.FAIL, "nvidia runtime", "daemon.json configures no NVIDIA runtime "
                     "and no CDI: `docker run --gpus all` fails with 'could not select device "
                     "driver'", expected="nvidia runtime or CDI", actual="none",
                     aspect=Aspect.CONFIG, evidence=ev("runtimes"), remediation=Remediation(
                         "Register the NVIDIA runtime with Docker and restart it.", (
                             Snippet.command("nvidia-ctk runtime configure --runtime=docker "
                                             "&& systemctl restart docker",
                                             "add runtimes.nvidia to daemon.json"),)))


def run_socket(ctx: CheckContext) -> Iterator[Result]:
    """docker.socket is not writable by others or a broad group."""
    from aiaudit.linux.systemd.units import load_unit

    host, p = ctx.host, ctx.params
    if not docker_installed(host):
        yield Result(Status.SKIP, "docker.sock", "Docker Engine is not installed")
        return
    mode, group, evs = "0660", "docker", []
    try:
        unit = load_unit(host, "docker.socket")
        for key in ("SocketMode", "SocketGroup"):
            a = unit.get("Socket", key)
            if a is not None and a.value:
                evs.append(Evidence.file(a.file, a.line, f"{key}={a.value}"))
                if key == "SocketMode":
                    mode = a.value
                else:
                    group = a.value
    except (HostError, ParseError):
        pass
    aspect = Aspect.PERSISTED
    if host.live:
        try:
            st = host.stat("/run/docker.sock")
            mode = f"{stat.S_IMODE(st.st_mode):04o}"
            evs.append(Evidence.runtime("/run/docker.sock", mode))
            aspect = Aspect.RUNTIME
        except HostError:
            pass
    try:
        m = int(mode, 8)
    except ValueError:
        yield Result(Status.ERROR, "docker.sock", f"SocketMode={mode} is not octal")
        return
    from aiaudit.linux.accounts.users import accounts

    try:
        members = accounts(host).db.group(group)
    except (HostError, ParseError):
        members = None
    who = (f"group {group} ({', '.join(members.members) or 'no listed members'})"
           if members else f"group {group}")
    fix = Remediation("Keep the socket 0660 root:docker and the docker group for "
                      "administrators only.", (Snippet.file(
                          "/etc/systemd/system/docker.socket.d/zz-aiaudit.conf",
                          "[Socket]\nSocketMode=0660\nSocketGroup=docker\n",
                          "socket mode and group"),))
    if m & 0o002:
        yield Result(Status.FAIL, "docker.sock", f"the Docker socket is mode {mode}: every local "
                     "user is root", expected="not world-writable", actual=mode, aspect=aspect,
                     evidence=tuple(evs), remediation=fix)
    elif m & 0o020 and group in p["broad_groups"]:
        yield Result(Status.FAIL, "docker.sock", f"the Docker socket is writable by {who}, a "
                     "group most users are in", expected="a dedicated group", actual=group,
                     aspect=aspect, evidence=tuple(evs), remediation=fix)
    else:
        yield Result(Status.PASS, "docker.sock", f"the Docker socket is mode {mode}, writable "
                     f"by root and {who}: each of them is root-equivalent",
                     expected="0660 root:docker", actual=f"{mode} {group}", aspect=aspect,
                     evidence=tuple(evs))


# ------------------------------------------------------------------ NVIDIA toolkit
def _toolkit_version(host: Host) -> tuple[str, str] | None:
    for pkg in ("nvidia-container-toolkit", "nvidia-container-toolkit-base",
                "libnvidia-container-tools"):
        v = dpkg_version(host, pkg)
        if v:
            return pkg, v
    for name, v in gs.rpm_packages(host).items():
        if name in ("nvidia-container-toolkit", "nvidia-container-toolkit-base"):
            return name, v
    return None


def run_toolkit(ctx: CheckContext) -> Iterator[Result]:
    """NVIDIA Container Toolkit version and config.toml settings."""
    host, p = ctx.host, ctx.params
    ver = _toolkit_version(host)
    has_conf = host.exists(TOOLKIT_TOML)
    if ver is None and not has_conf:
        yield Result(Status.SKIP, "nvidia-container-toolkit", "the NVIDIA Container Toolkit is "
                     "not installed")
        return
    if p["property"] == "version":
        if ver is None:
            yield Result(Status.SKIP, "nvidia-container-toolkit", f"{TOOLKIT_TOML} exists but no "
                         "toolkit package is in the package database")
            return
        name, full = ver
        up = upstream_version(full)
        ev = (Evidence.file("/var/lib/dpkg/status", None, f"{name} {full}"),)
        want = p["min_version"]
        if version_key(up) < version_key(want):
            yield Result(Status.FAIL, name, f"{name} {up} is older than {want}: container "
                         "escapes to host root are published for it (NVIDIA security "
                         "bulletins)", expected=f">= {want}", actual=up, evidence=ev,
                         remediation=Remediation("Upgrade the toolkit.", (Snippet.command(
                             "apt-get install --only-upgrade nvidia-container-toolkit "
                             "nvidia-container-toolkit-base libnvidia-container1 "
                             "libnvidia-container-tools", "upgrade the toolkit"),)))
        else:
            yield Result(Status.PASS, name, f"{name} {up} (>= {want})", expected=f">= {want}",
                         actual=up, evidence=ev)
        return
    from aiaudit.linux.containers import tomlconf  # only where the NVIDIA Container Toolkit is

    try:
        text = host.read_text(TOOLKIT_TOML)
        cfg = tomlconf.parse(text, TOOLKIT_TOML.lstrip("/"))
    except NotFound:
        text, cfg = "", {}
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "config.toml", str(exc), evidence=(Evidence.file(TOOLKIT_TOML),))
        return

    def line_of(key: str) -> int | None:
        for n, ln in enumerate(text.splitlines(), 1):
            if re.match(rf"\s*{re.escape(key)}\s*=", ln):
                return n
        return None

    key = "accept-nvidia-visible-devices-envvar-when-unprivileged"
    val = cfg.get(key, True)
    ev = (Evidence.file(TOOLKIT_TOML, line_of(key), f"{key} = {str(val).lower()}")
          if key in cfg else Evidence.default(f"toolkit default for {key}", "true"),)
    if val is not False:
        yield Result(Status.FAIL, key, f"{key} is {str(val).lower()}"
                     + ("" if key in cfg else " (the default)")
                     + ": any unprivileged container gets every GPU by setting "
                     "NVIDIA_VISIBLE_DEVICES=all, bypassing the scheduler's GPU allocation",
                     expected="false", actual=str(val).lower(), aspect=Aspect.CONFIG,
                     evidence=ev, remediation=Remediation(
                         f"Set `{key} = false` at the top level of {TOOLKIT_TOML} (GPUs are "
                         "then requested with --gpus / CDI / volume mounts only).",
                         (Snippet.command(f"nvidia-ctk config --in-place --set {key}=false",
                                          "write the setting"),)))
    else:
        yield Result(Status.PASS, key, f"{key} is false", expected="false", actual="false",
                     aspect=Aspect.CONFIG, evidence=ev)
    cli = cfg.get("nvidia-container-cli") if isinstance(cfg.get("nvidia-container-cli"),
                                                        dict) else {}
    ldc = cli.get("ldconfig")
    if isinstance(ldc, str) and not ldc.startswith("@"):
        yield Result(Status.FAIL, "nvidia-container-cli.ldconfig", f"ldconfig = {ldc!r} runs "
                     "the container image's ldconfig during the privileged hook",
                     expected="@/sbin/ldconfig", actual=ldc, aspect=Aspect.CONFIG,
                     evidence=(Evidence.file(TOOLKIT_TOML, line_of("ldconfig"), ldc),),
                     remediation=Remediation(f'Set ldconfig = "@/sbin/ldconfig" in the '
                                             f"[nvidia-container-cli] table of {TOOLKIT_TOML}."))
    else:
        yield Result(Status.PASS, "nvidia-container-cli.ldconfig",
                     f"ldconfig is {ldc!r} (the host's)" if ldc else
                     "ldconfig is the default @/sbin/ldconfig (the host's)",
                     expected="@...", actual=str(ldc or "@/sbin/ldconfig"), aspect=Aspect.CONFIG)


# ------------------------------------------------------------------ Apptainer
def run_apptainer(ctx: CheckContext) -> Iterator[Result]:
    """No setuid-root starter in use."""
    host = ctx.host
    conf = next((c for c in APPTAINER_CONFS if host.is_file(c)), None)
    starters = []
    for s in STARTER_SUID:
        try:
            st = host.stat(s)
        except HostError:
            continue
        if st.st_mode & stat.S_ISUID and st.st_uid == 0:
            starters.append(s)
    if conf is None and not starters:
        yield Result(Status.SKIP, "apptainer", "Apptainer/Singularity is not installed")
        return
    value, line = "yes", None
    if conf:
        from aiaudit.linux.containers import apptainer  # only where Apptainer is configured

        try:
            parsed = apptainer.parse(host.read_text(conf), conf.lstrip("/"))
        except (HostError, ParseError) as exc:
            yield Result(Status.ERROR, "apptainer", str(exc), evidence=(Evidence.file(conf),))
            return
        if "allow setuid" in parsed:
            value, line = parsed["allow setuid"]
    ev = ((Evidence.file(conf, line, f"allow setuid = {value}"),) if conf and line else
          (Evidence.default("apptainer default for allow setuid", "yes"),))
    ev += tuple(Evidence.file(s, None, "setuid root") for s in starters)
    if value.lower() == "yes" and starters:
        yield Result(Status.FAIL, "allow setuid", f"allow setuid = {value} and {starters[0]} is "
                     "setuid root: every container start runs privileged code that has had "
                     "root exploits (user namespaces do the same job unprivileged)",
                     expected="no (or no setuid starter)", actual="yes", aspect=Aspect.CONFIG,
                     evidence=ev, remediation=Remediation(
                         f"Set `allow setuid = no` in {conf or APPTAINER_CONFS[0]} (or remove the "
                         "apptainer-suid package) and use unprivileged user namespaces.",
                         (Snippet.command(f"sed -i 's/^allow setuid = yes/allow setuid = no/' "
                                          f"{conf or APPTAINER_CONFS[0]}",
                                          "turn setuid mode off"),)))
    else:
        why = ("allow setuid = no" if value.lower() != "yes" else
               "no setuid-root starter-suid is installed")
        yield Result(Status.PASS, "allow setuid", f"Apptainer runs unprivileged ({why})",
                     expected="no (or no setuid starter)", actual=value, aspect=Aspect.CONFIG,
                     evidence=ev)


# ------------------------------------------------------------------ podman
def _subid(host: Host, path: str, name: str, uid: int) -> tuple[int, int | None]:
    """(total subordinate ids for the user, line of the first entry)."""
    text = host.try_read_text(path) or ""
    total, first = 0, None
    for n, raw in enumerate(text.splitlines(), 1):
        parts = raw.strip().split(":")
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
            continue
        if parts[0] in (name, str(uid)):
            total += int(parts[2])
            first = first or n
    return total, first


def run_podman(ctx: CheckContext) -> Iterator[Result]:
    """The training user can run rootless podman."""
    host = ctx.host
    if not any(host.is_file(p) for p in PODMAN):
        yield Result(Status.SKIP, "podman", "podman is not installed")
        return
    user, _acc, early = training_user(ctx)
    if early is not None:
        yield early
        return
    assert user is not None
    res = {f: _subid(host, f, user.name, user.uid) for f in ("/etc/subuid", "/etc/subgid")}
    ev = tuple(Evidence.file(f, ln) for f, (_, ln) in res.items() if ln)
    short = [f"{f.rsplit('/', 1)[1]}: {t}" for f, (t, _) in res.items() if t < SUBIDS]
    if short:
        yield Result(Status.FAIL, user.name, f"{user.name} has too few subordinate ids "
                     f"({', '.join(short)}; rootless podman needs {SUBIDS} to map an image's "
                     "users), so it would have to run podman as root",
                     expected=f">= {SUBIDS} each", actual=", ".join(short), evidence=ev,
                     remediation=Remediation("Give the user subordinate id ranges.", (
                         Snippet.command(f"usermod --add-subuids 100000-165535 --add-subgids "
                                         f"100000-165535 {user.name}",
                                         "add 65536 subuids and subgids"),)))
    else:
        yield Result(Status.PASS, user.name, f"{user.name} has subuid/subgid ranges for "
                     "rootless podman", expected=f">= {SUBIDS} each",
                     actual=", ".join(str(t) for t, _ in res.values()), evidence=ev)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register the container runtime checks."""
    obj = {"type": "object", "additionalProperties": False}
    return [
        CheckSpec(id="containers.docker_daemon", title="A Docker daemon setting is as required",
                  run=run_docker,
                  params_schema=obj | {"required": ["option"], "properties": {"option": {
                      "enum": ["userns-remap", "no-new-privileges", "live-restore", "tcp-tls",
                               "nvidia-runtime"]}}},
                  description="daemon.json (duplicate keys and syntax errors refused as dockerd "
                              "does) merged with the flags of docker.service's ExecStart."),
        CheckSpec(id="containers.docker_socket", title="The Docker socket is not broadly writable",
                  run=run_socket,
                  params_schema=obj | {"properties": {"broad_groups": {
                      "type": "array", "items": {"type": "string"},
                      "default": ["users", "staff", "domain users"]}}},
                  description="docker.socket SocketMode/SocketGroup (defaults 0660, docker); "
                              "live, the mode of /run/docker.sock."),
        CheckSpec(id="containers.nvidia_toolkit",
                  title="The NVIDIA Container Toolkit is patched and locked down",
                  run=run_toolkit,
                  params_schema=obj | {"required": ["property"], "properties": {
                      "property": {"enum": ["version", "config"]},
                      "min_version": {"type": "string", "pattern": r"^\d+(\.\d+)*$",
                                      "default": "1.17.8"}}},
                  description="Package version against min_version; config.toml's "
                              "accept-nvidia-visible-devices-envvar-when-unprivileged and "
                              "nvidia-container-cli.ldconfig."),
        CheckSpec(id="containers.apptainer_setuid", title="Apptainer does not run setuid root",
                  run=run_apptainer, params_schema=obj,
                  description="allow setuid in apptainer.conf/singularity.conf (default yes) "
                              "with a setuid-root starter-suid present."),
        CheckSpec(id="containers.podman_rootless",
                  title="The training user can run rootless podman",
                  run=run_podman, params_schema=obj,
                  description="With podman installed: /etc/subuid and /etc/subgid give the "
                              "training user (name or uid) at least 65536 ids each."),
    ]
