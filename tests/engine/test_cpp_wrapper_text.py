"""compile_text/cpp_wrapper_code.py: reading a C++ wrapper's structure from its text (no torch).
The text is a cut of what Inductor (torch 2.13) writes in `cpp_wrapper` mode on the CPU."""
from __future__ import annotations

from kernelscope.compile_text import cpp_wrapper_code as cpp

MODULE = '''
import torch
from torch._inductor.codecache import CppWrapperCodeCache

cpp_wrapper_src = (
r"""
#include <torch/csrc/inductor/cpp_wrapper/cpu.h>
extern "C"  void  cpp_fused_mul_silu_0(float* in_out_ptr0,
                       const float* in_ptr0);

void inductor_entry_impl(
    AtenTensorHandle*
        input_handles,
    AtenTensorHandle*
        output_handles
) {
    auto arg0_1 = std::move(inputs[0]);
    AtenTensorHandle buf0_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_0, int_array_1, dtype, device, 0, &buf0_handle));
    RAIIAtenTensorHandle buf0(buf0_handle);
    // Topologically Sorted Source Nodes: [linear], Original ATen: [aten.t, aten.mm]
    // [Provenance debug handles] aoti_torch_cpu_mm_out:1
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_mm_out(buf0, arg1_1, arg0_1));
    auto buf2 = std::move(buf0);  // reuse
    // [Provenance debug handles] cpp_fused_mul_silu_0:3
    cpp_fused_mul_silu_0((float*)(buf2.data_ptr()), (const float*)(buf1.data_ptr()));
    buf1.reset();
    output_handles[0] = buf2.release();
} // inductor_entry_impl

#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  cpp_fused_mul_silu_0(float* in_out_ptr0,
                       const float* in_ptr0)
{
    auto tmp2 = tmp1.exp();
}
"""
)

inductor_entry = CppWrapperCodeCache.load_pybinding(main_code=cpp_wrapper_src)
'''


def _numbered(text: str, needle: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if needle in line)


def test_the_cpp_is_taken_out_of_cpp_wrapper_mode_s_module():
    text, offset = cpp.cpp_part(MODULE)
    assert text.startswith("#include <torch/csrc/inductor/cpp_wrapper/cpu.h>")
    assert MODULE.splitlines()[offset] == text.splitlines()[0]
    assert cpp.cpp_part("#include <x.h>\nint main() {}\n") == ("#include <x.h>\nint main() {}\n", 0)


def test_layout_finds_the_body_launches_handles_and_kernel_definitions():
    text, _ = cpp.cpp_part(MODULE)
    names = cpp.declared_kernels(text)
    assert names == {"cpp_fused_mul_silu_0"}
    layout = cpp.read_layout(text, names)
    assert layout.body_start == _numbered(text, "void inductor_entry_impl(")
    assert layout.body_end == _numbered(text, "} // inductor_entry_impl")
    launch = _numbered(text, "cpp_fused_mul_silu_0((float*)")
    mm = _numbered(text, "aoti_torch_cpu_mm_out(buf0")
    assert layout.launches == {launch: "cpp_fused_mul_silu_0"}
    assert layout.handles == {mm: ("aoti_torch_cpu_mm_out", 1), launch: ("cpp_fused_mul_silu_0", 3)}
    (definition,) = layout.definitions
    assert definition.first_line == _numbered(text, "#include <torch/csrc/inductor/cpp_prefix.h>") + 1
    assert "tmp1.exp()" in definition.source and definition.source.rstrip().endswith("}")
    assert sorted(layout.declarations) == [2, 3]  # the declaration before the entry, both its lines


def test_each_line_says_what_it_does():
    names = {"cpp_fused_mul_silu_0"}
    reasons = {line: cpp.line_reason(line, names) for line in (
        "    AtenTensorHandle buf0_handle;",
        "    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_mm_out(buf0, arg1_1, arg0_1));",
        "    cpp_fused_mul_silu_0((float*)(buf2.data_ptr()), (const float*)(buf1.data_ptr()));",
        "    call_cpp_fused_mul_silu_0(buf2, buf1, stream);",
        "    auto buf2 = std::move(buf0);  // reuse",
        "    buf1.reset();",
        "    static constexpr int64_t int_array_0[] = {16L, 172L};",
        "    // [Provenance debug handles] cpp_fused_mul_silu_0:3",
    )}
    assert list(reasons.values()) == [
        "allocates output of", "calls extern kernel aoti_torch_cpu_mm_out", "launches kernel cpp_fused_mul_silu_0",
        "launches kernel cpp_fused_mul_silu_0", "reuses buffer for", "frees buffer after", "sizes and strides for",
        "comment"]


def test_extern_kernels_are_told_from_generated_ones_by_name():
    assert cpp.is_extern("aoti_torch_cpu_mm_out") and cpp.is_extern("aoti_torch_cuda_addmm_out")
    assert cpp.is_extern("aoti_torch_proxy_executor_call_function")
    assert not cpp.is_extern("cpp_fused_mul_silu_0") and not cpp.is_extern("triton_poi_fused_mul_silu_0")


def test_a_triton_module_the_cuda_wrapper_holds_as_a_string_is_found():
    text = "\n".join([
        "static CUfunction triton_poi_fused_0 = nullptr;",
        'static const char* triton_poi_fused_0_source = R"TRITON(',
        "async_compile.triton('triton_poi_fused_0', '''",
        "import triton",
        "@triton.jit",
        "def triton_poi_fused_0(in_ptr0, xnumel, XBLOCK : tl.constexpr):",
        "    tmp0 = tl.load(in_ptr0 + (x0), xmask)",
        "''', device_str='cuda')",
        ')TRITON";',
    ]) + "\n"
    layout = cpp.read_layout(text, {"triton_poi_fused_0"})
    (block,) = layout.triton_sources
    assert (block.name, block.first_line, block.last_line) == ("triton_poi_fused_0", 4, 7)
    assert block.source.startswith("import triton") and "tl.load" in block.source
    assert sorted(layout.declarations) == [1]  # the kernel handle, not the lines of the module it holds


def test_a_triton_module_aotinductor_keeps_in_a_comment_is_found_without_its_indent():
    """AOTInductor writes the kernel's module, indented, in a comment inside its launch function."""
    text = "\n".join([
        "static __attribute__((noinline)) void call_triton_poi_fused_0(",
        "    int64_t xnumel",
        "){",
        "    /*",
        "    async_compile.triton('triton_poi_fused_0', '''",
        "    import triton",
        "",
        "    @triton.jit",
        "    def triton_poi_fused_0(in_ptr0, xnumel, XBLOCK : tl.constexpr):",
        "        tmp0 = tl.load(in_ptr0 + (x0), xmask)",
        "    ''', device_str='cuda')",
        "    */",
        "    if (kernels_.triton_poi_fused_0 == nullptr) {",
        "}",
    ]) + "\n"
    layout = cpp.read_layout(text, {"triton_poi_fused_0"})
    (block,) = layout.triton_sources
    assert (block.name, block.first_line, block.last_line) == ("triton_poi_fused_0", 6, 10)
    assert block.source.splitlines() == ["import triton", "", "@triton.jit",
                                         "def triton_poi_fused_0(in_ptr0, xnumel, XBLOCK : tl.constexpr):",
                                         "    tmp0 = tl.load(in_ptr0 + (x0), xmask)"]
    assert sorted(layout.declarations) == [13]  # the kernel handle, not the module's lines
