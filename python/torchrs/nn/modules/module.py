"""``torch.nn.Module``: the base class of layers and models.

Parameters, buffers and submodules assigned as attributes are registered in ``_parameters``,
``_buffers`` and ``_modules``, which ``state_dict``, ``parameters``, ``to`` and ``__repr__``
walk, as in PyTorch.
"""

import itertools
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ... import _C
from ...autograd import Function, no_grad
from ..parameter import Buffer, Parameter

Tensor = _C.Tensor

__all__ = ["Module", "RemovableHandle", "register_module_forward_pre_hook", "register_module_forward_hook"]

_TENSOR_TYPE_NAMES = {
    "torch.float32": "FloatTensor", "torch.float64": "DoubleTensor", "torch.float16": "HalfTensor",
    "torch.bfloat16": "BFloat16Tensor", "torch.int64": "LongTensor", "torch.int32": "IntTensor",
    "torch.int16": "ShortTensor", "torch.int8": "CharTensor", "torch.uint8": "ByteTensor",
    "torch.bool": "BoolTensor", "torch.complex64": "ComplexFloatTensor", "torch.complex128": "ComplexDoubleTensor",
}


def _typename(obj):
    """``torch.typename``: ``torch.FloatTensor`` for tensors, the qualified class name otherwise."""
    if isinstance(obj, Tensor) and type(obj) is Tensor:
        name = _TENSOR_TYPE_NAMES.get(str(obj.dtype), "Tensor")
        return f"torch.{'cuda.' if obj.is_cuda else ''}{name}"
    module = getattr(type(obj), "__module__", "") or ""
    qualname = type(obj).__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


class RemovableHandle:
    """The handle a ``register_*_hook`` call returns; ``remove()`` unregisters the hook."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        extra = [] if extra_dict is None else (extra_dict if isinstance(extra_dict, list) else [extra_dict])
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra)

    def remove(self):
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the missing and the unexpected keys."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


# Hooks every module runs (``register_module_forward_pre_hook`` / ``..._forward_hook``).
_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()


def register_module_forward_pre_hook(hook):
    """A forward pre-hook run by every module, before the module's own."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook):
    """A forward hook run by every module, before the module's own."""
    handle = RemovableHandle(_global_forward_hooks)
    _global_forward_hooks[handle.id] = hook
    return handle


class _HookIdentity(Function):
    """The identity, whose backward hands the incoming gradients to ``callback`` and passes on
    what it returns: how module backward hooks see the gradients of a module's inputs and
    outputs."""

    @staticmethod
    def forward(ctx, callback, *tensors):
        ctx.callback = callback
        return tuple(t.view_as(t) for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.callback(grads))


class _BackwardHook:
    """One call's backward hooks: the tensor inputs and outputs that require grad go through
    ``_HookIdentity``; the outputs' gradients go to the backward pre-hooks, then the inputs'
    gradients (with those of the outputs) to the full backward hooks."""

    def __init__(self, module, hooks, pre_hooks):
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_positions = []
        self.inputs_wrapped = False

    @staticmethod
    def _wrap(values, callback):
        positions = [i for i, v in enumerate(values) if isinstance(v, Tensor) and v.requires_grad]
        if not positions or not _C.is_grad_enabled():
            return values, []
        wrapped = _HookIdentity.apply(callback, *[values[i] for i in positions])
        values = list(values)
        for i, w in zip(positions, wrapped):
            values[i] = w
        return tuple(values), positions

    def setup_input_hook(self, args):
        self.n_inputs = len(args)
        args, self.input_positions = self._wrap(args, self._on_input_grads)
        self.inputs_wrapped = bool(self.input_positions)
        return args

    def setup_output_hook(self, result):
        single = isinstance(result, Tensor)
        if not single and not isinstance(result, tuple):
            return result
        outputs = (result,) if single else result
        self.n_outputs = len(outputs)
        outputs, self.output_positions = self._wrap(outputs, self._on_output_grads)
        return outputs[0] if single else type(result)(outputs) if type(result) is tuple else type(result)(*outputs)

    @staticmethod
    def _spread(grads, positions, n):
        full = [None] * n
        for i, g in zip(positions, grads):
            full[i] = g
        return tuple(full)

    def _on_output_grads(self, grads):
        grad_output = self._spread(grads, self.output_positions, self.n_outputs)
        for hook in self.pre_hooks:
            res = hook(self.module, grad_output)
            if res is not None:
                res = res if isinstance(res, tuple) else (res,)
                if len(res) != len(grad_output):
                    raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got {len(res)}, "
                                       f"but expected {len(grad_output)}")
                grad_output = res
        self.grad_outputs = grad_output
        if not self.inputs_wrapped:
            # No input requires grad: the hooks run now, with no input gradients.
            grad_input = (None,) * self.n_inputs
            for hook in self.hooks:
                res = hook(self.module, grad_input, self.grad_outputs)
                if res is not None and not all(r is None for r in res):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return [grad_output[i] for i in self.output_positions]

    def _on_input_grads(self, grads):
        grad_input = self._spread(grads, self.input_positions, self.n_inputs)
        for hook in self.hooks:
            res = hook(self.module, grad_input, self.grad_outputs)
            if res is not None:
                res = res if isinstance(res, tuple) else (res,)
                if len(res) != len(grad_input):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(res)}, but "
                                       f"expected {len(grad_input)}")
                grad_input = res
        self.grad_outputs = None
        return [grad_input[i] for i in self.input_positions]


