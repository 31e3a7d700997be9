"""``kernel.sysctl``: persisted semantics against the real programs, and the check itself.

The oracle tests run systemd-sysctl and procps ``sysctl --system`` (see
:mod:`tests.checks.sysctl_oracle`) on named SEMANTICS §3.5 cases and on a seeded random
corpus, and compare what they leave in a fake ``/proc/sys`` with ``systemd_decide`` /
``procps_decide`` on the same files read through an offline :class:`Host`.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
from aiaudit.checks.legacy_sysctl import DROPIN, Resolved, dropin_path, resolved

from aiaudit.core.host import Host
from aiaudit.core.model import Aspect, Status
from aiaudit.linux.sysctl import conf as sp
from aiaudit.linux.sysctl.files import load_config
from tests.checks import sysctl_oracle as so
from tests.helpers import run_check

ORACLE_CASES = int(os.environ.get("AIAUDIT_ORACLE_CASES", "300"))
"""Size of the generated corpus (each case runs both programs)."""
ORACLE_SEED = int(os.environ.get("AIAUDIT_ORACLE_SEED", "20261129"))

# ------------------------------------------------------------------ named §3.5 cases
R = "net/ipv4/conf/all/rp_filter"
NAMED: dict[str, so.Case] = {
    "same-basename-etc-wins": so.Case("n-etc-wins", files={
        "/usr/lib/sysctl.d/50-b.conf": "vm.swappiness = 60\nvm.dirty_ratio = 30\n",
        "/etc/sysctl.d/50-b.conf": "vm.swappiness = 10\n"}),
    "dev-null-mask": so.Case("n-devnull", files={
        "/usr/lib/sysctl.d/50-b.conf": "vm.swappiness = 60\n"},
        links={"/etc/sysctl.d/50-b.conf": "/dev/null"}),
    "empty-file-mask": so.Case("n-empty", files={
        "/usr/lib/sysctl.d/50-b.conf": "vm.swappiness = 60\n", "/etc/sysctl.d/50-b.conf": ""}),
    "run-masks-usr-lib": so.Case("n-run", files={
        "/usr/lib/sysctl.d/50-b.conf": "vm.swappiness = 60\n",
        "/run/sysctl.d/50-b.conf": "vm.swappiness = 20\n",
        "/usr/local/lib/sysctl.d/50-b.conf": "vm.swappiness = 30\n"}),
    "99-sysctl-link-present": so.Case("n-link", files={
        "/etc/sysctl.conf": "vm.swappiness = 5\n",
        "/usr/lib/sysctl.d/99-zz.conf": "vm.swappiness = 7\n"},
        links={"/etc/sysctl.d/99-sysctl.conf": "../sysctl.conf"}),
    "99-sysctl-link-absent": so.Case("n-nolink", files={
        "/etc/sysctl.conf": "vm.swappiness = 5\n",
        "/usr/lib/sysctl.d/50-b.conf": "vm.swappiness = 7\n"}),
    "glob-vs-explicit-in-earlier-file": so.Case("n-glob", files={
        "/etc/sysctl.d/10-x.conf": "net.ipv4.conf.all.rp_filter = 0\n",
        "/usr/lib/sysctl.d/50-v.conf": "net.ipv4.conf.*.rp_filter = 2\n"}),
    "dash-key-exclusion": so.Case("n-excl", files={
        "/etc/sysctl.d/10-x.conf": "-net.ipv4.conf.all.rp_filter\n",
        "/usr/lib/sysctl.d/50-v.conf": "net.ipv4.conf.*.rp_filter = 2\n"}),
    "dash-glob-exclusion-stops-nothing": so.Case("n-excl-glob", files={
        "/etc/sysctl.d/10-x.conf": "-net.ipv4.conf.a*.rp_filter\n",
        "/usr/lib/sysctl.d/50-v.conf": "net.ipv4.conf.*.rp_filter = 2\n"}),
    "dash-key-ignore-failure": so.Case("n-ignore", files={
        "/etc/sysctl.d/10-x.conf": "-vm.swappiness = 3\n-net.ipv4.no_such_key = 1\n"}),
    "slash-key-dotted-interface": so.Case("n-slash", files={
        "/etc/sysctl.d/10-x.conf": "net.ipv4.conf.eth0/100.rp_filter = 1\n",
        "/etc/sysctl.d/20-y.conf": "net/ipv4/conf/eth0.100/rp_filter = 2\n"}),
    "semicolon-comment-and-no-equals": so.Case("n-comment", files={
        "/etc/sysctl.d/10-x.conf": "; vm.swappiness = 1\n# vm.swappiness = 2\nvm.swappiness\n"
                                   "vm.dirty_ratio 5\nvm.dirty_background_ratio = 4\n"}),
    "duplicate-key-later-basename-wins": so.Case("n-dup", files={
        "/etc/sysctl.d/90-late.conf": "vm.swappiness = 9\n",
        "/usr/lib/sysctl.d/10-early.conf": "vm.swappiness = 1\n"}),
    "value-with-spaces": so.Case("n-spaces", files={
        "/etc/sysctl.d/10-x.conf": "net.ipv4.ip_local_port_range =  32768   60999  \n"}),
    "sysctl-conf-last-in-procps-only": so.Case("n-last", files={
        "/etc/sysctl.conf": "vm.swappiness = 5\n",
        "/etc/sysctl.d/zz-last.conf": "vm.swappiness = 50\n"},
        links={"/etc/sysctl.d/99-sysctl.conf": "../sysctl.conf"}),
    "dotfile-read-by-procps-only": so.Case("n-dot", files={
        "/etc/sysctl.d/.hidden.conf": "vm.swappiness = 11\n"}),
    "directory-named-conf-hides-vendor": so.Case("n-dir", files={
        "/usr/lib/sysctl.d/50-b.conf": "vm.swappiness = 7\n"},
        dirs=["/etc/sysctl.d/50-b.conf"]),
    "overlapping-globs-reassigned-moves-last": so.Case("n-glob-move", files={
        "/etc/sysctl.d/10-x.conf": "net.ipv4.conf.*.rp_filter = 1\n"
                                   "net.ipv4.conf.a*.rp_filter = 2\n",
        "/etc/sysctl.d/20-y.conf": "net.ipv4.conf.*.rp_filter = 3\n"}),
    "overlapping-globs-same-value-keeps-place": so.Case("n-glob-keep", files={
        "/etc/sysctl.d/10-x.conf": "net.ipv4.conf.*.rp_filter = 1\n"
                                   "net.ipv4.conf.a*.rp_filter = 2\n",
        "/etc/sysctl.d/20-y.conf": "net.ipv4.conf.*.rp_filter = 1\n"}),
}

# expected (systemd, procps) values for the key that each named case is about
NAMED_EXPECT: dict[str, tuple[str, tuple[str | None, str | None]]] = {
    "same-basename-etc-wins": ("vm/swappiness", ("10", "10")),
    "dev-null-mask": ("vm/swappiness", (None, None)),
    "empty-file-mask": ("vm/swappiness", (None, None)),
    "run-masks-usr-lib": ("vm/swappiness", ("20", "20")),
    "99-sysctl-link-present": ("vm/swappiness", ("7", "5")),
    "99-sysctl-link-absent": ("vm/swappiness", ("7", "5")),
    "glob-vs-explicit-in-earlier-file": (R, ("0", "0")),
    "dash-key-exclusion": (R, (None, None)),
    # systemd 252 and procps 4.0.2 compare exclusions with the exact key only
    # (procps >= 4.0.5 matches them with fnmatch; see procps_decide)
    "dash-glob-exclusion-stops-nothing": (R, ("2", "2")),
    "dash-key-ignore-failure": ("vm/swappiness", ("3", "3")),
    "slash-key-dotted-interface": ("net/ipv4/conf/eth0.100/rp_filter", ("2", "2")),
    "semicolon-comment-and-no-equals": ("vm/swappiness", (None, None)),
    "duplicate-key-later-basename-wins": ("vm/swappiness", ("9", "9")),
    "value-with-spaces": ("net/ipv4/ip_local_port_range", ("32768   60999", "32768   60999")),
    "sysctl-conf-last-in-procps-only": ("vm/swappiness", ("50", "5")),
    "dotfile-read-by-procps-only": ("vm/swappiness", (None, "11")),
    # both programs fail to read the directory, and it still hides the vendor file
    "directory-named-conf-hides-vendor": ("vm/swappiness", (None, None)),
    # systemd: a re-assigned glob moves to the end of the ordered map; procps: last line
    "overlapping-globs-reassigned-moves-last": (R, ("3", "3")),
    # systemd keeps an identical re-assignment in its first place; procps: last line
    "overlapping-globs-same-value-keeps-place": (R, ("2", "1")),
}


def _ours(root: Path) -> dict[str, dict[str, str | None]]:
    """What the check decides (through the run's shared :class:`Resolved` index)."""
    res = Resolved(load_config(Host(str(root), live=False)))
    return {
        "systemd": {k: res.systemd_decide(k).value for k in so.KEYS},
        "procps": {k: res.procps_decide(k).value for k in so.KEYS},
    }


EXTRA_KEYS = ("net/ipv4/conf/lo/rp_filter", "net/../vm/swappiness", "vm/../vm/dirty_ratio",
              "kernel/unset_anywhere")
"""Keys beyond the fake /proc/sys: one no line sets, and non-normal ones (``..``) for
which procps compares unnormalised paths (the index then falls back to every entry)."""


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_shared_index_decides_as_the_deciders_on_all_entries(tmp_path: Path, seed: int) -> None:
    """The per-run index gives the very same Decision (value, deciding line, exclusion,
    overridden lines) as the oracle-tested deciders run on every entry, and the same
    drop-in name: on the generated corpus, without the real programs."""
    cases = list(NAMED.values()) + so.generate(seed * 7919, 60)
    for case in cases:
        root = so.materialise(case, tmp_path / str(seed), "2:4.0.2-3") / "root"
        cfg = load_config(Host(str(root), live=False))
        res = Resolved(cfg)
        for k in (*so.KEYS, *EXTRA_KEYS):
            assert res.systemd_decide(k) == sp.systemd_decide(cfg.entries, k), case.listing()
            for globs, gx in ((True, True), (True, False), (False, False)):
                r = Resolved(replace(cfg, procps_globs=globs, procps_glob_exclude=gx))
                assert r.procps_decide(k) == sp.procps_decide(
                    cfg.procps_entries, k, globs=globs, glob_exclude=gx), case.listing()
            assert dropin_path(res, k) == dropin_path(cfg, k)
            assert res.tuned_reapplied(k) == [
                e for e in cfg.tuned_reapply_entries
                if not e.is_glob and e.key == k and e.value is not None]


def test_shared_index_is_built_once_per_run(make_root) -> None:
    root = make_root({"/etc/sysctl.d/10.conf": "vm.swappiness = 5\n"})
    host = Host(str(root), live=False)
    assert resolved(host) is resolved(host)
    assert resolved(host).cfg is load_config_memo(host)


def load_config_memo(host: Host):
    """The SysctlConfig the check memoises for ``host``."""
    return host.memo(("sysctl-config",), lambda: load_config(host))


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory):
    """Run both programs once on every named and generated case; return
    ``{case name: (case, case dir)}``."""
    why = so.available()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"sysctl oracle cannot run in CI: {why}")
        pytest.skip(f"sysctl oracle: {why}")
    work = tmp_path_factory.mktemp("sysctl-oracle")
    version = so.procps_version()
    cases = list(NAMED.values()) + so.generate(ORACLE_SEED, ORACLE_CASES)
    dirs = [so.materialise(c, work, version) for c in cases]
    so.run_all(dirs, work)
    return {c.name: (c, d) for c, d in zip(cases, dirs, strict=True)}


