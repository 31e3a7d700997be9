"""Rule titles follow one convention (README "Rulesets"): ``Ensure <what holds on a good
host>``, as CIS benchmarks and kube-bench write them, so that ``FAIL Ensure SSH password
authentication is disabled`` cannot be read as "being disabled is the problem"."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

RULESETS = sorted((Path(__file__).resolve().parent.parent / "rulesets").glob("*.yaml"))


@pytest.mark.parametrize("path", RULESETS, ids=[p.name for p in RULESETS])
def test_every_shipped_title_states_the_requirement(path: Path) -> None:
    doc = yaml.safe_load(path.read_text())
    bad = []
    for rule in doc.get("rules", []):
        title = rule.get("title", "")
        words = title.split()
        if (len(words) < 3 or words[0] != "Ensure" or title.endswith(".")
                or title != title.strip() or len(title) > 120):
            bad.append(f"{rule['id']}: {title!r}")
    assert not bad, "titles not of the form 'Ensure <requirement>' (no final period):\n" + \
        "\n".join(bad)
