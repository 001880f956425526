"""What the tree checkers (check_docs.py, check_layers.py) share for their
self-tests: a made tree's files, and the verdict line."""
import os


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
