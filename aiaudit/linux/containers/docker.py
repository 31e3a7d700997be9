"""Docker Engine as dockerd reads its configuration.

- Installed: a ``dockerd`` binary or a ``docker.service`` unit.
- Settings: ``/etc/docker/daemon.json`` merged with the flags of ``docker.service``'s
  ``ExecStart`` (dockerd(8), "Daemon configuration file").  dockerd refuses to start when a
  directive is both a flag and a daemon.json key (moby ``daemon/config``
  ``findConfigurationConflicts``, the classic being ``hosts`` with ``-H fd://`` in the
  unit) and when a boolean key holds another type (Go's ``encoding/json``).
- A ``tcp://`` listener needs ``tlsverify``: ``tls`` alone encrypts but lets any client in
  (Docker's "Protect the Docker daemon socket").
- The NVIDIA runtime: ``runtimes.nvidia`` as ``nvidia-ctk runtime configure`` writes it, or
  CDI specs in ``/etc/cdi`` / ``/var/run/cdi`` with ``features.cdi``.
- The socket: ``docker.socket``'s ``SocketMode`` and ``SocketGroup`` (systemd.socket(5);
  Docker's unit ships 0660 and ``docker``) and, live, the mode of ``/run/docker.sock``.

The systemd unit loader and the JSON parser are imported only where they are needed (a host
without Docker never loads the JSON reader).
"""

from __future__ import annotations

import stat
from typing import TYPE_CHECKING, Any

from aiaudit.core.errors import HostError, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record

if TYPE_CHECKING:
    from aiaudit.linux.systemd.units import Unit

DAEMON_JSON = "/etc/docker/daemon.json"
DOCKERD = ("/usr/bin/dockerd", "/usr/sbin/dockerd", "/usr/local/bin/dockerd")
DOCKER_SOCK = "/run/docker.sock"
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
SOCKET_MODE = "0660"
"""``SocketMode`` of the ``docker.socket`` Docker ships."""
SOCKET_GROUP = "docker"
"""``SocketGroup`` of the ``docker.socket`` Docker ships."""
FLAG_OF = {"hosts": ("-H", "--host"), "tlsverify": ("--tlsverify",),
           "userns-remap": ("--userns-remap",), "no-new-privileges": ("--no-new-privileges",),
           "live-restore": ("--live-restore",), "default-runtime": ("--default-runtime",),
           "runtimes": ("--add-runtime",)}
"""dockerd flags that set the same directive as a daemon.json key."""
BOOLEAN_KEYS = ("no-new-privileges", "live-restore", "tlsverify")
"""daemon.json keys dockerd decodes as booleans (any other JSON type: it refuses to start)."""
SETTINGS = ("userns-remap", "no-new-privileges", "live-restore")
"""Options that are one daemon.json key (or its flag) each."""
_KEYS_OF = {"tcp-tls": ("hosts", "tlsverify"), "nvidia-runtime": ("default-runtime", "runtimes")}


# ------------------------------------------------------------------ gather
def _unit(host: Host, name: str) -> Unit | None:
    """The systemd unit ``name`` as systemd would load it, or ``None`` when it cannot be
    read."""
    from aiaudit.linux.systemd.units import load_unit

    try:
        return load_unit(host, name)
    except (HostError, ParseError):
        return None


def docker_installed(host: Host) -> bool:
    """dockerd binary or docker.service present."""
    if any(host.is_file(p) for p in DOCKERD):
        return True
    unit = _unit(host, "docker.service")
    return unit is not None and unit.exists


@record
class DaemonJson:
    """``/etc/docker/daemon.json`` as dockerd decodes it."""

    text: str
    """The file's text (``""`` when there is no file)."""
    config: dict[str, Any]
    """The decoded object (``{}`` when there is no file)."""


def read_daemon_json(host: Host) -> DaemonJson:
    """daemon.json of the root; no file is an empty configuration.  A file dockerd refuses
    (syntax error, duplicate key) raises :class:`ParseError`, an unreadable one
    :class:`HostError`."""
    from aiaudit.linux.containers import jsonconf  # only where Docker is installed

    try:
        text = host.read_text(DAEMON_JSON)
    except NotFound:
        return DaemonJson("", {})
    return DaemonJson(text, jsonconf.parse_object(text, DAEMON_JSON.lstrip("/")))


def daemon_json_line(daemon: DaemonJson, key: str) -> int | None:
    """Line of ``"key":`` in daemon.json (for evidence), or ``None``."""
    from aiaudit.linux.containers import jsonconf

    return jsonconf.key_line(daemon.text, key)


def exec_flags(host: Host) -> tuple[list[str], str | None]:
    """dockerd's ``ExecStart`` words (the last non-empty ``ExecStart`` of docker.service)
    and the ``file:line`` they come from; ``([], None)`` without one."""
    unit = _unit(host, "docker.service")
    if unit is None:
        return [], None
    starts = [a for a in unit.get_all("Service", "ExecStart") if a.value]
    if not starts:
        return [], None
    last = starts[-1]
    return last.value.split(), f"{last.file}:{last.line}"


