//! Suite descriptions (`extractors/*.toml`): how a suite is laid out, which files hold
//! kernels, and how its variants pair. Data, not code: a new suite is a new file.

use globset::{Glob, GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};
use regex::Regex;
use serde::Deserialize;
use std::path::Path;

use super::SuiteError;

/// The descriptions shipped with kernelpair, in `--suite auto` detection order
/// (most specific first; generic last because it matches any CUDA tree).
pub const BUILTIN: &[(&str, &str)] = &[
    ("parboil", include_str!("../../extractors/parboil.toml")),
    ("rodinia", include_str!("../../extractors/rodinia.toml")),
    (
        "cuda-samples",
        include_str!("../../extractors/cuda-samples.toml"),
    ),
    ("llm-c", include_str!("../../extractors/llm-c.toml")),
    ("generic", include_str!("../../extractors/generic.toml")),
];

/// A suite description as written in TOML.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDesc {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub detect: RawDetect,
    pub layout: RawLayout,
    pub files: RawFiles,
    pub pairing: RawPairing,
    /// How `kernelpair capture` builds and runs the suite's programs (absent: defaults).
    #[serde(default)]
    pub capture: Option<CaptureRecipe>,
}

/// A suite's capture recipe (`[capture]`): which programs, how each is built and run.
/// Commands are shell lines run in the program's folder of a scratch copy of the tree;
/// `{root}` (the copy's root), `{dir}`, `{file}` and `{stem}` (per-file programs) and
/// `{data}` (`capture --data`) are replaced.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureRecipe {
    /// Root-relative globs of program folders, or of files (one program per file, built
    /// and run in the file's folder). Empty: every folder holding a Makefile and `.cu` files.
    #[serde(default)]
    pub programs: Vec<String>,
    /// The build command (default `make`).
    #[serde(default)]
    pub build: Option<String>,
    /// The runs, each a separate process with its own launches (default: `make run` when
    /// the Makefile has a `run` target, else each executable the build made).
    #[serde(default)]
    pub run: Vec<String>,
    /// Run each run command once per value, `{arg}` replaced (llm.c's kernel numbers:
    /// `./{stem} {arg}` for 1..10). The sequence stops at the first value whose run fails
    /// and launches nothing, once an earlier value captured something.
    #[serde(default)]
    pub each: Vec<String>,
    /// A regex with one group, read in a per-file program's source: a value of `each` runs
    /// only when the source states it in that group (llm.c: `case\s+([0-9]+)\s*:`, the
    /// versions its `switch (kernel_num)` dispatches). A source where it matches nothing
    /// runs the first value only (its runs would all do the same). Values never stated are
    /// never run: each such run would compute its CPU reference only to refuse the number.
    #[serde(default)]
    pub each_stated: Option<String>,
    /// Seconds each run may take (default 120).
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Extra environment for builds and runs.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// Root-relative folder where the programs expect their input data (Rodinia: `data`,
    /// which its run scripts reach as `../../data/<app>/…`). `capture --data DIR` links
    /// DIR's entries into it in the scratch copy, so the programs' own paths find them.
    #[serde(default)]
    pub data_at: Option<String>,
    /// More runs for some programs, beside the recipe's own: the arguments a program
    /// documents for kernels its plain run does not launch (cuda-samples' `-kernel=N`).
    #[serde(default)]
    pub also: Vec<ExtraRuns>,
}

