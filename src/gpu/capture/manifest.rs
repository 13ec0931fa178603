//! What one captured launch holds, as the injection library writes it and replay reads it:
//! a TOML manifest per launch (`CAPDIR/<program>/launches/<seq>-<kernel>.toml`) naming
//! content-addressed blobs ([`super::store`]). One serde type, written once by the
//! injector and read back as the same type: no step parses text it wrote.

use serde::{Deserialize, Serialize};

/// Manifest format version.
pub const MANIFEST_VERSION: u32 = 1;

/// One kernel launch of a real program, with everything it could reach before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    /// The kernel's symbol as the module names it (mangled for C++ kernels).
    pub symbol: String,
    /// The symbol demangled (`void reduce<256u>(float const*, float*, int)`), or the symbol.
    pub demangled: String,
    /// The kernel's own name (`reduce`), what extracted units are matched on.
    pub kernel: String,
    /// A name expression NVRTC can lower to this symbol (`reduce<256u>` for a template
    /// instance, else the kernel's name).
    pub name_expression: String,
    /// The launch's number in its process (every launch counts, captured or not).
    pub seq: u64,
    /// The capturing process (several processes of one run write to one folder).
    #[serde(default)]
    pub pid: u32,
    /// This kernel's launch number in its process (0 for its first launch).
    pub nth: u64,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_mem: u32,
    /// Which driver entry point launched it (`cuLaunchKernel`, `cuLaunchKernelEx`, …).
    pub via: String,
    /// A cooperative launch: `cuLaunchCooperativeKernel`, or `cuLaunchKernelEx` with the
    /// cooperative attribute (how the runtime's `cudaLaunchCooperativeKernel` may arrive).
    /// Replay launches it cooperatively too: its kernel syncs the whole grid.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cooperative: bool,
    /// The parameters in order, as `cuFuncGetParamInfo` lays them out.
    pub params: Vec<CapturedParam>,
    /// Every allocation a parameter word points into, in order of first reference.
    pub allocs: Vec<CapturedAlloc>,
    /// Module globals (`__constant__`/`__device__`) the unit uses that the module has.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub globals: Vec<CapturedGlobal>,
    /// Texture and surface objects passed as parameters (a 64-bit handle the driver
    /// describes), with the allocation or array holding their bytes in [`Self::allocs`].
    /// A handle that is also a valid object of the other kind is recorded as both; replay
    /// takes the one the parameter's type names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<CapturedObject>,
    /// Why this launch was not snapshotted (over the byte budget, a capturing stream, …):
    /// a named skip, never a silent truncation. Params are kept; allocs are sizes only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// One kernel parameter's bytes, and the device addresses found inside them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapturedParam {
    /// Byte offset in the parameter buffer.
    pub offset: usize,
    pub size: usize,
    /// The bytes as passed, in hex (a pointer's recorded address included).
    pub hex: String,
    /// 8-byte words of this parameter that are addresses inside a captured allocation
    /// (the whole parameter for a pointer; fields of a struct passed by value).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pointers: Vec<CapturedPointer>,
}

/// An address inside a parameter: which allocation, and how far into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapturedPointer {
    /// Byte offset of the word inside the parameter.
    pub at: usize,
    /// Index into [`Manifest::allocs`].
    pub alloc: usize,
    /// Byte offset of the address from the allocation's start.
    pub offset: u64,
}

/// How the program allocated a captured buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AllocKind {
    Device,
    Managed,
    /// Pinned host memory mapped into the device's address space.
    HostMapped,
    /// A CUDA array behind a texture or surface object: its dense image.
    Array,
}

/// A texture or surface object passed as parameter `param`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapturedObject {
    pub param: usize,
    pub object: crate::gpu::objects::ObjectDesc,
}

/// One allocation's bytes before and after the launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapturedAlloc {
    pub bytes: u64,
    pub kind: AllocKind,
    /// Blob id of the contents just before the launch (empty when skipped).
    #[serde(default)]
    pub before: String,
    /// Blob id of the contents once the launch finished (empty when skipped).
    #[serde(default)]
    pub after: String,
}

impl CapturedAlloc {
    /// Whether the launch changed this allocation: an output.
    pub fn changed(&self) -> bool {
        self.before != self.after
    }
}

/// A module global's bytes before and after the launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapturedGlobal {
    pub name: String,
    pub bytes: u64,
    pub before: String,
    pub after: String,
}

impl Manifest {
    /// Whether replay must launch it cooperatively (manifests written before the flag
    /// existed name the cooperative entry point in `via`).
    pub fn cooperative(&self) -> bool {
        self.cooperative || self.via.starts_with("cuLaunchCooperativeKernel")
    }

    /// Total bytes of every allocation and global it holds.
    pub fn total_bytes(&self) -> u64 {
        self.allocs.iter().map(|a| a.bytes).sum::<u64>()
            + self.globals.iter().map(|g| g.bytes).sum::<u64>()
    }

