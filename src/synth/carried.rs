//! Loop-carried state, asked of the syntax tree: does a loop's body read a value an earlier
//! iteration wrote (`x = x >> 1`, `acc += v`, a pointer walked with `p++`)? A counted loop
//! whose body neither uses its counter nor carries state does the same work every time
//! round (the `repeated_work` slowdown check); one that carries state is an honest serial
//! loop: a naive popcount, Horner's rule, a serial scan.
//!
//! Locations are variables (`x`) and memory reached through one (`a[i]`, `*p`, `s.x`,
//! keyed by the expression's own tokens). A read sees the previous iteration's value unless
//! the same location was assigned earlier in this iteration by a plain `=` that always runs
//! (not under an `if`, a `?:`, a `&&`/`||` or an inner loop). Variables declared inside the
//! body are fresh each iteration. Where the tree leaves a doubt (a pointer passed on, an
//! address taken) the answer is "carries state": a false alarm costs an honest pair,
//! a missed one only a GPU run.

use crate::cuda::syntax::{text, visit};
use std::collections::HashSet;
use tree_sitter::Node;

/// Whether `body` (with `update`, the loop's update clause, which runs between iterations)
/// reads a value a previous iteration wrote.
pub fn carries_state(body: Node, update: Option<Node>, src: &str) -> bool {
    let mut w = Written::default();
    w.collect(body, src);
    if let Some(u) = update {
        w.collect(u, src);
    }
    let fresh = declared_in(body, src);
    w.vars.retain(|v| !fresh.contains(v));
    w.mems.retain(|v| !fresh.contains(v));
    if w.vars.is_empty() && w.mems.is_empty() {
        return false;
    }
    Reader {
        src,
        written: w,
        killed: HashSet::new(),
    }
    .any_carried(body)
}

/// What the loop writes: variables assigned as a whole, and variables through which it
/// writes memory (`out` of `out[i] = …`).
#[derive(Default)]
struct Written {
    vars: HashSet<String>,
    mems: HashSet<String>,
}

impl Written {
    fn collect(&mut self, root: Node, src: &str) {
        visit(root, &mut |n| {
            let target = match n.kind() {
                "assignment_expression" => n.child_by_field_name("left"),
                "update_expression" => n.child_by_field_name("argument"),
                // An address taken may be written through.
                "pointer_expression" if operator(n, src) == "&" => {
                    n.child_by_field_name("argument")
                }
                _ => None,
            };
            let Some(t) = target.map(strip_parens) else {
                return;
            };
            match (t.kind(), base(t)) {
                ("identifier", _) => {
                    self.vars.insert(text(t, src).to_string());
                }
                (_, Some(b)) => {
                    self.mems.insert(text(b, src).to_string());
                }
                _ => {}
            }
        });
    }
}

/// Names declared anywhere inside `body` (its own locals and inner loops' counters).
fn declared_in(body: Node, src: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    visit(body, &mut |n| {
        if matches!(n.kind(), "declaration" | "for_range_loop") {
            let mut c = n.walk();
            for d in n.children_by_field_name("declarator", &mut c) {
                if let Some(id) = declared_name(d) {
                    out.insert(text(id, src).to_string());
                }
            }
        }
    });
    out
}

/// The identifier a declarator declares (`*p`, `a[4]`, `x = 0` → `p`, `a`, `x`).
fn declared_name(mut d: Node) -> Option<Node> {
    loop {
        if d.kind() == "identifier" {
            return Some(d);
        }
        d = d.child_by_field_name("declarator")?;
    }
}

fn strip_parens(mut n: Node) -> Node {
    while n.kind() == "parenthesized_expression" {
        match n.named_child(0) {
            Some(c) => n = c,
            None => break,
        }
    }
    n
}

fn operator<'s>(n: Node, src: &'s str) -> &'s str {
    n.child_by_field_name("operator")
        .map(|o| text(o, src))
        .unwrap_or("")
}

/// The variable memory is reached through: `a` of `a[i][j]`, `p` of `*p++`, `s` of `s.x`.
fn base(n: Node) -> Option<Node> {
    let mut n = strip_parens(n);
    loop {
        match n.kind() {
            "identifier" => return Some(n),
            "subscript_expression"
            | "field_expression"
            | "pointer_expression"
            | "update_expression" => n = strip_parens(n.child_by_field_name("argument")?),
            "cast_expression" => n = strip_parens(n.child_by_field_name("value")?),
            _ => return None,
        }
    }
}

