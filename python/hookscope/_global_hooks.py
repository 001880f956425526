"""Hooks registered on no single tensor, Node or module: the global module
hooks (torch.nn.modules.module.register_module_*_hook) and
torch.autograd.graph.register_multi_grad_hook (2.x). Recorded as hookscope's
runtime writes the same program (core/nn/global_module_hooks.cpp,
Note [Multi-grad hooks] in core/autograd/multi_grad_hook.cpp), so a bridge
trace and a runtime trace read alike; install() also installs the
saved-tensor hooks' recording (_saved_tensors.py). See docs/torch-bridge.md."""

import functools
import threading

import torch
import torch.autograd.graph as _graph_mod
import torch.nn.modules.module as _module_mod

from . import _C
from ._hooks import ModuleHook, TensorHook, _HookInfo, _internal, _state

# The global module hook registrations of module.py and the kind each
# records; full_backward_pre is 2.x only (1.13 has no such hook to miss).
_GLOBAL_MODULE_HOOKS = (("register_module_forward_pre_hook", "module_forward_pre"),
                        ("register_module_forward_hook", "module_forward"),
                        ("register_module_full_backward_pre_hook", "module_backward_pre"),
                        ("register_module_full_backward_hook", "module_backward"),
                        ("register_module_backward_hook", "module_legacy_backward"))
_TWO_X_ONLY = ("register_module_full_backward_pre_hook",)


class MultiGradPart(TensorHook):
    """One tensor's hook of a register_multi_grad_hook: records no fire of its
    own; while it runs, a call of the user's function is recorded as a fire
    of this hook (its tensor's Node and key), so fires == the function's calls."""
    __slots__ = ("multi",)

    def __init__(self, fn, info, multi):
        super().__init__(fn, info)
        self.multi = multi

    def __call__(self, grad):
        local = self.multi.running
        was = getattr(local, "info", None)
        local.info = self.info
        try:
            return self.fn(grad)
        finally:
            local.info = was


class _MultiGrad:
    """One register_multi_grad_hook: its owner ("multi_grad_hook (all)" /
    "(any)", as the runtime names it) and the part running on this thread."""

    def __init__(self, owner):
        self.owner = owner
        self.running = threading.local()

    def wrap(self, fn):
        @functools.wraps(fn)
        def user_function(*args, **kwargs):
            i = getattr(self.running, "info", None)
            if i is not None and _C.recording():
                _C.emit(_C.EV_hook_fire, sub=i.kind, node=i.current_node(), key=i.key,
                        owner=self.owner)
            return fn(*args, **kwargs)
        return user_function


def install(hooks):
    """Patches the registrations; `hooks` is the recording's PythonHooks."""
    rec = hooks

    def global_owner():
        if rec.global_owner is None:
            rec.global_owner = rec.rec.owners.create(_C.OWNER_user, "global module hooks")
        return rec.global_owner

    def global_register(orig, kind):
        # Module hooks: node 0 at add and remove; the fire of a backward one
        # names its BackwardHookFunction Node (bound by the BackwardHook
        # patches in _hooks.py, as for a module's own hooks).
        def register(hook, *args, **kwargs):
            if not _C.recording():
                return orig(hook, *args, **kwargs)
            info = _HookInfo(_C.new_key(), 0, kind, global_owner())
            handle = orig(ModuleHook(hook, info), *args, **kwargs)
            handle._hookscope = info
            _C.emit(_C.EV_hook_add, sub=kind, node=0, key=info.key, owner=info.owner)
            return handle
        return functools.wraps(orig)(register)

    for name, kind_name in _GLOBAL_MODULE_HOOKS:
        orig = _module_mod.__dict__.get(name)
        if orig is not None:
            rec._patch(_module_mod, name, global_register(orig, getattr(_C, "HOOK_" + kind_name)))
        elif name not in _TWO_X_ONLY:
            rec.missing.append(f"global module hooks (torch.nn.modules.module.{name} not found)")

    orig_multi = _graph_mod.__dict__.get("register_multi_grad_hook")   # 2.x only

    def register_multi_grad_hook(tensors, fn, *args, **kwargs):
        if _internal() or not _C.recording():
            return orig_multi(tensors, fn, *args, **kwargs)
        mode = kwargs.get("mode", args[0] if args else "all")
        multi = _MultiGrad(rec.rec.owners.create(_C.OWNER_user, f"multi_grad_hook ({mode})"))
        was = getattr(_state, "multi", None)
        _state.multi = multi
        try:
            return orig_multi(tensors, multi.wrap(fn), *args, **kwargs)
        finally:
            _state.multi = was

    if orig_multi is not None:
        # torch.autograd.graph is where users call it from; a name bound
        # elsewhere before the recording started keeps the original.
        rec._patch(_graph_mod, "register_multi_grad_hook",
                   functools.wraps(orig_multi)(register_multi_grad_hook))

    from . import _saved_tensors
    _saved_tensors.install(rec)
