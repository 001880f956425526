"""Run at the startup of every Python child of a recorded program, by the
sitecustomize.py that hookscope puts first on the child's PYTHONPATH
(Note [Recorded child processes]). Loaded by path: importing the hookscope
package here would import torch into every child, torch user or not.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys


class _TorchImported(importlib.abc.MetaPathFinder):
    """Starts the child's recording right after the program's first
    `import torch` has run torch's __init__ (before the program uses it)."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_record(module):
            exec_module(module)
            _record()
        spec.loader.exec_module = exec_then_record
        return spec


def _record():
    try:
        from hookscope import _children
    except Exception as e:
        msg = f"{type(e).__name__}: {e}"
        sys.stderr.write(f"hookscope: process {os.getpid()} ran Python but is not recorded: "
                         f"{msg}\n")
        reg = os.environ.get("HOOKSCOPE_CHILD_REGISTRY")
        if reg:
            try:
                with open(os.path.join(reg, str(os.getpid())), "a") as f:
                    f.write(f"error\t{msg}\n")
            except OSError:
                pass
        return
    from hookscope._recorder import running
    if running() is None:
        _children.start_child()


def _chain(own_file):
    """Runs the sitecustomize this one hides (Debian's, a virtualenv's)."""
    own_dir = os.path.dirname(os.path.abspath(own_file))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != own_dir]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None and spec.origin != own_file:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


def main(own_file):
    try:
        _chain(own_file)
    finally:
        if os.environ.get("HOOKSCOPE_CHILD_PREFIX") and "torch" not in sys.modules:
            sys.meta_path.insert(0, _TorchImported())
