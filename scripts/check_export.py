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

4. the training text lint (also alone with --lint; needs `tree-sitter` and
   `tree-sitter-cuda`, the grammar extract uses): a trainer learns exactly the text, so
   every text field of every line (messages, prompt, completion, chosen, rejected,
   conversations, metadata.description, metadata.slow_launch/fast_launch) is checked for
   - harness_token: the harness's language outside the kernels' own code (`{name}`
     placeholders, `ceil_div(`, `round_up(`, `pow2(`, `ASSUMED`, `TODO`);
   - tool_artifact: the texture shim's `kernelpair_…` names in code, a host-header shim
     (`// from <math.h> (NVRTC has no host headers)`), or `extern "C"` on a
     `__global__` kernel whose source file does not write it (checked where
     `--root SUITE=DIR` locates the suite; elsewhere a `skipped:` line counts them);
   - unbalanced_fence: a fenced code block that is never closed;
   - launch_syntax: a launch (`<<<`) outside code, or a launch snippet that does not parse
     as CUDA kernel launch statements (tree-sitter-cuda: no ERROR node, every `<<<` a
     launch with its argument list);
   - signature: the answer's kernel does not keep the name and parameter types the prompt
     promised (the slow kernel's, or the interface the prompt names);
   - compile: where `nvcc` and a host C++ compiler are found (PATH, $CUDA_HOME, the PyPI
     `nvidia-cuda-nvcc` wheel), a host stub holding each chat line's kernel and the launch
     the text gives for it does not compile; without nvcc one `skipped: <why>` line.
   Findings are listed one per line with a count per file and in all.

Usage: check_export.py DIR [--preview] [--lint] [--root SUITE=DIR ...]
(--preview: every record must be verified: false and the card's first line must say
PREVIEW; --lint: only the lint, without the trainer checks' packages). Prints one line per
check and a closing 'N passed, N failed' line; exit 1 when a check fails, 2 when a
dependency is missing.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

FORMATS = ["chat", "prompt-completion", "preference", "sharegpt"]


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


def export_files(root):
    """(format, split, path) of every format file in an export folder."""
    files = []
    for f in FORMATS:
        for split in ("train", "test"):
            p = os.path.join(root, f, f"{split}.jsonl")
            if os.path.exists(p):
                files.append((f, split, p))
    return files


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


# --- 5. The training text lint ------------------------------------------------------------

HARNESS_TOKEN = re.compile(
    r"\{[A-Za-z_]\w*\}|\b(?:ceil_div|round_up|pow2|c_not|truthy)\s*\(|\bASSUMED\b|\bTODO\b"
)
SHIM = re.compile(r"\bkernelpair_\w+|//\s*kernelpair:|// from <[^>]+> \(NVRTC has no host headers\)")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
INLINE = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)
QUALIFIERS = {"const", "__restrict__", "__restrict", "restrict", "volatile"}


def markdown(text):
    """(code blocks as (info, body), prose pieces, unclosed fences) of a Markdown text,
    by CommonMark's fence rules: a closing fence is the same character, at least as long,
    alone on its line."""
    blocks, prose, unclosed = [], [], 0
    lines = text.split("\n")
    i, cur = 0, []
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            cur.append(lines[i])
            i += 1
            continue
        prose.append("\n".join(cur))
        cur = []
        fence, info = m.group(1), m.group(2).strip()
        body, j, closed = [], i + 1, False
        while j < len(lines):
            c = re.match(r"^ {0,3}(" + re.escape(fence[0]) + r"{%d,})\s*$" % len(fence), lines[j])
            if c:
                closed = True
                break
            body.append(lines[j])
            j += 1
        if not closed:
            unclosed += 1
        blocks.append((info, "\n".join(body)))
        i = j + 1
    prose.append("\n".join(cur))
    return blocks, prose, unclosed


class Cuda:
    """The one grammar: tree-sitter-cuda, as extract uses it."""

    def __init__(self):
        import tree_sitter
        import tree_sitter_cuda

        self.parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))

    def parse(self, text):
        return self.parser.parse(text.encode("utf-8"))

    @staticmethod
    def walk(node):
        stack = [node]
        while stack:
            n = stack.pop()
            yield n
            stack.extend(reversed(n.children))

    def kernels(self, code):
        """Every __global__ definition: name, parameter types (as a caller sees them),
        template parameter count, extern "C" linkage, and the definition's text."""
        out = []
        for n in self.walk(self.parse(code).root_node):
            if n.type != "function_definition" or not any(c.type == "__global__" for c in n.children):
                continue
            decl = n.child_by_field_name("declarator")
            while decl is not None and decl.type != "function_declarator":
                decl = decl.child_by_field_name("declarator")
            if decl is None:
                continue
            name = decl.child_by_field_name("declarator").text.decode()
            params = []
            plist = decl.child_by_field_name("parameters")
            for p in plist.named_children if plist else []:
                if p.type != "parameter_declaration":
                    continue
                ident = None
                for c in self.walk(p.child_by_field_name("declarator") or p):
                    if c.type == "identifier":
                        ident = c
                text = p.text.decode()
                if ident is not None:
                    a, b = ident.start_byte - p.start_byte, ident.end_byte - p.start_byte
                    raw = p.text[:a] + p.text[b:]
                    text = raw.decode()
                words = [w for w in re.findall(r"\w+|[^\w\s]", text) if w not in QUALIFIERS]
                params.append(" ".join(words))
            template = 0
            if n.parent is not None and n.parent.type == "template_declaration":
                tl = n.parent.child_by_field_name("parameters")
                template = len(tl.named_children) if tl else 0
            out.append({
                "name": name,
                "params": params,
                "template": template,
                "extern_c": n.parent is not None and n.parent.type == "linkage_specification",
            })
        return out

    def launches(self, snippet):
        """(launch statements as (kernel text, kernel name, [arg nodes' text]), reason):
        reason is None when the snippet is CUDA launch statements and nothing else."""
        body = "void kernelpair_lint() {\n" + snippet + "\n}\n"
        tree = self.parse(body)
        root = tree.root_node
        if root.has_error:
            # The innermost bad node: the one that says where the text stops being CUDA.
            bad = [n for n in self.walk(root) if n.type == "ERROR" or n.is_missing][-1]
            what = f"MISSING {bad.type}" if bad.is_missing else "ERROR"
            at = " ".join(bad.text.decode().replace("void kernelpair_lint() {", "").split())[:40]
            return [], f"does not parse (tree-sitter {what} at `{at}`)"
        fn = root.named_children[0]
        stmts = fn.child_by_field_name("body").named_children
        found = []
        for st in stmts:
            if st.type == "comment":
                continue
            inner = st
            if st.type == "for_statement":
                inner = st.child_by_field_name("body")
            call = inner.named_children[0] if inner.type == "expression_statement" and inner.named_children else None
            if call is None or call.type != "call_expression" or not any(c.type == "kernel_call_syntax" for c in call.children):
                return [], f"`{st.text.decode()[:60]}` is not a kernel launch statement"
            f = call.child_by_field_name("function")
            name = f.child_by_field_name("name").text.decode() if f.type == "template_function" else f.text.decode()
            args = call.child_by_field_name("arguments")
            found.append((f.text.decode(), name, [a for a in args.named_children if a.type != "comment"]))
        if len(found) != snippet.count("<<<"):
            return [], f"{snippet.count('<<<')} `<<<` but {len(found)} launches"
        if not found:
            return [], "no launch"
        return found, None

    def has_texture_reference(self, code):
        return any(
            n.type == "template_type" and (n.child_by_field_name("name") or n).text == b"texture"
            for n in self.walk(self.parse(code).root_node)
        )


