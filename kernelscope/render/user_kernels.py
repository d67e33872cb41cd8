"""A program's own Triton kernels as text: the lines `kernelscope query` and `kernelscope show`
print, and what the language server's hover shows, about a user kernel's generated copy, the
user's lines it was copied from and the autotune config the run launched."""
from __future__ import annotations

from kernelscope.store.results import UserKernelCopy, UserKernelRef


def config_text(config: dict | None) -> str:
    """`BLOCK=256, num_warps=4, num_stages=3`."""
    return ", ".join(f"{key}={value}" for key, value in (config or {}).items()) or "(none)"


def tuning_lines(kernel: UserKernelRef) -> list[str]:
    """The configs it could launch with, the one the run launched and how it was chosen."""
    lines = []
    if kernel.configs:
        lines.append(f"@triton.autotune configs ({len(kernel.configs)}):")
        lines += [f"  {'*' if config == kernel.chosen else ' '} {config_text(config)}" for config in kernel.configs]
    lines.append(f"launched with: {config_text(kernel.chosen)} ({kernel.chosen_by})")
    return lines


def title(kernel: UserKernelRef) -> str:
    """`user Triton kernel silu_forward_kernel (model.py:33), kernel silu_forward_kernel in 0/0 forward`."""
    return (f"user Triton kernel {kernel.function} ({kernel.source_file}:{kernel.source_line}), "
            f"kernel {kernel.kernel} in {kernel.graph.title}")


def lens_title(kernels: list[UserKernelRef], at_call: bool) -> str:
    """A code lens over a user kernel's `def` line (`compiled copy in add_kernel_1 (0/0 forward)
    · config BLOCK=256, num_warps=4`) or over the line that launches it (`launches ...`)."""
    copies = ", ".join(f"{kernel.kernel} ({kernel.graph.title})" for kernel in kernels[:3])
    copies += f" … {len(kernels) - 3} more" if len(kernels) > 3 else ""
    configs = list(dict.fromkeys(config_text(kernel.chosen) for kernel in kernels if kernel.chosen is not None))
    what = f"launches user Triton kernel {kernels[0].function}: " if at_call else ""
    noun = "compiled copy" if len(kernels) == 1 else f"{len(kernels)} compiled copies"
    return f"{what}{noun} in {copies}" + (f" · config {' | '.join(configs)}" if configs else "")


def copy_lines(copy: UserKernelCopy, from_source: bool) -> list[str]:
    """Each linked line of one copy: from a user's line, the generated lines (down); from a
    kernel line, the user's line (up)."""
    if from_source:
        return [f"{copy.kernel.file}:{row.line}  [{row.reason}]  | {row.text.strip()}" for row in copy.lines]
    return [f"{row.source_file}:{row.source_line}  [{row.reason}]  | {row.source_code}" for row in copy.lines]


def run_section(kernels: list[UserKernelRef], linked: tuple[int, int]) -> list[str]:
    """`kernelscope show`'s section: each user kernel's copy, where the user wrote it, its
    launch lines and its configs; and how many of the copies' lines link to the user's."""
    covered, total = linked
    share = f"{100 * covered / total:.1f}% ({covered}/{total})" if total else "none"
    lines = [f"user Triton kernels (kernel lines linked to the user's kernel source: {share})"]
    for kernel in kernels:
        launches = ", ".join(map(str, kernel.launch_lines)) or "none"
        lines.append(f"  {title(kernel)}: {kernel.file}, launched at wrapper line {launches}")
        lines += [f"    {text}" for text in tuning_lines(kernel)]
    return lines
