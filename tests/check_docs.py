#!/usr/bin/env python3
"""Docs that point true: what README.md and docs/*.md cite exists where they say.

  * every path they name (`core/trace/event.h`, [link](trace-format.md),
    `app/panel_*.cpp`) exists (a pattern matches a file);
  * every `Note [Title]` they cite is defined somewhere in the sources, and,
    where the text names a file for it (`Note [X] `core/a.h``, or
    "`core/a.h` (Note [X])"), in that file;
  * docs/architecture.md's map names every source file of the folders it
    lists file by file (render/draw/, app/), by name or a `prefix*` pattern;
  * the README's tree names each top-level folder once;
  * no source comment cites an issue number of a tracker that is not in the
    repository (say the reason instead); PyTorch's issues may be cited.

  check_docs.py ROOT         exit 1 naming each wrong pointer (file:line)
  check_docs.py --self-test  docs written wrong on purpose must fail, right ones pass
"""
import glob
import os
import re
import sys
import tempfile

from check_util import report, write

SOURCE_DIRS = ("core", "render", "app", "tests", "bench", "scripts", "fuzz", "python", "cmake", "assets", ".ci")
SOURCE_EXT = (".h", ".hpp", ".cpp", ".cu", ".py", ".sh", ".cmake", ".txt", ".supp")
# Headers of libraries we build against, named bare in the docs.
EXTERNAL = {"nccl.h"}
# Folders the architecture map lists file by file (the others it names as a whole).
MAPPED_BY_FILE = ("render/draw", "app")

NOTE = re.compile(r"Note \[([^\]]+)\]")
TICK = re.compile(r"`([^`]+)`")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
# A comment line that is a Note's heading: the Note first on the line (alone, or with ": text"),
# the comment going on below.
NOTE_HEADING = re.compile(r"^\s*(?://|#|\*)\s*Note \[([^\]]+)\](?:\s*$|:\s)")
COMMENT = re.compile(r"^\s*(?://|#|\*)")
DOC_NOTE_HEADING = re.compile(r"^\s*Note \[([^\]]+)\]\s*$")
UNDERLINE = re.compile(r"^\s*~{3,}\s*$")
PATHLIKE = re.compile(r"^[\w.*/-]+$")
PLAIN_PATH = re.compile(r"(?<![\w/.\[(`-])(?:(?:" + "|".join(re.escape(d) for d in SOURCE_DIRS + ("docs",)) +
                        r")/[\w.*/-]+|[\w-]+\.(?:h|cpp|cu|py|sh|md))")


def source_files(root):
    for top in SOURCE_DIRS:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if d not in ("__pycache__",)]
            for name in files:
                if name.endswith(SOURCE_EXT) or name == "run":
                    yield os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")


def note_homes(root):
    """Title -> the files that define it (a heading line followed by more comment)."""
    homes = {}
    for rel in source_files(root):
        try:
            with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                lines = f.readlines()
        except OSError:
            continue
        for i, line in enumerate(lines):
            m = NOTE_HEADING.match(line)
            if m and i + 1 < len(lines) and COMMENT.match(lines[i + 1]):
                homes.setdefault(m.group(1), set()).add(rel)
            # In a Python docstring: the heading alone, underlined with ~~~.
            m = DOC_NOTE_HEADING.match(line)
            if m and i + 1 < len(lines) and UNDERLINE.match(lines[i + 1]):
                homes.setdefault(m.group(1), set()).add(rel)
    return homes


def docs(root):
    out = [os.path.join(root, "README.md")]
    out += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    return [d for d in out if os.path.exists(d)]


def resolve(root, doc_dir, token, basenames):
    """The repository files a cited path means ([] when it names none), or None when it is no path."""
    token = token.strip().rstrip(".,:;")
    token = re.sub(r"\(\)$", "", token)
    if not PATHLIKE.match(token) or token.startswith(("/", "-")) or "//" in token:
        return None
    if re.search(r"(^|/)[A-Z]{3,}[^/]*$|_[A-Z]{3,}", token) or token in EXTERNAL:
        return None  # a template (`app/panel_NAME.cpp`) or another project's header
    first = token.split("/")[0]
    if "/" in token and first in SOURCE_DIRS + ("docs",):
        hits = glob.glob(os.path.join(root, token)) or glob.glob(os.path.join(root, token + "*"))
        return [os.path.relpath(h, root).replace(os.sep, "/") for h in hits]
    if "/" not in token and re.search(r"\.(h|cpp|cu|py|sh|md|cmake)$", token):
        here = os.path.join(doc_dir, token)
        if os.path.exists(here):
            return [os.path.relpath(here, root).replace(os.sep, "/")]
        return sorted(basenames.get(token, []))
    return None


