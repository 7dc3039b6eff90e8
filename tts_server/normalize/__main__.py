"""``python -m tts_server.normalize [--json]``: each line of standard input, normalized, one
line out per line in, in order; ``--json`` writes a JSON object per line with the spoken
text and each replacement (written text and span, spoken words)."""

from __future__ import annotations

import argparse
import json
import sys

from tts_server.normalize import normalize


def _record(line: str) -> str:
    normalized = normalize(line)
    replacements = [
        {
            "written": line[r.written_start : r.written_end],
            "spoken": normalized.text[r.spoken_start : r.spoken_end],
            "written_start": r.written_start,
            "written_end": r.written_end,
        }
        for r in normalized.replacements
    ]
    record = {"text": normalized.text, "replacements": replacements}
    return json.dumps(record, ensure_ascii=False)


def main(argv: list[str] | None = None) -> int:
    """Read lines from standard input until it ends; write one line per line read."""
    parser = argparse.ArgumentParser(prog="python -m tts_server.normalize", description=__doc__)
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    args = parser.parse_args(argv)
    for raw in sys.stdin:
        line = raw.rstrip("\r\n")
        sys.stdout.write((_record(line) if args.json else normalize(line).text) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
