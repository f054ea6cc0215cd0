#!/usr/bin/env python3
"""doc_links.py: points the links of a Markdown text at the pages of docs/ that have their headings.

    doc_links.py DOCS_DIR [EXCEPT] < TEXT

The engine's property docs link to the manual by a heading's anchor alone (`[Avro](#avro)`,
`[Packing](#packing)`), or to a file from the repository's top (`[CSV](docs/behaviour.md#csv)`); in
docs/properties.md, which holds their table, each must lead to the page that has the heading. So a link
`(#ANCHOR)` becomes `(PAGE.md)` when ANCHOR is the title of one page of DOCS_DIR, else `(PAGE.md#ANCHOR)` when
exactly one page has a heading of that anchor; a link `(docs/FILE)` becomes `(FILE)`; any other link is left as it
is. The page EXCEPT (a file name, as properties.md) is not searched. Anchors are made as GitHub makes them (lower
case, punctuation but - and _ dropped, spaces as -, -1, -2 ... after a repeated one). A link whose anchor no page
has, or several pages have, is an error naming it: exit status 1, nothing printed.
scripts/gen-properties writes docs/properties.md's table through it.
"""
import os
import re
import sys

LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(text):
    """The anchors of TEXT's headings, in order, each as (anchor, level); fenced code is not searched."""
    out, seen, fenced = [], {}, False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"^(#+)\s+(.*?)\s*$", line)
        if m:
            base = re.sub(r"\s", "-", re.sub(r"[^\w\s\-]", "", m.group(2).lower()))
            n = seen.get(base)
            seen[base] = (n or 0) + 1
            out.append((base if n is None else "%s-%d" % (base, n), len(m.group(1))))
    return out


def resolver(docs_dir, except_name):
    """A function from a link's target to the target docs/ needs; raises ValueError for an anchor found nowhere
    or in several pages."""
    titles, headings = {}, {}
    for name in sorted(os.listdir(docs_dir)):
        if not name.endswith(".md") or name == except_name:
            continue
        with open(os.path.join(docs_dir, name), encoding="utf-8") as f:
            found = anchors(f.read())
        for anchor, level in found:
            headings.setdefault(anchor, []).append(name)
            if level == 1 and (anchor, level) == found[0]:
                titles.setdefault(anchor, []).append(name)

    def resolve(target):
        if target.startswith("docs/"):
            return target[len("docs/"):]
        if not target.startswith("#"):
            return target
        anchor = target[1:]
        if len(titles.get(anchor, [])) == 1:
            return titles[anchor][0]
        pages = headings.get(anchor, [])
        if len(pages) != 1:
            where = "no page of %s" % docs_dir if not pages else "several pages (%s)" % ", ".join(pages)
            raise ValueError("the link (%s) names a heading that %s has" % (target, where))
        return "%s#%s" % (pages[0], anchor)

    return resolve


def main(argv):
    if len(argv) not in (2, 3) or argv[1].startswith("-"):
        sys.stderr.write("usage: doc_links.py DOCS_DIR [EXCEPT] < TEXT\n")
        return 2
    try:
        resolve = resolver(argv[1], argv[2] if len(argv) == 3 else None)
        text = LINK.sub(lambda m: "](%s)" % resolve(m.group(1)), sys.stdin.read())
    except OSError as e:
        sys.stderr.write("doc_links: cannot read %s: %s\n" % (e.filename, e.strerror))
        return 1
    except ValueError as e:
        sys.stderr.write("doc_links: %s\n" % e)
        return 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
