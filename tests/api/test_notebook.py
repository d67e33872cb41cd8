"""The Python API in a real Jupyter kernel (ipykernel, driven by nbclient): a notebook
records examples/mlp.py's model, opens the store, queries a line and displays a run;
its outputs are what Jupyter would show — the answer's text, the runs table and a
run's HTML with the fusion picture as SVG."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

GELU = next(number for number, text in enumerate((REPO / "examples/mlp.py").read_text().splitlines(), 1)
            if "F.gelu" in text)


def notebook(store: Path):
    cells = [
        # the kernel imports this worktree's kernelscope, and compiles in-process as the tests do
        f"import os, sys\nsys.path.insert(0, {str(REPO)!r})\nos.environ['TORCHINDUCTOR_COMPILE_THREADS'] = '1'",
        "import importlib.util\n"
        "import kernelscope\n"
        "spec = importlib.util.spec_from_file_location('mlp', 'examples/mlp.py')\n"
        "mlp = importlib.util.module_from_spec(spec)\n"
        "sys.modules['mlp'] = mlp\n"
        "spec.loader.exec_module(mlp)\n"
        "model, inputs = mlp.make()\n"
        f"run = kernelscope.record(model, *inputs, train=True, target='virtual-cuda', store={str(store)!r})\n"
        "run",
        f"store = kernelscope.open({str(store)!r})\nstore.runs",
        f"answer = store.query('examples/mlp.py:{GELU}')\nprint(answer)",
        "answer",
        "from IPython.display import display\ndisplay(store.latest)\n[kernel.name for kernel in store.latest.kernels]",
        # a model defined in a cell: no file on disk, its lines are the cell's
        "import torch\n"
        "class Tiny(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return torch.relu(x) * 2\n"
        f"tiny = kernelscope.record(Tiny(), torch.randn(8, 8), target='virtual-cuda', store={str(store)!r})\n"
        "print(repr(tiny))\n"
        "[(source.line, source.code) for source in tiny.fusion().sources]",
    ]
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return book


def outputs(cell) -> dict[str, list]:
    """A cell's outputs by kind: "stream" (stdout), "text/html" and "text/plain" data, "error"."""
    found: dict[str, list] = {"stream": [], "text/html": [], "text/plain": [], "error": []}
    for output in cell.outputs:
        if output.output_type == "stream":
            if output.name == "stdout":  # not the warnings a library may print
                found["stream"].append(output.text)
        elif output.output_type == "error":
            found["error"].append(f"{output.ename}: {output.evalue}")
        else:
            for kind in ("text/html", "text/plain"):
                if kind in output.data:
                    found[kind].append(output.data[kind])
    return found


@pytest.mark.slow
def test_the_api_in_a_real_jupyter_kernel(tmp_path, run_cli):
    store = tmp_path / ".kernelscope"
    book = notebook(store)
    client = nbclient.NotebookClient(book, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(REPO)}})
    client.execute()
    setup, recorded, runs, printed, shown, displayed, in_cell = (outputs(cell) for cell in book.cells)
    assert not any(cell["error"] for cell in (setup, recorded, runs, printed, shown, displayed, in_cell))

    # record(): the run shows its summary table and the fusion picture, as SVG
    [page] = recorded["text/html"]
    assert '<h3>Run 1 <span class="target">examples/mlp.py:MLP</span></h3>' in page
    assert "<tr><th>device · mode</th><td>virtual-cuda · train</td></tr>" in page
    assert re.search(r'<div class="ks-fusion"><svg class="fusion" [^>]*>', page)
    assert page.count('<path class="fedge"') >= 5
    assert f"<title>mlp.py:{GELU}  h = F.gelu(h)</title>" in page
    kernels = page.count('<g class="fnode kernel')
    assert recorded["text/plain"] == [f"<kernelscope run 1: examples/mlp.py:MLP · virtual-cuda · train · "
                                      f"2 graph(s), {kernels} kernel(s)>"]
    # store.runs: the table `kernelscope runs` prints (text), and as HTML
    assert runs["text/plain"][0].splitlines()[1].split()[:1] == ["1"]
    assert "<td>examples/mlp.py:MLP</td>" in runs["text/html"][0]
    # print(answer) is what `kernelscope query` prints for the same store
    cli = run_cli(["query", f"examples/mlp.py:{GELU}", "--store", str(store)])
    assert cli.returncode == 0, cli.stderr
    assert "".join(printed["stream"]) == cli.stdout
    assert "Triton: triton_per_fused_gelu" in cli.stdout
    # the answer shown as HTML: the same tree, as nested lists
    [tree] = shown["text/html"]
    assert f"examples/mlp.py:{GELU}  (source file in run 1)" in tree and '<ul class="ks-tree">' in tree
    assert '<span class="ks-bold ks-cyan">graph 0/0 forward: ' in tree
    # display(run) outside the cell's result: the same rich output
    assert len(displayed["text/html"]) == 1 and '<svg class="fusion"' in displayed["text/html"][0]
    assert "triton_per_fused_gelu" in displayed["text/plain"][-1]
    # a model defined in a notebook cell records too, named `<python>:Class`, its lines the cell's
    assert in_cell["stream"] == ["<kernelscope run 2: <python>:Tiny · virtual-cuda · inference · 1 graph(s), "
                                 "1 kernel(s)>\n"]
    assert in_cell["text/plain"] == ["[(4, 'return torch.relu(x) * 2')]"]
