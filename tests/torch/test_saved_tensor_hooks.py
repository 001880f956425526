"""Saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks) recorded as
hookscope's runtime writes them: one saved_tensor_packed per pack call and
one saved_tensor_unpacked per unpack call, each with the Node that saves the
tensor and its slot, owned by the context's `with` line (Note [Which Node
packs], python/hookscope/_saved_tensors.py). PyTorch 1.13 does not tell
Python which Node packs: there the recording says so once, records none, and
changes nothing. Also: the start warning names exactly what this PyTorch
cannot record (nothing, for 1.13 and 2.6). 1.13 (label torch), 2.6 (torch2)."""

import collections
import os
import unittest
import warnings

import torch_util as tu


def program(out, hooks_cls="saved_tensors_hooks"):
    """3 steps of a small model whose forward runs under saved-tensor hooks
    that count their calls. Returns (calls, digest, hookscope warnings)."""
    import torch
    import torch.autograd.graph as graph
    calls = {"pack": 0, "unpack": 0}

    def pack(t):
        calls["pack"] += 1
        return t

    def unpack(t):
        calls["unpack"] += 1
        return t

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with tu.maybe_recording(out):
            for _ in range(3):
                x = torch.randn(3, 4, requires_grad=True)
                with graph.saved_tensors_hooks(pack, unpack):   # the owner: this line
                    loss = model(x).exp().sum()
                loss.backward()
                opt.step()
                opt.zero_grad()
                losses.append(loss)
    mine = [str(w.message) for w in said if "hookscope" in str(w.message)]
    return calls, tu.digest(losses, model.named_parameters()), mine


def supported():
    import torch
    return hasattr(torch._C._autograd, "_get_sequence_nr")


class SavedTensorHooks(unittest.TestCase):
    def test_one_event_per_pack_and_unpack_with_node_and_slot(self):
        out = os.path.join(tu.OUT, "saved_tensor_hooks.hstrace")
        calls, _, said = program(out)
        # A step: addmm saves 2 (x, weight.t()), tanh 1 (its result), addmm 2, exp 1.
        self.assertEqual(calls, {"pack": 18, "unpack": 18})
        ev = tu.events(out)
        packed = [e for e in ev if e["kind"] == "saved_tensor_packed"]
        unpacked = [e for e in ev if e["kind"] == "saved_tensor_unpacked"]
        if not supported():
            self.assertEqual((packed, unpacked), ([], []))
            self.assertEqual(len(said), 1, said)
            self.assertIn("saved_tensors_hooks pack/unpack calls are not recorded", said[0])
            return
        self.assertEqual(said, [], "nothing to say under 2.x")
        self.assertEqual(len(packed), calls["pack"])
        self.assertEqual(len(unpacked), calls["unpack"])
        names = collections.Counter(e["function"].split(" ")[0] for e in packed)
        self.assertEqual(names, {"AddmmBackward0": 12, "TanhBackward0": 3, "ExpBackward0": 3}, names)
        # Slots count each Node's packs: 0, 1 for addmm, 0 for tanh and exp.
        by_node = collections.defaultdict(list)
        for e in packed:
            by_node[e["node"]].append(e.get("arg", 0))
        self.assertTrue(all(sorted(s) == list(range(len(s))) for s in by_node.values()), by_node)
        # Each packed (Node, slot) is unpacked once, in its backward.
        self.assertEqual(collections.Counter((e["node"], e.get("arg", 0)) for e in packed),
                         collections.Counter((e["node"], e.get("arg", 0)) for e in unpacked))
        owners = {e.get("owner_label") for e in packed + unpacked}
        self.assertEqual(len(owners), 1, owners)
        self.assertTrue(owners.pop().startswith("test_saved_tensor_hooks.py:"))
        code, text = tu.cli("events", out)
        self.assertIn("saved_tensor_packed ExpBackward0 slot 0 of test_saved_tensor_hooks.py:", text)

    def test_recording_changes_nothing(self):
        plain = program(None)
        recorded = program(os.path.join(tu.OUT, "saved_tensor_hooks_same.hstrace"))
        self.assertEqual(plain[:2], recorded[:2])

    def test_save_on_cpu(self):
        import torch
        calls = {}
        torch.manual_seed(0)
        w = torch.randn(4, 4, requires_grad=True)
        out = os.path.join(tu.OUT, "save_on_cpu.hstrace")
        with tu.maybe_recording(out):
            with torch.autograd.graph.save_on_cpu():
                y = (w * w).sin().sum()
            y.backward()
        calls["grad"] = w.grad.clone()
        w.grad = None
        with torch.autograd.graph.save_on_cpu():
            y = (w * w).sin().sum()
        y.backward()
        self.assertTrue(torch.equal(calls["grad"], w.grad))
        if supported():
            ev = tu.events(out)
            self.assertEqual(len([e for e in ev if e["kind"] == "saved_tensor_packed"]), 3)
            self.assertEqual(len([e for e in ev if e["kind"] == "saved_tensor_unpacked"]), 3)


class StartWarning(unittest.TestCase):
    def start_warnings(self):
        import hookscope
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            with hookscope.recording(os.path.join(tu.OUT, "start_warning.hstrace")):
                pass
        return [str(w.message) for w in said if "hookscope" in str(w.message)]

    def test_nothing_to_say_on_a_supported_pytorch(self):
        self.assertEqual(self.start_warnings(), [])

    def test_names_exactly_what_is_missing(self):
        import torch.nn.modules.module as mm
        orig = mm.register_module_forward_hook
        del mm.register_module_forward_hook   # as a PyTorch without it
        try:
            said = self.start_warnings()
        finally:
            mm.register_module_forward_hook = orig
        self.assertEqual(len(said), 1, said)
        self.assertTrue(said[0].endswith("these are not recorded: global module hooks "
                                         "(torch.nn.modules.module.register_module_forward_hook "
                                         "not found)"), said[0])


if __name__ == "__main__":
    tu.main()
