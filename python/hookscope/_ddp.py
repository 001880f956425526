"""DDP and process groups in a recording: each DistributedDataParallel's
Reducer is an owner ("Reducer N") whose C++ hooks on the AccumulateGrads are
found by snapshots of Node::post_hooks() right after construction and right
after destruction (docs/torch-bridge.md)."""

import re
import weakref

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from . import _C, _children

_DESTROY_BY_KEY = 0
_REMOVED_BY_KEY = 0   # RemoveCause::kByKey


class _ReducerSentinel:
    """Stored in the DDP object's __dict__ after the Reducer, so that it is
    released after it: by then the Reducer's destructor has removed its
    hooks, and a snapshot sees them go (Python frees a dict's values in
    insertion order). A Reducer that outlives its DDP (the first backward of
    a static_graph DDP keeps it in its _DDPSink Node, alive as long as the
    program keeps that graph, e.g. a loss) is destroyed when it goes."""

    def __init__(self, owner, nparams, reducer, accumulators):
        self.owner, self.nparams = owner, nparams
        self.comm_hook = 0   # its comm hook's key, once registered
        self.accumulators = accumulators   # Note [The last Reducer's hooks]
        try:
            self.reducer = weakref.ref(reducer) if reducer is not None else None
        except TypeError:
            self.reducer = None

    def __del__(self):
        reducer = self.reducer() if self.reducer is not None else None
        if reducer is not None:
            weakref.finalize(reducer, _reducer_destroyed, self.owner, self.comm_hook, self.accumulators)
            return
        _reducer_destroyed(self.owner, self.comm_hook)


# Note [The last Reducer's hooks]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# PyTorch's Reducer destructor removes its hooks by key, then lets go of the
# AccumulateGrads it holds. When nothing else holds them (the last DDP on a
# module), they go with it, before the snapshot that would see its hooks go:
# the trace said "reducer_destroyed, 6 hooks removed" with no hook_remove
# for them, where the runtime writes each (tests/torch/test_runtime_parity.py).
# So the sentinel holds the AccumulateGrads too, and lets go of them after
# the snapshot: hook_remove by the Reducer, reducer_destroyed, then
# node_released, in the runtime's order. They live microseconds longer; what
# the program computes does not change.
def _accumulators(params):
    """The AccumulateGrad Nodes of `params` (the Reducer holds them already):
    get_gradient_edge (2.2+), or the one next edge of a view's Function (1.13)."""
    edge = getattr(torch.autograd.graph, "get_gradient_edge", None)
    out = []
    with torch.enable_grad():
        for p in params:
            if edge is not None:
                out.append(edge(p).node)
                continue
            fn = p.view_as(p).grad_fn
            out.append(fn.next_functions[0][0] if fn is not None and fn.next_functions else None)
    return out


def _reducer_destroyed(owner, comm_hook=0, accumulators=None):
    from ._recorder import running
    rec = running()
    if rec is None or not _C.is_running():
        return
    _C.snapshot(rec.owners.cpp, owner)
    _C.set_reducer(owner, [])
    if comm_hook:  # it lives in the Reducer: gone with it, as the runtime writes it
        _C.emit(_C.EV_hook_remove, sub=_C.HOOK_comm_hook, node=0, key=comm_hook, owner=owner,
                actor=owner, arg=_REMOVED_BY_KEY)
    # actor: the hooks its destructor removed, as the runtime writes it
    _C.emit(_C.EV_reducer_destroyed, arg=_DESTROY_BY_KEY, owner=owner,
            actor=_C.removed_hooks_of(owner))
    _C.emit(_C.EV_owner_destroyed, owner=owner)


def _recorded_comm_hook(hook, key, owner):
    """`hook` writing its fire first. functools.wraps keeps what DDP reads
    of the hook (its name and, through __wrapped__, its signature)."""
    import functools

    @functools.wraps(hook)
    def comm_hook(state, bucket):
        if _C.is_running():
            buf = bucket.buffer()
            _C.emit(_C.EV_hook_fire, sub=_C.HOOK_comm_hook, node=0, key=key, owner=owner,
                    actor=bucket.index(), arg=buf.numel() * buf.element_size())
        return hook(state, bucket)
    return comm_hook


