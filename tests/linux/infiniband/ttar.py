"""Unpack node_exporter's ``ttar`` text archives (``Path:``/``Lines:``/``Mode:`` records,
``Directory:`` and ``SymlinkTo:``) into ``make_root`` file dicts."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parents[2] / "fixtures" / "infiniband"


def ttar_files(name: str) -> tuple[dict[str, str], dict[str, str]]:
    """(files, links) of the archive ``name``, with absolute paths (``/sys/...``)."""
    lines = (FIXTURES / name).read_text().split("\n")
    files: dict[str, str] = {}
    links: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("Path: "):
            path = "/" + line[6:]
            nxt = lines[i + 1]
            if nxt.startswith("Lines: "):
                n = int(nxt[7:])
                files[path] = "".join(x + "\n" for x in lines[i + 2:i + 2 + n])
                i += 2 + n
                continue
            if nxt.startswith("SymlinkTo: "):
                links[path] = nxt[11:]
        i += 1
    return files, links
