//! Facts from the host code around a launch site, each found by one small rule: a device
//! pointer's allocation size, the `cudaMemcpy` copies into and out of it, `cudaMemset` to
//! zero, `cudaMemcpyToSymbol` uploads, `#define`s and assignments of names, argument-parsing
//! (`atoi(argv[k])`) and the benchmark's run scripts, and integer values of host
//! expressions. The host code is never compiled: calls, function definitions, assignments
//! and statements are read from its tree-sitter parse (`cuda::host`, `cuda::host_flow`),
//! and a rule that cannot tell says why.

use super::draft::{sizeof_type, zero_literal};
use super::expr::Num;
use crate::cuda::ceval::{Env, Expr};
use crate::cuda::cexpr::{self, Kind};
use crate::cuda::host::{self, calls_to, HostFn};
use crate::cuda::host_flow::Flow;
// Re-exported: harness code reads host text through `infer_host`.
pub use crate::cuda::lex::strip_comments;
use crate::cuda::ppcond::{define_bodies, function_macro};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Whether macro `m` is defined where host code tests it, or None when that is not known:
/// a `-D` flag of the build (`build_defines`) defines it; a name the program's files
/// `#define` (`file_defines`) is defined from its `#define` on, which a reading without
/// include order cannot place, and names the compiler reserves (`__CUDACC__`, `_WIN32`)
/// are the compiler's: both unknown. Any other name is defined nowhere.
pub fn macro_state(
    build_defines: &BTreeSet<String>,
    file_defines: &BTreeSet<String>,
    m: &str,
) -> Option<bool> {
    if build_defines.contains(m) {
        Some(true)
    } else if m.starts_with('_') || file_defines.contains(m) {
        None
    } else {
        Some(false)
    }
}

/// The host code one launch lives in: its file (comments removed), the launch's line, the
/// other source files of its folder, and the benchmark's run command arguments.
#[derive(Debug, Clone, Default)]
pub struct Host {
    pub file: String,
    pub launch_line: u32,
    pub others: Vec<String>,
    /// Arguments after the program in the first run command found (run scripts, Makefile).
    pub run_args: Option<Vec<String>>,
    /// Every run command's arguments (run scripts, Makefile), for flags (`-s 16`) that any
    /// of them passes.
    pub run_cmds: Vec<Vec<String>>,
    /// Template values of the launching function's instance (`T` → `float`), for a
    /// `sizeof(T)` in the host functions around it (`processDWT<T>` computes
    /// `w * h * sizeof(T)` for the buffers it passes down as `T *`).
    pub type_binds: Vec<(String, String)>,
    /// `sizeof(T)` of a type parameter no instance binds, learnt from the buffer it sizes:
    /// `cudaMalloc(&c_r_out, w * h * sizeof(T))` for a buffer of `int` makes `T` 4 bytes.
    pub sizeof_hints: std::cell::RefCell<Vec<(String, usize)>>,
    /// [`Host::function_at`]'s answers by (text index, line): the launch's own function and
    /// those walks up the callers pass through, each found once.
    pub scopes: std::cell::RefCell<BTreeMap<Spot, Option<HostFn>>>,
    /// The host code around the slow kernel's own launch, when the pair's slow side is a
    /// natural kernel launched from other code (Parboil's `cuda_base/`): its launch is
    /// read from there, by the same rules.
    pub slow_side: Option<Box<Host>>,
    /// The texts have their settled `#if` groups resolved ([`macro_state`]); a recorded
    /// launch definition with a directive inside is then read from them again.
    pub compiled: bool,
    /// Answers already computed from the texts, which never change: [`Host::ranked_calls`]
    /// by callee, a function's definition by name (the first text defining it), and
    /// [`Host::definition`] by name. A host is built, then asked; code that changes its
    /// texts or run commands after asking resets this.
    pub memo: HostMemo,
}

/// What a [`Host`] has already looked up in its texts (each buffer of a pair asks again).
#[derive(Debug, Clone, Default)]
pub struct HostMemo {
    calls: std::cell::RefCell<BTreeMap<String, Vec<Call>>>,
    defs: std::cell::RefCell<BTreeMap<String, Option<FnDef>>>,
    definitions: std::cell::RefCell<BTreeMap<String, Result<String, String>>>,
}

/// The variable a launch reads under a name ([`Host::launch_sees`]): the functions (text
/// index, name) whose own variable it is, and whether it is a file-level one.
#[derive(Debug, Default)]
struct Sees {
    owners: Vec<(usize, String)>,
    global: bool,
}

/// A host function and the index in [`Host::texts`] of the text defining it.
type FnDef = (usize, HostFn);

/// `table[key]`, computed by `f` the first time. The table is not borrowed while `f` runs,
/// so `f` may ask the memo again.
fn memoized<V: Clone>(
    table: &std::cell::RefCell<BTreeMap<String, V>>,
    key: &str,
    f: impl FnOnce() -> V,
) -> V {
    if let Some(v) = table.borrow().get(key) {
        return v.clone();
    }
    let v = f();
    table.borrow_mut().insert(key.to_string(), v.clone());
    v
}

/// Where host text sits: the index of its text in [`Host::texts`] (0 is the launch file)
/// and a 1-based line.
pub type Spot = (usize, u32);

/// A host function's name and parameter names.
pub type FnHead = (String, Vec<String>);

/// A call in host text ([`host::calls_to`]).
pub type Call = host::HostCall;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    ToDevice,
    ToHost,
    DeviceToDevice,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copy {
    pub line: u32,
    pub dir: Direction,
    pub bytes: String,
}

/// Whether a kernel launch (`k<<<…>>>(…, var, …)`) that starts after line `after` and
/// before line `before` (1-based, both excluded) passes buffer `var`.
pub fn launched_with_between(text: &str, var: &str, after: u32, before: u32) -> bool {
    // `inter_d + (i * GRID_SIZE)` passes `inter_d` too: the kernel writes into it.
    let names = |a: &String| {
        let base = split_top_level_plus(a).map(|(b, _)| b.trim().to_string());
        same_buffer(&pointer_name(a), var) || base.is_some_and(|b| same_buffer(&b, var))
    };
    // Lines within the launch's function: that function's parse (inference has it already).
    let fns = crate::cuda::host::functions_cached(text);
    let flow = match crate::cuda::host::function_at(&fns, before) {
        Some(f) if f.head_line <= after => Flow::of_function(text, &fns, before),
        _ => Flow::of(text),
    };
    flow.launch_args_between(after, before)
        .iter()
        .any(|args| args.iter().any(names))
}

/// `a + (b + c)` → (`a`, `(b + c)`): the text around the first `+` of the sum at its top.
pub fn split_top_level_plus(t: &str) -> Option<(&str, &str)> {
    let (terms, ops) = Expr::chain(t, &["+", "-"])?;
    let k = ops.iter().position(|o| *o == "+")?;
    Some((&t[..terms[k].end], &t[terms[k + 1].start..]))
}

/// The variable a pointer argument names: `(void**)&d_a` → `d_a`, `&(x)` → `x`, `d_a` → `d_a`.
pub fn pointer_name(arg: &str) -> String {
    let mut a = arg.trim();
    loop {
        let before = a;
        if a.starts_with('(') {
            // A cast `(void **)` or `(float*)` is dropped; `(x)` is unwrapped.
            if let Some(close) = a.find(')') {
                let inner = &a[1..close];
                if inner.contains('*') || inner.trim() == "void" {
                    a = a[close + 1..].trim();
                } else if close == a.len() - 1 {
                    a = inner.trim();
                }
            }
        }
        a = a.trim_start_matches('&').trim();
        if let Some(r) = a.strip_prefix("reinterpret_cast<void **>") {
            a = r.trim();
        }
        if a == before {
            break;
        }
    }
    a.trim_matches(|c| c == '(' || c == ')').trim().to_string()
}

