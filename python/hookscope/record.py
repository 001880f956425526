"""Record a whole script, like `python -m cProfile`:

    /usr/bin/python3 -m hookscope.record -o run.hstrace train.py ARGS...
"""

import argparse
import os
import runpy
import sys

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
    rec = hookscope.start(opts.output, scenario="python " + " ".join(sys.argv))
    try:
        runpy.run_path(opts.script, run_name="__main__")
    finally:
        # The script's SystemExit or exception goes on to Python as if the
        # script ran alone: its exit status and message are never changed
        # (sys.exit("message") prints it and exits 1, an exception exits 1).
        stats = rec.finish()
        if stats:
            print(f"hookscope: {stats['events']} events, {stats['bytes']} bytes -> {stats['path']}",
                  file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