@pytest.mark.oracle
@pytest.mark.parametrize("name", list(NAMED))
def test_named_case_matches_real_programs(oracle, name: str) -> None:
    case, d = oracle[NAMED[name].name]
    key, (want_systemd, want_procps) = NAMED_EXPECT[name]
    real = {prog: so.written(d, prog) for prog in so.PROGRAMS}
    ours = _ours(d / "root")
    # the documented expectation and the real programs agree ...
    assert (real["systemd"][key], real["procps"][key]) == (want_systemd, want_procps), \
        case.listing()
    # ... and so do we, on every key of the fake /proc/sys
    assert ours == real, case.listing()


@pytest.mark.oracle
def test_generated_corpus_matches_real_programs(oracle) -> None:
    problems = []
    for name, (case, d) in oracle.items():
        if not name.startswith("g"):
            continue
        ours = _ours(d / "root")
        for prog in so.PROGRAMS:
            real = so.written(d, prog)
            for key in so.KEYS:
                if ours[prog][key] != real[key]:
                    problems.append(f"{prog} {key}: ours {ours[prog][key]!r}, real "
                                    f"{real[key]!r}\n{case.listing()}\n"
                                    f"{(d / f'{prog}.log').read_text()}")
    assert not problems, f"{len(problems)} disagreements; first:\n" + "\n".join(problems[:3])


