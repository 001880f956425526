"""Record a whole script, like `python -m cProfile`:

    /usr/bin/python3 -m hookscope.record -o run.hstrace train.py ARGS...
"""

import argparse
import os
import runpy
import sys
import types

import hookscope


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m hookscope.record",
        description="Run a PyTorch script and record its autograd graph, hooks and DDP "
                    "events to a .hstrace file (open it with hookscope or hookscope-cli).")
    parser.add_argument("-o", "--output", default="run.hstrace",
                        help="trace file (under torch.distributed: PREFIX.rank<r>.hstrace)")
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    opts = parser.parse_args(argv)
    if not os.path.isfile(opts.script):
        parser.error(f"no such script: {opts.script}")
    sys.argv = [opts.script] + opts.args
    sys.path.insert(0, os.path.dirname(os.path.abspath(opts.script)))
    try:
        rec = hookscope.start(opts.output, scenario="python " + " ".join(sys.argv))
    except Exception as e:
        # The program runs as it would without hookscope: only unrecorded.
        print(f"hookscope: not recording ({e}); running {opts.script} unrecorded",
              file=sys.stderr)
        rec = None
    try:
        runpy.run_path(opts.script, run_name="__main__")
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as e:
        # Python would print this traceback from the script's frames down:
        # so does this, without record.py's and runpy's, and exits 1.
        _finish(rec)
        rec = None
        _strip_tracebacks(e)
        sys.excepthook(type(e), e, e.__traceback__)
        sys.exit(1)
    finally:
        # The script's SystemExit or exception goes on to Python as if the
        # script ran alone: its exit status and message are never changed
        # (sys.exit("message") prints it and exits 1, an exception exits 1);
        # a trace that could not be written is said on stderr, not raised.
        _finish(rec)
    return 0


_HOOKSCOPE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_RUNPY = (os.path.abspath(runpy.__file__), "<frozen runpy>")   # 3.11+ freezes it


def _strip_tracebacks(e, seen=None):
    """Drops hookscope's frames (this file, its patches and hook wrappers)
    and runpy's from the tracebacks of `e` and the exceptions chained to it,
    so that they read as they do when the script runs alone."""
    seen = seen if seen is not None else set()
    if e is None or id(e) in seen:
        return
    seen.add(id(e))
    frames = []
    tb = e.__traceback__
    while tb is not None:
        f = tb.tb_frame.f_code.co_filename
        if not (f.startswith(_HOOKSCOPE_DIR) or f in _RUNPY):
            frames.append(tb)
        tb = tb.tb_next
    rebuilt = None
    for tb in reversed(frames):
        rebuilt = types.TracebackType(rebuilt, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
    e.__traceback__ = rebuilt
    _strip_tracebacks(e.__cause__, seen)
    _strip_tracebacks(e.__context__, seen)


def _finish(rec):
    stats = rec.finish() if rec is not None else None
    if stats and stats["published"] and not stats.get("error"):
        print(f"hookscope: {stats['events']} events, {stats['bytes']} bytes -> {stats['path']}",
              file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