impl Host {
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.file.as_str()).chain(self.others.iter().map(String::as_str))
    }

    /// Calls in the launch file first, nearest before the launch, then the other files.
    /// Take `args` as the run script's arguments; what the memo found with the old ones
    /// is forgotten.
    pub fn set_run_args(&mut self, args: Vec<String>) {
        self.run_args = Some(args);
        self.memo = HostMemo::default();
    }

    /// Take `file` as the launch file's text; what the memo found in the old one is
    /// forgotten, and so are the functions found around its lines.
    pub fn set_file(&mut self, file: String) {
        self.file = file;
        self.memo = HostMemo::default();
        self.scopes.borrow_mut().clear();
    }

    fn ranked_calls(&self, name: &str) -> Vec<Call> {
        memoized(&self.memo.calls, name, || self.ranked_calls_uncached(name))
    }

    /// The first definition of function `name` in the texts, in [`Host::texts`] order.
    fn function_def_in_texts(&self, name: &str) -> Option<FnDef> {
        memoized(&self.memo.defs, name, || {
            self.texts()
                .enumerate()
                .find_map(|(i, t)| Some((i, function_named(t, name)?)))
        })
    }

    fn ranked_calls_uncached(&self, name: &str) -> Vec<Call> {
        let mut here = calls_to(&self.file, name);
        here.sort_by_key(|c| {
            if c.line <= self.launch_line {
                (0, self.launch_line - c.line)
            } else {
                (1, c.line - self.launch_line)
            }
        });
        for o in &self.others {
            here.extend(calls_to(o, name).into_iter().map(|c| Call { line: 0, ..c }));
        }
        here
    }

    /// The byte size of `var`'s device allocation (`cudaMalloc`, `cudaMallocManaged`), or
    /// `width * height` of a `cudaMallocPitch`.
    pub fn alloc_bytes(&self, var: &str) -> Option<String> {
        if let Some(base) = indexed_base(var) {
            return self.indexed_alloc_bytes(base);
        }
        for f in [
            "cudaMalloc",
            "cudaMallocManaged",
            "cudaMallocHost",
            "cudaHostAlloc",
        ] {
            if let Some(c) = self
                .ranked_calls(f)
                .into_iter()
                .find(|c| c.args.len() >= 2 && pointer_name(&c.args[0]) == var)
            {
                return Some(c.args[1].clone());
            }
        }
        self.ranked_calls("cudaMallocPitch")
            .into_iter()
            .find(|c| c.args.len() == 4 && pointer_name(&c.args[0]) == var)
            .map(|c| format!("({}) * ({})", c.args[2], c.args[3]))
            .or_else(|| self.wrapper_alloc(var))
            .or_else(|| self.out_param_alloc(var))
    }

    /// `var = alloc<float>(n * 4)` where the host defines `alloc` around a `cudaMalloc`:
    /// its byte size with the call's arguments (and template type) put in.
    pub fn wrapper_alloc(&self, var: &str) -> Option<String> {
        let rhs = assignments(&self.file, var).into_iter().map(|(_, r)| r);
        for r in rhs {
            let Some((fname, targs, args)) = host::whole_call(&r) else {
                continue;
            };
            if fname.contains("malloc") || fname == "new" {
                continue;
            }
            let targ = (!targs.is_empty()).then(|| targs.join(", "));
            for t in self.texts() {
                let Some(f) = function_named(t, &fname) else {
                    continue;
                };
                let Some(c) = calls_in_body(t, &f, "cudaMalloc").find(|c| c.args.len() >= 2) else {
                    continue;
                };
                let mut bytes = c.args[1].clone();
                for (p, a) in f.params.iter().zip(&args) {
                    bytes = cexpr::replace_ident(&bytes, p, &format!("({a})"));
                }
                if let Some(ta) = &targ {
                    bytes = cexpr::replace_ident(&bytes, "T", ta);
                }
                return Some(bytes);
            }
        }
        None
    }

    /// `setupMemoryGPU(numK, sizeof(float), phiR_d, phiR)` where the host defines the
    /// helper with `cudaMalloc((void **) &dev_ptr, num * size)` on a reference parameter
    /// (`float*& dev_ptr`), or `cudaMalloc((void**)ptr, n)` on a pointer to a pointer passed
    /// `&var`: the byte size with the call's arguments put in. Every such call passing `var`
    /// must agree.
    pub fn out_param_alloc(&self, var: &str) -> Option<String> {
        // The functions whose calls pass `var`, each looked at once.
        let fnames: BTreeSet<String> = self
            .texts()
            .flat_map(|t| host::callees_passing(t, |a| pointer_name(a) == var))
            .filter(|f| !f.starts_with("cuda") && f != var)
            .collect();
        let mut found: Option<String> = None;
        for fname in &fnames {
            let Some((ti, f)) = self.function_def_in_texts(fname) else {
                continue;
            };
            let def = self.texts().nth(ti).unwrap_or_default();
            if !def[f.body.0..f.body.1].contains("cudaMalloc") {
                continue;
            }
            for t in self.texts() {
                for c in calls_to(t, fname) {
                    let Some(k) = c.args.iter().position(|a| pointer_name(a) == var) else {
                        continue;
                    };
                    let Some(bytes) = helper_alloc_bytes(def, &f, k, &c.args) else {
                        continue;
                    };
                    match &found {
                        Some(f) if *f != bytes => return None,
                        _ => found = Some(bytes),
                    }
                }
            }
        }
        found
    }

    /// A CUDA array's extent in elements: `cudaMallocArray(&ary, &desc, w, h)` → (`w`,
    /// `h`), with no height for a 1-D array (`h` absent or 0).
    pub fn array_extent(&self, var: &str) -> Option<(String, Option<String>)> {
        let c = self
            .ranked_calls("cudaMallocArray")
            .into_iter()
            .find(|c| c.args.len() >= 3 && pointer_name(&c.args[0]) == var)?;
        let w = c.args[2].trim().to_string();
        let h = c
            .args
            .get(3)
            .map(|h| h.trim().to_string())
            .filter(|h| h != "0");
        Some((w, h))
    }

    /// `cudaMemcpy`/`cudaMemcpyAsync` copies into or out of `var`.
    pub fn copies(&self, var: &str) -> Vec<Copy> {
        let mut out = Vec::new();
        for f in ["cudaMemcpy", "cudaMemcpyAsync"] {
            for c in self.ranked_calls(f) {
                if c.args.len() < 4 {
                    continue;
                }
                let (dst, src) = (pointer_name(&c.args[0]), pointer_name(&c.args[1]));
                let (dst, src) = (same_buffer(&dst, var), same_buffer(&src, var));
                let kind = c.args[3].as_str();
                let dir = if kind.contains("HostToDevice") && dst {
                    Direction::ToDevice
                } else if kind.contains("DeviceToHost") && src {
                    Direction::ToHost
                } else if kind.contains("DeviceToDevice") && (dst || src) {
                    Direction::DeviceToDevice
                } else if kind.contains("Default") && dst {
                    Direction::ToDevice
                } else if kind.contains("Default") && src {
                    Direction::ToHost
                } else {
                    continue;
                };
                out.push(Copy {
                    line: c.line,
                    dir,
                    bytes: c.args[2].clone(),
                });
            }
        }
        out
    }

    /// Whether `var` is set to zero bytes by `cudaMemset` in the launch file before the
    /// launch, with no other kernel launch passing it in between (sad's `d_sads` is zeroed,
    /// then `mb_sad_calc` fills it, then `larger_sad_calc_8` reads it: not zeros there).
    pub fn memset_zero(&self, var: &str) -> bool {
        ["cudaMemset", "cudaMemsetAsync"].iter().any(|f| {
            calls_to(&self.file, f).iter().any(|c| {
                c.args.len() >= 3
                    && same_buffer(&pointer_name(&c.args[0]), var)
                    && matches!(c.args[1].trim(), "0" | "0x0" | "'\\0'")
                    && c.line <= self.launch_line
                    && !launched_with_between(&self.file, var, c.line, self.launch_line)
            })
        })
    }

    /// The buffer the launch file copies into `var` on the device (`cudaMemcpy(var, src, …,
    /// cudaMemcpyDeviceToDevice)`) last before the launch, when no memset of `var` follows
    /// that copy: `src`'s pointer name.
    pub fn device_copy_source(&self, var: &str) -> Option<String> {
        let last = ["cudaMemcpy", "cudaMemcpyAsync"]
            .iter()
            .flat_map(|f| calls_to(&self.file, f))
            .filter(|c| {
                c.args.len() >= 4
                    && c.args[3].contains("DeviceToDevice")
                    && same_buffer(&pointer_name(&c.args[0]), var)
                    && c.line <= self.launch_line
            })
            .max_by_key(|c| c.line)?;
        let zeroed_after = ["cudaMemset", "cudaMemsetAsync"].iter().any(|f| {
            calls_to(&self.file, f).iter().any(|m| {
                m.args.len() >= 3
                    && same_buffer(&pointer_name(&m.args[0]), var)
                    && m.line > last.line
                    && m.line <= self.launch_line
            })
        });
        (!zeroed_after).then(|| pointer_name(&last.args[1]))
    }

    /// `cudaMemcpyToSymbol(sym, src, bytes)` uploads: symbol name → byte size.
    pub fn symbol_uploads(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for f in ["cudaMemcpyToSymbol", "cudaMemcpyToSymbolAsync"] {
            for c in self.ranked_calls(f) {
                if c.args.len() >= 3 {
                    let sym = c.args[0].trim().trim_matches('"').to_string();
                    out.entry(sym).or_insert_with(|| c.args[2].clone());
                }
            }
        }
        out
    }

    /// The text a name is defined as: a `#define NAME body`; else a command-line value; else
    /// its writes before the launch in the launching function, read as of the launch
    /// ([`super::infer_asof::value_at_launch`]; unknown, with why, where a loop, a condition
    /// or a pointer decides them); else the one text the launching function's call sites pass for it as a parameter;
    /// else (scoped) the first write of the variable the launch reads ([`Host::launch_sees`]),
    /// never a device function's local or a parameter's default; only when there is none,
    /// the first write of a same-named variable elsewhere. None for a local of the launching
    /// function no write before the launch sets. Function-like macros are not values.
    pub fn definition(&self, name: &str) -> Option<String> {
        self.definition_or_why(name).ok()
    }

    /// [`Host::definition`], or why there is none: no definition, or the launching
    /// function's writes do not fix the value at the launch (a loop, a condition, a pointer).
    pub fn definition_or_why(&self, name: &str) -> Result<String, String> {
        memoized(&self.memo.definitions, name, || {
            self.definition_uncached(name)
                .ok_or_else(|| format!("`{name}` has no definition in the host code"))
                .and_then(|d| d)
        })
    }

    fn definition_uncached(&self, name: &str) -> Option<Result<String, String>> {
        // `#ifdef RD_WG_SIZE #define B RD_WG_SIZE #else #define B 16`: a body that names a
        // macro defined nowhere (a -D flag) gives way to the next.
        let bodies: Vec<String> = self.texts().flat_map(|t| define_bodies(t, name)).collect();
        let defined = |w: &str| {
            self.texts()
                .any(|t| !define_bodies(t, w).is_empty() || !assignments(t, w).is_empty())
        };
        if let Some(d) = bodies
            .iter()
            .find(|d| !super::is_ident(d.trim()) || defined(d.trim()))
            .or(bodies.first())
        {
            return Some(Ok(d.clone()));
        }
        if let Some(v) = self.command_line_value(name) {
            return Some(Ok(v));
        }
        // The launching function's writes before the launch, folded in order (`n =
        // atoi(argv[1]); n = n + 1` is `(atoi(argv[1])) + 1`): a write in a loop that ended,
        // under a condition or through a pointer leaves the value unknown.
        match super::infer_asof::value_at_launch(&self.file, name, self.launch_line) {
            // A parameter changed from the value it comes in with (`if (bs == 1024) bs =
            // 512;`): that value is the one its call sites pass. (`mentions` answers yes for
            // text it cannot read; such a value is no self-reference.)
            Ok(Some(v)) if cexpr::tokens(&v).is_ok() && super::infer_asof::mentions(&v, name) => {
                return Some(match self.bind_param(name) {
                    Some(b) => Ok(cexpr::replace_ident(&v, name, &format!("({b})"))),
                    None => Err(format!(
                        "`{name}` is a parameter changed before the launch (to `{v}`), and its callers do not say the value it comes in with"
                    )),
                });
            }
            Ok(Some(v)) => return Some(Ok(v)),
            Ok(None) => {}
            Err(why) => return Some(Err(why)),
        }
        if let Some(b) = self.bind_param(name) {
            return Some(Ok(b));
        }
        // A name the launching function declares itself, and does not hand to a call
        // before the launch (`init(n, &m)` may set it through a reference or a pointer), is
        // that function's own variable: the writes of same-named locals in other functions
        // are other variables (scoped lookup). With no write before the launch, the code
        // does not say its value here.
        if self.launch_owns(name) {
            return None;
        }
        // Elsewhere: an assignment from a command-line argument the run script gives wins
        // over a declaration's default (`int h = 1;` then `(h = atoi(argv[2])) <= 0 || …`).
        // Never a kernel's or device function's local: device code holds no host values.
        // Only writes of the variable the launch sees: a local of another function is
        // another variable, whatever its name (scoped lookup, [`Host::launch_sees`]).
        let sees = self.launch_sees(name);
        let self_ref = |rhs: &str| draft_idents(rhs).iter().any(|w| w == name);
        let (seen, unseen): (Vec<_>, Vec<_>) = self
            .texts()
            .enumerate()
            .flat_map(|(ti, t)| {
                let flow = Flow::of(t);
                flow.assignments(name)
                    .into_iter()
                    .filter(move |w| {
                        !self
                            .function_at((ti, w.line))
                            .is_some_and(|f| f.device_only(t))
                    })
                    .map(move |w| (ti, flow.is_default_argument(w.pos), w))
            })
            .filter(|(_, _, w)| !self_ref(w.value.as_deref().unwrap_or_default()))
            .partition(|(ti, default, w)| !default && self.sees(&sees, name, (*ti, w.line)));
        let all: Vec<String> = if seen.is_empty() { unseen } else { seen }
            .into_iter()
            .map(|(_, _, w)| w.value.unwrap_or_default())
            .collect();
        let from_run = all.iter().find(|r| {
            argv_index(r).is_some_and(|k| {
                self.run_args
                    .as_ref()
                    .and_then(|a| a.get(k - 1))
                    .is_some_and(|v| parse_num(v).is_some())
            })
        });
        from_run.or(all.first()).cloned().map(Ok)
    }

    /// Whether the function around the launch declares a local `name` of its own and passes
    /// it whole to no call before the launch line.
    fn launch_owns(&self, name: &str) -> bool {
        let Some(f) = self.function_at((0, self.launch_line)) else {
            return false;
        };
        let flow = Flow::of(&self.file);
        let launch = super::infer_asof::line_offset(&self.file, self.launch_line);
        flow.declares(name, f.body) && flow.object_arguments_within(name, (f.body.0, launch)) == 0
    }

    /// Whether function `f` of text `ti` has a `name` of its own: a parameter or a local.
    fn owns(&self, ti: usize, f: &HostFn, name: &str) -> bool {
        f.params.iter().any(|p| p == name)
            || self
                .texts()
                .nth(ti)
                .is_some_and(|t| Flow::of(t).declares(name, f.body))
    }

    /// Which variable named `name` the launch reads: the functions whose own `name` it is
    /// (the launching function's, and up the callers while each passes `name` for a
    /// parameter of that name, to the function declaring it), and whether it is, at the
    /// end of such a chain, a file-level variable.
    fn launch_sees(&self, name: &str) -> Sees {
        let mut sees = Sees::default();
        let mut todo = vec![(0, self.launch_line)];
        // At most 16 functions: a chain of callers passing the name on is short.
        let mut left = 16;
        while let Some(spot) = todo.pop().filter(|_| left > 0) {
            left -= 1;
            let Some(f) = self.function_at(spot) else {
                sees.global = true;
                continue;
            };
            let id = (spot.0, f.name.clone());
            if sees.owners.contains(&id) {
                continue;
            }
            if f.params.iter().any(|p| p == name) {
                let callers = self.caller_args(spot, name).unwrap_or_default();
                todo.extend(
                    callers
                        .into_iter()
                        .filter(|(a, _)| a == name)
                        .map(|(_, at)| at),
                );
                sees.owners.push(id);
            } else if self.owns(spot.0, &f, name) {
                sees.owners.push(id);
            } else {
                sees.global = true;
            }
        }
        sees
    }

    /// Whether a write of `name` at `spot` writes the variable the launch reads.
    fn sees(&self, sees: &Sees, name: &str, spot: Spot) -> bool {
        match self.function_at(spot) {
            None => sees.global,
            Some(f) if sees.owners.contains(&(spot.0, f.name.clone())) => true,
            Some(f) => sees.global && !self.owns(spot.0, &f, name),
        }
    }

    /// Whether some host file starts a `for` loop with `name`.
    fn loop_counter(&self, name: &str) -> bool {
        self.texts().any(|t| Flow::of(t).starts_loop(name))
    }

    /// Whether the host code assigns `name` something other than a literal zero, or
    /// changes it in place (`tmp += abs(v[j])`, `n++`).
    fn assigned_again(&self, name: &str) -> bool {
        self.texts().any(|t| {
            assignments(t, name).iter().any(|(_, r)| !zero_literal(r))
                || Flow::of(t).changed_in_place(name)
        })
    }

    /// The integer value of a host expression, following definitions, `sizeof` and
    /// command-line arguments into the run script. The error says why not.
    pub fn int_value(&self, expr: &str) -> Result<i64, String> {
        integer(expr, self.value(expr, 0)?)
    }

    /// `--assume-size` at the root: the value of `expr` where only the names the host code
    /// does not define take the assumed value `a` (so `nelr = B*((nel/B) + min(1, nel%B))`
    /// keeps its rounding to a multiple of `B`). Returns the value and the assumed names.
    pub fn int_value_assuming(&self, expr: &str, a: i64) -> Result<(i64, Vec<String>), String> {
        let assumed = Assumed {
            value: a,
            roots: Default::default(),
        };
        let v = integer(expr, self.eval(expr, 0, Some(&assumed))?)?;
        let mut roots = assumed.roots.into_inner();
        roots.sort();
        roots.dedup();
        Ok((v, roots))
    }

    /// `obj.f` / `obj->f` (one level) whose value the host code gives: a `cudaDeviceProp`'s
    /// property on an H100, else the assignments of `f` ([`Host::object_field_definition`],
    /// [`Host::field_definition`], [`Host::field_set_by_helper`]).
    fn field_num(
        &self,
        obj: &str,
        f: &str,
        depth: usize,
        assumed: Option<&Assumed>,
    ) -> Option<Num> {
        if self.is_device_prop(obj) {
            if let Some(v) = h100_property(f) {
                return Some(Num::Int(v));
            }
        }
        let d = self
            .object_field_definition(obj, f)
            .or_else(|| self.field_definition(f))
            .or_else(|| self.field_set_by_helper(obj, f))?;
        self.eval(&d, depth + 1, assumed).ok()
    }

    /// Whether `name` is declared a `cudaDeviceProp` in the host code.
    fn is_device_prop(&self, name: &str) -> bool {
        self.texts()
            .any(|t| Flow::of(t).declared_as("cudaDeviceProp", name))
    }

    /// `sizeof(ty)`: a scalar or pointer type, or a template parameter the launching
    /// function's instance binds (`type_binds`).
    fn sizeof(&self, ty: &str) -> Option<usize> {
        sizeof_type(ty)
            .or_else(|| {
                let (_, v) = self.type_binds.iter().find(|(k, _)| k == ty.trim())?;
                sizeof_type(v)
            })
            .or_else(|| {
                let hints = self.sizeof_hints.borrow();
                hints.iter().find(|(k, _)| k == ty.trim()).map(|(_, n)| *n)
            })
    }

    /// The numeric value of a host expression (integer or float).
    pub fn value(&self, expr: &str, depth: usize) -> Result<Num, String> {
        self.eval(expr, depth, None)
    }

    /// [`Host::value`], where under `--assume-size` (`assumed`) a name the host code does
    /// not define takes the assumed value and is recorded as an assumed root.
    fn eval(&self, expr: &str, depth: usize, assumed: Option<&Assumed>) -> Result<Num, String> {
        if depth > 10 {
            return Err(format!("definitions of `{expr}` nest too deeply"));
        }
        let e = expr.trim().trim_end_matches(';').trim();
        let substituted;
        let e = match self.substitute_argv(e)? {
            Some(x) => {
                substituted = x;
                substituted.as_str()
            }
            None => e,
        };
        let expanded;
        let e = if e.contains('(') {
            expanded = self.expand_calls(e);
            expanded.as_str()
        } else {
            e
        };
        if let Some(k) = argv_index(e) {
            return match (&self.run_args, assumed) {
                // Under `--assume-size`, an argument no script gives is an assumed root, so
                // what the host computes from it keeps its formula (`BINSp = BINS + 1`).
                (None, Some(assumed)) => Ok(Num::Int(assumed.root(e))),
                (None, None) => Err(format!("`{e}` is command-line argument {k} and no run script gives it")),
                (Some(a), _) => match a.get(k - 1) {
                    Some(v) => parse_num(v).ok_or_else(|| {
                        format!("`{e}` is command-line argument {k}, `{v}` in the run script, not a number")
                    }),
                    None => Err(format!("`{e}` is command-line argument {k}; the run script passes {}", a.len())),
                },
            };
        }
        if e.contains('[') || e.contains('"') {
            return Err(format!("`{e}` is not arithmetic on named values"));
        }
        // `std::min(a, b)` is `min(a, b)`.
        let unqualified = e.replace("std::", "");
        let tree = Expr::parse(&unqualified).map_err(|why| format!("`{e}`: {why}"))?;
        tree.eval(&HostNames {
            host: self,
            depth,
            expr: e,
            assumed,
        })
    }
}