@pytest.mark.oracle
def test_corpus_exercises_the_edge_cases(oracle) -> None:
    """The generated corpus really contains what it claims to cover."""
    text = "\n".join(t for c, _ in oracle.values() for t in c.files.values())
    links = [t for c, _ in oracle.values() for t in c.links.values()]
    assert ORACLE_CASES >= 100 or os.environ.get("AIAUDIT_ORACLE_CASES")
    for needle in ("*", "-net", "eth0/100", "; ", "not an assignment", "  ", "\r\n",
                   "/net/ipv4", "[^a]"):
        assert needle in text, needle
    assert "/dev/null" in links and "../sysctl.conf" in links
    written = sum(v is not None for _, d in oracle.values()
                  for p in so.PROGRAMS for v in so.written(d, p).values())
    assert written > ORACLE_CASES  # the programs really wrote values


# ------------------------------------------------------------------ decide functions
def test_systemd_glob_does_not_cross_slash() -> None:
    entries, _ = sp.parse("net.*.rp_filter = 1\n", "/etc/sysctl.d/a.conf")
    assert sp.systemd_decide(entries, R).value is None
    entries, _ = sp.parse("net.*.*.*.rp_filter = 1\n", "/etc/sysctl.d/a.conf")
    assert sp.systemd_decide(entries, R).value == "1"


def test_systemd_overlapping_globs_later_in_map_wins() -> None:
    text = "net.ipv4.conf.*.rp_filter = 1\nnet.ipv4.conf.a*.rp_filter = 2\n" \
           "net.ipv4.conf.*.rp_filter = 3\n"
    entries, _ = sp.parse(text, "/etc/sysctl.d/a.conf")
    # the re-assigned glob moves to the end of the ordered map
    assert sp.systemd_decide(entries, R).value == "3"
    text = "net.ipv4.conf.*.rp_filter = 1\nnet.ipv4.conf.a*.rp_filter = 2\n" \
           "net.ipv4.conf.*.rp_filter = 1\n"
    entries, _ = sp.parse(text, "/etc/sysctl.d/a.conf")
    # same value: systemd keeps the first position
    assert sp.systemd_decide(entries, R).value == "2"


def test_procps_keeps_leading_slash_identity() -> None:
    entries = sp.parse_procps("/vm/swappiness = 1\nvm.* = 2\n", "/etc/sysctl.d/a.conf")
    assert sp.procps_decide(entries, "vm/swappiness").value == "2"
    entries = sp.parse_procps("vm.swappiness = 1\nvm.* = 2\n", "/etc/sysctl.d/a.conf")
    assert sp.procps_decide(entries, "vm/swappiness").value == "1"


