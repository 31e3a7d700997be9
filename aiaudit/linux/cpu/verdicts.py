"""The result of a cpufreq rule (``cpu.governor``, ``cpu.epp``, ``cpu.boost``): the live
policies that are wrong and the boot setting, judged by :func:`aiaudit.core.verdict.verdict`;
offending CPUs as a compact list with the driver."""

from __future__ import annotations

from typing import Any

from aiaudit.core.model import Aspect, Evidence, Remediation, Result, Status
from aiaudit.core.records import record
from aiaudit.core.verdict import verdict
from aiaudit.linux import sysfs
from aiaudit.linux.cpu.cpufreq import CpufreqState
from aiaudit.linux.cpu.settings import BootSetting

SUBJECT = "cpufreq"


@record
class FreqVerdict:
    """The decision for one cpufreq rule."""

    status: Status
    aspect: Aspect
    message: str
    expected: str
    actual: str | None
    data: dict[str, Any]

    def result(self, evidence: list[Evidence], remediation: Remediation | None) -> Result:
        """The rule's result; ``remediation`` is kept only for a failure."""
        return Result(self.status, SUBJECT, self.message, expected=self.expected,
                      actual=self.actual, aspect=self.aspect, evidence=tuple(evidence),
                      remediation=remediation if self.status is Status.FAIL else None,
                      data=self.data)


def judge(*, live: bool, persist: bool, what: str, want: str, state: CpufreqState | None,
          bad: dict[str, list[int]] | None, runtime_txt: str, win: BootSetting | None,
          explicit: bool, boot_ok: bool | None) -> FreqVerdict:
    """Decide from the live policies (``bad``: wrong value -> CPUs, ``None`` offline) and the
    winning boot setting ``win`` (``boot_ok`` its judgement; ``explicit``: configuration,
    not a default, sets it).  Without ``persist`` a right live state is enough."""
    rt_ok = None if bad is None else not bad
    if live and not persist and rt_ok:
        boot_ok = True
    boot_txt = f"{win.value} ({win.source})" if win else "not set (kernel default unknown)"
    status, aspect, msg = verdict(live, rt_ok, boot_ok, boot_set=explicit, what=what,
                                  runtime_txt=runtime_txt, boot_txt=boot_txt, want=want)
    data: dict[str, Any] = {"boot": win.value if win else None}
    if state is not None:
        data["drivers"] = state.drivers
        if bad:
            data["offending_cpus"] = sysfs.format_cpulist(c for v in bad.values() for c in v)
    actual = runtime_txt if live else (win.value if win else None)
    return FreqVerdict(status, aspect, msg, want, actual, data)