/// What the names of a host expression stand for ([`Host::value`]): definitions followed
/// into the host code (or assumed roots under `--assume-size`), struct fields the host code
/// assigns, `sizeof`, and the few calls whose value is known.
struct HostNames<'a> {
    host: &'a Host,
    depth: usize,
    expr: &'a str,
    assumed: Option<&'a Assumed>,
}

/// One `--assume-size` evaluation ([`Host::int_value_assuming`]): the value a name the host
/// code does not define takes, and the names that took it.
struct Assumed {
    value: i64,
    roots: std::cell::RefCell<Vec<String>>,
}

impl Assumed {
    /// The assumed value, for `root`, which is recorded.
    fn root(&self, root: &str) -> i64 {
        self.roots.borrow_mut().push(root.to_string());
        self.value
    }
}

/// A value as an integer: a float only when it has no fraction.
fn integer(expr: &str, v: Num) -> Result<i64, String> {
    match v {
        Num::Int(i) => Ok(i),
        Num::Float(f) if f.fract() == 0.0 => Ok(f as i64),
        Num::Float(f) => Err(format!("`{expr}` is not an integer ({f})")),
    }
}

impl Env for HostNames<'_> {
    fn name(&self, w: &str) -> Result<Num, String> {
        let h = self.host;
        let d = match h.definition_or_why(w) {
            Ok(d) => d,
            Err(_) if self.assumed.is_some() => {
                return Ok(Num::Int(self.assumed.expect("checked").root(w)));
            }
            Err(why) => return Err(why),
        };
        if d.trim() == w {
            return Err(format!("`{w}` is defined only as itself"));
        }
        // Inside another name's definition, a zero the name is declared with is a
        // placeholder when the code assigns the name again (`float norm = 0;`, then
        // `if (norm < t) norm = t;` in a loop, then `pert = 3.45e-4 * norm`). A name the
        // launch reads itself keeps its zero: the caller judges it (a zero size is refused,
        // a zero offset on a loop's first pass is right). So does a loop counter
        // (`for (atomstart = 0; …; atomstart += MAXATOMS)`): its zero is the first pass,
        // the one a harness stands for.
        if self.depth > 0 && zero_literal(&d) && !h.loop_counter(w) && h.assigned_again(w) {
            return Err(format!(
                "`{w}` is 0 where it is declared and assigned again later (in a loop or from input): its value here is not known"
            ));
        }
        h.eval(&d, self.depth + 1, self.assumed)
            .map_err(|why| format!("`{w}` = `{}`: {why}", d.trim()))
    }

    /// One level (`p.n`, `img->width`) whose value the host code's assignments give
    /// ([`Host::field_num`]); else, under `--assume-size`, the assumed value at the root
    /// (so sizes computed from the same fields agree: `pixels = w * h` and a byte size
    /// `w * h * sizeof(T)`), except a `dim3` member (`threads.x`), whose definition is read.
    fn member(&self, root: &str, path: &[(&'static str, String)]) -> Result<Num, String> {
        let h = self.host;
        if let [(_, f)] = path {
            if let Some(v) = h.field_num(root, f, self.depth, self.assumed) {
                return Ok(v);
            }
        }
        let dim3 = matches!(path.first(), Some((_, f)) if matches!(f.as_str(), "x" | "y" | "z"));
        match self.assumed.filter(|_| !dim3) {
            Some(a) => {
                let text = path
                    .iter()
                    .fold(root.to_string(), |t, (op, f)| format!("{t}{op}{f}"));
                Ok(Num::Int(a.root(&text)))
            }
            None => Err(format!("`{}` reads a struct field of `{root}`", self.expr)),
        }
    }

    fn sizeof(&self, ty: &str) -> Result<Num, String> {
        self.host
            .sizeof(ty)
            .map(|n| Num::Int(n as i64))
            .ok_or_else(|| format!("sizeof({ty}) is not known"))
    }

    fn callable(&self, f: &str) -> Result<(), String> {
        match f {
            "min" | "max" | "ceil" | "floor" | "int" | "float" | "double" | "unsigned" | "long"
            | "size_t" => Ok(()),
            _ => Err(format!(
                "`{}` calls {f}(), whose result is not known",
                self.expr
            )),
        }
    }
}

/// The first definition of function `name` in `text`.
fn function_named(text: &str, name: &str) -> Option<HostFn> {
    let fns = host::functions_cached(text);
    fns.iter().find(|f| f.name == name).cloned()
}

/// The calls of `callee` inside function `f`'s body in `text`.
fn calls_in_body(text: &str, f: &HostFn, callee: &str) -> impl Iterator<Item = Call> {
    let body = f.body;
    calls_to(text, callee)
        .into_iter()
        .filter(move |c| c.span.0 >= body.0 && c.span.1 <= body.1)
}

impl Host {
    /// Replace each `atoi(argv[k])`-like call inside a larger expression by the run
    /// script's value (`atoi(argv[1]) + 1` → `2048 + 1`). None when there is none.
    fn substitute_argv(&self, e: &str) -> Result<Option<String>, String> {
        let mut out = e.to_string();
        let mut changed = false;
        for f in ARGV_FUNCS {
            while let Some(c) = host::snippet_calls(&out, f).into_iter().next() {
                // `std::stoi(…)` goes whole.
                let start = c.span.0 - out[..c.span.0].strip_suffix("std::").map_or(0, |_| 5);
                let Some(k) = argv_index(&out[start..c.span.1]) else {
                    break;
                };
                let v = match self.run_args.as_ref().and_then(|a| a.get(k - 1)) {
                    Some(v) if parse_num(v).is_some() => v.clone(),
                    _ => return Ok(None),
                };
                out.replace_range(start..c.span.1, &v);
                changed = true;
            }
        }
        Ok(changed.then_some(out))
    }
}

const ARGV_FUNCS: [&str; 9] = [
    "atoi", "atol", "atoll", "atof", "strtol", "strtoul", "strtod", "stoi", "stol",
];

/// `atoi(argv[2])`, `atol`, `atof`, `strtol(argv[2], …)`, `std::stoi(argv[2])` → 2.
pub fn argv_index(e: &str) -> Option<usize> {
    let e = e.trim();
    let p = e.find("argv[")?;
    let before = e[..p].trim_end().trim_end_matches('(').trim_end();
    let func_ok = ARGV_FUNCS.iter().any(|f| before.ends_with(f));
    if !func_ok {
        return None;
    }
    let rest = &e[p + 5..];
    let close = rest.find(']')?;
    rest[..close].trim().parse().ok()
}

fn parse_num(s: &str) -> Option<Num> {
    Some(match crate::cuda::cexpr::number(s)? {
        crate::cuda::cexpr::Number::Int(i) => Num::Int(i),
        crate::cuda::cexpr::Number::Float(f) => Num::Float(f),
    })
}

/// Identifiers in host text (calls included, no member names), by the crate's tokenizer;
/// what it cannot read (`[`, `=`, quotes) only separates them.
/// The names in `e` read as plain values, each once: not called, not objects or arrays
/// (`d->w`, `v[i]`), not taken by address or dereferenced (`&n`, `*p`).
fn plain_value_names(e: &str) -> Vec<String> {
    let toks = cexpr::tokens_lossy(e);
    let op = |i: Option<usize>, ops: &[&str]| {
        i.and_then(|i| toks.get(i))
            .is_some_and(|t| t.kind == Kind::Op && ops.contains(&t.text))
    };
    let mut out: Vec<String> = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let before = i.checked_sub(1);
        // `*` after an operand is a product; after an operator or at the start, a dereference.
        let deref = op(before, &["*"])
            && (i < 2 || toks[i - 2].kind == Kind::Op && toks[i - 2].text != ")");
        let indexed = e[t.at + t.text.len()..].trim_start().starts_with('[');
        if t.kind == Kind::Ident
            && !op(before, &[".", "->", "&", ":"])
            && !deref
            && !indexed
            && !op(Some(i + 1), &[".", "->", "(", ":"])
            && !out.iter().any(|o| o == t.text)
        {
            out.push(t.text.to_string());
        }
    }
    out
}

/// `v` as one operand: without the parentheses around all of it ([`Expr::unparen`]), and
/// in one pair of them unless it is one token.
fn grouped(v: &str) -> String {
    let inner = Expr::unparen(v);
    if cexpr::tokens_lossy(inner).len() == 1 {
        inner.to_string()
    } else {
        format!("({inner})")
    }
}

fn draft_idents(e: &str) -> Vec<String> {
    let toks = cexpr::tokens_lossy(e);
    let member =
        |i: usize| i > 0 && toks[i - 1].kind == Kind::Op && matches!(toks[i - 1].text, "." | "->");
    toks.iter()
        .enumerate()
        .filter(|&(i, t)| t.kind == Kind::Ident && !member(i))
        .map(|(_, t)| t.text.to_string())
        .collect()
}

/// The body of the first object-like `#define name body` in `text`.
pub fn define_body(text: &str, name: &str) -> Option<String> {
    define_bodies(text, name).into_iter().next()
}

/// Every `name = expr` (assignment or initialized declaration, also inside a declaration
/// list `int a = 1, b = 2;`) in `text`, with its line ([`Flow::assignments`]).
pub fn assignments(text: &str, name: &str) -> Vec<(u32, String)> {
    let flow = Flow::of(text);
    let a = flow.assignments(name).into_iter();
    a.map(|w| (w.line, w.value.unwrap_or_default())).collect()
}

/// [`assignments`] in a snippet of host code (statements), read as a function body.
pub fn snippet_assignments(code: &str, name: &str) -> Vec<(u32, String)> {
    let mut a = assignments(&format!("void _() {{\n{code}\n;}}"), name);
    a.iter_mut().for_each(|a| a.0 -= 1);
    a
}

/// The arguments after the program of the first run command in a benchmark folder: files
/// named `run*` (shell scripts), then a Makefile's `run:` target.
pub fn run_args(dir: &Path) -> Option<Vec<String>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("run") && !n.ends_with(".cu") && !n.ends_with(".c"))
        })
        .collect();
    files.sort();
    for f in &files {
        if let Some(a) = std::fs::read_to_string(f)
            .ok()
            .and_then(|t| command_args(&t))
        {
            return Some(a);
        }
    }
    let mk = std::fs::read_to_string(dir.join("Makefile")).ok()?;
    let target = mk.split("\nrun:").nth(1)?;
    command_args(
        &target
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with('\t'))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// The arguments of the first `./program args…` line in a script (comments skipped).
pub fn command_args(script: &str) -> Option<Vec<String>> {
    script.lines().find_map(|l| {
        let l = l.trim();
        if l.starts_with('#') {
            return None;
        }
        let mut words = l.split_whitespace();
        // The program: `./prog`, or a path into the benchmark (`cuda/lud_cuda`).
        words.find(|w| is_program(w))?;
        Some(
            words
                .take_while(|w| !w.starts_with('>') && !w.starts_with('|') && *w != "&&")
                .map(str::to_string)
                .collect(),
        )
    })
}

fn is_program(w: &str) -> bool {
    w.starts_with("./")
        || (w.contains('/')
            && !w.starts_with(['$', '-', '<', '>', '.', '/'])
            && !w.contains('=')
            && w.rsplit('/')
                .next()
                .is_some_and(|n| !n.is_empty() && !n.contains('.')))
}

/// The arguments of every `./program args…` line in a script (comments skipped).
pub fn command_lines(script: &str) -> Vec<Vec<String>> {
    script
        .lines()
        .filter_map(|l| command_args(l.trim()))
        .collect()
}

/// Every run command of a benchmark folder (files named `run*`, then a Makefile's `run:`).
pub fn run_commands(dir: &Path) -> Vec<Vec<String>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .filter(|p| {
                    p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                        n.starts_with("run") && !n.ends_with(".cu") && !n.ends_with(".c")
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut out: Vec<Vec<String>> = files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|t| command_lines(&t))
        .collect();
    if let Ok(mk) = std::fs::read_to_string(dir.join("Makefile")) {
        if let Some(target) = mk.split("\nrun:").nth(1) {
            let body: Vec<&str> = target
                .lines()
                .skip(1)
                .take_while(|l| l.starts_with('\t'))
                .collect();
            out.extend(command_lines(&body.join("\n")));
        }
    }
    out
}

impl Host {
    /// The value the run commands give a name set while parsing the command line:
    /// `x = atoi(argv[i])` / `atoi(optarg)` under a flag (`-s 16`), or
    /// `sscanf(argv[k], "%d", &x)` (argument k of the first run command).
    pub fn command_line_value(&self, name: &str) -> Option<String> {
        for t in self.texts() {
            for (line, rhs) in assignments(t, name) {
                let parses =
                    rhs.contains("optarg") || (rhs.contains("argv[") && argv_index(&rhs).is_none());
                if !parses || !ARGV_FUNCS.iter().any(|f| rhs.contains(f)) {
                    continue;
                }
                let Some(flag) = Flow::of(t).flag_near(line) else {
                    continue;
                };
                for cmd in &self.run_cmds {
                    if let Some(p) = cmd.iter().position(|w| *w == flag) {
                        if let Some(v) = cmd.get(p + 1).filter(|v| parse_num(v).is_some()) {
                            return Some(v.clone());
                        }
                    }
                }
            }
            for c in calls_to(t, "sscanf") {
                if c.args.len() < 3 || c.args[2..].iter().all(|a| pointer_name(a) != name) {
                    continue;
                }
                let a0 = c.args[0].trim();
                let Some(k) = a0
                    .strip_prefix("argv[")
                    .and_then(|r| r.strip_suffix(']'))
                    .and_then(|k| k.trim().parse::<usize>().ok())
                else {
                    continue;
                };
                if c.args[2..].len() != 1 {
                    continue;
                }
                if let Some(v) = self
                    .run_args
                    .as_ref()
                    .and_then(|a| a.get(k - 1))
                    .filter(|v| parse_num(v).is_some())
                {
                    return Some(v.clone());
                }
            }
        }
        None
    }
}

