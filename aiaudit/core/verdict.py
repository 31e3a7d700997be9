# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Runtime, persisted, drift: one place that turns "is it right now" and "will it be right
after a reboot" into a status, an aspect and a message."""

from __future__ import annotations

from aiaudit.core.model import Aspect, Status


def verdict(live: bool, runtime_ok: bool | None, boot_ok: bool | None, *, boot_set: bool,
            what: str, runtime_txt: str, boot_txt: str, want: str
            ) -> tuple[Status, Aspect, str]:
    """Status, aspect and message for one subject.

    ``runtime_ok`` is the live judgement (ignored offline); ``boot_ok`` the judgement of
    what the next boot will produce (``None`` = unknown: nothing sets it and the kernel
    default is unknown); ``boot_set`` says whether configuration (not a default) decides.
    """
    if not live:
        if boot_ok:
            return Status.PASS, Aspect.PERSISTED, f"{what} at boot: {boot_txt}"
        if boot_ok is None:
            return (Status.FAIL, Aspect.PERSISTED,
                    f"{what} at boot: {boot_txt}; nothing makes it {want}")
        return Status.FAIL, Aspect.PERSISTED, f"{what} at boot: {boot_txt}; expected {want}"
    if not runtime_ok:
        if boot_ok and boot_set:
            return (Status.FAIL, Aspect.DRIFT,
                    f"{what} is {runtime_txt} now, but the boot configuration ({boot_txt}) is "
                    "right: it was changed at runtime or not applied yet")
        if boot_ok:
            return (Status.FAIL, Aspect.RUNTIME,
                    f"{what} is {runtime_txt} now; at boot: {boot_txt}: something changed it "
                    "at runtime")
        if boot_set:
            return (Status.FAIL, Aspect.PERSISTED,
                    f"{what} is {runtime_txt} now and the configuration sets {boot_txt}; "
                    f"expected {want}")
        return (Status.FAIL, Aspect.RUNTIME,
                f"{what} is {runtime_txt}; expected {want}; at boot: {boot_txt}")
    if boot_ok is False:
        return (Status.FAIL, Aspect.DRIFT,
                f"{what} is {runtime_txt} now, but at boot: {boot_txt}: it reverts at reboot")
    if boot_ok is None:
        return (Status.PASS, Aspect.RUNTIME,
                f"{what} is {runtime_txt}; nothing persists it ({boot_txt}), so a reboot may "
                "change it")
    return Status.PASS, Aspect.RUNTIME, f"{what} is {runtime_txt}; at boot: {boot_txt}"
