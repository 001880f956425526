"""hookscope's torch bridge: record a real PyTorch program to a .hstrace file
that `hookscope` (GUI) and `hookscope-cli` read. See docs/torch-bridge.md.

    with hookscope.recording("run.hstrace"):
        train()

or, for a whole script: /usr/bin/python3 -m hookscope.record -o run.hstrace train.py ARGS
"""

import contextlib

import torch  # noqa: F401  (the extension needs torch's libraries loaded)

try:
    from . import _C
except ImportError as e:  # built against another libtorch, or not built
    raise ImportError(
        f"hookscope: cannot load its extension hookscope._C with PyTorch {torch.__version__} "
        f"({e}). It is built by hookscope's CMake against the libtorch it finds: Debian's "
        "1.13 (scripts/setup.sh, then cmake --build build; use /usr/bin/python3 and "
        "PYTHONPATH=build/python) or Debian's 2.6 (scripts/torch2-root.sh run python3 ...)") from e
from ._recorder import Recorder, rank_path, running

__all__ = ["recording", "start", "stop", "pause", "resume", "name_modules", "post_hook_count",
           "cpp_post_hook_keys", "rank_path"]

_SUPPORTED = ("1.13", "2.6")   # tested: Debian bookworm's and trixie's (scripts/torch2-root.sh)


def _check_version():
    if not torch.__version__.startswith(_SUPPORTED):
        import warnings
        warnings.warn(f"hookscope: built for PyTorch {', '.join(_SUPPORTED)}, running "
                      f"{torch.__version__}: C++ hooks (DDP Reducer hooks), Node hooks and "
                      "module backward hooks may be recorded incompletely")


def start(path, scenario=None):
    """Starts recording to `path` (PREFIX.rank<r>.hstrace under torch.distributed
    when RANK/WORLD_SIZE are set or a process group exists). Returns the Recorder."""
    _check_version()
    rec = running()
    if rec is not None and rec.child:
        # This process is a recorded program's child, recorded on its own
        # (Note [Recorded child processes]): the program's own recording wins.
        rec.finish(quiet=True)
    return Recorder(path, scenario).start()


def stop():
    """Finishes the running recording; returns {'events', 'bytes', 'path',
    'published', 'children', 'error' (when the file could not be written)}.
    A failed write is reported on stderr, never raised."""
    rec = running()
    if rec is None:
        raise RuntimeError("hookscope: no recording is running (start one with hookscope.start)")
    return rec.finish()


@contextlib.contextmanager
def recording(path, scenario=None):
    rec = start(path, scenario)
    try:
        yield rec
    finally:
        rec.finish()


def pause():
    if running():
        running().pause()


def resume():
    if running():
        running().resume()


def name_modules(module, prefix=""):
    """Names `module`'s submodules and parameters in the trace by their
    qualified paths (found automatically otherwise, at some cost)."""
    if running():
        running().owners.name_modules(module, prefix)


def post_hook_count(grad_fn_or_leaf):
    """Length of a Node's post_hooks() list (a leaf tensor: its live
    AccumulateGrad), without hookscope's own observer."""
    return _C.post_hook_count(grad_fn_or_leaf)


def cpp_post_hook_keys(grad_fn_or_leaf):
    """Trace keys of the C++ post hooks on a Node (e.g. DDP Reducer hooks)."""
    return _C.cpp_post_hook_keys(grad_fn_or_leaf)