/// Byte-size text → element-count text: drop one `sizeof(T)` factor at the top level
/// (`(n + 1) * sizeof(float)` → `(n + 1)`). None when there is no such factor.
pub fn strip_sizeof(bytes: &str) -> Option<String> {
    sizeof_factor(bytes).map(|(rest, _)| rest)
}

/// A product's `sizeof(T)` factor split off: (the other factors' texts joined by ` * `,
/// `T`).
pub fn sizeof_factor(bytes: &str) -> Option<(String, String)> {
    let mut factors = product_factors(bytes)?;
    let pos = factors
        .iter()
        .position(|f| matches!(Expr::parse(f), Ok(Expr::SizeOf(_))))?;
    let sizeof = factors.remove(pos);
    let ty = sizeof["sizeof".len()..].trim();
    let ty = ty[1..ty.len() - 1].trim().to_string();
    Some(match factors.is_empty() {
        true => ("1".to_string(), ty),
        false => (factors.join(" * "), ty),
    })
}

/// Whether two texts are the same product up to the order of its factors and spacing
/// (`grid.x*(1<<BITS)` and `(1<<BITS) * grid.x`); an expression that is no product is
/// its one factor.
pub fn same_product(a: &str, b: &str) -> bool {
    let norm = |e: &str| {
        let mut f: Vec<String> = product_factors(e)
            .unwrap_or_else(|| vec![Expr::unparen(e)])
            .iter()
            .map(|x| x.split_whitespace().collect())
            .collect();
        f.sort();
        f
    };
    norm(a) == norm(b)
}

/// The factors of a product, the parentheses around the whole dropped (`(a * (b + 1))` →
/// [`a`, `(b + 1)`]), by their source texts; None when the expression is no product (a
/// `+`, `-`, `/` or `%` at its top: then a `sizeof` is not a factor of the whole).
fn product_factors(e: &str) -> Option<Vec<&str>> {
    let e = Expr::unparen(e);
    let (factors, ops) = Expr::chain(e, &["*", "/", "%"])?;
    let product = ops.iter().all(|o| *o == "*");
    product.then(|| factors.into_iter().map(|r| &e[r]).collect())
}

/// Calls of `fname` with `n` arguments.
pub fn call_sites(text: &str, fname: &str, n: usize) -> Vec<Call> {
    let mut c = calls_to(text, fname);
    c.retain(|c| c.args.len() == n);
    c
}

impl Host {
    /// A parameter of the host function the launch sits in (a wrapper such as
    /// `lud_cuda(float *m, int n)`), bound to the argument text its call sites pass. Only
    /// when every call site passes the same text: otherwise the value depends on the caller.
    /// One level only: a value further up is a local of another function, whose name may
    /// mean something else here (buffers go further, [`Host::buffer_bytes`]).
    pub fn bind_param(&self, name: &str) -> Option<String> {
        let (fname, params) = self.scope_at((0, self.launch_line))?;
        let k = params.iter().position(|p| p == name)?;
        let mut seen: Vec<String> = Vec::new();
        for (ti, t) in self.texts().enumerate() {
            for c in call_sites(t, &fname, params.len()) {
                let a = c.args[k].trim().to_string();
                // The caller's own variables in the argument are read in the caller, as of
                // the call: `cluster_assign(pts, m, cent, n, …)` in `main`, whose `n` is
                // 4096, passes 4096 (a name of the launch's scope may mean another thing).
                // A variable the call passes whole for another parameter keeps that
                // parameter's name (`compute_tran_temp(…, grid_cols, …)` passes `grid_cols`
                // as `col`): the value stays tied to the launch's own sizes.
                // Not the argument itself (`f(m, m)` would make each parameter the other),
                // nor a variable passed for several parameters.
                let once = |a: &str| c.args.iter().filter(|x| x.trim() == a).count() == 1;
                let aliases: Vec<(String, String)> = params
                    .iter()
                    .zip(&c.args)
                    .map(|(p, x)| (p, x.trim()))
                    .filter(|(p, x)| *p != name && *x != a && super::is_ident(x) && once(x))
                    .map(|(p, x)| (x.to_string(), p.clone()))
                    .collect();
                let a = self.closed_in((ti, c.line), &a, &aliases, 0).unwrap_or(a);
                if !seen.contains(&a) {
                    seen.push(a);
                }
            }
        }
        // The same name in the caller (`lud_cuda(d_m, n)` for `n`) says nothing new, and a
        // text naming the parameter itself would loop.
        match seen.as_slice() {
            [one] if !draft_idents(one).iter().any(|w| w == name) => Some(one.clone()),
            _ => None,
        }
    }

    /// `expr`, found at `spot`, with each variable of the function around `spot` (a local,
    /// or a parameter its callers all pass the same text for) replaced by its value there:
    /// the writes before `spot` read as of it (see [`super::infer_asof`]). Names of no
    /// function (`#define`s, file-level variables) stay. Err: a variable of that function
    /// whose value there the code does not settle, with why.
    /// `aliases` renames variables of that function instead (caller name → the launch
    /// function's parameter it is passed as).
    fn closed_in(
        &self,
        spot: Spot,
        expr: &str,
        aliases: &[(String, String)],
        depth: usize,
    ) -> Result<String, String> {
        let Some(f) = self.function_at(spot) else {
            return Ok(expr.to_string());
        };
        if depth > 4 {
            return Err(format!("`{expr}` is passed down more than 4 calls"));
        }
        let text = self.texts().nth(spot.0).unwrap_or_default();
        let mut out = expr.to_string();
        for w in plain_value_names(expr) {
            if let Some((_, p)) = aliases.iter().find(|(a, _)| *a == w) {
                out = cexpr::replace_ident(&out, &w, p);
                continue;
            }
            if !self.owns(spot.0, &f, &w) {
                continue;
            }
            let v = match super::infer_asof::value_at_launch(text, &w, spot.1)? {
                Some(v) if !draft_idents(&v).contains(&w) => {
                    self.closed_in(spot, &v, aliases, depth + 1)?
                }
                Some(v) => {
                    return Err(format!(
                        "`{w}` is changed from the value it comes in with (to `{v}`) in `{}`",
                        f.name
                    ))
                }
                None if f.params.contains(&w) => {
                    let args = self.caller_args(spot, &w).unwrap_or_default();
                    let mut vals: Vec<String> = Vec::new();
                    for (a, at) in args {
                        let v = self.closed_in(at, &a, &[], depth + 1)?;
                        if !vals.contains(&v) {
                            vals.push(v);
                        }
                    }
                    match <[String; 1]>::try_from(vals) {
                        Ok([v]) => v,
                        Err(_) => {
                            return Err(format!(
                                "the callers of `{}` pass `{w}` different values, or none",
                                f.name
                            ))
                        }
                    }
                }
                None => {
                    return Err(format!(
                        "`{w}`, a local of `{}`, has no value before line {}",
                        f.name, spot.1
                    ))
                }
            };
            if expr.trim() == w {
                return Ok(v);
            }
            out = cexpr::replace_ident(&out, &w, &grouped(&v));
        }
        Ok(out)
    }

    /// The host function around `spot`, cached.
    fn function_at(&self, spot: Spot) -> Option<HostFn> {
        self.scopes
            .borrow_mut()
            .entry(spot)
            .or_insert_with(|| {
                let t = self.texts().nth(spot.0)?;
                host::function_at(&host::functions_cached(t), spot.1).cloned()
            })
            .clone()
    }

    /// The function around `spot`: its name and parameters ([`Host::function_at`]).
    fn scope_at(&self, spot: Spot) -> Option<FnHead> {
        self.function_at(spot).map(|f| (f.name, f.params))
    }

    /// A `#define`, or a variable declared outside every function (`int layer_size = 0;`
    /// at file level, set from `argv` in `main`).
    fn is_global(&self, name: &str) -> bool {
        // A default argument in a prototype (`void run(uint n_blocks=1);`) is no variable.
        let in_parens = |t: &str, l: u32| {
            t.lines().nth(l as usize - 1).is_some_and(|line| {
                let before = line.split(name).next().unwrap_or("");
                before.matches('(').count() > before.matches(')').count()
            })
        };
        self.texts().enumerate().any(|(ti, t)| {
            !define_bodies(t, name).is_empty()
                || assignments(t, name)
                    .iter()
                    .any(|(l, _)| self.scope_at((ti, *l)).is_none() && !in_parens(t, *l))
        })
    }

    fn is_param(&self, spot: Spot, name: &str) -> bool {
        self.scope_at(spot)
            .is_some_and(|(_, params)| params.iter().any(|p| p == name))
    }

    /// What each call of the function around `spot` passes for its parameter `name`, and
    /// where the call sits. Calls inside the function itself (recursion on a smaller
    /// problem) are left out: the outermost call gives the first level's values. None when
    /// `name` is no parameter there or nothing calls the function.
    pub fn caller_args(&self, spot: Spot, name: &str) -> Option<Vec<(String, Spot)>> {
        let (fname, params) = self.scope_at(spot)?;
        let k = params.iter().position(|p| p == name)?;
        let mut out = Vec::new();
        let mut dead = Vec::new();
        for (ti, t) in self.texts().enumerate() {
            for c in call_sites(t, &fname, params.len()) {
                let at = (ti, c.line);
                match self.scope_at(at) {
                    Some((f, _)) if f == fname => continue,
                    // A caller nothing calls (backprop's `bpnn_read`) is dead code.
                    Some((f, _)) if f != "main" && !self.is_called(&f) => {
                        dead.push((c.args[k].trim().to_string(), at));
                    }
                    _ => out.push((c.args[k].trim().to_string(), at)),
                }
            }
        }
        if out.is_empty() {
            out = dead;
        }
        (!out.is_empty()).then_some(out)
    }

    /// Whether any host text calls `fname`.
    fn is_called(&self, fname: &str) -> bool {
        self.texts().any(|t| !calls_to(t, fname).is_empty())
    }

    /// The byte size of buffer `var` (its allocation, else its first copy), or, for a
    /// parameter of the function around the launch, of what the callers pass, up to six
    /// levels (`launchFDWT53Kernel(in, …)` ← `fdwt53(in, …)` ← `fdwt(in, …)` ←
    /// `nStage2dDWT(c_r, …)`), through a pointer copied from another
    /// (`float4 *d_list = (float4 *) d_input;`). Callers passing different buffers must
    /// agree on the byte size text.
    pub fn buffer_bytes(&self, var: &str) -> Option<String> {
        self.buffer_bytes_at((0, self.launch_line), var, 0)
    }

    fn buffer_bytes_at(&self, spot: Spot, var: &str, depth: usize) -> Option<String> {
        if let Some(b) = self
            .alloc_bytes(var)
            .or_else(|| self.copies(var).first().map(|c| c.bytes.clone()))
        {
            return Some(b);
        }
        if depth > 6 {
            return None;
        }
        if !self.is_param(spot, var) {
            // A local pointer set from another buffer, in this function's text.
            let t = self.texts().nth(spot.0)?;
            let (_, rhs) = assignments(t, var)
                .into_iter()
                .rfind(|(l, _)| *l <= spot.1)?;
            let src = pointer_name(&rhs);
            return (super::is_ident(&src) && src != var)
                .then(|| self.buffer_bytes_at(spot, &src, depth + 1))
                .flatten();
        }
        let mut found: Option<String> = None;
        for (a, at) in self.caller_args(spot, var)? {
            let p = pointer_name(&a);
            if !super::is_ident(&p) {
                return None;
            }
            let b = self.buffer_bytes_at(at, &p, depth + 1)?;
            match &found {
                Some(f) if *f != b => return self.counted_by_param(spot, var, depth),
                _ => found = Some(b),
            }
        }
        found
    }

    /// Callers that pass buffers of different sizes for parameter `var`, each call with the
    /// buffer's element count as another argument (`scanLargeArray(gridNumElems+1,
    /// binCount_d)` with `binCount_d` of `(gridNumElems+1)*sizeof(unsigned int)`, and
    /// `scanLargeArray(grid.x*(1<<BITS), dhisto)` with `dhisto` of
    /// `(1<<BITS)*grid.x*sizeof(unsigned int)`): the buffer holds that parameter's count of
    /// the same type (`(gridNumElements) * sizeof(unsigned int)`).
    fn counted_by_param(&self, spot: Spot, var: &str, depth: usize) -> Option<String> {
        let (_, params) = self.scope_at(spot)?;
        let bufs = self.caller_args(spot, var)?;
        let mut counts: Vec<(String, String)> = Vec::new();
        for (a, at) in &bufs {
            let b = self.buffer_bytes_at(*at, &pointer_name(a), depth + 1)?;
            counts.push(sizeof_factor(&b)?);
        }
        if counts.iter().any(|(_, t)| *t != counts[0].1) {
            return None;
        }
        params.iter().filter(|q| q.as_str() != var).find_map(|q| {
            let args = self.caller_args(spot, q)?;
            let all = args.len() == counts.len()
                && args.iter().zip(&bufs).all(|((_, a), (_, b))| a == b)
                && args
                    .iter()
                    .zip(&counts)
                    .all(|((a, _), (c, _))| same_product(a, c));
            all.then(|| format!("({q}) * sizeof({})", counts[0].1))
        })
    }

    /// `x->f` / `x.f`: the text the host code gives field `f`, when every assignment of it
    /// anywhere is the same text (`newnet->hidden_n = n_hidden;`), with a parameter of the
    /// assigning function bound to what its callers pass (`bpnn_create(layer_size, 16, 1)`
    /// → `16`). None for `dim3` members and for fields assigned several texts.
    pub fn field_definition(&self, field: &str) -> Option<String> {
        if matches!(field, "x" | "y" | "z") {
            return None;
        }
        self.member_definition(None, field)
    }

