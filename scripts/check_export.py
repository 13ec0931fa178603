#!/usr/bin/env python3
"""Format checks a trainer would run on a kernelpair export folder (dataset/ or
dataset/preview/):

1. every chat line passes OpenAI's chat fine-tuning format rules (the checks of OpenAI's
   cookbook "Data preparation and analysis for chat model fine-tuning": a `messages` list;
   each message has `role` and `content` and no other keys than role, content, name,
   function_call, weight; roles system/user/assistant/function; content a non-empty string;
   at least one assistant message), and the last message is the assistant's;
2. every format file loads in Hugging Face `datasets` (the json builder) with as many rows
   as lines, and, when the card's YAML header names configs, each config loads from the
   folder as the Hub would load it;
3. TRL's conversational formats render through a real chat template: the Mistral instruct
   format of the tekken tokenizer shipped in the `mistral-common` PyPI package (Apache-2.0):
   every chat conversation encodes in fine-tuning mode (system, user, final assistant), and
   for every preference line the prompt alone encodes to a token prefix of prompt + chosen
   and of prompt + rejected (what DPO's tokenization assumes); tokens are counted with it.

Usage: check_export.py DIR [--preview]   (--preview: every record must be verified: false
and the card's first line must say PREVIEW). Prints one line per check and a closing
'N passed, N failed' line; exit 1 when a check fails, 2 when a dependency is missing.
"""
import json
import os
import sys

FORMATS = ["chat", "prompt-completion", "preference", "sharegpt"]


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


def openai_chat_errors(row):
    """The cookbook's format checks, as error names (empty when the line is fine)."""
    errs = []
    if not isinstance(row, dict):
        return ["data_type"]
    messages = row.get("messages")
    if not messages or not isinstance(messages, list):
        return ["missing_messages_list"]
    for m in messages:
        if "role" not in m or "content" not in m:
            errs.append("message_missing_key")
        if any(k not in ("role", "content", "name", "function_call", "weight") for k in m):
            errs.append("message_unrecognized_key")
        if m.get("role") not in ("system", "user", "assistant", "function"):
            errs.append("unrecognized_role")
        content, call = m.get("content"), m.get("function_call")
        if (not content and not call) or not isinstance(content, str):
            errs.append("missing_content")
    if not any(m.get("role") == "assistant" for m in messages):
        errs.append("example_missing_assistant_message")
    if messages[-1].get("role") != "assistant":
        errs.append("last_message_not_assistant")
    return errs


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    root = argv[1]
    preview = "--preview" in argv[2:]
    try:
        import datasets
        import mistral_common
        from mistral_common.protocol.instruct.messages import (
            AssistantMessage,
            SystemMessage,
            UserMessage,
        )
        from mistral_common.protocol.instruct.request import ChatCompletionRequest
        from mistral_common.protocol.instruct.validator import ValidationMode
        from mistral_common.tokens.tokenizers.mistral import MistralTokenizer
    except ImportError as e:
        print(f"missing dependency: {e} (python3 -m pip install datasets mistral-common)")
        return 2
    datasets.disable_progress_bars()
    c = Checks()
    files = []
    for f in FORMATS:
        for split in ("train", "test"):
            p = os.path.join(root, f, f"{split}.jsonl")
            if os.path.exists(p):
                files.append((f, split, p))
    c.check(bool(files), f"{root}: has format files ({len(files)})")

    # 1. OpenAI chat rules.
    for f, split, p in files:
        if f != "chat":
            continue
        bad = {}
        rows = lines(p)
        for i, r in enumerate(rows):
            for e in openai_chat_errors(r):
                bad.setdefault(e, []).append(i)
        c.check(not bad, f"openai chat format: {p} ({len(rows)} lines) {bad or ''}")

    # 2. Hugging Face datasets.
    for f, split, p in files:
        n = len(lines(p))
        try:
            ds = datasets.load_dataset("json", data_files=p, split="train")
            c.check(ds.num_rows == n, f"datasets json: {p} {ds.num_rows}/{n} rows")
        except Exception as e:  # noqa: BLE001 -- any loader error is the finding
            c.check(False, f"datasets json: {p}: {type(e).__name__}: {e}")
    card = os.path.join(root, "README.md")
    text = open(card, encoding="utf-8").read() if os.path.exists(card) else ""
    if text.startswith("---\n") and "configs:" in text.split("\n---\n", 1)[0]:
        for f in FORMATS:
            if not any(x[0] == f for x in files):
                continue
            try:
                dd = datasets.load_dataset(root, f)
                n = sum(len(lines(p)) for g, _, p in files if g == f)
                got = sum(d.num_rows for d in dd.values())
                c.check(got == n, f"datasets config {f!r} from the card: {got}/{n} rows")
            except Exception as e:  # noqa: BLE001
                c.check(False, f"datasets config {f!r}: {type(e).__name__}: {e}")

    # 3. A real chat template (TRL conversational format).
    data = os.path.join(os.path.dirname(mistral_common.__file__), "data", "tekken_240911.json")
    train_tok = MistralTokenizer.from_file(data, mode=ValidationMode.finetuning)
    serve_tok = MistralTokenizer.from_file(data, mode=ValidationMode.test)
    kinds = {"system": SystemMessage, "user": UserMessage, "assistant": AssistantMessage}

    def encode(tok, msgs):
        req = ChatCompletionRequest(messages=[kinds[m["role"]](content=m["content"]) for m in msgs])
        return tok.encode_chat_completion(req).tokens

    tokens = []
    for f, split, p in files:
        rows = lines(p)
        errors = []
        for r in rows:
            try:
                if f == "chat":
                    tokens.append(len(encode(train_tok, r["messages"])))
                elif f == "preference":
                    prompt = encode(serve_tok, r["prompt"])
                    for side in ("chosen", "rejected"):
                        full = encode(train_tok, r["prompt"] + r[side])
                        if full[: len(prompt)] != prompt:
                            errors.append(f"{r['id']}: prompt is not a token prefix of prompt + {side}")
                elif f == "prompt-completion":
                    if not (isinstance(r["prompt"], str) and r["prompt"] and r["completion"]):
                        errors.append(f"{r['id']}: empty prompt or completion")
            except Exception as e:  # noqa: BLE001
                errors.append(f"{r.get('id')}: {type(e).__name__}: {e}")
        if f in ("chat", "preference", "prompt-completion"):
            c.check(not errors, f"chat template (mistral-common tekken) {f}: {p} {errors[:3] or ''}")
    if tokens:
        print(f"tokens per chat sample (tekken): min {min(tokens)}, max {max(tokens)}, total {sum(tokens)}")

    # 4. What the records say about verification.
    for f, split, p in files:
        rows = lines(p)
        unverified = [r["id"] for r in rows if not r["metadata"]["verified"]]
        if preview:
            c.check(len(unverified) == len(rows), f"preview: every record verified: false in {p}")
    if preview:
        c.check(text.startswith("**PREVIEW"), f"preview: the card's first line says so ({card})")
    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