def fields(fmt, row):
    """(field name, text, kind) of every text a trainer reads in one line: kind `md` for
    Markdown, `launch` for launch statements alone."""
    out = []
    if fmt == "chat":
        out += [(f"messages[{i}].{m['role']}", m["content"], "md") for i, m in enumerate(row["messages"])]
    elif fmt == "prompt-completion":
        out += [("prompt", row["prompt"], "md"), ("completion", row["completion"], "md")]
    elif fmt == "preference":
        out += [(f"prompt[{i}].{m['role']}", m["content"], "md") for i, m in enumerate(row["prompt"])]
        out += [(f"{side}[{i}]", m["content"], "md") for side in ("chosen", "rejected") for i, m in enumerate(row[side])]
    elif fmt == "sharegpt":
        out += [(f"conversations[{i}].{t['from']}", t["value"], "md") for i, t in enumerate(row["conversations"])]
    meta = row.get("metadata") or {}
    if meta.get("description"):
        out.append(("metadata.description", meta["description"], "md"))
    for k in ("slow_launch", "fast_launch"):
        if meta.get(k):
            out.append((f"metadata.{k}", meta[k], "launch"))
    return out


def prompt_and_answer(fmt, row):
    """The prompt text (system + user) and the chosen answer of one line."""
    if fmt == "chat":
        ms = row["messages"]
        return "\n\n".join(m["content"] for m in ms if m["role"] != "assistant"), ms[-1]["content"]
    if fmt == "prompt-completion":
        return row["prompt"], row["completion"]
    if fmt == "preference":
        return "\n\n".join(m["content"] for m in row["prompt"]), row["chosen"][-1]["content"]
    ts = row["conversations"]
    return "\n\n".join(t["value"] for t in ts if t["from"] != "gpt"), ts[-1]["value"]


