#!/usr/bin/env python3
"""Prints librdkafka's test table (tests/test.c `struct test tests[]`) as TSV:
name, number, flags, scenarios (comma list, "default" if none), minver, maxver.

Usage: list_tests.py path/to/tests/test.c
"""
import re
import sys

src = open(sys.argv[1], encoding="utf-8", errors="replace").read()
start = src.index("struct test tests[] = {")
end = src.index("{NULL}", start)
body = src[start:end]
body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)  # comments
body = re.sub(r"(?m)^\s*//[^\n]*", "", body)

i = 0
while True:
    i = body.find("_TEST(", i)
    if i < 0:
        break
    j, depth = i + len("_TEST("), 1
    while depth:
        c = body[j]
        depth += (c == "(") - (c == ")")
        j += 1
    entry = " ".join(body[i + len("_TEST("):j - 1].split())
    i = j
    args, depth, cur = [], 0, ""
    for c in entry:
        if c == "," and depth == 0:
            args.append(cur.strip()); cur = ""
            continue
        depth += (c == "(") - (c == ")")
        cur += c
    args.append(cur.strip())
    name, flags = args[0], args[1]
    scen = re.search(r'\.scenario\s*=\s*"([^"]*)"', entry)
    vers = re.findall(r"TEST_BRKVER\((\d+),\s*(\d+),\s*(\d+),\s*(\d+)\)", entry)
    minver = ".".join(vers[0]) if vers else "0"
    maxm = re.search(r"\.maxver\s*=\s*TEST_BRKVER\((\d+),\s*(\d+),\s*(\d+),\s*(\d+)\)", entry)
    maxver = ".".join(maxm.groups()) if maxm else "0"
    print("\t".join([name, name.split("_", 1)[0], flags.replace(" ", "") or "0",
                     scen.group(1) if scen else "default", minver, maxver]))
