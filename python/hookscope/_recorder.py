"""One recording of a PyTorch program to a .hstrace file: the autograd
graph seen by each backward, hooks (Python ones through _hooks, C++ ones
such as DDP's Reducer hooks through snapshots of Node::post_hooks()), and
the DDP / process-group story."""

import os
import re
import sys

import torch
import torch.autograd

from . import _C
from . import _buckets, _children, _present
from ._hooks import PythonHooks
from ._owners import Owners

_running = None


def running():
    return _running


def _rank_and_world():
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    return -1, 1


def rank_path(path, rank):
    """PREFIX.rank<r>.hstrace for rank r, unless `path` already names one."""
    if rank < 0 or re.search(r"rank\d+", os.path.basename(path)):
        return path
    return f"{_stem(path)}.rank{rank}.hstrace"


def pid_path(path, pid):
    """PREFIX.pid<pid>.hstrace: a child process whose rank is not known."""
    return f"{_stem(path)}.pid{pid}.hstrace"


def _stem(path):
    return path[:-len(".hstrace")] if path.endswith(".hstrace") else path


# What the bridge cannot see in any PyTorch it supports (1.13, 2.6), said in
# the trace's header (Note [Collectives through RecordFunction]).
_NOT_EXPOSED = (" [not exposed by PyTorch: a collective's failure (its end reads ok); "
                "the members of DDP's buckets before it rebuilds them]")