    /// [`Self::field_definition`] of one object's field (`volsize.x = VOLSIZEX;`, cp): also
    /// `x`, `y` and `z`, which many `dim3`s share.
    pub fn object_field_definition(&self, obj: &str, field: &str) -> Option<String> {
        self.member_definition(Some(obj), field)
    }

    fn member_definition(&self, obj: Option<&str>, field: &str) -> Option<String> {
        let mut found: Option<(String, Spot)> = None;
        for (ti, t) in self.texts().enumerate() {
            for w in Flow::of(t).field_assignments(obj, field) {
                let rhs = w.value.unwrap_or_default();
                match &found {
                    Some((f, _)) if *f != rhs => return None,
                    Some(_) => {}
                    None => found = Some((rhs, (ti, w.line))),
                }
            }
        }
        let (mut rhs, mut spot) = found?;
        for _ in 0..6 {
            // One object's field is taken only from literals, `#define`s and globals: a
            // parameter (huffman's `grid_size.x = num_blocks`) may have been set through a
            // reference since the call.
            if obj.is_some() || !(super::is_ident(&rhs) && self.is_param(spot, &rhs)) {
                // A local of the assigning function (`d->w = w;` in `main`, after
                // `getopt`) may mean something else where the field is read.
                return draft_idents(&rhs)
                    .iter()
                    .all(|w| self.is_global(w))
                    .then_some(rhs);
            }
            let args = self.caller_args(spot, &rhs)?;
            let mut texts: Vec<&str> = args.iter().map(|(a, _)| a.as_str()).collect();
            texts.sort_unstable();
            texts.dedup();
            let [one] = texts.as_slice() else {
                return None;
            };
            (rhs, spot) = (one.to_string(), args[0].1);
        }
        None
    }

    /// `obj.f` / `obj->f` set by a helper the launch's function calls with the object
    /// before the launch (`setup(&p, m);` where `void setup(Params *q, int n) { q->n = n; }`,
    /// or `setup(p, m)` with `Params &q` and `q.n = n;`): the helper's one write of the
    /// field, its parameters replaced by the call's arguments (`(m)`), so the text is read in
    /// the launch's own scope. None when the field is written more than once (twice, by two
    /// calls, also in the launch's function, or by `+=` / `++`), when the object goes to a
    /// call the host does not define or the helper passes it on, or when the write reads a
    /// local of the helper.
    pub fn field_set_by_helper(&self, obj: &str, field: &str) -> Option<String> {
        let fns = crate::cuda::host::functions_cached(&self.file);
        let launch_fn = crate::cuda::host::function_at(&fns, self.launch_line)?;
        let before: String = self
            .file
            .lines()
            .skip(launch_fn.body_lines.0 as usize - 1)
            .take((self.launch_line - launch_fn.body_lines.0) as usize)
            .collect::<Vec<_>>()
            .join("\n");
        let here = Flow::of(&before);
        if here.field_writes(obj, field).0 > 0 {
            return None;
        }
        let is_obj = |a: &String| a.trim().trim_start_matches('&').trim() == obj;
        let mut uses = 0;
        let mut writes: Vec<String> = Vec::new();
        let names: BTreeSet<String> = self
            .texts()
            .flat_map(|t| {
                host::functions_cached(t)
                    .iter()
                    .map(|g| g.name.clone())
                    .collect::<Vec<_>>()
            })
            .filter(|g| *g != launch_fn.name)
            .collect();
        for g in &names {
            // A helper read some other way is not followed: a call of it passing the
            // object stays uncounted, and the counts below disagree.
            let Some((ti, f)) = self.function_def_in_texts(g) else {
                continue;
            };
            let (params, def) = (&f.params, self.texts().nth(ti).unwrap_or_default());
            let body = &def[f.body.0..f.body.1];
            for c in call_sites(&self.file, g, params.len()) {
                if c.line < launch_fn.body_lines.0 || c.line >= self.launch_line {
                    continue;
                }
                for (k, _) in c.args.iter().enumerate().filter(|(_, a)| is_obj(a)) {
                    uses += 1;
                    let q = &params[k];
                    let helper = Flow::of(body);
                    let (all, plain) = helper.field_writes(q, field);
                    if helper.object_arguments(q) > 0 || all != plain.len() {
                        return None;
                    }
                    for rhs in plain {
                        let rhs = rhs.split_whitespace().collect::<Vec<_>>().join(" ");
                        if !draft_idents(&rhs)
                            .iter()
                            .all(|x| params.contains(x) || self.is_global(x))
                        {
                            return None;
                        }
                        let mut v = rhs;
                        for (p, a) in params.iter().zip(&c.args) {
                            v = cexpr::replace_ident(&v, p, &format!("({})", a.trim()));
                        }
                        writes.push(v);
                    }
                }
            }
        }
        match writes.as_slice() {
            [one] if uses == here.object_arguments(obj) => Some(one.clone()),
            _ => None,
        }
    }
}

/// A `cudaDeviceProp` field's value on the H100 the harnesses run on (CUDA's names):
/// imghisto sizes its grid by `10 * prop.multiProcessorCount` and its block by
/// `prop.maxThreadsPerBlock`. Fields that are arrays or strings are None.
pub fn h100_property(field: &str) -> Option<i64> {
    let d = crate::harness::DeviceProps::h100();
    Some(match field {
        "multiProcessorCount" => d.sm_count,
        "maxThreadsPerBlock" => d.max_threads_per_block,
        "warpSize" => d.warp_size,
        "l2CacheSize" => d.l2_bytes,
        "sharedMemPerBlock" => 48 * 1024,
        "sharedMemPerBlockOptin" => 227 * 1024,
        "sharedMemPerMultiprocessor" => 228 * 1024,
        "regsPerBlock" | "regsPerMultiprocessor" => 65536,
        "maxThreadsPerMultiProcessor" => 2048,
        "major" => 9,
        "minor" => 0,
        _ => return None,
    })
}

/// A host function whose body is one `return <expr>;` (`divRndUp(n, d) { return … }`):
/// (parameters, expression).
pub fn return_function(text: &str, name: &str) -> Option<(Vec<String>, String)> {
    let f = function_named(text, name)?;
    let inner = text[f.body.0..f.body.1]
        .trim()
        .strip_prefix('{')?
        .strip_suffix('}')?
        .trim();
    let expr = inner.strip_prefix("return")?.trim().strip_suffix(';')?;
    if expr.contains(';') || expr.is_empty() {
        return None;
    }
    Some((f.params, expr.to_string()))
}

impl Host {
    /// Expand calls of function-like macros (`MIN(a, b)`, `DIVANDRND(a, b)`) and of host
    /// functions whose body is one `return <expr>;` (`divRndUp`), with each parameter
    /// replaced by its parenthesized argument; up to 16 calls (nested ones too).
    pub fn expand_calls(&self, text: &str) -> String {
        let mut out = text.to_string();
        for _ in 0..16 {
            let names = called_names(&out);
            let mut changed = false;
            for n in names {
                let Some((params, body)) = self
                    .texts()
                    .find_map(|t| function_macro(t, &n).or_else(|| return_function(t, &n)))
                else {
                    continue;
                };
                let Some(c) = host::snippet_calls(&out, &n).into_iter().next() else {
                    continue;
                };
                if c.args.len() != params.len() {
                    continue;
                }
                let mut b = body.clone();
                // Two passes through placeholders so an argument naming another parameter
                // is not replaced again.
                for (i, p) in params.iter().enumerate() {
                    b = cexpr::replace_ident(&b, p, &format!("\u{1}{i}\u{1}"));
                }
                for (i, a) in c.args.iter().enumerate() {
                    b = b.replace(&format!("\u{1}{i}\u{1}"), &format!("({a})"));
                }
                // Replace the first call's text.
                out.replace_range(c.span.0..c.span.1, &format!("({b})"));
                changed = true;
                break;
            }
            if !changed {
                break;
            }
        }
        out
    }
}

/// Identifiers followed by `(` in a text, in order (any text: tokens that skip what they
/// cannot read).
fn called_names(s: &str) -> Vec<String> {
    crate::cuda::cexpr::tokens_lossy(s)
        .into_iter()
        .filter(|t| {
            t.kind == crate::cuda::cexpr::Kind::Ident
                && s[t.at + t.text.len()..].trim_start().starts_with('(')
                && (t.at == 0 || s.as_bytes()[t.at - 1] != b'.')
        })
        .map(|t| t.text.to_string())
        .collect()
}

/// `MatrixTemp[src]` → `MatrixTemp`: a buffer picked from an array of device pointers.
pub fn indexed_base(var: &str) -> Option<&str> {
    let (base, rest) = var.split_once('[')?;
    let base = base.trim();
    (super::is_ident(base) && rest.trim_end().ends_with(']') && !rest.contains('[')).then_some(base)
}

/// Whether a pointer text names the buffer `var`: the same text, or both pick from the same
/// array of device pointers (`MatrixTemp[0]` for `MatrixTemp[src]`: ping-pong buffers, whose
/// allocations [`Host::indexed_alloc_bytes`] requires to be alike).
pub fn same_buffer(text: &str, var: &str) -> bool {
    text == var || indexed_base(var).is_some_and(|b| indexed_base(text) == Some(b))
}

impl Host {
    /// The byte size shared by every allocation of `base[k]`; None when there is none or
    /// they differ (then which one a launch gets depends on the index).
    pub fn indexed_alloc_bytes(&self, base: &str) -> Option<String> {
        let mut sizes: Vec<String> = Vec::new();
        for f in ["cudaMalloc", "cudaMallocManaged"] {
            for c in self.ranked_calls(f) {
                if c.args.len() >= 2 && indexed_base(&pointer_name(&c.args[0])) == Some(base) {
                    let b: String = c.args[1].split_whitespace().collect();
                    if !sizes.contains(&b) {
                        sizes.push(b);
                    }
                }
            }
        }
        match sizes.as_slice() {
            [one] => Some(one.clone()),
            _ => None,
        }
    }
}

