"""Child processes of a recorded program (Note [Recorded child processes]).

Note [Recorded child processes]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A recording (not itself a child's) sets three variables that every child
process inherits: HOOKSCOPE_CHILD_PREFIX (the trace path it was given),
HOOKSCOPE_CHILD_REGISTRY (a temporary directory) and PYTHONPATH with that
directory first, which holds a sitecustomize.py (as coverage.py measures
subprocesses). So:
* a child started afresh (torch.multiprocessing.spawn, multiprocessing's
  spawn and forkserver, a subprocess running python) runs _child_site.py at
  startup; it starts nothing until the child's program imports torch
  (a child without torch has nothing to record), then records;
* a forked child (os.fork, multiprocessing's fork, DataLoader workers)
  forgets the parent's recording at once (Note [Recording across fork]) and
  starts its own.
A child records to PREFIX.rank<r>.hstrace when its rank is known (RANK and
WORLD_SIZE), else to PREFIX.pid<pid>.hstrace until init_process_group tells
its rank; then it finishes that trace and goes on in PREFIX.rank<r>.hstrace
(the hooks of the first announced as present at start). A child's trace is
written only once it holds a backward or hook event (Note [Safe trace
writes]), so forked workers that only load data leave no files. A child
writes one line per step to REGISTRY/<pid> (started, its path, finished,
failed); the parent, when it finishes, prints the traces its children wrote
and names every child that started recording and did not finish or failed.
The child's own failures go to its stderr as they happen.
"""

import atexit
import os
import shutil
import sys
import tempfile

from . import _C

ENV_PREFIX = "HOOKSCOPE_CHILD_PREFIX"
ENV_REGISTRY = "HOOKSCOPE_CHILD_REGISTRY"
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child_site.py")

_saved_env = None   # the parent's variables before started() set them
_registry = None


def _say(msg):
    try:
        sys.stderr.write(f"hookscope: {msg}\n")
        sys.stderr.flush()
    except Exception:
        pass


def _note(what, value=""):
    """One line in this child's registry file (the parent reads them)."""
    reg = os.environ.get(ENV_REGISTRY)
    if not reg:
        return
    try:
        with open(os.path.join(reg, str(os.getpid())), "a") as f:
            f.write(f"{what}\t{value}\n")
    except OSError:
        pass   # the parent finished already: nobody reads it


# ---- a recording starts and ends ----------------------------------------------
def started(rec):
    rec._patch(os, "_exit", _exit_finishing(os._exit))
    if rec.child:
        _note("path", rec.path)
        return
    global _saved_env, _registry
    if os.environ.get(ENV_PREFIX):
        return   # a recording inside a recorded child: its children are ours already
    _registry = tempfile.mkdtemp(prefix="hookscope-children-")
    with open(os.path.join(_registry, "sitecustomize.py"), "w") as f:
        f.write(_SITECUSTOMIZE.format(site=_SITE))
    _saved_env = {k: os.environ.get(k) for k in (ENV_PREFIX, ENV_REGISTRY, "PYTHONPATH")}
    os.environ[ENV_PREFIX] = os.path.abspath(rec.prefix)
    os.environ[ENV_REGISTRY] = _registry
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (_registry, _PACKAGE_PARENT, _saved_env["PYTHONPATH"]) if p)


def finished(rec, quiet):
    _set_fork_filter(False)
    stats = rec.stats
    if stats.get("error"):
        _say(f"{stats['error']} ({stats['bytes']} bytes are in the file; the program's own "
             "exit status is unchanged)")
    elif not stats["published"] and not rec.child:
        _say(f"{rec.path} not written: the run recorded no backward and no hook (a trace "
             "there from an earlier run is unchanged)")
    if rec.child:
        _note("finished", f"{int(stats['published'])}\t{stats['events']}\t{rec.path}")
        return
    stats["children"] = _collect(quiet)


