"""The model suite: architectures from PyTorch's own compile benchmarks (benchmarks/dynamo/ in
pytorch/pytorch: its Hugging Face, TIMM and TorchBench lists), plus a diffusion UNet and
mixture-of-experts decoders, each built offline from its library's config with the defaults as
shipped and shrunk only in size. `registry.MODELS` lists them; bench/suite.py records them.

Each builder module here is also a kernelscope target file: `kernelscope compile
bench/suite/hf_decoders.py:llama` records one model by hand (see docs/model-suite.md).
"""
