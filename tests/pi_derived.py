"""A pi session as a pi derivative (oh-my-pi and its kin) writes it, made from a real pi log.

The real log's messages, usage and compactions are kept as they are; what changes is what the
derivatives write around them: a `title` slot line before the header, version-3 ids in a
`parentId` chain, `model_change` entries with one `model` field ("provider/modelId"), and an
extension's `custom` entry just before each compaction's first kept message, which pi's cut
(`findCutPoint` moves it back over entries that are no message) makes the compaction's
`firstKeptEntryId`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson


def derive(src: Path, dst: Path) -> Path:
    rows: list[dict[str, Any]] = [
        orjson.loads(line) for line in src.read_bytes().splitlines() if line.strip()
    ]
    head = {k: v for k, v in rows[0].items() if k not in ("provider", "modelId", "thinkingLevel")}
    out: list[dict[str, Any]] = [
        {
            "type": "title",
            "v": 1,
            "title": "Compaction test",
            "source": "auto",
            "updatedAt": head["timestamp"],
        },
        {**head, "version": 3},
    ]
    counter = iter(range(1, 1_000_000))

    def add(entry: dict[str, Any]) -> str:
        parent = out[-1].get("id") if len(out) > 2 else None
        entry = {"type": entry["type"], "id": f"{next(counter):08x}", "parentId": parent, **entry}
        out.append(entry)
        return str(entry["id"])

    add(
        {
            "type": "model_change",
            "timestamp": head["timestamp"],
            "model": f"{rows[0]['provider']}/{rows[0]['modelId']}",
        }
    )
    cut_at = {r["firstKeptEntryIndex"]: "" for r in rows if r.get("type") == "compaction"}
    for i, r in enumerate(rows[1:], start=1):
        if i in cut_at:
            data = {"toolCallId": "t"}
            cut_at[i] = add(
                {
                    "type": "custom",
                    "timestamp": r["timestamp"],
                    "customType": "tool_execution_start",
                    "data": data,
                }
            )
        if r["type"] == "model_change":
            add(
                {
                    "type": "model_change",
                    "timestamp": r["timestamp"],
                    "model": f"{r['provider']}/{r['modelId']}",
                }
            )
        elif r["type"] == "compaction":
            kept = cut_at[r["firstKeptEntryIndex"]]
            add({k: v for k, v in r.items() if k != "firstKeptEntryIndex"} | {"firstKeptEntryId": kept})
        else:
            add(r)
    dst.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in out))
    return dst