def test_procps_glob_exclusion_depends_on_version() -> None:
    entries = sp.parse_procps("-net.ipv4.conf.a*.rp_filter\nnet.ipv4.conf.*.rp_filter = 2\n",
                              "/etc/sysctl.d/a.conf")
    assert sp.procps_decide(entries, R, glob_exclude=True).value is None
    assert sp.procps_decide(entries, R, glob_exclude=False).value == "2"
    assert sp.procps_decide(entries, R, globs=False).value is None


# ------------------------------------------------------------------ the check
SWAP = {"key": "vm.swappiness", "op": "le", "value": 10, "kernel_default": 60}


def _one(results):
    assert len(results) == 1, results
    return results[0]


def test_offline_pass_names_deciding_line(make_root) -> None:
    root = make_root({"/usr/lib/sysctl.d/50-v.conf": "vm.swappiness = 60\n",
                      "/etc/sysctl.d/60-x.conf": "# tuned\nvm.swappiness = 5\n"})
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert (r.status, r.aspect, r.actual) == (Status.PASS, Aspect.PERSISTED, "5")
    assert [e.source for e in r.evidence] == ["etc/sysctl.d/60-x.conf:2"]
    assert r.remediation is None


def test_offline_fail_has_remediation(make_root) -> None:
    root = make_root({"/usr/lib/sysctl.d/50-v.conf": "vm.swappiness = 60\n"})
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.PERSISTED)
    assert "usr/lib/sysctl.d/50-v.conf:1" in r.remediation.summary
    snip = r.remediation.snippets[0]
    assert (snip.kind, snip.path, snip.content) == ("file", DROPIN, "vm.swappiness = 10\n")
    assert all(s.kind != "command" for s in r.remediation.snippets)  # offline: no sysctl -w


def test_offline_kernel_default_decides(make_root) -> None:
    root = make_root(dirs=("/etc/sysctl.d",))
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert r.status is Status.FAIL and "kernel default 60" in r.message
    assert r.evidence[0].kind == "default"
    r = _one(run_check("kernel.sysctl", root, {**SWAP, "kernel_default": 1}))
    assert r.status is Status.PASS


SYSTEMD_ROOT = {"/usr/lib/systemd/systemd": ""}
"""Files that make a fixture root one where systemd is the init system."""

KPTR = {"key": "kernel.kptr_restrict", "op": "ge", "value": 1}
"""A rule without ``kernel_default`` for a key whose default aiaudit does not derive."""


@pytest.mark.parametrize("files,looked", [
    pytest.param(SYSTEMD_ROOT, "etc/sysctl.d, run/sysctl.d, usr/local/lib/sysctl.d or "
                 "usr/lib/sysctl.d", id="systemd-sysctl"),
    pytest.param({}, "etc/sysctl.d, run/sysctl.d, usr/local/lib/sysctl.d, usr/lib/sysctl.d, "
                 "lib/sysctl.d or etc/sysctl.conf", id="procps"),
])
def test_offline_nothing_sets_key_names_what_was_looked_for(make_root, files, looked) -> None:
    """Nothing sets the key and its default is unknown: the failure says where the boot
    applier looked (its own directories) and why the default is unknown, as a default
    evidence (no file to point at)."""
    root = make_root({"/etc/sysctl.d/10-x.conf": "vm.swappiness = 5\n", **files})
    r = _one(run_check("kernel.sysctl", root, KPTR))
    assert r.status is Status.FAIL
    assert r.message == ("kernel.kptr_restrict at boot: not set (kernel default unknown); "
                         "expected >= 1")
    [ev] = r.evidence
    assert ev.kind == "default" and ev.path is None
    assert ev.source == f"kernel.kptr_restrict: no line in {looked}"
    assert ev.value == ("kernel default unknown: aiaudit derives none for kernel.kptr_restrict "
                        "and the rule sets no kernel_default")


def test_offline_derived_default_without_kernel_config(make_root) -> None:
    """kernel.dmesg_restrict's default comes from the kernel config: without one the
    evidence says which files were missing; with one, that file and line decide."""
    dmesg = {"key": "kernel.dmesg_restrict", "op": "eq", "value": 1}
    root = make_root(SYSTEMD_ROOT, dirs=("/etc/sysctl.d", "/boot"))
    r = _one(run_check("kernel.sysctl", root, dmesg))
    assert r.status is Status.FAIL
    [ev] = r.evidence
    assert (ev.kind, ev.value) == ("default", "kernel default unknown: no boot/config-*")
    assert ev.source.startswith("kernel.dmesg_restrict: no line in etc/sysctl.d, ")
    (root / "boot/config-6.1.0").write_text("CONFIG_X=y\n# CONFIG_SECURITY_DMESG_RESTRICT "
                                           "is not set\n")
    r = _one(run_check("kernel.sysctl", root, dmesg))
    assert r.status is Status.FAIL and "kernel default 0" in r.message
    assert [(e.kind, e.source) for e in r.evidence] == [("file", "boot/config-6.1.0:2")]


