"""The fusion picture (kernelscope/render/fusion.py): one layout and one SVG for the VS
Code run overview (sent by the language server) and Jupyter (a Run's `_repr_html_`).
These check the drawing itself; tests/api/test_api.py and tests/api/test_notebook.py check it
on a real run, tests/lsp/test_lsp.py and tests/vscode/test_vscode_e2e.py in the editor."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from kernelscope.render.fusion import (
    EMPTY,
    KERNEL_LABEL_CHARS,
    NODE_HEIGHT,
    SOURCE_LABEL_CHARS,
    Fusion,
    FusionEdge,
    FusionKernel,
    FusionSource,
    layout,
    pass_of,
    shorten,
    shorten_end,
    svg,
)

M = "file:///ws/examples/mlp.py"


def kernel_uri(name: str) -> str:
    return f"file:///ws/.kernelscope/runs/4/graphs/0_0_0-forward/kernels/{name}.py"


def sample() -> Fusion:
    return Fusion(
        sources=[
            FusionSource("s25", "examples/mlp.py", 25, "return torch.softmax(h, dim=-1)", M),
            FusionSource("s21", "examples/mlp.py", 21, "h = F.gelu(h)", M),
            FusionSource("s22", "examples/mlp.py", 22, "h = self.norm(h)", M),
            FusionSource("s20", "examples/mlp.py", 20, "h = self.fc1(x)", M),
        ],
        kernels=[
            FusionKernel("k2", "triton_per_fused__softmax_1", "triton", "0_0_0-forward", kernel_uri("b")),
            FusionKernel("k1", "triton_per_fused_addmm_gelu_native_layer_norm_0", "triton", "0_0_0-forward",
                         kernel_uri("a")),
            FusionKernel("k3", "extern_kernels.mm", "extern", "0_0_0-backward", None),
        ],
        edges=[FusionEdge("s21", "k1"), FusionEdge("s22", "k1"), FusionEdge("s20", "k1"), FusionEdge("s25", "k2"),
               FusionEdge("s20", "k3"), FusionEdge("missing", "k1")],
    )


def test_layout_orders_sources_by_line_and_kernels_by_the_mean_line_of_their_sources():
    placed = layout(sample())
    assert [source.id for source in placed.sources] == ["s20", "s21", "s22", "s25"]
    # k3 (from line 20 only) above k1 (20, 21, 22) above k2 (25): fewer crossings
    assert [kernel.id for kernel in placed.kernels] == ["k3", "k1", "k2"]
    assert len(placed.edges) == 5, "the edge from a source not in the picture is dropped"
    assert all(source.x + source.width < placed.kernels[0].x for source in placed.sources)
    assert placed.height >= 4 * NODE_HEIGHT
    for edge in placed.edges:  # from the source's right side to the kernel's left side
        start = next(source for source in placed.sources if source.id == edge.source)
        end = next(kernel for kernel in placed.kernels if kernel.id == edge.kernel)
        assert edge.path.startswith(f"M{start.x + start.width},")
        y_end = round((end.y + end.height / 2) * 10) / 10
        assert edge.path.endswith(f"{end.x},{int(y_end) if y_end.is_integer() else y_end}")
    assert placed.sources[0].label.startswith("mlp.py:20  h = self.fc1(x)"), "1-based lines, the file's name"
    assert placed.sources[0].line == 19, "data-line is 0-based (what the editor opens)"


def test_svg_nodes_carry_their_click_targets_and_no_inline_style():
    drawn = svg(sample())
    ET.fromstring(drawn)  # well-formed: the webview and Jupyter insert it as markup
    assert drawn.startswith('<svg class="fusion" xmlns="http://www.w3.org/2000/svg"')
    assert drawn.count('<path class="fedge"') == 5
    assert f'<g class="fnode source kind-source clickable" data-id="s21" data-uri="{M}" data-line="20">' in drawn
    assert '<g class="fnode kernel kind-extern" data-id="k3"><title>' in drawn, "an extern call opens nothing"
    assert re.search(r'<g class="fnode kernel kind-triton clickable" data-id="k1" data-uri="[^"]+/a\.py" '
                     r'data-line="0">', drawn)
    assert 'data-source="s21" data-kernel="k1"' in drawn
    assert "style=" not in drawn and "<script" not in drawn, "the webview's CSP allows classes only"
    assert '<text class="colhead" x="12" y="16">model lines (4)</text>' in drawn
    assert '<text class="colhead" x="552" y="16">kernels (3)</text>' in drawn


def test_labels_fit_their_boxes_and_kernels_carry_their_pass():
    fusion = sample()
    fusion.sources[0] = FusionSource("s25", "examples/mlp.py", 25, "x" * 200, M)
    fusion.kernels[1] = FusionKernel("k1", "triton_per_fused_" + "y" * 200, "triton", "0_0_0-forward", None)
    placed = layout(fusion)
    assert all(len(source.label) <= SOURCE_LABEL_CHARS for source in placed.sources)
    assert all(len(kernel.label) <= KERNEL_LABEL_CHARS for kernel in placed.kernels)
    assert SOURCE_LABEL_CHARS * 7.3 + 16 <= placed.sources[0].width
    assert [kernel.tag for kernel in placed.kernels] == ["bw", "fw", "fw"]
    long_kernel = next(kernel for kernel in placed.kernels if kernel.id == "k1")
    assert (long_kernel.title.startswith("triton_per_fused_yyy")
            and long_kernel.title.endswith("(triton, 0_0_0-forward)"))
    assert re.search(r'<text class="tag" [^>]*text-anchor="end">bw</text>', svg(fusion))


def test_text_is_escaped():
    fusion = Fusion([FusionSource('s"1', "a<b>.py", 3, "x = '<&>'", 'file:///w/a"b.py')],
                    [FusionKernel("k1", "k<1>", "triton", "0_0_0-forward", None)], [FusionEdge('s"1', "k1")])
    drawn = svg(fusion)
    ET.fromstring(drawn)
    assert "a&lt;b&gt;.py:3  x = &#x27;&lt;&amp;&gt;&#x27;" in drawn
    assert 'data-uri="file:///w/a&quot;b.py"' in drawn and 'data-id="s&quot;1"' in drawn


def test_an_empty_run_says_so():
    assert svg(Fusion()) == EMPTY == '<p class="empty">No fusion links in this run.</p>'


def test_helpers():
    assert shorten("abcdefghij", 6) == "abc…ij"
    assert shorten("abc", 6) == "abc"
    assert shorten_end("abcdefghij", 6) == "abcde…"
    assert [pass_of(graph) for graph in ("1_0_0-backward", "0/0 forward", "0/0 inference", "x")] == [
        "bw", "fw", "inf", ""]
