"""The corpus of real ``nvidia-smi`` captures (``tests/fixtures/gpu``, see PROVENANCE.md):
every file is as published, every field aiaudit reads comes out of every schema version as
the capture shows it, and the health verdicts match the facts recorded for each GPU.  The
scan path over the same corpus is ``tests/integration/test_gpu_captures.py``."""

from __future__ import annotations

import hashlib
import re

import pytest

from aiaudit.core.model import Status
from aiaudit.linux.gpu import health, nvidia, nvsmi
from tests.linux.gpu import corpus

CAPTURES = corpus.captures()
IDS = [c["file"].split("/", 1)[1] for c in CAPTURES]


def _blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@pytest.mark.parametrize("cap", CAPTURES, ids=IDS)
def test_capture_is_as_published(cap) -> None:
    """The file is byte for byte the published one (its git blob id), from a source with a
    permissive licence whose text is kept beside it."""
    data = (corpus.ROOT / cap["file"]).read_bytes()
    assert _blob(data) == cap["blob"], f"{cap['file']} differs from {cap['path']}"
    src = corpus.corpus()["sources"][cap["source"]]
    assert src["licence"] in ("MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause")
    assert (corpus.ROOT / src["licence_file"]).is_file()
    assert re.fullmatch(r"[0-9a-f]{40}", cap["commit"])


def test_corpus_covers_what_the_issue_asks() -> None:
    """At least 20 distinct real captures; a MIG data-center GPU; drivers before 470 and
    after 580; Windows and vGPU guests; the old and new power blocks."""
    counted = [c for c in CAPTURES if c["counted"]]
    assert len(counted) >= 20
    gpus = [(c, g) for c in counted for g in c["gpus"]]
    assert any(g["facts"]["mig"] == "Enabled" and re.search(r"A100|H100|H200|A30", g["name"])
               for _, g in gpus)
    branches = {nvidia.branch(c["driver"]) for c in counted}
    assert min(branches) < 470 and max(branches) > 580
    assert any(g["facts"]["driver_model"] == "WDDM" for _, g in gpus)
    assert any(g["facts"]["virtualization"] == "VGPU" for _, g in gpus)
    schemas = {c["schema"] for c in counted}
    assert {"v9", "v10", "v11", "v12", "v13"} <= schemas


@pytest.mark.parametrize("cap", CAPTURES, ids=IDS)
def test_fields_read_as_the_capture_shows(cap) -> None:
    """Driver, CUDA, GPUs and every field the rules read, whatever the schema: absent
    elements, N/A, [N/A], deprecated values and units."""
    log = nvsmi.parse_log(corpus.smi_xml(cap))
    assert log.driver_version == cap["driver"]
    want_cuda = re.match(r"(\d+)\.(\d+)", cap["cuda"] or "")
    assert log.cuda == (tuple(int(x) for x in want_cuda.groups()) if want_cuda else None)
    assert [(g.bus_id, g.name) for g in log.gpus] == [(g["bus_id"], g["name"])
                                                      for g in cap["gpus"]]
    for g, want in zip(log.gpus, cap["gpus"], strict=True):
        f = want["facts"]
        assert g.ecc_current == nvsmi.value(f["ecc"]["current"])
        assert sorted(r for r, on in g.reasons if on) == f["active_reasons"]
        assert g.default_power_limit_w == f["power_w"]["default"]
        assert g.power_limit_w == f["power_w"]["in_force"]
        assert g.requested_power_limit_w == f["power_w"]["requested"]
        assert g.mig == nvsmi.value(f["mig"])
        assert g.persistence == nvsmi.value(f["persistence_mode"])
        assert g.volatile_uncorrectable == f["volatile_uncorrectable"]
        assert g.aggregate_uncorrectable == f["aggregate_uncorrectable"]
        assert list(g.retired_pages) == f["retired_count"]
        assert g.banks_without_spare_rows == f["banks_without_spare_rows"]
        assert g.sram_threshold_exceeded == nvsmi.value(f["sram_threshold_exceeded"])
        rows = f["remapped_rows"]
        if isinstance(rows, dict):
            assert (g.rows_pending, g.rows_failure) == (rows["pending"], rows["failure"])
        else:
            assert g.rows_pending is None and g.rows_failure is None


