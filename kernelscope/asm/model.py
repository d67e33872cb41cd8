"""What a kernel's build below Triton produces, as plain data (the engine fills it,
the store writes it)."""
from __future__ import annotations

from dataclasses import dataclass, field

STAGES = ("ttir", "ttgir", "ptx", "sass")  # in compile order; each is a file in the store


@dataclass(frozen=True)
class AsmLine:
    """One line of a stage file and the line of the Triton kernel file it came from."""

    stage: str  # ttir | ttgir | ptx | sass
    line: int  # 1-based line of the stage file
    kernel_line: int  # 1-based line of the kernel's Triton source file
    text: str  # the instruction or operation, without its location
    opcode: str = ""  # sass: MUFU.EX2; ptx: ex2.approx.ftz.f32; ttir/ttgir: math.exp2
    # How the line reaches the kernel line when the stage names another file: e.g.
    # "inlined from triton/language/standard.py:263" ("" when it names the kernel line itself).
    via: str = ""


@dataclass(frozen=True)
class LaunchConfig:
    """A Triton config: the block-size constants, warps and pipeline stages."""

    kwargs: dict[str, int | bool | str]
    num_warps: int
    num_stages: int

    @classmethod
    def of(cls, kwargs: dict, num_warps, num_stages) -> LaunchConfig:
        """From a triton.Config's fields (numbers as plain ints)."""
        return cls({name: _plain(value) for name, value in sorted(kwargs.items())}, int(num_warps), int(num_stages))

    @property
    def label(self) -> str:
        sizes = " ".join(f"{name}={value}" for name, value in sorted(self.kwargs.items()))
        return f"{sizes} num_warps={self.num_warps} num_stages={self.num_stages}".strip()

    def to_dict(self) -> dict:
        return {"kwargs": dict(sorted(self.kwargs.items())), "num_warps": self.num_warps,
                "num_stages": self.num_stages}

    @classmethod
    def from_dict(cls, data: dict) -> LaunchConfig:
        return cls(dict(data["kwargs"]), int(data["num_warps"]), int(data["num_stages"]))


def _plain(value):
    return value if isinstance(value, (bool, str)) else int(value)


@dataclass
class Occupancy:
    """Theoretical occupancy of one SM, as the CUDA occupancy calculator computes it."""

    blocks_per_sm: int
    active_warps: int
    max_warps: int
    limited_by: str  # registers | shared memory | warps | blocks

    @property
    def share(self) -> float:
        return self.active_warps / self.max_warps


@dataclass
class AsmFacts:
    """A kernel's resources and instruction mix for one GPU architecture."""

    arch: str  # sm_90
    config: LaunchConfig  # the config these facts are for
    candidates: list[LaunchConfig]  # every config the kernel's autotuner holds
    chosen_by: str  # why `config` is the one shown
    registers: int  # per thread
    spill_bytes: int  # registers spilled: bytes of spill stores per thread (ptxas)
    spill_load_bytes: int  # bytes of spill loads per thread (ptxas)
    local_bytes: int  # local memory per thread (stack frame + local): spills and local arrays
    local_stores: int  # STL instructions (stores to local memory)
    local_loads: int  # LDL instructions
    shared_bytes: int  # shared memory per block (Triton's dynamic shared memory)
    num_warps: int
    num_stages: int
    occupancy: Occupancy
    instructions: int  # SASS instructions
    mix: dict[str, int]  # instruction class -> SASS instructions (see facts.INSTRUCTION_CLASSES)
    gpu: dict | None = None  # --target cuda: what the GPU's launcher reported (n_regs, n_spills, shared)

    @property
    def triton_spills(self) -> int:
        """`n_spills` as Triton and Inductor report it on a GPU: the driver's local memory
        size per thread / 4 (spilled registers and local arrays alike)."""
        return self.local_bytes // 4


@dataclass
class KernelAsm:
    """One kernel compiled for one GPU: its stage texts, line maps and facts."""

    kernel_name: str
    facts: AsmFacts
    stages: dict[str, str]  # stage -> text (STAGES)
    lines: list[AsmLine] = field(default_factory=list)
    build_seconds: float = 0.0
    tools: dict[str, str] = field(default_factory=dict)  # triton, ptxas, nvdisasm versions
