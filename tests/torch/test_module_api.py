"""The module hook API beyond one tensor in and out, PyTorch vs hookscope's
runtime (module_api_runtime; docs/semantics.md M7-M12): modules with tuple
and non-tensor arguments and results (grad_input/grad_output tuples, None
where PyTorch gives None), with_kwargs, prepend, always_call, global module
hooks, the legacy register_backward_hook (wrong-Node grad_input and its
FutureWarning) and register_multi_grad_hook ("all", "any"). Each case runs
the same program on both sides and logs what every hook saw, in order, the
warnings module.py gave and the gradients; the logs must be equal (floats
within 1e-5). A case whose API this PyTorch lacks (1.13: with_kwargs,
prepend, always_call, backward pre hooks, multi-grad hooks) is left out and
named; none is left out under 2.x."""

import json
import os
import subprocess
import unittest
import warnings

import torch_util as tu

RUNTIME = os.environ.get("HOOKSCOPE_MODULE_RUNTIME", "")
if not RUNTIME and os.environ.get("HOOKSCOPE_SAVED_RUNTIME"):
    RUNTIME = os.path.join(os.path.dirname(os.environ["HOOKSCOPE_SAVED_RUNTIME"]), "module_api_runtime")


def g(t):
    """A gradient or value as logged: a flat list, None for None."""
    import torch
    if t is None:
        return None
    if isinstance(t, torch.Tensor):
        return [round(float(v), 6) for v in t.detach().flatten().tolist()]
    if isinstance(t, (tuple, list)):
        return [g(v) for v in t]
    return str(t)


def vec(torch, a, b, grad):
    return torch.tensor([a, b], dtype=torch.float32, requires_grad=grad)


def modules(torch):
    class Triple(torch.nn.Module):
        def forward(self, x, y, k, scale=1.0):
            return x * y * (k * scale), y * 2, "s"

    class Scale(torch.nn.Module):
        def forward(self, x):
            return x * 2

    class Throws(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("forward failed")

    return Triple, Scale, Throws


def case_tuple_args(torch, log):
    Triple, _, _ = modules(torch)
    m = Triple()
    if hasattr(m, "register_full_backward_pre_hook"):
        pass  # the pre hook case below covers 2.x
    m.register_full_backward_hook(lambda mod, gi, go: log.append(["bw", g(gi), g(go)]))
    x, y = vec(torch, 1.0, 2.0, True), vec(torch, 3.0, 4.0, False)
    out = m(x, y, 3)
    log.append(["out", g(out), [isinstance(o, torch.Tensor) and o.requires_grad for o in out]])
    out[0].sum().backward()
    log.append(["x.grad", g(x.grad)])


def case_tuple_replace(torch, log):
    Triple, _, _ = modules(torch)
    m = Triple()
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 10, gi[1], None))
    x = vec(torch, 1.0, 2.0, True)
    out = m(x, vec(torch, 1.0, 1.0, False), 1)
    out[0].sum().backward()
    log.append(["x.grad", g(x.grad)])
    bad = Triple()
    bad.register_full_backward_hook(lambda mod, gi, go: (gi[0],))
    out = bad(vec(torch, 1.0, 2.0, True), vec(torch, 1.0, 1.0, False), 1)
    try:
        out[0].sum().backward()
    except RuntimeError as e:
        log.append(["error", str(e)])


def case_no_input_grad(torch, log):
    Triple, _, _ = modules(torch)
    m = Triple()
    m.register_full_backward_hook(lambda mod, gi, go: log.append(["bw", g(gi), g(go)]))
    y = vec(torch, 3.0, 4.0, True)
    out = m(vec(torch, 1.0, 2.0, False), y, 2)
    (out[0].sum() + out[1].sum()).backward()
    log.append(["y.grad", g(y.grad)])


def case_backward_pre(torch, log):
    Triple, _, _ = modules(torch)
    m = Triple()
    m.register_full_backward_pre_hook(lambda mod, go: log.append(["bw pre", g(go)]) or (go[0] * 3, None, None))
    m.register_full_backward_hook(lambda mod, gi, go: log.append(["bw", g(gi), g(go)]))
    x = vec(torch, 1.0, 2.0, True)
    out = m(x, vec(torch, 5.0, 6.0, False), 1)
    out[0].sum().backward()
    log.append(["x.grad", g(x.grad)])


