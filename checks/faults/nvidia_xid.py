"""``faults.nvidia_xid``: no GPU logged an Xid that calls for the rule's actions, at or over
its threshold, in its window (live).

Gathers the kernel log once per scan (:mod:`aiaudit.linux.kmsg.log`: ``/dev/kmsg`` read
without consuming it, or a ``--live`` snapshot's ``dev/kmsg``).  Decides per GPU with
NVIDIA's Xid catalogue (``checks/data/xid_catalogue.json``: each code's mnemonic and the
immediate action NVIDIA calls for): a code is judged when its action is in ``actions`` or
the code is in ``codes`` (and not in ``ignore_codes``); it fails at ``count`` events in
``window_s`` (``per_code`` overrides both for a code).  ``catalogue`` adds or overrides
codes.  One rule drains for the actions that need a GPU reset or a reboot (one Xid 79 is
enough); another reports application-level Xids (13, 31, 43...) only when they repeat.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from aiaudit.api import CheckContext, CheckSpec, Remediation, Result, hookimpl

FIX = Remediation(
    "Drain the node and follow the action NVIDIA's Xid catalogue names for the code "
    "(docs.nvidia.com/deploy/xid-errors): RESET_GPU: `nvidia-smi -r -i <gpu>` (or reboot) "
    "and check `nvidia-smi -q -d ECC,ROW_REMAPPER`; RESTART_BM: reboot; NVLink workflows: "
    "reset the GPU and check `nvidia-smi nvlink -s`; replace a GPU that keeps logging it.")

DRAIN_ACTIONS = ["RESET_GPU", "RESTART_BM", "RESTART_VM", "WORKFLOW_XID_48",
                 "WORKFLOW_NVLINK_ERR", "WORKFLOW_NVLINK5_ERR"]


def _limits(p: Mapping[str, Any]) -> Any:
    per = {str(int(k)): v for k, v in dict(p["per_code"]).items()}

    def limit(code: str) -> tuple[int, float]:
        o = per.get(code, {})
        return int(o.get("count", p["count"])), float(o.get("window_s", p["window_s"]))
    return limit


def run(ctx: CheckContext) -> Iterator[Result]:
    """Each GPU's Xids against the catalogue's actions and the rule's thresholds."""
    from aiaudit.linux.kmsg import judge

    klog = judge.gate(ctx)
    if isinstance(klog, Result):
        yield klog
        return
    from aiaudit.linux.kmsg import catalogue as cat

    p = ctx.params
    c = cat.extended(cat.shipped(), p["catalogue"])
    actions = set(p["actions"])
    codes = {str(int(x)) for x in p["codes"]}
    ignore = {str(int(x)) for x in p["ignore_codes"]}

    def label(code: str) -> str | None:
        e = c.entry(code)
        if code in ignore or (e.action not in actions and code not in codes):
            return None
        return f"Xid {code} ({e.action})"

    found, _seen = judge.hits(klog, "xid", label, _limits(p))

    def note(hits: list[Any]) -> str:
        """What each code is and what NVIDIA's catalogue says to do, with the source."""
        out = []
        for h in hits:
            e = c.entry(h.code)
            out.append(f"Xid {h.code} {e.mnemonic}: {e.meaning or c.actions.get(e.action, '')}"
                       f" [{e.origin}]")
        return "; ".join(out)

    names = "/".join(sorted(actions)) or "the listed codes"
    yield from judge.results(klog, found, what=f"Xid calling for {names}",
                             window=float(p["window_s"]), describe=lambda d: f"GPU {d}",
                             fix=FIX, extra={"catalogue": c.source, "catalogue_read": c.read},
                             note=note)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``faults.nvidia_xid``."""
    from aiaudit.linux.kmsg.judge import window_schema

    return [CheckSpec(
        id="faults.nvidia_xid", title="GPUs logged no Xid that calls for the rule's actions",
        run=run, modes=("live",),
        params_schema={"type": "object", "additionalProperties": False, "properties": {
            "actions": {"type": "array", "items": {"type": "string"},
                        "default": DRAIN_ACTIONS,
                        "description": "NVIDIA catalogue actions (Resolution Bucket, "
                                       "Immediate Action) whose Xids this rule judges"},
            "codes": {"type": "array", "items": {"type": "integer", "minimum": 0},
                      "default": [], "description": "Xid codes judged whatever their action"},
            "ignore_codes": {"type": "array", "items": {"type": "integer", "minimum": 0},
                             "default": [], "description": "Xid codes never judged"},
            **window_schema(1, 0, "Xid events of one code"),
            "per_code": {"type": "object", "default": {},
                         "propertyNames": {"pattern": "^[0-9]+$"},
                         "additionalProperties": {
                             "type": "object", "additionalProperties": False,
                             "properties": {"count": {"type": "integer", "minimum": 1,
                                                      "maximum": 256},
                                            "window_s": {"type": "number", "minimum": 0}}},
                         "description": "per-code count/window_s overriding the rule's"},
            "catalogue": {"type": "object", "default": {},
                          "propertyNames": {"pattern": "^[0-9]+$"},
                          "additionalProperties": {
                              "type": "object", "additionalProperties": False,
                              "properties": {"mnemonic": {"type": "string"},
                                             "action": {"type": "string"},
                                             "meaning": {"type": "string"}}},
                          "description": "codes added to or overriding NVIDIA's catalogue"}}},
        description="Live: NVRM Xid lines of /dev/kmsg (or a --live snapshot's dev/kmsg) per "
                    "GPU, judged by the action NVIDIA's Xid catalogue names for each code "
                    "(checks/data/xid_catalogue.json, from docs.nvidia.com/deploy/xid-errors "
                    "'Analyzing Xid Errors with the Xid Catalog') against count/window_s; "
                    "offline: not applicable (live state).")]