def test_offline_tuned_and_ufw_are_named_where_they_run(make_root) -> None:
    """An enabled ufw's sysctl file and an active tuned profile were consulted too."""
    root = make_root({**SYSTEMD_ROOT,
                      "/etc/ufw/ufw.conf": "ENABLED=yes\n",
                      "/etc/default/ufw": "IPT_SYSCTL=/etc/ufw/sysctl.conf\n",
                      "/etc/ufw/sysctl.conf": "net.ipv4.ip_forward=0\n",
                      "/usr/lib/systemd/system/ufw.service": "[Unit]\n",
                      "/etc/tuned/active_profile": "throughput-performance\n",
                      "/usr/lib/tuned/throughput-performance/tuned.conf":
                          "[sysctl]\nvm.swappiness=10\n",
                      "/usr/lib/systemd/system/tuned.service": "[Unit]\n"},
                     links={"/etc/systemd/system/multi-user.target.wants/ufw.service":
                            "/usr/lib/systemd/system/ufw.service",
                            "/etc/systemd/system/multi-user.target.wants/tuned.service":
                            "/usr/lib/systemd/system/tuned.service"})
    r = _one(run_check("kernel.sysctl", root, KPTR))
    assert r.status is Status.FAIL
    assert r.evidence[-1].source.endswith(
        "usr/lib/sysctl.d, etc/ufw/sysctl.conf (ufw) or the [sysctl] of tuned profile "
        "throughput-performance")


def test_offline_broken_file_is_the_evidence_of_the_error(make_root) -> None:
    """An unreadable sysctl.d file makes the value unknown: that file (which exists) is the
    evidence, with the problem, and no 'nothing sets it' default is claimed."""
    root = make_root({**SYSTEMD_ROOT, "/etc/sysctl.d/50-broken.conf": b"kernel.x = 1\n\x00"})
    r = _one(run_check("kernel.sysctl", root, KPTR))
    assert r.status is Status.ERROR and "50-broken.conf" in r.message
    assert [(e.kind, e.path, e.line) for e in r.evidence] == [
        ("file", "/etc/sysctl.d/50-broken.conf", None)]
    assert "binary content" in (r.evidence[0].value or "")
    assert not r.evidence[0].value.startswith("/etc")  # the path is the source, not the value
    live = make_root({**SYSTEMD_ROOT, "/etc/sysctl.d/50-broken.conf": b"\x00",
                      "/proc/sys/kernel/kptr_restrict": "0\n"})
    r = _one(run_check("kernel.sysctl", live, KPTR, live=True))
    assert r.status is Status.FAIL and "cannot be determined" in r.message
    assert [e.source for e in r.evidence] == ["/proc/sys/kernel/kptr_restrict",
                                              "etc/sysctl.d/50-broken.conf"]


def test_offline_procps_difference_is_noted(make_root) -> None:
    root = make_root({"/etc/sysctl.conf": "vm.swappiness = 80\n",
                      "/etc/sysctl.d/10-x.conf": "vm.swappiness = 5\n", **SYSTEMD_ROOT})
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert r.status is Status.PASS  # systemd-sysctl decides at boot: no link, no sysctl.conf
    assert "sysctl --system" in r.message and "etc/sysctl.conf:1" in r.message
    assert r.data["procps"] == {"value": "80", "source": "etc/sysctl.conf:1"}


def _live(make_root, runtime: str | None, files: dict[str, str]):
    proc = {} if runtime is None else {"/proc/sys/vm/swappiness": runtime + "\n"}
    return make_root({**proc, **files}, dirs=("/proc/sys/vm",))


@pytest.mark.parametrize("runtime,files,status,aspect", [
    ("5", {"/etc/sysctl.d/10.conf": "vm.swappiness=5\n"}, Status.PASS, Aspect.RUNTIME),
    ("60", {"/etc/sysctl.d/10.conf": "vm.swappiness=60\n"}, Status.FAIL, Aspect.PERSISTED),
    # right now, but reverts at reboot
    ("5", {"/etc/sysctl.d/10.conf": "vm.swappiness=60\n"}, Status.FAIL, Aspect.DRIFT),
    ("5", {}, Status.FAIL, Aspect.DRIFT),  # nothing persists it; kernel default 60
    # configured right, but not applied
    ("60", {"/etc/sysctl.d/10.conf": "vm.swappiness=5\n"}, Status.FAIL, Aspect.DRIFT),
    ("60", {}, Status.FAIL, Aspect.RUNTIME),
])
def test_live_runtime_persisted_drift(make_root, runtime, files, status, aspect) -> None:
    r = _one(run_check("kernel.sysctl", _live(make_root, runtime, files), SWAP, live=True))
    assert (r.status, r.aspect) == (status, aspect), r.message
    assert r.evidence[0].source == "/proc/sys/vm/swappiness"
    if status is Status.FAIL:
        kinds = [s.kind for s in r.remediation.snippets]
        assert kinds == ["file", "command"]
        assert r.remediation.snippets[1].content == "sysctl -w vm.swappiness='10'"


def test_live_persist_false_ignores_boot_value(make_root) -> None:
    root = _live(make_root, "5", {"/etc/sysctl.d/10.conf": "vm.swappiness=60\n"})
    r = _one(run_check("kernel.sysctl", root, {**SWAP, "persist": False}, live=True))
    assert (r.status, r.aspect) == (Status.PASS, Aspect.RUNTIME)


@pytest.mark.parametrize("missing", ["skip", "fail", "pass"])
def test_live_missing_key(make_root, missing) -> None:
    root = _live(make_root, None, {})
    r = _one(run_check("kernel.sysctl", root, {**SWAP, "missing": missing}, live=True))
    assert r.status.value == missing and "does not exist" in r.message


