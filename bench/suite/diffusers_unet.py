"""The diffusion UNet of Stable Diffusion: diffusers' `UNet2DConditionModel` from its config with
the defaults as shipped (ResNet blocks with GroupNorm and SiLU, cross-attention transformer
blocks, a cross-attention mid block, sinusoidal timestep embedding), shrunk only in size:
channels, layers per block, cross-attention width, latent size, and two resolution levels of
the shipped four (one with cross-attention, one without, as the shipped config's first and
last; diffusers' own tests use this tiny UNet).

Inference calls `unet(latents, timestep, text_embeddings)`, one denoising step; training calls it
in train mode and differentiates the sum of the predicted noise."""
from __future__ import annotations

import os

os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")

import torch
from diffusers import UNet2DConditionModel

from suite_common import BATCH, factories, mode, seeded

LATENT, TEXT_TOKENS, CROSS_ATTENTION_DIM = 16, 8, 32


def denoiser(build, train: bool = False):
    model = mode(seeded(build), train)
    latents = torch.randn(BATCH, model.config.in_channels, LATENT, LATENT)
    timestep = torch.tensor([10, 500])
    text = torch.randn(BATCH, TEXT_TOKENS, CROSS_ATTENTION_DIM)
    return model, (latents, timestep, text)


def _unet():  # shipped: block_out_channels (320, 640, 1280, 1280), 2 layers per block, cross-attention 1280
    return UNet2DConditionModel(block_out_channels=(32, 64), layers_per_block=1,
                                down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
                                cross_attention_dim=CROSS_ATTENTION_DIM, sample_size=LATENT)


unet, unet_train = factories(denoiser, _unet)
