//! `cuda::host_flow`: where a statement of host code sits, read from its tree-sitter tree
//! (issue 28). Harness inference folds the writes to a name up to a launch; whether a write
//! ran once before the launch, in a loop that is over, in a `for` header, or under an
//! `if`/`else` is a question about the statements around it, answered here from the
//! parsed `for_statement`s, `if_statement`s and blocks rather than by scanning text.

use super::host::{function_at, per_text, text_key, HostFn, TextCache};
use super::syntax::{single_spaced, text};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use tree_sitter::{Node, Tree};

/// A host text and its tree, parsed once per process (inference asks about the same launch
/// file once per name and per pair).
#[derive(Debug)]
pub struct Flow {
    src: String,
    tree: Tree,
    /// Where each identifier occurs (byte offsets), found in one walk: inference asks for
    /// the writes of many names in one function.
    idents: OnceLock<HashMap<String, Vec<usize>>>,
}

/// Where a write sits relative to the use it feeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteAt {
    /// Runs once before the use.
    Straight,
    /// In a loop that is over before the use: it ran a number of times the code decides
    /// at run time.
    FinishedLoop,
    /// A `for` header's condition or step, for a use in that loop's body: on the first
    /// pass it has not run yet.
    NextIteration,
    /// Under an `if`/`else` that does not also hold the use: the conditions (joined with
    /// `&&`) when plain `if`s alone decide it.
    Conditional(Option<String>),
}

/// One write to a host variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostWrite {
    /// Byte offset of the written name in the text.
    pub pos: usize,
    pub line: u32,
    /// `x`, `y` or `z` for a dim3 member write (`g.x = …`).
    pub member: Option<char>,
    /// The value after the write, as an expression that may name the previous value
    /// (`n + 1` for `n++`); None for a write through a pointer (`f(&n)`).
    pub value: Option<String>,
    /// `n++`, `n += e`: a step from the previous value.
    pub compound: bool,
}

/// Compound assignments whose step a value can state (`n += e` → `n + (e)`); after the
/// others (`&=`, `|=`, `^=`) the value is not followed.
const STEPS: [&str; 7] = ["+=", "-=", "*=", "/=", "%=", "<<=", ">>="];

/// What kind of statement a block or a one-statement body belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Head {
    Loop,
    /// `if (cond)`: the condition when it alone decides (not an `else if` branch, not a
    /// `switch`); an `else` branch after a braced `if` block: `!(cond)`.
    If(Option<String>),
    Other,
}

/// What a write through `*` to `n` writes: `*p` for `p`, `**q` for `q`.
fn deref(mut n: Node) -> Node {
    while let Some(p) = n.parent().filter(|p| {
        p.kind() == "pointer_expression"
            && p.child_by_field_name("operator").map(|o| o.kind()) == Some("*")
    }) {
        n = p;
    }
    n
}

/// The value a chained assignment gives: `e` in `a = b = e`.
fn chained(mut v: Node) -> Node {
    while v.kind() == "assignment_expression"
        && v.child_by_field_name("operator").map(|o| o.kind()) == Some("=")
    {
        match v.child_by_field_name("right") {
            Some(r) => v = r,
            None => break,
        }
    }
    v
}

const LOOPS: [&str; 4] = [
    "for_statement",
    "for_range_loop",
    "while_statement",
    "do_statement",
];

impl Flow {
    /// The flow of all of `src`, on the host index's one parse of it ([`super::host::tree`]).
    pub fn of(src: &str) -> Arc<Flow> {
        static CACHE: LazyLock<TextCache<Flow>> = LazyLock::new(Default::default);
        per_text(&CACHE, src, |s| Flow {
            src: s.to_string(),
            tree: super::host::tree(s),
            idents: OnceLock::new(),
        })
    }

    /// The flow of the function around 1-based `line` of `src`, that function alone parsed
    /// (once per process): what a launch's values depend on, without parsing its whole
    /// file again. `fns` are the functions of `src`, or of a text with the same lines (the
    /// file before `#if` resolution blanked some). All of `src` when no function holds
    /// the line.
    pub fn of_function(src: &str, fns: &[HostFn], line: u32) -> Arc<Flow> {
        let Some(f) = function_at(fns, line) else {
            return Flow::of(src);
        };
        let line_start = |l: u32| {
            src.split_inclusive('\n')
                .take(l as usize - 1)
                .map(str::len)
                .sum::<usize>()
        };
        let range = line_start(f.head_line)..line_start(f.body_lines.1 + 1);
        type Cache = Mutex<HashMap<((usize, u64), usize, usize), Arc<Flow>>>;
        static CACHE: LazyLock<Cache> = LazyLock::new(Default::default);
        let key = (text_key(src), range.start, range.end);
        if let Some(v) = CACHE.lock().ok().and_then(|c| c.get(&key).cloned()) {
            return v;
        }
        let Some(tree) = super::tree::parse_range(src, range) else {
            return Flow::of(src);
        };
        let v = Arc::new(Flow {
            src: src.to_string(),
            tree,
            idents: OnceLock::new(),
        });
        if let Ok(mut c) = CACHE.lock() {
            c.insert(key, v.clone());
        }
        v
    }