@pytest.mark.parametrize("cap", CAPTURES, ids=IDS)
def test_health_verdicts_match_the_recorded_facts(cap) -> None:
    log = nvsmi.parse_log(corpus.smi_xml(cap))
    for g, want in zip(log.gpus, cap["gpus"], strict=True):
        got = {"ecc": health.ecc(g), "memory_errors": health.memory_errors(g),
               "throttle": health.throttle(g),
               "memory_health": health.memory_health(g, health.MemoryLimits())}
        for prop, v in got.items():
            assert v.status.value == want["expect"][prop], (g.bus_id, prop, v.message)
            if v.status is Status.SKIP:
                assert "not reported" in v.message or "N/A" in v.message, v.message


def _cap(name: str) -> dict:
    [c] = [c for c in CAPTURES if c["file"].endswith(name)]
    return c


def _gpus(name: str) -> list[nvsmi.GpuHealth]:
    return list(nvsmi.parse_log(corpus.smi_xml(_cap(name))).gpus)


# ---------------------------------------------------------------- issue 26 regressions
def test_power_cap_before_530_reads_power_readings_power_limit() -> None:
    """Item 1: driver 525 writes <power_readings><power_limit>200.00 W</power_limit> with a
    350 W default: the reduced limit is a finding (it used to pass, the limit unread)."""
    [g] = _gpus("telegraf-rtx-3090-v12.xml")
    assert (g.power_limit_w, g.requested_power_limit_w, g.default_power_limit_w) == (
        200.0, 200.0, 350.0)
    v = health.throttle(g)
    assert v.status is Status.FAIL and "power limit 200 W is below the default 350 W" in \
        v.message


def test_memory_errors_not_reported_in_mig_mode_reads_the_ecc_counts() -> None:
    """Item 2: A100 with MIG enabled reports remapped_rows N/A: not "nothing pending" but
    "not reported", with what MIG mode does report (volatile uncorrectable counts, 0)."""
    [g] = _gpus("telegraf-a100-sxm4-v12.xml")
    assert g.mig == "Enabled" and g.rows_pending is None
    assert (g.volatile_uncorrectable, g.mig_uncorrectable) == (0, 0)
    v = health.memory_errors(g)
    assert v.status is Status.SKIP and "not reported in MIG mode" in v.message
    assert "are 0" in v.message
    # the same GPU with an uncorrectable error counted in one MIG instance (a variant of
    # the real capture: one counter changed) has a remap likely pending
    text = corpus.smi_xml(_cap("telegraf-a100-sxm4-v12.xml"))
    bumped = text.replace("<sram_uncorrectable>0</sram_uncorrectable>",
                          "<sram_uncorrectable>2</sram_uncorrectable>", 1)
    [g2] = nvsmi.parse_log(bumped).gpus
    v2 = health.memory_errors(g2)
    assert v2.status is Status.FAIL and "2 uncorrectable" in v2.message


def test_memory_errors_not_reported_on_consumer_gpus() -> None:
    """Item 2: GeForce cards report retired pages and remapped rows as N/A."""
    for name in ("telegraf-rtx-3060-v12.xml", "pai-nvidia_smi_sample_ecc_unsupported.xml"):
        for g in _gpus(name):
            v = health.memory_errors(g)
            assert v.status is Status.SKIP and "not reported by this GPU" in v.message


def test_real_pending_repairs_fail() -> None:
    [v100] = _gpus("pai-nvidia_smi_retired_pages.xml")
    assert health.memory_errors(v100).status is Status.FAIL
    [a10] = _gpus("gpud-nvidia-smi-query.535.129.03.out.0.valid.a10.txt")
    v = health.memory_errors(a10)
    assert v.status is Status.FAIL and "row remapping pending" in v.message


