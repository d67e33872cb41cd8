"""Hugging Face causal language models from PyTorch's benchmark list
(benchmarks/dynamo/huggingface_models_list.txt and its LLM entries), each from its
transformers config class with the defaults as shipped (`use_cache` included: the model
builds its KV cache in forward), shrunk only in size: layers, width, heads, vocabulary.

Inference calls `model(input_ids)`; training `model(input_ids=..., labels=...).loss`, as the
benchmark's training step does."""
from __future__ import annotations

from transformers import (
    Gemma2Config,
    Gemma2ForCausalLM,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GPT2Config,
    GPT2LMHeadModel,
    GPTJConfig,
    GPTJForCausalLM,
    GPTNeoConfig,
    GPTNeoForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    OPTConfig,
    OPTForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
    TrOCRConfig,
    TrOCRForCausalLM,
    XGLMConfig,
    XGLMForCausalLM,
)

from suite_common import Call, factories, mode, seeded, token_ids

# The vocabulary is shrunk where the config's special token ids stay inside it; GPT-2, GPT-Neo
# and GPT-J keep theirs (their bos/eos id is 50256).
VOCAB = 1024


def causal_lm(build, train: bool = False):
    model = mode(seeded(build), train)
    ids = token_ids(model.config.vocab_size)
    if train:
        return Call(model, ("input_ids", "labels"), "loss"), (ids, token_ids(model.config.vocab_size))
    return model, (ids,)


def _llama():  # meta-llama/Llama-3.2-1B
    return LlamaForCausalLM(LlamaConfig(num_hidden_layers=2, hidden_size=64, intermediate_size=128,
                                        num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB))


def _mistral():  # mistralai/Mistral-7B-Instruct-v0.3
    return MistralForCausalLM(MistralConfig(num_hidden_layers=2, hidden_size=64, intermediate_size=128,
                                            num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB))


def _qwen3():  # Qwen/Qwen3-0.6B
    return Qwen3ForCausalLM(Qwen3Config(num_hidden_layers=2, hidden_size=64, intermediate_size=128,
                                        num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                        vocab_size=VOCAB))


def _gemma2():  # google/gemma-2-2b
    return Gemma2ForCausalLM(Gemma2Config(num_hidden_layers=2, hidden_size=64, intermediate_size=128,
                                          num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                          query_pre_attn_scalar=16, vocab_size=VOCAB))


def _gemma3():  # google/gemma-3-4b-it, its text decoder
    return Gemma3ForCausalLM(Gemma3TextConfig(num_hidden_layers=2, hidden_size=64, intermediate_size=128,
                                              num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                              query_pre_attn_scalar=16, vocab_size=VOCAB))


def _gpt2():  # DistillGPT2 (distilgpt2: GPT-2 with 6 layers)
    return GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4))


def _opt():  # OPTForCausalLM
    return OPTForCausalLM(OPTConfig(num_hidden_layers=2, hidden_size=64, word_embed_proj_dim=64, ffn_dim=128,
                                    num_attention_heads=4, vocab_size=VOCAB))


def _gpt_neo():  # GPTNeoForCausalLM: a global and a local (windowed) attention layer
    return GPTNeoForCausalLM(GPTNeoConfig(num_layers=2, attention_types=[[["global", "local"], 1]],
                                          hidden_size=64, num_heads=4))


def _gptj():  # GPTJForCausalLM
    return GPTJForCausalLM(GPTJConfig(n_layer=2, n_embd=64, n_head=4, rotary_dim=8))


def _xglm():  # XGLMForCausalLM
    return XGLMForCausalLM(XGLMConfig(num_layers=2, d_model=64, ffn_dim=128, attention_heads=4, vocab_size=VOCAB))


def _trocr():  # TrOCRForCausalLM (the decoder of TrOCR)
    return TrOCRForCausalLM(TrOCRConfig(decoder_layers=2, d_model=64, decoder_ffn_dim=128,
                                        decoder_attention_heads=4, vocab_size=VOCAB))


llama, llama_train = factories(causal_lm, _llama)
mistral, mistral_train = factories(causal_lm, _mistral)
qwen3, qwen3_train = factories(causal_lm, _qwen3)
gemma2, gemma2_train = factories(causal_lm, _gemma2)
gemma3, gemma3_train = factories(causal_lm, _gemma3)
gpt2, gpt2_train = factories(causal_lm, _gpt2)
opt, opt_train = factories(causal_lm, _opt)
gpt_neo, gpt_neo_train = factories(causal_lm, _gpt_neo)
gptj, gptj_train = factories(causal_lm, _gptj)
xglm, xglm_train = factories(causal_lm, _xglm)
trocr, trocr_train = factories(causal_lm, _trocr)