/// `[[capture.also]]`: runs added to the programs whose ids match `programs` (globs).
/// Each is a separate process, captured like the recipe's runs; `{arg}` takes each value
/// of `each`, and a sequence stops at the first value whose run fails and launches nothing.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraRuns {
    pub programs: Vec<String>,
    pub run: Vec<String>,
    #[serde(default)]
    pub each: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDetect {
    /// Every glob must match at least one file for `--suite auto` to pick the description.
    #[serde(default)]
    pub require: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLayout {
    /// `/`-separated template of the scope folder; `{benchmark}` and `{variant}` each
    /// capture one path component, other components must match literally.
    pub scope: String,
    /// Globs over the `{variant}` component; variants that match none are ignored.
    #[serde(default)]
    pub variants: Vec<String>,
    /// The variant name when `scope` has no `{variant}`.
    #[serde(default)]
    pub variant: Option<String>,
    /// Files no scope matches form one scope with an empty benchmark name.
    #[serde(default)]
    pub loose: bool,
    /// Globs over root-relative paths of files every scope may read as context.
    /// Kept for old descriptions: a shared file is visible to a scope only when one of
    /// the scope's `#include`s reaches it, like any other file.
    #[serde(default)]
    pub shared: Vec<String>,
    /// Root-relative folders searched for `#include "x"` after the including file's own
    /// folder, in order (a compiler's `-I`); the scope folder itself is searched last.
    #[serde(default)]
    pub include_dirs: Vec<String>,
    /// File names (globs) that make a folder a program of its own (`Makefile`,
    /// `CMakeLists.txt`): with markers, a file's scope is the nearest folder above it that
    /// holds one, or else the file's own folder, and `scope` is not used.
    #[serde(default)]
    pub scope_markers: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFiles {
    pub kernel: Vec<String>,
    #[serde(default)]
    pub context: Vec<String>,
    /// Context files used only when a file of the same scope `#include`s them by name
    /// (otherwise they are separate host translation units device code cannot see).
    #[serde(default)]
    pub included_only: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPairing {
    pub mode: PairingMode,
    #[serde(default)]
    pub naive: Option<String>,
    #[serde(default)]
    pub counterpart: Option<String>,
    #[serde(default)]
    pub fallback_naive: Vec<String>,
    #[serde(default = "default_rules")]
    pub rules: Vec<Rule>,
    /// Progressions inside one file (docs/pairing.md, "Progressions"): numbered series
    /// and naive/optimized naming pairs, in any mode.
    #[serde(default)]
    pub progression: Option<super::progression::RawProgression>,
}

fn default_rules() -> Vec<Rule> {
    vec![Rule::NameAndParams, Rule::Name, Rule::RenamedSoleKernel]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PairingMode {
    /// Pair kernels of naive variant folders with those of optimized ones.
    Variants,
    /// No naive code: every kernel becomes a pair with an empty slow slot.
    Pending,
}

/// A kernel pairing rule, tried in the order the description lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    NameAndParams,
    Name,
    RenamedSoleKernel,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::NameAndParams => "name_and_params",
            Rule::Name => "name",
            Rule::RenamedSoleKernel => "renamed_sole_kernel",
        }
    }
}

impl From<Rule> for crate::record::PairRule {
    fn from(r: Rule) -> Self {
        match r {
            Rule::NameAndParams => crate::record::PairRule::NameAndParams,
            Rule::Name => crate::record::PairRule::Name,
            Rule::RenamedSoleKernel => crate::record::PairRule::RenamedSoleKernel,
        }
    }
}

/// The rule of pairs whose slow slot awaits synthesis.
pub const RULE_NO_NAIVE: crate::record::PairRule = crate::record::PairRule::NoNaiveVariant;

/// A checked, compiled suite description.
#[derive(Debug, Clone)]
pub struct SuiteDesc {
    pub name: String,
    pub description: String,
    /// Where the description came from (`builtin:parboil` or a file path).
    pub origin: String,
    require: Vec<GlobMatcher>,
    scope: Vec<Component>,
    variants: Option<GlobSet>,
    fixed_variant: String,
    loose: bool,
    shared: GlobSet,
    /// Root-relative `-I` folders (without the scope folder).
    pub include_dirs: Vec<String>,
    markers: Option<GlobSet>,
    /// With markers: the root-relative folders holding a marker file (see [`SuiteDesc::with_tree`]).
    marker_dirs: std::sync::Arc<std::collections::HashSet<String>>,
    kernel_files: GlobSet,
    context_files: GlobSet,
    included_only: GlobSet,
    pub mode: PairingMode,
    naive: Option<Regex>,
    counterpart: String,
    pub fallback_naive: Vec<String>,
    pub rules: Vec<Rule>,
    pub progression: Option<super::progression::Progression>,
    /// How capture builds and runs this suite's programs.
    pub capture: Option<CaptureRecipe>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Component {
    Literal(String),
    Benchmark,
    Variant,
}

/// Where a file sits in the suite's layout.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ScopeKey {
    pub benchmark: String,
    pub variant: String,
    /// The scope folder relative to the root (`benchmarks/sgemm/src/cuda`), empty for the root.
    pub dir: String,
}

/// What a file is to the extractor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileRole {
    /// Searched for kernels.
    pub kernel: bool,
    /// Read for declarations.
    pub context: bool,
}