def install(rec):
    orig_init = DistributedDataParallel.__init__
    orig_forward = DistributedDataParallel.forward
    orig_init_pg = dist.init_process_group
    orig_destroy_pg = dist.destroy_process_group

    def init(self, module, *args, **kwargs):
        recording = _C.recording()
        if recording:
            # C++ hooks already there belong to whoever was there before
            # (earlier Reducers are known already); new ones are this Reducer's.
            for p in module.parameters():
                if p.requires_grad:
                    _C.accumulator_id(p, False)
            _C.snapshot(rec.owners.cpp, rec.owners.cpp)
        orig_init(self, module, *args, **kwargs)
        if not recording:
            return
        rec.reducers += 1
        owner = rec.owners.create(_C.OWNER_reducer, f"Reducer {rec.reducers}")
        rec.owners.name_modules(module)
        params = [p for p in module.parameters() if p.requires_grad]
        object.__setattr__(self, "_hookscope_reducer", owner)
        object.__setattr__(self, "_hookscope_backward", 0)
        names = {id(p): n for n, p in module.named_parameters()}
        object.__setattr__(self, "_hookscope_params",
                           [(names.get(id(p), f"parameter {i}"), weakref.ref(p))
                            for i, p in enumerate(params)])
        accumulators = [_C.accumulator_id(p, False) for p in params]
        rec.label_accumulators()
        _C.snapshot(owner, rec.owners.cpp)
        _C.set_reducer(owner, accumulators)
        try:
            buckets = len(self._get_ddp_logging_data().get("bucket_sizes", "").split(","))
        except Exception:
            buckets = 0
        _C.emit(_C.EV_reducer_constructed, arg=len(params), actor=buckets, owner=owner)
        object.__setattr__(self, "_hookscope_sentinel",
                           _ReducerSentinel(owner, len(params), getattr(self, "reducer", None),
                                            _accumulators(params)))

    def forward(self, *args, **kwargs):
        owner = self.__dict__.get("_hookscope_reducer")
        if not owner or not _C.recording():
            return orig_forward(self, *args, **kwargs)
        try:
            out = orig_forward(self, *args, **kwargs)
        except RuntimeError as e:
            # A collective of DDP's forward failed (a rank died), or the
            # previous backward left parameters without gradient and DDP had
            # no find_unused_parameters: it says which at this forward.
            rec.record_failure(e)
            m = _NO_GRAD.search(str(e))
            if m:
                for index in (int(i) for i in re.findall(r"\d+", m.group(1))):
                    _unused(self, owner, index, handled=False)
            raise
        import torch
        if self.training and self.require_backward_grad_sync and torch.is_grad_enabled():
            n = self.__dict__["_hookscope_backward"] + 1
            object.__setattr__(self, "_hookscope_backward", n)
            object.__setattr__(self, "_hookscope_unused_now", 0)
            rec.last_ddp = weakref.ref(self)
            _C.emit(_C.EV_prepare_for_backward, arg=n, owner=owner)
            _C.set_prepared(owner, True)
            # find_unused_parameters, or static_graph (Note [Static graph's
            # unused parameters]): the Reducer marks the unreached ones ready.
            if self.find_unused_parameters or getattr(self, "static_graph", False):
                reached = _reached_leaves(out)
                for index, (name, ref) in enumerate(self.__dict__["_hookscope_params"]):
                    if id(ref()) not in reached:
                        _unused(self, owner, index, handled=True)
        elif torch.is_grad_enabled() and not self.require_backward_grad_sync:
            _C.set_no_sync(owner)  # inside no_sync(): its fires are expected no-ops
        return out

    def init_process_group(*args, **kwargs):
        result = orig_init_pg(*args, **kwargs)
        if _C.recording():
            # A child learns its rank here (Note [Recorded child processes]).
            r = _children.rank_known(rec)
            r.groups += 1
            # generation: 0 for the run's first group, as the runtime counts them
            # (a rebuilt group after a failure is generation 1, ...)
            _C.emit(_C.EV_process_group_created, arg=dist.get_world_size(), actor=r.groups - 1,
                    key=r.groups)
        return result

    def destroy_process_group(*args, **kwargs):
        result = orig_destroy_pg(*args, **kwargs)
        if _C.recording() and rec.groups:
            _C.emit(_C.EV_process_group_destroyed, key=rec.groups)
        return result

    orig_comm = DistributedDataParallel.register_comm_hook

    def register_comm_hook(self, state, hook):
        # A Python comm hook: DDP calls it with each bucket in place of its
        # allreduce. One hook of the Reducer (node 0), one fire per bucket
        # call with the bucket's index and bytes (Note [Comm hooks in traces]
        # in core/trace/event.h). DDP's built-in C++ hooks
        # (_register_builtin_comm_hook) never reach Python: not recorded.
        owner = self.__dict__.get("_hookscope_reducer")
        if not owner or not _C.recording() or not callable(hook):
            return orig_comm(self, state, hook)
        key = _C.new_key()
        result = orig_comm(self, state, _recorded_comm_hook(hook, key, owner))
        # Added once DDP took it (it refuses a second hook, or one of the wrong shape).
        _C.emit(_C.EV_hook_add, sub=_C.HOOK_comm_hook, node=0, key=key, owner=owner)
        object.__setattr__(self, "_hookscope_comm_hook", key)
        self.__dict__["_hookscope_sentinel"].comm_hook = key
        return result

    rec._patch(DistributedDataParallel, "__init__", init)
    rec._patch(DistributedDataParallel, "register_comm_hook", register_comm_hook)
    rec._patch(DistributedDataParallel, "forward", forward)
    rec._patch(dist, "init_process_group", init_process_group)
    rec._patch(dist, "destroy_process_group", destroy_process_group)


