"""Hugging Face models built from their config classes with the library's defaults (only
sizes shrunk): `use_cache` as shipped, so decoders make a DynamicCache inside the graph."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import transformers


def make_llama():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
    return transformers.LlamaForCausalLM(config).eval(), (torch.randint(0, 256, (2, 16)),)
