"""torch.nn: ``Module``, ``Parameter``, the layers, ``functional``, ``init`` and ``utils``."""

from . import functional  # noqa: F401
from . import init  # noqa: F401
from .parameter import Buffer, Parameter  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from . import utils  # noqa: F401
