"""start()'s pass over the heap (Note [Hooks present at start], _C.alive_of
in C++): it finds tensors and modules of classes derived anywhere (tensor
and Parameter subclasses, user modules), never runs a property of an object
it passes over, and the hooks on what it finds fire recorded."""

import os
import unittest

import torch_util as tu


class PresentAtStart(unittest.TestCase):
    def test_alive_of_finds_subclasses_only(self):
        import torch
        from hookscope import _C

        class MyTensor(torch.Tensor):
            pass

        class MyParam(torch.nn.Parameter):
            pass

        class Block(torch.nn.Module):
            pass

        class Trap:
            @property
            def __class__(self):
                raise AssertionError("the heap pass ran a __class__ property")

        t = torch.ones(2).as_subclass(MyTensor)
        p = MyParam(torch.ones(3))
        blk = Block()
        trap = Trap()
        tensors, modules = _C.alive_of((torch.Tensor, torch.nn.Module))
        ids_t, ids_m = {id(x) for x in tensors}, {id(x) for x in modules}
        self.assertIn(id(t), ids_t)
        self.assertIn(id(p), ids_t)
        self.assertIn(id(blk), ids_m)
        self.assertNotIn(id(blk), ids_t)
        self.assertNotIn(id(trap), ids_t | ids_m)
        self.assertTrue(all(issubclass(type(x), torch.Tensor) for x in tensors))
        with self.assertRaises(TypeError):
            _C.alive_of((1,))

    def test_hooks_on_subclass_objects_present_at_start_fire_recorded(self):
        import torch
        import hookscope

        class Scaled(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(2, 1)

            def forward(self, x):
                return self.lin(x) * 2

        calls = []
        m = Scaled()
        m.register_forward_pre_hook(lambda mod, i: calls.append("pre"))
        p = torch.nn.Parameter(torch.ones(2))
        p.register_hook(lambda g: calls.append("param") or g)
        out = os.path.join(tu.OUT, "present_subclasses.hstrace")
        with hookscope.recording(out):
            m(p).sum().backward()
        self.assertEqual(sorted(calls), ["param", "pre"])
        fires = [e for e in tu.events(out) if e["kind"] == "hook_fire"]
        self.assertEqual(sorted(e.get("hook_kind") for e in fires), ["module_forward_pre", "tensor_pre"])


if __name__ == "__main__":
    tu.main()
