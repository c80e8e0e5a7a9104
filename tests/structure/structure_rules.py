#!/usr/bin/env python3
"""The structure rules of check_structure.sh that need a parser, each printing one line per
violation (no output: the rule holds).

  structure_rules.py functions LIMIT FILE...   functions whose body exceeds LIMIT lines:
      Python by its syntax tree; C++ and CUDA (.hpp, .cuh, .cu, ...) by brace matching
      (comments and literals blanked first), where a function is a brace block opened at
      namespace or class level after a parameter list.
  structure_rules.py imports PACKAGE_DIR       cycles among the package's modules, counting
      every import of one module of the package by another (lazy ones inside functions too).
  structure_rules.py stride_loops FILE...      CUDA kernels launched with a grid from grid_of,
      blocks_for or blocks_for_cells (capped: src/cuda/grid_cap.hpp) whose body never reads
      gridDim or grid_warps(), so that no loop carries it past its first grid.
"""

import ast
import os
import re
import sys


def blank_comments_and_literals(text):
    """C++ source with comments, string and character literals replaced by spaces (newlines
    kept), so that braces and parentheses in them do not count."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                         re.S)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def cxx_functions(text):
    """(first line, body lines) of each function definition in C++ source."""
    code = blank_comments_and_literals(text)
    stack = []  # (kind, line of the opening brace)
    header_start = 0  # where the text that precedes the next brace begins
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == "{":
            header = code[header_start:i]
            at_scope_level = all(kind in ("namespace", "type") for kind, _ in stack)
            if re.search(r"\bnamespace\b|\bextern\s*$", header):
                kind = "namespace"
            elif re.search(r"\b(struct|class|union|enum)\b[^()]*$", header):
                kind = "type"
            elif at_scope_level and ")" in header and "=" not in header.split(")")[-1]:
                kind = "function"
            else:
                kind = "block"
            stack.append((kind, line))
            header_start = i + 1
        elif c == "}":
            if stack:
                kind, start = stack.pop()
                if kind == "function":
                    yield start, line - start - 1
            header_start = i + 1
        elif c == ";":
            header_start = i + 1


def python_functions(text, path):
    for node in ast.walk(ast.parse(text, path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.lineno, node.end_lineno - node.body[0].lineno + 1


def functions(limit, paths):
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        found = python_functions(text, path) if path.endswith(".py") else cxx_functions(text)
        for start, lines in found:
            if lines > limit:
                print(f"{path}:{start}: a function of {lines} lines (limit {limit})")


def imports(package_dir):
    package = os.path.basename(os.path.normpath(package_dir))
    modules = {os.path.splitext(n)[0] for n in os.listdir(package_dir) if n.endswith(".py")}
    edges = {m: set() for m in modules}
    for m in modules:
        path = os.path.join(package_dir, m + ".py")
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level == 1 or base == package or base.startswith(package + "."):
                    base = base[len(package) + 1:] if base.startswith(package) else base
                    if base:
                        targets.append(base.split(".")[0])
                    else:  # from . import a, b
                        targets.extend(a.name for a in node.names)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith(package + "."):
                        targets.append(a.name.split(".")[1])
            edges[m].update(t for t in targets if t in modules and t != m)
    # A cycle is a path back to where it started (depth-first, each reported once).
    seen_cycles = set()

    def visit(start, node, path):
        for nxt in sorted(edges[node]):
            if nxt == start:
                cycle = path + [start]
                key = frozenset(cycle)
                if key not in seen_cycles:
                    seen_cycles.add(key)
                    print(f"{package}: import cycle " + " -> ".join(cycle))
            elif nxt not in path:
                visit(start, nxt, path + [nxt])

    for m in sorted(modules):
        visit(m, m, [m])


CAPPED_LAUNCH = re.compile(
    r"\b(\w+)\s*(?:<[^<>;]*>)?\s*<<<\s*(?:grid_of|blocks_for|blocks_for_cells)\(")
KERNEL = re.compile(r"__global__\s+void\s+(\w+)\s*\(")


def kernel_bodies(code):
    """{name: body} of the __global__ functions in blanked C++ source (body: the text between
    the braces that follow the parameter list)."""
    bodies = {}
    for m in KERNEL.finditer(code):
        open_at = code.index("{", m.end())
        depth, i = 0, open_at
        while True:
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            if depth == 0:
                break
            i += 1
        bodies[m.group(1)] = code[open_at:i + 1]
    return bodies


def stride_loops(paths):
    code = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            code[path] = blank_comments_and_literals(f.read())
    shared = {}  # kernels of headers, seen by every file
    for path in paths:
        if not path.endswith(".cu"):
            shared.update(kernel_bodies(code[path]))
    for path in paths:
        bodies = {**shared, **kernel_bodies(code[path])}
        for m in CAPPED_LAUNCH.finditer(code[path]):
            name = m.group(1)
            line = code[path].count("\n", 0, m.start()) + 1
            body = bodies.get(name)
            if body is None:
                print(f"{path}:{line}: {name} is launched, but its definition was not found")
            elif "gridDim" not in body and "grid_warps()" not in body:
                print(f"{path}:{line}: {name} gets a capped grid but has no grid-stride loop")


def main(argv):
    if len(argv) >= 3 and argv[1] == "functions":
        functions(int(argv[2]), argv[3:])
    elif len(argv) == 3 and argv[1] == "imports":
        imports(argv[2])
    elif len(argv) >= 3 and argv[1] == "stride_loops":
        stride_loops(argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
