"""A Llama-3-8B-sized model (transformers' LlamaConfig with the 8B sizes) built on the meta
device: 32 layers, hidden 4096, intermediate 14336, 32 heads, 8 KV heads, vocab 128256 —
about 30 GB of fp32 weights that are never materialized. `LAYERS` (environment variable
KERNELSCOPE_LAYERS, default 32) sets the depth; everything else is as the library ships it.
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import transformers

BATCH, SEQ = 1, 128


def _config(layers: int):
    return transformers.LlamaConfig(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=layers,
        num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192, rope_theta=500000.0,
        rms_norm_eps=1e-5, tie_word_embeddings=False)


def _model():
    layers = int(os.environ.get("KERNELSCOPE_LAYERS", "32"))
    with torch.device("meta"):
        return transformers.LlamaForCausalLM(_config(layers))


def _inputs():
    torch.manual_seed(0)
    return (torch.randint(0, 128256, (BATCH, SEQ)),)


def make():
    return _model().eval(), _inputs()


def make_train():
    return _model().train(), _inputs()


def make_train_bf16_long():
    """Training in bf16 at a long sequence (KERNELSCOPE_SEQ, default 4096): what the README's
    activation-memory breakdown per layer records (`kernelscope memory`, docs/memory.md)."""
    seq = int(os.environ.get("KERNELSCOPE_SEQ", "4096"))
    torch.manual_seed(0)
    return _model().to(torch.bfloat16).train(), (torch.randint(0, 128256, (BATCH, seq)),)


def _real_model(device: str):
    """The same model with real (random) weights on `device`: what a GPU compiles where a meta
    model cannot run (bench/gpu_check.py --engine compares its code with the meta model's)."""
    layers = int(os.environ.get("KERNELSCOPE_LAYERS", "32"))
    torch.manual_seed(0)
    with torch.device(device):
        return transformers.LlamaForCausalLM(_config(layers))


def make_real(device="cpu"):
    return _real_model(device).eval(), tuple(t.to(device) for t in _inputs())


def make_real_train(device="cpu"):
    return _real_model(device).train(), tuple(t.to(device) for t in _inputs())