    /// The nodes around byte `pos`, innermost first (found from the root down: a node's
    /// `parent` is itself a walk from the root).
    fn around(&self, pos: usize) -> Vec<Node<'_>> {
        let root = self.tree.root_node();
        let Some(target) = root.descendant_for_byte_range(pos, pos) else {
            return Vec::new();
        };
        let mut path = vec![root];
        let mut n = root;
        while n.id() != target.id() {
            match n.child_with_descendant(target) {
                Some(c) => n = c,
                None => break,
            }
            path.push(n);
        }
        path.reverse();
        path
    }

    /// The offset of the `{` of the body of the function around `pos` (the outermost one:
    /// a lambda's or a local class's body is part of its function); 0 outside any.
    pub fn function_start(&self, pos: usize) -> usize {
        self.around(pos)
            .into_iter()
            .rev()
            .find(|x| x.kind() == "function_definition")
            .and_then(|x| x.child_by_field_name("body"))
            .map_or(0, |b| b.start_byte())
    }

    /// Where the write at `pos` sits relative to a use at `use_pos` in the function whose
    /// body opens at `fn_start`: in a loop that ended (a block that closed before the use,
    /// a one-statement body `while (c) n++;`), a `for` header, under a condition, or
    /// straight.
    pub fn write_at(&self, pos: usize, use_pos: usize, fn_start: usize) -> WriteAt {
        let mut conds: Vec<Option<String>> = Vec::new();
        // The write's own statement has been read (its innermost block reached).
        let mut statement_seen = false;
        for w in self.around(pos).windows(2) {
            let (node, parent) = (w[0], w[1]);
            let is_body = parent
                .child_by_field_name("body")
                .is_some_and(|b| b.id() == node.id());
            match parent.kind() {
                "for_statement" | "for_range_loop" if !is_body => {
                    return self.for_header(parent, node, use_pos);
                }
                "while_statement" | "do_statement" if !is_body => return WriteAt::FinishedLoop,
                "compound_statement" => {
                    if !statement_seen {
                        statement_seen = true;
                        match self.statement_head(node, pos, use_pos) {
                            Head::Loop => return WriteAt::FinishedLoop,
                            Head::If(c) => conds.push(c),
                            Head::Other => {}
                        }
                    }
                    if fn_start > 0 && parent.start_byte() == fn_start {
                        break;
                    }
                    if parent.end_byte() <= use_pos {
                        match self.block_head(parent) {
                            Head::Loop => return WriteAt::FinishedLoop,
                            Head::If(c) => conds.push(c),
                            Head::Other => {}
                        }
                    }
                }
                _ => {}
            }
        }
        if conds.is_empty() {
            return WriteAt::Straight;
        }
        let all: Option<Vec<String>> = conds.into_iter().rev().collect();
        WriteAt::Conditional(all.map(|c| {
            c.iter()
                .map(|x| format!("({x})"))
                .collect::<Vec<_>>()
                .join(" && ")
        }))
    }

    /// A write in the header of `for` loop `f` (`child` is the header part holding it): its
    /// init runs once before the body; its condition and step run after the first pass.
    /// Straight or NextIteration when the loop's body holds the use, FinishedLoop otherwise.
    fn for_header(&self, f: Node, child: Node, use_pos: usize) -> WriteAt {
        let Some(body) = f.child_by_field_name("body") else {
            return WriteAt::FinishedLoop;
        };
        let close = body
            .prev_sibling()
            .filter(|x| x.kind() == ")")
            .map_or(body.start_byte(), |x| x.start_byte());
        let holds_use = use_pos > close && use_pos < body.end_byte();
        let in_init = f.kind() == "for_range_loop"
            || f.child_by_field_name("initializer")
                .is_some_and(|i| i.id() == child.id());
        match (holds_use, in_init) {
            (true, true) => WriteAt::Straight,
            (true, false) => WriteAt::NextIteration,
            (false, _) => WriteAt::FinishedLoop,
        }
    }

    /// What the statement `s` (a block's direct child) holding byte `pos` makes of a write
    /// there: `while (c) n++;` a loop, `if (c) n = 8;` / `else n = 8;` a condition. Only
    /// the outermost head counts: a body that is itself a control statement
    /// (`if (a) while (b) n++;`) leaves the condition unknown.
    fn statement_head(&self, s: Node, pos: usize, use_pos: usize) -> Head {
        let holds = |n: Node| n.start_byte() <= pos && pos < n.end_byte();
        let nested = |n: Node| {
            matches!(
                n.kind(),
                "if_statement" | "switch_statement" | "else_clause"
            ) || LOOPS.contains(&n.kind())
        };
        let mut x = s;
        loop {
            match x.kind() {
                "if_statement" => {
                    // In its condition: run before either branch.
                    if let Some(c) = x.child_by_field_name("condition").filter(|c| holds(*c)) {
                        return match self.condition_write_runs(x, c, pos) {
                            true => Head::Other,
                            false => Head::If(None),
                        };
                    }
                    // In its `else`: the statement reads from the `else`.
                    if let Some(alt) = x.child_by_field_name("alternative").filter(|a| holds(*a)) {
                        x = alt;
                        continue;
                    }
                    let plain = x
                        .child_by_field_name("consequence")
                        .filter(|c| holds(*c) && !nested(*c));
                    if plain.is_some_and(|c| self.beside_one_never_completing(x, c)) {
                        return Head::Other;
                    }
                    return Head::If(plain.and_then(|_| self.condition(x)));
                }
                "else_clause" => {
                    let body = x.named_child(0);
                    let beside = x
                        .parent()
                        .is_some_and(|i| self.beside_one_never_completing(i, x));
                    if !body.is_some_and(nested) && beside {
                        return Head::Other;
                    }
                    return Head::If(if body.is_some_and(nested) {
                        None
                    } else {
                        self.else_condition(x)
                    });
                }
                "switch_statement" => return Head::If(None),
                // `case 1: a = 1; n = 2;`: the statement after the label starts there.
                "case_statement" => {
                    let mut c = x.walk();
                    let stmts: Vec<Node> = x
                        .named_children(&mut c)
                        .filter(|n| {
                            x.child_by_field_name("value")
                                .is_none_or(|v| v.id() != n.id())
                        })
                        .collect();
                    // The case also holding the use (`case 9: n = 2; k<<<n, …>>>()`) reached
                    // the write to get there.
                    let use_inside = x.start_byte() <= use_pos && use_pos < x.end_byte();
                    match stmts.iter().position(|n| holds(*n)) {
                        Some(k) if k > 0 || use_inside => x = stmts[k],
                        _ => return Head::If(None),
                    }
                }
                k if LOOPS.contains(&k) => return Head::Loop,
                _ => return Head::Other,
            }
        }
    }

    /// The head of block `b`: a loop's body, an `if`'s or `else`'s branch, a `switch`. A
    /// branch whose other branch never completes (`if (argc == 3) { n = …; } else { usage();
    /// }` where `usage` ends in `exit`) is straight code for what follows the `if`.
    fn block_head(&self, b: Node) -> Head {
        let Some(p) = b.parent() else {
            return Head::Other;
        };
        match p.kind() {
            "if_statement" if p.child_by_field_name("consequence") == Some(b) => {
                let in_else = p.parent().is_some_and(|e| e.kind() == "else_clause");
                if !in_else && self.beside_one_never_completing(p, b) {
                    return Head::Other;
                }
                Head::If(if in_else { None } else { self.condition(p) })
            }
            "else_clause"
                if p.parent()
                    .is_some_and(|i| self.beside_one_never_completing(i, p)) =>
            {
                Head::Other
            }
            "else_clause" => Head::If(self.else_condition(p)),
            "switch_statement" => Head::If(None),
            k if LOOPS.contains(&k) => Head::Loop,
            _ => Head::Other,
        }
    }

    /// Whether a write at `pos` inside `cond`, the condition of `if_statement` `i`, has run
    /// whenever code after the `if` runs. It has unless it sits on the right of a `&&` or in
    /// a branch of `?:`; on the right of a `||` only when the `if` has no `else` and its
    /// branch never completes: past the `if`, every operand was false, so each one ran
    /// (Rodinia hotspot: `if (argc != 7 || (grid_rows = atoi(argv[1])) <= 0 || …) usage();`).
    fn condition_write_runs(&self, i: Node, cond: Node, pos: usize) -> bool {
        let all_false_to_pass = i.child_by_field_name("alternative").is_none()
            && i.child_by_field_name("consequence")
                .is_some_and(|c| self.never_completes(c, 0));
        for w in self.around(pos).windows(2) {
            let (node, parent) = (w[0], w[1]);
            if node.id() == cond.id() {
                return true;
            }
            let is = |field: &str| parent.child_by_field_name(field) == Some(node);
            match parent.kind() {
                "binary_expression" if is("right") => {
                    match parent.child_by_field_name("operator").map(|o| o.kind()) {
                        Some("&&") => return false,
                        Some("||") if !all_false_to_pass => return false,
                        _ => {}
                    }
                }
                "conditional_expression" if !is("condition") => return false,
                _ => {}
            }
        }
        false
    }

    /// Whether `branch` (the consequence or the `else` of `if_statement` `i`) runs whenever
    /// code after the `if` runs: the other branch never completes.
    fn beside_one_never_completing(&self, i: Node, branch: Node) -> bool {
        let first = i.child_by_field_name("consequence");
        let other = if first == Some(branch) {
            i.child_by_field_name("alternative")
        } else {
            first
        };
        other.is_some_and(|o| self.never_completes(o, 0))
    }

    /// Whether statement `s` never completes: it ends in a `return` or a `throw`, or in a
    /// call to `exit`/`abort` or to a function of this text whose body never completes.
    fn never_completes(&self, s: Node, depth: usize) -> bool {
        const NO_RETURN: [&str; 6] = [
            "exit",
            "abort",
            "_Exit",
            "quick_exit",
            "std::exit",
            "std::abort",
        ];
        match s.kind() {
            "return_statement" | "throw_statement" => true,
            "else_clause" => s
                .named_child(0)
                .is_some_and(|b| self.never_completes(b, depth)),
            "compound_statement" => {
                let mut c = s.walk();
                let last = s
                    .named_children(&mut c)
                    .filter(|n| n.kind() != "comment")
                    .last();
                last.is_some_and(|l| self.never_completes(l, depth))
            }
            "expression_statement" => {
                let Some(f) = s
                    .named_child(0)
                    .filter(|c| c.kind() == "call_expression")
                    .and_then(|c| c.child_by_field_name("function"))
                else {
                    return false;
                };
                let name = text(f, &self.src);
                NO_RETURN.contains(&name) || (depth < 4 && self.never_returns(name, depth + 1))
            }
            _ => false,
        }
    }

    /// Whether the function `name` defined in this text never returns (see
    /// [`Flow::never_completes`]).
    fn never_returns(&self, name: &str, depth: usize) -> bool {
        let fns = super::host::functions_cached(&self.src);
        let Some(f) = fns.iter().find(|f| f.name == name) else {
            return false;
        };
        let flow = Flow::of_function(&self.src, &fns, f.body_lines.0);
        let root = flow.tree.root_node();
        let body = root.descendant_for_byte_range(f.body.0, f.body.1 - 1);
        let body = std::iter::successors(body, |n| n.parent())
            .find(|n| n.kind() == "compound_statement" && n.start_byte() == f.body.0);
        body.is_some_and(|b| flow.never_completes(b, depth))
    }

    /// The condition text of `if_statement` `i` (`if (n % 8)` → `n % 8`).
    fn condition(&self, i: Node) -> Option<String> {
        let c = text(i.child_by_field_name("condition")?, &self.src);
        let inner = c.strip_prefix('(')?.strip_suffix(')')?;
        Some(inner.trim().to_string())
    }

    /// The condition of `else_clause` `e` whose `if` branch is a block of a plain `if`
    /// (`if (c) { … } else`): `!(c)`. None after an `else if` or a one-statement branch.
    fn else_condition(&self, e: Node) -> Option<String> {
        let i = e.parent()?;
        // A braced branch, or one plain statement (`if (c) n = a; else n = b;`).
        let braced = i
            .child_by_field_name("consequence")
            .is_some_and(|c| matches!(c.kind(), "compound_statement" | "expression_statement"));
        let in_else = i.parent().is_some_and(|p| p.kind() == "else_clause");
        if !braced || in_else {
            return None;
        }
        self.condition(i).map(|c| format!("!({c})"))
    }

    /// Every write to `name` in the parsed text, in order: `name = e` (also in a
    /// declaration; `a = b = e` gives `e`), `name.x = e`, compound assignments
    /// (`name += e` → `name + (e)`), `name++` / `--name`, a dim3 constructed
    /// (`dim3 g(a, b)`, `g = dim3(a)`: one write per member, missing ones 1; `dim3 g;` is
    /// 1 × 1 × 1), and `&name` passed to a call (value unknown; device queries such as
    /// `cudaGetDeviceProperties(&prop, 0)` fill what is read as device properties).
    pub fn writes(&self, name: &str) -> Vec<HostWrite> {
        let mut out = Vec::new();
        if name.is_empty() {
            return out;
        }
        let root = self.tree.root_node();
        for &p in self.positions(name) {
            match root.descendant_for_byte_range(p, p + name.len()) {
                Some(n) if n.kind() == "identifier" => self.write_of(n, name, &mut out),
                _ => {}
            }
        }
        out
    }

    /// Where each identifier (a member's name too) named `name` occurs, from one walk:
    /// inference asks about many names in one function.
    fn positions(&self, name: &str) -> &[usize] {
        let idents = self.idents.get_or_init(|| {
            let mut at: HashMap<String, Vec<usize>> = HashMap::new();
            super::tree::visit(self.tree.root_node(), &mut |n| {
                if matches!(n.kind(), "identifier" | "field_identifier") {
                    let name = text(n, &self.src).to_string();
                    at.entry(name).or_default().push(n.start_byte());
                }
            });
            at
        });
        idents.get(name).map_or(&[], Vec::as_slice)
    }

    /// Every `name = e` in order, as written: an assignment (`a = b = e` gives `b = e`),
    /// `*name = e` (an out-parameter's write, read as the name's value), `T name = e` and
    /// `T *name = e` (also in a declaration list), an enumerator, a default argument and a
    /// class member's initializer; not a member of an object (`s.name = e`) nor a step. Each
    /// value's white space is folded to single spaces.
    pub fn assignments(&self, name: &str) -> Vec<HostWrite> {
        let root = self.tree.root_node();
        let mut out = Vec::new();
        for &p in self.positions(name) {
            let Some(n) = root.descendant_for_byte_range(p, p + name.len()) else {
                continue;
            };
            if let Some(v) = self.assigned_value(n) {
                out.push(HostWrite {
                    pos: p,
                    line: n.start_position().row as u32 + 1,
                    member: None,
                    value: Some(
                        text(v, &self.src)
                            .split_whitespace()
                            .collect::<Vec<_>>()
                            .join(" "),
                    ),
                    compound: false,
                });
            }
        }
        out
    }

    /// Whether the identifier at byte `pos` is a parameter given a default value
    /// (`void run(uint n, uint nb = 1);`): a default for calls that leave it out, not a
    /// write of any variable.
    pub fn is_default_argument(&self, pos: usize) -> bool {
        let root = self.tree.root_node();
        let mut n = root.descendant_for_byte_range(pos, pos + 1);
        while let Some(x) = n {
            match x.kind() {
                "optional_parameter_declaration" => return true,
                "parameter_list" | "compound_statement" | "translation_unit" => return false,
                _ => n = x.parent(),
            }
        }
        false
    }

    /// Whether `name` (not a member) is changed in place: a compound assignment
    /// (`name += e`, `*name |= m`) or an increment (`name++`, `--name`).
    pub fn changed_in_place(&self, name: &str) -> bool {
        let root = self.tree.root_node();
        self.positions(name).iter().any(|&p| {
            let Some(n) = root.descendant_for_byte_range(p, p + name.len()) else {
                return false;
            };
            let t = deref(n);
            match t.parent() {
                Some(q) if q.kind() == "update_expression" => true,
                Some(q) if q.kind() == "assignment_expression" => {
                    q.child_by_field_name("left") == Some(t)
                        && q.child_by_field_name("operator")
                            .is_some_and(|o| o.kind() != "=")
                }
                _ => false,
            }
        })
    }

    /// Whether a `for` loop's init starts with `name` (`for (i = 0;`, `for (int i = 0, j;`,
    /// `for (auto i : v)`).
    pub fn starts_loop(&self, name: &str) -> bool {
        let mut found = false;
        super::tree::visit(self.tree.root_node(), &mut |f| {
            let init = match f.kind() {
                "for_statement" => f.child_by_field_name("initializer"),
                "for_range_loop" => f.child_by_field_name("declarator"),
                _ => None,
            };
            let mut first = None;
            if let Some(i) = init {
                super::tree::visit(i, &mut |x| {
                    if first.is_none() && x.kind() == "identifier" {
                        first = Some(text(x, &self.src));
                    }
                });
            }
            found |= first == Some(name);
        });
        found
    }

    /// The value an `=` gives the name node `n` ([`Flow::assignments`]).
    fn assigned_value<'t>(&self, n: Node<'t>) -> Option<Node<'t>> {
        let is = |x: Option<Node>, y: Node| x.is_some_and(|x| x.id() == y.id());
        let mut target = n;
        while let Some(p) = target.parent().filter(|p| {
            matches!(
                p.kind(),
                "pointer_expression" | "pointer_declarator" | "reference_declarator"
            ) && p.child(0).is_some_and(|o| matches!(o.kind(), "*" | "&"))
                && p.named_child(p.named_child_count().saturating_sub(1))
                    .is_some_and(|c| c.id() == target.id())
        }) {
            target = p;
        }
        let q = target.parent()?;
        let mut c = q.walk();
        let eq = q.children(&mut c).any(|x| x.kind() == "=");
        match q.kind() {
            "assignment_expression" if is(q.child_by_field_name("left"), target) => {
                let op = q.child_by_field_name("operator")?;
                (op.kind() == "=").then(|| q.child_by_field_name("right"))?
            }
            "init_declarator" | "field_declaration" | "optional_parameter_declaration"
                if eq && is(q.child_by_field_name("declarator"), target) =>
            {
                q.child_by_field_name("value")
                    .or_else(|| q.child_by_field_name("default_value"))
            }
            "enumerator" if is(q.child_by_field_name("name"), target) => {
                q.child_by_field_name("value")
            }
            _ => None,
        }
    }

    /// The write identifier `n` (named `name`) is the target of, if any.
    fn write_of(&self, n: Node, name: &str, out: &mut Vec<HostWrite>) {
        let t = |x: Node| text(x, &self.src);
        fn field<'t>(x: Node<'t>, f: &str) -> Option<Node<'t>> {
            x.child_by_field_name(f)
        }
        let is = |x: Option<Node>, y: Node| x.is_some_and(|x| x.id() == y.id());
        let Some(p) = n.parent() else { return };
        // `g.x`: a member of a dim3; another member or `->` is not the name.
        let (target, member) = if p.kind() == "field_expression" && is(field(p, "argument"), n) {
            let op = field(p, "operator").map(t);
            let m = field(p, "field").map(t);
            match (op, m) {
                (Some("."), Some(m @ ("x" | "y" | "z"))) => (p, m.chars().next()),
                _ => return,
            }
        } else {
            (n, None)
        };
        let shown = match member {
            Some(m) => format!("{name}.{m}"),
            None => name.to_string(),
        };
        let mut push = |value: Option<String>, compound: bool, member: Option<char>| {
            out.push(HostWrite {
                pos: n.start_byte(),
                line: n.start_position().row as u32 + 1,
                member,
                value,
                compound,
            })
        };
        let dims = |args: Vec<String>, push: &mut dyn FnMut(Option<String>, bool, Option<char>)| {
            for (k, m) in ['x', 'y', 'z'].into_iter().enumerate() {
                let v = args.get(k).cloned().unwrap_or_else(|| "1".into());
                push(Some(v), false, Some(m));
            }
        };
        let Some(q) = target.parent() else { return };
        match q.kind() {
            "assignment_expression" if is(field(q, "left"), target) => {
                let (Some(op), Some(rhs)) = (field(q, "operator"), field(q, "right")) else {
                    return;
                };
                match t(op) {
                    "=" => match self.dim3_args(rhs).filter(|_| member.is_none()) {
                        Some(args) => dims(args, &mut push),
                        None => push(Some(t(chained(rhs)).trim().to_string()), false, member),
                    },
                    op if STEPS.contains(&op) => {
                        let step = op.trim_end_matches('=');
                        push(
                            Some(format!("{shown} {step} ({})", t(rhs).trim())),
                            true,
                            member,
                        )
                    }
                    _ => {}
                }
            }
            "update_expression" => {
                if let Some(op) = field(q, "operator") {
                    push(Some(format!("{shown} {} 1", &t(op)[..1])), true, member);
                }
            }
            _ if member.is_some() => {}
            // `int n = e`, `int *p = e`, `dim3 g(a, b)`, `dim3 g;`.
            _ => {
                let mut d = n;
                while d.parent().is_some_and(|x| x.kind() == "pointer_declarator") {
                    d = d.parent().expect("checked");
                }
                let Some(holder) = d.parent().filter(|x| is(field(*x, "declarator"), d)) else {
                    return self.address_write(n, &mut push);
                };
                // The declaration's type is dim3 and this is its first name.
                let decl = match holder.kind() {
                    "init_declarator" | "function_declarator" => holder.parent(),
                    _ => Some(holder),
                }
                .filter(|x| x.kind() == "declaration");
                let first = decl
                    .and_then(|x| field(x, "declarator"))
                    .is_some_and(|x| x.id() == holder.id() || x.id() == d.id());
                let dim3 = first
                    && d.id() == n.id()
                    && decl.and_then(|x| field(x, "type")).map(t) == Some("dim3");
                match (holder.kind(), field(holder, "value")) {
                    ("init_declarator", Some(v)) if v.kind() == "argument_list" && dim3 => {
                        dims(self.args(v), &mut push)
                    }
                    // `dim3 grid(gridSize)` also reads as a prototype whose parameter is
                    // of type `gridSize`: the arguments are those types.
                    ("function_declarator", _) if dim3 => {
                        if let Some(list) = field(holder, "parameters") {
                            dims(self.args(list), &mut push);
                        }
                    }
                    ("init_declarator", Some(v))
                        if !matches!(v.kind(), "argument_list" | "initializer_list") =>
                    {
                        match self.dim3_args(v).filter(|_| dim3) {
                            Some(args) => dims(args, &mut push),
                            None => push(Some(t(chained(v)).trim().to_string()), false, None),
                        }
                    }
                    ("declaration", _) if dim3 => dims(Vec::new(), &mut push),
                    _ => {}
                }
            }
        }
    }

    /// The writes of `obj.field` / `obj->field`: how many there are (`=`, a compound
    /// assignment, `++`/`--`), and the right-hand sides of the plain `=` ones.
    pub fn field_writes(&self, obj: &str, field: &str) -> (usize, Vec<String>) {
        let (mut all, mut plain) = (0, Vec::new());
        let t = |x: Node| text(x, &self.src);
        super::tree::visit(self.tree.root_node(), &mut |n| {
            let named = |f: &str, want: &str, kind: &str| {
                n.child_by_field_name(f)
                    .is_some_and(|x| x.kind() == kind && t(x) == want)
            };
            if n.kind() != "field_expression"
                || !named("argument", obj, "identifier")
                || !named("field", field, "field_identifier")
            {
                return;
            }
            let Some(p) = n.parent() else { return };
            match p.kind() {
                "update_expression" => all += 1,
                "assignment_expression" if p.child_by_field_name("left") == Some(n) => {
                    all += 1;
                    let op = p.child_by_field_name("operator").map(|o| o.kind());
                    if let (Some("="), Some(r)) = (op, p.child_by_field_name("right")) {
                        plain.push(t(r).trim().to_string());
                    }
                }
                _ => {}
            }
        });
        (all, plain)
    }

    /// Every `obj.field = e` / `obj->field = e` in order (of any object when `obj` is None;
    /// else `obj` must be a plain name): the value as written, white space folded; not a
    /// step (`+=`, `++`) nor a designated initializer (`{ .field = e }`).
    pub fn field_assignments(&self, obj: Option<&str>, field: &str) -> Vec<HostWrite> {
        let (root, t) = (self.tree.root_node(), |x: Node| text(x, &self.src));
        let mut out = Vec::new();
        for &p in self.positions(field) {
            let Some(n) = root.descendant_for_byte_range(p, p + field.len()) else {
                continue;
            };
            let Some(fe) = n.parent().filter(|x| {
                x.kind() == "field_expression" && x.child_by_field_name("field") == Some(n)
            }) else {
                continue;
            };
            let arg = fe.child_by_field_name("argument");
            if obj.is_some_and(|o| !arg.is_some_and(|a| a.kind() == "identifier" && t(a) == o)) {
                continue;
            }
            let Some(q) = fe.parent().filter(|q| {
                q.kind() == "assignment_expression"
                    && q.child_by_field_name("left") == Some(fe)
                    && q.child_by_field_name("operator").map(|o| o.kind()) == Some("=")
            }) else {
                continue;
            };
            let v = q.child_by_field_name("right").map(t).unwrap_or_default();
            out.push(HostWrite {
                pos: fe.start_byte(),
                line: fe.start_position().row as u32 + 1,
                member: None,
                value: Some(v.split_whitespace().collect::<Vec<_>>().join(" ")),
                compound: false,
            });
        }
        out
    }

    /// Whether `name` is declared of type `ty` as a plain object (`T a, b = e;`, a
    /// parameter `T name`), not a pointer to one.
    pub fn declared_as(&self, ty: &str, name: &str) -> bool {
        let root = self.tree.root_node();
        self.positions(name).iter().any(|&p| {
            let Some(mut d) = root.descendant_for_byte_range(p, p + name.len()) else {
                return false;
            };
            if d.parent().is_some_and(|x| x.kind() == "init_declarator") {
                d = d.parent().expect("checked");
            }
            d.parent().is_some_and(|x| {
                matches!(x.kind(), "declaration" | "parameter_declaration")
                    && x.child_by_field_name("type").map(|t| text(t, &self.src)) == Some(ty)
                    && {
                        let mut c = x.walk();
                        let mut ds = x.children_by_field_name("declarator", &mut c);
                        ds.any(|y| y == d)
                    }
            })
        })
    }

    /// Whether a declaration inside the byte span `within` (a function's body) declares a
    /// variable `name` (`int n;`, `float *n = …`, `int a[4], n = 2;`, a `for` header's
    /// `int n = 0`): then `name` there is that function's own, not a global of that name.
    pub fn declares(&self, name: &str, within: (usize, usize)) -> bool {
        !self.declarations(name, within).is_empty()
    }

    /// The declared types of the variables `name` that declarations inside the byte span
    /// `within` declare, in order: the declaration's type and one `*` per pointer level
    /// (`const float *a, **b` → `float *` for `a`, `float **` for `b`); None for an array
    /// or a reference (`float x[4]`, `float &r = s`).
    pub fn declarations(&self, name: &str, within: (usize, usize)) -> Vec<Option<String>> {
        let root = self.tree.root_node();
        let mut out = Vec::new();
        for &p in self
            .positions(name)
            .iter()
            .filter(|&&p| p >= within.0 && p < within.1)
        {
            let Some(mut d) = root.descendant_for_byte_range(p, p + name.len()) else {
                continue;
            };
            if d.kind() != "identifier" {
                continue;
            }
            let (mut stars, mut plain) = (0, true);
            while let Some(q) = d.parent().filter(|q| {
                matches!(
                    q.kind(),
                    "init_declarator"
                        | "pointer_declarator"
                        | "array_declarator"
                        | "reference_declarator"
                        | "parenthesized_declarator"
                ) && q
                    .child_by_field_name("declarator")
                    // `&r`: the grammar gives a reference's declarator no field name.
                    .or_else(|| {
                        q.named_child(0)
                            .filter(|_| q.kind() == "reference_declarator")
                    })
                    .is_some_and(|x| x.id() == d.id())
            }) {
                match q.kind() {
                    "pointer_declarator" => stars += 1,
                    "array_declarator" | "reference_declarator" => plain = false,
                    _ => {}
                }
                d = q;
            }
            let Some(decl) = d.parent().filter(|q| {
                q.kind() == "declaration" && {
                    let mut c = q.walk();
                    let mut ds = q.children_by_field_name("declarator", &mut c);
                    ds.any(|y| y.id() == d.id())
                }
            }) else {
                continue;
            };
            let ty = decl
                .child_by_field_name("type")
                .map(|t| single_spaced(text(t, &self.src)));
            out.push(ty.filter(|_| plain).map(|t| {
                if stars == 0 {
                    t
                } else {
                    format!("{t} {}", "*".repeat(stars))
                }
            }));
        }
        out
    }

    /// The command-line flag an argument-parsing write on 1-based `line` belongs to: a
    /// `case 's':` label (getopt) or a `"-s"` literal (`strcmp(argv[i], "-s")`) on that line
    /// or the four before it, the nearest line first; on one line the label, else the last
    /// literal.
    pub fn flag_near(&self, line: u32) -> Option<String> {
        let mut found: HashMap<u32, (Option<String>, Option<String>)> = HashMap::new();
        super::tree::visit(self.tree.root_node(), &mut |n| {
            let l = n.start_position().row as u32 + 1;
            if l > line || l + 4 < line {
                return;
            }
            let t = text(n, &self.src);
            let at = found.entry(l).or_default();
            match n.kind() {
                "char_literal" if n.parent().is_some_and(|p| p.kind() == "case_statement") => {
                    let c = t.chars().nth(1).filter(|c| c.is_ascii_alphanumeric());
                    at.0 = c.map(|c| format!("-{c}")).or(at.0.take());
                }
                "string_literal" => {
                    let f = t.trim_matches('"');
                    let flag = f.len() > 1
                        && f.starts_with('-')
                        && f[1..]
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '-');
                    if flag {
                        at.1 = Some(f.to_string());
                    }
                }
                _ => {}
            }
        });
        (line.saturating_sub(4)..=line)
            .rev()
            .find_map(|l| found.remove(&l).and_then(|(c, s)| c.or(s)))
    }

    /// How many times the whole object `obj` is a call argument (`f(&p, …)`, `g(x, p)`):
    /// `obj` or `&obj` between `(` or `,` and `,` or `)`.
    pub fn object_arguments(&self, obj: &str) -> usize {
        self.object_arguments_within(obj, (0, self.src.len()))
    }

    /// [`Flow::object_arguments`] starting inside the byte span `within`.
    pub fn object_arguments_within(&self, obj: &str, within: (usize, usize)) -> usize {
        let root = self.tree.root_node();
        let in_call = |p: usize| {
            let Some(n) = root
                .descendant_for_byte_range(p, p + obj.len())
                .filter(|n| n.kind() == "identifier")
            else {
                return false;
            };
            let x = n
                .parent()
                .filter(|p| {
                    p.kind() == "pointer_expression"
                        && p.child_by_field_name("operator").map(|o| o.kind()) == Some("&")
                })
                .unwrap_or(n);
            let prev = x.prev_sibling().map(|s| s.kind());
            let next = x.next_sibling().map(|s| s.kind());
            matches!(prev, Some("(" | ",")) && matches!(next, Some("," | ")"))
        };
        self.positions(obj)
            .iter()
            .filter(|&&p| p >= within.0 && p < within.1 && in_call(p))
            .count()
    }

    /// The argument texts of each kernel launch whose `>>>` is on a line after `after` and
    /// before `before` (1-based, both excluded), in order.
    pub fn launch_args_between(&self, after: u32, before: u32) -> Vec<Vec<String>> {
        super::queries::launches(self.tree.root_node())
            .into_iter()
            .filter(|l| {
                let line = l.config.end_position().row as u32 + 1;
                after < line && line < before
            })
            .map(|l| self.args(l.args))
            .collect()
    }

    /// `&n`, `&n[0]`, `&n->f` as an argument (after `(` or `,`): the callee may set `n`.
    fn address_write(&self, n: Node, push: &mut dyn FnMut(Option<String>, bool, Option<char>)) {
        let mut x = n;
        while let Some(p) = x.parent() {
            let first = p.named_child(0).is_some_and(|c| c.id() == x.id());
            let arrow = p.kind() == "field_expression"
                && p.child_by_field_name("operator")
                    .map(|o| text(o, &self.src))
                    == Some("->");
            if !(first && (p.kind() == "subscript_expression" || arrow)) {
                break;
            }
            x = p;
        }
        let Some(amp) = x.parent().filter(|p| {
            p.kind() == "pointer_expression"
                && p.child_by_field_name("operator").map(|o| o.kind()) == Some("&")
        }) else {
            return;
        };
        if !amp
            .prev_sibling()
            .is_some_and(|s| matches!(s.kind(), "(" | ","))
        {
            return;
        }
        // Device queries fill what the launch translation reads as device properties
        // (`prop.multiProcessorCount` → `sm_count`).
        let callee = amp
            .parent()
            .filter(|l| l.kind() == "argument_list")
            .and_then(|l| l.parent())
            .and_then(|c| c.child_by_field_name("function"))
            .map(|f| {
                let f = text(f, &self.src);
                let start = f
                    .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .map_or(0, |k| k + 1);
                &f[start..]
            });
        if !matches!(
            callee,
            Some("cudaGetDeviceProperties" | "cudaDeviceGetAttribute")
        ) {
            push(None, false, None);
        }
    }

    /// `dim3(a, b)`: its arguments.
    fn dim3_args(&self, v: Node) -> Option<Vec<String>> {
        let f = v.child_by_field_name("function")?;
        (v.kind() == "call_expression" && text(f, &self.src) == "dim3").then_some(())?;
        Some(self.args(v.child_by_field_name("arguments")?))
    }

    /// The texts of an argument list's arguments.
    fn args(&self, list: Node) -> Vec<String> {
        let mut c = list.walk();
        list.named_children(&mut c)
            .map(|a| text(a, &self.src).trim().to_string())
            .collect()
    }

    /// The counters of the braced `for` loops around byte `at` in its function, innermost
    /// first: each loop's init as (counter, initial value text), for an init that writes
    /// one name (`for (unsigned int i = 0; …)` → `("i", "0")`; no comma anywhere in it). At
    /// a launch in the loop's body, the counter's first pass has that value.
    pub fn enclosing_for_counters(&self, at: usize) -> Vec<(String, String)> {
        let fn_start = self.function_start(at);
        let mut out = Vec::new();
        for x in self.around(at) {
            if x.start_byte() < fn_start {
                break;
            }
            let body = x.child_by_field_name("body");
            let around = body.is_some_and(|b| {
                b.kind() == "compound_statement" && b.start_byte() < at && at < b.end_byte()
            });
            if x.kind() == "for_statement" && around {
                out.extend(self.for_init_counter(x));
            }
        }
        out
    }

    /// A `for` loop's init that writes one name: `int i = 0` or `i = 0`.
    fn for_init_counter(&self, f: Node) -> Option<(String, String)> {
        let init = f.child_by_field_name("initializer")?;
        if text(init, &self.src).contains(',') {
            return None;
        }
        let (name, value) = match init.kind() {
            "declaration" => {
                let d = init.child_by_field_name("declarator")?;
                (d.kind() == "init_declarator").then_some(())?;
                let v = d.child_by_field_name("value")?;
                let eq = d.child_by_field_name("declarator")?.next_sibling()?;
                (eq.kind() == "=").then_some(())?;
                (d.child_by_field_name("declarator")?, v)
            }
            "assignment_expression" => {
                let op = init.child_by_field_name("operator")?;
                (op.kind() == "=").then_some(())?;
                (
                    init.child_by_field_name("left")?,
                    init.child_by_field_name("right")?,
                )
            }
            _ => return None,
        };
        (name.kind() == "identifier").then(|| {
            (
                text(name, &self.src).to_string(),
                text(value, &self.src).trim().to_string(),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The write of `name` (its first occurrence after `after`) in `t`, as seen from the
    /// start of the line holding `use_at`.
    fn at(t: &str, after: &str, name: &str, use_at: &str) -> WriteAt {
        let f = Flow::of(t);
        let from = t.find(after).unwrap();
        let pos = from + t[from..].find(name).unwrap();
        let u = t.find(use_at).unwrap();
        let use_pos = t[..u].rfind('\n').map_or(0, |k| k + 1);
        f.write_at(pos, use_pos, f.function_start(use_pos))
    }

    #[test]
    fn writes_are_placed_by_the_statements_around_them() {
        let t = "void f(int n) {\n int b = n / 8;\n if (n % 8) b++;\n while (n > 1) n--;\n for (int i = 2; i < n; i *= 2) {\n  k<<<i, 64>>>(n);\n }\n if (n > 4) {\n  b = 4;\n } else {\n  b = 2;\n }\n if (n > 2) { b = 1; } else if (n) b = 3;\n switch (n) { case 1: b = 5; }\n do { b--; } while (b > n);\n q<<<b, 64>>>(n);\n}\n";
        assert_eq!(at(t, "int b", "b", "q<<<"), WriteAt::Straight);
        assert_eq!(
            at(t, "if (n % 8)", "b", "q<<<"),
            WriteAt::Conditional(Some("(n % 8)".into()))
        );
        assert_eq!(at(t, "while (n > 1)", "n--", "q<<<"), WriteAt::FinishedLoop);
        // The loop's init, seen from its body and after it; its step on a first pass.
        assert_eq!(at(t, "for (", "i", "k<<<"), WriteAt::Straight);
        assert_eq!(at(t, "for (", "i", "q<<<"), WriteAt::FinishedLoop);
        assert_eq!(at(t, "i < n;", "i *=", "k<<<"), WriteAt::NextIteration);
        // A braced `if` and its `else`.
        assert_eq!(
            at(t, "if (n > 4)", "b", "q<<<"),
            WriteAt::Conditional(Some("(n > 4)".into()))
        );
        assert_eq!(
            at(t, "} else {", "b", "q<<<"),
            WriteAt::Conditional(Some("(!(n > 4))".into()))
        );
        // An `else if` branch and a `case` are conditions nobody reads.
        assert_eq!(
            at(t, "else if (n)", "b", "q<<<"),
            WriteAt::Conditional(None)
        );
        assert_eq!(at(t, "case 1:", "b", "q<<<"), WriteAt::Conditional(None));
        assert_eq!(at(t, "do {", "b", "q<<<"), WriteAt::FinishedLoop);
        // A block that also holds the use is no condition for it.
        let t =
            "void f(int n) {\n int b = 4;\n if (n > 0) {\n  b = n;\n  k<<<b, 64>>>(n);\n }\n}\n";
        assert_eq!(at(t, "b = n", "b", "k<<<"), WriteAt::Straight);
        // Nested heads: only the outermost counts, and its condition is not the write's.
        let t =
            "void f(int n) {\n int b = 4;\n if (n > 0) while (b < n) b++;\n k<<<b, 64>>>(n);\n}\n";
        assert_eq!(at(t, "b < n)", "b++", "k<<<"), WriteAt::Conditional(None));
    }

    #[test]
    fn a_branch_beside_one_that_never_completes_is_straight_code() {
        // Rodinia nw: `if (argc == 3) { n = …; } else { usage(); }`, `usage` ending in `exit`.
        let t = "void usage() {\n fprintf(stderr, \"x\");\n exit(1);\n}\n\
                 void f(int argc) {\n int n, m, r;\n if (argc == 3) {\n  n = 4;\n } else {\n  usage();\n }\n\
                 if (argc > 4) m = 2;\n else return;\n\
                 if (argc < 9) { r = 1; } else { log(); }\n k<<<n, m>>>(r);\n}\n";
        assert_eq!(at(t, "n = 4", "n", "k<<<"), WriteAt::Straight);
        assert_eq!(at(t, "m = 2", "m", "k<<<"), WriteAt::Straight);
        // An `else` that goes on is a condition as before.
        assert_eq!(
            at(t, "r = 1", "r", "k<<<"),
            WriteAt::Conditional(Some("(argc < 9)".into()))
        );
        // The other way round: the `if` branch returns, the `else` write is straight.
        let t =
            "void f(int c) {\n int n;\n if (c) { throw 1; } else { n = 8; }\n k<<<n, 1>>>();\n}\n";
        assert_eq!(at(t, "n = 8", "n", "k<<<"), WriteAt::Straight);
    }

    #[test]
    fn a_write_in_an_if_condition_runs_before_either_branch() {
        // Rodinia hotspot: past an `if` whose branch exits, every `||` operand ran.
        let t = "void usage() {\n exit(1);\n}\n\
                 void f(int argc, char **argv) {\n int r, c, d, e;\n\
                 if (argc != 3 || (r = atoi(argv[1])) <= 0 || (c = atoi(argv[2])) <= 0) usage();\n\
                 if ((d = g()) < 0) { h(); }\n\
                 if (argc > 5 && (e = 2)) { h(); }\n\
                 k<<<r, c>>>(d, e);\n}\n";
        assert_eq!(at(t, "r = atoi", "r", "k<<<"), WriteAt::Straight);
        assert_eq!(at(t, "c = atoi", "c", "k<<<"), WriteAt::Straight);
        // The first operand always runs, whatever the branch does.
        assert_eq!(at(t, "d = g", "d", "k<<<"), WriteAt::Straight);
        // On the right of `&&`: only when the left held.
        assert_eq!(at(t, "e = 2", "e", "k<<<"), WriteAt::Conditional(None));
        // On the right of `||` with a branch that goes on: only when the left was false.
        let t = "void f(int a) {\n int n = 1;\n if (a || (n = 4)) { h(); }\n k<<<n, 1>>>();\n}\n";
        assert_eq!(at(t, "n = 4", "n", "k<<<"), WriteAt::Conditional(None));
    }

    #[test]
    fn a_one_statement_if_has_an_else_condition_and_a_case_holding_the_use_is_straight() {
        let t = "void f(int n) {\n int b = 4;\n if (n > 512) b = 2;\n else b = n;\n k<<<b, 1>>>();\n}\n";
        assert_eq!(
            at(t, "else b", "b", "k<<<"),
            WriteAt::Conditional(Some("(!(n > 512))".into()))
        );
        // cuda-samples reduction: `case 9: constexpr int groups = 2; … k<<<…>>>` in the case.
        let t = "void f(int w) {\n switch (w) {\n case 9:\n  int g = 2;\n  k<<<g, 1>>>();\n  break;\n }\n}\n";
        assert_eq!(at(t, "int g", "g", "k<<<"), WriteAt::Straight);
    }

    #[test]
    fn writes_cover_assignments_members_increments_and_pointers() {
        let t = "void f() { int a = 4; a += b * 2; a++; --a; a &= 3; g.x = a; f(&a, 1); c = a & m; x.a = 9; p->a = 3; cudaGetDeviceProperties(&a, 0); printf(\"a = %d\", a); if (a == 2) h(&a[1]); }";
        let w = Flow::of(t).writes("a");
        let vals: Vec<Option<&str>> = w.iter().map(|w| w.value.as_deref()).collect();
        assert_eq!(
            vals,
            vec![
                Some("4"),
                Some("a + (b * 2)"),
                Some("a + 1"),
                Some("a - 1"),
                None,
                None
            ]
        );
        assert_eq!(
            w.iter().map(|w| w.compound).collect::<Vec<_>>(),
            [false, true, true, true, false, false]
        );
        let t = "void f() { x = y = n > 2 ? n : 2; if (x == y) z = 1; }";
        let c = Flow::of(t).writes("x");
        assert_eq!(c[0].value.as_deref(), Some("n > 2 ? n : 2"));
        let t = "void f(dim3 p, int n) { g.x = a; g.z++; }";
        let g = Flow::of(t).writes("g");
        assert_eq!((g[0].member, g[0].value.as_deref()), (Some('x'), Some("a")));
        assert_eq!(
            (g[1].member, g[1].value.as_deref()),
            (Some('z'), Some("g.z + 1"))
        );
        // A parameter is no write.
        assert!(Flow::of(t).writes("p").is_empty());
    }

    #[test]
    fn a_dim3_constructed_writes_every_member() {
        let members = |t: &str, name: &str| -> Vec<(Option<char>, Option<String>)> {
            Flow::of(t)
                .writes(name)
                .into_iter()
                .map(|w| (w.member, w.value))
                .collect()
        };
        let xyz = |v: [&str; 3]| -> Vec<(Option<char>, Option<String>)> {
            ['x', 'y', 'z']
                .into_iter()
                .zip(v)
                .map(|(m, v)| (Some(m), Some(v.to_string())))
                .collect()
        };
        let t = "void f(int n) {\n dim3 g(n / 64, 2);\n dim3 b(BLOCK);\n dim3 e (size, 2);\n dim3 h, k(3);\n dim3 d;\n g = dim3(n);\n}\n";
        assert_eq!(
            members(t, "g"),
            [xyz(["n / 64", "2", "1"]), xyz(["n", "1", "1"])].concat()
        );
        assert_eq!(members(t, "b"), xyz(["BLOCK", "1", "1"]));
        assert_eq!(members(t, "d"), xyz(["1", "1", "1"]));
        assert_eq!(members(t, "e"), xyz(["size", "2", "1"]));
        assert_eq!(members(t, "h"), xyz(["1", "1", "1"]));
        // Only the first name of a declaration list is read as the type's.
        assert!(members(t, "k").is_empty());
    }

    #[test]
    fn field_writes_and_object_arguments_are_read_from_statements() {
        let t = "{\n p->n = m * 2;\n q.n += 1;\n p->n++;\n s.p->n = 3;\n p->k = 1;\n printf(\"p->n = %d\", p->n);\n x = p->n == 2;\n}\n";
        let f = Flow::of(t);
        assert_eq!(f.field_writes("p", "n"), (2, vec!["m * 2".to_string()]));
        assert_eq!(f.field_writes("q", "n"), (1, vec![]));
        let at = |obj: Option<&str>| -> Vec<(u32, Option<String>)> {
            let w = f.field_assignments(obj, "n").into_iter();
            w.map(|w| (w.line, w.value)).collect()
        };
        // Any object's (`s.p->n` too), or one plain name's; no step, string or comparison.
        let m2 = (2, Some("m * 2".to_string()));
        assert_eq!(at(None), vec![m2.clone(), (5, Some("3".to_string()))]);
        assert_eq!(at(Some("p")), vec![m2]);
        assert!(Flow::of("S s = { .n = 3 };")
            .field_assignments(None, "n")
            .is_empty());
        // Unbalanced text (a function's body up to a launch) reads the same.
        let t = "{\n init(&p, 4);\n use(x, p);\n g((void *)p, q.p);\n int a, p2;\n p.n = 2;\n";
        let f = Flow::of(t);
        assert_eq!(f.object_arguments("p"), 2);
        assert_eq!(f.field_writes("p", "n"), (1, vec!["2".to_string()]));
    }

    #[test]
    fn declared_types_are_read_from_declarations_and_parameters() {
        let f = Flow::of("cudaDeviceProp a, b = x;\nvoid g(cudaDeviceProp c, cudaDeviceProp *d) {\n cudaDeviceProp *e; int p; p = a.major;\n}\n");
        for n in ["a", "b", "c"] {
            assert!(f.declared_as("cudaDeviceProp", n), "{n}");
        }
        for n in ["d", "e", "p"] {
            assert!(!f.declared_as("cudaDeviceProp", n), "{n}");
        }
    }

    #[test]
    fn a_parameters_default_is_no_write_of_a_variable() {
        let src =
            "void run(unsigned n, unsigned nb = 1);\nint nb = 4;\nvoid f() {\n  int m = g(2);\n}\n";
        let f = Flow::of(src);
        let writes = f.assignments("nb");
        assert_eq!(writes.len(), 2, "{writes:?}");
        assert!(f.is_default_argument(writes[0].pos));
        assert!(!f.is_default_argument(writes[1].pos));
        let m = f.assignments("m");
        assert!(!f.is_default_argument(m[0].pos));
    }

    #[test]
    fn declarations_give_each_declarators_type_and_pointer_depth() {
        let src = "void f() {\n  const float *a, **b, c = 1;\n  unsigned char *d;\n  float x[4], &r = c;\n  for (int i = 0; i < 4; i++) {}\n  a = 0;\n}\n";
        let f = Flow::of(src);
        let all = (0, src.len());
        let ty = |n: &str| f.declarations(n, all);
        assert_eq!(ty("a"), [Some("float *".to_string())]);
        assert_eq!(ty("b"), [Some("float **".to_string())]);
        assert_eq!(ty("c"), [Some("float".to_string())]);
        assert_eq!(ty("d"), [Some("unsigned char *".to_string())]);
        assert_eq!(ty("i"), [Some("int".to_string())]);
        // Arrays and references are declared, with no element type to give.
        assert_eq!(ty("x"), [None]);
        assert_eq!(ty("r"), [None]);
        assert!(ty("f").is_empty());
    }

    #[test]
    fn a_declaration_in_a_span_makes_the_name_local_there() {
        let src = "int g = 1;\nvoid f(int p) {\n int n; float *q = 0, a[4], &r = s;\n for (int i = 0; i < n; i++) g = n + p;\n}\nvoid h() {\n n = 2; g = 3;\n}\n";
        let f = Flow::of(src);
        let (fs, he) = (src.find("void f").unwrap(), src.find("void h").unwrap());
        for n in ["n", "q", "a", "r", "i"] {
            assert!(f.declares(n, (fs, he)), "{n}");
        }
        // A parameter is no declaration in the body, a write or a use is none, and the
        // file-level `g` lies outside the span.
        for n in ["p", "g", "s"] {
            assert!(!f.declares(n, (fs, he)), "{n}");
        }
        assert!(!f.declares("n", (he, src.len())));
        assert!(f.declares("g", (0, fs)));
    }

    #[test]
    fn flags_near_a_line_are_case_labels_then_the_last_dash_literal() {
        let f = Flow::of(
            "void f(int c) {\n if (!strcmp(a, \"-x\") || !strcmp(a, \"--size\")) {\n\n n = 1;\n }\n\
             switch (c) { case 'q': printf(\"-v\");\n m = 2; }\n printf(\"- \");\n k = 3;\n}\n",
        );
        assert_eq!(f.flag_near(4).as_deref(), Some("--size"));
        assert_eq!(f.flag_near(7).as_deref(), Some("-q"));
        // Four lines back at most; `"- "` is no flag.
        assert_eq!(f.flag_near(9).as_deref(), Some("-q"));
        assert_eq!(f.flag_near(11), None);
    }

    #[test]
    fn launches_between_lines_give_their_arguments() {
        let t = "void f(int n) {\n a<<<1, 2>>>(x, n);\n for (int i = 0; i < 4; i++) {\n  b<float><<<g, b>>>(\n   inter_d + (i * 8), n);\n }\n c<<<1, 1>>>(y);\n}\n";
        let f = Flow::of(t);
        assert_eq!(
            f.launch_args_between(2, 7),
            vec![vec!["inter_d + (i * 8)".to_string(), "n".to_string()]]
        );
        assert_eq!(f.launch_args_between(0, 9).len(), 3);
    }

    #[test]
    fn the_function_start_is_the_outermost_body() {
        let t = "namespace a {\nvoid f(int n) {\n auto g = [](int z) { return z; };\n k<<<1, 1>>>(n);\n}\n}\n";
        let f = Flow::of(t);
        let body = t.find("{\n auto").unwrap();
        assert_eq!(f.function_start(t.find("return z").unwrap()), body);
        assert_eq!(f.function_start(t.find("k<<<").unwrap()), body);
        assert_eq!(f.function_start(0), 0);
    }

    #[test]
    fn the_for_loops_around_a_launch_give_their_counters_first_values() {
        let line = |t: &str, k: &str| t[..t.find(k).unwrap()].rfind('\n').unwrap() + 1;
        let t = "void f(unsigned n, int *d) {\n for (int r = 0; r < 2; r++) { g(); }\n for (unsigned int i=0; i < n; i++) {\n  for (d2 = n; d2 > 1; d2 /= 2) {\n   k<<<1, 64>>>(n, d + i * 64);\n  }\n }\n}\n";
        assert_eq!(
            Flow::of(t).enclosing_for_counters(line(t, "k<<<")),
            vec![
                ("d2".to_string(), "n".to_string()),
                ("i".to_string(), "0".to_string())
            ]
        );
        // A loop that closed before the launch, a while loop, an init of two names, an
        // init with a call of two arguments: none.
        let t = "void f(int n) {\n for (int i = 0; i < n; i++) { g(); }\n while (n > 1) {\n  for (int a = 0, b = 1; a < n; a++) {\n   for (int c = min(n, 4); c > 0; c--) {\n    k<<<1, 64>>>(n);\n   }\n  }\n }\n}\n";
        assert!(Flow::of(t)
            .enclosing_for_counters(line(t, "k<<<"))
            .is_empty());
    }

    #[test]
    fn assignments_steps_and_loop_counters_are_read_from_statements() {
        let f = Flow::of(
            "enum { B = 16 };\n\
             struct P { static const int size = 4; };\n\
             void g(float *alpha, int d = 3) {\n\
             int a = 1, b = f(2, 3), c;\n\
             b == 4; b = c = 5;\n\
             *alpha = 43532;\n\
             s.b = 7; printf(\"b = %d\", b);\n\
             for (int i = 0; i < 4; i++) ;\n\
             x = std::f<float, int>(b);\n\
             for (j = 0; ; ) ;\n\
             n <<= 2; --m; s.k++; t -> k += 1;\n\
             }\n",
        );
        let a = |n: &str| -> Vec<(u32, String)> {
            let w = f.assignments(n).into_iter();
            w.map(|w| (w.line, w.value.unwrap_or_default())).collect()
        };
        let v = |x: &[(u32, &str)]| -> Vec<(u32, String)> {
            x.iter().map(|(l, s)| (*l, s.to_string())).collect()
        };
        // Not `==`, a member's, or a string's; a chained value as written.
        assert_eq!(a("b"), v(&[(4, "f(2, 3)"), (5, "c = 5")]));
        assert_eq!(a("alpha"), v(&[(6, "43532")]));
        assert_eq!(a("B"), v(&[(1, "16")]));
        assert_eq!(a("size"), v(&[(2, "4")]));
        assert_eq!(a("d"), v(&[(3, "3")]));
        // A comma inside template arguments is no end of the value.
        assert_eq!(a("x"), v(&[(9, "std::f<float, int>(b)")]));
        assert!(f.starts_loop("i") && f.starts_loop("j") && !f.starts_loop("n"));
        assert!(f.changed_in_place("n") && f.changed_in_place("m") && f.changed_in_place("i"));
        assert!(!f.changed_in_place("k") && !f.changed_in_place("b"));
    }
}
