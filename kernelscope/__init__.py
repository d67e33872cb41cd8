"""kernelscope: line-level provenance for torch.compile."""

__version__ = "0.1.0"
