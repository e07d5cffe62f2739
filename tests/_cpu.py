"""Rank the tests recorded under ``BUFSIM_TEST_CPU=FOLDER`` (tests/conftest.py) by CPU.

``python -m tests._cpu FOLDER [N]`` prints the total CPU and wall seconds, then the ``N``
(default 20) files and tests with the most CPU (own + waited-for children).
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def load(folder: str | Path) -> list[dict]:
    rows = []
    for f in sorted(Path(folder).glob("*.jsonl")):
        for line in f.read_text().splitlines():
            row = json.loads(line)
            row["worker"] = f.stem
            rows.append(row)
    return rows


def by_file(rows: list[dict]) -> dict[str, dict]:
    out: dict[str, dict] = defaultdict(lambda: dict(cpu=0.0, children=0.0, wall=0.0, n=0))
    for r in rows:
        f = out[r["nodeid"].split("::", 1)[0]]
        f["cpu"] += r["cpu"]
        f["children"] += r["children"]
        f["wall"] += r["wall"]
        f["n"] += 1
    return dict(out)


def compiles(rows: list[dict]) -> dict[str, list[tuple[str, float]]]:
    """``kernel(args)`` -> [(worker, CPU seconds)] of every compile recorded."""
    out: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for r in rows:
        for c in r.get("compiles", []):
            out[f"{c['kernel']}{c['args']}"].append((r["worker"], c["cpu"]))
    return dict(out)


def main(argv: list[str]) -> None:
    rows = load(argv[0])
    n = int(argv[1]) if len(argv) > 1 else 20
    cpu = sum(r["cpu"] + r["children"] for r in rows)
    print(f"{len(rows)} tests: CPU {cpu:.0f} s (own {sum(r['cpu'] for r in rows):.0f}, "
          f"children {sum(r['children'] for r in rows):.0f}), wall summed "
          f"{sum(r['wall'] for r in rows):.0f} s")
    for f in sorted(Path(argv[0]).glob("*.session.json")):
        s = json.loads(f.read_text())
        print(f"  process {f.name.split('.')[0]}: CPU {s['cpu'] + s['children']:.0f} s "
              f"(own {s['cpu']:.0f}, children {s['children']:.0f})")
    comp = compiles(rows)
    if comp:
        twice = {k: v for k, v in comp.items() if len(v) > 1}
        print(f"Numba compiles: {sum(len(v) for v in comp.values())} of {len(comp)} signatures, "
              f"CPU {sum(c for v in comp.values() for _, c in v):.0f} s; compiled more than "
              f"once: {len(twice)}, {sum(c for v in twice.values() for _, c in v[1:]):.0f} s "
              "of repeats")
    files = sorted(by_file(rows).items(), key=lambda kv: -(kv[1]["cpu"] + kv[1]["children"]))
    print(f"\n{'file':58} {'tests':>5} {'CPU s':>7} {'child':>7} {'wall s':>7}")
    for name, f in files[:n]:
        print(f"{name:58} {f['n']:5d} {f['cpu'] + f['children']:7.1f} {f['children']:7.1f} "
              f"{f['wall']:7.1f}")
    print(f"\n{'test':90} {'CPU s':>7} {'wall s':>7}")
    for r in sorted(rows, key=lambda r: -(r["cpu"] + r["children"]))[:n]:
        print(f"{r['nodeid'][:90]:90} {r['cpu'] + r['children']:7.1f} {r['wall']:7.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
