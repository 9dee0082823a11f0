"""Device facts for the time model, each with the published source it comes from.

Two GPUs: the reporter's RTX A6000 (GA102, sm_86) and the lent H200 (GH100,
sm_90). A :class:`Fact` is a published number; where the number under the
study's load is not published (the clock a kernel runs at, the DRAM bandwidth a
kernel sustains, and the FP16x2 rate of GA102, on which two NVIDIA documents
disagree) it carries a plausible range (``low``..``high``) and the model shows
how far its predictions move across it (:func:`settings`). Nothing here is
fitted to anybody's measurements.

Throughput classes are in results per clock per SM, as NVIDIA's Programming
Guide tabulates them (a warp instruction of 32 lanes of a 2-wide FP16x2 op is
64 results).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import check_choice

# --- the documents --------------------------------------------------------------------------

CPG_ARITHMETIC = (
    "NVIDIA CUDA C++ Programming Guide (12.x), 5.4.1 'Arithmetic Instructions', table 'Throughput of "
    "Native Arithmetic Instructions (Number of Results per Clock Cycle per Multiprocessor)', "
    "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#arithmetic-instructions"
)
CPG_SPECS = (
    "NVIDIA CUDA C++ Programming Guide (12.x), 'Compute Capabilities', table 'Technical Specifications "
    "per Compute Capability', "
    "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#features-and-technical-specifications"
)
CPG_SHARED = (
    "NVIDIA CUDA C++ Programming Guide (12.x), 'Shared Memory' (compute capability 5.x and later): "
    "32 banks, each 32 bits wide per clock cycle, i.e. 128 bytes per clock per SM, "
    "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#shared-memory-5-x"
)
GA102_WHITEPAPER = (
    "NVIDIA Ampere GA102 GPU Architecture whitepaper v2.0 (an SM: 4 partitions, each one warp scheduler "
    "dispatching 32 threads/clk, 128 FP32 units per SM; peak FP16 (non-Tensor) TFLOPS equal to peak "
    "FP32 TFLOPS, i.e. 128 FP16 results/clk/SM), "
    "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf"
)
A6000_DATASHEET = (
    "NVIDIA RTX A6000 data sheet (10,752 CUDA cores = 84 SMs x 128; 48 GB GDDR6, 384-bit, 768 GB/s; "
    "38.7 TFLOPS FP32), https://www.nvidia.com/en-us/design-visualization/rtx-a6000/"
)
TECHPOWERUP_A6000 = (
    "TechPowerUp GPU database, 'NVIDIA RTX A6000' (third-party: base clock 1410 MHz, boost 1800 MHz, "
    "L2 6 MB), https://www.techpowerup.com/gpu-specs/"
)
H100_WHITEPAPER = (
    "NVIDIA H100 Tensor Core GPU Architecture whitepaper (GH100; H100 SXM5: 132 SMs, 4 partitions per "
    "SM each with one warp scheduler dispatching 32 threads/clk, 128 FP32 units per SM, 50 MB L2), "
    "https://resources.nvidia.com/en-us-hopper-architecture"
)
H200_DATASHEET = (
    "NVIDIA H200 Tensor Core GPU data sheet (H200 SXM: 141 GB HBM3e at 4.8 TB/s, FP32 67 TFLOPS; "
    "H200 NVL: 4.8 TB/s, FP32 60 TFLOPS), https://www.nvidia.com/en-us/data-center/h200/"
)
TECHPOWERUP_H200 = (
    "TechPowerUp GPU database, 'NVIDIA H200 SXM 141 GB' (third-party: base clock 1590 MHz, boost "
    "1980 MHz), https://www.techpowerup.com/gpu-specs/"
)
FORUM_PIPES = (
    "NVIDIA developer forum, 'Separate CUDA core pipeline for FP16 and FP32' (GA10x: the FMAheavy pipe "
    "runs IMAD and FP32, FMAlite FP32, FP16x2 is dual-issued to both; GH100: the same), "
    "https://forums.developer.nvidia.com/t/separate-cuda-core-pipeline-for-fp16-and-fp32/302018/7"
)
ASSUMED_DRAM = (
    "assumption, no published figure: a kernel sustains between 80% and 100% of the data sheet's "
    "peak DRAM bandwidth"
)


@dataclass(frozen=True)
class Fact:
    """A number and where it comes from; ``low``/``high`` bound it where it is an assumption."""

    value: float
    unit: str
    source: str
    low: float | None = None
    high: float | None = None
    note: str = ""

    @property
    def is_range(self) -> bool:
        return self.low is not None or self.high is not None

    def ends(self) -> tuple[float, ...]:
        """The values the model is run at: the point, and each end of the range."""
        return tuple(dict.fromkeys(v for v in (self.low, self.value, self.high) if v is not None))


@dataclass(frozen=True)
class Device:
    name: str
    chip: str
    target: str  # the SASS target its kernels are compiled for
    sms: Fact
    schedulers_per_sm: Fact  # each issues one warp instruction per clock
    clock_ghz: Fact  # value: boost; low: base (the clock under load is not published)
    dram_gb_per_s: Fact
    dram_efficiency: Fact  # fraction of the peak a kernel sustains (an assumption)
    l2_mb: Fact
    max_warps_per_sm: Fact
    max_blocks_per_sm: Fact
    registers_per_sm: Fact
    shared_kb_per_sm: Fact
    rates: Mapping[str, Fact] = field(default_factory=dict)  # results per clock per SM, per rate key

    def facts(self) -> dict[str, Fact]:
        """Every fact by name (the rates as ``rate:<key>``)."""
        names = ["sms", "schedulers_per_sm", "clock_ghz", "dram_gb_per_s", "dram_efficiency", "l2_mb"]
        names += ["max_warps_per_sm", "max_blocks_per_sm", "registers_per_sm", "shared_kb_per_sm"]
        out = {n: getattr(self, n) for n in names}
        out.update({f"rate:{k}": v for k, v in self.rates.items()})
        return out


def _rates(*, fp16x2: Fact) -> dict[str, Fact]:
    """Rates shared by sm_86 and sm_90 in the Programming Guide's table, plus the FP16 entry."""
    per_sm = "results/clk/SM"
    return {
        "fp32": Fact(128, per_sm, CPG_ARITHMETIC + ": 32-bit floating-point add, multiply, multiply-add"),
        "fp16x2": fp16x2,
        "int": Fact(
            64, per_sm, CPG_ARITHMETIC + ": 32-bit integer add, shift, compare, min/max, bitwise logic"
        ),
        "int_mul": Fact(64, per_sm, CPG_ARITHMETIC + ": 32-bit integer multiply, multiply-add"),
        "int_slow": Fact(16, per_sm, CPG_ARITHMETIC + ": population count, leading zeros, bit reverse"),
        "conversion": Fact(16, per_sm, CPG_ARITHMETIC + ": all other type conversions"),
        "sfu": Fact(
            16, per_sm, CPG_ARITHMETIC + ": 32-bit reciprocal, reciprocal square root, log2, exp2, sin, cos"
        ),
        "shuffle": Fact(32, per_sm, CPG_ARITHMETIC + ": warp shuffle"),
        "shared_bytes": Fact(128, "bytes/clk/SM", CPG_SHARED),
    }