class Recorder:
    """child: this process was started (spawned, forked) by a recorded one
    and records to PREFIX.rank<r> / PREFIX.pid<pid> (python/hookscope/_children.py)."""

    def __init__(self, path, scenario=None, child=False):
        rank, world = _rank_and_world()
        self.rank, self.world = rank, world
        self.prefix = path
        self.child = child
        ranked = rank >= 0 and world > 1
        if child and not ranked:
            self.path = pid_path(path, os.getpid())
        else:
            self.path = rank_path(path, rank if world > 1 else -1)
        self.scenario = (scenario or "torch bridge") + _NOT_EXPOSED
        self.hooks = PythonHooks(self)
        self.saved = []
        self._retain = None
        self.reducers = 0
        self.last_ddp = None  # weakref to the DDP that prepared the latest backward
        self.groups = 0
        self.paused = False
        self.stats = None
        self.present = 0   # hooks present at start (Note [Hooks present at start])

    # ---- lifecycle -------------------------------------------------------------
    def start(self):
        global _running
        if _running is not None:
            raise RuntimeError(f"hookscope: already recording to {_running.path}; "
                               "stop that recording first")
        _C.start(self.path, self.scenario, self.rank if self.world > 1 else -1, self.world,
                 new_file_waits=self.child)
        self.owners = Owners()
        _running = self
        # The first events reach the file now, not after the writer's timed
        # flush (a short program, one ending in os._exit), and before the
        # pass over the heap for the hooks present (tens of ms).
        _C.flush()
        try:
            self.hooks.install()
            self._install()
            self.present = _present.declare(self)
        except Exception:
            self.finish()
            raise
        _C.flush()
        _children.started(self)
        if self.hooks.missing and not self.child:   # the parent said it once for all
            import warnings
            warnings.warn(f"hookscope: with PyTorch {torch.__version__} these are not recorded: "
                          + "; ".join(self.hooks.missing))
        return self

    def finish(self, quiet=False):
        """Ends the recording; never raises for the file (a failed write is
        reported on stderr, the program's exit status stays its own)."""
        global _running
        if _running is not self:
            return self.stats
        self._unpatch()
        _running = None
        self.stats = _C.finish()
        _children.finished(self, quiet)
        return self.stats

    def abandon(self):
        """In a forked child: this process stops being this recording without
        a call into its writer (Note [Recording across fork])."""
        global _running
        if _running is self:
            self._unpatch()
            _running = None

    def _unpatch(self):
        self.hooks.uninstall()
        for owner, name, value in reversed(self.saved):
            setattr(owner, name, value)
        self.saved.clear()

    def pause(self):
        self.paused = True
        _C.pause()

    def resume(self):
        self.paused = False
        _C.resume()

    def _patch(self, owner, name, value):
        self.saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def retain_owner(self):
        if self._retain is None:
            self._retain = self.owners.create(_C.OWNER_retain_grad, "retain_grad")
        return self._retain

    def label_accumulators(self):
        for node, tensor in _C.take_new_accumulators():
            _C.emit(_C.EV_node_label, node=node, arg=_C.intern(self.owners.param_label(tensor)))

    def before_backward(self, roots, is_grad):
        _C.observe_graph(roots)
        self.label_accumulators()
        self.hooks.resolve_pending()
        _C.snapshot(self.owners.cpp, self.owners.cpp)
        ddp = self.last_ddp() if self.last_ddp is not None else None
        if ddp is not None:
            _buckets.before_backward(ddp)
        _C.emit(_C.EV_backward_begin, sub=1 if is_grad else 0, arg=len(roots))
        _C.set_in_backward(True)

    def after_backward(self, error):
        _C.set_in_backward(False)
        if error is not None and self.record_failure(error):
            self.on_backward_error(error)
        if error is None and self.last_ddp is not None:
            from . import _ddp
            done = _ddp.finalized_backward(self)   # Note [A bridge trace's finalized backward]
            if done is not None:
                _C.emit(_C.EV_buckets_finalized, owner=done[0], arg=done[1])
        # ending (trace::BackwardEnding): kThrew = 2, kCompleted = 0; Functions run: not counted.
        _C.emit(_C.EV_backward_end, sub=2 if error is not None else 0)
        _C.clear_prepared()
        _C.snapshot(self.owners.cpp, self.owners.cpp)

    def record_failure(self, error):
        """An exception out of backward or out of a DDP collective (a rank
        failed): a failure event with its message, once per exception (a
        reentrant backward raises it through its outer backward too).
        Returns whether it was new."""
        if getattr(error, "_hookscope_seen", False):
            return False
        try:
            error._hookscope_seen = True
        except AttributeError:
            pass
        _C.emit(_C.EV_failure, sub=0, actor=max(self.rank, 0),
                arg=_C.intern(f"{type(error).__name__}: {error}"[:500]))
        return True

    def on_backward_error(self, error):
        from . import _ddp
        _ddp.on_backward_error(self, error)

    # ---- patches -------------------------------------------------------------
    def _install(self):
        rec = self
        orig_backward = torch.autograd.backward
        orig_grad = torch.autograd.grad

        def roots_of(tensors):
            if isinstance(tensors, torch.Tensor):
                tensors = (tensors,)
            return [t.grad_fn for t in tensors if isinstance(t, torch.Tensor)]

        def backward(tensors, *args, **kwargs):
            if not _C.recording():
                return orig_backward(tensors, *args, **kwargs)
            rec.before_backward(roots_of(tensors), False)
            try:
                result = orig_backward(tensors, *args, **kwargs)
            except BaseException:
                # No local names the exception: a frame -> exception ->
                # traceback -> frame cycle would keep the user's graph (and
                # a DDP it references) alive until the next gc pass.
                rec.after_backward(sys.exc_info()[1])
                raise
            rec.after_backward(None)
            return result

        def grad(outputs, *args, **kwargs):
            if not _C.recording():
                return orig_grad(outputs, *args, **kwargs)
            rec.before_backward(roots_of(outputs), True)
            try:
                result = orig_grad(outputs, *args, **kwargs)
            except BaseException:
                # No local names the exception: a frame -> exception ->
                # traceback -> frame cycle would keep the user's graph (and
                # a DDP it references) alive until the next gc pass.
                rec.after_backward(sys.exc_info()[1])
                raise
            rec.after_backward(None)
            return result

        orig_module_init = torch.nn.Module.__init__

        def module_init(self, *args, **kwargs):
            orig_module_init(self, *args, **kwargs)
            if _running is rec:
                rec.owners.module_created(self)

        self._patch(torch.nn.Module, "__init__", module_init)
        self._patch(torch.autograd, "backward", backward)
        self._patch(torch.autograd, "grad", grad)
        from . import _ddp
        _ddp.install(self)