fn is_memory(n: Node, src: &str) -> bool {
    match n.kind() {
        "subscript_expression" | "field_expression" => true,
        "pointer_expression" => operator(n, src) == "*",
        _ => false,
    }
}

/// One step of the walk in evaluation order (an explicit stack: bodies nest deep).
enum Step<'t> {
    /// Evaluate an expression or statement; `always` when it runs on every iteration.
    Eval(Node<'t>, bool),
    /// Store to an lvalue; `compound` when the store reads it first (`+=`, `++`, `&x`).
    Store(Node<'t>, bool, bool),
    /// The pointer variable an access goes through is read (its value, not the memory).
    Pointer(Node<'t>),
    /// Memory is read (and, for a store, then written), once its address is evaluated.
    Memory {
        at: Node<'t>,
        read: bool,
        kill: bool,
    },
}

struct Reader<'s> {
    src: &'s str,
    written: Written,
    /// Locations assigned earlier in this iteration on every path.
    killed: HashSet<String>,
}

impl Reader<'_> {
    /// A location's key: its tokens without whitespace (`s[ t ]` is `s[t]`).
    fn key(&self, n: Node) -> String {
        text(n, self.src).split_whitespace().collect()
    }

    fn var_carried(&self, name: &str) -> bool {
        self.written.vars.contains(name) && !self.killed.contains(name)
    }

    fn any_carried<'t>(&mut self, body: Node<'t>) -> bool {
        let mut stack = vec![Step::Eval(body, true)];
        while let Some(step) = stack.pop() {
            match step {
                Step::Eval(n, always) => {
                    if self.eval(n, always, &mut stack) {
                        return true;
                    }
                }
                Step::Store(n, compound, always) => {
                    let n = strip_parens(n);
                    if n.kind() == "identifier" {
                        let name = text(n, self.src);
                        if compound && self.var_carried(name) {
                            return true;
                        }
                        if !compound && always {
                            self.killed.insert(name.to_string());
                        }
                    } else if is_memory(n, self.src) {
                        stack.push(Step::Memory {
                            at: n,
                            read: compound,
                            kill: !compound && always,
                        });
                        self.address(n, always, &mut stack);
                    } else {
                        stack.push(Step::Eval(n, always));
                    }
                }
                Step::Pointer(id) => {
                    if self.var_carried(text(id, self.src)) {
                        return true;
                    }
                }
                Step::Memory { at, read, kill } => {
                    let key = self.key(at);
                    let through = base(at).map(|b| text(b, self.src));
                    if read
                        && through.is_some_and(|b| self.written.mems.contains(b))
                        && !self.killed.contains(&key)
                    {
                        return true;
                    }
                    if kill {
                        self.killed.insert(key);
                    }
                }
            }
        }
        false
    }

    /// Push what evaluating `n` does; true when `n` itself is a carried read.
    fn eval<'t>(&self, n: Node<'t>, always: bool, stack: &mut Vec<Step<'t>>) -> bool {
        let src = self.src;
        match n.kind() {
            "identifier" => {
                let name = text(n, src);
                // A variable memory is written through, passed on whole (`f(out)`,
                // `q = out + 1`): what is read through it later is unknown.
                return self.var_carried(name) || self.written.mems.contains(name);
            }
            "assignment_expression" => {
                if let (Some(l), Some(r)) = (
                    n.child_by_field_name("left"),
                    n.child_by_field_name("right"),
                ) {
                    stack.push(Step::Store(l, operator(n, src) != "=", always));
                    stack.push(Step::Eval(r, always));
                }
            }
            "update_expression" => {
                if let Some(a) = n.child_by_field_name("argument") {
                    stack.push(Step::Store(a, true, always));
                }
            }
            "pointer_expression" if operator(n, src) == "&" => {
                if let Some(a) = n.child_by_field_name("argument") {
                    stack.push(Step::Store(a, true, false));
                }
            }
            _ if is_memory(n, src) => {
                stack.push(Step::Memory {
                    at: n,
                    read: true,
                    kill: false,
                });
                self.address(n, always, stack);
            }
            "binary_expression" if matches!(operator(n, src), "&&" | "||") => {
                if let (Some(l), Some(r)) = (
                    n.child_by_field_name("left"),
                    n.child_by_field_name("right"),
                ) {
                    stack.push(Step::Eval(r, false));
                    stack.push(Step::Eval(l, always));
                }
            }
            "lambda_expression" => {}
            kind => {
                // What runs under a condition, or in an inner loop that may not run, is
                // not known to have run when a later read happens.
                let inner = always
                    && !matches!(
                        kind,
                        "if_statement"
                            | "while_statement"
                            | "do_statement"
                            | "for_statement"
                            | "for_range_loop"
                            | "switch_statement"
                            | "case_statement"
                            | "conditional_expression"
                    );
                let mut c = n.walk();
                let kids: Vec<Node> = n.named_children(&mut c).collect();
                for k in kids.into_iter().rev() {
                    stack.push(Step::Eval(k, inner));
                }
            }
        }
        false
    }

    /// Push the reads that locate memory `n`: its indices, and the pointer it goes through.
    fn address<'t>(&self, n: Node<'t>, always: bool, stack: &mut Vec<Step<'t>>) {
        let mut parts = Vec::new();
        let mut cur = n;
        loop {
            if cur.kind() == "subscript_expression" {
                if let Some(i) = cur.child_by_field_name("indices") {
                    parts.push(Step::Eval(i, always));
                }
            }
            let Some(arg) = cur.child_by_field_name("argument").map(strip_parens) else {
                break;
            };
            match arg.kind() {
                "identifier" => {
                    parts.push(Step::Pointer(arg));
                    break;
                }
                // `a[i][j]`, `p->v[k]`: one access, located in steps.
                _ if is_memory(arg, self.src) => cur = arg,
                // `*p++`, `(q + k)[0]`: an expression that yields the address.
                _ => {
                    parts.push(Step::Eval(arg, always));
                    break;
                }
            }
        }
        // Evaluated base first, then indices left to right: pushed in reverse.
        stack.extend(parts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::syntax::Parsed;

    /// `carries_state` of the first `for` loop in `code` (wrapped in a kernel).
    fn carried(code: &str) -> bool {
        let src = format!("__global__ void k(float* out, const float* in, int n) {{\n{code}\n}}\n");
        let parsed = Parsed::new(&src);
        let mut found = None;
        visit(parsed.tree.root_node(), &mut |n| {
            if found.is_none() && n.kind() == "for_statement" {
                found = Some(n);
            }
        });
        let f = found.expect("a for loop");
        carries_state(
            f.child_by_field_name("body").unwrap(),
            f.child_by_field_name("update"),
            &src,
        )
    }

    #[test]
    fn state_read_before_it_is_written_is_carried() {
        // Each shape of "the previous iteration wrote it".
        for code in [
            "unsigned x = n; int c = 0; for (char i = 0; i < 64; i++) { c = c + (x & 1); x = x >> 1; }",
            "float acc = 0; for (int r = 0; r < 8; r++) acc += in[0];",
            "const float* p = in; float s = 0; for (int r = 0; r < n; r++) s = s + *p++;",
            "int j = 0; for (int r = 0; r < 8; r++, j += 4) out[j] = in[0];",
            "float v = 0; for (int r = 0; r < 8; r++) { if (n > 3) v = in[0]; out[0] = v; }",
            "for (int r = 0; r < 8; r++) { out[0] = in[0]; out[1] = out[0] + out[2]; }",
            "float* a = out; float* b = out + n; for (int r = 0; r < 8; r++) { a[0] = b[1]; float* t = a; a = b; b = t; }",
            "float v; for (int r = 0; r < 8; r++) { out[0] = v; sincosf(in[0], &v, out); }",
        ] {
            assert!(carried(code), "{code}");
        }
    }

    #[test]
    fn state_written_before_it_is_read_is_not_carried() {
        for code in [
            "for (int r = 0; r < 8; r++) { out[0] = in[0] * 2.0f; }",
            "float t; for (int r = 0; r < 8; r++) { t = in[0] * 2.0f; out[0] = t; }",
            "for (int r = 0; r < 8; r++) { float acc = 0; for (int k = 0; k < n; k++) acc += in[k]; out[0] = acc; }",
            "float acc; for (int r = 0; r < 8; r++) { acc = 0; for (int k = 0; k < n; k++) acc += in[k]; out[0] = acc; }",
            "__shared__ float s[256]; for (int r = 0; r < 8; r++) { s[threadIdx.x] = in[0]; __syncthreads(); out[0] = s[ threadIdx.x ]; }",
        ] {
            assert!(!carried(code), "{code}");
        }
    }
}
