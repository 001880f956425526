"""DDP and process groups in a recording: each DistributedDataParallel's
Reducer is an owner ("Reducer N") whose C++ hooks on the AccumulateGrads are
found by snapshots of Node::post_hooks() right after construction and right
after destruction (docs/torch-bridge.md)."""

import re

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from . import _C

_DESTROY_BY_KEY = 0


class _ReducerSentinel:
    """Stored in the DDP object's __dict__ after the Reducer, so that it is
    released after it: by then the Reducer's destructor has removed its
    hooks, and a snapshot sees them go (Python frees a dict's values in
    insertion order)."""

    def __init__(self, owner, nparams):
        self.owner, self.nparams = owner, nparams

    def __del__(self):
        from ._recorder import running
        rec = running()
        if rec is None or not _C.is_running():
            return
        _C.snapshot(rec.owners.cpp, self.owner)
        _C.emit(_C.EV_reducer_destroyed, arg=_DESTROY_BY_KEY, owner=self.owner)
        _C.emit(_C.EV_owner_destroyed, owner=self.owner)


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
        for p in params:
            _C.accumulator_id(p, False)
        rec.label_accumulators()
        _C.snapshot(owner, rec.owners.cpp)
        try:
            buckets = len(self._get_ddp_logging_data().get("bucket_sizes", "").split(","))
        except Exception:
            buckets = 0
        _C.emit(_C.EV_reducer_constructed, arg=len(params), actor=buckets, owner=owner)
        object.__setattr__(self, "_hookscope_sentinel", _ReducerSentinel(owner, len(params)))

    def forward(self, *args, **kwargs):
        out = orig_forward(self, *args, **kwargs)
        owner = self.__dict__.get("_hookscope_reducer")
        if owner and _C.recording() and self.training and self.require_backward_grad_sync:
            import torch
            if torch.is_grad_enabled():
                n = self.__dict__["_hookscope_backward"] + 1
                object.__setattr__(self, "_hookscope_backward", n)
                _C.emit(_C.EV_prepare_for_backward, arg=n, owner=owner)
        return out

    def init_process_group(*args, **kwargs):
        result = orig_init_pg(*args, **kwargs)
        if _C.recording():
            rec.groups += 1
            _C.emit(_C.EV_process_group_created, arg=dist.get_world_size(), actor=rec.groups,
                    key=rec.groups)
        return result

    def destroy_process_group(*args, **kwargs):
        result = orig_destroy_pg(*args, **kwargs)
        if _C.recording() and rec.groups:
            _C.emit(_C.EV_process_group_destroyed, key=rec.groups)
        return result

    rec._patch(DistributedDataParallel, "__init__", init)
    rec._patch(DistributedDataParallel, "forward", forward)
    rec._patch(dist, "init_process_group", init_process_group)
    rec._patch(dist, "destroy_process_group", destroy_process_group)


_TWICE = re.compile(r"Parameter at index (\d+)(?: with name ([\w.]+))? has been marked as ready twice")


def on_backward_error(rec, error):
    """DDP's 'marked ready twice' error names the parameter: record it."""
    m = _TWICE.search(str(error))
    if not m:
        return
    index = int(m.group(1))
    name = m.group(2) or f"parameter {index}"
    _C.emit(_C.EV_marked_twice, arg=_C.intern(name), actor=index)