def check(root):
    problems = []
    homes = note_homes(root)
    basenames = {}
    for rel in source_files(root):
        basenames.setdefault(os.path.basename(rel), set()).add(rel)
    for doc in docs(root):
        rel_doc = os.path.relpath(doc, root)
        doc_dir = os.path.dirname(doc)
        with open(doc, encoding="utf-8") as f:
            lines = f.read().split("\n")
        in_code = False
        for n, line in enumerate(lines, 1):
            if line.startswith("```"):
                in_code = not in_code
                continue
            where = f"{rel_doc}:{n}"
            # Paths: in backticks, and markdown links to files of the repository.
            tokens = [(m.start(), m.group(1)) for m in TICK.finditer(line)] if not in_code else []
            for m in LINK.finditer(line):
                target = m.group(1)
                if "://" in target or target.startswith("mailto:"):
                    continue
                if not os.path.exists(os.path.normpath(os.path.join(doc_dir, target))):
                    problems.append(f"{where}: link to {target}: no such file")
            cited = []  # (column, [files]) of the paths on this line
            for col, tok in tokens:
                files = resolve(root, doc_dir, tok, basenames)
                if files is None:
                    continue
                if not files:
                    problems.append(f"{where}: `{tok}`: no such file in the repository")
                    continue
                cited.append((col, files))
            # Paths in plain text ("Note [X] (core/a.h)"); a bare name there may be another
            # project's file (PyTorch's engine.cpp), so only names of ours count.
            plain = TICK.sub(lambda m: " " * len(m.group(0)), line) if not in_code else ""
            for m in PLAIN_PATH.finditer(plain):
                tok = m.group(0).rstrip(".,:;)")
                files = resolve(root, doc_dir, tok, basenames)
                if files is None or (not files and "/" not in tok):
                    continue
                if not files:
                    problems.append(f"{where}: {tok}: no such file in the repository")
                    continue
                cited.append((m.start(), files))
            cited.sort()
            # Notes: defined somewhere; in the file the text names for them.
            for m in NOTE.finditer(line):
                title = m.group(1)
                if title in ("Title", "..") or line[:m.start()].endswith("PyTorch's "):
                    continue  # a template, or PyTorch's own Note
                if title not in homes:
                    problems.append(f"{where}: Note [{title}] is defined in no source file")
                    continue
                named = note_file(line, m, cited)
                if named is not None and not (set(named) & homes[title]):
                    problems.append(f"{where}: Note [{title}] is not in {', '.join(named)}: it is in "
                                    f"{', '.join(sorted(homes[title]))}")
    problems += check_map(root)
    problems += check_readme_tree(root)
    problems += check_issue_numbers(root)
    return problems


ISSUE = re.compile(r"(?<!PyTorch )\b[Ii]ssues? \d")


def check_issue_numbers(root):
    problems = []
    for rel in source_files(root):
        try:
            with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    if ISSUE.search(line):
                        problems.append(f"{rel}:{n}: cites an issue number no reader can open; "
                                        "say the reason instead")
        except OSError:
            continue
    return problems


def note_file(line, m, cited):
    """The files the text names for the Note at m: the path just after it (before the next Note or
    ';'/'|'), else the path just before it when the Note is in parentheses after that path."""
    end = m.end()
    stop = len(line)
    nxt = NOTE.search(line, end)
    for s in (nxt.start() if nxt else len(line), line.find(";", end), line.find("|", end)):
        if s != -1:
            stop = min(stop, s)
    gap = line[end:stop]
    for col, files in cited:
        if end <= col < stop and not re.search(r"[.(]\s|\)|\bsee\b", gap[: col - end]):
            return files
    # "`core/a.h` (Note [X], Note [Y] in `b.h`)": the path before the parenthesis.
    before = [(col, files) for col, files in cited if col < m.start()]
    if before:
        col, files = before[-1]
        between = line[col:m.start()]
        if re.match(r"^`[^`]+`\s*\((?:Note \[[^\]]+\],?\s*)*$", between):
            return files
    return None


