"""A kernel's resource facts: what `cuobjdump -res-usage` says, the instruction mix of its
SASS, and its theoretical occupancy under a GPU's limits."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from kernelscope.asm.linemaps import sass_opcode
from kernelscope.asm.model import Occupancy

# SASS opcode (before the first '.') -> class. Hopper (sm_90) names; unknown opcodes are "other".
INSTRUCTION_CLASSES: dict[str, tuple[str, ...]] = {
    "tensor core": ("HMMA", "IMMA", "DMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA", "WARPGROUP"),
    "special function": ("MUFU",),
    "global load": ("LDG", "LDGSTS", "UTMALDG", "UBLKCP", "LDGDEPBAR", "UTMAPF", "CCTL"),
    "global store": ("STG", "UTMASTG", "UTMAREDG"),
    "shared memory": ("LDS", "STS", "LDSM", "STSM", "ATOMS", "LDGSTS_S"),
    "local memory": ("LDL", "STL"),
    "atomics": ("ATOM", "ATOMG", "RED", "REDG", "REDUX"),
    "warp shuffle/vote": ("SHFL", "VOTE", "VOTEU", "MATCH"),
    "barrier/sync": ("BAR", "SYNCS", "MEMBAR", "DEPBAR", "WARPSYNC", "ERRBAR", "FENCE", "ARRIVES", "CGAERRBAR"),
    "fp32": ("FADD", "FMUL", "FFMA", "FMNMX", "FSET", "FSETP", "FSEL", "FCHK", "FSWZADD", "FADD32I",
             "FMUL32I", "FFMA32I"),
    "fp16/bf16": ("HADD2", "HMUL2", "HFMA2", "HMNMX2", "HSET2", "HSETP2", "HADD2_32I", "HMUL2_32I",
                  "HFMA2_32I"),
    "fp64": ("DADD", "DMUL", "DFMA", "DSETP", "DMNMX"),
    "conversion": ("F2F", "F2I", "I2F", "F2FP", "I2FP", "FRND", "F2IP", "I2IP"),
    "integer": ("IADD3", "IMAD", "IMUL", "LOP3", "SHF", "LEA", "ISETP", "IMNMX", "IABS", "POPC", "FLO",
                "BREV", "SGXT", "PRMT", "LOP", "IADD", "IADD32I", "IMAD32I", "ISCADD", "BMSK", "VIMNMX", "VIADD",
                "UIADD3", "UIMAD", "ULOP3", "USHF", "ULEA", "UISETP", "USGXT", "UPRMT", "UFLO", "UPOPC",
                "UBMSK", "UBREV", "USEL", "SEL", "P2R", "R2P", "PLOP3", "UPLOP3"),
    "move": ("MOV", "UMOV", "S2R", "S2UR", "CS2R", "R2UR", "LDC", "ULDC", "SHFL_MOVE", "IDE", "MOVM"),
    "control": ("BRA", "BRX", "JMP", "LEPC", "JMX", "EXIT", "RET", "CALL", "BSSY", "BSYNC", "BREAK", "BPT",
                "NOP", "YIELD", "KILL", "WARPGROUP_ARRIVE", "ACQBULK", "ELECT", "NANOSLEEP", "ENDCOLLECTIVE"),
}
_CLASS_OF = {opcode: name for name, opcodes in INSTRUCTION_CLASSES.items() for opcode in opcodes}


# ptxas puts some constants in registers with `HFMA2.MMA Rx, -RZ, RZ, c, 0`: a move, not fp16 math.
_MOVE_IDIOMS = ("HFMA2.MMA",)


def instruction_class(opcode: str) -> str:
    """`MUFU.EX2` -> `special function`; `HGMMA.64x128x16.F32` -> `tensor core`."""
    if opcode in _MOVE_IDIOMS:
        return "move"
    base = opcode.split(".", 1)[0]
    return _CLASS_OF.get(base, "other")


def instruction_mix(instructions: list[str]) -> dict[str, int]:
    """SASS instruction count per class, largest first (ties by name)."""
    counts = Counter(instruction_class(sass_opcode(instruction)) for instruction in instructions)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def opcode_counts(instructions: list[str]) -> Counter:
    return Counter(sass_opcode(instruction) for instruction in instructions)


_PTXAS_PROPERTIES = re.compile(
    r"Function properties for (\S+)\s*\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def ptxas_spills(log: str, kernel_name: str) -> dict[str, int] | None:
    """{"stack", "stores", "loads"} bytes from `ptxas -v` for one function; None without a log
    (then the local memory size stands for the spills: an upper bound)."""
    for name, stack, stores, loads in _PTXAS_PROPERTIES.findall(log):
        if name.strip("'") == kernel_name:
            return {"stack": int(stack), "stores": int(stores), "loads": int(loads)}
    return None


_FUNCTION = re.compile(r"^\s*Function\s+(\S+?):?\s*$")
_FIELD = re.compile(r"([A-Z_]+(?:\[\d+\])?):(\d+)")


def resource_usage(text: str, kernel_name: str) -> dict[str, int]:
    """`cuobjdump -res-usage` of a cubin, for one function: {"REG": 14, "STACK": 0, ...}."""
    current = None
    for line in text.splitlines():
        match = _FUNCTION.match(line)
        if match:
            current = match.group(1)
            continue
        if current == kernel_name and _FIELD.search(line):
            return {name: int(value) for name, value in _FIELD.findall(line)}
    raise ValueError(f"cuobjdump reports no function {kernel_name!r}")


@dataclass(frozen=True)
class GpuLimits:
    """Per-SM limits the occupancy calculator uses (CUDA's cudaOccupancy.h)."""

    name: str
    max_warps: int
    max_blocks: int
    registers: int  # 32-bit registers per SM
    register_unit: int  # registers are allocated per warp in units of this many
    register_partitions: int  # the register file is split between this many schedulers
    shared_bytes: int  # shared memory per SM (the largest carve-out)
    shared_unit: int  # allocation granularity
    shared_reserved: int  # shared memory the system keeps per block

    def occupancy(self, registers: int, shared_bytes: int, num_warps: int) -> Occupancy:
        """Theoretical occupancy of a kernel with `num_warps` warps per block."""
        limits = {"warps": self.max_warps // num_warps, "blocks": self.max_blocks}
        if registers > 0:
            per_warp = _round_up(registers * 32, self.register_unit)
            warps_per_partition = (self.registers // self.register_partitions) // per_warp
            limits["registers"] = warps_per_partition * self.register_partitions // num_warps
        per_block = _round_up(shared_bytes + self.shared_reserved, self.shared_unit)
        limits["shared memory"] = self.shared_bytes // per_block
        order = ("warps", "blocks", "registers", "shared memory")  # ties: the hardware's own limits first
        limited_by = min((name for name in order if name in limits), key=lambda name: limits[name])
        blocks = limits[limited_by]
        return Occupancy(blocks, blocks * num_warps, self.max_warps, limited_by)


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


# Hopper, compute capability 9.0 (H100): 64 warps, 32 blocks, 64K registers per SM, 228 KB of
# shared memory per SM with 1 KB reserved per block (CUDA occupancy calculator, CC 9.0).
SM90 = GpuLimits(name="sm_90", max_warps=64, max_blocks=32, registers=65536, register_unit=256,
                 register_partitions=4, shared_bytes=233472, shared_unit=128, shared_reserved=1024)
LIMITS = {90: SM90}


def limits_for(arch: int) -> GpuLimits:
    """The limits of compute capability `arch` (90 = sm_90); Hopper's for newer ones is wrong,
    so an unknown architecture is an error."""
    if arch not in LIMITS:
        raise ValueError(f"no occupancy limits for sm_{arch}: kernelscope knows {', '.join(f'sm_{a}' for a in LIMITS)}")
    return LIMITS[arch]