RTX_A6000 = Device(
    name="NVIDIA RTX A6000",
    chip="GA102",
    target="sm_86",
    sms=Fact(84, "SMs", A6000_DATASHEET),
    schedulers_per_sm=Fact(4, "warp schedulers/SM", GA102_WHITEPAPER),
    clock_ghz=Fact(
        1.80,
        "GHz",
        A6000_DATASHEET + " (38.7 TFLOPS / (10,752 x 2) = 1.80 GHz boost); " + TECHPOWERUP_A6000,
        low=1.41,
        note="the clock under a long kernel is not published: between base (1.41) and boost (1.80)",
    ),
    dram_gb_per_s=Fact(768, "GB/s", A6000_DATASHEET),
    dram_efficiency=Fact(1.0, "of peak", ASSUMED_DRAM, low=0.8),
    l2_mb=Fact(6, "MB", TECHPOWERUP_A6000),
    max_warps_per_sm=Fact(48, "warps", CPG_SPECS + " (8.6)"),
    max_blocks_per_sm=Fact(16, "blocks", CPG_SPECS + " (8.6)"),
    registers_per_sm=Fact(65536, "32-bit registers", CPG_SPECS + " (8.6)"),
    shared_kb_per_sm=Fact(100, "KB", CPG_SPECS + " (8.6)"),
    rates=_rates(
        fp16x2=Fact(
            256,
            "results/clk/SM",
            CPG_ARITHMETIC + " (8.6: 256); " + GA102_WHITEPAPER + "; " + FORUM_PIPES,
            low=128,
            note="NVIDIA's documents disagree: the Programming Guide lists 256 FP16 results/clk/SM "
            "for 8.6, the GA102 whitepaper's FP16 TFLOPS equal its FP32 TFLOPS (128)",
        )
    ),
)