impl SuiteDesc {
    /// A shipped description by name.
    pub fn builtin(name: &str) -> Result<SuiteDesc, SuiteError> {
        let (_, text) = BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| SuiteError::UnknownSuite(name.to_string()))?;
        SuiteDesc::parse(text, &format!("builtin:{name}"))
    }

    /// Every shipped description, in detection order.
    pub fn builtins() -> Result<Vec<SuiteDesc>, SuiteError> {
        BUILTIN
            .iter()
            .map(|(n, t)| SuiteDesc::parse(t, &format!("builtin:{n}")))
            .collect()
    }

    /// A user-supplied description file.
    pub fn load(path: &Path) -> Result<SuiteDesc, SuiteError> {
        let text = std::fs::read_to_string(path).map_err(|e| SuiteError::Description {
            origin: path.display().to_string(),
            message: e.to_string(),
        })?;
        SuiteDesc::parse(&text, &path.display().to_string())
    }

    pub fn parse(text: &str, origin: &str) -> Result<SuiteDesc, SuiteError> {
        let err = |message: String| SuiteError::Description {
            origin: origin.to_string(),
            message,
        };
        let raw: RawDesc = toml::from_str(text).map_err(|e| err(e.to_string()))?;
        let path_glob = |g: &str| -> Result<Glob, SuiteError> {
            GlobBuilder::new(g)
                .literal_separator(true)
                .build()
                .map_err(|e| err(format!("glob `{g}`: {e}")))
        };
        let set = |globs: &[String], path_like: bool| -> Result<GlobSet, SuiteError> {
            let mut b = GlobSetBuilder::new();
            for g in globs {
                b.add(if path_like {
                    path_glob(g)?
                } else {
                    Glob::new(g).map_err(|e| err(format!("glob `{g}`: {e}")))?
                });
            }
            b.build().map_err(|e| err(e.to_string()))
        };
        let require = raw
            .detect
            .require
            .iter()
            .map(|g| path_glob(g).map(|g| g.compile_matcher()))
            .collect::<Result<Vec<_>, _>>()?;
        let mut scope = Vec::new();
        for c in raw.layout.scope.split('/').filter(|c| !c.is_empty()) {
            scope.push(match c {
                "{benchmark}" => Component::Benchmark,
                "{variant}" => Component::Variant,
                c if c.contains('{') || c.contains('*') => {
                    return Err(err(format!(
                        "layout.scope component `{c}`: only `{{benchmark}}`, `{{variant}}` or a literal folder name"
                    )))
                }
                c => Component::Literal(c.to_string()),
            });
        }
        if scope.iter().filter(|c| **c == Component::Benchmark).count() != 1 {
            return Err(err("layout.scope must contain `{benchmark}` once".into()));
        }
        let has_variant = scope.contains(&Component::Variant);
        if has_variant == raw.layout.variant.is_some() {
            return Err(err(
                "give either `{variant}` in layout.scope or a fixed layout.variant, not both or neither"
                    .into(),
            ));
        }
        let variants = if has_variant {
            if raw.layout.variants.is_empty() {
                return Err(err(
                    "layout.variants must list the variant folders to extract".into(),
                ));
            }
            Some(set(&raw.layout.variants, false)?)
        } else {
            None
        };
        if raw.files.kernel.is_empty() {
            return Err(err("files.kernel must list at least one glob".into()));
        }
        let naive = match (&raw.pairing.mode, &raw.pairing.naive) {
            (PairingMode::Variants, None) => {
                return Err(err("pairing.mode = \"variants\" needs pairing.naive".into()))
            }
            (PairingMode::Variants, _) if !has_variant => {
                return Err(err(
                    "pairing.mode = \"variants\" needs `{variant}` in layout.scope".into(),
                ))
            }
            (_, Some(re)) => Some(Regex::new(re).map_err(|e| err(format!("pairing.naive: {e}")))?),
            (_, None) => None,
        };
        Ok(SuiteDesc {
            name: raw.name,
            description: raw.description,
            origin: origin.to_string(),
            require,
            scope,
            variants,
            fixed_variant: raw.layout.variant.unwrap_or_default(),
            loose: raw.layout.loose,
            shared: set(&raw.layout.shared, true)?,
            include_dirs: raw
                .layout
                .include_dirs
                .iter()
                .map(|d| d.trim_matches('/').to_string())
                .collect(),
            markers: if raw.layout.scope_markers.is_empty() {
                None
            } else {
                Some(set(&raw.layout.scope_markers, false)?)
            },
            marker_dirs: Default::default(),
            kernel_files: set(&raw.files.kernel, false)?,
            context_files: set(&raw.files.context, false)?,
            included_only: set(&raw.files.included_only, false)?,
            mode: raw.pairing.mode,
            naive,
            counterpart: raw.pairing.counterpart.unwrap_or_default(),
            fallback_naive: raw.pairing.fallback_naive,
            rules: raw.pairing.rules,
            progression: raw
                .pairing
                .progression
                .map(|p| super::progression::Progression::compile(p).map_err(err))
                .transpose()?,
            capture: raw.capture,
        })
    }

    /// Whether the tree (its files, root-relative, `/`-separated) looks like this suite.
    pub fn detects(&self, files: &[String]) -> bool {
        self.require
            .iter()
            .all(|m| files.iter().any(|f| m.is_match(f)))
    }

    /// What the file is to the extractor, by its name; `None` when it is neither.
    pub fn role(&self, rel_path: &str) -> Option<FileRole> {
        let name = rel_path.rsplit('/').next().unwrap_or(rel_path);
        let kernel = self.kernel_files.is_match(name);
        let context = kernel || self.context_files.is_match(name);
        context.then_some(FileRole { kernel, context })
    }

    /// Whether the file is context only when something includes it by name.
    pub fn included_only(&self, rel_path: &str) -> bool {
        let name = rel_path.rsplit('/').next().unwrap_or(rel_path);
        self.included_only.is_match(name) && !self.kernel_files.is_match(name)
    }

    /// Whether every scope may read the file.
    pub fn is_shared(&self, rel_path: &str) -> bool {
        self.shared.is_match(rel_path)
    }

    /// Learn which folders of the tree hold scope markers (descriptions with
    /// `scope_markers`; others are returned unchanged). `files`: root-relative paths.
    pub fn with_tree(mut self, files: &[String]) -> SuiteDesc {
        if let Some(m) = &self.markers {
            let dirs = files
                .iter()
                .filter(|f| m.is_match(f.rsplit('/').next().unwrap_or(f)))
                .map(|f| f.rfind('/').map(|i| f[..i].to_string()).unwrap_or_default())
                .collect();
            self.marker_dirs = std::sync::Arc::new(dirs);
        }
        self
    }

    /// The `-I` folders of a scope: the description's, then the scope folder.
    pub fn include_dirs_for(&self, scope: &ScopeKey) -> Vec<String> {
        let mut v = self.include_dirs.clone();
        if !v.contains(&scope.dir) {
            v.push(scope.dir.clone());
        }
        v
    }

    /// The scope a root-relative file belongs to, if any (variants that the description
    /// does not extract give `None`).
    pub fn scope_of(&self, rel_path: &str) -> Option<ScopeKey> {
        if self.markers.is_some() {
            return Some(self.marker_scope(rel_path));
        }
        let comps: Vec<&str> = rel_path.split('/').collect();
        // The file itself must lie inside the scope folder, not be it.
        if comps.len() > self.scope.len() {
            let (mut benchmark, mut variant) = (None, None);
            let mut ok = true;
            for (pat, c) in self.scope.iter().zip(&comps) {
                match pat {
                    Component::Literal(l) => ok &= l == c,
                    Component::Benchmark => benchmark = Some(*c),
                    Component::Variant => variant = Some(*c),
                }
            }
            if ok {
                let variant = match variant {
                    Some(v) => {
                        if !self.variants.as_ref().is_some_and(|s| s.is_match(v)) {
                            return None;
                        }
                        v.to_string()
                    }
                    None => self.fixed_variant.clone(),
                };
                return Some(ScopeKey {
                    benchmark: benchmark.unwrap_or_default().to_string(),
                    variant,
                    dir: comps[..self.scope.len()].join("/"),
                });
            }
        }
        (self.loose && comps.len() == 1).then(|| ScopeKey {
            benchmark: String::new(),
            variant: self.fixed_variant.clone(),
            dir: String::new(),
        })
    }

    /// With markers: the nearest folder above the file holding a marker, else its own folder.
    fn marker_scope(&self, rel_path: &str) -> ScopeKey {
        let own = rel_path.rfind('/').map(|i| &rel_path[..i]).unwrap_or("");
        let mut dir = own;
        let found = loop {
            if self.marker_dirs.contains(dir) {
                break Some(dir);
            }
            match dir.rfind('/') {
                Some(i) => dir = &dir[..i],
                None if !dir.is_empty() => dir = "",
                None => break None,
            }
        };
        let dir = found.unwrap_or(own).to_string();
        ScopeKey {
            benchmark: dir.clone(),
            variant: self.fixed_variant.clone(),
            dir,
        }
    }

    /// Whether a variant folder holds naive code.
    pub fn is_naive(&self, variant: &str) -> bool {
        self.naive.as_ref().is_some_and(|re| re.is_match(variant))
    }

    /// The optimized variant a naive one pairs with by the naming rule (`cuda_base_tex`
    /// → `cuda_tex`); `None` for variants that are not naive.
    pub fn counterpart(&self, naive_variant: &str) -> Option<String> {
        let re = self.naive.as_ref()?;
        let caps = re.captures(naive_variant)?;
        let mut out = self.counterpart.clone();
        for name in re.capture_names().flatten() {
            let value = caps.name(name).map(|m| m.as_str()).unwrap_or("");
            out = out.replace(&format!("{{{name}}}"), value);
        }
        Some(out)
    }

    /// The naive variant an optimized variant pairs with, among those present.
    pub fn naive_for<'a>(&self, optimized: &str, present: &'a [String]) -> Option<&'a String> {
        present
            .iter()
            .filter(|v| self.is_naive(v))
            .find(|v| self.counterpart(v).as_deref() == Some(optimized))
            .or_else(|| {
                self.fallback_naive
                    .iter()
                    .find_map(|f| present.iter().find(|p| *p == f))
            })
    }
}

