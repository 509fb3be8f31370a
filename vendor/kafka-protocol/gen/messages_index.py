#!/usr/bin/env python3
"""Adds API keys to `src/messages.rs` and syncs each key's version range.

Each new key is inserted next to an existing key (`after`), copying that key's
entries in every table of the file (module list, `Request` impls, `ApiKey`,
header versions, `RequestKind`/`ResponseKind`, `From` impls), so the new rows
read exactly like their neighbours. Run `rustfmt` on the result.

Usage: messages_index.py CRATE_DIR
"""
import os
import re
import sys

# (anchor key name, [(new key name, api key)]), in api key order.
NEW_KEYS = [
    ("ReadShareGroupStateSummary", [("StreamsGroupHeartbeat", 88), ("StreamsGroupDescribe", 89)]),
    ("DeleteShareGroupOffsets", [("StreamsGroupTopologyDescriptionUpdate", 93), ("UnregisterController", 94)]),
]


def snake(name):
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s).lower()


def versions_of(crate, name):
    text = open(os.path.join(crate, "src/messages", snake(name) + "_request.rs")).read()
    m = re.search(r"impl Message for %sRequest \{\s*const VERSIONS: VersionRange = VersionRange \{ min: (\d+), max: (\d+) \}" % name, text)
    return int(m.group(1)), int(m.group(2))


def depth(line):
    return sum(line.count(c) for c in "([{") - sum(line.count(c) for c in ")]}")


def add_keys(crate, lines, anchor, new):
    pat = re.compile(r"\b%s(Request|Response)?\b" % anchor)
    mod_pat = re.compile(r"^pub mod %s_(request|response);$" % snake(anchor))
    out_items = []  # (insert_after_index, [lines])
    i = 0
    while i < len(lines):
        line = lines[i]
        m = mod_pat.match(line)
        if m:
            block = lines[i:i + 2]
            copies = []
            for name, _ in new:
                copies += [""] + [l.replace(snake(anchor), snake(name)).replace(anchor, name) for l in block]
            out_items.append((i + 1, copies))
            i += 2
            continue
        if not pat.search(line):
            i += 1
            continue
        s = i
        while s > 0 and lines[s - 1].strip().startswith(("#[", "///")) and not lines[s - 1].strip().endswith("]") is False:
            s -= 1
        j, d = s, 0
        while True:
            st = lines[j].strip()
            if st.startswith(("#[", "///")):
                j += 1
                continue
            d += depth(lines[j])
            if d == 0 and st.endswith((",", "}", ";")):
                break
            j += 1
        block = lines[s:j + 1]
        blank = j + 1 < len(lines) and lines[j + 1] == "" and block[0].strip().startswith(("#[", "impl"))
        copies = []
        for name, key in new:
            lo, hi = versions_of(crate, name)
            c = []
            for l in block:
                l = pat.sub(lambda m: name + (m.group(1) or ""), l)
                l = re.sub(r"(= |KEY: i16 = )\d+([,;])", lambda m: f"{m.group(1)}{key}{m.group(2)}", l)
                l = re.sub(r"VersionRange \{ min: \d+, max: \d+ \}", f"VersionRange {{ min: {lo}, max: {hi} }}", l)
                c.append(l)
            copies += ([""] + c) if blank else c
        out_items.append((j, copies))
        i = j + 1
    for at, copies in reversed(out_items):
        lines[at + 1:at + 1] = copies


def sync_versions(crate, lines):
    for n, line in enumerate(lines):
        m = re.match(r"^(\s*ApiKey::(\w+) => )VersionRange \{ min: \d+, max: \d+ \},$", line)
        if m:
            lo, hi = versions_of(crate, m.group(2))
            lines[n] = f"{m.group(1)}VersionRange {{ min: {lo}, max: {hi} }},"


def main():
    crate = sys.argv[1]
    path = os.path.join(crate, "src/messages.rs")
    lines = open(path).read().split("\n")
    if not any("StreamsGroupHeartbeat" in l for l in lines):
        for anchor, new in NEW_KEYS:
            add_keys(crate, lines, anchor, new)
    sync_versions(crate, lines)
    open(path, "w").write("\n".join(lines))


if __name__ == "__main__":
    main()
