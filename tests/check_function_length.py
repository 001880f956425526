#!/usr/bin/env python3
"""No function in render/draw is longer than 80 lines (Note [One graph drawing path]).

A function that long mixes what the frame asks with how it draws it; the
graph's draw code was split into small functions that each ask the
GraphSource one thing, and this keeps it so. A function's lines run from
the first line of its signature to its closing brace, lambdas included.

  check_function_length.py ROOT        scan ROOT/render/draw; exit 1 naming each long function
  check_function_length.py --self-test made files with long and short functions must be judged right
"""
import os
import re
import sys
import tempfile

from check_util import report, run_checker, strip_comments_and_strings, write

LIMIT = 80
FOLDERS = ("render/draw",)
# Functions allowed to be longer, each with the length it may not pass (none
# today; an entry must say why, and the check says when one got short).
KNOWN = {}

# A brace after one of these opens a scope whose members are looked into.
CONTAINER = re.compile(r'(^|\W)(namespace|class|struct|union|extern\s*"C")(\W|$)')
# In a constructor's initializer list ("Foo() : a_(1), b_{2} {"), a brace right after a
# member's name initializes it; one after ") const" and the like opens the body.
INIT_BRACE = re.compile(r"\)\s*:(?!:)[^;]*\w\s*$")
BODY_AFTER = re.compile(r"\)\s*(const|noexcept|override|final|mutable|\s)*$")
NAME = re.compile(r"([~A-Za-z_][\w:<>~]*(?:operator\s*\S+?)?)\s*$")


def functions(text):
    """(name, first line, last line) of every function body at namespace or class scope."""
    code = strip_comments_and_strings(text)
    # Preprocessor lines end a declaration's head like ';' does.
    code = re.sub(r"(?m)^[ \t]*#.*$", lambda m: ";" + " " * (len(m.group(0)) - 1), code)
    found = []
    head_start = 0  # where the declaration now being read starts
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c in ";}":
            head_start = i + 1
        elif c == "{":
            head = code[head_start:i]
            close = matching(code, i)
            if INIT_BRACE.search(head) and not BODY_AFTER.search(head):
                i = close + 1  # a member's braced initializer in a constructor's list: still the head
                continue
            if re.search(r"\)[^;]*$", head) and "=" not in head.split("(")[0]:
                name = name_of(head)
                first = head_start + len(head) - len(head.lstrip())
                found.append((name, code.count("\n", 0, first) + 1, code.count("\n", 0, close) + 1))
                i, head_start = close + 1, close + 1
                continue
            elif CONTAINER.search(head):
                head_start = i + 1  # look inside
            else:
                i, head_start = close + 1, close + 1  # an initializer, an enum: skipped whole
                continue
        i += 1
    return found


def matching(code, open_at):
    depth = 0
    for k in range(open_at, len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(code) - 1


def name_of(head):
    depth = 0
    for k, c in enumerate(head):  # the name before the first '(' at depth 0
        if c == "(" and depth == 0:
            m = NAME.search(head[:k])
            return m.group(1) if m else head[:k].strip()
        depth += c in "<"
        depth -= c in ">"
    return head.strip()


def scan(root, known=None):
    known = KNOWN if known is None else known
    problems, count = [], 0
    for top in FOLDERS:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for fn, first, last in functions(text):
                    count += 1
                    lines = last - first + 1
                    cap = known.get((rel, fn))
                    if cap is not None and lines <= LIMIT:
                        problems.append(f"{rel}:{first}: {fn} is {lines} lines now: drop it from KNOWN "
                                        f"in tests/check_function_length.py")
                    elif cap is not None and lines > cap:
                        problems.append(f"{rel}:{first}: {fn} is {lines} lines, longer than the {cap} it was "
                                        f"allowed (at most {LIMIT}: split it rather than grow it)")
                    elif cap is None and lines > LIMIT:
                        problems.append(f"{rel}:{first}: {fn} is {lines} lines (at most {LIMIT}: split it "
                                        f"into functions that each do one thing)")
    return count, problems


def body(lines):
    return "\n".join(f"  x += {k};" for k in range(lines))


def self_test():
    """Long functions of each shape must be caught, with their name and length; short ones pass."""
    long_cases = {
        "render/draw/a.cpp": (f"namespace hookscope::render {{\nvoid GraphView::draw_box(Frame& f, uint32_t u) {{\n"
                              f"{body(80)}\n}}\n}}  // namespace\n", "GraphView::draw_box is 82 lines"),
        "render/draw/b.h": (f"#pragma once\nstruct S {{\n  int f() const {{\n{body(79)}\n  }}\n}};\n",
                            "f is 81 lines"),
        "render/draw/c.cpp": ("// a comment { with a brace\nstatic const char* k = \"}\";\n"
                              "GraphViewResult GraphView::draw(const State& s,\n    int x) const {\n"
                              f"  auto l = [&](int y) {{ return y; }};\n{body(78)}\n}}\n",
                              "GraphView::draw is 82 lines"),
        "render/draw/d.cpp": (f"namespace {{\nFoo::Foo(int a)\n    : a_(a), b_{{2}} {{\n{body(79)}\n}}\n}}\n",
                              "Foo::Foo is 82 lines"),
    }
    good = {
        "render/draw/e.cpp": (f"namespace x {{\nconstexpr int kTable[] = {{\n{body(100)}\n}};\n"
                              f"enum class E : int {{\n{body(90)}\n}};\nvoid f() {{\n{body(78)}\n}}\n}}\n"),
        "render/draw/f.h": f"#pragma once\nclass C {{\n public:\n  void g() {{ }}\n{body(90)}\n}};\n",
        "render/layout/g.cpp": f"void far_away() {{\n{body(200)}\n}}\n",  # not render/draw
    }
    known = {("render/draw/k.cpp", "K::grown"): 85, ("render/draw/k.cpp", "K::split"): 90,
             ("render/draw/k.cpp", "K::kept"): 90}
    known_cases = {
        "render/draw/k.cpp": (f"void K::grown() {{\n{body(90)}\n}}\nvoid K::split() {{\n{body(10)}\n}}\n"
                              f"void K::kept() {{\n{body(85)}\n}}\n",
                              ["K::grown is 92 lines, longer than the 85", "K::split is 12 lines now: drop it"]),
    }
    failed = []
    for rel, (text, expect) in known_cases.items():
        with tempfile.TemporaryDirectory() as root:
            write(root, rel, text)
            _, problems = scan(root, known)
            if len(problems) != len(expect) or not all(e in p for e, p in zip(expect, problems)):
                failed.append(f"{rel} (known long functions): expected {expect}, got {problems}")
    for rel, (text, expect) in long_cases.items():
        with tempfile.TemporaryDirectory() as root:
            write(root, rel, text)
            _, problems = scan(root, {})
            if len(problems) != 1 or expect not in problems[0]:
                failed.append(f"{rel}: expected one '{expect}', got {problems}")
    with tempfile.TemporaryDirectory() as root:
        for rel, text in good.items():
            write(root, rel, text)
        count, problems = scan(root, {})
        if problems or count != 2:
            failed.append(f"a right tree was refused or misread ({count} functions, expected 2): {problems}")
    return report(failed, len(long_cases) + len(known_cases) + 1)


def main():
    return run_checker(__doc__, self_test, scan, lambda count, n: (
        f"check_function_length: {count} functions in {', '.join(FOLDERS)}, {n} longer than {LIMIT} lines"))


if __name__ == "__main__":
    sys.exit(main())