def is_source(body):
    return "__global__" in body


def launch_snippets(text):
    """Launch snippets of a Markdown text: code blocks that are not kernel source and
    inline code spans, each holding `<<<`; and prose that holds `<<<` outside code."""
    blocks, prose, _ = markdown(text)
    snippets = [b for _, b in blocks if not is_source(b) and "<<<" in b]
    loose = []
    for p in prose:
        for m in INLINE.finditer(p):
            if "<<<" in m.group(2):
                snippets.append(m.group(2).strip())
        rest = INLINE.sub("", p)
        if "<<<" in rest:
            loose.append(rest.strip()[:60])
    return snippets, loose


def find_nvcc():
    """(nvcc path, None) or (None, why not)."""
    cands = [shutil.which("nvcc")]
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            cands.append(os.path.join(os.environ[env], "bin", "nvcc"))
    cands.append("/usr/local/cuda/bin/nvcc")
    try:
        import nvidia  # the PyPI wheels' namespace package

        for base in nvidia.__path__:
            cands += sorted(glob.glob(os.path.join(base, "*", "bin", "nvcc")))
    except ImportError:
        pass
    nvcc = next((c for c in cands if c and os.path.isfile(c) and os.access(c, os.X_OK)), None)
    if nvcc is None:
        return None, "no nvcc (PATH, $CUDA_HOME, /usr/local/cuda, or python3 -m pip install nvidia-cuda-nvcc)"
    if not (shutil.which("g++") or shutil.which("c++")):
        return None, f"nvcc at {nvcc} but no host C++ compiler (g++)"
    return nvcc, None


STUB_MARK = "// kernelpair lint stub\n"
STUB_HEAD = """
#include <tuple>
#include <type_traits>
template <class F> struct kernelpair_params;
template <class... A> struct kernelpair_params<void (*)(A...)> {
  template <unsigned I>
  using at = typename std::remove_const<typename std::tuple_element<I, std::tuple<A...>>::type>::type;
};
"""


def stub(cuda, code, snippet):
    """A host stub holding `code` and the launches of `snippet`, each argument declared
    with the type of the parameter it is passed to; (text, None) or (None, why not)."""
    launches, why = cuda.launches(snippet)
    if why:
        return None, why
    decls, seen = [], set()
    for ktext, _name, args in launches:
        for i, a in enumerate(args):
            base = a
            if a.type == "binary_expression" and a.child_by_field_name("operator").type == "+":
                base = a.child_by_field_name("left")
            if base.type != "identifier":
                return None, f"argument `{a.text.decode()}` is not a name or name + offset"
            n = base.text.decode()
            if n not in seen:
                seen.add(n)
                decls.append(f"  typename kernelpair_params<decltype(&{ktext})>::template at<{i}> {n}{{}};")
    body = "\n".join(decls)
    return f"{code}\n{STUB_MARK}{STUB_HEAD}\nvoid kernelpair_stub() {{\n{body}\n{snippet}\n}}\n", None


def code_of_stub(text):
    """The kernel's code of a stub, without the stub."""
    return text.split(STUB_MARK, 1)[0]