def test_tab_separated_runtime_and_fields(make_root) -> None:
    root = make_root({"/proc/sys/net/ipv4/tcp_rmem": "4096\t131072\t6291456\n",
                      "/etc/sysctl.d/10.conf": "net.ipv4.tcp_rmem = 4096 131072 6291456\n"})
    params = {"key": "net.ipv4.tcp_rmem",
              "fields": [None, {"op": "ge", "value": 87380}, {"op": "ge", "value": 67108864}]}
    r = _one(run_check("kernel.sysctl", root, params, live=True))
    assert r.status is Status.FAIL and r.actual == "4096 131072 6291456"
    assert r.remediation.snippets[0].content == "net.ipv4.tcp_rmem = 4096 131072 67108864\n"


@pytest.mark.parametrize("bad", [
    pytest.param(b"vm.swappiness = 5\n\x00\x01binary", id="binary"),
    pytest.param(b"# big\n" + b"x" * (4 * 1024 * 1024 + 1), id="oversized"),
])
def test_broken_file_gives_error_for_persisted_side_only(make_root, bad) -> None:
    files: dict[str, str | bytes] = {"/proc/sys/vm/swappiness": "5\n",
                                     "/etc/sysctl.d/10.conf": "vm.swappiness = 5\n",
                                     "/etc/sysctl.d/50-broken.conf": bad}
    root = make_root(files)
    live = _one(run_check("kernel.sysctl", root, SWAP, live=True))
    assert (live.status, live.aspect) == (Status.ERROR, Aspect.PERSISTED), live.message
    assert "50-broken.conf" in live.message and live.actual == "5"
    offline = _one(run_check("kernel.sysctl", root, SWAP))
    assert offline.status is Status.ERROR
    # runtime-only rules still pass
    ok = _one(run_check("kernel.sysctl", root, {**SWAP, "persist": False}, live=True))
    assert ok.status is Status.PASS


def test_symlink_loop_is_skipped_as_systemd_does(make_root) -> None:
    """systemd-sysctl cannot open a looping link either (ELOOP): it logs and goes on with
    the other files, so the boot value is still known."""
    root = make_root({"/proc/sys/vm/swappiness": "5\n",
                      "/etc/sysctl.d/10.conf": "vm.swappiness = 5\n"})
    os.symlink("50-loop.conf", root / "etc/sysctl.d/50-loop.conf")
    r = _one(run_check("kernel.sysctl", root, SWAP, live=True))
    assert (r.status, r.actual) == (Status.PASS, "5"), r.message
    assert any("50-loop.conf" in n for n in load_config(Host(str(root))).notes)


@pytest.mark.parametrize("path", ["/etc/sysctl.conf", "/etc/sysctl.d/.hidden.conf"])
def test_broken_file_only_procps_reads_is_not_an_error(make_root, path: str) -> None:
    root = make_root({"/etc/sysctl.d/10.conf": "vm.swappiness = 5\n", path: b"\x00"})
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert (r.status, r.actual) == (Status.PASS, "5"), r.message
    cfg = load_config(Host(str(root)))
    assert not cfg.problems and any("only `sysctl --system`" in n for n in cfg.notes)
    # through the 99-sysctl.conf link systemd reads it too: then it is an error
    if path == "/etc/sysctl.conf":
        os.symlink("../sysctl.conf", root / "etc/sysctl.d/99-sysctl.conf")
        assert _one(run_check("kernel.sysctl", root, SWAP)).status is Status.ERROR


def test_fifo_in_sysctl_d_is_ignored_like_systemd(make_root) -> None:
    root = make_root({"/etc/sysctl.d/10.conf": "vm.swappiness = 5\n"})
    os.mkfifo(root / "etc/sysctl.d/20-fifo.conf")
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert r.status is Status.PASS


def test_config_parsed_once_per_run(make_root) -> None:
    from aiaudit.api import CheckContext
    from aiaudit.core.plugins import registry

    root = make_root({"/etc/sysctl.d/10.conf": "vm.swappiness = 5\nvm.dirty_ratio = 5\n"})
    host = Host(str(root), live=False)
    spec = registry().checks["kernel.sysctl"]
    for key in ("vm.swappiness", "vm.dirty_ratio", "vm.swappiness"):
        list(spec.run(CheckContext(host, {"key": key, "op": "le", "value": 10})))
    assert host.reads == 1


def test_live_scan_of_this_machine_reads_proc_sys() -> None:
    """The real host: the runtime value reported is the one in /proc/sys right now, and
    the persisted value is what the oracle-tested decider gives for the real files."""
    path = Path("/proc/sys/vm/swappiness")
    if not path.exists():
        pytest.skip("no /proc/sys/vm/swappiness here")
    r = _one(run_check("kernel.sysctl", "/", SWAP, live=True))
    assert r.data["runtime"] == path.read_text().strip()
    assert r.evidence[0].source == "/proc/sys/vm/swappiness"
    if int(r.data["runtime"]) > 10:
        assert r.status is Status.FAIL and r.aspect in (Aspect.RUNTIME, Aspect.PERSISTED,
                                                        Aspect.DRIFT)
    dec = sp.systemd_decide(load_config(Host("/")).entries, "vm/swappiness")
    assert r.data.get("persisted", {}).get("value") == dec.value


