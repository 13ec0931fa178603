#!/usr/bin/env python3
"""A tiny OpenAI-compatible chat server that replays recorded answers.

kernelpair's `synth` step asks an LLM for a naive variant of each optimized kernel. Where
no capable LLM is available, this server answers from hand-written files instead:

    python3 scripts/recorded_llm.py --answers DIR [--port 0] [--port-file F] [--dump DIR2]
    python3 scripts/recorded_llm.py --answers DIR --make-edit PROMPT ANSWER | --render PROMPT EDIT

It prints `http://127.0.0.1:PORT/v1` as its first stdout line (and writes it to
--port-file), then serves POST /v1/chat/completions until killed (one thread a request).
Python 3 standard library only.

How a request is mapped to a file
---------------------------------
The last user message is read for
  * the kernel:    "The kernel `NAME` below is optimized."
  * the benchmark: "Benchmark: BENCH (suite SUITE), file PATH."
If the last user message has neither (a repair turn: "Your kernel did not compile ..."),
the whole conversation is searched, newest message first, and the same lookup is done.

BENCH may contain `/` (e.g. `srad/srad_v2`); it is used as a folder path under DIR
(`..` and empty components are dropped).

A one-technique prompt (deoptimize_one.md) contains "Undo exactly one of its techniques:"
followed by a technique line as kernelpair renders it, e.g.

    - shared_memory: shared memory (__shared__ tiles or buffers)

SLUG is the first identifier on that line, lowercased: `shared_memory`, `loop_unrolling`,
`vector_types`, `constant_memory`, `texture_memory`, `atomics`, `warp_shuffle`, ...
(the technique names of kernelpair, src/synth/prompts.rs).

Files tried, first one present wins (STEM is the file name of PATH without extension,
which tells apart kernels of one benchmark that share a name, e.g. cfd's four
`cuda_compute_flux`):
  one-technique prompt:  DIR/BENCH/STEM/NAME@SLUG.cu, DIR/BENCH/NAME@SLUG.cu
  any other prompt:      DIR/BENCH/STEM/NAME.cu,      DIR/BENCH/NAME.cu
A one-technique prompt never falls back to the all-technique answer.

Edits instead of copies
-----------------------
A naive variant keeps much of the benchmark's own code. So that the benchmark's code is not
stored here, an answer may be an edit of the prompt's optimized source (its ```cuda block
after "The optimized source:"), stored as `<file>.cu.edit`, tried after `<file>.cu`:

    # kernelpair edit of the optimized source, sha256 <hex of that source>
    = 12-40        copy lines 12 to 40 of the optimized source
    + text         a line of the answer (everything after "+ ")

Lines are 1-based; only the answer's own lines are stored, the rest are line ranges. The
server rebuilds the answer from the source in the conversation, and only when that source's
hash is the one recorded (a changed extraction is refused and logged, never patched up).
`--make-edit PROMPT ANSWER` prints the edit of ANSWER against a prompt saved by --dump;
`--render PROMPT EDIT` prints the answer an edit stands for.

The reply is the file's content in one ```cuda block; with no file it is the plain text
"No recorded answer for `NAME` (BENCH)." (no code block, so synth rejects it as
no_code_block). Each request is logged to stderr: bench, kernel, slug, file served or none.
--dump DIR2 also writes each last user message to DIR2/BENCH/NAME[@SLUG].prompt.txt.
"""

import argparse
import http.server
import json
import os
import re
import socketserver
import sys
import threading

KERNEL_RE = re.compile(r"The kernel `([^`]+)` below is optimized\.")
BENCH_RE = re.compile(r"Benchmark: (.+?) \(suite ([^)]*)\)(?:, file (.+?)\.\s*$)?", re.M)
ONE_RE = re.compile(r"Undo exactly one of its techniques:\s*\n\s*-?\s*([A-Za-z_][A-Za-z0-9_]*)")

SOURCE_RE = re.compile(r"The optimized source:\s*\n```cuda\n(.*?)\n```", re.S)
EDIT_HEAD = "# kernelpair edit of the optimized source, sha256 "

LOG_LOCK = threading.Lock()


def log(msg):
    with LOG_LOCK:
        sys.stderr.write(msg + "\n")
        sys.stderr.flush()


def text_of(content):
    """A message's content as text (a string, or a list of OpenAI content parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def safe_parts(path):
    return [p for p in re.split(r"[\\/]+", path) if p not in ("", ".", "..")]


def parse_request(messages):
    """(bench, kernel, path, slug) from the conversation; any may be None."""
    users = [text_of(m.get("content")) for m in messages if m.get("role") == "user"]
    if not users:
        return None, None, None, None
    # The last user message first; a repair turn has no kernel line, so look further back.
    for text in reversed(users):
        k = KERNEL_RE.search(text)
        if k:
            b = BENCH_RE.search(text)
            one = ONE_RE.search(text)
            return (
                b.group(1).strip() if b else None,
                k.group(1),
                (b.group(3) or "").strip() if b else None,
                one.group(1).lower() if one else None,
            )
    return None, None, None, None


def optimized_source(messages):
    """The optimized source a prompt shows (newest user message first), or None."""
    for m in reversed(messages):
        if m.get("role") != "user":
            continue
        hit = SOURCE_RE.search(text_of(m.get("content")))
        if hit:
            return hit.group(1) + "\n"
    return None


def sha256(text):
    """The hash of a text's lines (line endings aside: suites ship CRLF files)."""
    import hashlib
    return hashlib.sha256("\n".join(text.splitlines()).encode()).hexdigest()


