"""GPT-2 (Hugging Face transformers) from a small config with random weights.

`make` is for inference (eval mode); `make_train` keeps dropout on (train mode),
for `kernelscope compile bench/models/gpt2.py:make_train --train`;
`make_eager_attention` uses transformers' eager attention instead of SDPA.
Nothing is downloaded: the model is built from its config.
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import transformers

BATCH, SEQ, VOCAB = 2, 32, 1000


def _model(attention: str = "sdpa", layers: int = 2):
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=layers, n_embd=128, n_head=4, vocab_size=VOCAB,
                                     n_positions=128, use_cache=False,
                                     bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1)
    return transformers.GPT2LMHeadModel._from_config(config, attn_implementation=attention)


def make():
    return _model().eval(), (torch.randint(0, VOCAB, (BATCH, SEQ)),)


def make_12_layers():
    """GPT-2's depth (12 blocks) at the small width: for the query benchmark."""
    return _model(layers=12).eval(), (torch.randint(0, VOCAB, (BATCH, SEQ)),)


def make_train():
    return _model().train(), (torch.randint(0, VOCAB, (BATCH, SEQ)),)


def make_eager_attention():
    """GPT-2's attention written out (matmul, softmax, matmul) instead of SDPA."""
    return _model("eager").eval(), (torch.randint(0, VOCAB, (BATCH, SEQ)),)