# ------------------------------------------------------------------ the boot applier
def test_root_without_systemd_is_decided_by_procps(make_root) -> None:
    """No systemd on the root: procps' init script runs `sysctl --system`, which reads
    /etc/sysctl.conf last (no 99-sysctl.conf link needed); the fix must edit that file."""
    files = {"/etc/sysctl.conf": "vm.swappiness = 80\n",
             "/etc/sysctl.d/10-x.conf": "vm.swappiness = 5\n", "/etc/init.d/procps": ""}
    r = _one(run_check("kernel.sysctl", make_root(files), SWAP))
    assert (r.status, r.actual) == (Status.FAIL, "80"), r.message
    assert "etc/sysctl.conf:1" in r.message and "no systemd on this root" in r.message
    assert "Note:" not in r.message
    assert r.data["applier"]["program"] == "procps"
    assert r.remediation.summary.startswith("Change etc/sysctl.conf:1")
    # the same files with systemd as init: systemd-sysctl never reads sysctl.conf
    r = _one(run_check("kernel.sysctl", make_root(
        {**files, "/lib/systemd/systemd": ""}, links={"/sbin/init": "/lib/systemd/systemd"}),
        SWAP))
    assert (r.status, r.actual) == (Status.PASS, "5"), r.message


def test_sbin_init_decides_applier(make_root) -> None:
    from aiaudit.linux.sysctl import boot as sysctl_boot

    sysv = make_root({"/sbin/init": "", "/usr/lib/systemd/systemd": ""})
    assert sysctl_boot.applier(Host(str(sysv), live=False)).name == "procps"
    sd = make_root({"/lib/systemd/systemd": ""}, links={"/sbin/init": "/lib/systemd/systemd"})
    assert sysctl_boot.applier(Host(str(sd), live=False)).name == "systemd-sysctl"


def test_procps_empty_value_is_noted(make_root) -> None:
    """procps sets an empty value, systemd sets nothing: the note must still say so."""
    root = make_root({"/etc/sysctl.conf": "vm.swappiness =\n", **SYSTEMD_ROOT},
                     dirs=("/etc/sysctl.d",))
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert "would leave '' (from etc/sysctl.conf:1)" in r.message, r.message
    assert r.data["procps"] == {"value": "", "source": "etc/sysctl.conf:1"}


UFW = {"/etc/ufw/ufw.conf": "ENABLED=yes\n",
       "/etc/default/ufw": "IPT_SYSCTL=/etc/ufw/sysctl.conf\n",
       "/etc/ufw/sysctl.conf": "#net/ipv4/ip_forward=1\nvm/swappiness=30\n",
       "/etc/systemd/system/multi-user.target.wants/ufw.service": "",
       "/etc/sysctl.d/10-x.conf": "vm.swappiness = 5\n", **SYSTEMD_ROOT}


def test_enabled_ufw_reapplies_its_sysctl_file(make_root) -> None:
    r = _one(run_check("kernel.sysctl", make_root(UFW), SWAP))
    assert (r.status, r.actual) == (Status.FAIL, "30"), r.message
    assert "etc/ufw/sysctl.conf:2 when ufw starts" in r.message
    assert "etc/ufw/sysctl.conf:2" in [e.source for e in r.evidence]
    assert r.remediation.summary.startswith("Change etc/ufw/sysctl.conf:2")
    # ENABLED=no: ufw-init exits before loading anything
    r = _one(run_check("kernel.sysctl", make_root({**UFW, "/etc/ufw/ufw.conf": "ENABLED=no\n"}),
                       SWAP))
    assert (r.status, r.actual) == (Status.PASS, "5"), r.message
    # not enabled in systemd: nothing starts ufw-init
    files = {k: v for k, v in UFW.items() if "wants" not in k}
    r = _one(run_check("kernel.sysctl", make_root(files), SWAP))
    assert (r.status, r.actual) == (Status.PASS, "5"), r.message


def test_ufw_sysctl_p_matches_real_procps(tmp_path: Path) -> None:
    """ufw-init runs `sysctl -e -q -p $IPT_SYSCTL`: the value procps_decide gives for the
    file is what the real sysctl writes (fake /proc/sys in a private mount namespace)."""
    reason = so.available()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    import subprocess

    text = ("vm/swappiness=30\nvm.dirty_ratio = 7\n-vm.dirty_background_ratio = 3\n"
            "net.ipv4.conf.*.rp_filter = 2\nnet.ipv4.conf.eth0.rp_filter = 0\n"
            "vm.swappiness = 31\n")
    conf = tmp_path / "sysctl.conf"
    conf.write_text(text)
    proc = tmp_path / "proc"
    for key in so.KEYS:
        (proc / key).parent.mkdir(parents=True, exist_ok=True)
        (proc / key).write_bytes(so.UNSET + b"\n")
    subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                    f"mount --bind {proc} /proc/sys && sysctl -e -q -p {conf}"],
                   check=False, capture_output=True, timeout=60)
    entries = sp.parse_procps(text, str(conf))
    for key in so.KEYS:
        first = (proc / key).read_bytes().split(b"\n", 1)[0]
        real = None if first == so.UNSET else first.decode()
        assert sp.procps_decide(entries, key).value == real, key


# ------------------------------------------------------------------ kernel build config
NUMA = {"key": "kernel.numa_balancing", "op": "eq", "value": 0, "kernel_default": 1}


