#!/usr/bin/env python3
"""Appends to the session FILE one user message entry that continues its last entry (its
parentId is the last line's id), as an agent's next turn does: `bench/append_continuing.py
FILE`. For MEASURE_BEFORE in bench/measure.py."""
import json
import os
import sys

path = sys.argv[1]
with open(path, "rb") as f:
    f.seek(max(0, os.path.getsize(path) - (1 << 20)))
    last = f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
parent = json.loads(last)["id"]
entry = {
    "type": "message",
    "id": os.urandom(4).hex(),
    "parentId": parent,
    "timestamp": "2026-01-01T00:00:00.000Z",
    "message": {"role": "user", "content": "appended quokka", "timestamp": 1767225600000},
}
with open(path, "ab") as f:
    f.write(json.dumps(entry, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")