def _collect(quiet):
    """The children's traces; restores the environment."""
    global _saved_env, _registry
    if _registry is None:
        return []
    for k, v in _saved_env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    reg, _registry, _saved_env = _registry, None, None
    children = []
    for name in sorted(os.listdir(reg)):
        if not name.isdigit():
            continue
        child = {"pid": int(name), "paths": [], "written": [], "unfinished": None, "errors": []}
        with open(os.path.join(reg, name)) as f:
            for line in f:
                what, _, value = line.rstrip("\n").partition("\t")
                if what == "path":
                    child["unfinished"] = value
                elif what == "finished":
                    published, events, path = value.split("\t", 2)
                    child["unfinished"] = None
                    if published == "1":
                        child["written"].append((path, int(events)))
                elif what == "error":
                    child["errors"].append(value)
        children.append(child)
    shutil.rmtree(reg, ignore_errors=True)
    for c in children:
        for path, events in c["written"]:
            _say(f"child pid {c['pid']}: {events} events -> {path}")
        if c["unfinished"]:
            _say(f"child pid {c['pid']} has not finished recording (still running, or killed): "
                 f"its trace, if it recorded a backward or hook, is {c['unfinished']} (or "
                 f"{c['unfinished']}.tmp-{c['pid']} until its first one)")
        for e in c["errors"]:
            _say(f"child pid {c['pid']} ran Python but is not recorded: {e}")
    return children


def _exit_finishing(orig_exit):
    def _exit(code):
        # os._exit skips atexit and finally: the trace gets its footer here
        # (multiprocessing's forked children all end this way).
        from ._recorder import running
        rec = running()
        if rec is not None:
            rec.finish(quiet=True)
        orig_exit(code)
    return _exit


@atexit.register
def _finish_at_exit():
    from ._recorder import running
    rec = running()
    if rec is not None:
        rec.finish(quiet=True)


# ---- in a child ----------------------------------------------------------------
def start_child():
    """Records this child process (spawned or forked) to its own trace."""
    from ._recorder import Recorder
    prefix = os.environ.get(ENV_PREFIX)
    if not prefix:
        return None
    try:
        return Recorder(prefix, f"python {' '.join(sys.argv)} (child of pid {os.getppid()})",
                        child=True).start()
    except Exception as e:   # never the program's failure: said, and it runs on
        msg = f"{type(e).__name__}: {e}"
        _say(f"process {os.getpid()} ran Python but is not recorded: {msg}")
        _note("error", msg.replace("\n", " "))
        return None


def rank_known(rec):
    """init_process_group ran in a child recording to PREFIX.pid<pid>: it
    goes on in PREFIX.rank<r>.hstrace. Returns the running recording."""
    if not (rec.child and rec.rank < 0):
        return rec
    rec.finish(quiet=True)
    return start_child() or rec


def _after_fork_in_child():
    from ._recorder import running
    rec = running()
    _C.after_fork_child()   # Note [Recording across fork]: always, locks included
    if rec is None:
        return
    rec.abandon()
    if not _about_to_exec():
        start_child()


def _about_to_exec():
    """subprocess with a preexec_fn runs at-fork handlers in the child it
    then exec()s: a recording started there would leave a temporary file."""
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == "_execute_child" and f.f_code.co_filename.endswith("subprocess.py"):
            return True
        f = f.f_back
    return False


# Python 3.12+ warns at os.fork() in a process with more than one thread
# (DeprecationWarning, shown when __main__ forks), after the at-fork
# handlers have run. The recording's writer thread is one: while it is the
# only other thread, a filter for that warning is in place (checked at each
# fork, removed when the recording ends), never when the program's own
# threads would make it warn alone.
_FORK_WARNING = r"This process \(pid=\d+\) is multi-threaded, use of fork\(\) may lead to deadlocks"
_fork_filter = None


def _threads():
    try:
        with open("/proc/self/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[17])
    except (OSError, ValueError, IndexError):
        return 0


def _set_fork_filter(on):
    global _fork_filter
    import warnings
    if on and _fork_filter is None:
        warnings.filterwarnings("ignore", message=_FORK_WARNING, category=DeprecationWarning)
        _fork_filter = warnings.filters[0]
    elif not on and _fork_filter is not None:
        try:
            warnings.filters.remove(_fork_filter)
            warnings._filters_mutated()
        except (ValueError, AttributeError):
            pass
        _fork_filter = None


def _before_fork():
    _set_fork_filter(_C.is_running() and _threads() == 2)


os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)

_SITECUSTOMIZE = '''\
# Written by hookscope (python/hookscope/_children.py): records this child
# process of a recorded program once it imports torch.
import importlib.util as _u
_s = _u.spec_from_file_location("_hookscope_child_site", {site!r})
_m = _u.module_from_spec(_s)
_s.loader.exec_module(_m)
_m.main(__file__)
del _u, _s, _m
'''
