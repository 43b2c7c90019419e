"""``torch.optim.Optimizer``: parameter groups, per-parameter state, and the state dict."""

import warnings
from collections import defaultdict
from copy import deepcopy
from itertools import chain

from .. import _C
from ..autograd import enable_grad

Tensor = _C.Tensor


class _RequiredParameter:
    """The default of an option every parameter group must set (``lr`` of old SGD)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj):
    from ..nn.modules.module import _typename as t

    return t(obj)


class Optimizer:
    """Base class of optimizers. ``params`` is an iterable of tensors, of ``(name, tensor)``
    pairs, or of dicts (parameter groups, each with its own options); ``defaults`` fill the
    options a group leaves out."""

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {_typename(params)}")
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += "\n"
            s += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    def add_param_group(self, param_group):
        """Adds a group of parameters (a dict with ``"params"`` and options) to optimize."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        # Named parameters (``model.named_parameters()``): names go to "param_names".
        if param_group["params"] and all(isinstance(p, tuple) and len(p) == 2 for p in param_group["params"]):
            if any(not isinstance(p[0], str) for p in param_group["params"]):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = [name for name, _ in param_group["params"]]
            param_group["params"] = [p for _, p in param_group["params"]]
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will cause "
                          "an error; see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)
        param_set = set()
        for group in self.param_groups:
            param_set.update(set(group["params"]))
        if not param_set.isdisjoint(set(param_group["params"])):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Resets the gradients of all optimized tensors: to None, or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        g = p.grad
                        if g.grad_fn is not None:
                            g = g.detach()
                            p.grad = g
                        else:
                            g.requires_grad_(False)
                        g.zero_()

    def step(self, closure=None):
        raise NotImplementedError

    @staticmethod
    def _closure_loss(closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def state_dict(self):
        """``{"state": {index: state}, "param_groups": [options with "params": [indices]]}``:
        parameters numbered in the order of the groups."""
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": packed_state, "param_groups": param_groups}

    @staticmethod
    def _cast(param, value, key=None):
        """A saved state value for ``param``: tensors on its device, floating ones in its dtype
        (``step`` kept as saved)."""
        if isinstance(value, Tensor):
            if key == "step":
                return value
            if param.is_floating_point():
                return value.to(dtype=param.dtype, device=param.device)
            return value.to(device=param.device)
        if isinstance(value, dict):
            return {k: Optimizer._cast(param, v, key=k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(Optimizer._cast(param, v, key=key) for v in value)
        return value

    def load_state_dict(self, state_dict):
        """Loads a ``state_dict()`` of an optimizer over parameters of the same sizes, in the
        same group structure."""
        state_dict = state_dict.copy()
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of optimizer's "
                             "group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = self._cast(param, v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
