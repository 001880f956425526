"""What the tree checkers (check_docs.py, check_layers.py, check_event_fields.py,
check_function_length.py) share: C++ code without its comments and strings,
and for their self-tests a made tree's files and the verdict line."""
import os
import sys


def write(root, rel, text):
    """Writes `text` to root/rel, making its folders."""
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def report(failed, total):
    """Prints each failed case and 'N of M cases right'; the exit status."""
    for f in failed:
        print("self-test:", f)
    print(f"self-test: {total - len(failed)} of {total} cases right")
    return 1 if failed else 0


def strip_comments_and_strings(text):
    """Code only: comments and string literals blanked, line numbers kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith('R"(', i):
            j = text.find(')"', i + 3)
            j = n if j < 0 else j + 2
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def run_checker(doc, self_test, scan, summary):
    """A checker's command line: ROOT scans (scan(root) -> (count, problems)),
    printing each problem and summary(count, problems); --self-test runs its self-test."""
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(doc)
        return 2
    count, problems = scan(sys.argv[1])
    for p in problems:
        print(p)
    print(summary(count, len(problems)))
    return 1 if problems else 0
