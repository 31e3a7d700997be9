"""Hand-made InfiniBand sysfs trees (labelled: not captures), in the kernel's formats
(``drivers/infiniband/core/sysfs.c``: ``state_show``, ``phys_state_show``, ``rate_show``)."""

from __future__ import annotations

IB = "/sys/class/infiniband"


def ib_port(files: dict, dev: str, n: int, state: str = "4: ACTIVE",
            rate: str = "400 Gb/sec (4X NDR)", phys: str = "5: LinkUp",
            layer: str = "InfiniBand", **counters: int | str) -> dict:
    """Add port ``n`` of ``dev`` to ``files``; ``counters`` as ``symbol_error=3``."""
    base = f"{IB}/{dev}/ports/{n}"
    files[f"{base}/state"] = state + "\n"
    files[f"{base}/phys_state"] = phys + "\n"
    files[f"{base}/rate"] = rate + "\n"
    files[f"{base}/link_layer"] = layer + "\n"
    for name, value in counters.items():
        files[f"{base}/counters/{name}"] = f"{value}\n"
    return files
