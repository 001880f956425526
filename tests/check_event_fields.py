#!/usr/bin/env python3
"""No raw event slots outside the record's own layer (Note [Typed events]).

Readers take a kind's fields through its view (`e.as<ev::MarkReady>().param`),
writers through the typed emitters (`trace::emit_mark_ready(...)` or
`trace::emit(ev::MarkReady{...})`): what `arg`, `actor` and `sub` hold per
kind is said once, in core/trace/event_table.h. This check fails on `.arg`,
`.actor` or `.sub` (or `->`) and on a positional `emit(EventKind::...)` in
core/, render/, app/ and the bridge's C++ (python/hookscope/csrc/), except:
  * core/trace/: the record, its file and packed layouts, emission;
  * core/export/jsonl.cpp: JSON Lines prints the raw slots beside the named keys;
  * python/hookscope/csrc/module.cpp: `_C.emit`, whose keyword calls
    tests/check_bridge_emits.py checks against the table.
tests/, bench/ and fuzz/ craft and mutate records on purpose and are not
scanned. node, key and owner keep one meaning in every kind and may be read
directly.

  check_event_fields.py SOURCE_DIR | --self-test
"""
import pathlib
import re
import sys
import unittest

from check_util import strip_comments_and_strings

SCANNED = ("core", "render", "app", "python/hookscope/csrc")
SLOT_ALLOWED = ("core/trace/", "core/export/jsonl.cpp")
EMIT_ALLOWED = ("core/trace/", "python/hookscope/csrc/module.cpp")

RAW_SLOT = re.compile(r"(?:\.|->)\s*(arg|actor|sub)\b(?!\s*\()")
POSITIONAL_EMIT = re.compile(r"\bemit\s*\(\s*(?:trace::)?(?:EventKind::|static_cast<(?:trace::)?EventKind>)")


def check_text(text, rel):
    problems = []
    code = strip_comments_and_strings(text)
    for lineno, line in enumerate(code.split("\n"), 1):
        if not rel.startswith(SLOT_ALLOWED):
            for m in RAW_SLOT.finditer(line):
                problems.append(f"{rel}:{lineno}: reads or writes the raw slot `{m.group(1)}`: take the "
                                f"field from its kind's view (e.as<ev::Kind>().name; core/trace/event_table.h)")
        if not rel.startswith(EMIT_ALLOWED) and POSITIONAL_EMIT.search(line):
            problems.append(f"{rel}:{lineno}: positional emit(EventKind...): call the kind's typed emitter "
                            f"(core/trace/emitters_*.h) or emit(ev::Kind{{...}})")
    return problems


def check_tree(root):
    root = pathlib.Path(root)
    problems, scanned = [], 0
    for top in SCANNED:
        for path in sorted((root / top).rglob("*")):
            if path.suffix not in (".cpp", ".h", ".cu", ".cc") or not path.is_file():
                continue
            scanned += 1
            problems += check_text(path.read_text(errors="replace"), path.relative_to(root).as_posix())
    return scanned, problems


class SelfTest(unittest.TestCase):
    def test_raw_reads_and_writes_are_found(self):
        src = "x = e.arg;\nif (ev->actor) {}\ne.sub = 3;\nconst auto p = e.as<ev::MarkReady>().param;\n"
        problems = check_text(src, "core/analysis/x.cpp")
        self.assertEqual([p.split(":")[1] for p in problems], ["1", "2", "3"])

    def test_comments_strings_and_calls_are_not_code(self):
        src = ('// e.arg is the parameter\n/* e.actor\n e.sub */ s = "a.sub";\n'
               'fmt::format(R"(x.arg)"); name.substr(1); opts.sub(2);\n')
        self.assertEqual(check_text(src, "app/x.cpp"), [])

    def test_the_record_layer_may(self):
        self.assertEqual(check_text("e.arg = 1;\n", "core/trace/reader.cpp"), [])
        self.assertEqual(check_text("e.arg = 1;\n", "core/export/jsonl.cpp"), [])
        self.assertEqual(len(check_text("e.arg = 1;\n", "core/export/chrome.cpp")), 1)

    def test_positional_emits_are_found(self):
        src = "trace::emit(EventKind::kMarkReady, 0, n);\ntrace::emit(trace::ev::MarkReady{.owner = 1});\n"
        problems = check_text(src, "python/hookscope/csrc/observers.cpp")
        self.assertEqual(len(problems), 1)
        self.assertIn("observers.cpp:1: positional emit", problems[0])
        self.assertEqual(check_text(src.split("\n")[0], "python/hookscope/csrc/module.cpp"), [])


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        unittest.main(argv=[sys.argv[0]])
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    scanned, problems = check_tree(sys.argv[1])
    if scanned < 50:
        sys.exit(f"check_event_fields: only {scanned} sources under {sys.argv[1]}: wrong folder?")
    for p in problems:
        print(p)
    print(f"check_event_fields: {scanned} sources, {len(problems)} raw slot uses")
    sys.exit(1 if problems else 0)
