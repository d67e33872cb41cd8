"""BERT (Hugging Face transformers) encoder from a small config with random weights.

`make` is for inference (eval mode); `make_train` keeps dropout on (train mode).
An attention mask with padding in the second sequence exercises masked attention.
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import transformers

BATCH, SEQ, VOCAB = 2, 32, 1000


def _model():
    torch.manual_seed(0)
    config = transformers.BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
                                     intermediate_size=256, vocab_size=VOCAB, max_position_embeddings=128)
    return transformers.BertModel(config)


def _inputs():
    input_ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    attention_mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    attention_mask[1, SEQ // 2:] = 0
    return input_ids, attention_mask


def make():
    return _model().eval(), _inputs()


def make_train():
    return _model().train(), _inputs()
