"""torch.nn (so far: ``functional``)."""

from . import functional  # noqa: F401
