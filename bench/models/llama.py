"""LLaMA (Hugging Face transformers) from a small config with random weights:
RMSNorm, rotary embeddings, SiLU-gated MLP, grouped-query attention.

`make` is for inference (eval mode); `make_train` for training (train mode).
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import transformers

BATCH, SEQ, VOCAB = 2, 32, 1000


def _model():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
                                      num_key_value_heads=2, intermediate_size=256, vocab_size=VOCAB,
                                      max_position_embeddings=128, use_cache=False)
    return transformers.LlamaForCausalLM(config)


def make():
    return _model().eval(), (torch.randint(0, VOCAB, (BATCH, SEQ)),)


def make_train():
    return _model().train(), (torch.randint(0, VOCAB, (BATCH, SEQ)),)


def make_bf16():
    """Inference in bfloat16, as LLaMA models usually run (attention then takes cuDNN on sm_90)."""
    return _model().to(torch.bfloat16).eval(), (torch.randint(0, VOCAB, (BATCH, SEQ)),)


def make_bf16_train():
    return _model().to(torch.bfloat16).train(), (torch.randint(0, VOCAB, (BATCH, SEQ)),)