def cdi_specs(host: Host) -> list[str]:
    """NVIDIA CDI specs (``*nvidia*`` in the CDI directories)."""
    return [p for d in CDI_DIRS for p in host.glob(f"{d}/*nvidia*")]


# ------------------------------------------------------------------ decide
def flag_values(words: list[str], *names: str) -> list[str]:
    """Values of the flags ``names`` in ``words`` (``-H x`` and ``-H=x`` both count)."""
    out = []
    for i, w in enumerate(words):
        for n in names:
            if w == n and i + 1 < len(words):
                out.append(words[i + 1])
            elif w.startswith(n + "="):
                out.append(w.split("=", 1)[1])
    return out


def json_keys(option: str) -> tuple[str, ...]:
    """The daemon.json keys an option of ``containers.docker_daemon`` reads."""
    return _KEYS_OF.get(option, (option,))


def flag_conflicts(config: dict[str, Any], words: list[str], keys: tuple[str, ...]
                   ) -> list[str]:
    """The ``keys`` given both in daemon.json and as a dockerd flag (dockerd refuses to
    start: "the following directives are specified both as a flag and in the configuration
    file")."""
    return [k for k in keys if k in config and any(
        w == f or w.startswith(f + "=") for w in words for f in FLAG_OF[k])]


def non_booleans(config: dict[str, Any], keys: tuple[str, ...]) -> list[str]:
    """The boolean ``keys`` whose daemon.json value is not ``true``/``false`` (dockerd
    refuses to start)."""
    return [k for k in BOOLEAN_KEYS if k in config and k in keys
            and not isinstance(config[k], bool)]


def setting_value(config: dict[str, Any], words: list[str], option: str) -> Any:
    """The effective value of one of :data:`SETTINGS`: the daemon.json key, else the flag's
    value (``True`` for a bare flag), else ``None``."""
    flag = flag_values(words, f"--{option}")
    value: Any = config.get(option)
    if value is None and (flag or f"--{option}" in words):
        value = flag[0] if flag else True
    return value


def setting_holds(option: str, value: Any) -> bool:
    """Whether a value of one of :data:`SETTINGS` is the safe one: ``userns-remap`` names a
    user, the booleans are ``true``."""
    if option == "userns-remap":
        return bool(value) and value not in ("false", "")
    return value is True


def tcp_listeners(config: dict[str, Any], words: list[str]) -> list[str]:
    """The ``tcp://`` addresses dockerd listens on (daemon.json ``hosts`` and ``-H``)."""
    hosts = list(config.get("hosts") or []) if isinstance(config.get("hosts"), list) else []
    hosts += flag_values(words, "-H", "--host")
    return [h for h in hosts if isinstance(h, str) and h.startswith("tcp://")]


def tls_verified(config: dict[str, Any], words: list[str]) -> bool:
    """``tlsverify`` is on (client certificates required)."""
    return config.get("tlsverify") is True or "--tlsverify" in words or \
        "--tlsverify=true" in words


def nvidia_runtimes(config: dict[str, Any]) -> list[str]:
    """Names of the configured runtimes that are NVIDIA's."""
    runtimes = config.get("runtimes")
    if not isinstance(runtimes, dict):
        return []
    return [n for n in runtimes if "nvidia" in n.lower()]


def cdi_enabled(config: dict[str, Any]) -> bool:
    """``features.cdi`` is ``true``."""
    features = config.get("features")
    return isinstance(features, dict) and features.get("cdi") is True


# ------------------------------------------------------------------ socket
@record
class SocketSettings:
    """``docker.socket``'s mode and group as systemd applies them."""

    mode: str
    group: str
    assignments: tuple[tuple[str, str, str, int], ...]
    """``(key, value, file, line)`` of the ``SocketMode``/``SocketGroup`` lines that set
    them (none: the defaults)."""


def socket_settings(host: Host) -> SocketSettings:
    """``SocketMode`` and ``SocketGroup`` of docker.socket (defaults
    :data:`SOCKET_MODE`, :data:`SOCKET_GROUP` when unset or unreadable)."""
    values = {"SocketMode": SOCKET_MODE, "SocketGroup": SOCKET_GROUP}
    found: list[tuple[str, str, str, int]] = []
    unit = _unit(host, "docker.socket")
    if unit is not None:
        for key in values:
            a = unit.get("Socket", key)
            if a is not None and a.value:
                found.append((key, a.value, a.file, a.line))
                values[key] = a.value
    return SocketSettings(values["SocketMode"], values["SocketGroup"], tuple(found))


def live_socket_mode(host: Host) -> str | None:
    """Live, the permission bits of ``/run/docker.sock`` (``"0660"``); ``None`` offline or
    without the socket."""
    if not host.live:
        return None
    try:
        return f"{stat.S_IMODE(host.stat(DOCKER_SOCK).st_mode):04o}"
    except HostError:
        return None


def socket_exposure(mode: int, group: str, broad_groups: list[str]) -> str | None:
    """Who beyond root and a dedicated group can write the socket: ``"world"`` (mode
    o+w), ``"group"`` (g+w for a group most users are in) or ``None``."""
    if mode & 0o002:
        return "world"
    if mode & 0o020 and group in broad_groups:
        return "group"
    return None
