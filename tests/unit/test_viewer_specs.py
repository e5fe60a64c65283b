"""viewer.specs: the peak table behind `util`."""
from __future__ import annotations

import pytest

from lepton.viewer.specs import PEAK_FP8_FLOPS, Device, UnknownDevice, devices_of, max_bytes_per_s, max_flops


def cuda(arch, num_sms=132, clock_rate_khz=1980000, memory_clock_rate_khz=2619000, bus_width_bits=5120):
    return Device("CUDA", "0", arch, num_sms, clock_rate_khz, memory_clock_rate_khz, bus_width_bits)


def hip(arch, num_sms, clock_rate_khz):
    return Device("HIP", "0", arch, num_sms, clock_rate_khz, 1600000, 8192)


# Proton's specs.py formulas, written out as Proton writes them (proton/specs.py).
PROTON_FORMULAS = {
    "80": lambda width, num_sms, clock_rate: 624e12 / (width / 8),
    "89": lambda width, num_sms, clock_rate: (330.3 * 1e12) / (width / 8),
    "90": lambda width, num_sms, clock_rate: ((num_sms / 114 * clock_rate / (1755 * 1e3) * 1513) * 1e12) / (width / 8),
    "100": lambda width, num_sms, clock_rate: (num_sms * 16384 * (clock_rate / 1e3) * 1e6) / (width / 8),
}
PROTON_AMD_FLOPS_PER_CLOCK = {"gfx90a": 1024, "gfx942": 4096, "gfx950": 8192}


@pytest.mark.parametrize("arch", sorted(PROTON_FORMULAS))
@pytest.mark.parametrize("width", [8, 16, 32, 64])
@pytest.mark.parametrize("num_sms, clock_rate", [(132, 1980000), (114, 1755000), (148, 1965000), (16, 1140000)])
def test_cuda_peaks_equal_protons_to_the_last_bit(arch, width, num_sms, clock_rate):
    device = cuda(arch, num_sms=num_sms, clock_rate_khz=clock_rate)
    assert max_flops(device, width) == PROTON_FORMULAS[arch](width, num_sms, clock_rate)


@pytest.mark.parametrize("arch, num_sms, clock_rate", [("gfx90a", 104, 1700000), ("gfx942", 304, 2100000),
                                                       ("gfx950", 256, 2200000)])
@pytest.mark.parametrize("width", [8, 16, 32, 64])
def test_amd_peaks_equal_protons_to_the_last_bit(arch, num_sms, clock_rate, width):
    proton = PROTON_AMD_FLOPS_PER_CLOCK[arch] * num_sms * clock_rate * 1e3 / (width / 8)
    assert max_flops(hip(arch, num_sms, clock_rate), width) == proton


@pytest.mark.parametrize("device, published_fp8_tflops", [
    (cuda("86", num_sms=82, clock_rate_khz=1695000), 284),  # RTX 3090: dense INT8 TOPS (no FP8)
    (cuda("120", num_sms=170, clock_rate_khz=2407000), 838),  # RTX 5090: dense FP8
    (cuda("90", num_sms=114, clock_rate_khz=1755000), 1513),  # H100 PCIe
    (cuda("100", num_sms=148, clock_rate_khz=1855000), 4500),  # B200
    (hip("gfx942", 304, 2100000), 2614.9),  # MI300X
    (hip("gfx950", 256, 2400000), 5033),  # MI355X
])
def test_peaks_match_the_published_numbers_they_come_from(device, published_fp8_tflops):
    assert max_flops(device, 8) / 1e12 == pytest.approx(published_fp8_tflops, rel=0.01)


def test_every_arch_the_viewer_promises_is_in_the_table():
    cuda_arches = {arch for kind, arch in PEAK_FP8_FLOPS if kind == "CUDA"}
    amd_arches = {arch for kind, arch in PEAK_FP8_FLOPS if kind == "HIP"}
    assert cuda_arches == {"80", "86", "89", "90", "100", "120"}
    assert amd_arches == {"gfx90a", "gfx942", "gfx950"}


def test_wider_operands_halve_the_peak():
    device = cuda("90")
    assert max_flops(device, 16) == max_flops(device, 8) / 2
    assert max_flops(device, 64) == max_flops(device, 8) / 8


def test_cuda_bandwidth_is_ddr_bus_width_times_memory_clock():
    # RTX 4090: 384-bit GDDR6X at 10501 MHz -> 1008 GB/s
    assert max_bytes_per_s(cuda("89", bus_width_bits=384, memory_clock_rate_khz=10501000)) == 2 * 384 * 10501000 * 1e3 / 8


def test_amd_bandwidth_comes_from_the_table():
    assert max_bytes_per_s(hip("gfx90a", 104, 1700000)) == 3.2e12
    assert max_bytes_per_s(hip("gfx942", 304, 2100000)) == 5.3e12
    assert max_bytes_per_s(hip("gfx950", 256, 2200000)) == 8.0e12


def test_an_arch_without_numbers_raises_unknown_device():
    with pytest.raises(UnknownDevice, match="CUDA arch '75'"):
        max_flops(cuda("75"), 16)
    with pytest.raises(UnknownDevice, match="HIP arch 'gfx1100'"):
        max_bytes_per_s(hip("gfx1100", 48, 2500000))


def test_devices_are_read_from_the_profiles_device_block():
    devices = devices_of({"CUDA": {"0": {"arch": "90", "bus_width": 5120, "clock_rate": 1980000,
                                         "memory_clock_rate": 2619000, "num_sms": 132}}, "HIP": {}})
    assert devices == [Device("CUDA", "0", "90", 132, 1980000.0, 2619000.0, 5120)]
