#!/usr/bin/env python3
"""Every public asynchronous verb (a function taking a CompletionToken) documents, in the comment right
before one of its declarations, the five paragraphs a user needs (Boost.MySQL's convention):

    @par Executor, @par Per-operation cancellation, @par Errors, @par Thread safety, @par Object lifetimes

Overloads share the paragraphs of one of them. Private `initiate*` helpers are not verbs.
usage: async_verbs_documented.py [--at-least N] HEADER...
(exit 1 and a list of what is missing, if anything is, or if fewer than N verbs were found: a check that
found no verb, because the headers moved or the pattern broke, must not pass)"""
import re
import sys

PARAGRAPHS = ["@par Executor", "@par Per-operation cancellation", "@par Errors", "@par Thread safety",
              "@par Object lifetimes"]
DECLARATION = re.compile(r"^\s*(?:friend\s+)?auto\s+(\w+)\s*\(")


def comment_before(lines, i):
    """The comment block above line i, past the template header and requires-clauses."""
    j = i - 1
    while j >= 0 and re.match(r"^\s*(template\s*<|requires\b|&&|\|\||!std::|std::|\(|[A-Za-z_:<>]+\s*(&&|\|\|)?\s*$)",
                              lines[j]) and not lines[j].strip().startswith(("//", "*", "/*")):
        j -= 1
    block = []
    while j >= 0:
        s = lines[j].strip()
        if s.startswith(("///", "*", "/**", "*/")):
            block.append(s)
            if s.startswith("/**"):
                break
            j -= 1
        else:
            break
    return "\n".join(reversed(block))


def verbs(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    found = {}
    for i, line in enumerate(lines):
        m = DECLARATION.match(line)
        if not m or m.group(1).startswith("initiate"):
            continue
        head = " ".join(lines[i:i + 4])
        if "CompletionToken" not in head.split("{")[0] and "CompletionToken" not in lines[i - 1] + lines[i - 2]:
            continue
        found.setdefault(m.group(1), []).append((i + 1, comment_before(lines, i)))
    return found


args = sys.argv[1:]
at_least = 1
if args[:1] == ["--at-least"]:
    at_least = int(args[1])
    args = args[2:]
missing = []
count = 0
for path in args:
    for name, decls in verbs(path).items():
        count += 1
        best = max(decls, key=lambda d: sum(p in d[1] for p in PARAGRAPHS))
        lacking = [p for p in PARAGRAPHS if p not in best[1]]
        if lacking:
            missing.append(f"{path}:{decls[0][0]}: {name} lacks {', '.join(lacking)}")
print(f"{count} asynchronous verbs, {count - len(missing)} documented")
for m in missing:
    print(m)
if count < at_least:
    print(f"expected at least {at_least} asynchronous verbs: the headers or the pattern changed")
sys.exit(1 if missing or count < at_least else 0)
