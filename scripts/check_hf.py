#!/usr/bin/env python3
"""Load a kernelpair chat export with Hugging Face `datasets` and check roles and counts.

usage: check_hf.py DATASET_DIR EXPECTED_TRAIN EXPECTED_TEST

Exit 0 when every split loads through `load_dataset("json", data_files=...)`, has the expected
number of rows, and every row's messages are system, user, assistant with non-empty content
and a metadata.split matching the split it was loaded as; and the dataset card's YAML
`configs` load the same splits (`load_dataset(DATASET_DIR, name="chat")`)."""
import sys
from pathlib import Path

from datasets import load_dataset


def main() -> int:
    root = Path(sys.argv[1])
    expected = {"train": int(sys.argv[2]), "test": int(sys.argv[3])}
    files = {s: str(root / "chat" / f"{s}.jsonl") for s, n in expected.items() if n > 0}
    ds = load_dataset("json", data_files=files)
    errors = []
    for split, n in expected.items():
        if n == 0:
            if (root / "chat" / f"{split}.jsonl").exists():
                errors.append(f"{split}: file exists but 0 rows expected")
            continue
        rows = ds[split]
        if len(rows) != n:
            errors.append(f"{split}: {len(rows)} rows, expected {n}")
        for i, row in enumerate(rows):
            roles = [m["role"] for m in row["messages"]]
            if roles != ["system", "user", "assistant"]:
                errors.append(f"{split}[{i}]: roles {roles}")
            if any(not m["content"] for m in row["messages"]):
                errors.append(f"{split}[{i}]: empty message")
            if "```cuda" not in row["messages"][2]["content"]:
                errors.append(f"{split}[{i}]: assistant answer has no cuda block")
            if row["metadata"]["split"] != split:
                errors.append(f"{split}[{i}]: metadata.split is {row['metadata']['split']}")
    # The dataset card's YAML `configs` must load the same splits by config name.
    by_card = load_dataset(str(root), name="chat")
    for split in ds:
        if len(by_card[split]) != len(ds[split]):
            errors.append(f"card config chat/{split}: {len(by_card[split])} rows")
    if sorted(by_card.keys()) != sorted(ds.keys()):
        errors.append(f"card config splits {sorted(by_card.keys())}")
    for e in errors:
        print(e, file=sys.stderr)
    print(f"checked {sum(len(ds[s]) for s in ds)} rows in splits {sorted(ds.keys())}: "
          f"{'OK' if not errors else f'{len(errors)} errors'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
