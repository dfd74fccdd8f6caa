"""The folders of src/ are layers: a file includes only headers of its own
folder or of a layer below it (so formats never reach up into the engines that
use them, nor the walker into what selects over it). Reads every #include of
src/ and fails naming each arrow that points up or sideways."""
import os
import re
import sys

# Lowest first; folders on one line are one layer and may not include each other.
# tools/ and cli/ are the one top layer (cli's applet table names the tools'
# define functions; the tools report through cli/diagnostics).
LAYERS = [
    ["support"],
    ["codec", "target"],
    ["formats"],
    ["object"],
    ["archive"],
    ["compress", "compat"],
    ["contents"],
    ["selection", "prune", "wrap", "bundler", "packager"],
    ["tools", "cli"],
]
TOP = {"tools", "cli"}

src = os.path.join(os.environ["OT_SOURCE_ROOT"], "src")
rank = {folder: i for i, layer in enumerate(LAYERS) for folder in layer}
folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
unknown = [d for d in folders if d not in rank]
bad = [f"src/{d}/ is in no layer of {__file__}" for d in unknown]
include = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')
arrows = 0
for d in folders:
    for root, _, files in os.walk(os.path.join(src, d)):
        for name in sorted(files):
            path = os.path.join(root, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = include.match(line)
                    if not m or m.group(1) == d or m.group(1) not in rank or d not in rank:
                        continue
                    arrows += 1
                    to = m.group(1)
                    if rank[to] < rank[d] or (d in TOP and to in TOP):
                        continue
                    bad.append(f"{os.path.relpath(path, src)}:{n} includes {to}/ (layer {rank[to]}), "
                               f"not below {d}/ (layer {rank[d]})")
for b in bad:
    print(b)
print(f"{arrows} includes across folders checked, {len(bad)} pointing up or sideways")
sys.exit(1 if bad or arrows == 0 else 0)
