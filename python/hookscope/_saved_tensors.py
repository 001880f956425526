"""Saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks, save_on_cpu)
in a recording: each pack and unpack call is a saved_tensor_packed /
saved_tensor_unpacked event with the Node that saves the tensor and its slot,
owned by the context (its `with` line), as hookscope's runtime writes them
(Note [Saved tensor hooks] in core/autograd/saved_variable.h).

Note [Which Node packs]
~~~~~~~~~~~~~~~~~~~~~~~
PyTorch calls pack inside an op's autograd kernel, where the Node that saves
the tensor exists but no Python object reaches it. Its sequence number does:
the Node was the thread's last one made (2.x: _get_sequence_nr() - 1). The
pack wrapper notes (sequence number, slot: the Node's packs so far) and hands
PyTorch a holder of the user's packed value; while the context is entered, a
TorchFunctionMode looks, right after each torch call returns, for the Nodes
with those numbers below the call's outputs, and writes the pack events then
(the op has just ended: the trace's time is the op's end, not the pack's
own). The unpack wrapper gives the user's unpack the user's packed value and
writes the unpack event with the Node the holder learnt. PyTorch 1.13 tells
Python no sequence number: there nothing is recorded and start() says so.
"""

import torch
import torch.autograd.graph as _graph_mod

from . import _C

try:
    from torch.overrides import TorchFunctionMode
except ImportError:   # very old PyTorch: start() names saved tensors as not recorded
    TorchFunctionMode = object


def supported():
    """Whether this PyTorch tells Python which Node packs (Note [Which Node packs])."""
    autograd = getattr(torch._C, "_autograd", None)
    return (hasattr(autograd, "_get_sequence_nr") and TorchFunctionMode is not object
            and hasattr(_graph_mod, "saved_tensors_hooks"))


class _Packed:
    """What PyTorch stores instead of the user's packed value."""
    __slots__ = ("value", "seq", "slot", "node", "owner")

    def __init__(self, value, seq, slot, owner):
        self.value, self.seq, self.slot, self.owner = value, seq, slot, owner
        self.node = 0


class _Context:
    """One entered saved_tensors_hooks: its owner and the packs whose Node is
    not found yet."""

    def __init__(self, owner):
        self.owner = owner
        self.pending = []
        self.slots = {}     # sequence number -> packs so far

    def pack(self, fn):
        def pack_hook(tensor):
            value = fn(tensor)
            if not _C.recording():
                return value
            seq = torch._C._autograd._get_sequence_nr() - 1
            slot = self.slots.get(seq, 0)
            self.slots[seq] = slot + 1
            p = _Packed(value, seq, slot, self.owner)
            self.pending.append(p)
            return p
        return pack_hook

    def unpack(self, fn):
        def unpack_hook(packed):
            if not isinstance(packed, _Packed):
                return fn(packed)
            if _C.recording():
                _C.emit(_C.EV_saved_tensor_unpacked, node=packed.node, arg=packed.slot,
                        owner=packed.owner)
            return fn(packed.value)
        return unpack_hook

    def resolve(self, out):
        """Writes the pack events of the pending packs whose Node is below `out`."""
        low = min(p.seq for p in self.pending)
        want = {p.seq for p in self.pending}
        found, stack, seen = {}, [], set()
        _grad_fns(out, stack)
        while stack and len(found) < len(want):
            fn = stack.pop()
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            seq = fn._sequence_nr() if hasattr(fn, "_sequence_nr") else low
            if seq < low:
                continue    # made before these packs: so is everything below it
            if seq in want:
                found[seq] = fn
            stack.extend(n for n, _ in fn.next_functions if n is not None)
        if not found:
            return
        left = []
        for p in self.pending:
            fn = found.get(p.seq)
            if fn is None:
                left.append(p)
                continue
            p.node = _C.node_id(fn)
            if _C.recording():
                _C.emit(_C.EV_saved_tensor_packed, node=p.node, arg=p.slot, owner=p.owner)
        self.pending = left
        for seq in found:
            self.slots.pop(seq, None)


def _grad_fns(x, out):
    if isinstance(x, torch.Tensor):
        if x.grad_fn is not None:
            out.append(x.grad_fn)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _grad_fns(y, out)
    elif isinstance(x, dict):
        for y in x.values():
            _grad_fns(y, out)


class _ResolvePacks(TorchFunctionMode):
    """Pushed while a recorded saved_tensors_hooks is entered (Note [Which
    Node packs]): calls each torch function as it is, then resolves packs."""

    def __init__(self, ctx):
        super().__init__()
        self.ctx = ctx
        self.active = True

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.active and self.ctx.pending and _C.recording():
            self.ctx.resolve(out)
        return out


def install(hooks):
    """Patches saved_tensors_hooks' enter and exit; `hooks` is the
    recording's PythonHooks."""
    cls = getattr(_graph_mod, "saved_tensors_hooks", None)
    if cls is None:
        return
    orig_enter, orig_exit = cls.__enter__, cls.__exit__
    if not supported():
        # Said when a recorded program enters one, not at every start (most
        # programs use none; a start warning would change their stderr).
        def enter_unsupported(self):
            if _C.recording() and not hooks.said_saved_tensors:
                hooks.said_saved_tensors = True
                import warnings
                warnings.warn(f"hookscope: with PyTorch {torch.__version__} saved_tensors_hooks "
                              "pack/unpack calls are not recorded (this PyTorch does not tell "
                              "Python which Node saves a tensor)", stacklevel=2)
            return orig_enter(self)
        hooks._patch(cls, "__enter__", enter_unsupported)
        return
    from torch.overrides import _get_current_function_mode_stack, _pop_mode, _push_mode

    def enter(self):
        if not _C.recording():
            return orig_enter(self)
        ctx = _Context(hooks.rec.owners.call_site())
        pack, unpack = self.pack_hook, self.unpack_hook
        self.pack_hook, self.unpack_hook = ctx.pack(pack), ctx.unpack(unpack)
        try:
            result = orig_enter(self)
        finally:
            self.pack_hook, self.unpack_hook = pack, unpack   # as the program set them
        mode = _ResolvePacks(ctx)
        _push_mode(mode)
        self._hookscope_mode = mode
        return result

    def exit(self, *args):
        mode = self.__dict__.pop("_hookscope_mode", None)
        if mode is not None:
            mode.active = False
            stack = _get_current_function_mode_stack()
            if stack and stack[-1] is mode:
                _pop_mode()
            # else: a mode the program pushed later is still on top; ours
            # stays below it, passing every call through.
        return orig_exit(self, *args)

    hooks._patch(cls, "__enter__", enter)
    hooks._patch(cls, "__exit__", exit)
