#!/usr/bin/env python3
"""The torch bridge's _C.emit calls against the table of event kinds.

Every `_C.emit(_C.EV_<kind>, slot=value, ...)` in python/hookscope/ must name
its kind as `_C.EV_<name>`, pass fields by their slot (node, key, arg, owner,
actor, sub), give every slot the table marks REQ for that kind and no slot the
kind does not have (core/trace/event_table.h, Note [Typed events]), and every
slot marked GIVEN (a hook's Function: passed by every writer, 0 only for a
hook on no Function, Note [Hooks on no Function]). So a field the C++ runtime
fills and the bridge forgets fails here, without torch.

  check_bridge_emits.py TABLE_DUMP SOURCE_DIR   (TABLE_DUMP: tests/event_table_dump)
"""
import ast
import json
import pathlib
import subprocess
import sys
import unittest

SLOTS = ("node", "key", "arg", "owner", "actor", "sub")


def load_table(dump_exe):
    rows = json.loads(subprocess.run([dump_exe], check=True, capture_output=True, text=True).stdout)
    return {row["name"]: row for row in rows}


def _ev_name(node):
    """`_C.EV_name` -> "name"; None for anything else."""
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "_C" and node.attr.startswith("EV_")):
        return node.attr[3:]
    return None


def check_source(text, where, table):
    """Problems (strings "file:line: what") of one Python source."""
    problems = []
    for call in ast.walk(ast.parse(text, filename=where)):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "emit" and isinstance(call.func.value, ast.Name)
                and call.func.value.id == "_C"):
            continue
        at = f"{where}:{call.lineno}"
        kind_node = call.args[0] if call.args else next(
            (k.value for k in call.keywords if k.arg == "kind"), None)
        name = _ev_name(kind_node)
        if name is None:
            problems.append(f"{at}: the kind must be written _C.EV_<name>, so that this check can "
                            "read it")
            continue
        row = table.get(name)
        if row is None:
            problems.append(f"{at}: _C.EV_{name} is no kind of the table (core/trace/event_table.h)")
            continue
        if len(call.args) > 1:
            problems.append(f"{at}: {name}: pass fields by slot name (node=, key=, arg=, owner=, "
                            "actor=, sub=), not by position")
        given = set()
        for k in call.keywords:
            if k.arg is None:
                problems.append(f"{at}: {name}: **kwargs hides which slots are given; name them")
            elif k.arg != "kind":
                given.add(k.arg)
        fields = {f["slot"]: f for f in row["fields"]}
        for slot in sorted(given - set(fields)):
            what = "not a slot" if slot not in SLOTS else f"not a field of {name}"
            problems.append(f"{at}: {name}: {slot}= is {what}; its fields: "
                            + ", ".join(f"{f['name']} ({f['slot']})" for f in row["fields"]))
        for slot, f in fields.items():
            if f["required"] and slot not in given:
                problems.append(
                    f"{at}: {name} misses {slot}= ({f['name']}, {f['type']}), which every writer "
                    f"fills (REQ in core/trace/event_table.h): pass it, or, if zero is true for "
                    f"every writer that leaves it, make it OPT there and say what zero means")
            elif f["given"] and slot not in given:
                problems.append(
                    f"{at}: {name} misses {slot}= ({f['name']}, {f['type']}), which every writer "
                    f"passes (GIVEN in core/trace/event_table.h; 0 only where the table's comment "
                    f"says): pass it")
    return problems


def check_tree(source_dir, table):
    root = pathlib.Path(source_dir)
    problems = []
    files = sorted((root / "python" / "hookscope").rglob("*.py"))
    for path in files:
        problems += check_source(path.read_text(), str(path.relative_to(root)), table)
    return files, problems


class BridgeEmits(unittest.TestCase):
    table = None
    source_dir = None

    def test_bridge_matches_table(self):
        files, problems = check_tree(self.source_dir, self.table)
        self.assertTrue(files, f"no Python sources under {self.source_dir}/python/hookscope")
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_the_bridge_has_emits_to_check(self):
        # A scan that finds nothing would pass whatever the bridge does.
        n = 0
        for path in (pathlib.Path(self.source_dir) / "python" / "hookscope").rglob("*.py"):
            n += sum(1 for c in ast.walk(ast.parse(path.read_text()))
                     if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                     and c.func.attr == "emit")
        self.assertGreater(n, 10)

    def test_a_missing_required_field_is_caught(self):
        # The bridge's reducer_destroyed once had no hooks-removed count.
        src = "_C.emit(_C.EV_reducer_destroyed, arg=0, owner=self.owner)\n"
        problems = check_source(src, "x.py", self.table)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("x.py:1: reducer_destroyed misses actor= (hooks_removed", problems[0])

    def test_a_slot_the_kind_does_not_have_is_caught(self):
        src = "_C.emit(_C.EV_owner_destroyed, owner=3, arg=1)\n_C.emit(_C.EV_node_released, node=1, nod=2)\n"
        problems = check_source(src, "x.py", self.table)
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("x.py:1: owner_destroyed: arg= is not a field of owner_destroyed", problems[0])
        self.assertIn("x.py:2: node_released: nod= is not a slot", problems[1])

    def test_kinds_that_cannot_be_read_are_caught(self):
        src = ("_C.emit(kind, owner=1)\n_C.emit(_C.EV_no_such_kind)\n"
               "_C.emit(_C.EV_node_released, 5)\n_C.emit(_C.EV_node_released, **fields)\n")
        problems = check_source(src, "x.py", self.table)
        self.assertEqual(len(problems), 6, problems)  # the last two also miss node=
        self.assertIn("x.py:1: the kind must be written _C.EV_<name>", problems[0])
        self.assertIn("x.py:2: _C.EV_no_such_kind is no kind", problems[1])

    def test_a_hook_event_without_its_function_is_caught(self):
        # node is GIVEN, not REQ: 0 is true for a comm hook, but every writer
        # passes it, so a tensor or Node hook's fire cannot lose its Function.
        src = ("_C.emit(_C.EV_hook_fire, sub=i.kind, key=i.key, owner=i.owner)\n"
               "_C.emit(_C.EV_hook_fire, sub=_C.HOOK_comm_hook, node=0, key=k, owner=o, actor=b, arg=n)\n")
        problems = check_source(src, "x.py", self.table)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("x.py:1: hook_fire misses node= (node, uint64_t), which every writer passes (GIVEN",
                      problems[0])
        for kind in ("hook_add", "hook_fire", "hook_remove", "hook_remove_failed"):
            node = next(f for f in self.table[kind]["fields"] if f["slot"] == "node")
            self.assertEqual((node["required"], node["given"]), (False, True), kind)

    def test_optional_fields_may_be_left_out(self):
        src = "_C.emit(_C.EV_hook_add, sub=1, node=2, key=3, owner=4)\n"
        self.assertEqual(check_source(src, "x.py", self.table), [])


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    BridgeEmits.table = load_table(sys.argv[1])
    BridgeEmits.source_dir = sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:])
