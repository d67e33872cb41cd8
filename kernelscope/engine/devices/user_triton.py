"""A program's own Triton kernels on the virtual GPU: launched in Triton's interpreter.

A GPU program may launch Triton kernels of its own: `kernel[grid](...)` of a `@triton.jit`
function, through `@triton.autotune` and `@triton.heuristics`, or `torch.library.wrap_triton`
inside a `torch.library.triton_op`. Under virtual-cuda (cuda_program) there is no GPU to
launch them on, so while the program runs each launch runs in Triton's own interpreter
(`triton.runtime.interpreter`, what TRITON_INTERPRET=1 uses) on the CPU tensors the virtual
GPU's tensors are: the kernel's values are real, so the program's outputs and losses are.

The kernel stays the `JITFunction` the program made: Dynamo captures its launch as on a GPU
(`triton_kernel_wrapper_mutation`), and Inductor writes it into the cuda wrapper with its
configs; only its launches are interpreted. (TRITON_INTERPRET=1 would make every `@triton.jit`
an `InterpretedFunction` from the start, which Dynamo and `wrap_triton` do not capture.)
Three patch points of "virtual-cuda program", for the program's run:
- `JITFunction.run` (every launch, whatever wraps the kernel): the kernel runs in the
  interpreter (`InterpretedFunction` of its Python function, made once per kernel); the
  kernel's pre-run hooks run first, as Triton runs them; `warmup` compiles nothing;
- `JITFunction.__call__`: a `@triton.jit` helper called from a kernel being interpreted
  runs interpreted (elsewhere it raises, as in Triton);
- `Autotuner.run`: timing means nothing in the interpreter, so nothing is benchmarked: the
  launch uses the first config of those the autotuner would benchmark (its `configs` in
  the order written, after its `prune_configs_by`), as one call with that config alone;
  no timing is cached. The compiled program's wrapper keeps every config, as on a GPU.
What the interpreter cannot run (inline PTX, say) is refused in one line at the program's
line (program_refusal's `Unavailable`), naming the kernel and the interpreter's error.
Cost: the interpreter runs each program instance of the grid in Python with NumPy, about
a millisecond per instance for a small block; a grid of thousands of instances takes seconds.
"""
from __future__ import annotations

from kernelscope.engine import program_patch_points as program_points
from kernelscope.engine.patching import Patches
from kernelscope.engine.user_kernels import LAUNCHED_ATTRIBUTE

_interpreting: list[bool] = []  # one entry per interpreted launch in progress


def interpreting() -> bool:
    """Whether a kernel of the program is running in the interpreter now."""
    return bool(_interpreting)


def interpreted(kernel):
    """The interpreter's version of `kernel` (a JITFunction), made once and kept on it."""
    found = kernel.__dict__.get("_kernelscope_interpreted")
    if found is None:
        from triton.runtime.interpreter import InterpretedFunction

        found = kernel.__dict__["_kernelscope_interpreted"] = InterpretedFunction(kernel.fn)
    return found


def install(patches: Patches) -> None:
    """The program's Triton launches run in the interpreter until `patches` is restored."""
    patches.wrap(program_points.PROGRAM_TRITON_RUN, _launched_in_the_interpreter)
    patches.wrap(program_points.PROGRAM_TRITON_CALL, _helpers_interpreted)
    patches.wrap(program_points.PROGRAM_TRITON_AUTOTUNE, _first_config)


def _launched_in_the_interpreter(run):
    from triton.runtime.errors import InterpreterError

    def interpreted_run(self, *args, grid, warmup, **kwargs):
        for hook in getattr(self, "pre_run_hooks", ()):
            hook(*args, **kwargs)
        _interpreting.append(True)
        try:
            return interpreted(self).run(*args, grid=grid, warmup=warmup, **kwargs)
        except InterpreterError as error:
            raise _refused(self, error) from error
        finally:
            _interpreting.pop()

    return interpreted_run


def _refused(kernel, error):
    """The one line for a kernel the interpreter could not run (what it does not implement,
    such as inline PTX, or the kernel's own error), at the program's line."""
    from kernelscope.engine.devices.program_refusal import ON_A_GPU, refuse

    return refuse(f"{kernel.fn.__name__}[grid](...)",
                  f"Triton's interpreter, which runs the program's Triton kernels on the virtual GPU, raised {error}",
                  ON_A_GPU + ", or fix the kernel where the error is its own")


def _helpers_interpreted(call):
    def helper_call(self, *args, **kwargs):
        if not _interpreting:
            return call(self, *args, **kwargs)
        return interpreted(self)(*args, **kwargs)

    return helper_call


def _first_config(run):
    def untimed_run(self, *args, **kwargs):
        if len(self.configs) <= 1:
            if self.configs:
                setattr(self, LAUNCHED_ATTRIBUTE, self.configs[0])
            return run(self, *args, **kwargs)
        self.nargs = dict(zip(self.arg_names, args))  # what prune_configs_by's functions read
        chosen = self.prune_configs(kwargs)[0]
        setattr(self, LAUNCHED_ATTRIBUTE, chosen)  # the compiled kernel's record shows it (user_kernels.py)
        configs, self.configs = self.configs, [chosen]
        try:
            return run(self, *args, **kwargs)  # one config: launched without benchmarking
        finally:
            self.configs = configs

    return untimed_run
