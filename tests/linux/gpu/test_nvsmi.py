"""``nvidia-smi -q -x`` parsing (:mod:`aiaudit.linux.gpu.nvsmi`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.gpu import nvsmi

# Hand-made (not a capture): two GPUs in the shapes real drivers write (the corpus of real
# captures is tests/fixtures/gpu, used by test_corpus.py).
SMI = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log><driver_version>535.161.08</driver_version>
<gpu id="00000000:18:00.0"><product_name>NVIDIA H100 80GB HBM3</product_name>
<clocks_event_reasons>
 <clocks_event_reason_gpu_idle>Active</clocks_event_reason_gpu_idle>
 <clocks_event_reason_applications_clocks_setting>Not Active
 </clocks_event_reason_applications_clocks_setting>
 <clocks_event_reason_sw_power_cap>Not Active</clocks_event_reason_sw_power_cap>
</clocks_event_reasons>
<ecc_mode><current_ecc>Enabled</current_ecc><pending_ecc>Enabled</pending_ecc></ecc_mode>
<retired_pages><pending_blacklist>N/A</pending_blacklist><pending_retirement>N/A</pending_retirement></retired_pages>
<remapped_rows><remapped_row_corr>0</remapped_row_corr><remapped_row_unc>0</remapped_row_unc>
<remapped_row_pending>No</remapped_row_pending><remapped_row_failure>No</remapped_row_failure></remapped_rows>
<gpu_power_readings><current_power_limit>700.00 W</current_power_limit>
<default_power_limit>700.00 W</default_power_limit></gpu_power_readings>
</gpu>
<gpu id="00000000:2A:00.0"><product_name>Tesla V100-SXM2-32GB</product_name>
<clocks_throttle_reasons>
 <clocks_throttle_reason_sw_thermal_slowdown>Active</clocks_throttle_reason_sw_thermal_slowdown>
</clocks_throttle_reasons>
<ecc_mode><current_ecc>Disabled</current_ecc><pending_ecc>Enabled</pending_ecc></ecc_mode>
<retired_pages><pending_blacklist>Yes</pending_blacklist><pending_retirement>No</pending_retirement></retired_pages>
<power_readings><power_limit>250.00 W</power_limit>
<default_power_limit>300.00 W</default_power_limit>
<enforced_power_limit>250.00 W</enforced_power_limit></power_readings>
</gpu></nvidia_smi_log>
"""


def test_nvsmi_parser_reads_both_reason_spellings() -> None:
    a, b = nvsmi.parse(SMI)
    assert a.bus_id == "00000000:18:00.0" and dict(a.reasons)["gpu_idle"] is True
    assert dict(b.reasons) == {"sw_thermal_slowdown": True}
    assert b.power_limit_w == 250.0 and b.default_power_limit_w == 300.0


def test_nvsmi_parser_refuses_entities_and_bad_xml() -> None:
    with pytest.raises(Exception, match="entities"):
        nvsmi.parse('<!DOCTYPE x [<!ENTITY a "aaaa">]><nvidia_smi_log/>')
    with pytest.raises(Exception, match="well-formed"):
        nvsmi.parse("<nvidia_smi_log><gpu>")
    with pytest.raises(Exception, match="root element"):
        nvsmi.parse("<html/>")


@pytest.mark.parametrize(("text", "want"), [
    ("N/A", None), ("[N/A]", None), ("[Not Supported]", None), ("Not Supported", None),
    ("Unknown Error", None), ("Requested functionality has been deprecated", None),
    ("  ", None), ("Enabled", "Enabled"), (" Not\n  Active ", "Not Active"), ("None", "None"),
])
def test_values_not_reported(text, want) -> None:
    assert nvsmi.value(text) == want


def test_quantities_with_units() -> None:
    assert nvsmi.quantity("350.00 W", "W") == 350.0
    assert nvsmi.quantity("1410 MHz", "MHz") == 1410.0
    assert nvsmi.quantity("[N/A]", "W") is None
    assert nvsmi.quantity("350.00 MHz", "W") is None
    assert nvsmi.cuda_of("13.3 Deprecated") == (13, 3)  # words after the number
    assert nvsmi.cuda_of("Not Found") is None and nvsmi.cuda_of(None) is None


def test_absent_elements_are_none() -> None:
    [g] = nvsmi.parse('<nvidia_smi_log><gpu id="0000:04:00.0"/></nvidia_smi_log>')
    assert (g.bus_id, g.name, g.ecc_current, g.power_limit_w, g.reasons) == (
        "0000:04:00.0", "?", None, None, ())


@given(st.text(max_size=300))
def test_any_text(text: str) -> None:
    try:
        nvsmi.parse(text)
    except ParseError:
        pass


_COUNTS = ("<nvidia_smi_log><gpu id='0'><ecc_errors><volatile><dram_uncorrectable>{v}"
           "</dram_uncorrectable></volatile><aggregate><dram_uncorrectable>{v}"
           "</dram_uncorrectable><sram_threshold_exceeded>{v}</sram_threshold_exceeded>"
           "</aggregate></ecc_errors><retired_pages><double_bit_retirement><retired_count>{v}"
           "</retired_count></double_bit_retirement></retired_pages><remapped_rows>"
           "<remapped_row_unc>{v}</remapped_row_unc><row_remapper_histogram>"
           "<row_remapper_histogram_none>{v} bank(s)</row_remapper_histogram_none>"
           "</row_remapper_histogram></remapped_rows></gpu></nvidia_smi_log>")


@pytest.mark.parametrize("v", ["\u00b2", "9" * 5000, "-1", "1e9", "0x10", "[N/A]"])
def test_hostile_counts_are_not_reported(v: str) -> None:
    """Counts that are not plain ASCII digits (a superscript digit passes str.isdigit but
    not int; 5000 digits exceed Python's int-from-string limit) read as not reported."""
    [g] = nvsmi.parse(_COUNTS.format(v=v))
    assert (g.volatile_uncorrectable, g.aggregate_uncorrectable, g.retired_pages,
            g.rows_remapped, g.banks_without_spare_rows) == (
        None, None, (None, None), (None, None), None)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",),
                                      blacklist_characters="<&\x00"), max_size=40))
def test_any_count_value(v: str) -> None:
    """Any text in the count fields gives a count or None, never an exception."""
    try:
        gpus = nvsmi.parse(_COUNTS.format(v=v))
    except ParseError:
        return
    for g in gpus:
        assert g.aggregate_uncorrectable is None or g.aggregate_uncorrectable >= 0
