//! Why an input was skipped and why a kernel found no partner: enums in the program, the
//! same strings in the JSONL as before they were typed (serde writes and reads them), so
//! records of earlier versions read unchanged.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why an input file (or folder) was skipped; `message` says the details. Not `Ord`:
/// records sort by the string ([`SkipReason::as_str`]), as they did when it was one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// A NUL byte: not a source file.
    Binary,
    /// Over `--max-file-size`.
    TooLarge,
    /// The file or folder could not be read.
    Unreadable,
    /// A symbolic link that loops back to an ancestor (not followed).
    SymlinkLoop,
    /// A symbolic link to nothing.
    DanglingSymlink,
    /// The CUDA front end failed on the file (a fault, not a parse error).
    ParseFailed,
    /// The cuda module could not isolate a kernel.
    IsolationFailed,
    /// Not UTF-8 (older versions; text is now decoded lossily and kept).
    NotUtf8,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Binary => "binary",
            SkipReason::TooLarge => "too_large",
            SkipReason::Unreadable => "unreadable",
            SkipReason::SymlinkLoop => "symlink_loop",
            SkipReason::DanglingSymlink => "dangling_symlink",
            SkipReason::ParseFailed => "parse_failed",
            SkipReason::IsolationFailed => "isolation_failed",
            SkipReason::NotUtf8 => "not_utf8",
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a kernel found no partner. Written as the sentence [`fmt::Display`] gives (the
/// JSONL keeps the text it always had) and read back by parsing that sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum UnpairedReason {
    /// An optimized variant no naive variant of the benchmark is paired with (the naive
    /// variants there listed).
    NoNaive {
        optimized: String,
        naive_here: Vec<String>,
    },
    /// No kernel of the naive variant(s) pairs with this one by name, parameters or file
    /// role.
    NoMatch { variants: Vec<String> },
    /// A naive kernel whose variant no optimized variant is paired with.
    NoOptimizedVariant { naive: String },
    /// A member of a numbered series in one file (`reduceN`) whose parameter types
    /// differ from the other members'.
    SeriesParamsDiffer { series: String, params: String },
    /// Named as the optimized form of a naive kernel beside it (`sgemm_opt` of
    /// `sgemm_naive`), but the parameters differ.
    NamingParamsDiffer { stem: String, naive: String },
    /// One version of a progression series (`reduceN`) alone with its parameters.
    VersionParamsDiffer {
        version: String,
        series: String,
        params: String,
    },
    /// One version of a series whose host launcher cannot be used (a library call, a
    /// host loop, a launch of something that is not a kernel of the file).
    VersionUnusable {
        version: String,
        series: String,
        why: String,
    },
    /// A numbered-series candidate (`step_2` → `step_4`) refused before any GPU time: the
    /// two bodies do not compute the same thing (they write different outputs), so the
    /// numbers name steps of one algorithm, not versions of one computation. `slow` is the
    /// candidate's slow side; this record's kernel is its fast side.
    NotAProgression { slow: String, why: String },
    /// A sentence no variant above reads (an older kernelpair's), kept as written.
    Other(String),
}

impl UnpairedReason {
    /// The reason's code, where one exists (`not_a_progression`).
    pub fn code(&self) -> Option<&'static str> {
        matches!(self, UnpairedReason::NotAProgression { .. }).then_some(NOT_A_PROGRESSION)
    }
}

const NO_NAIVE_HEAD: &str = "no naive variant pairs with `";
const NO_NAIVE_MID: &str = "` (naive variants here: ";
const SERIES_HEAD: &str = "in the series ";
const SERIES_MID: &str = ", but its parameters (";
const SERIES_TAIL: &str = ") differ from the other members'";
const NAMING_HEAD: &str = "named as an optimized ";
const NAMING_MID: &str = " beside the naive ";
const NAMING_TAIL: &str = ", but the parameters differ";
const NO_MATCH_HEAD: &str = "no kernel in ";
const NO_MATCH_TAIL: &str = " matches by name, parameters or file role";
const NO_OPT_HEAD: &str = "no optimized variant pairs with `";
const PARAMS_HEAD: &str = ": its parameters (";
const PARAMS_TAIL: &str = ") differ from the other versions'";
/// The code of [`UnpairedReason::NotAProgression`], which opens its sentence.
pub const NOT_A_PROGRESSION: &str = "not_a_progression";
const NOT_PROG_HEAD: &str = "not_a_progression: after `";
const NOT_PROG_MID: &str = "`, ";

