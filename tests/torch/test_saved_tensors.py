"""What each op saves for backward, PyTorch vs hookscope's runtime (Note [What
each op saves], core/autograd/ops.cpp; docs/semantics.md section P): every
runtime op, with each input requiring grad or not, runs in real PyTorch and in
our runtime (saved_tensors_runtime) under saved_tensors_hooks. Per case they
must have the same graph (Node names, edges in order, None where an input
needs no gradient), pack the same fields of the same Nodes in the same order
with the same values, unpack them in backward in the same order, and give
the same gradients. No exceptions list.

PyTorch 2.x is the reference. 2.x packs a Node's saved inputs sorted by field
name and then its saved outputs sorted by name (gen_variable_type.py
save_variables); 1.13 packed in its Functions.h struct order (MulBackward0:
self_ before other_). Under 2.x the raw pack order is compared; under 1.13
the test maps every pack to its field (grad_fn._saved_<field>), tells inputs
from outputs (outputs are packed after the op's kernel ran: a dispatch mode
counts kernels) and compares 2.x's order of those fields; and as 2.x never
packs a wrapped number (the 2.5 of `t * 2.5`, a 0-dim float64 tensor: the
cases make no other float64 tensor) while 1.13 did, it leaves those out. It
prints which version it checked. The runtime has one dtype, float32: dtypes are not
compared (PyTorch saves nll_loss's target as int64 and a wrapped number as
float64), values and shapes are."""

import json
import os
import subprocess
import unittest

import torch_util as tu

RUNTIME = os.environ.get("HOOKSCOPE_SAVED_RUNTIME", "")

A23 = [0.5, -1.0, 2.0, 1.5, -0.25, 3.0]
B34 = [0.1 * i - 0.5 for i in range(12)]
W43 = [0.05 * i - 0.3 for i in range(12)]


def leaf(shape, values, grad=True):
    return {"shape": shape, "values": values, "grad": grad}


def v(i):
    return [1.5, -2.0, 0.5, 3.0][i % 4]


def vec(grad=True, off=0):
    return leaf([4], [v(i + off) + 0.25 * off for i in range(4)], grad)


def pos(grad=True):
    return leaf([4], [0.5, 1.5, 2.0, 4.0], grad)


def cases():
    """name -> spec: leaves, then ops (values numbered leaves first)."""
    one = lambda op, *leaves, **kw: {"leaves": list(leaves), "ops": [dict(op=op, args=list(range(len(leaves))), **kw)]}  # noqa: E731
    c = {}
    for a, b in ((True, True), (True, False), (False, True)):
        tag = f"{'g' if a else 'c'}{'g' if b else 'c'}"
        for op in ("mul", "div", "add", "sub"):
            c[f"{op}_{tag}"] = one(op, vec(a), pos(b) if op == "div" else vec(b, 1))
        c[f"matmul_{tag}"] = one("matmul", leaf([2, 3], A23, a), leaf([3, 4], B34, b))
        c[f"mse_loss_{tag}"] = one("mse_loss", leaf([2, 3], A23, a), leaf([2, 3], B34[:6], b))
    c["mul_scalar"] = one("mul_scalar", vec(), scalar=2.5)
    for op in ("neg", "relu", "tanh", "sigmoid", "exp", "sum", "mean"):
        c[op] = one(op, vec())
    c["log"] = one("log", pos())
    c["reshape"] = one("reshape", leaf([2, 3], A23), shape=[3, 2])
    c["transpose"] = one("transpose", leaf([2, 3], A23))
    c["log_softmax"] = one("log_softmax", leaf([2, 3], A23))
    c["nll_loss"] = one("nll_loss", leaf([2, 3], A23), target=[2, 0])
    c["cross_entropy"] = one("cross_entropy", leaf([2, 3], A23), target=[1, 2])
    c["add_bias"] = one("add_bias", leaf([2, 3], A23), leaf([3], [0.5, -0.5, 1.0]))
    x = lambda g: leaf([2, 3], A23, g)  # noqa: E731
    for tag, (gx, gw, gb) in {"all": (True, True, True), "data": (False, True, True),
                              "frozen": (True, False, False), "no_bias_grad": (True, True, False)}.items():
        c[f"linear_{tag}"] = one("linear", x(gx), leaf([4, 3], W43, gw),
                                 leaf([4], [0.1, 0.2, -0.1, 0.0], gb))
    # Several Nodes: the order across Functions, an input saved by two.
    c["chain"] = {"leaves": [vec(), vec(True, 2)],
                  "ops": [{"op": "mul", "args": [0, 1]}, {"op": "tanh", "args": [2]},
                          {"op": "div", "args": [3, 1]}, {"op": "mul_scalar", "args": [4], "scalar": -1.5},
                          {"op": "exp", "args": [5]}]}
    return c


