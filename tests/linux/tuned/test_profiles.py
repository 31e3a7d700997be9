"""aiaudit.linux.tuned.profiles: enablement, active profiles, include chains, directories."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.linux.tuned import profiles as tuned
from tests.checks.tuning_trees import TUNED_ENABLED, TUNED_LINK


def test_tuned_include_chain_precedence_and_cycle(make_root) -> None:
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "top extra\n",
             "/etc/tuned/top/tuned.conf": "[main]\ninclude=mid\n[cpu]\ngovernor=performance\n",
             "/usr/lib/tuned/top/tuned.conf": "[cpu]\ngovernor=powersave\n",   # hidden by /etc
             "/usr/lib/tuned/profiles/mid/tuned.conf":
                 "[main]\ninclude=base;top\n[cpu]\nforce_latency=1\n",
             "/usr/lib/tuned/base/tuned.conf": "[cpu]\ngovernor=ondemand\nforce_latency=99\n"
                                               "energy_perf_bias=normal\n",
             "/usr/lib/tuned/extra/tuned.conf": "[vm]\ntransparent_hugepages=never\n"}
    st = tuned.load(Host(str(make_root(files, TUNED_LINK))))
    assert st.active and st.names == ("top", "extra")
    assert [f.split("/")[-2] for f in st.files] == ["base", "mid", "top", "extra"]
    assert st.get("cpu", "governor").value == "performance"
    assert st.get("cpu", "force_latency").value == "1"
    assert st.get("cpu", "energy_perf_bias").file == "/usr/lib/tuned/base/tuned.conf"
    assert st.get("vm", "transparent_hugepages").value == "never"
    assert any("cycle" in n for n in st.notes)


def test_tuned_not_enabled_or_missing_profile(make_root) -> None:
    files = {"/etc/tuned/active_profile": "p\n", "/etc/tuned/p/tuned.conf": "[cpu]\ngovernor=x\n"}
    st = tuned.load(Host(str(make_root(files))))
    assert not st.active and st.get("cpu", "governor") is None
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "gone\n"}
    st = tuned.load(Host(str(make_root(files, TUNED_LINK))))
    assert not st.active and "not found" in st.problems[0]


def test_tuned_profile_dirs_from_main_conf(make_root) -> None:
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "p\n",
             "/etc/tuned/tuned-main.conf": "# dirs\nprofile_dirs = /usr/lib/tuned,/opt/tuned\n",
             "/opt/tuned/p/tuned.conf": "[cpu]\ngovernor=performance\n",
             "/etc/tuned/p/tuned.conf": "[cpu]\ngovernor=powersave\n"}   # not searched
    st = tuned.load(Host(str(make_root(files, TUNED_LINK))))
    assert st.get("cpu", "governor").value == "performance"



def test_an_active_profile_of_thousands_of_words_is_refused(tmp_path) -> None:
    root = tmp_path / "root"
    (root / "etc/tuned").mkdir(parents=True)
    (root / "etc/tuned/active_profile").write_text(" ".join(f"p{i}" for i in range(5000)))
    state = tuned.load(Host(str(root)))
    assert state.profile is None and state.names == ()
    assert any("more than 32" in p for p in state.problems)

