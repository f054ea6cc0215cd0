#!/usr/bin/env python3
"""doc_block.py: replaces a generated block of a Markdown file, the lines between two marker comments.

    doc_block.py FILE NAME < CONTENT
    doc_block.py --check FILE NAME

The block of FILE is what lies between a line "<!-- NAME:begin -->" and the next line "<!-- NAME:end -->"
(each alone on its line); CONTENT (stdin) takes its place, the markers kept, so that the next run finds them
again. FILE is replaced atomically (written beside it, then renamed over it). A file without the two markers,
or with them out of order or twice, is left as it is: the error names the file and the marker, exit status 1.
--check only checks that FILE has the block's markers, so that a script can fail before it measures anything.
scripts/bench, scripts/bench-peers, scripts/bench-plan and scripts/gen-properties write docs/ with it.
"""
import os
import sys


def replace_block(text, name, content):
    """TEXT with the block NAME replaced by CONTENT; raises ValueError saying what is wrong with the markers."""
    begin, end = "<!-- %s:begin -->" % name, "<!-- %s:end -->" % name
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.strip() == begin]
    ends = [i for i, line in enumerate(lines) if line.strip() == end]
    if len(starts) != 1 or len(ends) != 1:
        raise ValueError("needs one line %s and one line %s (found %d and %d)" % (begin, end, len(starts), len(ends)))
    if ends[0] < starts[0]:
        raise ValueError("%s comes before %s" % (end, begin))
    if content and not content.endswith("\n"):
        content += "\n"
    body = content[:-1].split("\n") if content else []
    return "\n".join(lines[: starts[0] + 1] + body + lines[ends[0]:])


def main(argv):
    check = len(argv) == 4 and argv[1] == "--check"
    if check:
        argv = argv[1:]
    if len(argv) != 3 or argv[1].startswith("-"):
        sys.stderr.write("usage: doc_block.py FILE NAME < CONTENT\n       doc_block.py --check FILE NAME\n")
        return 2
    path, name = argv[1], argv[2]
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        sys.stderr.write("doc_block: cannot read %s: %s\n" % (path, e.strerror))
        return 1
    try:
        new = replace_block(text, name, "" if check else sys.stdin.read())
    except ValueError as e:
        sys.stderr.write("doc_block: %s %s\n" % (path, e))
        return 1
    if check:
        return 0
    tmp = os.path.join(os.path.dirname(os.path.abspath(path)), ".%s.%d.tmp" % (os.path.basename(path), os.getpid()))
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(new)
        os.replace(tmp, path)
    except OSError as e:
        sys.stderr.write("doc_block: cannot write %s: %s\n" % (path, e.strerror))
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
