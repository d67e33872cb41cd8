"""Kernel lines written outside any op's own code (stores, their index arithmetic) are
attributed to the op whose buffer they store — not to another op fused into the kernel."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

MODEL = '''
import torch
from torch import nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(1000, 64)

    def forward(self, ids):
        h = self.embed(ids)
        variance = h.pow(2).mean(-1, keepdim=True)
        return h * torch.rsqrt(variance + 1e-6)


def make():
    torch.manual_seed(0)
    return Tiny(), (torch.randint(0, 1000, (2, 16)),)
'''


def test_embedding_backward_scatter_store_belongs_to_the_scatter(tmp_path):
    from kernelscope.engine.recorder import RecordOptions, record_factory

    (tmp_path / "tiny.py").write_text(MODEL)
    run = record_factory(f"{tmp_path / 'tiny.py'}:make", RecordOptions(workspace=tmp_path, train=True))
    (backward,) = [g for g in run.graphs if g.kind == "backward"]
    targets = {n.name: n.target for n in backward.post_grad_nodes}
    rows = [row for k in backward.kernels for row in k.lines]
    scatter_stores = [row for row in rows if "tl.atomic_add(" in row.text]
    assert scatter_stores
    for row in scatter_stores:
        assert [targets[n] for n in row.nodes] == ["aten._unsafe_masked_index_put_accumulate.default"]
    # The index wrap-around for negative ids (`tl.where(idx < 0, idx + 1000, idx)`) feeds that store.
    wraps = [row for row in rows if "tl.full([1, 1], 1000, tl.int32)" in row.text]
    assert wraps and all(targets[n] == "aten._unsafe_masked_index_put_accumulate.default"
                         for row in wraps for n in row.nodes)