    /// The file name a manifest is kept under: its sequence number, then the kernel.
    /// A reviewer's summary: the launch, each parameter (pointers with the allocation they
    /// point into), each allocation with its size and whether the launch changed it (an
    /// output), the globals and objects, and why the launch was skipped, if it was.
    pub fn summary(&self) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        let _ = writeln!(o, "kernel {} ({})", self.kernel, self.demangled);
        let _ = writeln!(
            o,
            "launch {} of the process (pid {}), this kernel's #{}: grid {:?} block {:?} shared {} B via {}{}",
            self.seq,
            self.pid,
            self.nth,
            self.grid,
            self.block,
            self.shared_mem,
            self.via,
            if self.cooperative() { ", cooperative" } else { "" }
        );
        if let Some(why) = &self.skipped {
            let _ = writeln!(o, "skipped: {why}");
        }
        for (i, p) in self.params.iter().enumerate() {
            let ptrs: Vec<String> = p
                .pointers
                .iter()
                .map(|q| format!("word {} -> alloc {} + {}", q.at, q.alloc, q.offset))
                .collect();
            let _ = writeln!(
                o,
                "param {i}: {} B at {}{}",
                p.size,
                p.offset,
                match ptrs.is_empty() {
                    true => format!(" = {}", p.hex),
                    false => format!(": {}", ptrs.join(", ")),
                }
            );
        }
        for (k, a) in self.allocs.iter().enumerate() {
            let _ = writeln!(
                o,
                "alloc {k}: {} B {:?}, {}",
                a.bytes,
                a.kind,
                match (a.before.is_empty(), a.changed()) {
                    (true, _) => "not snapshotted".to_string(),
                    (false, true) => format!("output: {} -> {}", short(&a.before), short(&a.after)),
                    (false, false) => format!("input: {}", short(&a.before)),
                }
            );
        }
        for g in &self.globals {
            let _ = writeln!(
                o,
                "global {}: {} B{}",
                g.name,
                g.bytes,
                if g.before != g.after { ", changed" } else { "" }
            );
        }
        for ob in &self.objects {
            let _ = writeln!(o, "object for param {}: {:?}", ob.param, ob.object);
        }
        o
    }

    pub fn file_name(&self) -> String {
        let safe: String = self
            .kernel
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(80)
            .collect();
        format!("p{}-{:07}-{safe}.toml", self.pid, self.seq)
    }
}

/// The kernel's own name and an NVRTC name expression from a demangled symbol:
/// `void ns::reduce<256u>(float const*, float*, int)` → (`reduce`, `ns::reduce<256u>`);
/// a C symbol (`scale`) is both.
pub fn names_of(demangled: &str) -> (String, String) {
    // The function's full name ends at the `(` of its parameter list at template depth 0.
    let mut depth = 0i32;
    let mut end = demangled.len();
    for (i, c) in demangled.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth == 0 => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let head = &demangled[..end];
    // The return type (`void `) comes before the name for template instances only.
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in head.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            ' ' if depth == 0 => start = i + 1,
            _ => {}
        }
    }
    let expr = function_addresses(head[start..].trim());
    // The plain name: the last `::` part at depth 0, template arguments dropped.
    let mut depth = 0i32;
    let mut plain = String::new();
    let mut last_sep = 0;
    let bytes: Vec<char> = expr.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            ':' if depth == 0 && bytes.get(i + 1) == Some(&':') => {
                last_sep = plain.len() + 2;
                plain.push_str("::");
                i += 2;
                continue;
            }
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
        i += 1;
    }
    let kernel = plain[last_sep.min(plain.len())..].to_string();
    (kernel, expr)
}

/// A name expression with each template argument that takes a function's address written
/// as source writes it: demanglers print `&f` with its signature, `&f(float*, int)`
/// (cpp_demangle, which capture uses) or `&(f(float*, int))` (c++filt), a call of types
/// NVRTC refuses ("type name is not allowed"); either becomes `&f`. Idempotent: manifests
/// captured before this rule are read through it too.
pub fn function_addresses(expr: &str) -> String {
    static ADDR: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        let name = r"((?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*)";
        let args = r"\((?:[^()]|\([^()]*\))*\)";
        regex::Regex::new(&format!(r"&\({name}{args}\)|&{name}{args}")).expect("static regex")
    });
    ADDR.replace_all(expr, |c: &regex::Captures| {
        format!(
            "&{}",
            c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str())
        )
    })
    .into_owned()
}

/// The first 12 hex digits of a blob id.
pub(crate) fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// Launches as tests write them.
#[cfg(test)]
impl Manifest {
    /// A launch of `kernel` (process 1, its first launch, grid 4, block 256) with these
    /// parameters and allocations.
    pub(crate) fn for_test(
        kernel: &str,
        params: Vec<CapturedParam>,
        allocs: Vec<CapturedAlloc>,
    ) -> Manifest {
        Manifest {
            version: MANIFEST_VERSION,
            symbol: kernel.into(),
            demangled: kernel.into(),
            kernel: kernel.into(),
            name_expression: kernel.into(),
            seq: 0,
            pid: 1,
            nth: 0,
            grid: [4, 1, 1],
            block: [256, 1, 1],
            shared_mem: 0,
            via: "cuLaunchKernel".into(),
            cooperative: false,
            params,
            allocs,
            globals: vec![],
            objects: vec![],
            skipped: None,
        }
    }
}

