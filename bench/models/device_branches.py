"""Hugging Face decoders whose code decides by device, for comparing virtual-cuda with a GPU
(bench/gpu_check.py --device-branches): Qwen2-MoE (Qwen/Qwen1.5-MoE-A2.7B: transformers'
grouped MoE experts count tokens per expert with `histc(expert_ids.int())` on cuda and
`.float()` on the CPU, plus a shared expert) and Falcon (tiiuae/falcon-7b: multi-query
attention, parallel attention and MLP, tied embeddings). Built from their config classes
with the defaults as shipped, shrunk only in size, as the suite's models are (bench/suite/)."""
import torch
from transformers import FalconConfig, FalconForCausalLM, Qwen2MoeConfig, Qwen2MoeForCausalLM

VOCAB, BATCH, SEQ = 1024, 2, 32


def _qwen2_moe():
    return Qwen2MoeForCausalLM(Qwen2MoeConfig(
        num_hidden_layers=2, hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
        shared_expert_intermediate_size=64, num_experts=8, num_attention_heads=4, num_key_value_heads=2,
        vocab_size=VOCAB))


def _falcon():
    return FalconForCausalLM(FalconConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                          vocab_size=VOCAB))


class _Loss(torch.nn.Module):
    """Training as PyTorch's own benchmarks train a causal LM: the model's loss from `labels`."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, labels):
        return self.model(input_ids=input_ids, labels=labels).loss


def _make(build, train: bool):
    torch.manual_seed(0)
    model = build().train(train)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    if train:
        return _Loss(model), (ids, torch.randint(0, VOCAB, (BATCH, SEQ)))
    return model, (ids,)


def make_qwen2_moe():
    return _make(_qwen2_moe, False)


def make_qwen2_moe_train():
    return _make(_qwen2_moe, True)


def make_falcon():
    return _make(_falcon, False)


def make_falcon_train():
    return _make(_falcon, True)
