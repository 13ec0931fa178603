//! The `build` config file (TOML; schema in schemas/build-config.schema.json): what to extract,
//! how to synthesize and verify, what to export, and where. Relative paths are relative to
//! the config file's folder, so a config works from any working directory.

use crate::export::ExportOptions;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Io(#[from] crate::path_io::PathIo),
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildConfig {
    /// Output folder: stage outputs, the journal, caches and the dataset.
    pub output: PathBuf,
    #[serde(rename = "suite")]
    pub suites: Vec<SuiteSpec>,
    #[serde(default)]
    pub extract: ExtractSettings,
    #[serde(default)]
    pub synth: SynthSettings,
    #[serde(default)]
    pub verify: VerifySettings,
    #[serde(default)]
    pub export: ExportOptions,
    #[serde(default)]
    pub harness: HarnessSettings,
    /// Left out of the serialization at its default, so older journals stay valid.
    #[serde(default, skip_serializing_if = "CaptureSettings::is_default")]
    pub capture: CaptureSettings,
}

/// When `build` captures: its suites' own programs are built and run once under the
/// launch recorder (`kernelpair capture`), and their captured launches become harnesses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaptureMode {
    /// Where a GPU, `nvcc`, CUPTI and the injection library are all found.
    #[default]
    Auto,
    /// Always (a missing piece is a note on the capture row).
    On,
    Off,
}

/// Which of a suite's programs `build` captures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapturePrograms {
    /// Those holding a fast kernel of a pair this build can verify (a slow side, natural
    /// or synthesized, and not identical): a program whose kernels all wait for a slow
    /// side would be built and run for harnesses nothing uses yet. A later build that has
    /// them (synth answered) captures their programs then.
    #[default]
    Paired,
    /// Every program the recipe names.
    All,
}

/// `[capture]`: the capture step of `build` (`kernelpair capture` for each suite with a
/// `[capture]` recipe, into `<output>/captures/<suite>/`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CaptureSettings {
    pub mode: CaptureMode,
    /// Input files the programs read (`{data}` in recipes: Rodinia's data folder), for
    /// every suite that names no `data` of its own.
    pub data: Option<PathBuf>,
    /// Seconds each run may take (else the recipe's).
    pub timeout_s: Option<u64>,
    /// Launches snapshotted per kernel.
    pub first: u64,
    /// Bytes one launch may snapshot.
    pub max_bytes: u64,
    /// Runs at once on one GPU.
    pub runs_per_gpu: usize,
    /// Which programs: `paired` (the default) or `all`.
    pub programs: CapturePrograms,
}

impl Default for CaptureSettings {
    fn default() -> Self {
        CaptureSettings {
            mode: CaptureMode::Auto,
            data: None,
            timeout_s: None,
            first: 1,
            max_bytes: 1 << 30,
            runs_per_gpu: 8,
            programs: CapturePrograms::Paired,
        }
    }
}

impl CaptureSettings {
    fn is_default(&self) -> bool {
        *self == CaptureSettings::default()
    }
}

/// Harnesses for pairs nobody wrote one for (`pipeline::harnesses`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HarnessSettings {
    /// Infer a harness from the host code where no hand-written one exists (written to
    /// `<output>/harnesses/inferred/`); `false` leaves such pairs `no_harness`.
    pub infer: bool,
    /// A folder of LLM-completed harnesses (`harness complete -o DIR`), used after the
    /// inferred ones; `<output>/harnesses/llm/` is always looked in.
    pub llm_dir: Option<PathBuf>,
    /// With `[synth] llm` set, let the endpoint complete inferred harnesses that have TODOs
    /// (`harness complete`, into `<output>/harnesses/llm/`).
    pub complete: bool,
    /// Repair turns of a completion after a rejected answer.
    pub max_repairs: u32,
    /// Self-check every harness on the GPU before its pair is verified; an inferred or LLM
    /// harness that fails stops its pair as `harness_error`.
    pub selfcheck: bool,
    /// As `harness infer --assume-size N`: every size the host code does not determine
    /// (read from a data file, a struct field) gets this value, marked `ASSUMED` in the
    /// inferred file, instead of a TODO. Unset: such harnesses stay incomplete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assume_size: Option<i64>,
}