H200 = Device(
    name="NVIDIA H200",
    chip="GH100",
    target="sm_90",
    sms=Fact(
        132,
        "SMs",
        H100_WHITEPAPER + "; " + H200_DATASHEET + " (67 TFLOPS FP32 = 132 x 128 x 2 x 1.98 GHz)",
    ),
    schedulers_per_sm=Fact(4, "warp schedulers/SM", H100_WHITEPAPER),
    clock_ghz=Fact(
        1.98,
        "GHz",
        H200_DATASHEET + " (67 TFLOPS / (132 x 128 x 2) = 1.98 GHz boost); " + TECHPOWERUP_H200,
        low=1.59,
        note="between base (1.59) and boost (1.98); an H200 NVL's boost (60 TFLOPS: 1.78 GHz) lies inside",
    ),
    dram_gb_per_s=Fact(4800, "GB/s", H200_DATASHEET),
    dram_efficiency=Fact(1.0, "of peak", ASSUMED_DRAM, low=0.8),
    l2_mb=Fact(50, "MB", H100_WHITEPAPER),
    max_warps_per_sm=Fact(64, "warps", CPG_SPECS + " (9.0)"),
    max_blocks_per_sm=Fact(32, "blocks", CPG_SPECS + " (9.0)"),
    registers_per_sm=Fact(65536, "32-bit registers", CPG_SPECS + " (9.0)"),
    shared_kb_per_sm=Fact(228, "KB", CPG_SPECS + " (9.0)"),
    rates=_rates(fp16x2=Fact(256, "results/clk/SM", CPG_ARITHMETIC + " (9.0: 256); " + H100_WHITEPAPER)),
)

DEVICES = {"rtx_a6000": RTX_A6000, "h200": H200}


def device(name: str) -> Device:
    """A device by key (:data:`DEVICES`); ValueError naming the allowed keys."""
    return DEVICES[check_choice("device", name, DEVICES)]


@dataclass(frozen=True)
class Setting:
    """The values of a device's assumed facts one prediction is made at."""

    clock_ghz: float
    dram_efficiency: float
    rates: Mapping[str, float]  # results (or bytes) per clock per SM, per rate key

    def label(self) -> str:
        return f"{self.clock_ghz:g} GHz, DRAM x{self.dram_efficiency:g}, FP16x2 {self.rates['fp16x2']:g}/clk"


def point(dev: Device) -> Setting:
    """The published values: boost clock, peak bandwidth, the Programming Guide's rates."""
    return Setting(dev.clock_ghz.value, dev.dram_efficiency.value, {k: f.value for k, f in dev.rates.items()})


def settings(dev: Device) -> list[Setting]:
    """The point, then every corner of the assumed facts' ranges (for the band)."""
    axes: list[tuple[str, tuple[float, ...]]] = [
        ("clock_ghz", dev.clock_ghz.ends()),
        ("dram_efficiency", dev.dram_efficiency.ends()),
    ]
    axes += [(f"rate:{k}", f.ends()) for k, f in dev.rates.items() if f.is_range]
    out = [point(dev)]
    for values in itertools.product(*(ends for _, ends in axes)):
        chosen = dict(zip((name for name, _ in axes), values))
        rates = {k: chosen.get(f"rate:{k}", f.value) for k, f in dev.rates.items()}
        corner = Setting(chosen["clock_ghz"], chosen["dram_efficiency"], rates)
        if corner not in out:
            out.append(corner)
    return out