/// The byte size a helper's `cudaMalloc` on its parameter `k` gives a call passing `args`:
/// a reference (`float*& p`) passed the variable itself, or a pointer to a pointer
/// (`float** p`) passed its address; the helper's locals and the call's arguments put in.
fn helper_alloc_bytes(def: &str, f: &HostFn, k: usize, args: &[String]) -> Option<String> {
    let by_ref = !args.get(k)?.contains('&');
    let (ptext, pname) = (f.param_decls.get(k)?, f.params.get(k)?);
    let flat: String = ptext.split_whitespace().collect();
    let shape_ok = if by_ref {
        flat.contains("*&")
    } else {
        flat.contains("**")
    };
    if !shape_ok {
        return None;
    }
    let m = calls_in_body(def, f, "cudaMalloc")
        .find(|m| m.args.len() >= 2 && pointer_name(&m.args[0]) == *pname)?;
    let mut b = m.args[1].clone();
    // A local of the helper (`const size_t size = …;`) is its value.
    let flow = Flow::of(def);
    for w in draft_idents(&b) {
        let mut a = flow.assignments(&w);
        a.retain(|a| (f.body.0..f.body.1).contains(&a.pos));
        if let [a] = a.as_slice() {
            let rhs = a.value.as_deref().unwrap_or_default();
            b = cexpr::replace_ident(&b, &w, &format!("({rhs})"));
        }
    }
    for (q, a) in f.params.iter().zip(args) {
        let a = a.trim();
        // `sizeof(float)` stays a factor the element count can drop.
        let plain = super::is_ident(a) || matches!(Expr::parse(a), Ok(Expr::SizeOf(_)));
        let a = if plain {
            a.to_string()
        } else {
            format!("({a})")
        };
        b = cexpr::replace_ident(&b, q, &a);
    }
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The function whose body holds 1-based `line` in `text`: its name and parameter names,
    /// as [`Host::scope_at`] gives them. Blocks not opened by a parameter list
    /// (`namespace`, `extern "C"`, `struct`) are seen through.
    fn enclosing_function(text: &str, line: u32) -> Option<(String, Vec<String>)> {
        host(text, line).scope_at((0, line))
    }

    fn host(file: &str, line: u32) -> Host {
        Host {
            file: strip_comments(file),
            launch_line: line,
            others: vec![],
            run_args: None,
            ..Host::default()
        }
    }

    #[test]
    fn identifiers_skip_member_names_and_numbers_but_keep_calls() {
        assert_eq!(
            draft_idents("p->w * s.n + f(x[1.5f], 0x1F) == 'c'"),
            ["p", "s", "f", "x", "c"]
        );
    }

    #[test]
    fn allocations_copies_and_memsets() {
        let h = host(
            "cudaMalloc((void**) &input_cuda, (in + 1) * sizeof(float));\n\
             cudaMalloc(&out_d, n * sizeof(int)); // cudaMalloc(&out_d, 7);\n\
             cudaMallocPitch((void**)&img, &pitch, w * sizeof(float), h);\n\
             cudaMemset(out_d, 0, n * sizeof(int));\n\
             cudaMemcpy(input_cuda, net->input_units, (in + 1) * sizeof(float), cudaMemcpyHostToDevice);\n\
             k<<<g, b>>>(input_cuda, out_d);\n\
             cudaMemcpy(h_out, out_d, n * sizeof(int), cudaMemcpyDeviceToHost);\n",
            6,
        );
        assert_eq!(
            h.alloc_bytes("input_cuda").as_deref(),
            Some("(in + 1) * sizeof(float)")
        );
        assert_eq!(h.alloc_bytes("out_d").as_deref(), Some("n * sizeof(int)"));
        assert_eq!(
            h.alloc_bytes("img").as_deref(),
            Some("(w * sizeof(float)) * (h)")
        );
        assert_eq!(h.alloc_bytes("nothing"), None);
        assert!(h.memset_zero("out_d") && !h.memset_zero("input_cuda"));
        // Zeroed, then copied from another device buffer: a copy of it.
        let c = host(
            "cudaMemset(d_B, 0, n);\ncudaMemcpy(d_B, d_A, n, cudaMemcpyDeviceToDevice);\nk<<<g, b>>>(d_A, d_B);\n",
            3,
        );
        assert_eq!(c.device_copy_source("d_B").as_deref(), Some("d_A"));
        assert_eq!(c.device_copy_source("d_A"), None);
        let c = host(
            "cudaMemcpy(d_B, d_A, n, cudaMemcpyDeviceToDevice);\ncudaMemset(d_B, 0, n);\nk<<<g, b>>>(d_A, d_B);\n",
            3,
        );
        assert_eq!(c.device_copy_source("d_B"), None);
        // Zeroed, then filled by another kernel before this launch: not zeros here.
        let g = host(
            "cudaMemset(d_s, 0, n);\nfill<<<g, b>>>(d_in,\n  d_s);\nsum<<<g, b>>>(d_s, d_out);\n",
            4,
        );
        assert!(!g.memset_zero("d_s") && !g.memset_zero("d_z"));
        let g = host(
            "cudaMemset(d_s, 0, n);\nfill<<<g, b>>>(d_in, d_t);\nsum<<<g, b>>>(d_s, d_out);\n",
            3,
        );
        assert!(g.memset_zero("d_s"));
        let c = h.copies("input_cuda");
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].dir, Direction::ToDevice);
        let c = h.copies("out_d");
        assert_eq!((c[0].dir, c[0].line), (Direction::ToHost, 7));
    }

    #[test]
    fn allocation_wrappers_are_followed() {
        let h = host(
            "template <typename T>\nT* alloc(int N)\n{\n T* t;\n cudaMalloc((void**)&t, sizeof(T)*N);\n return t;\n}\n\
             void run() {\n float* v = alloc<float>(nelr*NVAR);\n k<<<1, 1>>>(v);\n}\n",
            10,
        );
        let b = h.alloc_bytes("v").unwrap();
        assert_eq!(b, "sizeof(float)*(nelr*NVAR)");
        assert_eq!(strip_sizeof(&b).as_deref(), Some("(nelr*NVAR)"));
        assert_eq!(h.wrapper_alloc("w"), None);
        // Regression: an assignment from a cast (`(float*)malloc`) once looped forever.
        let h = host(
            "float *p = (float*)malloc(n);\nq = (x);\nk<<<1,1>>>(p, q);\n",
            3,
        );
        assert_eq!(h.wrapper_alloc("p"), None);
        assert_eq!(h.wrapper_alloc("q"), None);
    }

    #[test]
    fn sizeof_factor_is_stripped_only_from_products() {
        assert_eq!(
            strip_sizeof("(in + 1) * sizeof(float)").as_deref(),
            Some("(in + 1)")
        );
        assert_eq!(
            strip_sizeof("sizeof(float) * n * m").as_deref(),
            Some("n * m")
        );
        assert_eq!(strip_sizeof("(n * sizeof(int))").as_deref(), Some("n"));
        assert_eq!(strip_sizeof("n * sizeof(int) + 4"), None);
        assert_eq!(strip_sizeof("mem_size"), None);
        // A member access is not a minus (dwt2d: `d->pixWidth*d->pixHeight*sizeof(T)`).
        assert_eq!(
            strip_sizeof("d->w*d->h*sizeof(T)").as_deref(),
            Some("d->w * d->h")
        );
        assert_eq!(strip_sizeof("d->w - 1 * sizeof(T)"), None);
        assert_eq!(strip_sizeof("n / 2 * sizeof(T)"), None);
        assert_eq!(
            sizeof_factor("sizeof( unsigned int )"),
            Some(("1".into(), "unsigned int".into()))
        );
    }

    #[test]
    fn values_follow_defines_assignments_and_run_scripts() {
        let mut h = host(
            "#define BLOCK 16\n#define SQ(x) ((x)*(x))\nconst int rows = 4 * BLOCK;\n\
             int main(int argc, char **argv) {\n int n = atoi(argv[2]);\n int cols = rows + 1;\n\
             int w = net->width;\n launch();\n}\n",
            8,
        );
        assert_eq!(h.int_value("rows * 2"), Ok(128));
        assert_eq!(h.int_value("cols"), Ok(65));
        assert_eq!(h.int_value("sizeof(float) * BLOCK"), Ok(64));
        let e = h.int_value("n").unwrap_err();
        assert!(e.contains("command-line argument 2"), "{e}");
        h.run_args = Some(vec!["7".into(), "1000".into()]);
        assert_eq!(h.int_value("n / 10"), Ok(100));
        assert_eq!(h.int_value("atoi(argv[2]) + 1"), Ok(1001));
        assert!(h.int_value("w").unwrap_err().contains("struct field"));
        assert!(h.int_value("SQ").unwrap_err().contains("no definition"));
    }

    #[test]
    fn undefined_macro_branches_and_self_references_give_way() {
        let h = host(
            "#ifdef RD_WG\n#define BS RD_WG\n#else\n#define BS 16\n#endif\n\
             int cols = 64;\ncols = cols + 1;\nlaunch();\ncols = 3;\n",
            8,
        );
        assert_eq!(h.int_value("BS"), Ok(16));
        assert_eq!(h.int_value("cols"), Ok(65));
    }

    #[test]
    fn run_commands_and_argv() {
        assert_eq!(
            command_args("#!/bin/bash\n# ./old 1\n./needle 2048 10 > out.txt\n"),
            Some(vec!["2048".to_string(), "10".to_string()])
        );
        assert_eq!(argv_index("atoi(argv[3])"), Some(3));
        assert_eq!(argv_index("strtol(argv[1], NULL, 10)"), Some(1));
        assert_eq!(argv_index("argv[1]"), None);
        // Inside a larger expression, each argument call is the run script's value.
        let mut h = host("int main() { k<<<1, 1>>>(); }", 1);
        h.set_run_args(vec!["2048".into(), "3".into()]);
        let v = h.value("std::stoi(argv[1]) + atoi(argv[2]) * 2", 0);
        assert_eq!(v, Ok(Num::Int(2054)));
        assert_eq!(h.substitute_argv("atoi(buf) + 1"), Ok(None));
        assert_eq!(pointer_name("(void**) &d_a"), "d_a");
        assert_eq!(pointer_name("reinterpret_cast<void **>(&x)"), "x");
        assert_eq!(
            assignments("int a = 1, b = f(2, 3);\nb == 4; b = 5;", "b"),
            vec![(1, "f(2, 3)".to_string()), (2, "5".to_string())]
        );
    }

    #[test]
    fn calls_with_explicit_template_arguments_are_calls() {
        let text = "template void run<float>(float *a, int n);\nvoid main2() {\n  run<128, 4>(d_a, n);\n  if (run < n && k > (m)) {}\n}";
        let c = call_sites(text, "run", 2);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(
            (c[0].line, c[0].args.clone()),
            (3, vec!["d_a".to_string(), "n".to_string()])
        );
    }

    #[test]
    fn assignments_inside_string_literals_are_not_definitions() {
        let text =
            "printf(\"n = %d, s = '\\\"\", n);\nconst int n = f(8);\nchar q = '\"'; int k = n;";
        assert_eq!(assignments(text, "n"), vec![(2, "f(8)".to_string())]);
        assert_eq!(assignments(text, "k"), vec![(3, "n".to_string())]);
        // A value over several lines is one line.
        assert_eq!(
            assignments("s = max(\n    a / b,\n    1.0f);", "s"),
            vec![(1, "max( a / b, 1.0f)".to_string())]
        );
    }

    #[test]
    fn launches_inside_wrappers_follow_parameters_to_call_sites() {
        let kernel_file = "#define B 16\n__global__ void k(float *a, int n) { if (n) { a[0] = 1; } }\n\
             namespace w {\nvoid run_k(float *buf, int n)\n{\n  dim3 g(n / B);\n  k<<<g, B>>>(buf, n);\n}\n}\n";
        let main_file = "void run_k(float *buf, int n);\nint main(int argc, char **argv) {\n\
             int size = atoi(argv[1]);\n float *d_x;\n cudaMalloc((void**)&d_x, size * size * sizeof(float));\n\
             #endif\n run_k(d_x, size * size);\n return 0;\n}\n";
        assert_eq!(
            enclosing_function(kernel_file, 7),
            Some((
                "run_k".to_string(),
                vec!["buf".to_string(), "n".to_string()]
            ))
        );
        assert_eq!(
            enclosing_function(kernel_file, 2).map(|f| f.0).as_deref(),
            Some("k")
        );
        assert_eq!(enclosing_function(kernel_file, 3), None);
        let calls = call_sites(main_file, "run_k", 2);
        assert_eq!(calls.len(), 1, "the prototype is not a call");
        let after_else = call_sites("if (f) g(a); else run_k(a, b);", "run_k", 2);
        assert_eq!(after_else.len(), 1, "after `else`, a call");
        assert_eq!(calls[0].args, vec!["d_x", "size * size"]);
        let mut h = host(kernel_file, 7);
        h.others.push(strip_comments(main_file));
        assert_eq!(h.bind_param("buf").as_deref(), Some("d_x"));
        // `main`'s `size` is read in `main`, as of the call.
        assert_eq!(
            h.bind_param("n").as_deref(),
            Some("(atoi(argv[1])) * (atoi(argv[1]))")
        );
        assert_eq!(h.bind_param("g"), None, "not a parameter");
        h.run_args = Some(vec!["8".into()]);
        assert_eq!(h.int_value("n / B"), Ok(4));
        // Two callers passing different texts: the value depends on the caller.
        h.others.push("void f() { run_k(d_y, 7); }".into());
        assert_eq!(h.bind_param("n"), None);
    }

    #[test]
    fn buffers_are_followed_up_several_callers_and_pointer_copies() {
        // dwt2d's shape: launch ← wrapper ← recursive wrapper ← caller of three buffers of
        // one size.
        let kernel_file = "template <int W>\nvoid launch(int *in, int sx) {\n  k<W><<<sx / W, W>>>(in, sx);\n}\n\
             void fwd(int *in, int sx, int lv) {\n  launch<64>(in, sx);\n  if (lv > 1) fwd(in, sx / 2, lv - 1);\n}\n";
        let main_file = "void go(int w) {\n  int bytes = w * w * sizeof(int);\n  int *a, *b;\n\
             cudaMalloc((void**)&a, bytes);\n  cudaMalloc((void**)&b, bytes);\n  fwd(a, w, 3);\n  fwd(b, w, 3);\n}\n";
        let mut h = host(kernel_file, 3);
        h.others.push(strip_comments(main_file));
        assert_eq!(h.buffer_bytes("in").as_deref(), Some("bytes"));
        // The recursive call is not a caller: only `fwd`'s outer callers are.
        assert_eq!(
            h.caller_args((0, 6), "sx").map(|a| a.len()),
            Some(2),
            "two calls from go(), not the recursive one"
        );
        // Callers passing buffers of different sizes: no length.
        h.others
            .push("void other() { int *c; cudaMalloc((void**)&c, 12); fwd(c, 2, 1); }".into());
        assert_eq!(h.buffer_bytes("in"), None);
        // A local pointer copied from an allocated one (hybridsort's `d_resultList`).
        let f = "void sort(float *d_in, int n) {\n  float4 *d_list = (float4 *) d_in;\n  k<<<n, 1>>>(d_list);\n}\n\
                 int main() { float *p; cudaMalloc((void**)&p, (n + 4) * sizeof(float)); sort(p, n); }\n";
        let h = host(f, 3);
        assert_eq!(
            h.buffer_bytes("d_list").as_deref(),
            Some("(n + 4) * sizeof(float)")
        );
    }

    #[test]
    fn buffers_of_different_sizes_counted_by_the_call_are_that_parameters_count() {
        // mri-gridding's scanLargeArray: two callers pass buffers of different sizes, each
        // with its element count beside it (factors in another order in one call).
        let scan = "void scan(unsigned int count, unsigned int *d) {\n  k<<<count / 1024, 512>>>(count, d);\n}\n";
        let callers = "void bins(int g) {\n  unsigned int *b;\n  cudaMalloc((void**)&b, (g+1)*sizeof(unsigned int));\n  scan(g+1, b);\n}\n\
             void sort(dim3 grid) {\n  unsigned int *h;\n  cudaMalloc((void**)&h, (1<<4)*grid.x*sizeof(unsigned int));\n  scan(grid.x*(1<<4), h);\n}\n\
             int main() { bins(7); sort(dim3(4)); }\n";
        let mut h = host(scan, 2);
        h.others.push(strip_comments(callers));
        assert_eq!(
            h.buffer_bytes("d").as_deref(),
            Some("(count) * sizeof(unsigned int)")
        );
        // A call whose count is not the buffer's: no length.
        let mut h = host(scan, 2);
        h.others.push(strip_comments(
            &callers.replace("scan(g+1, b)", "scan(g, b)"),
        ));
        assert_eq!(h.buffer_bytes("d"), None);
        // Element types that differ: no length.
        let mut h = host(scan, 2);
        h.others.push(strip_comments(
            &callers.replace("(g+1)*sizeof(unsigned int)", "(g+1)*sizeof(int)"),
        ));
        assert_eq!(h.buffer_bytes("d"), None);
    }

    #[test]
    fn allocation_helpers_with_out_parameters_give_the_call_sites_size() {
        // mri-fhd's setupMemoryGPU (a reference parameter) and lbm's allocateGrid (a
        // pointer to a pointer passed `&grid`).
        let helpers = "static void\nsetup(int num, int size, float*& dev_ptr, float*& host_ptr)\n{\n  cudaMalloc ((void **) &dev_ptr, num * size);\n  cudaMemcpy (dev_ptr, host_ptr, num * size, cudaMemcpyHostToDevice);\n}\n\
             void alloc_grid(float** ptr) {\n  const size_t size = CELLS * 20 * sizeof(float);\n  cudaMalloc((void**)ptr, size);\n}\n\
             void by_value(float* p, int n) {\n  cudaMalloc((void**)&p, n);\n}\n";
        let main = "int main() {\n  float *phiR_d, *grid_d, *lost_d;\n  setup(numK, sizeof(float), phiR_d, phiR);\n  alloc_grid((float**) &grid_d);\n  by_value(lost_d, 64);\n  k<<<1, 1>>>(phiR_d, grid_d, lost_d);\n}\n";
        let mut h = host(main, 6);
        h.others.push(strip_comments(helpers));
        assert_eq!(
            h.alloc_bytes("phiR_d").as_deref(),
            Some("numK * sizeof(float)")
        );
        assert_eq!(
            h.alloc_bytes("grid_d").as_deref(),
            Some("(CELLS * 20 * sizeof(float))")
        );
        // A pointer passed by value is not allocated for the caller.
        assert_eq!(h.alloc_bytes("lost_d"), None);
        // Two calls giving one buffer different sizes: none.
        let mut h = host(
            &main.replace(
                "  alloc_grid",
                "  setup(n2, 8, phiR_d, phiR);\n  alloc_grid",
            ),
            7,
        );
        h.others.push(strip_comments(helpers));
        assert_eq!(h.alloc_bytes("phiR_d"), None);
    }

    #[test]
    fn a_launch_passing_a_buffer_at_an_offset_passes_the_buffer() {
        // mri-gridding: `inter_d` is zeroed, then scan_L1 writes `inter_d + (i * GRID)`
        // before scan_inter1 reads `inter_d`: not zeros there.
        let t = "void f(int n) {\ncudaMemset(inter_d, 0, n);\nfor (i = 0; i < c; i++) {\n  l1<<<g, b>>>(n, d + i * 64, inter_d+(i*GRID));\n}\ninter1<<<g, b>>>(inter_d, 1);\n}\n";
        assert!(launched_with_between(t, "inter_d", 2, 6));
        assert!(!launched_with_between(t, "other_d", 2, 6));
        assert!(!launched_with_between(t, "inter_d", 4, 6));
        let h = host(t, 6);
        assert!(!h.memset_zero("inter_d"));
    }

    #[test]
    fn products_compare_up_to_factor_order() {
        assert!(same_product("grid.x*(1<<BITS)", "(1<<BITS) * grid.x"));
        assert!(same_product("gridNumElems+1", "(gridNumElems+1)"));
        assert!(!same_product("g", "g+1"));
        assert!(!same_product("a*b", "a*c"));
        assert!(same_product("((n) * 2)", "2*(n)"));
        assert_eq!(
            split_top_level_plus("p - 1 + (i + 2)"),
            Some(("p - 1", "(i + 2)"))
        );
        assert_eq!(split_top_level_plus("p + n ? a : b"), None);
    }

    #[test]
    fn fields_take_their_one_assigned_value_through_knr_heads() {
        // backprop: `net->hidden_n` is set once from a K&R parameter, passed on by a second
        // K&R function, and given 16 by the one call.
        let lib = "BPNN *create_in(n_in, n_hidden)\nint n_in, n_hidden;\n{\n  BPNN *nn;\n\
                   nn->input_n = n_in;\n  nn->hidden_n = n_hidden;\n  return nn;\n}\n\
                   BPNN *create(n_in, n_hidden)\nint n_in, n_hidden;\n{\n  return create_in(n_in, n_hidden);\n}\n";
        assert_eq!(
            enclosing_function(lib, 5),
            Some((
                "create_in".to_string(),
                vec!["n_in".to_string(), "n_hidden".to_string()]
            ))
        );
        let main = "int layer_size = 0;\nint main(int argc, char **argv) {\n  int local = 5;\n\
                    layer_size = atoi(argv[1]);\n  net = create(layer_size, 16);\n}\n";
        let launch = "void run(BPNN *net) {\n  int hid = net->hidden_n;\n  int in = net->input_n;\n  k<<<in, hid>>>();\n}\n";
        let mut h = host(launch, 4);
        h.others = vec![strip_comments(lib), strip_comments(main)];
        h.run_args = Some(vec!["64".into()]);
        assert_eq!(h.field_definition("hidden_n").as_deref(), Some("16"));
        // A second caller that nothing calls (`bpnn_read`) is dead code and does not count.
        h.others
            .push("BPNN *read_net(char *f) { return create_in(n1, n2); }".into());
        assert_eq!(h.field_definition("hidden_n").as_deref(), Some("16"));
        h.others.push("void use() { read_net(\"w\"); }".into());
        assert_eq!(h.field_definition("hidden_n"), None, "now it is called");
        h.others.truncate(2);
        assert_eq!(h.int_value("hid"), Ok(16));
        assert_eq!(h.int_value("in"), Ok(64), "a global set from argv");
        // A field given a local of another function is not taken (its name means
        // something else here); nor one given two texts, nor a dim3 member.
        h.others
            .push("void f() { int local = 3; s->w = local; s->v = 1; t->v = 2; g.x = 4; }".into());
        assert_eq!(h.field_definition("w"), None);
        assert_eq!(h.field_definition("v"), None);
        assert_eq!(h.field_definition("x"), None);
    }

    #[test]
    fn a_field_set_by_a_helper_called_with_the_object_takes_the_calls_argument() {
        // `setup(&p, m)` writes `q->n = n;` once: `p.n` is the call's `m`, a local of the
        // launch's own function, which the other field rules do not take.
        let lib = "struct Params { int n; float *x; };\n\
                   void setup(Params *q, int n) {\n  q->n = n;\n  cudaMalloc(&q->x, n * sizeof(float));\n}\n\
                   void setup_ref(Params &q, int n) { q.n = n * 2; }\n\
                   void twice(Params *q, int n) { q->n = n; q->n += 1; }\n\
                   void passes_on(Params *q, int n) { setup(q, n); }\n\
                   void scaled(Params *q, int n) { int s = 4; q->n = n * s; }\n";
        let main = |calls: &str| {
            let t = format!("int main() {{\n  Params p;\n  int m = 1 << 20;\n{calls}\n  k<<<(p.n + 255) / 256, 256>>>(p.x, p.n);\n}}\n");
            let line = t.lines().position(|l| l.contains("<<<")).unwrap() as u32 + 1;
            let mut h = host(&t, line);
            h.others.push(strip_comments(lib));
            h
        };
        let h = main("  setup(&p, m);");
        assert_eq!(h.field_set_by_helper("p", "n").as_deref(), Some("(m)"));
        assert_eq!(h.int_value("(p.n + 255) / 256"), Ok(4096));
        // A reference parameter written with `.`.
        let h = main("  setup_ref(p, m);");
        assert_eq!(h.int_value("p.n"), Ok(2 << 20));
        // Written more than once, passed on, read from a helper's local, passed to a call the
        // host does not define, written again in `main`, set after the launch: unknown.
        for calls in [
            "  twice(&p, m);",
            "  setup(&p, m);\n  setup_ref(p, 8);",
            "  passes_on(&p, m);",
            "  scaled(&p, m);",
            "  setup(&p, m);\n  load(&p);",
            "  setup(&p, m);\n  p.n = 3 * m;",
        ] {
            assert_eq!(main(calls).field_set_by_helper("p", "n"), None, "{calls}");
        }
        let t = "int main() {\n  Params p;\n  k<<<p.n, 256>>>(p.x, p.n);\n  setup(&p, 64);\n}\n";
        let mut h = host(t, 3);
        h.others.push(strip_comments(lib));
        assert_eq!(
            h.field_set_by_helper("p", "n"),
            None,
            "set after the launch"
        );
        // A call argument with no value leaves the field unknown, as before.
        assert!(main("  setup(&p, atoi(argv[1]));")
            .int_value("p.n")
            .is_err());
    }

    #[test]
    fn macro_and_one_return_helpers_are_expanded() {
        let h = host(
            "#define MIN(a, b) ((a)<=(b) ? (a) : (b))\n#define DIVANDRND(a, b) ((((a) % (b)) != 0) ? ((a) / (b) + 1) : ((a) / (b)))\n\
             int divRndUp(int n, int d) {\n  return (n + d - 1) / d;\n}\n\
             int twoSteps(int n) { int m = n; return m; }\n\
             int main() { int total = 20; int t = 6; int w = 1000; launch(); }\n",
            6,
        );
        assert_eq!(h.int_value("MIN(8, total - t)"), Ok(8));
        assert_eq!(h.int_value("MIN(total, t)"), Ok(6));
        assert_eq!(
            h.expand_calls("int a = MIN(x, 2) * 4"),
            "int a = ((((x))<=((2)) ? ((x)) : ((2)))) * 4"
        );
        assert_eq!(h.int_value("DIVANDRND(w, 64)"), Ok(16));
        assert_eq!(h.int_value("divRndUp(w, 256) * 2"), Ok(8));
        // Nested, and an argument naming the other parameter.
        assert_eq!(h.int_value("MIN(divRndUp(w, 100), MIN(t, total))"), Ok(6));
        assert_eq!(h.expand_calls("divRndUp(d, n)"), "(((d) + (n) - 1) / (n))");
        // A function with more than one statement is not expanded.
        assert!(h.int_value("twoSteps(3)").unwrap_err().contains("twoSteps"));
        assert_eq!(
            function_macro("#define SQ(x) ((x)*(x))", "SQ"),
            Some((vec!["x".to_string()], "((x)*(x))".to_string()))
        );
    }

    #[test]
    fn buffers_picked_from_pointer_arrays() {
        let h = host(
            "float *T[2], *P;\ncudaMalloc((void**)&T[0], sizeof(float)*size);\n\
             cudaMalloc((void**)&T[1], sizeof(float) * size);\n\
             cudaMemcpy(T[0], h_t, sizeof(float)*size, cudaMemcpyHostToDevice);\n\
             float *U[2];\ncudaMalloc(&U[0], n);\ncudaMalloc(&U[1], 2 * n);\n\
             k<<<g, b>>>(T[src], T[dst], U[i]);\n",
            8,
        );
        assert_eq!(indexed_base("T[src]"), Some("T"));
        assert_eq!(indexed_base("T"), None);
        assert_eq!(
            h.alloc_bytes("T[src]").as_deref(),
            Some("sizeof(float)*size")
        );
        assert_eq!(h.copies("T[dst]")[0].dir, Direction::ToDevice);
        // Differently sized members: which one the launch gets depends on the index.
        assert_eq!(h.alloc_bytes("U[i]"), None);
        assert!(same_buffer("T[0]", "T[src]") && !same_buffer("U[0]", "T[src]"));
    }

    #[test]
    fn command_line_flags_and_sscanf_take_the_run_scripts_values() {
        let mut h = host(
            "int main(int argc, char *argv[]) {\n int size = 32, np = 0;\n\
             for (int i = 1; i < argc; i++) {\n  if (strcmp(argv[i], \"-s\") == 0) {\n   i++;\n   size = atoi(argv[i]);\n  }\n }\n\
             while ((c = getopt(argc, argv, \"vn:\")) != -1) {\n  switch (c) {\n  case 'n':\n   np = atoi(optarg);\n   break;\n  }\n }\n\
             sscanf(argv[4], \"%d\", &frames);\n launch();\n}\n",
            19,
        );
        assert_eq!(Flow::of(&h.file).flag_near(6).as_deref(), Some("-s"));
        assert_eq!(Flow::of(&h.file).flag_near(13).as_deref(), Some("-n"));
        // No run script: the value depends on a command line nobody gives.
        // The loop over the arguments sets it.
        let e = h.int_value("size").unwrap_err();
        assert!(e.contains("`size` is changed in a loop (line 6)"), "{e}");
        assert_eq!(h.command_line_value("size"), None);
        h.run_cmds = vec![
            vec!["-f".into(), "data.txt".into()],
            vec!["-s".into(), "16".into(), "-n".into(), "900".into()],
        ];
        h.run_args = Some(vec!["-v".into(), "x".into(), "y".into(), "7".into()]);
        // A host whose inputs changed after it answered forgets what it found.
        h.memo = HostMemo::default();
        assert_eq!(h.int_value("size * 2"), Ok(32));
        assert_eq!(h.int_value("np"), Ok(900));
        assert_eq!(h.int_value("frames"), Ok(7));
        // Elsewhere than before the launch: the run script's argument beats the default.
        let mut g = host("void k() { launch(); }\n", 1);
        g.others.push("int main(int c, char **argv) { int ph = 1;\n if ((ph = atoi(argv[2])) <= 0) return 1; }".into());
        assert_eq!(g.int_value("ph"), Ok(1));
        g.run_args = Some(vec!["512".into(), "3".into()]);
        g.memo = HostMemo::default();
        assert_eq!(g.int_value("ph"), Ok(3));
        assert_eq!(
            command_lines("#!/bin/sh\ncuda/lud_cuda -s 256 -v\n./gaussian -s 16 > out\n"),
            vec![vec!["-s", "256", "-v"], vec!["-s", "16"]]
        );
    }

    #[test]
    fn a_zero_declaration_assigned_again_elsewhere_is_not_the_value() {
        // The norm is a maximum a loop finds: its declared zero is a placeholder.
        let mut g = host("void k() { launch(); }\n", 1);
        g.others.push(
            "void f(float *a, int n) { float norm = 0;\n for (int i = 0; i < n; i++) {\n float t = fabs(a[i]);\n if (norm < t)\n norm = t; }\n pert = 3.45e-4 * norm; }".into(),
        );
        let e = g.int_value("pert").unwrap_err();
        assert!(
            e.contains("`norm` is 0 where it is declared and assigned again"),
            "{e}"
        );
        // A sum a loop adds up in place, then kept as the maximum (HeCBench slu).
        // Its launch follows in the same function, so the last writes before it count.
        let h = host(
            "void f(float *a, int n) { float pert = 0;\n float norm = 0;\n for (int i = 0; i < n; i++) {\n float t = 0;\n for (int j = 0; j < 4; j++) t += a[j];\n if (norm < t)\n norm = t; }\n pert = 2 * norm;\n k<<<1, 1>>>(a, pert); }",
            9,
        );
        let e = h.int_value("pert").unwrap_err();
        assert!(e.contains("`norm` is changed in a loop (line 7)"), "{e}");
        // A loop counter's zero is its first pass (Parboil cp's atom chunks).
        let c = host(
            "#define COUNT 10000\nvoid f() { int start;\n for (start = 0; start < COUNT; start += 4000) {\n int left = COUNT - start;\n int run = left > 4000 ? 4000 : left;\n k<<<1, 1>>>(run); } }",
            6,
        );
        assert_eq!(c.int_value("run"), Ok(4000));
        // A zero never assigned again is the value; the launch's own name keeps its zero
        // (its caller judges it).
        let mut z = host("void k() { launch(); }\n", 1);
        z.others.push(
            "void f() { int base = 0;\n int off = base + 4;\n int n = 0;\n n = read_n(); g(off, n); }"
                .into(),
        );
        assert_eq!(z.int_value("off"), Ok(4));
        assert_eq!(z.int_value("n"), Ok(0));
    }

    #[test]
    fn a_kernel_local_of_the_same_name_is_not_the_launch_parameter() {
        // sgemm: the kernel's own `m` sits before the launch in the same file.
        let h = host(
            "__global__ void k(float *c) {\n  int m = blockIdx.x * 16 + threadIdx.x;\n  c[m] = 0;\n}\n\
             void run(int m, float *c) {\n  k<<<m / 16, 16>>>(c);\n}\n\
             int main() {\n  int rows = 512;\n  run(rows, c);\n}\n",
            6,
        );
        // `main`'s `rows`, read where `main` passes it.
        assert_eq!(h.definition("m").as_deref(), Some("512"));
        assert_eq!(h.int_value("m / 16"), Ok(32));
    }

    #[test]
    fn a_local_of_the_launching_function_is_not_another_functions_same_named_local() {
        // `main`'s `n` is read from input; `warmup`'s `n = 64` is another variable.
        let h = host(
            "void warmup() {\n  int n = 64;\n  k<<<1, n>>>(d, n);\n}\n\
             int main() {\n  int n;\n  std::cin >> n;\n  k<<<n / 256, 256>>>(d, n);\n}\n",
            8,
        );
        assert_eq!(h.definition("n"), None);
        assert!(h
            .int_value("n / 256")
            .unwrap_err()
            .contains("no definition"));
        // Handed to a call before the launch, it may be set there (huffman's
        // `initParams(…, mem_size, …)` writes its reference parameter `mem_size`).
        let h = host(
            "void init(int &n) {\n  n = 64;\n}\n\
             int main() {\n  int n;\n  init(n);\n  k<<<n / 16, 16>>>(d, n);\n}\n",
            7,
        );
        assert_eq!(h.definition("n").as_deref(), Some("64"));
        // A file-level `n` is the launch's when its function declares none.
        let h = host(
            "int n;\nvoid setup() {\n  n = 32;\n}\nint main() {\n  setup();\n  k<<<n, 1>>>(d);\n}\n",
            7,
        );
        assert_eq!(h.int_value("n"), Ok(32));
    }

    #[test]
    fn a_name_takes_the_writes_of_the_variable_the_launch_reads() {
        // llm.c: `launch(block_size)` from `main`, whose `block_size` is 32; `other`'s own
        // `block_size = 512` is another variable.
        let h = host(
            "void other() {\n  int block_size = 512;\n  k<<<1, block_size>>>(d);\n}\n\
             void launch(int block_size) {\n  k<<<1, block_size>>>(d);\n}\n\
             int main() {\n  int block_size = 32;\n  launch(block_size);\n}\n",
            6,
        );
        assert_eq!(h.definition("block_size").as_deref(), Some("32"));
        // With no write of its own variable, the others' writes still answer.
        let h = host(
            "void other() {\n  int bs = 512;\n}\nvoid launch() {\n  k<<<1, bs>>>(d);\n}\n",
            5,
        );
        assert_eq!(h.definition("bs").as_deref(), Some("512"));
        // A kernel's or device function's local is never a host value (cdpAdvancedQuicksort's
        // `__device__` `loop = 10000`; mergeSort's kernel `stride = 1`).
        let h = host(
            "__device__ void d() {\n  unsigned int m = 10000;\n}\n\
             __global__ void g(float *x) {\n  int m = 1;\n}\n\
             void launch() {\n  k<<<1, m>>>(d);\n}\n",
            8,
        );
        assert_eq!(h.definition("m"), None);
        // A prototype's default argument is no variable's value (huffman's
        // `void runVLCTest(char *file_name, uint num_block_threads, uint num_blocks=1);`).
        let mut h = host("void launch() {\n  k<<<nb, 1>>>(d);\n}\n", 2);
        h.others = vec!["void run(unsigned t, unsigned nb = 1);\nunsigned nb = 4;\n".into()];
        assert_eq!(h.definition("nb").as_deref(), Some("4"));
    }

    #[test]
    fn a_parameters_argument_is_read_in_the_callers_scope() {
        // HeCBench convolution3D: `main`'s `W` is 32 from the command line; `conv`'s own `W`
        // is a buffer. The argument `W` means `main`'s.
        let mut h = host(
            "void conv(int Win) {\n  float *W = (float *)malloc(64);\n  k<<<Win / 16, 16>>>(W, Win);\n}\n\
             int main(int argc, char **argv) {\n  int W = atoi(argv[1]);\n  conv(W);\n}\n",
            3,
        );
        assert_eq!(h.definition("Win").as_deref(), Some("atoi(argv[1])"));
        h.run_args = Some(vec!["32".into()]);
        h.memo = HostMemo::default();
        assert_eq!(h.int_value("Win / 16"), Ok(2));
        // Up two callers passing the name on (Rodinia leukocyte: `MGVF(IE, 1, 1, Nc)` passes
        // `vx` to `IMGVF_cuda(…, vx, …)`), and through a caller's local (llm.c's
        // `num_params`, a product of `main`'s constants).
        let h = host(
            "void launch(float vx, long count) {\n  k<<<count / 256, 256>>>(vx, count);\n}\n\
             void mid(float vx, long count) {\n  launch(vx, count);\n}\n\
             int main() {\n  int C = 768;\n  long num = C * 4;\n  mid(1, num);\n}\n",
            2,
        );
        assert_eq!(h.definition("vx").as_deref(), Some("1"));
        assert_eq!(h.int_value("count"), Ok(3072));
        // A caller variable passed whole for another parameter keeps that parameter's name,
        // so the value follows the launch's own size (cuda-samples sortingNetworks:
        // `bitonicSort(…, N / arrayLength, arrayLength, …)`); the argument itself, or one
        // passed twice, is read as its value instead (`f(m, m)` is not `a = b`, `b = a`).
        let h = host(
            "void launch(int batch, int len, int a, int b) {\n  k<<<batch * len / 256, 256>>>(len, a, b);\n}\n\
             int main() {\n  int L = 64;\n  int m = 8;\n  launch(1024 / L, L, m, m);\n}\n",
            2,
        );
        assert_eq!(h.definition("batch").as_deref(), Some("1024 / len"));
        assert_eq!(h.definition("a").as_deref(), Some("8"));
        assert_eq!(h.definition("b").as_deref(), Some("8"));
        // A caller's local the caller does not settle leaves the argument as written.
        let h = host(
            "void launch(int n) {\n  k<<<n, 1>>>(n);\n}\n\
             int main() {\n  int m;\n  scanf(\"%d\", &m);\n  launch(m);\n}\n",
            2,
        );
        assert_eq!(
            h.closed_in((0, 7), "m", &[], 0).unwrap_err(),
            "`m` is set through a pointer at line 6: the call decides its value"
        );
        // Objects, arrays, calls and addresses are not closed over (`d->w` stays `d->w`).
        assert_eq!(
            plain_value_names("d->w * v[i] + f(n) + *p + &q + a * b"),
            ["i", "n", "a", "b"]
        );
        assert_eq!(grouped("(a) + (b)"), "((a) + (b))");
        assert_eq!(grouped("(a + b)"), "(a + b)");
        assert_eq!(grouped("((n))"), "n");
        assert_eq!(grouped(" 7 "), "7");
    }

    #[test]
    fn the_launching_functions_writes_are_read_as_of_the_launch() {
        // A chained assignment (Rodinia hotspot3D's `ce = cw = stepDivCap / Rx`).
        let h = host(
            "void f() {\n float cw, ce;\n ce = cw = 0.5 / 4;\n k<<<1, 1>>>(ce);\n}\n",
            4,
        );
        assert_eq!(h.definition("ce").as_deref(), Some("0.5 / 4"));
        // Set through a pointer, changed in a loop: unknown, and the reason says why (a
        // `cudaOccupancy…(&blocks, …)` used to give the declared 0).
        let h = host(
            "void f(int n) {\n int blocks = 0, m = 1;\n query(&blocks);\n while (m < n) m *= 2;\n k<<<blocks, m>>>();\n}\n",
            5,
        );
        let e = h.definition_or_why("blocks").unwrap_err();
        assert!(
            e.contains("`blocks` is set through a pointer at line 3"),
            "{e}"
        );
        let e = h.definition_or_why("m").unwrap_err();
        assert!(e.contains("`m` is changed in a loop (line 4)"), "{e}");
        assert_eq!(h.definition("m"), None);
        // A parameter changed from the value it comes in with (llm.c's `if (block_size ==
        // 1024) block_size = 512;`): that value is the one the one caller passes.
        let h = host(
            "void launch(int bs) {\n if (bs == 1024) bs = 512;\n k<<<1, bs>>>();\n}\n\
             int main() {\n launch(1024);\n}\n",
            3,
        );
        assert_eq!(h.int_value("bs"), Ok(512));
        // Not taken: the value passed, not the guarded write's.
        let mut h = h;
        h.set_file(h.file.replace("launch(1024)", "launch(256)"));
        assert_eq!(h.int_value("bs"), Ok(256));
        let h = host(
            "void launch(int bs) {\n if (bs == 1024) bs = 512;\n k<<<1, bs>>>();\n}\n\
             int main() {\n launch(256);\n launch(1024);\n}\n",
            3,
        );
        let e = h.definition_or_why("bs").unwrap_err();
        assert!(
            e.contains("`bs` is a parameter changed before the launch"),
            "{e}"
        );
    }

    #[test]
    fn one_objects_dim3_fields_take_their_assignments() {
        // cp: `volsize.x = VOLSIZEX;` while other dim3s set their own x.
        let h = host(
            "#define VOLSIZEX 512\nint main() {\n  dim3 volsize, Bsz;\n  volsize.x = VOLSIZEX;\n  volsize.y = 256;\n  volsize.z = 1;\n  Bsz.x = 16;\n\
             int volmemsz = sizeof(float) * volsize.x * volsize.y * volsize.z;\n  k<<<1, Bsz>>>(d);\n}\n",
            9,
        );
        assert_eq!(h.int_value("volmemsz"), Ok(4 * 512 * 256));
        assert_eq!(h.int_value("Bsz.x"), Ok(16));
        // A default argument in a prototype is no file-level variable.
        let g = host(
            "void run(uint n, uint nb=1);\nvoid run(uint n, uint nb) {\n  dim3 g;\n  g.x = nb;\n  k<<<g.x, 1>>>(d);\n}\n",
            5,
        );
        assert!(g.object_field_definition("g", "x").is_none());
        assert!(h.int_value("other.x").is_err());
        // An assignment inside another's right-hand side (`a.y = b.x = 8;`) is found too.
        let c = host(
            "int main() {\n  dim3 a, b;\n  a.y = b.x = 8;\n  k<<<b.x, 1>>>(d);\n}\n",
            4,
        );
        assert_eq!(c.object_field_definition("b", "x").as_deref(), Some("8"));
    }

    #[test]
    fn device_properties_are_the_h100s() {
        let h = host(
            "int main() {\n  cudaDeviceProp prop;\n  cudaGetDeviceProperties(&prop, 0);\n  int nb = 10 * prop.multiProcessorCount;\n  int t = prop.maxThreadsPerBlock;\n  k<<<nb, t>>>(d);\n}\n",
            6,
        );
        assert_eq!(h.int_value("nb"), Ok(1320));
        assert_eq!(h.int_value("t"), Ok(1024));
        assert_eq!(h.int_value("prop.sharedMemPerBlock / 4"), Ok(12288));
        // Another struct's field of the same name is not a device property.
        assert!(h.int_value("other.maxThreadsPerBlock").is_err());
    }

    #[test]
    fn float_definitions_keep_their_fractions() {
        // stencil: `float c0=1.0f/6.0f;` is 1/6, not 0.
        let h = host(
            "int main() {\n\tfloat c0=1.0f/6.0f;\n\tfloat c1=1.0f/6.0f/6.0f;\n\tk<<<1, 1>>>(c0, c1);\n}\n",
            4,
        );
        let v = |e: &str| match h.value(e, 0) {
            Ok(Num::Float(f)) => f,
            other => panic!("{e}: {other:?}"),
        };
        assert!((v("c0") - 1.0 / 6.0).abs() < 1e-9);
        assert!((v("c1") - 1.0 / 36.0).abs() < 1e-9);
    }

    #[test]
    fn a_line_continuation_inside_a_call_is_white_space() {
        assert_eq!(
            host::whole_call("f(a, 1.0f, \\\n      dA, m)").map(|c| c.2),
            Some(vec!["a".into(), "1.0f".into(), "dA".into(), "m".into()])
        );
    }

    #[test]
    fn symbol_uploads_and_comments() {
        let h = host(
            "/* cudaMemcpyToSymbol(old, x, 1); */\ncudaMemcpyToSymbol(c_mask, h_mask, MASK * sizeof(float));\n",
            9,
        );
        let u = h.symbol_uploads();
        assert_eq!(u.len(), 1);
        assert_eq!(
            u.get("c_mask").map(String::as_str),
            Some("MASK * sizeof(float)")
        );
    }
}

