"""Hook firing order, PyTorch vs hookscope's runtime (PyTorch #100528): the
diamond graph and a 30-Function random graph with tensor hooks (leaves and
non-leaves), retain_grad, Node pre and post hooks, built from one spec in
PyTorch (recorded by the bridge) and in our runtime (hook_order_runtime).

Each trace's fire sequence equals what its program saw, and per Function
the two runtimes fire the same hooks in the same order — exactly under
PyTorch 2.x, and under 1.13 up to the one documented difference from the
2.x order our runtime follows: 1.13 keeps a Function's tensor hooks and Node pre hooks in one list
and runs them in registration order, 2.x runs all tensor hooks first
(Note [Hook firing order]). `normalize` ignores exactly that.
`hookscope-cli diff` of the two traces finds the same hooks on every Function.
(The diff compares the hooks on each Function at the end; the per-Function
fire sequences are compared here, from the traces' events.)"""

import json
import os
import random
import subprocess
import unittest

import torch
import torch_util as tu

RUNTIME = os.environ.get("HOOKSCOPE_RUNTIME_GRAPH", "")
UNARY = ("tanh", "sigmoid", "neg", "exp")
BINARY = ("add", "mul")


def diamond_spec():
    # x -> a = exp(x), b = tanh(x) -> y = a * b -> loss = sum(y), as tests/core/autograd/test_hooks.cpp
    hooks = []
    for v in (0, 1, 2, 3):
        for k in ("pre1", "post1", "pre2", "post2"):
            hooks.append({"label": f"v{v}.{k}", "kind": k[:-1], "value": v})
    hooks += [{"label": "v0.tensor1", "kind": "tensor_pre", "value": 0},
              {"label": "v0.tensor2", "kind": "tensor_pre", "value": 0},
              {"label": "v1.retain", "kind": "retain_grad", "value": 1},
              {"label": "v1.tensor", "kind": "tensor_pre", "value": 1}]
    return {"leaves": [[0.1, 0.2, 0.3]],
            "ops": [{"op": "exp", "in": [0]}, {"op": "tanh", "in": [0]}, {"op": "mul", "in": [1, 2]}],
            "hooks": hooks}


def random_spec(seed, n_ops=30, n_leaves=3):
    rng = random.Random(seed)
    leaves = [[round(rng.uniform(-1, 1), 3) for _ in range(4)] for _ in range(n_leaves)]
    ops = []
    for i in range(n_ops):
        n = n_leaves + i
        pick = lambda: rng.randrange(max(0, n - 6), n)  # noqa: E731
        if rng.random() < 0.5:
            ops.append({"op": rng.choice(("tanh", "sigmoid", "neg")), "in": [pick()]})
        else:
            ops.append({"op": rng.choice(BINARY), "in": [pick(), pick()]})
    # Values the loss (sum of the last value) reaches.
    reach, stack = set(), [n_leaves + n_ops - 1]
    while stack:
        v = stack.pop()
        if v in reach:
            continue
        reach.add(v)
        if v >= n_leaves:
            stack += ops[v - n_leaves]["in"]
    hooks = []
    for v in sorted(reach):
        kinds = ["tensor_pre", "pre", "post", "pre", "tensor_pre", "post"]
        if v >= n_leaves:
            kinds.append("retain_grad")
        rng.shuffle(kinds)
        for j, kind in enumerate(kinds[:rng.randint(2, len(kinds))]):
            hooks.append({"label": f"v{v}.{kind}{j}", "kind": kind, "value": v})
    return {"leaves": leaves, "ops": ops, "hooks": hooks}


def run_torch(spec, trace):
    """Runs the spec in PyTorch, recorded to `trace` (None: not recorded).
    Returns the hooks' fire log, their keys and what it computed."""
    import torch
    fns = {"tanh": torch.tanh, "sigmoid": torch.sigmoid, "neg": torch.neg, "exp": torch.exp,
           "add": torch.add, "mul": torch.mul}
    log, keys = [], {}
    with tu.maybe_recording(trace):
        values = [torch.tensor(v, requires_grad=True) for v in spec["leaves"]]
        for op in spec["ops"]:
            values.append(fns[op["op"]](*[values[i] for i in op["in"]]))
        loss = values[-1].sum()
        accumulators = {}
        stack, seen = [loss.grad_fn], set()
        while stack:
            fn = stack.pop()
            if fn is None or fn in seen:
                continue
            seen.add(fn)
            if hasattr(fn, "variable"):
                accumulators[id(fn.variable)] = fn
            stack += [f for f, _ in fn.next_functions]
        for h in spec["hooks"]:
            t = values[h["value"]]
            fn = t.grad_fn if t.grad_fn is not None else accumulators[id(t)]
            label, kind = h["label"], h["kind"]
            if kind == "tensor_pre":
                handle = t.register_hook(lambda g, label=label: log.append(label))
            elif kind == "retain_grad":
                t.retain_grad()
                continue
            elif kind == "pre":
                handle = fn.register_prehook(lambda go, label=label: log.append(label))
            else:
                handle = fn.register_hook(lambda gi, go, label=label: log.append(label))
            if trace is not None:
                keys[label] = handle._hookscope.key
        loss.backward()
    grads = [v.grad for v in values if v.is_leaf or v.retains_grad]
    return log, keys, tu.digest([loss] + grads, [])


