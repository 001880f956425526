"""Python hooks: tensor, Node and module hooks, recorded as they are added,
fired (by a thin recording wrapper around the user's function) and removed.
See docs/torch-bridge.md."""

import threading
import weakref

import torch
import torch.nn.modules.module as _module_mod
import torch.utils.hooks as _hooks_mod
from torch.autograd import function as _function_mod

from . import _C

_MISSING = object()
_state = threading.local()  # .internal: registrations made by torch itself
# Bumped by each recording: a wrapper whose info is of an older recording
# (the hook outlived it) is wrapped anew when found (_present.py).
_generation = 0


def generation():
    return _generation


def _internal():
    return getattr(_state, "internal", False)


class _HookInfo:
    __slots__ = ("key", "node", "kind", "owner", "removed", "tensor", "wrapper", "gen")

    def __init__(self, key, node, kind, owner):
        self.key, self.node, self.kind, self.owner = key, node, kind, owner
        self.removed = False
        self.gen = _generation
        self.tensor = None   # weakref to a leaf tensor (its AccumulateGrad changes)
        self.wrapper = None

    def current_node(self):
        if self.tensor is not None:
            t = self.tensor()
            if t is not None:
                n = _C.accumulator_id(t, False)
                if n:
                    self.node = n
        return self.node


class TensorHook:
    """Wraps a Tensor.register_hook (or 2.x register_post_accumulate_grad_hook)
    function; records each fire."""
    __slots__ = ("fn", "info", "__weakref__")

    def __init__(self, fn, info):
        self.fn, self.info = fn, info

    def __call__(self, grad):
        i = self.info
        if _C.recording():
            _C.emit(_C.EV_hook_fire, sub=i.kind, node=i.current_node(), key=i.key, owner=i.owner)
        return self.fn(grad)


class NodeHook:
    """Wraps grad_fn.register_hook / register_prehook functions. Their Node
    and kind are found at the next snapshot (Python cannot see which Node the
    C code registers them on: Recorder.resolve_pending)."""
    __slots__ = ("fn", "info", "__weakref__")

    def __init__(self, fn, info):
        self.fn, self.info = fn, info

    def __call__(self, *args):
        i = self.info
        if i.node:
            _C.emit(_C.EV_hook_fire, sub=i.kind, node=i.node, key=i.key, owner=i.owner)
        return self.fn(*args)


class ModuleHook:
    """Wraps a module hook; `node` is the BackwardHookFunction Node a full
    backward hook runs through (bound per forward, Note [Module hooks in traces])."""
    __slots__ = ("fn", "info", "node", "__weakref__")

    def __init__(self, fn, info, node=0):
        self.fn, self.info, self.node = fn, info, node

    def bound(self, node):
        return ModuleHook(self.fn, self.info, node)

    def __call__(self, *args, **kwargs):
        i = self.info
        _C.emit(_C.EV_hook_fire, sub=i.kind, node=self.node, key=i.key, owner=i.owner)
        return self.fn(*args, **kwargs)


def _current_info(handle):
    """This recording's info for the hook a RemovableHandle removes: the
    wrapper in the hook dict (a hook present at start was wrapped there after
    its handle was made), else the one the handle was given."""
    ref = getattr(handle, "hooks_dict_ref", None)
    d = ref() if ref is not None else None
    w = d.get(handle.id) if d is not None else None
    info = getattr(w, "info", None)
    if not isinstance(info, _HookInfo):
        info = getattr(handle, "_hookscope", None)
    return info if info is not None and info.gen == _generation else None


