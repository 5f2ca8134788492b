#!/usr/bin/env python3
"""Check that src/ keeps its layers: no file includes or calls one above it.

The library's files are grouped into modules (x.c with x.h) and each module
has a layer in LAYERS below, from the top (api) down to the leaves. A module
may include the headers of, and call the functions of, modules of lower
layers only: so no two modules depend on each other, in any circle, and no
lower layer reaches up. Dependencies are read from the code itself:

  - includes: every `#include "x.h"` of a src/ file;
  - calls: every identifier followed by `(` in a .c file that names a
    function defined (not static) in another module's .c file, or a static
    inline function of another module's header.

A module missing from LAYERS fails too: a new file gets its place in the map
(and in docs/design.md's map) when it is added.

  check_layers.py [SRC_DIR]      check (default: src/ beside tests/)
  check_layers.py --self-test    plant an upward call and a circle in a copy; both must fail
"""
import os
import re
import shutil
import sys
import tempfile

# module -> layer: higher layers may use lower ones, never the reverse.
LAYERS = {
    # public calls that span the layers
    "api": 10,
    # named files and file sets; cursors, read positions over a file
    "fileset": 9, "cursor": 9,
    # the logical stream
    "file": 8,
    # segment files, descriptors, read-ahead
    "segment": 7,
    # codec=auto's glue where files and transfers meet it; the budget spaces share
    "auto_file": 6, "budget": 6,
    # the space's own state: codecs, buffers, statistics
    "space": 5,
    # the persisted index of a named file; the slots workers pack blocks in
    "index": 4, "workers": 4,
    # a block read ahead, unpacked in a worker's slot
    "readahead": 5,
    # extents, the I/O stack, the temp-directory rules
    "extent": 3, "io_stack": 3, "sweep": 3,
    # building blocks with state of their own
    "auto": 2, "blockmap": 2, "freespace": 2, "seal": 2, "io_hooks": 2, "io_throttle": 2,
    "devclock": 2,
    "codec_none": 2, "codec_lz4": 2, "codec_zstd": 2, "codec_zlib": 2, "codec_user": 2,
    # leaves
    "codec": 1, "crc32c": 1, "alloc": 1, "error": 1, "abi": 1, "io_posix": 1,
    # headers alone: types, constants, inline helpers
    "io": 0, "le": 0, "clock": 0,
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)\.h"', re.M)
# A definition: at column 0, a type and a name before "(", the body's "{" on a later line.
DEFINITION = re.compile(r'^(?!static\b)[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)'
                        r'\([^;{]*?\)\s*\n\{', re.M)
INLINE = re.compile(r'^static\s+inline\b[^;{(]*?\b([A-Za-z_]\w*)\(', re.M)
CALL = re.compile(r'\b([A-Za-z_]\w*)\s*\(')
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def module_of(name):
    return os.path.splitext(name)[0]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def scan(src):
    """Edges module -> {module: why} and the modules seen."""
    files = sorted(n for n in os.listdir(src) if n.endswith((".c", ".h")))
    text = {n: read(os.path.join(src, n)) for n in files}
    code = {n: STRING.sub('""', COMMENT.sub(" ", t)) for n, t in text.items()}
    owner = {}  # function -> module that defines it
    for n in files:
        pattern = DEFINITION if n.endswith(".c") else INLINE
        for m in pattern.finditer(code[n]):
            owner.setdefault(m.group(1), module_of(n))
    modules = {module_of(n) for n in files}
    edges = {m: {} for m in modules}
    for n in files:
        mod = module_of(n)
        for m in INCLUDE.finditer(text[n]):
            dep = m.group(1)
            if dep in modules and dep != mod:
                edges[mod].setdefault(dep, f"{n} includes {dep}.h")
        if n.endswith(".c"):
            for m in CALL.finditer(code[n]):
                dep = owner.get(m.group(1))
                if dep is not None and dep != mod:
                    edges[mod].setdefault(dep, f"{n} calls {m.group(1)}")
    return modules, edges


def circles(modules, edges):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(modules):
        if v not in index:
            visit(v)
    return out


def check(src):
    modules, edges = scan(src)
    problems = []
    for m in sorted(modules - LAYERS.keys()):
        problems.append(f"{m}: not in the layer map (tests/layers/check_layers.py, docs/design.md)")
    for comp in circles(modules, edges):
        problems.append("circle: " + " -> ".join(comp))
    for m in sorted(modules & LAYERS.keys()):
        for dep, why in sorted(edges[m].items()):
            if dep in LAYERS and LAYERS[dep] >= LAYERS[m]:
                problems.append(f"{m} (layer {LAYERS[m]}) uses {dep} (layer {LAYERS[dep]}): {why}")
    return problems, edges


def self_test(src):
    """A copy with an upward call, and one with a circle: each must be refused."""
    ok = True
    plants = {
        "an upward call": ("blockmap.c", "\nvoid bf_layers_probe(void) { bf_file_release(0); }\n"),
        "a circle": ("segment.c", "\n#include \"fileset.h\"\n"
                                  "void bf_layers_probe2(void) { bf_named_close(0); }\n"),
    }
    for what, (name, extra) in plants.items():
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "src")
            shutil.copytree(src, copy)
            with open(os.path.join(copy, name), "a", encoding="utf-8") as f:
                f.write(extra)
            problems, _ = check(copy)
            found = [p for p in problems if name.split(".")[0] in p]
            print(f"self-test, {what} in {name}: {'refused' if found else 'NOT refused'}")
            ok &= bool(found)
    return ok


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.join(here, "..", "..", "src")
    if argv[1:] == ["--self-test"]:
        return 0 if self_test(src) and not check(src)[0] else 1
    if len(argv) > 1:
        src = argv[1]
    problems, edges = check(src)
    for p in problems:
        print(f"check_layers: {p}")
    if problems:
        return 1
    n = sum(len(e) for e in edges.values())
    print(f"check_layers: {len(edges)} modules, {n} dependencies, every one downward, no circle")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
