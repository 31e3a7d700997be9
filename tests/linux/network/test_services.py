"""The service table (aiaudit.linux.network.services): well formed, its JSON twin in sync,
and a stale twin falls back to the YAML."""

from __future__ import annotations

from aiaudit.linux.network import services as network
from aiaudit.linux.network.owners import Owner
from aiaudit.linux.network.services import identify, load_services


def test_service_table_is_well_formed() -> None:
    services = load_services()
    names = [s.name for s in services]
    assert len(names) == len(set(names))
    for s in services:
        assert s.proto in ("tcp", "udp") and s.risk and s.fix
        assert s.reference.startswith("https://")
        assert all(0 < lo <= hi <= 65535 for lo, hi in s.ports)
        assert s.processes or not s.requires_process
    # the brief's examples resolve by port alone (owner unknown)
    for port, name in ((8888, "Jupyter"), (6006, "TensorBoard"), (8265, "Ray dashboard"),
                       (10001, "Ray client"), (5000, "MLflow"), (2375, "Docker"),
                       (2376, "Docker"), (5555, "DCGM"), (9100, "node exporter"),
                       (6379, "Redis"), (8501, "Streamlit"), (7860, "Gradio")):
        svc = identify(services, "tcp", port, (), False)
        assert svc is not None and name in svc.name, port
    assert identify(services, "tcp", 8000, (), False) is None  # vLLM/Triton need an owner


def test_identify_by_owner_names() -> None:
    services = load_services()
    tb = Owner(5, "python3", ("/usr/bin/python3", "/usr/local/bin/tensorboard.py"))
    assert tb.names() == {"python3", "tensorboard.py", "tensorboard"}
    # on any port by its process (Jupyter), never by a process on another protocol
    jup = Owner(9, "python3", ("/usr/bin/python3", "/usr/bin/jupyter-notebook"))
    got = identify(services, "tcp", 9999, (jup,), True)
    assert got is not None and got.name == "Jupyter"
    assert identify(services, "udp", 9999, (jup,), True) is None


def test_service_table_twin_in_sync() -> None:
    """Run `python -m aiaudit.core.startup.twins checks/data` after editing
    checks/data/network_services.yaml: the scan reads the JSON twin (no PyYAML import)."""
    import json
    from pathlib import Path

    import yaml

    from aiaudit.core.startup.twins import fingerprint

    data = Path(__file__).resolve().parents[3] / "checks" / "data"
    raw = (data / "network_services.yaml").read_bytes()
    doc = json.loads((data / "network_services.json").read_text())
    assert doc["source_crc32"] == fingerprint(raw), "stale: run python -m " \
        "aiaudit.core.startup.twins checks/data"
    assert doc["data"] == yaml.safe_load(raw)


def test_service_table_stale_twin_falls_back_to_yaml(monkeypatch) -> None:
    import yaml

    from aiaudit.core import resources

    fresh = network.load_services()
    orig_read, orig_load = resources.read_text, yaml.load
    used: list[str] = []

    def stale(package: str, name: str) -> str:
        text = orig_read(package, name)
        return text.replace('"source_crc32": "', '"source_crc32": "0') \
            if name.endswith("network_services.json") else text

    def load(*a, **k):
        used.append("yaml")
        return orig_load(*a, **k)

    monkeypatch.setattr(yaml, "load", load)
    assert network.load_services() == fresh and used == []  # the twin, no YAML
    monkeypatch.setattr(resources, "read_text", stale)
    assert network.load_services() == fresh and used == ["yaml"]
