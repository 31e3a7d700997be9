"""Well-known ML and ops services (Jupyter, TensorBoard, Ray, MLflow, Docker API, DCGM...)
and how a listening socket is recognised as one of them: by port, by port and process
name, or by process name on any port.

The table is ``data/network_services.yaml``, package data of ``aiaudit.checks``; a scan
reads its JSON twin ``network_services.json`` (written by ``python -m
aiaudit.core.startup.twins checks/data``) when it matches the YAML bytes.
"""

from __future__ import annotations

from typing import Any

from aiaudit.core.startup.records import record
from aiaudit.linux.network.owners import Owner

SERVICES_DATA = "data/network_services.yaml"
"""The service table (package data of ``aiaudit.checks``); its JSON twin
``network_services.json`` is written by ``python -m aiaudit.core.startup.twins checks/data``."""


@record
class Service:
    """One entry of the service table."""

    name: str
    proto: str
    ports: tuple[tuple[int, int], ...]
    processes: frozenset[str]
    any_port: bool
    requires_process: bool
    risk: str
    fix: str
    reference: str


def _services_data() -> Any:
    """The parsed service table: the JSON twin when it matches the YAML bytes (no PyYAML
    import, about 15 ms of a scan), else the YAML itself."""
    from aiaudit.core import resources
    from aiaudit.core.startup import twins

    package = "aiaudit.checks"
    data = twins.load(lambda n: resources.read_bytes(package, n),
                      lambda n: resources.read_text(package, n),
                      lambda n: resources.exists(package, n), SERVICES_DATA)
    if data is not None:
        return data
    import yaml

    raw = resources.read_bytes(package, SERVICES_DATA)

    return yaml.load(raw.decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_services() -> tuple[Service, ...]:
    """The service table shipped as ``aiaudit.checks`` data ``network_services.yaml``."""
    out = []
    for e in _services_data()["services"]:
        ports = tuple((p[0], p[1]) if isinstance(p, list) else (p, p) for p in e["ports"])
        out.append(Service(e["name"], e.get("proto", "tcp"), ports,
                           frozenset(e.get("processes", ())), bool(e.get("any_port")),
                           bool(e.get("requires_process")), e.get("risk", ""), e.get("fix", ""),
                           e.get("reference", "")))
    return tuple(out)


def identify(services: tuple[Service, ...], proto: str, port: int,
             owners: tuple[Owner, ...], owner_known: bool) -> Service | None:
    """The service a socket belongs to: by port (and owner name where the entry needs
    one), else by owner name for entries that run on any port.  ``owner_known`` False:
    entries that require a process do not match on the port alone."""
    names = set().union(*(o.names() for o in owners)) if owners else set()
    for svc in services:
        if svc.proto != proto or not any(lo <= port <= hi for lo, hi in svc.ports):
            continue
        if svc.requires_process and not (names & svc.processes):
            continue
        return svc
    for svc in services:
        if svc.proto == proto and svc.any_port and names & svc.processes:
            return svc
    return None
