"""What a kernel's build below Triton (or below Inductor's C++ for the CPU) produces, as
plain data (the engine fills it, the store writes it)."""
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
    facts: AsmFacts | CpuFacts  # CpuFacts: a C++ kernel built for the CPU (stage "x86")
    stages: dict[str, str]  # stage -> text (STAGES, or CPU_STAGES for a C++ kernel)
    lines: list[AsmLine] = field(default_factory=list)
    build_seconds: float = 0.0
    tools: dict[str, str] = field(default_factory=dict)  # triton, ptxas, nvdisasm versions


# -- C++ kernels (Inductor's cpp backend): x86-64 below the kernel --------------------------

CPU_STAGES = ("x86",)  # the object code's disassembly (objdump -d -l --inlines), one file per kernel
ALL_STAGES = STAGES + CPU_STAGES


@dataclass(frozen=True)
class CppLoop:
    """A loop of an Inductor C++ kernel (a `for(` line of the .cpp file) and how Inductor
    vectorized it."""

    line: int  # the `for(` line
    end_line: int  # the line of its closing brace
    variable: str  # x0, x1, ...
    step: int  # the loop's step: the vector's lanes in a vectorized loop, 1 in a scalar one
    kind: str  # "vectorized" (its body uses at::vec::Vectorized) | "scalar"
    tail_lines: tuple[int, ...] = ()  # lines of its masked tail blocks (`if(C10_UNLIKELY(...))`)
    reduction: bool = False  # it accumulates into a `tmp_acc` (a reduction loop)

    def to_dict(self) -> dict:
        return {"line": self.line, "end_line": self.end_line, "variable": self.variable, "step": self.step,
                "kind": self.kind, "tail_lines": list(self.tail_lines), "reduction": self.reduction}

    @classmethod
    def from_dict(cls, data: dict) -> CppLoop:
        return cls(int(data["line"]), int(data["end_line"]), str(data["variable"]), int(data["step"]),
                   str(data["kind"]), tuple(int(line) for line in data.get("tail_lines", ())),
                   bool(data.get("reduction", False)))


@dataclass
class CpuFacts:
    """A C++ kernel compiled for this machine's CPU as Inductor compiles it: the ISA Inductor
    picked, the widest vector registers the code uses, its loops and the compiler's own
    vectorization remarks."""

    arch: str  # x86-64
    isa: str  # Inductor's pick (cpu_vec_isa.pick_vec_isa): avx512, avx2, ...
    isa_bits: int  # the ISA's vector width (Inductor's Vectorized<float> is this wide)
    vector_bits: int  # the widest vector register the kernel's instructions use (512: zmm, 256: ymm, 128: xmm, 0)
    instructions: int  # instructions of the kernel's functions
    mix: dict[str, int]  # instruction class -> count (x86.INSTRUCTION_CLASSES)
    loops: list[CppLoop]  # the kernel's loops, in source order
    remarks: list[dict]  # the compiler's -fopt-info-vec-optimized remarks on the kernel file: {line, text}
    compiler: str  # g++ (Debian 12.2.0-14) 12.2.0
    command: str  # Inductor's compile command for the kernel (the build adds -g, -S-free object + objdump)

    def to_dict(self) -> dict:
        return {"arch": self.arch, "isa": self.isa, "isa_bits": self.isa_bits, "vector_bits": self.vector_bits,
                "instructions": self.instructions, "mix": dict(self.mix),
                "loops": [loop.to_dict() for loop in self.loops], "remarks": list(self.remarks),
                "compiler": self.compiler, "command": self.command}

    @classmethod
    def from_dict(cls, data: dict) -> CpuFacts:
        return cls(data["arch"], data["isa"], int(data["isa_bits"]), int(data["vector_bits"]),
                   int(data["instructions"]), dict(data["mix"]), [CppLoop.from_dict(loop) for loop in data["loops"]],
                   list(data["remarks"]), data["compiler"], data["command"])