class PythonHooks:
    """Installs and removes the patches; `rec` is the running Recorder."""

    def __init__(self, rec):
        self.rec = rec
        self.saved = []
        self.pending = []   # NodeHook infos whose Node is not known yet
        self.missing = []   # what this PyTorch lacks, so cannot be recorded
        self.global_owner = None   # "global module hooks", made at the first one
        self.said_saved_tensors = False

    def _patch(self, owner, name, value):
        self.saved.append((owner, name, owner.__dict__.get(name, _MISSING)))
        setattr(owner, name, value)

    def install(self):
        global _generation
        _generation += 1
        rec = self
        Tensor = torch.Tensor
        orig_register = Tensor.register_hook
        # PyTorch 2.x only (2.1+): absent in 1.13, so nothing there to record.
        orig_post_accumulate = Tensor.__dict__.get("register_post_accumulate_grad_hook")
        orig_retain = Tensor.retain_grad
        orig_remove = _hooks_mod.RemovableHandle.remove
        mixin = getattr(_function_mod, "_HookMixin", None)
        orig_node_register = getattr(mixin.__dict__.get("_register_hook"), "__func__", None) if mixin else None
        backward_hook = getattr(_hooks_mod, "BackwardHook", None)
        orig_set_user_hook = getattr(backward_hook, "_set_user_hook", None)
        orig_apply_on_tensors = getattr(backward_hook, "_apply_on_tensors", None)
        orig_setup_output_hook = getattr(backward_hook, "setup_output_hook", None)

        def tensor_register(orig, kind):
            # A leaf's hooks live on the tensor (its AccumulateGrad may change);
            # a non-leaf's on its grad_fn. PyTorch's own errors (a tensor that
            # does not require grad, a post-accumulate hook on a non-leaf) come
            # from orig.
            def register(self, hook, *args, **kwargs):
                if _internal() or not _C.recording():
                    return orig(self, hook, *args, **kwargs)
                owners = rec.rec.owners
                leaf = self.grad_fn is None
                node = _C.accumulator_id(self, True) if leaf else _C.node_id(self.grad_fn)
                # One of a register_multi_grad_hook's hooks: its owner's (_global_hooks.py).
                multi = getattr(_state, "multi", None)
                owner = multi.owner if multi is not None else owners.call_site()
                info = _HookInfo(_C.new_key(), node, kind, owner)
                if leaf:
                    info.tensor = weakref.ref(self)
                    rec.rec.label_accumulators()
                if multi is not None:
                    from ._global_hooks import MultiGradPart
                    wrapper = MultiGradPart(hook, info, multi)
                else:
                    wrapper = TensorHook(hook, info)
                try:
                    handle = orig(self, wrapper, *args, **kwargs)
                    handle._hookscope = info
                    _C.emit(_C.EV_hook_add, sub=info.kind, node=node, key=info.key,
                            arg=0 if leaf else self.output_nr, owner=info.owner)
                finally:
                    _C.release_held()  # the AccumulateGrad made for it goes, as in PyTorch
                return handle
            return register

        def retain_grad(self):
            if _internal() or not _C.recording() or self.grad_fn is None or self.retains_grad:
                return orig_retain(self)
            _C.node_id(self.grad_fn)
            owners = rec.rec.owners
            _C.snapshot(owners.cpp, owners.cpp)
            result = orig_retain(self)
            _C.snapshot(rec.rec.retain_owner(), owners.cpp, _C.HOOK_retain_grad)
            return result

        def node_register(backward_hooks, hook):
            if (_internal() or not _C.recording() or isinstance(hook, NodeHook)
                    or (isinstance(hook, _module_mod._WrappedHook) and isinstance(hook.hook, ModuleHook))):
                return orig_node_register(backward_hooks, hook)
            info = _HookInfo(_C.new_key(), 0, _C.HOOK_post, rec.rec.owners.call_site())
            wrapper = NodeHook(hook, info)
            backward_hooks, handle = orig_node_register(backward_hooks, wrapper)
            handle._hookscope = info
            info.wrapper = weakref.ref(wrapper)
            rec.pending.append(info)
            return backward_hooks, handle

        def remove(self):
            info = _current_info(self)
            if info is not None and _C.recording() and not info.node and info.wrapper is not None:
                rec.resolve_pending()  # find its Node while it is still on it
            orig_remove(self)
            if info is None or not _C.recording():
                return
            if info.removed:
                _C.emit(_C.EV_hook_remove_failed, sub=info.kind, node=info.current_node(),
                        key=info.key, actor=info.owner)
                return
            info.removed = True
            if info.wrapper is not None and not info.node:
                return  # never seen on a Node (removed before any backward): not announced
            _C.emit(_C.EV_hook_remove, sub=info.kind, node=info.current_node(), key=info.key,
                    owner=info.owner, actor=info.owner, arg=0)

        def set_user_hook(self, grad_fn):
            if _C.recording():
                node = _C.node_id(grad_fn)
                self.user_hooks = [h.bound(node) if isinstance(h, ModuleHook) else h
                                   for h in self.user_hooks]
            return orig_set_user_hook(self, grad_fn)

        def setup_output_hook(self, args):
            # Full backward pre hooks (2.x) run in the post hook of the
            # outputs' BackwardHookFunction Node, made here.
            result = orig_setup_output_hook(self, args)
            if _C.recording() and any(isinstance(h, ModuleHook) for h in self.user_pre_hooks):
                outputs = result if isinstance(result, tuple) else (result,)
                fn = next((t.grad_fn for t in outputs if isinstance(t, torch.Tensor)
                           and t.grad_fn is not None
                           and t.grad_fn.name() == "BackwardHookFunctionBackward"), None)
                if fn is not None:
                    node = _C.node_id(fn)
                    self.user_pre_hooks = [h.bound(node) if isinstance(h, ModuleHook) else h
                                           for h in self.user_pre_hooks]
            return result

        def apply_on_tensors(self, fn, args):
            was = _internal()
            _state.internal = True
            try:
                return orig_apply_on_tensors(self, fn, args)
            finally:
                _state.internal = was

        self._patch(Tensor, "register_hook", tensor_register(orig_register, _C.HOOK_tensor_pre))
        if orig_post_accumulate is not None:
            self._patch(Tensor, "register_post_accumulate_grad_hook",
                        tensor_register(orig_post_accumulate, _C.HOOK_post_accumulate))
        self._patch(Tensor, "retain_grad", retain_grad)
        self._patch(_hooks_mod.RemovableHandle, "remove", remove)
        # PyTorch internals as of 1.13: another version may lack them; then
        # that part is not recorded, and start() says which (docs/torch-bridge.md).
        if orig_node_register is not None:
            self._patch(mixin, "_register_hook", staticmethod(node_register))
        else:
            self.missing.append("Node hooks (grad_fn.register_hook / register_prehook): "
                                "torch.autograd.function._HookMixin._register_hook not found")
        if orig_set_user_hook is not None and orig_apply_on_tensors is not None:
            self._patch(backward_hook, "_set_user_hook", set_user_hook)
            self._patch(backward_hook, "_apply_on_tensors", apply_on_tensors)
        else:
            self.missing.append("the Node of module full backward hook fires: "
                                "torch.utils.hooks.BackwardHook differs from 1.13")
        Module = torch.nn.Module
        has_backward_pre = "register_full_backward_pre_hook" in Module.__dict__   # 2.x only
        if has_backward_pre and orig_setup_output_hook is not None:
            self._patch(backward_hook, "setup_output_hook", setup_output_hook)
        elif has_backward_pre:
            self.missing.append("the Node of module full backward pre hook fires: "
                                "torch.utils.hooks.BackwardHook.setup_output_hook not found")
        for name, kind in (("register_forward_pre_hook", _C.HOOK_module_forward_pre),
                           ("register_forward_hook", _C.HOOK_module_forward),
                           ("register_full_backward_pre_hook", _C.HOOK_module_backward_pre),
                           ("register_full_backward_hook", _C.HOOK_module_backward),
                           ("register_backward_hook", _C.HOOK_module_legacy_backward)):
            if name in Module.__dict__:
                self._patch(Module, name, self._module_register(Module.__dict__[name], kind))
            elif name != "register_full_backward_pre_hook":   # 2.x only: nothing to miss
                self.missing.append(f"Module.{name}")
        from . import _global_hooks
        _global_hooks.install(self)

    def _module_register(self, orig, kind):
        rec = self

        def register(self, hook, *args, **kwargs):
            if not _C.recording():
                return orig(self, hook, *args, **kwargs)
            info = _HookInfo(_C.new_key(), 0, kind, rec.rec.owners.module(self))
            handle = orig(self, ModuleHook(hook, info), *args, **kwargs)
            handle._hookscope = info
            _C.emit(_C.EV_hook_add, sub=kind, node=0, key=info.key, owner=info.owner)
            return handle
        return register

    def uninstall(self):
        for owner, name, value in reversed(self.saved):
            if value is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
        self.saved.clear()

    def resolve_pending(self):
        """Finds the Node (and pre/post kind) of Node hooks registered since
        the last snapshot, and announces them."""
        if not self.pending:
            return
        waiting = {}
        for info in self.pending:
            w = info.wrapper()
            if w is not None and not info.removed:
                waiting[id(w)] = info
        self.pending = []
        if not waiting:
            return
        for node, kind, d in _C.python_hook_dicts():
            for v in list(d.values()):
                info = waiting.pop(id(v), None)
                if info is not None and info.wrapper() is v:
                    info.node, info.kind = node, kind
                    _C.emit(_C.EV_hook_add, sub=kind, node=node, key=info.key, owner=info.owner)
        # Not found on a live Node yet: look again at the next snapshot.
        self.pending = list(waiting.values())