def make_edit(source, answer):
    """The edit (see the docstring) that turns `source` into `answer`."""
    import difflib
    a, b = source.splitlines(), answer.splitlines()
    out = [EDIT_HEAD + sha256(source)]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(f"= {i1 + 1}-{i2}")
        elif tag in ("replace", "insert"):
            out.extend("+ " + line for line in b[j1:j2])
    return "\n".join(out) + "\n"


def apply_edit(source, edit):
    """The answer `edit` stands for; ValueError when it is not an edit of `source`."""
    lines = edit.splitlines()
    if not lines or not lines[0].startswith(EDIT_HEAD):
        raise ValueError("no edit header")
    if lines[0][len(EDIT_HEAD):].strip() != sha256(source):
        raise ValueError("the optimized source is not the one the edit was made from")
    src, out = source.splitlines(), []
    for n, line in enumerate(lines[1:], 2):
        if line.startswith("= "):
            lo, _, hi = line[2:].partition("-")
            lo, hi = int(lo), int(hi)
            if not 1 <= lo <= hi <= len(src):
                raise ValueError(f"edit line {n}: lines {lo}-{hi} are outside the source")
            out.extend(src[lo - 1:hi])
        elif line.startswith("+ ") or line == "+":
            out.append(line[2:])
        else:
            raise ValueError(f"edit line {n}: neither '= a-b' nor '+ text'")
    return "\n".join(out) + "\n"


def find_answer(root, bench, kernel, path, slug):
    if not kernel or not bench:
        return None
    base = os.path.join(root, *safe_parts(bench))
    name = safe_parts(kernel)
    if len(name) != 1:
        return None
    fname = name[0] + (f"@{slug}" if slug else "") + ".cu"
    tries = []
    if path:
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem and stem not in (".", ".."):
            tries.append(os.path.join(base, stem, fname))
    tries.append(os.path.join(base, fname))
    for t in tries:
        for f in (t, t + ".edit"):
            if os.path.isfile(f):
                return f
    return None


def make_handler(root, dump):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # quiet default access log
            pass

        def send_json(self, code, obj):
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path.rstrip("/").endswith("/models"):
                self.send_json(200, {"object": "list", "data": [{"id": "recorded", "object": "model"}]})
            else:
                self.send_json(404, {"error": {"message": "not found"}})

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self.send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                req = json.loads(raw)
                messages = req.get("messages") or []
            except (ValueError, AttributeError):
                self.send_json(400, {"error": {"message": "bad JSON"}})
                return
            bench, kernel, path, slug = parse_request(messages)
            if dump and kernel and bench:
                d = os.path.join(dump, *safe_parts(bench))
                os.makedirs(d, exist_ok=True)
                last = [text_of(m.get("content")) for m in messages if m.get("role") == "user"][-1]
                stem = os.path.splitext(os.path.basename(path or ""))[0]
                with open(os.path.join(d, f"{kernel}@{stem}" + (f"@{slug}" if slug else "") + ".prompt.txt"), "w") as f:
                    f.write(last)
            found = find_answer(root, bench, kernel, path, slug)
            code, why = None, None
            if found:
                with open(found, encoding="utf-8") as f:
                    code = f.read()
                if found.endswith(".edit"):
                    try:
                        source = optimized_source(messages)
                        if source is None:
                            raise ValueError("the conversation shows no optimized source")
                        code = apply_edit(source, code)
                    except ValueError as e:
                        why, code = f"{os.path.relpath(found, root)} does not apply: {e}", None
                        log(f"bench={bench} kernel={kernel}: {why}")
            if code is not None:
                content = "```cuda\n" + code.rstrip("\n") + "\n```\n"
            elif why:
                content = f"No recorded answer for `{kernel}` ({bench}): {why}."
            elif kernel and bench:
                content = f"No recorded answer for `{kernel}` ({bench})."
            else:
                content = "No recorded answer: the conversation names no kernel and benchmark."
            turns = sum(1 for m in messages if m.get("role") == "user")
            log(f"bench={bench} kernel={kernel} file={path} technique={slug or 'all'} "
                f"turn={turns} served={os.path.relpath(found, root) if found else 'none'}")
            prompt_chars = sum(len(text_of(m.get("content"))) for m in messages)
            pt, ct = max(1, prompt_chars // 4), max(1, len(content) // 4)
            self.send_json(200, {
                "id": "x",
                "object": "chat.completion",
                "model": "recorded",
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }],
                "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
            })

    return Handler


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--answers", required=True, help="folder of recorded answers")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--port-file", help="also write the base URL here")
    ap.add_argument("--dump", help="write each prompt under this folder")
    ap.add_argument("--make-edit", nargs=2, metavar=("PROMPT", "ANSWER"),
                    help="print ANSWER as an edit of PROMPT's optimized source, and exit")
    ap.add_argument("--render", nargs=2, metavar=("PROMPT", "EDIT"),
                    help="print the answer EDIT stands for, and exit")
    a = ap.parse_args()
    if a.make_edit or a.render:
        prompt, other = a.make_edit or a.render
        source = optimized_source([{"role": "user", "content": open(prompt).read()}])
        if source is None:
            sys.exit(f"recorded_llm: {prompt} shows no optimized source")
        text = open(other).read()
        try:
            sys.stdout.write(make_edit(source, text) if a.make_edit else apply_edit(source, text))
        except ValueError as e:
            sys.exit(f"recorded_llm: {e}")
        return
    if not os.path.isdir(a.answers):
        sys.exit(f"recorded_llm: no such folder {a.answers}")
    srv = Server(("127.0.0.1", a.port), make_handler(os.path.abspath(a.answers), a.dump))
    url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(url + "\n")
        os.replace(tmp, a.port_file)
    print(url, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
