"""Hugging Face encoders from PyTorch's benchmark list (benchmarks/dynamo/huggingface_models_list.txt),
each from its transformers config class with the defaults as shipped (dropout included), shrunk
only in size: layers, width, heads, vocabulary.

Inference calls `model(input_ids)`. Training follows the benchmark: masked and causal LM heads
get `labels`, question-answering heads `start_positions` and `end_positions`; the loss the
model computes from them is differentiated."""
from __future__ import annotations

import torch
from transformers import (
    AlbertConfig,
    AlbertForMaskedLM,
    BertConfig,
    BertForMaskedLM,
    ConvBertConfig,
    ConvBertForMaskedLM,
    DebertaV2Config,
    DebertaV2ForMaskedLM,
    DistilBertConfig,
    DistilBertForMaskedLM,
    ElectraConfig,
    ElectraForQuestionAnswering,
    FNetConfig,
    FNetForMaskedLM,
    LayoutLMConfig,
    LayoutLMForMaskedLM,
    LongformerConfig,
    LongformerForMaskedLM,
    MegatronBertConfig,
    MegatronBertForQuestionAnswering,
    MobileBertConfig,
    MobileBertForMaskedLM,
    RobertaConfig,
    RobertaForQuestionAnswering,
    XLNetConfig,
    XLNetLMHeadModel,
)

from suite_common import BATCH, SEQ, Call, factories, mode, seeded, token_ids

VOCAB = 1024
# BERT-style configs: 2 layers of width 64
BERT_SIZE = dict(num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                 vocab_size=VOCAB)


def masked_lm(build, train: bool = False):
    model = mode(seeded(build), train)
    ids = token_ids(model.config.vocab_size)
    if train:
        return Call(model, ("input_ids", "labels"), "loss"), (ids, token_ids(model.config.vocab_size))
    return model, (ids,)


def question_answering(build, train: bool = False):
    model = mode(seeded(build), train)
    ids = token_ids(model.config.vocab_size)
    if train:
        start, end = torch.randint(0, SEQ, (BATCH,)), torch.randint(0, SEQ, (BATCH,))
        return Call(model, ("input_ids", "start_positions", "end_positions"), "loss"), (ids, start, end)
    return model, (ids,)


def _bert():  # BertForMaskedLM
    return BertForMaskedLM(BertConfig(**BERT_SIZE))


def _albert():  # AlbertForMaskedLM: factorized embeddings, one layer's weights shared by all
    return AlbertForMaskedLM(AlbertConfig(**BERT_SIZE, embedding_size=32))


def _distilbert():  # DistilBertForMaskedLM
    return DistilBertForMaskedLM(DistilBertConfig(n_layers=2, dim=64, hidden_dim=128, n_heads=4, vocab_size=VOCAB))


def _roberta():  # RobertaForQuestionAnswering
    return RobertaForQuestionAnswering(RobertaConfig(**BERT_SIZE))


def _electra():  # ElectraForQuestionAnswering
    return ElectraForQuestionAnswering(ElectraConfig(**BERT_SIZE, embedding_size=32))


def _megatron_bert():  # MegatronBertForQuestionAnswering
    return MegatronBertForQuestionAnswering(MegatronBertConfig(**BERT_SIZE))


def _deberta_v2():  # DebertaV2ForMaskedLM: disentangled relative-position attention
    return DebertaV2ForMaskedLM(DebertaV2Config(**BERT_SIZE))


def _mobilebert():  # MobileBertForMaskedLM: bottlenecked layers
    return MobileBertForMaskedLM(MobileBertConfig(**BERT_SIZE, embedding_size=32, intra_bottleneck_size=32,
                                                  true_hidden_size=32))


def _layoutlm():  # LayoutLMForMaskedLM (its 2-D position embeddings take all-zero boxes by default)
    return LayoutLMForMaskedLM(LayoutLMConfig(**BERT_SIZE))


def _convbert():  # YituTechConvBert: span-based dynamic convolution heads
    return ConvBertForMaskedLM(ConvBertConfig(**BERT_SIZE, embedding_size=64))


def _fnet():  # GoogleFnet: Fourier transforms instead of attention
    return FNetForMaskedLM(FNetConfig(num_hidden_layers=2, hidden_size=64, intermediate_size=128, vocab_size=VOCAB))


def _longformer():  # AllenaiLongformerBase: sliding-window attention (window shrunk with the sequence)
    return LongformerForMaskedLM(LongformerConfig(**BERT_SIZE, attention_window=16))


def _xlnet():  # XLNetLMHeadModel
    return XLNetLMHeadModel(XLNetConfig(n_layer=2, d_model=64, d_inner=128, n_head=4, d_head=16, vocab_size=VOCAB))


bert, bert_train = factories(masked_lm, _bert)
albert, albert_train = factories(masked_lm, _albert)
distilbert, distilbert_train = factories(masked_lm, _distilbert)
roberta, roberta_train = factories(question_answering, _roberta)
electra, electra_train = factories(question_answering, _electra)
megatron_bert, megatron_bert_train = factories(question_answering, _megatron_bert)
deberta_v2, deberta_v2_train = factories(masked_lm, _deberta_v2)
mobilebert, mobilebert_train = factories(masked_lm, _mobilebert)
layoutlm, layoutlm_train = factories(masked_lm, _layoutlm)
convbert, convbert_train = factories(masked_lm, _convbert)
fnet, fnet_train = factories(masked_lm, _fnet)
longformer, longformer_train = factories(masked_lm, _longformer)
xlnet, xlnet_train = factories(masked_lm, _xlnet)