def case_kwargs_prepend(torch, log):
    Triple, _, _ = modules(torch)
    m = Triple()
    m.register_forward_pre_hook(lambda mod, args: log.append(["pre", g(args)]))

    def pre_kwargs(mod, args, kwargs):
        log.append(["pre kwargs", g(args), sorted(kwargs)])
        return args, {"scale": 10.0}
    m.register_forward_pre_hook(pre_kwargs, with_kwargs=True, prepend=True)

    def fwd_kwargs(mod, args, kwargs, out):
        log.append(["fwd kwargs", g(args), [[k, float(v)] for k, v in kwargs.items()], g(out)])
        return out[0]
    m.register_forward_hook(fwd_kwargs, with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: log.append(["fwd prepended", g(out)]), prepend=True)
    out = m(vec(torch, 1.0, 2.0, False), vec(torch, 1.0, 1.0, False), 1, scale=2.0)
    log.append(["out", g(out)])


def case_always_call(torch, log):
    _, _, Throws = modules(torch)
    m = Throws()
    m.register_forward_hook(lambda mod, args, out: log.append(["plain"]))
    m.register_forward_hook(lambda mod, args, kwargs, out: log.append(["always", g(args), g(out)]),
                            with_kwargs=True, always_call=True)

    def raising(mod, args, out):
        log.append(["always raising"])
        raise RuntimeError("hook failed too")
    m.register_forward_hook(raising, always_call=True)
    try:
        m(vec(torch, 1.0, 2.0, False))
    except RuntimeError as e:
        log.append(["error", str(e)])


def case_global(torch, log, with_pre=True):
    from torch.nn.modules import module as M
    _, Scale, _ = modules(torch)
    model = torch.nn.Sequential(Scale(), Scale())
    names = {id(mod): name for name, mod in model.named_modules()}
    layer = model[0]
    layer.register_forward_pre_hook(lambda mod, args: log.append(["pre"]))
    layer.register_forward_hook(lambda mod, args, out: log.append(["fwd"]))
    if with_pre:
        layer.register_full_backward_pre_hook(lambda mod, go: log.append(["bw pre"]))
    layer.register_full_backward_hook(lambda mod, gi, go: log.append(["bw", g(gi), g(go)]))
    handles = [
        M.register_module_forward_pre_hook(lambda mod, args: log.append(["global pre", names[id(mod)]])),
        M.register_module_forward_hook(lambda mod, args, out: log.append(["global fwd", names[id(mod)], g(out)])),
        M.register_module_full_backward_hook(
            lambda mod, gi, go: log.append(["global bw", names[id(mod)], g(gi), g(go)]))]
    if with_pre:
        handles.append(M.register_module_full_backward_pre_hook(
            lambda mod, go: log.append(["global bw pre", names[id(mod)], g(go)])))
    try:
        x = vec(torch, 1.0, -1.0, True)
        model(x).sum().backward()
        log.append(["x.grad", g(x.grad)])
    finally:
        for h in handles:
            h.remove()
    model(x).sum().backward()
    log.append(["after removal", g(x.grad)])


def case_legacy(torch, log):
    lin = torch.nn.Linear(2, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[0.5, -1.0], [2.0, 0.25]]))
        lin.bias.copy_(torch.tensor([0.1, -0.2]))
    lin.register_backward_hook(lambda mod, gi, go: log.append(["legacy", g(gi), g(go)]))
    try:
        lin.register_full_backward_hook(lambda mod, gi, go: None)
    except RuntimeError as e:
        log.append(["error", str(e)])
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    lin(x).sum().backward()
    log.append(["x.grad", g(x.grad), "weight.grad", g(lin.weight.grad)])


def case_legacy_replace(torch, log):
    _, Scale, _ = modules(torch)
    m = Scale()
    # x * 2 is MulBackward0 of (x, the wrapped 2): grad_input has two entries.
    m.register_backward_hook(lambda mod, gi, go: (gi[0] * 5,) + tuple(gi[1:]))
    x = vec(torch, 1.0, 2.0, True)
    m(x).sum().backward()
    log.append(["x.grad", g(x.grad)])
    Triple, _, _ = modules(torch)
    t = Triple()
    t.register_backward_hook(lambda mod, gi, go: log.append(["legacy", g(gi), g(go)]))
    out = t(vec(torch, 1.0, 2.0, True), vec(torch, 3.0, 4.0, False), 2)
    out[0].sum().backward()