/// Pick the description for a tree: the first builtin whose detection globs match.
pub fn detect(files: &[String]) -> Result<SuiteDesc, SuiteError> {
    for d in SuiteDesc::builtins()? {
        if d.detects(files) {
            return Ok(d);
        }
    }
    Err(SuiteError::NotDetected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_description_parses() {
        let all = SuiteDesc::builtins().unwrap();
        let names: Vec<_> = all.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            ["parboil", "rodinia", "cuda-samples", "llm-c", "generic"]
        );
    }

    #[test]
    fn parboil_variants_and_counterparts() {
        let d = SuiteDesc::builtin("parboil").unwrap();
        let s = d
            .scope_of("benchmarks/sgemm/src/cuda_base/sgemm_kernel.cu")
            .unwrap();
        assert_eq!(
            (s.benchmark.as_str(), s.variant.as_str(), s.dir.as_str()),
            ("sgemm", "cuda_base", "benchmarks/sgemm/src/cuda_base")
        );
        // Deeper files belong to the same scope.
        assert_eq!(
            d.scope_of("benchmarks/x/src/cuda/sub/a.cu")
                .unwrap()
                .variant,
            "cuda"
        );
        // OpenCL/OpenMP/CPU variants and files outside the layout are ignored.
        assert_eq!(d.scope_of("benchmarks/x/src/opencl_base/a.cu"), None);
        assert_eq!(d.scope_of("benchmarks/x/src/base/a.cu"), None);
        assert_eq!(d.scope_of("common/src/parboil_cuda.c"), None);
        assert_eq!(d.scope_of("benchmarks/x/src/cuda"), None);
        for (naive, opt) in [
            ("cuda_base", "cuda"),
            ("cuda_base_tex", "cuda_tex"),
            ("cuda-base", "cuda"),
        ] {
            assert!(d.is_naive(naive));
            assert_eq!(d.counterpart(naive).as_deref(), Some(opt));
        }
        for v in ["cuda", "cuda_tex", "cuda_fermi"] {
            assert!(!d.is_naive(v), "{v}");
        }
        let present: Vec<String> = ["cuda_base", "cuda", "cuda_fermi", "cuda_base_tex"]
            .map(String::from)
            .to_vec();
        assert_eq!(d.naive_for("cuda", &present).unwrap(), "cuda_base");
        assert_eq!(d.naive_for("cuda_fermi", &present).unwrap(), "cuda_base");
        assert_eq!(d.naive_for("cuda_tex", &present).unwrap(), "cuda_base_tex");
        assert_eq!(d.naive_for("cuda", &["cuda".to_string()]), None);
    }

    #[test]
    fn file_roles_by_name() {
        let d = SuiteDesc::builtin("parboil").unwrap();
        let r = d.role("a/b/kernel.cu").unwrap();
        assert!(r.kernel && r.context);
        // Headers are searched for kernels too (a header may define __global__ functions).
        let r = d.role("a/common.h").unwrap();
        assert!(r.kernel && r.context);
        let r = d.role("a/params.def").unwrap();
        assert!(!r.kernel && r.context);
        assert_eq!(d.role("a/Makefile"), None);
        assert_eq!(d.role("a/kernel.cl"), None);
    }

    #[test]
    fn rodinia_and_generic_scopes() {
        let r = SuiteDesc::builtin("rodinia").unwrap();
        let s = r.scope_of("cuda/lavaMD/kernel/k.cu").unwrap();
        assert_eq!(
            (s.benchmark.as_str(), s.variant.as_str()),
            ("lavaMD", "cuda")
        );
        assert_eq!(r.scope_of("opencl/lavaMD/k.cu"), None);
        assert!(r.is_shared("cuda/util/timer/timer.h"));
        assert!(r.included_only("cuda/srad/define.c"));
        assert!(!r.included_only("cuda/srad/main.cu"));
        let c = SuiteDesc::builtin("cuda-samples").unwrap();
        let s = c
            .scope_of("Samples/6_Performance/transpose/transpose.cu")
            .unwrap();
        assert_eq!(
            (s.benchmark.as_str(), s.variant.as_str()),
            ("transpose", "6_Performance")
        );
        assert!(c.is_shared("Common/helper_cuda.h"));
        let l = SuiteDesc::builtin("llm-c").unwrap();
        let l = l.with_tree(&["Makefile".to_string(), "dev/cuda/Makefile".to_string()]);
        assert_eq!(
            l.scope_of("dev/cuda/gelu_forward.cu").unwrap().benchmark,
            "dev/cuda"
        );
        assert_eq!(l.scope_of("llmc/encoder.cuh").unwrap().benchmark, "");
        assert_eq!(c.include_dirs, ["Common"]);
        assert!(l.progression.is_some() && c.progression.is_some());
        assert_eq!(r.include_dirs, ["common", "cuda/util"]);
        assert_eq!(
            r.include_dirs_for(&r.scope_of("cuda/lavaMD/kernel/k.cu").unwrap()),
            ["common", "cuda/util", "cuda/lavaMD"]
        );
        // Generic: a benchmark is the nearest folder with a build file, else the file's own.
        let files: Vec<String> = [
            "blas/Makefile",
            "blas/x/saxpy.cu",
            "solo/y/k.cu",
            "loose.cu",
        ]
        .map(String::from)
        .to_vec();
        let g = SuiteDesc::builtin("generic").unwrap().with_tree(&files);
        assert_eq!(g.scope_of("blas/x/saxpy.cu").unwrap().benchmark, "blas");
        assert_eq!(g.scope_of("blas/x/deeper/z.cu").unwrap().dir, "blas");
        assert_eq!(g.scope_of("solo/y/k.cu").unwrap().benchmark, "solo/y");
        let root = g.scope_of("loose.cu").unwrap();
        assert_eq!((root.benchmark.as_str(), root.dir.as_str()), ("", ""));
        // A build file at the root makes the whole tree one program.
        let mut with_root = files.clone();
        with_root.push("CMakeLists.txt".into());
        let g = SuiteDesc::builtin("generic").unwrap().with_tree(&with_root);
        assert_eq!(g.scope_of("solo/y/k.cu").unwrap().benchmark, "");
        assert_eq!(g.scope_of("blas/x/saxpy.cu").unwrap().benchmark, "blas");
    }

    #[test]
    fn detection_order() {
        let files = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let pick = |v: &[&str]| detect(&files(v)).map(|d| d.name);
        assert_eq!(
            pick(&["benchmarks/a/src/cuda/k.cu", "README"]).unwrap(),
            "parboil"
        );
        assert_eq!(pick(&["cuda/a/k.cu", "opencl/a/k.cl"]).unwrap(), "rodinia");
        assert_eq!(
            pick(&[
                "Samples/6_Performance/transpose/transpose.cu",
                "Common/helper_cuda.h"
            ])
            .unwrap(),
            "cuda-samples"
        );
        assert_eq!(
            pick(&["dev/cuda/softmax_forward.cu", "llmc/cuda_common.cuh"]).unwrap(),
            "llm-c"
        );
        // Without Common/helper_cuda.h a Samples/ tree is just CUDA code.
        assert_eq!(pick(&["Samples/a/b/k.cu"]).unwrap(), "generic");
        assert_eq!(pick(&["x/y/k.cuh"]).unwrap(), "generic");
        assert!(matches!(pick(&["a.c"]), Err(SuiteError::NotDetected)));
    }

    #[test]
    fn bad_descriptions_name_the_problem() {
        let base = r#"
name = "x"
[layout]
scope = "{benchmark}"
variant = ""
[files]
kernel = ["*.cu"]
[pairing]
mode = "pending"
"#;
        assert!(SuiteDesc::parse(base, "t").is_ok());
        let bad = [
            (base.replace("{benchmark}", "src"), "{benchmark}"),
            (base.replace("variant = \"\"", ""), "variant"),
            (base.replace("\"pending\"", "\"variants\""), "pairing.naive"),
            (base.replace("*.cu", "[*.cu"), "glob"),
            (base.replace("mode", "mood"), "mood"),
        ];
        for (text, needle) in bad {
            let e = SuiteDesc::parse(&text, "t").unwrap_err().to_string();
            assert!(e.contains(needle), "{e} should mention {needle}");
        }
    }
}
