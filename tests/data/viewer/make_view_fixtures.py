"""Writes the hand-built profiles of tests/data/viewer (run from anywhere; deterministic):

- matmul_bias.hatchet: the seed blog's matmul + bias workload on an H100 SXM, fused and unfused at
  1024 and 8192 (fp16, Triton kernels with flops16 and bytes from their launch metadata), torch's
  randn/zeros kernels and cuBLAS's GEMM as the reference, and the command line the lepton CLI records.
- ddp.rank0..3.hatchet: four ranks of one DDP step (same command line, same device type); rank 2 is
  the planted straggler: its backward matmul takes 1.5x and its all-reduce waits less, as a slow
  rank does (the others wait for it in NCCL).
"""
from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
H100_SXM = {"arch": "90", "bus_width": 5120, "clock_rate": 1980000, "memory_clock_rate": 2619000, "num_sms": 132}
RANDN = ("_ZN2at6native12_GLOBAL__N_143distribution_elementwise_grid_stride_kernelIfLi4EZNS0_9templates4cuda20normal_"
         "and_transformIN3c104HalfEfLm4EPNS_17CUDAGeneratorImplEZZZNS4_13normal_kernelIS9_EEvRKNS_10TensorBaseEddT_EN"
         "KUlvE_clEvENKUlvE1_clEvEUlfE_EEvRNS_18TensorIteratorBaseET2_T3_EUlP25hiprandStatePhilox4_32_10E0_ZNS1_27distr"
         "ibution_nullary_kernelIS7_fLi4ES9_SO_SH_EEvSJ_SK_RKSL_T4_EUlifE_EEviNS_15PhiloxCudaStateET1_SK_")
FILL = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIiEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_"
MUL = ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_internal"
       "10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_")
CUBLAS = "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"


def node(name: str, children=(), **metrics) -> dict:
    return {"children": list(children), "frame": {"name": name, "type": "function"}, "metrics": metrics}


def kernel(name: str, count: int, time_ns: float, flops16: float | None = None, bytes_: float | None = None) -> dict:
    metrics = {"count": count, "device_id": "0", "device_type": "CUDA", "time (ns)": int(time_ns)}
    if flops16 is not None:
        metrics["flops16"] = flops16
    if bytes_ is not None:
        metrics["bytes"] = bytes_
    return node(name, **metrics)


def matmul(n: int, count: int, tflops: float, fused: bool) -> list[dict]:
    """Triton launches of an n x n x n fp16 matmul (+ bias), `tflops` achieved."""
    flops = 2.0 * n ** 3 * count
    gemm_bytes = 3 * n * n * 2 * count
    kernels = [kernel("matmul_kernel_bias" if fused else "matmul_kernel", count, flops / (tflops * 1e12) * 1e9,
                      flops, gemm_bytes + (n * 2 * count if fused else 0))]
    if not fused:  # bias as its own pass: read C and bias, write C, at ~2.6 TB/s
        bias_bytes = (2 * n * n + n) * 2 * count
        kernels.append(kernel("add_bias_kernel", count, bias_bytes / 2.6e12 * 1e9, float(n * n * count), bias_bytes))
    return kernels


def matmul_bias() -> list:
    count = 100
    bench = node("bench", [
        node("fused", [node("1024", matmul(1024, count, 310.0, True)), node("8192", matmul(8192, count, 642.0, True))]),
        node("unfused", [node("1024", matmul(1024, count, 335.0, False)),
                         node("8192", matmul(8192, count, 650.0, False))]),
        node("torch", [node("1024", [kernel(CUBLAS, count, 6.1e3 * count)]),
                       node("8192", [kernel(CUBLAS, count, 1.71e6 * count)])]),
    ])
    setup = node("setup", [kernel(RANDN, 12, 12 * 210e3), kernel(FILL, 8, 8 * 95e3)])
    root = node("ROOT", [bench, setup], count=0, bytes=0, flops16=0, **{"time (ns)": 0})
    root["lepton"] = {"command_line": ["/usr/bin/python3", "matmul_bias.py", "--sizes", "1024,8192"],
                      "cwd": "/work/seed"}
    return [root, {"CUDA": {"0": H100_SXM}}]


def rank(r: int, straggler: int = 2) -> list:
    slow = 1.5 if r == straggler else 1.0
    wait = 0.4 if r == straggler else 1.0  # the straggler arrives last and waits least
    jitter = 1.0 + 0.01 * r
    step = node("step", [
        node("forward", [kernel("matmul_kernel", 40, 40 * 1.8e6 * jitter, 40 * 2.0 * 8192 ** 3, 40 * 3 * 8192 ** 2 * 2),
                         kernel(MUL, 40, 40 * 31e3 * jitter)]),
        node("backward", [kernel("matmul_kernel", 80, 80 * 1.8e6 * jitter * slow, 80 * 2.0 * 8192 ** 3,
                                 80 * 3 * 8192 ** 2 * 2)]),
        node("allreduce", [kernel("ncclDevKernel_AllReduce_Sum_f16_RING_LL", 10, 10 * 9.0e6 * wait)]),
    ])
    root = node("ROOT", [step], count=0, bytes=0, flops16=0, **{"time (ns)": 0})
    root["lepton"] = {"command_line": ["/usr/bin/python3", "train.py", "--ddp"], "cwd": "/work/runs"}
    return [root, {"CUDA": {"0": H100_SXM}}]


def write(path: Path, document: list) -> None:
    path.write_text("\n" + json.dumps(document, indent=4, sort_keys=True) + "\n")


def main() -> None:
    write(HERE / "matmul_bias.hatchet", matmul_bias())
    for r in range(4):
        write(HERE / f"ddp.rank{r}.hatchet", rank(r))


if __name__ == "__main__":
    main()
