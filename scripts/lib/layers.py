#!/usr/bin/env python3
"""The engine's floors, checked: every file of engine/ (a unit: NAME.c and NAME.h) is on one floor of the table
under "## Floors" in docs/architecture.md, and includes only the headers of units on its own floor or below, with no
circle among units. Prints what is wrong, naming the file, the line and the floors, and exits 1; else prints the
floors and exits 0.

  python3 scripts/lib/layers.py [ROOT]     (ROOT: the source tree, default: this script's)
"""
import os
import re
import sys


def read_floors(doc):
    """{unit: (floor number, floor name)} from the table under '## Floors' of DOC, and the problems found."""
    text = open(doc, encoding="utf-8").read()
    m = re.search(r"^## Floors\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if not m:
        return {}, ["%s: no section '## Floors'" % doc]
    floors, problems = {}, []
    for line in m.group(1).splitlines():
        row = re.match(r"^\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|\s*(.+?)\s*\|\s*$", line)
        if not row:
            continue
        number, name = int(row.group(1)), row.group(2)
        for unit in re.findall(r"`([A-Za-z0-9_]+)`", row.group(3)):
            if unit in floors:
                problems.append("%s: %s is on floors %d and %d" % (doc, unit, floors[unit][0], number))
            floors[unit] = (number, name)
    return floors, problems


def engine_units(engine):
    """{unit: [its files]} of ENGINE's .c and .h files (not its tests or fuzz targets)."""
    units = {}
    for f in sorted(os.listdir(engine)):
        base, ext = os.path.splitext(f)
        if ext in (".c", ".h"):
            units.setdefault(base, []).append(os.path.join(engine, f))
    return units


def includes(path):
    """(line number, unit) of each #include "NAME.h" of PATH."""
    out = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            m = re.match(r'\s*#\s*include\s+"([^"/]+)\.h"', line)
            if m:
                out.append((n, m.group(1)))
    return out


def circles(graph):
    """The strongly connected components of GRAPH ({unit: set of units}) with more than one unit."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    doc = os.path.join(root, "docs", "architecture.md")
    engine = os.path.join(root, "engine")
    floors, problems = read_floors(doc)
    units = engine_units(engine)
    for unit in sorted(units):
        if unit not in floors:
            problems.append("engine/%s is on no floor of docs/architecture.md's table (## Floors)" %
                            os.path.basename(units[unit][0]))
    for unit in sorted(floors):
        if unit not in units:
            problems.append("docs/architecture.md: the floors name %s, which engine/ does not have" % unit)
    graph = {}
    for unit, files in sorted(units.items()):
        for path in files:
            for line, dep in includes(path):
                if dep == unit or dep not in units:
                    continue
                graph.setdefault(unit, set()).add(dep)
                if unit in floors and dep in floors and floors[dep][0] > floors[unit][0]:
                    problems.append("engine/%s:%d includes %s.h, of floor %d (%s), above its own floor %d (%s)" %
                                    (os.path.basename(path), line, dep, floors[dep][0], floors[dep][1],
                                     floors[unit][0], floors[unit][1]))
    for component in circles(graph):
        problems.append("a circle of includes among %s" % ", ".join(component))
    if problems:
        for p in problems:
            print("layers: " + p)
        return 1
    numbers = sorted(set(n for n, _ in floors.values()))
    for n in numbers:
        names = sorted(u for u, (k, _) in floors.items() if k == n)
        print("%2d %-40s %s" % (n, next(f for k, f in floors.values() if k == n), " ".join(names)))
    print("layers: %d units on %d floors; every include goes to its own floor or below, with no circle" %
          (len(units), len(numbers)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
