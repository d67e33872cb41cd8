"""Hugging Face encoder-decoder models from PyTorch's benchmark list
(benchmarks/dynamo/huggingface_models_list.txt), each from its transformers config class with
the defaults as shipped (`use_cache` included: the decoder builds its self- and cross-attention
caches in forward), shrunk only in size: layers, width, heads, vocabulary, audio length.

Inputs follow the benchmark: `input_ids` and `decoder_input_ids` (the same ids), and for
training `labels`, whose loss is differentiated. Whisper (openai/whisper-tiny) takes log-mel
`input_features` instead of `input_ids`."""
from __future__ import annotations

import torch
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    BlenderbotConfig,
    BlenderbotForConditionalGeneration,
    BlenderbotSmallConfig,
    BlenderbotSmallForConditionalGeneration,
    M2M100Config,
    M2M100ForConditionalGeneration,
    MBartConfig,
    MBartForConditionalGeneration,
    MT5Config,
    MT5ForConditionalGeneration,
    PegasusConfig,
    PegasusForConditionalGeneration,
    PLBartConfig,
    PLBartForConditionalGeneration,
    T5Config,
    T5ForConditionalGeneration,
    WhisperConfig,
    WhisperForConditionalGeneration,
)

from suite_common import BATCH, Call, factories, mode, seeded, token_ids

VOCAB = 1024
# BART-style configs: 2 encoder and 2 decoder layers of width 64
BART_SIZE = dict(encoder_layers=2, decoder_layers=2, d_model=64, encoder_ffn_dim=128, decoder_ffn_dim=128,
                 encoder_attention_heads=4, decoder_attention_heads=4, vocab_size=VOCAB)
T5_SIZE = dict(num_layers=2, num_decoder_layers=2, d_model=64, d_ff=128, d_kv=16, num_heads=4, vocab_size=VOCAB)


def seq2seq(build, train: bool = False):
    model = mode(seeded(build), train)
    ids = token_ids(model.config.vocab_size)
    if train:
        labels = token_ids(model.config.vocab_size - 1)
        return Call(model, ("input_ids", "decoder_input_ids", "labels"), "loss"), (ids, ids.clone(), labels)
    return Call(model, ("input_ids", "decoder_input_ids")), (ids, ids.clone())


def speech_seq2seq(build, train: bool = False):
    """Whisper: 80 log-mel bins over 2 x max_source_positions frames, and decoder ids."""
    model = mode(seeded(build), train)
    config = model.config
    features = torch.randn(BATCH, config.num_mel_bins, 2 * config.max_source_positions)
    ids = token_ids(config.vocab_size)
    if train:
        return (Call(model, ("input_features", "decoder_input_ids", "labels"), "loss"),
                (features, ids, token_ids(config.vocab_size)))
    return Call(model, ("input_features", "decoder_input_ids")), (features, ids)


def _t5():  # T5ForConditionalGeneration (and T5Small)
    return T5ForConditionalGeneration(T5Config(**T5_SIZE))


def _mt5():  # MT5ForConditionalGeneration: gated GELU feed-forward
    return MT5ForConditionalGeneration(MT5Config(**T5_SIZE))


def _bart():
    return BartForConditionalGeneration(BartConfig(**BART_SIZE))


def _mbart():
    return MBartForConditionalGeneration(MBartConfig(**BART_SIZE))


def _plbart():
    return PLBartForConditionalGeneration(PLBartConfig(**BART_SIZE))


def _pegasus():
    return PegasusForConditionalGeneration(PegasusConfig(**BART_SIZE))


def _blenderbot():
    return BlenderbotForConditionalGeneration(BlenderbotConfig(**BART_SIZE))


def _blenderbot_small():
    return BlenderbotSmallForConditionalGeneration(BlenderbotSmallConfig(**BART_SIZE))


def _m2m100():
    return M2M100ForConditionalGeneration(M2M100Config(**BART_SIZE))


def _whisper():  # openai/whisper-tiny; its vocabulary kept (the special token ids are 50256 and up)
    return WhisperForConditionalGeneration(WhisperConfig(
        encoder_layers=2, decoder_layers=2, d_model=64, encoder_ffn_dim=128, decoder_ffn_dim=128,
        encoder_attention_heads=4, decoder_attention_heads=4, max_source_positions=16))


t5, t5_train = factories(seq2seq, _t5)
mt5, mt5_train = factories(seq2seq, _mt5)
bart, bart_train = factories(seq2seq, _bart)
mbart, mbart_train = factories(seq2seq, _mbart)
plbart, plbart_train = factories(seq2seq, _plbart)
pegasus, pegasus_train = factories(seq2seq, _pegasus)
blenderbot, blenderbot_train = factories(seq2seq, _blenderbot)
blenderbot_small, blenderbot_small_train = factories(seq2seq, _blenderbot_small)
m2m100, m2m100_train = factories(seq2seq, _m2m100)
whisper, whisper_train = factories(speech_seq2seq, _whisper)