_NO_GRAD = re.compile(r"Parameter indices which did not receive grad for rank \d+: ([\d ]+)")


def _reached_leaves(out):
    """ids of the leaf tensors whose AccumulateGrad the graph of `out`
    reaches: what DDP's find_unused_parameters search finds."""
    stack, seen, leaves = [], set(), set()

    def add_tensors(x):
        if isinstance(x, torch.Tensor):
            if x.grad_fn is not None:
                stack.append(x.grad_fn)
        elif isinstance(x, (list, tuple)):
            for y in x:
                add_tensors(y)
        elif isinstance(x, dict):
            for y in x.values():
                add_tensors(y)
    add_tensors(out)
    keep = []
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        keep.append(fn)
        variable = getattr(fn, "variable", None)
        if variable is not None:
            leaves.add(id(variable))
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return leaves


# Note [Static graph's unused parameters]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# DDP(static_graph=True) without find_unused_parameters still handles
# parameters the graph never reaches: its first backward counts which hooks
# fire (and reduces every bucket at its end), later ones mark the unused
# parameters ready themselves, in the first hook of each backward
# (reducer.cpp: unused_parameters_). Python cannot see that call; the graph
# is static, so the parameters the forward's graph does not reach are those
# (_reached_leaves). Recorded as find_unused_parameters is, and as the
# runtime writes it (core/ddp/reducer.cpp): unused_parameter + mark_ready
# per such parameter, at each prepared forward.


def _unused(ddp, owner, index, handled):
    params = ddp.__dict__["_hookscope_params"]
    if index >= len(params):
        return
    name, ref = params[index]
    p = ref()
    node = _C.accumulator_id(p, False) if p is not None else 0
    _C.emit(_C.EV_unused_parameter, node=node, arg=_C.intern(name), owner=owner, actor=index)
    if handled:  # find_unused_parameters / static_graph: the Reducer marks it ready
        _C.emit(_C.EV_mark_ready, node=node, arg=index, owner=owner)
        object.__setattr__(ddp, "_hookscope_unused_now", ddp.__dict__.get("_hookscope_unused_now", 0) + 1)


# Note [A bridge trace's finalized backward]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# PyTorch's Reducer finalizes a backward (waits for every bucket's
# collective, writes the gradients back) in a callback it queues on the
# autograd engine once every parameter is ready, so it has run when
# backward returns; neither Python nor RecordFunction sees the callback. The
# bridge writes buckets_finalized where the runtime's Reducer does, before
# backward_end, when the backward returned without an exception and the DDP
# prepared for it had every parameter marked ready: by its hooks (counted in
# csrc/observers.cpp) or as unused (find_unused_parameters, static_graph).
# A backward that left a parameter unready (DDP raises at the next forward)
# or ran inside no_sync() (nothing prepared) is not finalized.
def finalized_backward(rec):
    """(owner, backward index) of the DDP whose Reducer finalized the
    backward that just returned, or None."""
    ddp = rec.last_ddp() if getattr(rec, "last_ddp", None) else None
    if ddp is None:
        return None
    d = ddp.__dict__
    owner = d.get("_hookscope_reducer")
    if not owner:
        return None
    ready = _C.ready_count(owner)
    if ready < 0 or ready + d.get("_hookscope_unused_now", 0) < len(d.get("_hookscope_params", ())):
        return None
    return owner, d.get("_hookscope_backward", 0)


_TWICE = re.compile(r"Parameter at index (\d+)(?: with name ([\w.]+))? has been marked as ready twice")


def on_backward_error(rec, error):
    """DDP's 'marked ready twice' error names the parameter's index: record it
    against the DDP that prepared this backward."""
    m = _TWICE.search(str(error))
    ddp = rec.last_ddp() if getattr(rec, "last_ddp", None) else None
    if not m or ddp is None:
        return
    index = int(m.group(1))
    params = ddp.__dict__.get("_hookscope_params", [])
    name, ref = params[index] if index < len(params) else (m.group(2) or f"parameter {index}", None)
    p = ref() if ref else None
    node = _C.accumulator_id(p, False) if p is not None else 0
    _C.emit(_C.EV_marked_twice, node=node, arg=_C.intern(name), actor=index,
            owner=ddp.__dict__["_hookscope_reducer"])