def check_map(root):
    path = os.path.join(root, "docs", "architecture.md")
    if not os.path.exists(path):
        return []
    text = re.sub(r"(?ms)^```.*?^```", "", open(path, encoding="utf-8").read())
    names = set()
    for tok in TICK.findall(text):
        for part in re.split(r"[\s,()]+", tok):
            if part:
                names.add(part)
    problems = []
    for folder in MAPPED_BY_FILE:
        for full in sorted(glob.glob(os.path.join(root, folder, "*"))):
            name = os.path.basename(full)
            if not name.endswith((".h", ".cpp")):
                continue
            rel = f"{folder}/{name}"
            stem = name.rsplit(".", 1)[0]
            if not any(covers(n, folder, name, stem) for n in names):
                problems.append(f"docs/architecture.md: the map names no {rel} (add it to its row)")
    return problems


def covers(n, folder, name, stem):
    n = n.rstrip(".,:;")
    if n.startswith(folder + "/"):
        n = n[len(folder) + 1:]
    if "/" in n:
        return False
    if n in (name, stem) or n == stem + ".*":
        return True
    if "*" in n:
        return re.fullmatch(re.escape(n).replace(r"\*", ".*"), name) is not None or \
            re.fullmatch(re.escape(n).replace(r"\*", ".*"), stem) is not None
    return False


def check_readme_tree(root):
    path = os.path.join(root, "README.md")
    if not os.path.exists(path):
        return []
    problems = []
    seen = {}
    in_code = False
    for n, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        if line.startswith("```"):
            in_code = not in_code
            continue
        m = re.match(r"^([\w.-]+)/\s", line) if in_code else None
        if m:
            if m.group(1) in seen:
                problems.append(f"README.md:{n}: {m.group(1)}/ is listed again (first at line {seen[m.group(1)]})")
            seen.setdefault(m.group(1), n)
    return problems


def self_test():
    src = {
        "core/a.h": "// Note [Alpha]\n// what alpha is\nint a;\n",
        "core/b.h": "// Note [Beta]\n// ~~~~~~~~~~~\n// beta\n// Note [Alpha] (a reference, not its home)\n",
        "app/app.cpp": "", "app/panel_x.cpp": "", "render/draw/graph_x.cpp": "",
        "core/c.cpp": "// as PyTorch issue 58354 shows\n",
    }
    good_arch = ("Note [Alpha] `core/a.h`; `core/b.h` (Note [Beta]); [b](../core/b.h)\n"
                 "`core/a.h` (Note [Alpha]), `b.h`; Note [Beta] (core/b.h)\n"
                 "`app/app.*`, `panel_*`, `graph_x`\n")
    cases = {
        "Note [Alpha] `core/b.h`": "is not in core/b.h",
        "`core/a.h` (Note [Beta])": "Note [Beta] is not in core/a.h",
        "Note [Gamma] `core/a.h`": "Note [Gamma] is defined in no source file",
        "## S (Note [Beta], a.h)": "Note [Beta] is not in core/a.h",
        "Note [Alpha] in core/nothere.h": "core/nothere.h: no such file",
        "see `core/missing.h`": "`core/missing.h`: no such file",
        "[x](nothere.md)": "link to nothere.md: no such file",
    }
    failed = []

    def run(extra_arch, readme="```\ncore/    x\napp/     y\n```\n"):
        with tempfile.TemporaryDirectory() as root:
            for rel, text in src.items():
                write(root, rel, text)
            write(root, "docs/architecture.md", good_arch + extra_arch + "\n")
            write(root, "README.md", readme)
            return check(root)

    if run(""):
        failed.append(f"right docs refused: {run('')}")
    for text, expect in cases.items():
        got = run(text)
        if len(got) != 1 or expect not in got[0]:
            failed.append(f"'{text}': expected one '{expect}', got {got}")
    got = run("", readme="```\ncore/ x\npython/ y\npython/ z\n```\n")
    if len(got) != 1 or "python/ is listed again" not in got[0]:
        failed.append(f"a folder listed twice: got {got}")
    src["render/draw/graph_new.cpp"] = ""
    got = run("")
    if len(got) != 1 or "names no render/draw/graph_new.cpp" not in got[0]:
        failed.append(f"a file missing from the map: got {got}")
    del src["render/draw/graph_new.cpp"]
    src["core/d.h"] = "int x;  // fixed in Issue " + "12\n"
    got = run("")
    if len(got) != 1 or "core/d.h:1: cites an issue number" not in got[0]:
        failed.append(f"a comment citing an issue: got {got}")
    return report(failed, len(cases) + 4)


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    print(f"check_docs: {len(docs(sys.argv[1]))} documents, {len(problems)} wrong pointer(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