@pytest.mark.parametrize("line,status,default", [
    ("# CONFIG_NUMA_BALANCING_DEFAULT_ENABLED is not set", Status.PASS, "0"),
    ("CONFIG_NUMA_BALANCING_DEFAULT_ENABLED=y", Status.FAIL, "1"),
])
def test_numa_balancing_default_from_boot_config(make_root, line, status, default) -> None:
    root = make_root({"/boot/config-6.1.0-28-amd64": f"CONFIG_NUMA_BALANCING=y\n{line}\n",
                      **SYSTEMD_ROOT}, dirs=("/etc/sysctl.d",))
    r = _one(run_check("kernel.sysctl", root, NUMA))
    assert r.status is status, r.message
    assert f"kernel default {default}" in r.message
    assert r.evidence[0].source == "boot/config-6.1.0-28-amd64:2"


def test_numa_balancing_cmdline_beats_config(make_root) -> None:
    root = make_root({"/boot/config-6.1.0-28-amd64": "CONFIG_NUMA_BALANCING_DEFAULT_ENABLED=y\n",
                      "/etc/kernel/cmdline": "root=/dev/sda1 numa_balancing=disable\n",
                      **SYSTEMD_ROOT}, dirs=("/etc/sysctl.d",))
    r = _one(run_check("kernel.sysctl", root, NUMA))
    assert r.status is Status.PASS and "numa_balancing=disable" in r.message, r.message


def test_numa_balancing_live_single_node_and_config_gz(make_root) -> None:
    """Live: /proc/config.gz is the running kernel's config; with the default enabled the
    kernel still leaves balancing off on a machine with one NUMA node."""
    import gzip

    cfg = gzip.compress(b"CONFIG_NUMA_BALANCING=y\nCONFIG_NUMA_BALANCING_DEFAULT_ENABLED=y\n")
    base = {"/proc/sys/kernel/numa_balancing": "0\n", "/proc/config.gz": cfg, **SYSTEMD_ROOT}
    r = _one(run_check("kernel.sysctl", make_root(
        {**base, "/sys/devices/system/node/online": "0\n"}, dirs=("/etc/sysctl.d",)),
        NUMA, live=True))
    assert r.status is Status.PASS and "only 1 NUMA node" in r.message, r.message
    r = _one(run_check("kernel.sysctl", make_root(
        {**base, "/sys/devices/system/node/online": "0-1\n"}, dirs=("/etc/sysctl.d",)),
        NUMA, live=True))
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.DRIFT), r.message
    assert "proc/config.gz:2" in r.message


def test_dmesg_restrict_default_from_config(make_root) -> None:
    rule = {"key": "kernel.dmesg_restrict", "op": "eq", "value": 1}
    root = make_root({"/boot/config-6.1.0-28-amd64": "CONFIG_SECURITY_DMESG_RESTRICT=y\n",
                      **SYSTEMD_ROOT}, dirs=("/etc/sysctl.d",))
    r = _one(run_check("kernel.sysctl", root, rule))
    assert r.status is Status.PASS and "CONFIG_SECURITY_DMESG_RESTRICT=y" in r.message


def test_numa_balancing_on_this_kernel() -> None:
    """The running kernel: what its own config says is what the check takes as default."""
    if not os.path.exists("/proc/config.gz") or not os.path.exists(
            "/proc/sys/kernel/numa_balancing"):
        pytest.skip("kernel without /proc/config.gz or NUMA balancing")
    import gzip

    text = gzip.decompress(open("/proc/config.gz", "rb").read()).decode()
    from aiaudit.linux.sysctl import boot as sysctl_boot

    kd = sysctl_boot.kernel_default(Host("/", live=True), "kernel/numa_balancing")
    assert kd is not None
    if "CONFIG_NUMA_BALANCING_DEFAULT_ENABLED=y" not in text:
        assert kd.value == "0"


def test_offline_config_of_the_kernel_grub_will_boot(make_root) -> None:
    """Two kernels in /boot: the config of the one grub.cfg starts decides, not the newest."""
    grub = ("menuentry 'Debian' {\n\tlinux /boot/vmlinuz-6.1.0-28-amd64 root=/dev/sda1 ro\n}\n"
            "menuentry 'Debian, 6.12' {\n\tlinux /boot/vmlinuz-6.12.9-amd64 root=/dev/sda1\n}\n")
    root = make_root({
        "/boot/grub/grub.cfg": grub,
        "/boot/config-6.1.0-28-amd64": "# CONFIG_NUMA_BALANCING_DEFAULT_ENABLED is not set\n",
        "/boot/config-6.12.9-amd64": "CONFIG_NUMA_BALANCING_DEFAULT_ENABLED=y\n",
        **SYSTEMD_ROOT}, dirs=("/etc/sysctl.d",))
    r = _one(run_check("kernel.sysctl", root, NUMA))
    assert r.status is Status.PASS, r.message
    assert r.evidence[0].source == "boot/config-6.1.0-28-amd64:1"


def test_procps_init_script_runs_sysctl_system() -> None:
    """What the procps applier models: Debian's /etc/init.d/procps runs `sysctl --system`
    (whose order the oracle tests above check against the real program)."""
    script = Path("/etc/init.d/procps")
    if not script.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail("procps' init script is missing")
        pytest.skip("procps' init script is not installed")
    lines = [ln.split("#", 1)[0] for ln in script.read_text().splitlines()]
    assert any("$DAEMON" in ln and "--system" in ln for ln in lines)
    assert any(ln.strip().startswith("DAEMON=") and ln.strip().endswith("sysctl")
               for ln in lines)
