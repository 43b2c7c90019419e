"""Flatten and Unflatten."""

from .module import Module


class Flatten(Module):
    """Flattens dims ``start_dim`` to ``end_dim`` into one."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dim ``dim`` into ``unflattened_size``."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, int):
            if not isinstance(unflattened_size, (tuple, list)):
                raise TypeError("unflattened_size must be tuple of ints, but found type "
                                f"{type(unflattened_size).__name__}")
            for idx, elem in enumerate(unflattened_size):
                if not isinstance(elem, int):
                    raise TypeError(f"unflattened_size must be tuple of ints, but found element of type "
                                    f"{type(elem).__name__} at pos {idx}")
        else:
            raise TypeError(f"invalid argument type for dim parameter: {type(dim).__name__}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, list(self.unflattened_size))

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