def run_op(torch, F, op, ins):
    fns = {"mul": lambda a, b: a * b, "div": lambda a, b: a / b, "add": lambda a, b: a + b,
           "sub": lambda a, b: a - b, "neg": lambda a: -a, "relu": torch.relu, "tanh": torch.tanh,
           "sigmoid": torch.sigmoid, "exp": torch.exp, "log": torch.log, "sum": lambda a: a.sum(),
           "mean": lambda a: a.mean(), "matmul": torch.matmul, "transpose": lambda a: a.t(),
           "log_softmax": lambda a: F.log_softmax(a, dim=1), "add_bias": lambda x, b: x + b,
           "mse_loss": F.mse_loss, "linear": F.linear}
    name = op["op"]
    if name == "mul_scalar":
        return ins[0] * op["scalar"]
    if name == "reshape":
        # The runtime's reshape is always a view (shares storage); PyTorch 2.x
        # records ViewBackward0 for it, 1.13's reshape ReshapeAliasBackward0.
        return ins[0].view(op["shape"])
    if name in ("nll_loss", "cross_entropy"):
        return getattr(F, name)(ins[0], torch.tensor(op["target"]))
    return fns[name](*ins)


class Token:
    def __init__(self, index, tensor, kernels):
        self.index, self.tensor, self.kernels = index, tensor, kernels


