"""Owners of hooks in a recording: modules (by qualified path), call sites
(file:line), DDP Reducers, and the C++ hooks nobody claims.
Owner ids are this recording's; see core/trace/event.h OwnerKind."""

import gc
import os
import sys
import weakref

import torch

from . import _C

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))


class Owners:
    def __init__(self):
        self._next = 1
        self._modules = {}      # id(module) -> (weakref, owner id)
        self._sites = {}        # "file:line" -> owner id
        self._named = {}        # id(module) -> (weakref, path) known from a root
        self._params = {}       # id(tensor) -> (weakref, name)
        self._all = None        # WeakSet of every module alive (after the first scan)
        self._dirty = True      # modules were created since the last naming pass
        self._pruned_at = 0
        self.cpp = self.create(_C.OWNER_user, "c++ hooks")

    def create(self, kind, label):
        oid = self._next
        self._next += 1
        _C.emit(_C.EV_owner_created, sub=kind, arg=_C.intern(label), owner=oid)
        return oid

    def destroy(self, oid):
        if _C.is_running():
            _C.emit(_C.EV_owner_destroyed, owner=oid)

    # ---- names ---------------------------------------------------------------
    def name_modules(self, root, prefix="", keep=False):
        """Remembers the qualified names of `root`'s submodules and parameters
        (keep: names already known win)."""
        if len(self._params) > 2 * self._pruned_at + 64:
            self._prune()
        for name, m in root.named_modules(prefix=prefix):
            if not (keep and id(m) in self._named):
                self._named[id(m)] = (weakref.ref(m), name or "(root)")
        for name, p in root.named_parameters(prefix=prefix):
            if not (keep and id(p) in self._params):
                self._params[id(p)] = (weakref.ref(p), name)

    def _prune(self):
        for table in (self._named, self._params):
            for k in [k for k, (ref, _) in table.items() if ref() is None]:
                del table[k]
        self._pruned_at = len(self._params)

    def _lookup(self, table, obj):
        hit = table.get(id(obj))
        return hit[1] if hit is not None and hit[0]() is obj else None

    def _scan(self):
        """Names every module and parameter alive from the root modules (those
        no other module holds). The first time it finds the modules with one
        pass over the heap (tens of ms); later only when modules were created
        since (module_created, from the patched nn.Module.__init__)."""
        if not self._dirty:
            return
        self._dirty = False
        if self._all is None:
            self._all = weakref.WeakSet()
            module_type = torch.nn.Module  # type(): isinstance would run __class__ properties
            for o in gc.get_objects():
                if issubclass(type(o), module_type):
                    self._all.add(o)
        mods = list(self._all)
        children = {id(c) for m in mods for c in m.children()}
        for m in mods:
            if id(m) not in children:
                self.name_modules(m, keep=True)

    def adopt_modules(self, modules):
        """Every module alive, found by the caller's pass over the heap (the
        first _scan would make the same pass)."""
        if self._all is None:
            self._all = weakref.WeakSet(modules)

    def module_created(self, module):
        if self._all is not None:
            self._all.add(module)
        self._dirty = True

    def module_path(self, module):
        path = self._lookup(self._named, module)
        if path is None:
            self._scan()
            path = self._lookup(self._named, module)
        return path or "(root)"

    def param_name(self, tensor):
        name = self._lookup(self._params, tensor)
        if name is None and self._dirty:
            self._scan()
            name = self._lookup(self._params, tensor)
        return name

    def param_label(self, tensor):
        name = self.param_name(tensor) or "leaf"
        return f"{name} [{', '.join(str(d) for d in tensor.shape)}]"

    # ---- owners --------------------------------------------------------------
    def module(self, module):
        hit = self._modules.get(id(module))
        if hit is not None and hit[0]() is module:
            return hit[1]
        oid = self.create(_C.OWNER_module, self.module_path(module))
        self._modules[id(module)] = (weakref.ref(module), oid)
        weakref.finalize(module, self.destroy, oid)
        return oid

    def call_site(self, depth=2):
        """The owner for a hook registered here: the nn.Module whose method
        registered it, else the first frame outside torch and hookscope."""
        f = sys._getframe(depth)
        while f is not None:
            fname = f.f_code.co_filename
            if not (fname.startswith(_PACKAGE_DIR) or fname.startswith(_TORCH_DIR)):
                break
            f = f.f_back
        if f is None:
            return self.cpp
        # Only a method's frame is asked for `self`: reading f_locals leaves a
        # snapshot of the frame's locals on it until the frame ends, which
        # would keep a script's or function's objects (a DDP, a graph) alive.
        code = f.f_code
        if code.co_argcount and code.co_varnames[0] == "self":
            me = f.f_locals.get("self")
            if isinstance(me, torch.nn.Module):
                return self.module(me)
        label = f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"
        oid = self._sites.get(label)
        if oid is None:
            oid = self.create(_C.OWNER_call_site, label)
            self._sites[label] = oid
        return oid