def _addindent(s, num_spaces):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(num_spaces * " " + line for line in lines)


def _forward_unimplemented(self, *input):
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


class Module:
    """Base class of all neural network modules; subclasses call ``super().__init__()`` and
    define ``forward``."""

    dump_patches = False
    _version = 1
    call_super_init = False

    forward = _forward_unimplemented

    def __init__(self, *args, **kwargs):
        if not self.call_super_init and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if not self.call_super_init and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} "
                            "were given")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = {}
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = OrderedDict()
        d["_forward_hooks_always_called"] = OrderedDict()
        d["_backward_hooks"] = OrderedDict()
        d["_backward_pre_hooks"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    # ---- registration -------------------------------------------------------------------------

    def register_buffer(self, name, tensor, persistent=True):
        """Adds a buffer: state that is not a parameter (``running_mean``), saved in the state
        dict unless ``persistent`` is False."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
            tensor = tensor.data
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Adds a parameter (a ``Parameter`` or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created "
                             f"explicitly. To express '{name}' as a function of another Tensor, compute the value in "
                             "the forward() method.")
        self._parameters[name] = param

    def add_module(self, name, module):
        """Adds a child module under ``name`` (also reachable as an attribute)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        """The submodule at a dotted path (``"net.0"``); ``""`` is the module itself."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(mod, name)

    # ---- attributes ---------------------------------------------------------------------------

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                    "(torch.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                        "(torch.Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    remove_from(self.__dict__, self._parameters, self._modules)
                    self.register_buffer(name, value, persistent)
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self)) + list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)

    # ---- calling ------------------------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        if not (self._forward_hooks or self._forward_pre_hooks or _global_forward_hooks
                or _global_forward_pre_hooks or self._backward_hooks or self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        for hook_id, hook in itertools.chain(_global_forward_pre_hooks.items(), self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                res = hook(self, args, kwargs)
                if res is not None:
                    if isinstance(res, tuple) and len(res) == 2:
                        args, kwargs = res
                    else:
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {res}.")
            else:
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        bw_hook = None
        if self._backward_hooks or self._backward_pre_hooks:
            bw_hook = _BackwardHook(self, list(self._backward_hooks.values()),
                                    list(self._backward_pre_hooks.values()))
            args = bw_hook.setup_input_hook(args)
        result = self.forward(*args, **kwargs)
        for hook_id, hook in itertools.chain(_global_forward_hooks.items(), self._forward_hooks.items()):
            if hook_id in self._forward_hooks_with_kwargs:
                res = hook(self, args, kwargs, result)
            else:
                res = hook(self, args, result)
            if res is not None:
                result = res
        if bw_hook is not None:
            result = bw_hook.setup_output_hook(result)
        return result

    _call_impl = __call__

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` (or ``hook(module, args, kwargs)`` with ``with_kwargs``) runs
        before ``forward``; what it returns, if not None, replaces the arguments."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(module, args, output)`` (or ``hook(module, args, kwargs, output)``) runs after
        ``forward``; what it returns, if not None, replaces the output."""
        handle = RemovableHandle(self._forward_hooks,
                                 extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` runs when the gradients with respect to the
        module's positional tensor inputs are computed; what it returns, if not None, replaces
        ``grad_input``."""
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` runs when the gradients with respect to the module's
        outputs are computed; what it returns, if not None, replaces ``grad_output``."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    # ---- iteration ----------------------------------------------------------------------------

    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or (remove_duplicate and v in memo):
                    continue
                if remove_duplicate:
                    memo.add(v)
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse=True):
        """The parameters of this module and, with ``recurse``, of its submodules."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """``(dotted name, parameter)`` pairs; a parameter shared by two modules comes once."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """This module and every submodule, depth first, with dotted names (``""`` for self)."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            submodule_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    # ---- state dict ---------------------------------------------------------------------------

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An ``OrderedDict`` of parameters and persistent buffers under dotted names
        (``"fc1.weight"``), detached unless ``keep_vars``."""
        if args:  # PyTorch's deprecated positional form (destination, prefix, keep_vars).
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                destination = result
        return destination

    def get_extra_state(self):
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        persistent_buffers = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent_buffers.items())
                       if v is not None}
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                                  f"object from checkpoint but received {type(input_param)}")
                continue
            if input_param.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {input_param.shape} from "
                                  f"checkpoint, the shape in current model is {param.shape}.")
                continue
            try:
                with no_grad():
                    param.copy_(input_param)
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{param.size()} and whose dimensions in the checkpoint are {input_param.size()}, "
                                  f"an exception occurred : {ex.args}.")
        extra_state_key = prefix + "_extra_state"
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and extra_state_key in state_dict:
            unexpected_keys.append(extra_state_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copies parameters and buffers from ``state_dict`` into this module. Returns
        ``(missing_keys, unexpected_keys)``; with ``strict`` either being non-empty, or a
        shape mismatch, raises ``RuntimeError``."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        if assign:
            raise NotImplementedError("load_state_dict(assign=True) is not supported")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys,
                                         unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                    load(child, child_state, child_prefix)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                hook(module, incompatible)

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    def register_state_dict_post_hook(self, hook):
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_post_hook(self, hook):
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    # ---- conversion ---------------------------------------------------------------------------

    def _apply(self, fn, recurse=True):
        """Applies ``fn`` to every parameter, gradient and buffer (``to``, ``float``, ...).

        A conversion that changes nothing keeps the objects. Otherwise PyTorch swaps the
        parameter's data in place (``param.data = fn(param)``); torchrs's Tensor has no
        ``.data`` setter yet, so the module gets a new ``Parameter`` of the same class holding
        the converted tensor, with the old one's attributes and converted gradient (PyTorch's
        behaviour under ``torch.__future__.set_overwrite_module_params_on_conversion(True)``).
        """
        if recurse:
            for module in self.children():
                module._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                applied = fn(param)
            grad = param.grad
            if applied is param:
                out = param
            else:
                out = Tensor._make_subclass(type(param), applied, param.requires_grad)
                out.__dict__.update(param.__dict__)
                self._parameters[key] = out
            if grad is not None:
                with no_grad():
                    grad_applied = fn(grad)
                if grad_applied is not grad or out is not param:
                    out.grad = grad_applied.requires_grad_(grad.requires_grad)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn):
        """Calls ``fn`` on every submodule (children first) and then on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``: moves and casts
        parameters and buffers; only floating point ones change dtype."""
        device, dtype, non_blocking = _parse_to(*args, **kwargs)
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")

        def convert(t):
            floating = t.is_floating_point() or t.is_complex()
            kw = {}
            if device is not None:
                kw["device"] = device
            if dtype is not None and floating:
                kw["dtype"] = dtype
            if not kw:
                return t
            return t.to(non_blocking=non_blocking, **kw)

        return self._apply(convert)

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type):
        return self._apply(lambda t: t.to(dst_type))

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    # ---- modes and gradients ------------------------------------------------------------------

    def train(self, mode=True):
        """Sets training mode (``self.training``) here and in every submodule."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Resets the gradients of all parameters: to None, or to zeros in place."""
        for p in self.parameters():
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

    # ---- printing -----------------------------------------------------------------------------

    def _get_name(self):
        return self.__class__.__name__

    def extra_repr(self):
        """The module's own line in its repr (``in_features=2, ...``); empty by default."""
        return ""

    def __repr__(self):
        extra_lines = []
        extra = self.extra_repr()
        if extra:
            extra_lines = extra.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            child_lines.append("(" + key + "): " + _addindent(repr(module), 2))
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _parse_to(*args, **kwargs):
    """The ``(device, dtype, non_blocking)`` of ``Module.to``'s arguments."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    non_blocking = kwargs.pop("non_blocking", False)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    rest = list(args)
    if rest and isinstance(rest[0], Tensor):
        t = rest.pop(0)
        device, dtype = t.device, t.dtype
    elif rest and isinstance(rest[0], _C.dtype):
        dtype = rest.pop(0)
    elif rest and (isinstance(rest[0], (str, _C.device))
                   or (isinstance(rest[0], int) and not isinstance(rest[0], bool))):
        device = rest.pop(0)
        if rest and isinstance(rest[0], _C.dtype):
            dtype = rest.pop(0)
    if rest and isinstance(rest[0], bool):
        non_blocking = rest.pop(0)
    if rest:
        got = tuple(type(a).__name__ for a in args)
        raise TypeError(f"to() received an invalid combination of arguments - got {got}")
    if device is not None and not isinstance(device, _C.device):
        device = _C.device(device if not isinstance(device, int) else f"cuda:{device}")
    return device, dtype, non_blocking