impl fmt::Display for UnpairedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnpairedReason::NoNaive {
                optimized,
                naive_here,
            } => write!(
                f,
                "{NO_NAIVE_HEAD}{optimized}{NO_NAIVE_MID}{})",
                naive_here.join(", ")
            ),
            UnpairedReason::SeriesParamsDiffer { series, params } => {
                write!(f, "{SERIES_HEAD}{series}{SERIES_MID}{params}{SERIES_TAIL}")
            }
            UnpairedReason::NamingParamsDiffer { stem, naive } => {
                write!(f, "{NAMING_HEAD}{stem}{NAMING_MID}{naive}{NAMING_TAIL}")
            }
            UnpairedReason::NoMatch { variants } => {
                write!(f, "{NO_MATCH_HEAD}{}{NO_MATCH_TAIL}", variants.join(", "))
            }
            UnpairedReason::NoOptimizedVariant { naive } => write!(f, "{NO_OPT_HEAD}{naive}`"),
            UnpairedReason::VersionParamsDiffer {
                version,
                series,
                params,
            } => write!(
                f,
                "version {version} of {series}{PARAMS_HEAD}{params}{PARAMS_TAIL}"
            ),
            UnpairedReason::VersionUnusable {
                version,
                series,
                why,
            } => write!(f, "version {version} of {series} {why}"),
            UnpairedReason::NotAProgression { slow, why } => {
                write!(f, "{NOT_PROG_HEAD}{slow}{NOT_PROG_MID}{why}")
            }
            UnpairedReason::Other(s) => f.write_str(s),
        }
    }
}

impl From<UnpairedReason> for String {
    fn from(r: UnpairedReason) -> String {
        r.to_string()
    }
}