#[cfg(test)]
impl CapturedParam {
    /// An 8-byte parameter at `offset` holding `addr`, the start of allocation `alloc`.
    pub(crate) fn address(offset: usize, addr: u64, alloc: usize) -> CapturedParam {
        CapturedParam {
            offset,
            size: 8,
            hex: hex::encode(addr.to_le_bytes()),
            pointers: vec![CapturedPointer {
                at: 0,
                alloc,
                offset: 0,
            }],
        }
    }

    /// A 4-byte scalar parameter at `offset` with these bytes.
    pub(crate) fn scalar(offset: usize, hex: &str) -> CapturedParam {
        CapturedParam {
            offset,
            size: 4,
            hex: hex.into(),
            pointers: vec![],
        }
    }
}

#[cfg(test)]
impl CapturedAlloc {
    /// A 4 KiB device allocation with these contents before and after.
    pub(crate) fn device(before: &str, after: &str) -> CapturedAlloc {
        CapturedAlloc {
            bytes: 4096,
            kind: AllocKind::Device,
            before: before.into(),
            after: after.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangled_names_give_the_kernel_and_a_name_expression() {
        assert_eq!(
            names_of("void reduce<256u>(float const*, float*, int)"),
            ("reduce".into(), "reduce<256u>".into())
        );
        assert_eq!(
            names_of("scale(float*, int)"),
            ("scale".into(), "scale".into())
        );
        assert_eq!(names_of("scale"), ("scale".into(), "scale".into()));
        assert_eq!(
            names_of("void ns::k<ns::Op<float>, 4>(ns::Op<float>)"),
            ("k".into(), "ns::k<ns::Op<float>, 4>".into())
        );
        // A function pointer as a template argument (llm.c's trimul_global<matmul_tri>), as
        // cpp_demangle prints it and as c++filt does.
        let (k, e) = names_of(
            "void trimul_global<&matmul_tri_naive(float*, int, float const*, int, float \
             const*, int, int, int, float)>(float*, float const*, int, int, int)",
        );
        assert_eq!(
            (k.as_str(), e.as_str()),
            ("trimul_global", "trimul_global<&matmul_tri_naive>")
        );
        let (k, e) = names_of(
            "void trimul_global<&(matmul_tri_naive(float*, int, float const*, int, float \
             const*, int, int, int, float))>(float*, float const*, int, int, int)",
        );
        assert_eq!(
            (k.as_str(), e.as_str()),
            ("trimul_global", "trimul_global<&matmul_tri_naive>")
        );
        assert_eq!(
            function_addresses("k<&(ns::f(void (*)(int), float)), 2>"),
            "k<&ns::f, 2>"
        );
        assert_eq!(function_addresses("k<&ns::f, 2>"), "k<&ns::f, 2>");
    }

    #[test]
    fn a_cooperative_launch_is_kept_and_read_from_older_manifests_too() {
        let text = |extra: &str| {
            format!(
                "version = {MANIFEST_VERSION}\nsymbol = \"k\"\ndemangled = \"k\"\nkernel = \"k\"\n\
                 name_expression = \"k\"\nseq = 0\nnth = 0\ngrid = [16, 1, 1]\n\
                 block = [256, 1, 1]\nshared_mem = 0\n{extra}params = []\nallocs = []\n"
            )
        };
        let plain: Manifest = toml::from_str(&text("via = \"cuLaunchKernel\"\n")).unwrap();
        assert!(!plain.cooperative());
        assert!(!toml::to_string(&plain).unwrap().contains("cooperative"));
        // A manifest written before the flag: the entry point says it.
        let old: Manifest = toml::from_str(&text("via = \"cuLaunchCooperativeKernel\"\n")).unwrap();
        assert!(old.cooperative());
        // cudaLaunchCooperativeKernel through cuLaunchKernelEx's attribute.
        let ex: Manifest =
            toml::from_str(&text("via = \"cuLaunchKernelEx\"\ncooperative = true\n")).unwrap();
        assert!(ex.cooperative());
        let back: Manifest = toml::from_str(&toml::to_string(&ex).unwrap()).unwrap();
        assert_eq!(back, ex);
    }

    #[test]
    fn a_manifest_round_trips_through_toml_and_names_its_outputs() {
        let m = Manifest {
            symbol: "_Z5scalePfi".into(),
            demangled: "scale(float*, int)".into(),
            seq: 3,
            pid: 42,
            ..Manifest::for_test(
                "scale",
                vec![
                    CapturedParam::address(0, 0x2_0a00_0000, 0),
                    CapturedParam::scalar(8, "00040000"),
                ],
                vec![CapturedAlloc::device("aa", "bb")],
            )
        };
        let text = toml::to_string_pretty(&m).unwrap();
        let back: Manifest = toml::from_str(&text).unwrap();
        assert_eq!(back, m);
        assert!(back.allocs[0].changed());
        assert_eq!(m.file_name(), "p42-0000003-scale.toml");
        assert_eq!(m.total_bytes(), 4096);
    }
}
