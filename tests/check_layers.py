#!/usr/bin/env python3
"""Every #include against the layering fails here (Note [Core layers]).

The per-layer libraries (core/CMakeLists.txt) make a wrong call fail to link;
a wrong include of a header-only part (a struct, an inline function) would
still compile, so this scan reads every #include line of core/, render/ and
the GUI's app/ files and checks it against the allowed graph below, the one
docs/architecture.md draws.

  check_layers.py ROOT        scan the tree at ROOT; exit 1 naming each wrong include
  check_layers.py --self-test a tree made with wrong includes must fail, a right one pass
"""
import os
import re
import sys
import tempfile

from check_util import report, run_checker, write

# core/<folder> may include its own folder and these (runtime -> trace -> analysis -> views).
CORE = {
    "trace": set(),
    "tensor": {"trace"},
    "autograd": {"tensor", "trace"},
    "nn": {"autograd", "tensor", "trace"},
    "ddp": {"nn", "autograd", "tensor", "trace"},
    "scenarios": {"ddp", "nn", "autograd", "tensor", "trace"},
    "analysis": {"trace"},
    "export": {"analysis", "trace"},
}
CORE_FOLDERS = set(CORE)
RUNTIME = {"tensor", "autograd", "nn", "ddp", "scenarios"}
# The scenario table knows no runtime (library hookscope_scenario_catalog; the GUI parses --live with it).
CATALOG_FILES = {"core/scenarios/registry.h", "core/scenarios/registry.cpp"}
CATALOG_HEADER = "scenarios/registry.h"
# Third-party headers only the runtime layers that wrap them may include.
THIRD_PARTY = {
    "gloo/": {"ddp"},
    "nccl.h": {"ddp"},
    "cblas.h": {"tensor"},
    "openblas": {"tensor"},
    "cuda": {"tensor", "ddp"},
    "cublas": {"tensor"},
}
GUI_LIBS = ("imgui", "GLFW/", "GL/", "glad/", "CLI/")
# app/ files of the CLI (they may use the runtime); every other app/ file is linked by the GUI.
CLI_FILE = re.compile(r"^(cli|cli_.*|launch.*)\.(h|cpp)$")

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield n, m.group(1), m.group(2)


def check_file(rel, path):
    """The wrong includes of one file, as messages."""
    parts = rel.split("/")
    out = []

    def bad(n, inc, why):
        out.append(f"{rel}:{n}: #include {inc}: {why}")

    for n, kind, inc in includes(path):
        top = inc.split("/")[0]
        if parts[0] == "core":
            layer = parts[1] if len(parts) > 2 else None
            if kind == "<":
                if inc.startswith(GUI_LIBS):
                    bad(n, f"<{inc}>", "core/ includes no GUI or CLI library (ImGui, GLFW, GL, CLI11)")
                for prefix, layers in THIRD_PARTY.items():
                    if inc.startswith(prefix) and layer not in layers:
                        bad(n, f"<{inc}>", f"only core/{' or core/'.join(sorted(layers))} may include it")
                continue
            if top in ("render", "app"):
                bad(n, f'"{inc}"', "core/ depends on nothing in render/ or app/")
                continue
            if layer is None or top not in CORE_FOLDERS:
                continue
            if rel in CATALOG_FILES:
                if top != "trace" and inc != CATALOG_HEADER:
                    bad(n, f'"{inc}"', "the scenario table (hookscope_scenario_catalog) knows no "
                        "runtime: it may include trace/ only; runs go in scenarios/run.*")
                continue
            if top != layer and top not in CORE[layer]:
                allowed = ", ".join(sorted(CORE[layer] | {layer})) or layer
                bad(n, f'"{inc}"', f"core/{layer} may include only {allowed} "
                    f"(docs/architecture.md, Note [Core layers])")
        elif parts[0] == "render" and parts[1] in ("layout", "draw"):
            if top in RUNTIME and inc != CATALOG_HEADER:
                bad(n, f'"{inc}"', "render/ draws traces: it may include analysis/ and trace/, no runtime")
            if top in ("app",):
                bad(n, f'"{inc}"', "render/ depends on nothing in app/")
            if parts[1] == "layout" and kind == "<" and inc.startswith(GUI_LIBS):
                bad(n, f"<{inc}>", "render/layout/ includes no ImGui (tested headless)")
        elif parts[0] == "app" and len(parts) == 2:
            name = parts[1]
            if CLI_FILE.match(name):
                continue
            if top in RUNTIME and inc != CATALOG_HEADER:
                bad(n, f'"{inc}"', "the GUI links no runtime (Note [The GUI runs no scenario]): it may "
                    "include trace/, analysis/ and scenarios/registry.h; ask the hookscope-cli child")
            if CLI_FILE.match(inc):
                bad(n, f'"{inc}"', "the GUI links no CLI verb")
    return out


def scan(root):
    problems = []
    count = 0
    for top in ("core", "render", "app"):
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp", ".cu")):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                count += 1
                problems += check_file(rel, path)
    return count, problems


def self_test():
    """Wrong includes of each kind must be caught; a right tree must pass."""
    cases = {
        "core/tensor/t.h": ('#include "autograd/node.h"\n', "core/tensor may include only"),
        "core/trace/x.cpp": ('#include "analysis/model.h"\n', "core/trace may include only trace"),
        "core/analysis/m.cpp": ('#include "ddp/reducer.h"\n', "core/analysis may include only"),
        "core/scenarios/registry.cpp": ('#include "scenarios/ddp_scenarios.h"\n', "knows no runtime"),
        "core/analysis/g.cpp": ("#include <gloo/allreduce.h>\n", "only core/ddp may include it"),
        "core/export/i.cpp": ("#include <imgui.h>\n", "no GUI or CLI library"),
        "render/draw/v.cpp": ('#include "tensor/tensor.h"\n', "no runtime"),
        "render/layout/l.cpp": ("#include <imgui.h>\n", "includes no ImGui"),
        "app/panel_x.cpp": ('#include "ddp/ddp.h"\n', "the GUI links no runtime"),
        "app/app_y.cpp": ('#include "cli.h"\n', "links no CLI verb"),
    }
    good = {
        "core/ddp/d.cpp": '#include "nn/nn.h"\n#include <gloo/math.h>\n#include "trace/event.h"\n',
        "core/scenarios/registry.cpp": '#include "scenarios/registry.h"\n#include "trace/event.h"\n',
        "app/cli_record.cpp": '#include "scenarios/run.h"\n',
        "app/panel_z.cpp": '#include "scenarios/registry.h"\n#include "analysis/model.h"\n',
    }
    failed = []
    for rel, (text, expect) in cases.items():
        with tempfile.TemporaryDirectory() as root:
            write(root, rel, text)
            _, problems = scan(root)
            if len(problems) != 1 or expect not in problems[0]:
                failed.append(f"{rel} with {text.strip()}: expected one '{expect}', got {problems}")
    with tempfile.TemporaryDirectory() as root:
        for rel, text in good.items():
            write(root, rel, text)
        _, problems = scan(root)
        if problems:
            failed.append(f"a right tree was refused: {problems}")
    return report(failed, len(cases) + 1)


def main():
    return run_checker(__doc__, self_test, scan,
                       lambda count, n: f"check_layers: {count} files, {n} include(s) against the layering")


if __name__ == "__main__":
    sys.exit(main())
