#!/usr/bin/env python3
"""README's C++ example and examples/readme_example.cpp are the same bytes.

The consumer test (tests/consumer) builds examples/readme_example.cpp against an installed sinkscope, so
this check is what makes the README's block a program that compiles as written. Fix a failure by copying
one into the other. Usage: check_readme_example.py REPO_ROOT
"""
import sys
from pathlib import Path


def cpp_blocks(text):
    """(first line number, body) of every ```cpp block."""
    blocks, body, start = [], None, 0
    for i, line in enumerate(text.splitlines(keepends=True), 1):
        if body is None and line.startswith("```cpp"):
            body, start = [], i
        elif body is not None and line.rstrip("\n") == "```":
            blocks.append((start, "".join(body)))
            body = None
        elif body is not None:
            body.append(line)
    return blocks


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    blocks = cpp_blocks((root / "README.md").read_text(encoding="utf-8"))
    example = (root / "examples/readme_example.cpp").read_text(encoding="utf-8")
    if len(blocks) != 1:
        print(f"README.md: expected exactly one ```cpp block (the example), found {len(blocks)}")
        return 1
    line, body = blocks[0]
    if body != example:
        a, b = body.splitlines(), example.splitlines()
        k = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
        print(f"README.md:{line + 1 + k}: the ```cpp block differs from examples/readme_example.cpp:{k + 1}")
        print(f"  README:  {a[k] if k < len(a) else '<end>'}")
        print(f"  example: {b[k] if k < len(b) else '<end>'}")
        return 1
    print(f"README.md:{line}: the ```cpp block equals examples/readme_example.cpp ({len(example)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