impl Default for HarnessSettings {
    fn default() -> Self {
        HarnessSettings {
            infer: true,
            llm_dir: None,
            complete: true,
            max_repairs: 2,
            selfcheck: true,
            assume_size: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SuiteKind {
    Auto,
    Parboil,
    Rodinia,
    Generic,
    /// A JSONL file of records from an earlier `extract` (or any stage): taken as extracted.
    Records,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteSpec {
    /// Suite root folder (or, for kind `records`, a JSONL file).
    pub path: PathBuf,
    #[serde(default = "default_kind")]
    pub kind: SuiteKind,
    /// A suite description file replacing the built-in one for `kind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extractor: Option<PathBuf>,
    /// Input files this suite's programs read when captured (`{data}` in its recipe,
    /// linked where the recipe's `data_at` says): Rodinia's `data/<app>/…` and Parboil's
    /// `datasets/<app>/<dataset>/input/…` differ, so each suite may name its own. Else
    /// `[capture] data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<PathBuf>,
}

fn default_kind() -> SuiteKind {
    SuiteKind::Auto
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExtractSettings {
    /// NVRTC target of the compile check.
    pub arch: String,
    /// Compile-check every unit with NVRTC (skipped with a note when NVRTC is missing).
    pub compile: bool,
}

impl Default for ExtractSettings {
    fn default() -> Self {
        ExtractSettings {
            arch: crate::gpu::nvrtc::DEFAULT_ARCH.into(),
            compile: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SynthSettings {
    /// The synth stage's LLM config (endpoint, model, `api_key_env`; see examples/llm.toml).
    /// Absent: pairs without a slow kernel wait for an endpoint and the build says so.
    pub llm: Option<PathBuf>,
    /// Answer only from the response cache.
    pub offline: bool,
    /// LLM response cache; default `<output>/llm-cache`.
    pub cache: Option<PathBuf>,
    pub max_repairs: u32,
    /// Pairs per journaled chunk: a killed run redoes at most one chunk.
    pub chunk: usize,
    /// Token budget of a deoptimize request ([`crate::synth::Settings::max_prompt_tokens`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_prompt_tokens: Option<u64>,
    /// Slow candidates per fast kernel ([`crate::synth::Candidates`]); left out of the
    /// settings JSON at its default, so build journals are unchanged.
    #[serde(skip_serializing_if = "is_all")]
    pub candidates: crate::synth::Candidates,
    /// NVRTC target of synth's compile check: the `[extract] arch` of the same config
    /// (filled on load, not a key of its own).
    #[serde(skip)]
    pub arch: String,
}

impl Default for SynthSettings {
    /// The synth library's defaults ([`crate::synth::Settings::default`]), plus the chunk size.
    fn default() -> Self {
        let d = crate::synth::Settings::default();
        SynthSettings {
            llm: d.llm,
            offline: d.offline,
            cache: None,
            max_repairs: d.max_repairs,
            chunk: 8,
            max_prompt_tokens: d.max_prompt_tokens,
            candidates: d.candidates,
            arch: d.arch,
        }
    }
}

impl SynthSettings {
    /// The synth library's settings for this build: answers cached in `cache`, the journal
    /// at `journal`; what the build config cannot set keeps the library default.
    pub fn to_synth(&self, cache: &Path, journal: Option<PathBuf>) -> crate::synth::Settings {
        crate::synth::Settings {
            llm: self.llm.clone(),
            cache: cache.to_path_buf(),
            offline: self.offline,
            max_repairs: self.max_repairs,
            // The compile check targets the architecture the build's extract stage uses.
            arch: self.arch.clone(),
            journal,
            max_prompt_tokens: self.max_prompt_tokens,
            candidates: self.candidates,
            ..crate::synth::Settings::default()
        }
    }
}

fn is_all(c: &crate::synth::Candidates) -> bool {
    *c == crate::synth::Candidates::All
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VerifySettings {
    /// Folders searched for `<benchmark>.toml` harnesses (besides a pair's own harness).
    pub harness_dirs: Vec<PathBuf>,
    pub seeds: u32,
    /// A pair is `not_faster` unless the speedup's 95% interval starts at or above this.
    pub min_speedup: f64,
    /// Watchdog deadline per pair.
    pub timeout_s: u64,
    /// Wall-clock timing budget per size set (both variants), milliseconds.
    pub time_budget_ms: f64,
    /// Timing stops early once both medians' 95% CI widths are within this fraction.
    pub precision: f64,
    /// Pairs per journaled chunk (at most; a step's chunks are all of about one length).
    /// A killed run redoes at most the chunk in flight, and of it only the pairs whose
    /// self-check report or verdict its partial files lack. Larger chunks keep several
    /// GPUs busy to the end: each chunk waits on its longest pair.
    pub chunk: usize,
    /// compute-sanitizer tools to run each pair under after verification (`verify
    /// --sanitizer`). Left out of the settings' serialization when empty, so journals
    /// written before this setting existed stay valid.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sanitizer: Vec<crate::verify::sanitizer::Tool>,
    /// A capture folder (`kernelpair capture -o`): pairs without a hand-written harness run
    /// under their fast kernel's captured launch (`verify --captures`). Left out of the
    /// serialization when absent, so older journals stay valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub captures: Option<PathBuf>,
}

impl Default for VerifySettings {
    /// The verify library's defaults ([`crate::verify::Settings::default`]), plus the chunk size.
    fn default() -> Self {
        let d = crate::verify::Settings::default();
        VerifySettings {
            harness_dirs: d.harness_dirs,
            seeds: d.seeds,
            min_speedup: d.min_speedup,
            timeout_s: d.timeout_s.round() as u64,
            time_budget_ms: d.time_budget_ms,
            precision: d.precision,
            chunk: 256,
            sanitizer: d.sanitizer,
            captures: d.captures,
        }
    }
}

impl VerifySettings {
    /// The verify library's settings for this build, compiling into `compile_cache`; what
    /// the build config cannot set keeps the library default.
    pub fn to_verify(&self, compile_cache: &Path) -> crate::verify::Settings {
        crate::verify::Settings {
            harness_dirs: self.harness_dirs.clone(),
            timeout_s: self.timeout_s as f64,
            seeds: self.seeds,
            min_speedup: self.min_speedup,
            time_budget_ms: self.time_budget_ms,
            precision: self.precision,
            cache_dir: Some(compile_cache.to_path_buf()),
            sanitizer: self.sanitizer.clone(),
            captures: self.captures.clone(),
            ..crate::verify::Settings::default()
        }
    }
}

impl BuildConfig {
    /// Read, check, and make every relative path relative to the config file's folder.
    pub fn load(path: &Path) -> Result<BuildConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| {
            ConfigError::Io(crate::path_io::PathIo::new(path.to_path_buf(), source))
        })?;
        let mut c = Self::parse(&text).map_err(|message| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        c.resolve(base);
        Ok(c)
    }

    pub fn parse(text: &str) -> Result<BuildConfig, String> {
        let mut c: BuildConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        c.synth.arch = c.extract.arch.clone();
        if c.suites.is_empty() {
            return Err("at least one [[suite]] is needed".into());
        }
        if c.synth.chunk == 0 || c.verify.chunk == 0 {
            return Err("chunk sizes must be at least 1".into());
        }
        if c.harness.assume_size.is_some_and(|n| n < 1) {
            return Err("[harness] assume_size must be at least 1".into());
        }
        Ok(c)
    }

    fn resolve(&mut self, base: &Path) {
        let fix = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        fix(&mut self.output);
        for s in &mut self.suites {
            fix(&mut s.path);
            if let Some(e) = &mut s.extractor {
                fix(e);
            }
            if let Some(d) = &mut s.data {
                fix(d);
            }
        }
        if let Some(p) = &mut self.synth.llm {
            fix(p);
        }
        if let Some(p) = &mut self.synth.cache {
            fix(p);
        }
        for d in &mut self.verify.harness_dirs {
            fix(d);
        }
        if let Some(c) = &mut self.verify.captures {
            fix(c);
        }
        if let Some(p) = &mut self.harness.llm_dir {
            fix(p);
        }
        if let Some(p) = &mut self.capture.data {
            fix(p);
        }
        if let Some(t) = &mut self.export.templates {
            fix(t);
        }
        // A tokenizer is a path unless it names an embedded vocabulary.
        if let Some(t) = &mut self.export.tokenizer {
            if !matches!(t.as_str(), "o200k_base" | "cl100k_base") && Path::new(t).is_relative() {
                *t = base.join(&*t).display().to_string();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_config_gets_defaults_and_paths_resolve_against_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.toml");
        std::fs::write(&p, "output = \"out\"\n[[suite]]\npath = \"s\"\n").unwrap();
        let c = BuildConfig::load(&p).unwrap();
        assert_eq!(c.output, dir.path().join("out"));
        assert_eq!(c.suites[0].path, dir.path().join("s"));
        assert_eq!(c.suites[0].kind, SuiteKind::Auto);
        assert_eq!(c.suites[0].data, None);
        assert_eq!(c.verify, VerifySettings::default());
        assert_eq!(c.export, ExportOptions::default());
    }

    #[test]
    fn a_suites_own_capture_data_resolves_against_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.toml");
        let text = "output = \"out\"\n[[suite]]\npath = \"p\"\ndata = \"pd\"\n\
                    [[suite]]\npath = \"r\"\n[capture]\ndata = \"/abs/rd\"\n";
        std::fs::write(&p, text).unwrap();
        let c = BuildConfig::load(&p).unwrap();
        assert_eq!(c.suites[0].data, Some(dir.path().join("pd")));
        assert_eq!(c.suites[1].data, None);
        assert_eq!(c.capture.data, Some(PathBuf::from("/abs/rd")));
    }

    #[test]
    fn build_defaults_are_the_stage_libraries_defaults() {
        let cache = Path::new("c");
        assert_eq!(
            SynthSettings::default().to_synth(cache, None),
            crate::synth::Settings {
                cache: cache.to_path_buf(),
                ..crate::synth::Settings::default()
            }
        );
        assert_eq!(
            VerifySettings::default().to_verify(cache),
            crate::verify::Settings {
                cache_dir: Some(cache.to_path_buf()),
                ..crate::verify::Settings::default()
            }
        );
        // A config's own values get through.
        let c = BuildConfig::parse(
            "output = \"o\"\n[[suite]]\npath = \"s\"\n[extract]\narch = \"sm_80\"\n[verify]\nseeds = 9\n[synth]\nmax_prompt_tokens = 4000\n",
        )
        .unwrap();
        assert_eq!(c.synth.to_synth(cache, None).arch, "sm_80");
        assert_eq!(c.synth.to_synth(cache, None).max_prompt_tokens, Some(4000));
        let base = "output = \"o\"\n[[suite]]\npath = \"s\"\n[synth]\n";
        for (text, want) in [
            (
                "candidates = \"per-technique\"",
                crate::synth::Candidates::PerTechnique,
            ),
            ("candidates = 3", crate::synth::Candidates::AtMost(3)),
            ("candidates = \"all\"", crate::synth::Candidates::All),
        ] {
            let c = BuildConfig::parse(&format!("{base}{text}\n")).unwrap();
            assert_eq!(c.synth.to_synth(cache, None).candidates, want, "{text}");
        }
        for bad in ["candidates = 0", "candidates = \"some\""] {
            assert!(
                BuildConfig::parse(&format!("{base}{bad}\n")).is_err(),
                "{bad}"
            );
        }
        // The journal keys synth settings by their JSON: unchanged at the default.
        let json = serde_json::to_string(&SynthSettings::default()).unwrap();
        assert!(!json.contains("candidates"), "{json}");
        assert_eq!(SynthSettings::default().max_prompt_tokens, None);
        assert_eq!(c.verify.to_verify(cache).seeds, 9);
    }

    #[test]
    fn sanitizer_tools_parse_and_stay_out_of_old_settings_keys() {
        use crate::verify::sanitizer::Tool;
        let base = "output = \"o\"\n[[suite]]\npath = \"s\"\n[verify]\n";
        let c = BuildConfig::parse(&format!(
            "{base}sanitizer = [\"memcheck\", \"racecheck\"]\n"
        ))
        .unwrap();
        assert_eq!(c.verify.sanitizer, vec![Tool::Memcheck, Tool::Racecheck]);
        let e = BuildConfig::parse(&format!("{base}sanitizer = [\"valgrind\"]\n")).unwrap_err();
        assert!(e.contains("valgrind"), "{e}");
        // The journal keys verify settings by their JSON: unchanged when the list is empty.
        let json = serde_json::to_string(&VerifySettings::default()).unwrap();
        assert!(!json.contains("sanitizer"), "{json}");
        assert!(serde_json::to_string(&c.verify)
            .unwrap()
            .contains("\"sanitizer\":[\"memcheck\",\"racecheck\"]"));
    }

    #[test]
    fn typos_and_empty_suites_are_errors() {
        let e = BuildConfig::parse("output = \"o\"\n[[suite]]\npath = \"s\"\n[verify]\nseed = 3\n")
            .unwrap_err();
        assert!(e.contains("seed"), "{e}");
        let e = BuildConfig::parse("output = \"o\"\nsuite = []\n").unwrap_err();
        assert!(e.contains("at least one"), "{e}");
        let e = BuildConfig::parse("output = \"o\"\n[[suite]]\npath = \"s\"\nkind = \"spec\"\n")
            .unwrap_err();
        assert!(e.contains("spec"), "{e}");
    }
}
