#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""steps.py: the run machine's step graph, drawn from the code.

A step is a function of lib/engine/ or lib/recipes/ that the machine runs
on an acquisition: `void NAME(zkl__acq_t *a)`, or `void NAME(zkl__acq_t
*a, int rc)` (a continuation that takes an answer's code). For every step
the table names, from its body:
  - "goes on to": the steps it names without calling them: assigned to
    r->next, r->back or a record's then, or handed to a function that
    runs them later (zkl__advance runs r->next until a step is in flight);
  - "calls": the steps it calls at once; `->back` and the like, a step
    called through a field, which the step that set the field names.

  python3 scripts/steps.py            print the table (Markdown)
  python3 scripts/steps.py --write F  put it in F between the markers
  python3 scripts/steps.py --check F  exit 1 when F's table is not today's
  --root DIR                          the tree to read (default: ..)

The markers are the lines `<!-- steps:begin -->` and `<!-- steps:end -->`.
"""
import os
import re
import sys

DIRS = ("lib/engine", "lib/recipes")
BEGIN = "<!-- steps:begin -->"
END = "<!-- steps:end -->"
SIG = re.compile(
    r"^(?:static\s+)?void\s+(\w+)\(zkl__acq_t\s*\*\s*a(?:,\s*int\s+rc)?\)\s*\{")
IDENT = re.compile(r"\b([A-Za-z_]\w*)\b(\s*\()?")
THROUGH = re.compile(r"->(\w+)\s*\(\s*a\b")


def strip(text):
    """The C text with comments and string literals blanked, lines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q:
                j += 2 if text[j] == "\\" else 1
            out.append(q + " " * (min(j, n) - i - 1) + q)
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def bodies(path):
    """(name, body, is static) of each step defined in one file."""
    lines = strip(open(path, encoding="utf-8").read()).split("\n")
    found, k = [], 0
    while k < len(lines):
        m = SIG.match(lines[k])
        if not m:
            k += 1
            continue
        depth, body, j = 0, [], k
        while j < len(lines):
            depth += lines[j].count("{") - lines[j].count("}")
            body.append(lines[j])
            j += 1
            if depth == 0:
                break
        first = body[0][m.end() - 1:]  # from the opening brace on
        found.append((m.group(1), "\n".join([first] + body[1:]),
                      lines[k].startswith("static")))
        k = j
    return found


def graph(root):
    """Rows (file, step, goes on to, calls), in file order.

    A name in a file means that file's static of that name, else a step
    defined without static elsewhere: static names repeat across files.
    The rows are the steps some function of the two folders hands on (a
    name not called), or named step_*, and every step those reach; the
    machine's own drivers (zkl__advance, the wakers) are reached by none."""
    steps, text = [], {}  # steps: (file, name, body)
    local, public = {}, set()
    for d in DIRS:
        full = os.path.join(root, d)
        for f in sorted(os.listdir(full)):
            if not f.endswith(".c"):
                continue
            key = d[4:] + "/" + f
            text[key] = strip(open(os.path.join(full, f), encoding="utf-8").read())
            for name, body, static in bodies(os.path.join(full, f)):
                steps.append((key, name, body))
                (local.setdefault(key, set()).add if static else public.add)(name)

    def ident(f, n):
        return (f, n) if n in local.get(f, ()) else (None, n)

    def refs(f, body, itself=None):
        """The steps a text names: handed on, and called."""
        goes, calls = [], []
        for m in IDENT.finditer(body):
            n = m.group(1)
            if n == itself or not (n in local.get(f, ()) or n in public):
                continue
            into = calls if m.group(2) else goes
            if ident(f, n) not in into:
                into.append(ident(f, n))
        for m in THROUGH.finditer(body):  # r->back(a, rc): set by another step
            if (None, "->" + m.group(1)) not in calls:
                calls.append((None, "->" + m.group(1)))
        return goes, calls

    edges = {ident(f, n): refs(f, body, n) for f, n, body in steps}
    wanted = {ident(f, n) for f, n, _ in steps
              if n.startswith(("step_", "zkl__step_"))}
    for f, t in text.items():
        wanted.update(refs(f, t)[0])
    todo = list(wanted)
    while todo:
        for g in sum(edges.get(todo.pop(), ([], [])), []):
            if g not in wanted:
                wanted.add(g)
                todo.append(g)
    return [(f, n, [x for _, x in edges[ident(f, n)][0]],
             [x for _, x in edges[ident(f, n)][1]])
            for f, n, _ in steps if ident(f, n) in wanted]


def table(rows):
    def cell(ns):
        return ", ".join("`%s`" % n for n in ns) or "-"
    out = [BEGIN,
           "<!-- made by scripts/steps.py --write ARCHITECTURE.md; "
           "tests/steps.sh fails when it is not today's -->",
           "",
           "| file | step | goes on to | calls |",
           "|---|---|---|---|"]
    for f, name, goes, calls in rows:
        out.append("| `%s` | `%s` | %s | %s |" % (f, name, cell(goes), cell(calls)))
    edges = sum(len(g) + len(c) for _, _, g, c in rows)
    out += ["", "%d steps, %d transitions." % (len(rows), edges), END]
    return "\n".join(out) + "\n"


def splice(doc, block):
    b, e = doc.find(BEGIN + "\n"), doc.find(END + "\n")
    if b < 0 or e < b:
        raise SystemExit("steps.py: no %s ... %s lines" % (BEGIN, END))
    return doc[:b] + block + doc[e + len(END) + 1:]


def main(argv):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    mode, target = "print", None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("--write", "--check") and args:
            mode, target = a[2:], args.pop(0)
        elif a == "--root" and args:
            root = args.pop(0)
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        else:
            print("steps.py: bad argument %s (see --help)" % a, file=sys.stderr)
            return 2
    block = table(graph(root))
    if mode == "print":
        sys.stdout.write(block)
        return 0
    doc = open(target, encoding="utf-8").read()
    new = splice(doc, block)
    if mode == "write":
        if new != doc:
            open(target, "w", encoding="utf-8").write(new)
        return 0
    if new != doc:
        print("steps.py: the step table in %s is not today's: run "
              "'python3 scripts/steps.py --write %s'" % (target, target),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
