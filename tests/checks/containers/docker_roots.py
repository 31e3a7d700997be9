"""Fixture roots with Docker Engine installed, for the ``containers.docker_*`` tests."""

from __future__ import annotations

DOCKER = {"/usr/bin/dockerd": "\x7fELF",
          "/lib/systemd/system/docker.service": "[Service]\nExecStart=/usr/bin/dockerd "
                                                "--containerd=/run/containerd/containerd.sock\n"}
DPKG = "Package: {p}\nStatus: install ok installed\nArchitecture: amd64\nVersion: {v}\n\n"


def docker(make_root, daemon: str | None = None, unit: str | None = None, **more):
    """A root with dockerd and docker.service (``unit``: its ExecStart), daemon.json
    (``daemon``) and ``more`` files."""
    files = dict(DOCKER, **more)
    if daemon is not None:
        files["/etc/docker/daemon.json"] = daemon
    if unit is not None:
        files["/lib/systemd/system/docker.service"] = f"[Service]\nExecStart={unit}\n"
    return make_root(files)
