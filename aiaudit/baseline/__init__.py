"""``aiaudit baseline``: capture a node class as a ruleset.

:mod:`.ruleset` writes the class (one ``inventory.fact`` rule per fact, commented, that
``extends:`` a shipped ruleset) from one known-good node's facts; :mod:`.majority`
proposes the class of a fleet from the ``inventory.facts`` results in its saved reports
(the value most nodes have, when at least a given share has it) and names the nodes that
deviate.  Holding a node to its class is then a plain ``aiaudit scan --ruleset CLASS.yaml``.
"""
