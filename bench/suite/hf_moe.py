"""Mixture-of-experts decoders from transformers: GPT-OSS (openai/gpt-oss-20b, on PyTorch's
benchmark list) and Mixtral, from their config classes with the defaults as shipped (router
top-k, `use_cache`), shrunk only in size: layers, width, heads, experts, vocabulary."""
from __future__ import annotations

from transformers import GptOssConfig, GptOssForCausalLM, MixtralConfig, MixtralForCausalLM

from hf_decoders import VOCAB, causal_lm
from suite_common import factories


def _gpt_oss():  # openai/gpt-oss-20b: 4 experts per token; sliding and full attention layers
    return GptOssForCausalLM(GptOssConfig(num_hidden_layers=2, hidden_size=64, intermediate_size=64,
                                          num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                          num_local_experts=8, vocab_size=VOCAB))


def _mixtral():  # mistralai/Mixtral-8x7B: 8 experts, 2 per token
    return MixtralForCausalLM(MixtralConfig(num_hidden_layers=2, hidden_size=64, intermediate_size=128,
                                            num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB))


gpt_oss, gpt_oss_train = factories(causal_lm, _gpt_oss)
mixtral, mixtral_train = factories(causal_lm, _mixtral)
