"""Models that make tensors on their input's device inside `forward`, every way a model
does (Hugging Face's DynamicCache makes `torch.tensor([], device=...)`; masks, position
ids, scales, index tensors...). Under virtual-cuda each of these is a device-making call
traced on fake cuda tensors: none may reach a CUDA runtime (tests/engine/devices/test_tensors_in_forward.py).
"""
import torch
from torch import nn


class Factories(nn.Module):
    """Factories told the input's device: tensor / as_tensor with data, empty data,
    ones / zeros / full / arange / eye / empty, random ones, *_like with a device."""

    def __init__(self, width=16):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        device, dtype = x.device, x.dtype
        n = x.shape[-2]
        empty = torch.tensor([], dtype=dtype, device=device)  # DynamicCache's first keys
        keys = torch.cat([empty.reshape(0, x.shape[-1]).expand(0, x.shape[-1]), x[0]], dim=0)
        scale = torch.tensor(0.5, device=device)
        weights = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=dtype, device=device)
        index = torch.as_tensor([0, 2, 1, 3], device=device)
        mask = torch.tril(torch.ones(n, n, dtype=torch.bool, device=device))
        bias = torch.full((n, n), float("-inf"), device=device).masked_fill(mask, 0.0)
        positions = torch.arange(n, device=device).to(dtype)
        eye = torch.eye(n, device=device, dtype=dtype)
        noise = torch.rand(x.shape, device=device) * 0
        zeros = torch.zeros_like(x, device=device)
        base = torch.empty(x.shape, device=device).fill_(1.0)
        h = self.proj(x) * scale + noise + zeros + base
        h = h[..., index] * weights.sum()
        attn = torch.softmax(h @ h.transpose(-1, -2) + bias + eye, dim=-1)
        return attn @ h + positions[:, None] + keys.sum()


class NewAndTo(nn.Module):
    """new_* from an input, and tensors made on the CPU then moved with .to(device)."""

    def __init__(self, width=16):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        ones = x.new_ones(x.shape[-1])
        zeros = x.new_zeros((2, x.shape[-1]))
        full = x.new_full((x.shape[-1],), 2.0)
        made = x.new_tensor([0.25] * x.shape[-1])
        empty = x.new_empty(x.shape).zero_()
        table = torch.tensor([[1.0], [2.0]]).to(x.device)  # made on the CPU, moved
        cast = torch.arange(x.shape[-1]).to(device=x.device, dtype=x.dtype)
        scalar = torch.tensor(3.0).to(x)  # .to(other tensor)
        # factories on a CPU constant told the input's device
        like = torch.zeros_like(torch.tensor([1.0, 2.0]), device=x.device)
        grown = torch.tensor([1.0, 2.0]).new_ones(x.shape[-1], device=x.device)
        h = self.proj(x + empty) * ones + full + made + cast / scalar + grown
        return h + zeros.sum() + table.sum() + like.sum()


class CacheLike(nn.Module):
    """A key/value cache made lazily inside forward, as transformers' DynamicCache does."""

    def __init__(self, width=16):
        super().__init__()
        self.k = nn.Linear(width, width)
        self.v = nn.Linear(width, width)

    def forward(self, x):
        keys = torch.tensor([], dtype=x.dtype, device=x.device)
        values = torch.tensor([], dtype=x.dtype, device=x.device)
        keys = torch.cat([keys, self.k(x)], dim=-2) if keys.numel() else self.k(x)
        values = torch.cat([values.view(*x.shape[:-2], 0, x.shape[-1]), self.v(x)], dim=-2)
        return torch.softmax(x @ keys.transpose(-1, -2), dim=-1) @ values


class SinusoidalPositions(nn.Module):
    """XGLM's and M2M100's sinusoidal positions: a table buffer read with `index_select`,
    whose decomposition (`torch._refs.index_select`) indexes the table from Python."""

    def __init__(self, positions=32, width=16):
        super().__init__()
        half = width // 2
        scale = torch.exp(torch.arange(half, dtype=torch.float) * -(9.21 / (half - 1)))
        angles = torch.arange(positions, dtype=torch.float)[:, None] * scale[None, :]
        self.register_buffer("table", torch.cat([torch.sin(angles), torch.cos(angles)], dim=1), persistent=False)
        self.proj = nn.Linear(width, width)

    def forward(self, ids):
        positions = torch.arange(ids.shape[-1], device=ids.device).expand_as(ids) + 1
        return self.proj(self.table.index_select(0, positions.reshape(-1)).view(*ids.shape, -1))


class OverlappingWindows(nn.Module):
    """Longformer's sliding chunks: overlapping windows made with `as_strided`, whose backward
    (a C++ autograd formula) makes its index tensor from the gradient's options."""

    def __init__(self, width=4):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        padded = torch.nn.functional.pad(self.proj(x), (0, 0, 2, 2))
        s = padded.stride()
        return padded.as_strided((x.shape[0], 4, 6, x.shape[2]), (s[0], 2 * s[1], s[1], s[2])) * 2


class FourierMixing(nn.Module):
    """FNet's token mixing, `torch.fft.fftn(x, dim=(1, 2)).real`: the real input is made complex
    with a `_to_copy`, whose backward (a C++ formula) converts the gradient back with
    `grad.to(self.options())`. A GPU's options say cuda and float32: nothing is copied."""

    def __init__(self, width=16):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return self.proj(torch.fft.fftn(self.proj(x), dim=(1, 2)).real)


def make_factories():
    torch.manual_seed(0)
    return Factories(), (torch.randn(2, 4, 16),)


def make_new_and_to():
    torch.manual_seed(0)
    return NewAndTo(), (torch.randn(2, 4, 16),)


def make_cache_like():
    torch.manual_seed(0)
    return CacheLike(), (torch.randn(2, 4, 16),)


def make_sinusoidal_positions():
    torch.manual_seed(0)
    return SinusoidalPositions(), (torch.randint(0, 30, (2, 8)),)


def make_fourier_mixing():
    torch.manual_seed(0)
    return FourierMixing(), (torch.randn(2, 8, 16),)


def make_overlapping_windows():
    torch.manual_seed(0)
    return OverlappingWindows(), (torch.randn(2, 8, 4),)
