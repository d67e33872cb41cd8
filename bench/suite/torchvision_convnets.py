"""torchvision classifiers from PyTorch's TorchBench list (benchmarks/dynamo/torchbench_models_list.txt),
built with torchvision's builders (`weights=None`) and their defaults as shipped, shrunk only in
size: image size, and blocks per stage where the builder's class takes them (the ResNets,
DenseNet and ShuffleNet are built from torchvision's class with fewer blocks).

Inference calls `model(images)` in eval mode; training calls it in train mode and
differentiates the sum of the logits."""
from __future__ import annotations

import vision_libs  # noqa: F401  (makes torchvision importable where torch is a CPU build)

# isort: split
from torchvision import models
from torchvision.models.resnet import BasicBlock, Bottleneck

from suite_common import factories, images, mode, seeded


def classifier(build, train: bool = False):
    return mode(seeded(build), train), (images(),)


def _resnet18():  # resnet18 with one BasicBlock per stage (shipped: 2)
    return models.ResNet(BasicBlock, [1, 1, 1, 1])


def _resnet50():  # resnet50 with one Bottleneck per stage (shipped: 3, 4, 6, 3)
    return models.ResNet(Bottleneck, [1, 1, 1, 1])


def _resnext50():  # resnext50_32x4d: grouped 3x3 convolutions, one block per stage
    return models.ResNet(Bottleneck, [1, 1, 1, 1], groups=32, width_per_group=4)


def _densenet121():  # densenet121 with two layers per dense block (shipped: 6, 12, 24, 16)
    return models.DenseNet(growth_rate=32, block_config=(2, 2, 2, 2), num_init_features=64)


def _shufflenet_v2():  # shufflenet_v2_x1_0 with one unit per stage after the first (shipped: 4, 8, 4)
    return models.ShuffleNetV2([1, 1, 1], [24, 116, 232, 464, 1024])


def _mobilenet_v2():
    return models.mobilenet_v2(weights=None)


def _mnasnet():  # mnasnet1_0
    return models.mnasnet1_0(weights=None)


def _squeezenet():  # squeezenet1_1
    return models.squeezenet1_1(weights=None)


def _alexnet():
    return models.alexnet(weights=None)


def _vgg16():
    return models.vgg16(weights=None)


resnet18, resnet18_train = factories(classifier, _resnet18)
resnet50, resnet50_train = factories(classifier, _resnet50)
resnext50, resnext50_train = factories(classifier, _resnext50)
densenet121, densenet121_train = factories(classifier, _densenet121)
shufflenet_v2, shufflenet_v2_train = factories(classifier, _shufflenet_v2)
mobilenet_v2, mobilenet_v2_train = factories(classifier, _mobilenet_v2)
mnasnet, mnasnet_train = factories(classifier, _mnasnet)
squeezenet, squeezenet_train = factories(classifier, _squeezenet)
alexnet, alexnet_train = factories(classifier, _alexnet)
vgg16, vgg16_train = factories(classifier, _vgg16)
