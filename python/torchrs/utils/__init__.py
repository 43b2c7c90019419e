"""torch.utils (so far: ``data``)."""

from . import data  # noqa: F401