def run_runtime(spec, trace, name):
    spec_path = os.path.join(tu.OUT, f"{name}.spec.json")
    result_path = os.path.join(tu.OUT, f"{name}.runtime.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    r = subprocess.run([RUNTIME, spec_path, trace, result_path], capture_output=True, text=True,
                       timeout=60)
    tu.expect(r.returncode == 0, f"hook_order_runtime failed: {r.stderr}")
    result = json.load(open(result_path))
    return result["log"], result["keys"]


def trace_fires(trace, keys):
    """Labels of the hook fires in the trace, in order."""
    label_of = {int(k): label for label, k in keys.items()}
    return [label_of[e["key"]] for e in tu.events(trace)
            if e["kind"] == "hook_fire" and e.get("key") in label_of]


def by_kind(trace, what):
    counts = {}
    for e in tu.events(trace):
        if e["kind"] == what:
            counts[e["hook_kind"]] = counts.get(e["hook_kind"], 0) + 1
    return counts


def per_function(log):
    groups = {}
    for label in log:
        groups.setdefault(label.split(".")[0], []).append(label)
    return groups


def kind_of(label):
    rest = label.split(".")[1]
    return "tensor_pre" if rest.startswith("tensor") else rest.rstrip("0123456789")


TORCH_1 = torch.__version__.startswith("1.")


def normalize(seq):
    """Under PyTorch 1.13, ignores exactly its difference from 2.x: the
    relative order of a Function's tensor hooks and its Node pre hooks
    (stable otherwise). Under 2.x nothing is ignored: the orders must be equal."""
    if not TORCH_1:
        return list(seq)
    rank = {"tensor_pre": 0, "pre": 1, "post": 2}
    return sorted(seq, key=lambda label: rank.get(kind_of(label), 3))


def compare(spec, name):
    torch_trace = os.path.join(tu.OUT, f"{name}.torch.hstrace")
    runtime_trace = os.path.join(tu.OUT, f"{name}.runtime.hstrace")
    torch_log, torch_keys, _ = run_torch(spec, torch_trace)
    runtime_log, runtime_keys = run_runtime(spec, runtime_trace, name)
    tu.expect(trace_fires(torch_trace, torch_keys) == torch_log,
              f"{name}: the bridge's fires differ from what PyTorch ran")
    tu.expect(trace_fires(runtime_trace, runtime_keys) == runtime_log,
              f"{name}: the runtime's trace differs from what it ran")
    tu.expect(sorted(torch_log) == sorted(runtime_log), f"{name}: different hooks fired:\n"
              f"torch   {torch_log}\nruntime {runtime_log}")
    a, b = per_function(torch_log), per_function(runtime_log)
    differ_raw = [f for f in a if a[f] != b.get(f)]
    for f in a:
        tu.expect(normalize(a[f]) == normalize(b[f]),
                  f"{name}: {f} fires differently:\n torch   {a[f]}\n runtime {b[f]}")
    for what in ("hook_add", "hook_fire"):   # hook_fire counts include retain_grad's
        tu.expect(by_kind(torch_trace, what) == by_kind(runtime_trace, what),
                  f"{name}: {what} by kind differs: {by_kind(torch_trace, what)} "
                  f"{by_kind(runtime_trace, what)}")
    # hookscope-cli diff matches the Functions of both traces (by name and
    # the graph below them) and finds the same hooks on each at the end.
    code, out = tu.cli("diff", torch_trace, runtime_trace, "--format", "json")
    d = json.loads(out)
    tu.expect(d["functions"] and not any(f["differs"] for f in d["functions"]),
              f"{name}: hookscope-cli diff finds differences: {out}")
    tu.expect(not d["only_a"] and not d["only_b"], f"{name}: findings differ: {out}")
    return differ_raw


class HookOrderTest(unittest.TestCase):
    def test_diamond(self):
        compare(diamond_spec(), "diamond")

    def test_random_graph(self):
        spec = random_spec(seed=7)
        tu.expect(len(spec["ops"]) == 30, "30 Functions")
        differ = compare(spec, "random30")
        # The 1.13 vs 2.x difference is real in this graph (so 1.13 needs
        # normalize); under 2.x the raw orders are equal, Function by Function.
        if TORCH_1:
            print(f"Functions whose raw order differs (1.13 vs 2.x pre-hook order): {differ}")
        else:
            tu.expect(not differ, f"under PyTorch {torch.__version__} these Functions fire in another order: {differ}")

    def test_recording_changes_nothing(self):
        # The random graph's gradients (leaves' and retained) and its hooks'
        # order, recorded and not.
        spec = random_spec(seed=7)
        plain_log, _, plain = run_torch(spec, None)
        log, _, recorded = run_torch(spec, os.path.join(tu.OUT, "random30.same.hstrace"))
        tu.expect(plain_log == log, f"the hooks ran differently:\n plain    {plain_log}\n recorded {log}")
        tu.expect_same_result(plain, recorded, "the random graph")


if __name__ == "__main__":
    tu.main()
