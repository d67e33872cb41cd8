"""torch.nn.TransformerEncoder (PyTorch's own layers) under a small classifier head.

In inference (eval mode, no grad) PyTorch takes its fused fast path: each layer is
one `aten._transformer_encoder_layer_fwd` call, which Inductor keeps as a fallback
to eager. `make_train` (train mode, dropout on) gets the decomposed layers instead.
"""
import torch
from torch import nn

BATCH, SEQ, DIM = 2, 32, 128


class EncoderClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=DIM, nhead=4, dim_feedforward=256, dropout=0.1,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(DIM, 10)

    def forward(self, x):
        hidden = self.encoder(x)
        return self.head(hidden.mean(dim=1)).log_softmax(dim=-1)


def _model():
    torch.manual_seed(0)
    return EncoderClassifier()


def make():
    return _model().eval(), (torch.randn(BATCH, SEQ, DIM),)


def make_train():
    return _model().train(), (torch.randn(BATCH, SEQ, DIM),)
