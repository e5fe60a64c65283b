"""Hardware peaks for the `util` metric: the peak dense 8-bit tensor throughput and memory bandwidth.

Like Proton's `specs.py`, a width-W FLOP peak is the 8-bit peak divided by W/8 (16-bit is half the
8-bit rate, 32-bit a quarter...). The device fields come from the profile's device block, written
from the CUDA/HIP device attributes: `clock_rate` and `memory_clock_rate` in kHz (Proton's
docstring says GHz; the numbers are kHz), `bus_width` in bits, `num_sms` = SMs or CUs.

For CUDA 80/89/90/100 and the three AMD arches the formulas are Proton's, evaluated in the same
order, so `util` matches proton-viewer to the last printed digit. 86 and 120 are ours.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Device:
    """One entry of the profile's device block, with units in the names."""

    device_type: str  # "CUDA" or "HIP"
    device_id: str
    arch: str  # "90" (major*10+minor) on CUDA, "gfx942" on HIP
    num_sms: int
    clock_rate_khz: float
    memory_clock_rate_khz: float
    bus_width_bits: int

    @staticmethod
    def from_info(device_type: str, device_id: str, info: dict) -> Device:
        return Device(device_type, str(device_id), str(info.get("arch", "")), int(info.get("num_sms", 0)),
                      float(info.get("clock_rate", 0)), float(info.get("memory_clock_rate", 0)),
                      int(info.get("bus_width", 0)))


@dataclass(frozen=True)
class FixedPeak:
    """A part's published number, whatever the SM count and clock (Proton's rule for 80 and 89)."""

    fp8_flops_per_s: float

    def fp8_flops(self, device: Device) -> float:
        return self.fp8_flops_per_s


@dataclass(frozen=True)
class ScaledPeak:
    """A reference part's number, scaled by SM count and clock (Proton's rule for 90)."""

    reference_fp8_tflops: float
    reference_num_sms: int
    reference_clock_mhz: float

    def fp8_flops(self, device: Device) -> float:
        # Proton's expression, term for term: (sms/114 * clock/(1755*1e3) * 1513) * 1e12.
        return (device.num_sms / self.reference_num_sms * device.clock_rate_khz
                / (self.reference_clock_mhz * 1e3) * self.reference_fp8_tflops) * 1e12


@dataclass(frozen=True)
class PerClockPeak:
    """Throughput per SM (or CU) per clock, times SMs and clock (Proton's rule for 100 and AMD)."""

    fp8_flops_per_clock_per_sm: int

    def fp8_flops(self, device: Device) -> float:
        return self.fp8_flops_per_clock_per_sm * device.num_sms * device.clock_rate_khz * 1e3


Peak = FixedPeak | ScaledPeak | PerClockPeak

PEAK_FP8_FLOPS: dict[tuple[str, str], Peak] = {
    # A100 (sm_80) has no FP8: 624 dense INT8 TOPS, NVIDIA A100 datasheet (Proton's number).
    ("CUDA", "80"): FixedPeak(624e12),
    # GA10x (sm_86) has no FP8: RTX 3090 does 284 dense INT8 TOPS at 82 SMs x 1695 MHz boost
    # (NVIDIA Ampere GA102 GPU Architecture whitepaper, appendix table) = 2043 -> 2048 ops/clk/SM.
    ("CUDA", "86"): PerClockPeak(2048),
    # RTX 4090 (sm_89): 330.3 dense FP8 TFLOPS with FP32 accumulate (Ada whitepaper, AD102;
    # 660.6 with FP16 accumulate). Proton's number.
    ("CUDA", "89"): FixedPeak(330.3e12),
    # H100 PCIe (sm_90): 1513 dense FP8 TFLOPS at 114 SMs and 1755 MHz boost (H100 datasheet);
    # other sm_90 parts scaled by SMs and clock. Proton's rule.
    ("CUDA", "90"): ScaledPeak(reference_fp8_tflops=1513, reference_num_sms=114, reference_clock_mhz=1755),
    # B200 (sm_100): 16384 dense FP8 FLOP/clk/SM (4.5 dense FP8 PFLOPS = 148 SMs x ~1.86 GHz x
    # 16384, HGX B200 datasheet). Proton's rule.
    ("CUDA", "100"): PerClockPeak(16384),
    # RTX 5090 (sm_120): 838 dense FP8 TFLOPS (1676.8 with sparsity) at 170 SMs x 2407 MHz boost
    # (NVIDIA RTX Blackwell GPU Architecture whitepaper, GB202) = 2048 FLOP/clk/SM.
    ("CUDA", "120"): PerClockPeak(2048),
    # AMD, FP8 matrix FLOPs/clock/CU from the CDNA ISA guides (Proton's table); gfx90a has no FP8,
    # so its INT8 rate: MI250X 383 TOPS = 220 CUs x 1.7 GHz x 1024.
    ("HIP", "gfx90a"): PerClockPeak(1024),
    # MI300X: 2614.9 dense FP8 TFLOPS = 304 CUs x 2.1 GHz x 4096.
    ("HIP", "gfx942"): PerClockPeak(4096),
    # MI355X: 5.0 dense FP8 PFLOPS (10.1 with sparsity) = 256 CUs x 2.4 GHz x 8192 (CDNA4 whitepaper).
    ("HIP", "gfx950"): PerClockPeak(8192),
}

# HBM bandwidth in bytes/s for AMD parts, whose device block does not give a usable memory clock
# (Proton's table): MI250X 3.2 TB/s, MI300X 5.3 TB/s, MI355X 8.0 TB/s (AMD datasheets).
AMD_PEAK_BYTES_PER_S: dict[str, float] = {"gfx90a": 3.2 * 1e12, "gfx942": 5.3 * 1e12, "gfx950": 8.0 * 1e12}


class UnknownDevice(LookupError):
    """No peak numbers for this device type and arch."""


def max_flops(device: Device, width_bits: int) -> float:
    """Peak dense tensor FLOP/s at operand width `width_bits` (8, 16, 32 or 64)."""
    peak = PEAK_FP8_FLOPS.get((device.device_type, device.arch))
    if peak is None:
        raise UnknownDevice(f"no peak FLOP/s for {device.device_type} arch {device.arch!r}")
    return peak.fp8_flops(device) / (width_bits / 8)


def max_bytes_per_s(device: Device) -> float:
    """Peak DRAM bandwidth: CUDA from bus width and memory clock (DDR: 2 transfers per clock)."""
    if device.device_type == "CUDA":
        return 2 * device.bus_width_bits * device.memory_clock_rate_khz * 1e3 / 8
    if device.device_type == "HIP" and device.arch in AMD_PEAK_BYTES_PER_S:
        return AMD_PEAK_BYTES_PER_S[device.arch]
    raise UnknownDevice(f"no peak bandwidth for {device.device_type} arch {device.arch!r}")


def devices_of(device_info: dict) -> list[Device]:
    """The profile's device block `{"CUDA": {"0": {...}}}` as a list of Devices."""
    result = []
    for device_type, by_id in device_info.items():
        if isinstance(by_id, dict):
            for device_id, info in by_id.items():
                if isinstance(info, dict):
                    result.append(Device.from_info(str(device_type), device_id, info))
    return result