def case_multi_all(torch, log):
    from torch.autograd.graph import register_multi_grad_hook
    a, b = vec(torch, 1.0, 2.0, True), vec(torch, 3.0, 4.0, True)
    c, d = a * b, a * b
    h = register_multi_grad_hook((a, b, c, d), lambda grads: log.append(["all", g(list(grads))]))
    c.sum().backward(retain_graph=True)
    c.sum().backward(inputs=(a,), retain_graph=True)
    (c.sum() + d.sum() * 2).backward(retain_graph=True)
    h.remove()
    c.sum().backward()
    log.append(["done"])


def case_multi_any(torch, log):
    from torch.autograd.graph import register_multi_grad_hook
    a, b = vec(torch, 1.0, 2.0, True), vec(torch, 3.0, 4.0, True)
    c = a * b
    register_multi_grad_hook((a, b), lambda grad: log.append(["any", g(grad)]), mode="any")
    register_multi_grad_hook((a, b, c), lambda grad: log.append(["any with c", g(grad)]), mode="any")
    c.sum().backward(retain_graph=True)
    (c * 2).sum().backward()


def has_2x(torch):
    return "register_full_backward_pre_hook" in torch.nn.Module.__dict__


def has_multi_any(torch):
    import inspect
    import torch.autograd.graph as graph
    f = getattr(graph, "register_multi_grad_hook", None)
    return f is not None and "mode" in inspect.signature(f).parameters


CASES = {
    "tuple_args": (case_tuple_args, None),
    "tuple_replace": (case_tuple_replace, None),
    "no_input_grad": (case_no_input_grad, None),
    "backward_pre": (case_backward_pre, has_2x),
    "kwargs_prepend": (case_kwargs_prepend, has_2x),
    "always_call": (case_always_call, has_2x),
    "global": (case_global, has_2x),
    "global_no_pre": (lambda torch, log: case_global(torch, log, with_pre=False), None),
    "legacy": (case_legacy, None),
    "legacy_replace": (case_legacy_replace, None),
    "multi_all": (case_multi_all, has_multi_any),
    "multi_any": (case_multi_any, has_multi_any),
}


def run_torch(name):
    import torch
    fn, _ = CASES[name]
    log = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(torch, log)
    texts = [str(w.message) for w in caught
             if w.filename.endswith(os.path.join("modules", "module.py"))]
    return {"log": log, "warnings": texts}


def run_runtime(names):
    result_path = os.path.join(tu.OUT, "module_api.runtime.json")
    os.makedirs(tu.OUT, exist_ok=True)
    r = subprocess.run([RUNTIME, result_path] + names, capture_output=True, text=True, timeout=60)
    tu.expect(r.returncode == 0, f"module_api_runtime failed: {r.stderr}")
    return json.load(open(result_path))


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return (isinstance(a, (int, float)) and isinstance(b, (int, float))
                and abs(a - b) <= 1e-5 + 1e-5 * abs(a))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def setUpModule():
    if not RUNTIME:
        raise unittest.SkipTest("HOOKSCOPE_MODULE_RUNTIME is not set (run through ctest)")


class ModuleApiTest(unittest.TestCase):
    def test_module_api_matches_pytorch(self):
        import torch
        names = [n for n, (_, needs) in CASES.items() if needs is None or needs(torch)]
        skipped = [n for n in CASES if n not in names]
        tu.expect(not skipped or int(torch.__version__.split(".")[0]) < 2,
                  f"PyTorch {torch.__version__} lacks the API of {skipped}")
        runtime = run_runtime(names)
        for name in names:
            t = run_torch(name)
            tu.expect(same(t["log"], runtime[name]["log"]),
                      f"{name}: hook logs differ\n torch   {t['log']}\n runtime {runtime[name]['log']}")
            tu.expect(t["warnings"] == runtime[name]["warnings"],
                      f"{name}: warnings differ\n torch   {t['warnings']}\n runtime {runtime[name]['warnings']}")
        print(f"checked against PyTorch {torch.__version__}: {len(names)} cases"
              + (f"; not in this version: {skipped}" if skipped else ""))


if __name__ == "__main__":
    tu.main()
