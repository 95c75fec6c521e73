"""The shape of the FMA loops in a kernel's SASS: how the shared loads sit among the FFMAs.

    cuobjdump -sass KERNEL.cubin > KERNEL.sass
    python3 scripts/sass_loops.py KERNEL.sass [MORE.sass ...]

For every backward branch that closes a loop of over 0x1000 bytes holding FFMAs, one line: the
instruction count, the FFMA and S2R counts, and the loop's first instructions as a run-length
string, L for an LDS and F<n> for n FFMAs in a row. A loop that ptxas scheduled well spreads the
LDS among the FFMAs (L F21 L F7 L F68 ...); one starved of registers issues them in clumps and then
waits (L L L L L L F128 ...). docs/matmul.md uses it for the streamk_matmul step.
"""

from __future__ import annotations

import re
import sys
from collections import Counter

LINE = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
BRANCH = re.compile(r"BRA (?:\S+, )?0x([0-9a-f]+)")


def instructions(path: str) -> list[tuple[int, str]]:
    out = []
    with open(path) as f:
        for line in f:
            if m := LINE.match(line):
                out.append((int(m.group(1), 16), m.group(2)))
    return out


def opcode(text: str) -> str:
    words = text.split()
    return words[1] if words[0].startswith("@") else words[0]


def shape(loop: list[str], limit: int = 40) -> str:
    parts, run = [], 0
    for text in loop:
        op = opcode(text)
        if op == "FFMA":
            run += 1
            continue
        if run:
            parts.append(f"F{run}")
            run = 0
        if op.startswith("LDS"):
            parts.append("L")
    if run:
        parts.append(f"F{run}")
    return " ".join(parts[:limit]) + (" ..." if len(parts) > limit else "")


def loops(ins: list[tuple[int, str]]) -> list[list[str]]:
    found = []
    for addr, text in ins:
        m = BRANCH.search(text)
        if m and (target := int(m.group(1), 16)) < addr and addr - target > 0x1000:
            body = [t for a, t in ins if target <= a <= addr]
            if any(opcode(t) == "FFMA" for t in body):
                found.append(body)
    return found


def main(paths: list[str]) -> None:
    for path in paths:
        for body in loops(instructions(path)):
            ops = Counter(opcode(t) for t in body)
            print(f"{path}: {len(body)} instructions, {ops['FFMA']} FFMA, {ops['S2R']} S2R: "
                  f"{shape(body)}")


if __name__ == "__main__":
    main(sys.argv[1:])