#[cfg(test)]
mod assume_tests {
    use super::*;

    fn host(file: &str) -> Host {
        Host {
            file: file.into(),
            launch_line: file.lines().count() as u32,
            ..Host::default()
        }
    }

    #[test]
    fn an_assumed_size_keeps_the_formula_that_rounds_it() {
        let h = host("int nel;\nfile >> nel;\nint nelr = 192*((nel / 192 )+ std::min(1, nel % 192));\nk<<<nelr / 192, 192>>>(v, nelr);\n");
        assert!(h.int_value("nelr").is_err());
        let (v, roots) = h.int_value_assuming("nelr", 4096).unwrap();
        assert_eq!((v, roots), (4224, vec!["nel".to_string()]));
        // The assumption ends with the call.
        assert!(h.int_value("nelr").is_err());
    }

    #[test]
    fn struct_fields_are_assumed_at_the_root_and_dim3_members_never() {
        let h = host(
            "int w = d->img.width;
int h = d->height;
int px = w * h;
dim3 t(64);
int b = px / t.x;
k<<<b, t>>>(v, px);
",
        );
        assert!(h
            .int_value("px")
            .unwrap_err()
            .contains("reads a struct field"));
        let (v, roots) = h.int_value_assuming("px", 64).unwrap();
        assert_eq!(
            (v, roots),
            (
                4096,
                vec!["d->height".to_string(), "d->img.width".to_string()]
            )
        );
        // `t.x` is the launch's own block, never a field to assume.
        assert!(h.int_value_assuming("b", 64).is_err());
    }
}