def test_sw_power_cap_at_the_default_limit_is_normal() -> None:
    """Item 5: SW power cap active at the default limit (a GPU under load) passes with a
    note; HW slowdown and power brake are findings; the applications clocks reason at the
    default clocks is not."""
    [g] = _gpus("telegraf-3090-v13.xml")
    assert dict(g.reasons)["sw_power_cap"] is True
    v = health.throttle(g)
    assert v.status is Status.PASS and "normal under load" in v.message
    h100 = _gpus("gpud-nvidia-smi-query.535.161.08.out.0.valid.txt")
    for g in h100:
        v = health.throttle(g)
        assert v.status is Status.FAIL and "HW power brake slowdown" in v.message
    k80 = _gpus("pai-nvidia_smi_out_of_order.xml")[0]
    assert dict(k80.reasons)["applications_clocks_setting"] is True
    assert health.throttle(k80).status is Status.PASS


def test_lowered_applications_clocks_are_a_finding() -> None:
    """The K80 capture with its applications clocks set below the defaults (a variant of
    the real capture: one value changed) fails; at the default it passes (above)."""
    text = corpus.smi_xml(_cap("pai-nvidia_smi_out_of_order.xml"))
    lowered = re.sub(r"(<applications_clocks>\s*<graphics_clock>)562 MHz", r"\g<1>324 MHz",
                     text, count=1)
    g = nvsmi.parse_log(lowered).gpus[0]
    v = health.throttle(g)
    assert v.status is Status.FAIL and "324 MHz is below the default 562 MHz" in v.message


def test_windows_and_vgpu_guests_say_why_nothing_is_reported() -> None:
    [p4] = _gpus("telegraf-tesla_p4.xml")
    assert p4.virtualization == "VGPU" and p4.driver_model == "WDDM"
    for v in (health.ecc(p4), health.memory_errors(p4), health.throttle(p4)):
        assert v.status is Status.SKIP and "vGPU guest" in v.message


def test_nvrm_banners_are_the_proc_version_string() -> None:
    """The module's id string from real dmesg captures, as /proc/driver/nvidia/version
    prints it (``NVRM version: <id>``)."""
    for b in corpus.corpus()["nvrm_banners"]:
        ident = b["text"].split("NVRM: loading ", 1)[1]
        pv = nvidia.parse_proc_version(f"NVRM version: {ident}\n")
        assert (pv.version, pv.open, pv.arch) == (b["version"], b["open"], b["arch"])


# ------------------------------------------------ issue 28: memory health with thresholds
def test_memory_health_real_uncorrectable_since_reset_fails() -> None:
    """V100 (driver 410.104): one volatile double-bit error; 2 retired pages, below 63."""
    [g] = _gpus("pai-nvidia_smi_retired_pages.xml")
    assert (g.volatile_uncorrectable, g.aggregate_uncorrectable, g.retired_pages) == (
        1, 7627, (0, 2))
    v = health.memory_health(g, health.MemoryLimits())
    assert v.status is Status.FAIL
    assert v.message == ("1 uncorrectable ECC error(s) since the last GPU reset (drain the "
                         "node and reset the GPU)")
    # a site that tolerates one error since reset, and judges the lifetime count
    lenient = health.MemoryLimits(max_volatile_uncorrectable=1,
                                  max_aggregate_uncorrectable=1000)
    v = health.memory_health(g, lenient)
    assert v.status is Status.FAIL and v.message.startswith("7627 uncorrectable ECC error(s) "
                                                            "over the GPU's life")
    assert health.memory_health(g, health.MemoryLimits(max_volatile_uncorrectable=1)
                                ).status is Status.PASS


def test_memory_health_retired_pages_against_the_limit() -> None:
    """K80 (driver 430.26): one single- and one double-bit retired page pass at NVIDIA's
    limit (63, DCGM's >=); a limit of 2 is reached."""
    g = _gpus("pai-nvidia_smi_out_of_order.xml")[0]
    assert g.retired_pages == (1, 1)
    v = health.memory_health(g, health.MemoryLimits())
    assert v.status is Status.PASS and "2 retired page(s) (at most 62)" in v.message
    v = health.memory_health(g, health.MemoryLimits(retired_pages_limit=2))
    assert v.status is Status.FAIL and "2 retired page(s) (at the limit of 2" in v.message
    assert health.memory_health(g, health.MemoryLimits(retired_pages_limit=3)
                                ).status is Status.PASS


