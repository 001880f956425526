"""Hooks that exist when a recording starts.

Note [Hooks present at start]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A hook registered before recording() went through no patched register_*
call, so without this its fires would go unrecorded and `check` would judge
a trace that lacks them. At start, one pass over the heap finds the tensors
and modules alive (in C++: _C.alive_of, a few ms where a Python loop took
90-210 ms); their hook dicts (and the Node hook dicts of the graphs
below those tensors) are read, and every hook in them not wrapped by this
recording is wrapped in place, in its dict, and announced: kHookAdded with
actor FROM_SNAPSHOT, under the module that holds it or the owner "present
when recording started". PyTorch calls a hook through its dict at fire time
(python_hook.cpp, Module._call_impl), so the in-place wrapper records each
fire; a hook wrapped by an earlier recording is unwrapped first.
"""

import weakref

import torch

from . import _C
from ._hooks import ModuleHook, NodeHook, TensorHook, _HookInfo, generation

_WRAPPERS = (TensorHook, NodeHook, ModuleHook)

# Module hook dicts and the kind each holds (2.x-only ones may be absent).
_MODULE_DICTS = (("_forward_pre_hooks", "module_forward_pre"), ("_forward_hooks", "module_forward"),
                 ("_backward_pre_hooks", "module_backward_pre"),
                 ("_backward_hooks", "module_backward"))


_TENSOR_DICTS = (("_backward_hooks", _C.HOOK_tensor_pre),
                 ("_post_accumulate_grad_hooks", _C.HOOK_post_accumulate))


def _unwrapped(fn):
    """The user's function, or None when it is already this recording's."""
    if isinstance(fn, _WRAPPERS):
        if fn.info.gen == generation():
            return None
        return fn.fn
    return fn


def _torch_internal(fn):
    # BackwardHook's own Node hooks (module full backward hooks) and the like.
    return (getattr(fn, "__module__", None) or "").startswith("torch.")


class _Declarer:
    def __init__(self, rec):
        self.rec = rec
        self._owner = None
        self.count = 0

    def owner(self):
        if self._owner is None:
            oid = self.rec.owners._next
            self.rec.owners._next += 1
            _C.emit(_C.EV_owner_created, sub=_C.OWNER_user, owner=oid, actor=_C.FROM_SNAPSHOT,
                    arg=_C.intern("present when recording started"))
            self._owner = oid
        return self._owner

    def announce(self, info, input_nr=0):
        _C.emit(_C.EV_hook_add, sub=info.kind, node=info.node, key=info.key, owner=info.owner,
                arg=input_nr, actor=_C.FROM_SNAPSHOT)
        self.count += 1

    def tensor_dict(self, tensor, d, kind):
        leaf = tensor.grad_fn is None
        for k, fn in list(d.items()):
            fn = _unwrapped(fn)
            if fn is None:
                continue
            node = _C.accumulator_id(tensor, False) if leaf else _C.node_id(tensor.grad_fn)
            info = _HookInfo(_C.new_key(), node, kind, self.owner())
            if leaf:
                info.tensor = weakref.ref(tensor)
            d[k] = TensorHook(fn, info)
            self.announce(info, 0 if leaf else tensor.output_nr)

    def module_dicts(self, module):
        for attr, kind_name in _MODULE_DICTS:
            d = module.__dict__.get(attr)
            if not d:
                continue
            if attr == "_backward_hooks" and module.__dict__.get("_is_full_backward_hook") is False:
                kind_name = "module_legacy_backward"   # register_backward_hook's
            kind = getattr(_C, "HOOK_" + kind_name)
            for k, fn in list(d.items()):
                fn = _unwrapped(fn)
                if fn is None or _torch_internal(fn):
                    continue
                info = _HookInfo(_C.new_key(), 0, kind, self.rec.owners.module(module))
                d[k] = ModuleHook(fn, info)
                self.announce(info)

    def node_dicts(self):
        for node, kind, d in _C.python_hook_dicts():
            for k, fn in list(d.items()):
                fn = _unwrapped(fn)
                if fn is None or _torch_internal(fn):
                    continue
                info = _HookInfo(_C.new_key(), node, kind, self.owner())
                d[k] = NodeHook(fn, info)
                self.announce(info)


def declare(rec):
    """Wraps and announces the hooks present now; returns how many. The
    modules found are handed to the owners' naming (it needs the same pass)."""
    d = _Declarer(rec)
    tensors, modules = _C.alive_of((torch.Tensor, torch.nn.Module))
    rec.owners.adopt_modules(modules)
    roots = []
    # An object this cannot read (a tensor subclass whose attributes raise)
    # is passed over: its hooks stay unrecorded, the recording goes on.
    for t in tensors:
        try:
            for attr, kind in _TENSOR_DICTS:
                hooks = getattr(t, attr, None)   # 2.x only: _post_accumulate_grad_hooks
                if hooks:
                    d.tensor_dict(t, hooks, kind)
            if t.grad_fn is not None:
                roots.append(t.grad_fn)
        except Exception:
            pass
    for m in modules:
        try:
            d.module_dicts(m)
        except Exception:
            pass
    if roots:
        _C.observe_graph(roots)   # Node hooks live on Nodes, reachable from these
        rec.label_accumulators()
        d.node_dicts()
    return d.count