def walk(out):
    """Nodes reachable from out.grad_fn, depth first, each once."""
    nodes, stack = [], [out.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or any(fn is n for n in nodes):
            continue
        nodes.append(fn)
        stack += reversed([f for f, _ in fn.next_functions])
    return nodes


def node_name(fn):
    return fn.name().replace("torch::autograd::", "")


def run_torch(spec):
    import torch
    import torch.nn.functional as F
    from torch.utils._python_dispatch import TorchDispatchMode

    kernels = [0]

    class CountKernels(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kernels[0] += 1
            return func(*args, **(kwargs or {}))

    tokens, seen = [], []

    def pack(t):
        tokens.append(Token(len(tokens), t, kernels[0]))
        return tokens[-1]

    def unpack(tok):
        seen.append(tok.index)
        return tok.tensor

    leaves = [torch.tensor(lf["values"], dtype=torch.float32).reshape(lf["shape"])
              .requires_grad_(lf["grad"]) for lf in spec["leaves"]]
    values = list(leaves)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack), CountKernels():
        for op in spec["ops"]:
            values.append(run_op(torch, F, op, [values[i] for i in op["args"]]))
    out = values[-1]
    nodes = walk(out)
    graph = [{"name": node_name(fn),
              "next": [None if f is None else next(i for i, n in enumerate(nodes) if n is f)
                       for f, _ in fn.next_functions]} for fn in nodes]
    # Which Node and field each pack was for.
    packs = {}
    for ni, fn in enumerate(nodes):
        for attr in dir(fn):
            if not attr.startswith("_saved_"):
                continue
            seen.clear()
            getattr(fn, attr)
            for i in seen:
                packs[i] = (ni, attr[len("_saved_"):])
    tu.expect(sorted(packs) == list(range(len(tokens))),
              f"every pack maps to one field: {packs}, {len(tokens)} packs")
    raw = [packs[i] for i in range(len(tokens))]
    if int(torch.__version__.split(".")[0]) >= 2:
        order = list(range(len(tokens)))
    else:
        order = [i for i in order_of_2x(raw, tokens) if not wrapped_number(torch, tokens[i].tensor)]
    saved = [{"node": packs[i][0], "field": packs[i][1], "shape": list(tokens[i].tensor.shape),
              "values": tokens[i].tensor.detach().double().flatten().tolist()} for i in order]
    seen.clear()
    grads = grads_of(torch, out, leaves)
    # A Function unpacks all it saved when it runs, in its pack order (both
    # versions): under 1.13 each Function's unpacks are put in 2.x's order.
    rank = {i: r for r, i in enumerate(order)}
    unpacks, run = [], []
    for i in seen + [None]:
        if run and (i is None or packs[i][0] != packs[run[0]][0]):
            unpacks += [list(packs[j]) for j in sorted(run, key=lambda j: rank.get(j, -1)) if j in rank]
            run = []
        if i is not None:
            run.append(i)
    return {"graph": graph, "packs": saved, "unpacks": unpacks, "grads": grads, "raw": raw}


def order_of_2x(raw, tokens):
    """1.13's packs in the order 2.x packs the same fields: Nodes as they
    came; in each, the inputs (packed before its kernel ran) sorted by field,
    then the outputs sorted by field."""
    by_node = {}
    for i, (node, field) in enumerate(raw):
        by_node.setdefault(node, []).append(i)
    order = []
    for node in sorted(by_node, key=lambda n: by_node[n][0]):
        first = min(tokens[i].kernels for i in by_node[node])
        order += sorted(by_node[node], key=lambda i: (tokens[i].kernels > first, raw[i][1]))
    return order


def wrapped_number(torch, t):
    return t.dim() == 0 and t.dtype == torch.float64


def grads_of(torch, out, leaves):
    loss = out if out.dim() == 0 else out.sum()
    loss.backward()
    return [None if lf.grad is None else lf.grad.flatten().tolist() for lf in leaves]


def run_runtime(all_cases):
    spec_path = os.path.join(tu.OUT, "saved_tensors.spec.json")
    result_path = os.path.join(tu.OUT, "saved_tensors.runtime.json")
    with open(spec_path, "w") as f:
        json.dump(all_cases, f)
    r = subprocess.run([RUNTIME, spec_path, result_path], capture_output=True, text=True,
                       timeout=60)
    tu.expect(r.returncode == 0, f"saved_tensors_runtime failed: {r.stderr}")
    return json.load(open(result_path))


def close(a, b):
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(abs(x - y) <= 1e-5 + 1e-5 * abs(y) for x, y in zip(a, b))


def compare(name, torch_case, runtime_case):
    where = f"{name}:"
    tu.expect(torch_case["graph"] == runtime_case["graph"],
              f"{where} graphs differ\n torch   {torch_case['graph']}\n runtime {runtime_case['graph']}")
    t_order = [(p["node"], p["field"]) for p in torch_case["packs"]]
    r_order = [(p["node"], p["field"]) for p in runtime_case["packs"]]
    tu.expect(t_order == r_order,
              f"{where} packs differ (node index, field)\n torch   {t_order}\n runtime {r_order}")
    tu.expect(torch_case["unpacks"] == runtime_case["unpacks"],
              f"{where} unpacks in backward differ (node index, field)\n torch   "
              f"{torch_case['unpacks']}\n runtime {runtime_case['unpacks']}")
    for t, r in zip(torch_case["packs"], runtime_case["packs"]):
        tu.expect(t["shape"] == r["shape"] and close(r["values"], t["values"]),
                  f"{where} {t['field']} of node {t['node']} differs\n torch   {t}\n runtime {r}")
    for i, (t, r) in enumerate(zip(torch_case["grads"], runtime_case["grads"])):
        tu.expect(close(r, t), f"{where} gradient of leaf {i} differs: torch {t} runtime {r}")


def setUpModule():
    if not RUNTIME:
        raise unittest.SkipTest("HOOKSCOPE_SAVED_RUNTIME is not set (run through ctest)")


class SavedTensorsTest(unittest.TestCase):
    def test_saved_tensors_match_pytorch(self):
        import torch
        all_cases = cases()
        runtime = run_runtime(all_cases)
        version = torch.__version__
        reordered = []
        for name, spec in all_cases.items():
            t = run_torch(spec)
            compare(name, t, runtime[name])
            if [(p["node"], p["field"]) for p in t["packs"]] != [tuple(x) for x in t["raw"]]:
                reordered.append(name)
        print(f"checked against PyTorch {version}: {len(all_cases)} cases, "
              f"{sum(len(runtime[n]['packs']) for n in all_cases)} packs")
        if reordered:
            # Only 1.13 gets here: its struct order differs from 2.x's for these.
            tu.expect(int(version.split(".")[0]) < 2, f"2.x packs reordered: {reordered}")
            print(f"PyTorch {version} packs these in its struct order, compared in 2.x's "
                  f"(sorted by field): {reordered}")


if __name__ == "__main__":
    tu.main()
