"""timm models from PyTorch's benchmark list (benchmarks/dynamo/timm_models_list.txt), built with
`timm.create_model(name, pretrained=False)` and the defaults as shipped (drop rates, norm layers,
activations), shrunk only in size: blocks per stage, image size. Where timm's factory fixes the
depth, the model is built from timm's own class and its registered config with fewer blocks.

Inference calls `model(images)` in eval mode; training calls it in train mode and
differentiates the sum of the logits (the benchmark's `reduce_to_scalar_loss` is their mean)."""
from __future__ import annotations

from dataclasses import replace

import vision_libs  # noqa: F401  (makes torchvision, which timm imports, importable)

# isort: split
import timm
from timm.models import byobnet, nfnet
from timm.models import mobilevit as timm_mobilevit

from suite_common import factories, images, mode, seeded

# ViT-style models: 2 blocks at their shipped width, on a 64 x 64 image. Each builder returns
# (model, the image size it takes).
VIT_SIZE = dict(depth=2, img_size=64)


def classifier(build, train: bool = False):
    """build() -> (model, image size)."""
    model, size = seeded(build)
    return mode(model, train), (images(size=size),)


def _blocks(cfg, depth: int = 1):
    """A byobnet config with `depth` blocks in every stage (nested stages too)."""
    def shrink(block):
        if isinstance(block, tuple):
            return tuple(shrink(b) for b in block)
        kwargs = dict(block.block_kwargs or {})
        if "transformer_depth" in kwargs:
            kwargs["transformer_depth"] = depth
        return replace(block, d=depth, block_kwargs=kwargs or block.block_kwargs)
    return replace(cfg, blocks=tuple(shrink(b) for b in cfg.blocks))


def _beit():  # beit_base_patch16_224
    return timm.create_model("beit_base_patch16_224", pretrained=False, **VIT_SIZE), 64


def _deit():  # deit_base_distilled_patch16_224: class and distillation tokens
    return timm.create_model("deit_base_distilled_patch16_224", pretrained=False, **VIT_SIZE), 64


def _vit_dinov2():  # vit_base_patch14_dinov2.lvd142m: layer scale, 14-pixel patches
    return timm.create_model("vit_base_patch14_dinov2", pretrained=False, depth=2, img_size=56), 56


def _vit_siglip():  # vit_base_patch16_siglip_256: attention-pooling head
    return timm.create_model("vit_base_patch16_siglip_256", pretrained=False, **VIT_SIZE), 64


def _swin():  # swin_base_patch4_window7_224: shifted windows of 7 x 7 patches
    return timm.create_model("swin_base_patch4_window7_224", pretrained=False, depths=(1, 1, 1, 1)), 224


def _visformer():  # visformer_small: convolutional stages, then attention stages
    return timm.create_model("visformer_small", pretrained=False, depth=3, img_size=64), 64


def _mobilevit():  # mobilevit_s: inverted residuals and transformer blocks over unfolded patches
    return byobnet.ByobNet(_blocks(timm_mobilevit.model_cfgs["mobilevit_s"])), 64


def _convnextv2():  # convnextv2_nano: global response normalization
    return timm.create_model("convnextv2_nano", pretrained=False, depths=(1, 1, 1, 1)), 64


def _nfnet():  # dm_nfnet_f0: normalization-free, scaled weight standardization
    return nfnet.NormFreeNet(replace(nfnet.model_cfgs["dm_nfnet_f0"], depths=(1, 1, 1, 1))), 64


def _repvgg():  # repvgg_a2: re-parameterizable 3x3 + 1x1 + identity branches
    return byobnet.ByobNet(_blocks(byobnet.model_cfgs["repvgg_a2"])), 64


def _ghostnet():  # ghostnet_100: ghost modules (cheap linear features), squeeze-excite
    return timm.create_model("ghostnet_100", pretrained=False), 64


def _inception_v3():  # inception_v3 (and adv_inception_v3: the same network); its stem needs >= 75 pixels
    return timm.create_model("inception_v3", pretrained=False), 96


def _mobilenetv3():  # mobilenetv3_large_100: hard-swish, squeeze-excite
    return timm.create_model("mobilenetv3_large_100", pretrained=False, depth_multiplier=0.25), 64


def _efficientnet():  # tf_efficientnet_b0: TensorFlow "same" padding, MBConv blocks
    return timm.create_model("tf_efficientnet_b0", pretrained=False), 64


beit, beit_train = factories(classifier, _beit)
deit, deit_train = factories(classifier, _deit)
vit_dinov2, vit_dinov2_train = factories(classifier, _vit_dinov2)
vit_siglip, vit_siglip_train = factories(classifier, _vit_siglip)
swin, swin_train = factories(classifier, _swin)
visformer, visformer_train = factories(classifier, _visformer)
mobilevit, mobilevit_train = factories(classifier, _mobilevit)
convnextv2, convnextv2_train = factories(classifier, _convnextv2)
nfnet_f0, nfnet_f0_train = factories(classifier, _nfnet)
repvgg, repvgg_train = factories(classifier, _repvgg)
ghostnet, ghostnet_train = factories(classifier, _ghostnet)
inception_v3, inception_v3_train = factories(classifier, _inception_v3)
mobilenetv3, mobilenetv3_train = factories(classifier, _mobilenetv3)
efficientnet, efficientnet_train = factories(classifier, _efficientnet)
