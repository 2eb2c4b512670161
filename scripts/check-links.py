#!/usr/bin/env python3
"""Checks that every relative link in README*.md and docs/*.md resolves: the file
exists, and a `#anchor` names a heading of that file under GitHub's rules (the
heading's text lowercased, punctuation dropped, spaces to hyphens, a repeated
heading suffixed -1, -2, ...). Also checks each docs page and anchor that a source
file's comments name (`docs/<page>.md#<anchor>`). Prints each broken link and exits 1;
needs only python3.

    scripts/check-links.py          the repository this script lives in
    scripts/check-links.py DIR      another checkout
"""

import os
import re
import sys
import urllib.parse

ROOT = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))
)
SKIP_DIRS = {".git", "target", "node_modules", "vendor"}
SOURCE_EXTS = (".rs", ".sh", ".mjs", ".js", ".py", ".toml", ".html")

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ID = re.compile(r"""<a\s+(?:name|id)=["']([^"']+)["']""")
INLINE_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)")
CODE_SPAN = re.compile(r"`+[^`]*`+")
SOURCE_DOC_LINK = re.compile(r"\b(docs/[\w.-]+\.md)#([\w-]+)")


def prose_lines(text):
    """The lines outside fenced code blocks, with their numbers."""
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading):
    """GitHub's anchor for a heading's markdown text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
    text = text.replace("`", "")
    text = re.sub(r"(\*\*|__|\*|(?<!\w)_|_(?!\w))", "", text)  # emphasis markers
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    """Every anchor a markdown file offers."""
    if path not in _anchors:
        found, seen = set(), {}
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for _, line in prose_lines(text):
            found.update(HTML_ID.findall(line))
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        _anchors[path] = found
    return _anchors[path]


def check(source, where, target, problems):
    """One link from `source` (`where` is the line to report): a relative path, an
    anchor, or both."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, mailto:, ...
        return
    path, _, anchor = target.partition("#")
    path = urllib.parse.unquote(path)
    anchor = urllib.parse.unquote(anchor)
    dest = os.path.normpath(os.path.join(os.path.dirname(source), path)) if path else source
    if not os.path.exists(dest):
        problems.append(f"{where}: {target}: no such file")
    elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
        problems.append(f"{where}: {target}: no heading with anchor #{anchor}")


def markdown_files():
    names = [n for n in sorted(os.listdir(ROOT)) if n.startswith("README") and n.endswith(".md")]
    docs = os.path.join(ROOT, "docs")
    names += [os.path.join("docs", n) for n in sorted(os.listdir(docs)) if n.endswith(".md")]
    return [os.path.join(ROOT, n) for n in names]


def source_files():
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        for name in files:
            if name.endswith(SOURCE_EXTS):
                yield os.path.join(folder, name)


def main():
    problems = []
    for doc in markdown_files():
        with open(doc, encoding="utf-8") as f:
            text = f.read()
        for number, line in prose_lines(text):
            line = CODE_SPAN.sub("", line)
            for target in INLINE_LINK.findall(line):
                check(doc, f"{os.path.relpath(doc, ROOT)}:{number}", target, problems)
            m = REF_LINK.match(line)
            if m:
                check(doc, f"{os.path.relpath(doc, ROOT)}:{number}", m.group(1), problems)
    for source in source_files():
        try:
            with open(source, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(lines, 1):
            for path, anchor in SOURCE_DOC_LINK.findall(line):
                where = f"{os.path.relpath(source, ROOT)}:{number}"
                check(os.path.join(ROOT, "README.md"), where, f"{path}#{anchor}", problems)
    for p in problems:
        print(p)
    print(f"links: {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
