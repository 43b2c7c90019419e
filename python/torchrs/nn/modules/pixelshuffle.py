"""PixelShuffle, PixelUnshuffle, ChannelShuffle, CosineSimilarity, PairwiseDistance."""

from ... import _C
from .module import Module

_f = _C._torch_functions


class PixelShuffle(Module):
    """(N, C r^2, H, W) -> (N, C, H r, W r)."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return _f["pixel_shuffle"](input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(N, C, H r, W r) -> (N, C r^2, H, W)."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return _f["pixel_unshuffle"](input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return _f["channel_shuffle"](input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


class CosineSimilarity(Module):
    """x1 . x2 / max(|x1| |x2|, eps) along ``dim``."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        return _f["cosine_similarity"](x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """|x1 - x2 + eps|_p along the last dim."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        return _f["pairwise_distance"](x1, x2, self.norm, self.eps, self.keepdim)