class Lint:
    def __init__(self, roots, checks):
        self.cuda = Cuda()
        self.roots = roots
        self.c = checks
        self.unchecked_extern = {}
        self.root_cache = {}

    def suite_has_extern(self, meta, name):
        """Whether a source file of the pair writes `extern "C"` on kernel `name`; None
        when the suite's root was not given."""
        root = self.roots.get(meta.get("suite"))
        if root is None:
            return None
        for side in ("slow", "fast"):
            path = os.path.join(root, meta[side]["path"])
            if path not in self.root_cache:
                try:
                    text = open(path, encoding="utf-8", errors="replace").read()
                except OSError:
                    text = ""
                self.root_cache[path] = self.cuda.kernels(text)
            if any(k["name"] == name and k["extern_c"] for k in self.root_cache[path]):
                return True
        return False

    def text(self, field, text, kind, meta, out):
        if kind == "launch":
            for m in HARNESS_TOKEN.finditer(text):
                out.append(("harness_token", field, f"`{m.group(0)}` in `{text[:80]}`"))
            _, why = self.cuda.launches(text)
            if why:
                out.append(("launch_syntax", field, f"`{text[:80]}`: {why}"))
            return
        blocks, prose, unclosed = markdown(text)
        if unclosed:
            out.append(("unbalanced_fence", field, f"{unclosed} code block(s) never closed"))
        outside = prose + [b for _, b in blocks if not is_source(b)]
        for piece in outside:
            for m in HARNESS_TOKEN.finditer(piece):
                around = " ".join(piece[max(0, m.start() - 40) : m.end() + 40].split())
                out.append(("harness_token", field, f"`{m.group(0)}` in `…{around}…`"))
        for _, b in blocks:
            if not is_source(b):
                continue
            for m in SHIM.finditer(b):
                out.append(("tool_artifact", field, f"`{m.group(0)}` (a shim isolation wrote for NVRTC) in code"))
            for k in self.cuda.kernels(b):
                if not k["extern_c"]:
                    continue
                has = self.suite_has_extern(meta, k["name"])
                if has is None:
                    self.unchecked_extern.setdefault(meta.get("suite"), set()).add(k["name"])
                elif not has:
                    out.append(("tool_artifact", field, f'`extern "C"` on kernel `{k["name"]}`, which its source file does not write'))
        snippets, loose = launch_snippets(text)
        for l in loose:
            out.append(("launch_syntax", field, f"a launch outside code: `{l}`"))
        for sn in snippets:
            _, why = self.cuda.launches(sn)
            if why:
                out.append(("launch_syntax", field, f"`{sn[:80]}`: {why}"))

    def promised(self, prompt, meta):
        """(name, params, template count) the prompt promises: the interface it names, else
        the slow kernel's."""
        for p in markdown(prompt)[1]:
            for m in INLINE.finditer(p):
                span = m.group(2).strip()
                if "__global__" in span and "<<<" not in span:
                    ks = self.cuda.kernels(span.rstrip(";") + " {}")
                    if ks:
                        return ks[0]
        for k in self.source_kernels(prompt):
            if k["name"] == meta["slow"]["kernel"]:
                return k
        return None

    def source_kernels(self, text):
        """The kernels a text defines: in its fenced source blocks, or, where a template
        writes the code without a fence, anywhere in it."""
        fenced = [k for _, b in markdown(text)[0] if is_source(b) for k in self.cuda.kernels(b)]
        return fenced or self.cuda.kernels(text)

    def signature(self, fmt, row, out):
        prompt, answer = prompt_and_answer(fmt, row)
        want = self.promised(prompt, row["metadata"])
        if want is None:
            # A prompt that shows no kernel a parser can find promises nothing to check.
            return
        got = self.source_kernels(answer)
        same = [k for k in got if k["name"] == want["name"]]
        if not same:
            names = ", ".join(k["name"] for k in got) or "none"
            out.append(("signature", "answer", f"no kernel `{want['name']}` in the answer (found: {names})"))
        elif not any(k["params"] == want["params"] for k in same):
            out.append(("signature", "answer", f"kernel `{want['name']}` changes its parameters: promised {want['params']}, got {same[0]['params']}"))

    def compile_job(self, row):
        """(id, stub texts) for one chat line: the answer's kernel with the answer's launch
        (or the prompt's, when the answer keeps it), and the prompt's kernel with its launch."""
        prompt, answer = prompt_and_answer("chat", row)
        jobs = []
        p_src = [b for _, b in markdown(prompt)[0] if is_source(b)]
        a_src = [b for _, b in markdown(answer)[0] if is_source(b)]
        p_launch = launch_snippets(prompt)[0]
        a_launch = launch_snippets(answer)[0] or p_launch
        for side, src, launch in (("answer", a_src, a_launch), ("prompt", p_src, p_launch)):
            if not src or not launch:
                continue
            code = src[0]
            if self.cuda.has_texture_reference(code):
                jobs.append((side, None, "legacy texture references (removed in CUDA 12) do not compile with this nvcc"))
                continue
            text, why = stub(self.cuda, code, launch[0])
            jobs.append((side, text, why))
        return jobs

    def run(self, files):
        total = 0
        distinct = set()
        chat_rows = []
        for f, split, p in files:
            found = []
            for r in lines(p):
                out = []
                for field, text, kind in fields(f, r):
                    self.text(field, text, kind, r.get("metadata") or {}, out)
                self.signature(f, r, out)
                found += [(r["id"],) + o for o in out]
                if f == "chat":
                    chat_rows.append(r)
            for rid, kind, field, detail in found:
                print(f"  finding {kind}: {p} {rid} {field}: {detail}")
                distinct.add((rid, kind, detail))
            total += len(found)
            self.c.check(not found, f"lint: {p}: {len(found)} findings")
        for suite, names in sorted(self.unchecked_extern.items(), key=lambda x: str(x[0])):
            print(f"skipped: extern \"C\" provenance of {len(names)} kernel(s) of suite {suite} (no --root {suite}=DIR)")
        nvcc, why = find_nvcc()
        compiled = 0
        if nvcc is None:
            print(f"skipped: compile check: {why}")
        else:
            compiled = self.compile(nvcc, chat_rows)
        kinds = {}
        for _, kind, _ in distinct:
            kinds[kind] = kinds.get(kind, 0) + 1
        if compiled:
            kinds["compile"] = compiled
        by_kind = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none"
        print(f"lint: {total + compiled} findings in {len(files)} files ({len(distinct) + compiled} distinct: {by_kind})")
        return total + compiled

    def compile(self, nvcc, rows):
        jobs = [(r["id"], side, text, why) for r in rows for side, text, why in self.compile_job(r)]
        tmp = tempfile.mkdtemp(prefix="kp-lint-")

        def one(i_job):
            i, (rid, side, text, why) = i_job
            if text is None:
                # A launch that does not parse is a launch_syntax finding already.
                return rid, side, "skip", why
            src = os.path.join(tmp, f"stub{i}.cu")
            with open(src, "w", encoding="utf-8") as fh:
                fh.write(text)
            r = subprocess.run(
                [nvcc, "-std=c++17", "-arch=sm_90", "-c", src, "-o", src + ".o"],
                capture_output=True, text=True, timeout=300,
            )
            if r.returncode == 0:
                return rid, side, "ok", ""
            first_error = lambda r: next(
                (l for l in (r.stderr + r.stdout).splitlines() if "error" in l), r.stderr.strip()[:200]
            ).replace(tmp + os.sep, "")
            err = first_error(r)
            # The kernel's own code, without the stub: a source that nvcc rejects as the
            # suite wrote it (host functions called from device code, which NVRTC's
            # -default-device accepts) says nothing about the text this lint checks.
            alone = os.path.join(tmp, f"alone{i}.cu")
            with open(alone, "w", encoding="utf-8") as fh:
                fh.write(code_of_stub(text))
            ra = subprocess.run(
                [nvcc, "-std=c++17", "-arch=sm_90", "-c", alone, "-o", alone + ".o"],
                capture_output=True, text=True, timeout=300,
            )
            if ra.returncode != 0:
                return rid, side, "skip", f"the kernel's source does not compile with nvcc by itself ({first_error(ra)})"
            return rid, side, "fail", err

        with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as ex:
            results = list(ex.map(one, enumerate(jobs)))
        shutil.rmtree(tmp, ignore_errors=True)
        fails = [x for x in results if x[2] == "fail"]
        for rid, side, _, why in results:
            if _ == "skip":
                print(f"skipped: compile check of {rid} ({side}): {why}")
        for rid, side, _, why in fails:
            print(f"  finding compile: {rid} {side}: {why}")
        ok = sum(1 for x in results if x[2] == "ok")
        skipped = sum(1 for x in results if x[2] == "skip")
        self.c.check(
            not fails,
            f"lint: nvcc ({nvcc}) compiles each kernel with its launch: {ok} compiled, {len(fails)} failed, {skipped} skipped",
        )
        return len(fails)


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
    lint_only = "--lint" in argv[2:]
    roots = {}
    rest = argv[2:]
    for i, a in enumerate(rest):
        if a == "--root" and i + 1 < len(rest) and "=" in rest[i + 1]:
            suite, d = rest[i + 1].split("=", 1)
            roots[suite] = d
    try:
        Cuda()
    except ImportError as e:
        print(f"missing dependency: {e} (python3 -m pip install tree-sitter tree-sitter-cuda)")
        return 2
    if lint_only:
        c = Checks()
        files = export_files(root)
        c.check(bool(files), f"{root}: has format files ({len(files)})")
        Lint(roots, c).run(files)
        print(f"{c.passed} passed, {c.failed} failed")
        return 1 if c.failed else 0
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
    files = export_files(root)
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

    # 5. The training text lint.
    Lint(roots, c).run(files)
    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