impl From<String> for UnpairedReason {
    fn from(s: String) -> UnpairedReason {
        let list = |l: &str| -> Vec<String> {
            l.split(", ")
                .filter(|v| !v.is_empty())
                .map(String::from)
                .collect()
        };
        if let Some((o, n)) = s
            .strip_prefix(NO_NAIVE_HEAD)
            .and_then(|r| r.strip_suffix(')'))
            .and_then(|r| r.split_once(NO_NAIVE_MID))
        {
            return UnpairedReason::NoNaive {
                optimized: o.into(),
                naive_here: list(n),
            };
        }
        if let Some((series, params)) = s
            .strip_prefix(SERIES_HEAD)
            .and_then(|r| r.strip_suffix(SERIES_TAIL))
            .and_then(|r| r.split_once(SERIES_MID))
        {
            return UnpairedReason::SeriesParamsDiffer {
                series: series.into(),
                params: params.into(),
            };
        }
        if let Some((stem, naive)) = s
            .strip_prefix(NAMING_HEAD)
            .and_then(|r| r.strip_suffix(NAMING_TAIL))
            .and_then(|r| r.split_once(NAMING_MID))
        {
            return UnpairedReason::NamingParamsDiffer {
                stem: stem.into(),
                naive: naive.into(),
            };
        }
        if let Some(v) = s
            .strip_prefix(NO_MATCH_HEAD)
            .and_then(|r| r.strip_suffix(NO_MATCH_TAIL))
        {
            return UnpairedReason::NoMatch { variants: list(v) };
        }
        if let Some(n) = s
            .strip_prefix(NO_OPT_HEAD)
            .and_then(|r| r.strip_suffix('`'))
        {
            return UnpairedReason::NoOptimizedVariant { naive: n.into() };
        }
        if let Some((slow, why)) = s
            .strip_prefix(NOT_PROG_HEAD)
            .and_then(|r| r.split_once(NOT_PROG_MID))
        {
            return UnpairedReason::NotAProgression {
                slow: slow.into(),
                why: why.into(),
            };
        }
        // `version V of SERIES…`: names have no spaces.
        let version = s.strip_prefix("version ").and_then(|r| {
            let (version, r) = r.split_once(" of ")?;
            let end = r.find([' ', ':'])?;
            Some((version, &r[..end], &r[end..]))
        });
        match version {
            Some((version, series, rest)) if !version.contains(' ') => {
                match rest
                    .strip_prefix(PARAMS_HEAD)
                    .and_then(|p| p.strip_suffix(PARAMS_TAIL))
                {
                    Some(params) => UnpairedReason::VersionParamsDiffer {
                        version: version.into(),
                        series: series.into(),
                        params: params.into(),
                    },
                    None => match rest.strip_prefix(' ') {
                        Some(why) => UnpairedReason::VersionUnusable {
                            version: version.into(),
                            series: series.into(),
                            why: why.into(),
                        },
                        None => UnpairedReason::Other(s),
                    },
                }
            }
            _ => UnpairedReason::Other(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each reason is written as its sentence and read back as the same variant; a
    /// sentence of no known shape is kept as written.
    #[test]
    fn unpaired_reasons_round_trip_through_their_sentences() {
        let cases = [
            (
                UnpairedReason::NoNaive {
                    optimized: "cuda".into(),
                    naive_here: vec![],
                },
                "no naive variant pairs with `cuda` (naive variants here: )",
            ),
            (
                UnpairedReason::NoNaive {
                    optimized: "cuda".into(),
                    naive_here: vec!["base".into(), "cpu".into()],
                },
                "no naive variant pairs with `cuda` (naive variants here: base, cpu)",
            ),
            (
                UnpairedReason::NotAProgression {
                    slow: "step_2".into(),
                    why: "it writes (a) and `step_4` writes (b): different outputs".into(),
                },
                "not_a_progression: after `step_2`, it writes (a) and `step_4` writes (b): different outputs",
            ),
            (
                UnpairedReason::SeriesParamsDiffer {
                    series: "reduceN".into(),
                    params: "T *, int".into(),
                },
                "in the series reduceN, but its parameters (T *, int) differ from the other members'",
            ),
            (
                UnpairedReason::NamingParamsDiffer {
                    stem: "sgemm".into(),
                    naive: "sgemm_naive".into(),
                },
                "named as an optimized sgemm beside the naive sgemm_naive, but the parameters differ",
            ),
            (
                UnpairedReason::NoMatch {
                    variants: vec!["cuda_base".into(), "cuda_fermi".into()],
                },
                "no kernel in cuda_base, cuda_fermi matches by name, parameters or file role",
            ),
            (
                UnpairedReason::NoOptimizedVariant {
                    naive: "cuda_base".into(),
                },
                "no optimized variant pairs with `cuda_base`",
            ),
            (
                UnpairedReason::VersionParamsDiffer {
                    version: "reduce3".into(),
                    series: "reduceN".into(),
                    params: "T *, int".into(),
                },
                "version reduce3 of reduceN: its parameters (T *, int) differ from the other versions'",
            ),
            (
                UnpairedReason::VersionUnusable {
                    version: "softmax_forward2".into(),
                    series: "softmax_forwardN".into(),
                    why: "launches cublasSgemm, which is not a kernel of this file".into(),
                },
                "version softmax_forward2 of softmax_forwardN launches cublasSgemm, which is not a kernel of this file",
            ),
            (
                UnpairedReason::Other("paired by hand elsewhere".into()),
                "paired by hand elsewhere",
            ),
        ];
        for (reason, text) in cases {
            let json = serde_json::to_string(&reason).unwrap();
            assert_eq!(json, serde_json::to_string(text).unwrap());
            let back: UnpairedReason = serde_json::from_str(&json).unwrap();
            assert_eq!(back, reason, "{text}");
        }
    }

    #[test]
    fn skip_reasons_are_the_strings_they_were() {
        for (r, s) in [
            (SkipReason::Binary, "binary"),
            (SkipReason::SymlinkLoop, "symlink_loop"),
            (SkipReason::IsolationFailed, "isolation_failed"),
        ] {
            assert_eq!(serde_json::to_string(&r).unwrap(), format!("\"{s}\""));
            assert_eq!(r.to_string(), s);
            assert_eq!(
                serde_json::from_str::<SkipReason>(&format!("\"{s}\"")).unwrap(),
                r
            );
        }
        assert!(serde_json::from_str::<SkipReason>("\"bored\"").is_err());
    }
}
