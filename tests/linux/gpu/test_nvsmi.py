"""``nvidia-smi -q -x`` parsing (:mod:`aiaudit.linux.gpu.nvsmi`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.gpu import nvsmi

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
<power_readings><current_power_limit>250.00 W</current_power_limit>
<default_power_limit>300.00 W</default_power_limit></power_readings>
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


@given(st.text(max_size=300))
def test_any_text(text: str) -> None:
    try:
        nvsmi.parse(text)
    except ParseError:
        pass