def test_memory_health_row_remap_failure_and_sram_threshold_always_fail() -> None:
    """H100 text capture (535.161.08, derived XML) with its real 'No' answers; the same
    capture with 'Remapping Failure Occurred: Yes' or 'SRAM Threshold Exceeded: Yes' (one
    value changed) fails whatever the thresholds."""
    cap = _cap("gpud-nvidia-smi-query.535.161.08.out.0.valid.txt")
    text = (corpus.ROOT / cap["file"]).read_text()
    g = nvsmi.parse_log(corpus.q_text_to_xml(text)).gpus[0]
    assert (g.rows_failure, g.sram_threshold_exceeded, g.banks_without_spare_rows) == (
        "No", "No", 0)
    assert health.memory_health(g, health.MemoryLimits()).status is Status.PASS
    off = health.MemoryLimits(max_volatile_uncorrectable=None, retired_pages_limit=None)
    for label in ("Remapping Failure Occurred", "SRAM Threshold Exceeded"):
        bad = re.sub(rf"({label} +: )No", r"\1Yes", text, count=1)
        g = nvsmi.parse_log(corpus.q_text_to_xml(bad)).gpus[0]
        v = health.memory_health(g, off)
        assert v.status is Status.FAIL and "RMA" in v.message, v.message


def test_memory_health_counts_mig_instances() -> None:
    """A100 with MIG: the GPU and instance counts are read (0); an error counted in one MIG
    instance (one value changed) fails."""
    [g] = _gpus("telegraf-a100-sxm4-v12.xml")
    assert health.memory_health(g, health.MemoryLimits()).status is Status.PASS
    text = corpus.smi_xml(_cap("telegraf-a100-sxm4-v12.xml"))
    i = text.index("<mig_device>")
    bumped = text[:i] + text[i:].replace("<sram_uncorrectable>0</sram_uncorrectable>",
                                         "<sram_uncorrectable>3</sram_uncorrectable>", 1)
    [g2] = nvsmi.parse_log(bumped).gpus
    assert (g2.volatile_uncorrectable, g2.mig_uncorrectable) == (0, 3)
    v = health.memory_health(g2, health.MemoryLimits())
    assert v.status is Status.FAIL and v.message.startswith("3 uncorrectable")


def test_memory_health_not_reported_says_why() -> None:
    """GeForce with nothing reported and a vGPU guest: skip with the reason; a workstation
    GPU with ECC disabled passes on what it reports (spare rows) and says ECC counts are
    not reported."""
    [g] = _gpus("telegraf-rtx-3060-v12.xml")
    v = health.memory_health(g, health.MemoryLimits())
    assert v.status is Status.SKIP and "not reported by this GPU" in v.message
    [p4] = _gpus("telegraf-tesla_p4.xml")
    v = health.memory_health(p4, health.MemoryLimits())
    assert v.status is Status.SKIP and "vGPU guest" in v.message
    [ada] = _gpus("telegraf-rtx-4000-sff-ada-v13.xml")
    v = health.memory_health(ada, health.MemoryLimits())
    assert v.status is Status.PASS and "ECC error counts not reported (N/A: ECC is disabled)" \
        in v.message


def test_memory_health_spare_rows_in_use_are_reported_not_judged() -> None:
    """A10 (535.129.03): 4 rows remapped for uncorrectable errors, no failure, no bank out
    of spare rows: a pass that says so (the pending remap is GPU-MEMORY-ERRORS-NONE-PENDING's
    finding)."""
    [g] = _gpus("gpud-nvidia-smi-query.535.129.03.out.0.valid.a10.txt")
    assert g.rows_remapped == (0, 4)
    v = health.memory_health(g, health.MemoryLimits())
    assert v.status is Status.PASS and "4 row(s) remapped for uncorrectable" in v.message
    v = health.memory_health(g, health.MemoryLimits(max_banks_without_spare_rows=0))
    assert v.status is Status.PASS
