//! Progression rules (`[pairing.progression]` of a suite description): which kernels of one
//! file form a numbered series or a naive/optimized naming pair. The description reads and
//! checks them; `pairing` applies them.

use regex::Regex;
use serde::Deserialize;

/// `[pairing.progression]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProgression {
    /// Which steps of a numbered series pair (docs/pairing.md says why `both`).
    #[serde(default)]
    pub steps: Steps,
    /// Regexes naming a numbered series member: named groups `stem` and `n` (digits),
    /// optional `rest`; members share `stem` and `rest` and differ in `n`.
    #[serde(default)]
    pub numbered: Vec<String>,
    /// Words (case-insensitive, whole words of a snake_case or camelCase name) marking a
    /// naive kernel: `naive`, `basic`, `simple`.
    #[serde(default)]
    pub slow_words: Vec<String>,
    /// Words marking an optimized kernel; a CamelCase entry (`NoBankConflicts`) matches
    /// its words in sequence.
    #[serde(default)]
    pub fast_words: Vec<String>,
    /// Also pair one kernel name across files whose paths differ in one folder or file
    /// name, where that name marks the naive side and the other the optimized one
    /// (docs/pairing.md, "Sibling variants").
    #[serde(default)]
    pub siblings: bool,
}

/// Which steps of a numbered series become pairs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Steps {
    /// Each member against the one before it (`reduce2` vs `reduce1`).
    Predecessor,
    /// The first member against each later one (`reduce2` vs `reduce0`).
    First,
    /// Both; the step from the first to the second is one pair.
    #[default]
    Both,
}

/// Checked progression rules.
#[derive(Debug, Clone)]
pub struct Progression {
    pub steps: Steps,
    numbered: Vec<Regex>,
    pub(super) slow_words: Vec<Vec<String>>,
    pub(super) fast_words: Vec<Vec<String>>,
    pub siblings: bool,
}

/// The words of an identifier: `transposeNoBankConflicts` → transpose, no, bank,
/// conflicts; `softmax_forward_kernel1` → softmax, forward, kernel1. Lowercased.
pub fn name_words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in name.split('_').filter(|p| !p.is_empty()) {
        let mut cur = String::new();
        let chars: Vec<char> = part.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            let boundary = c.is_uppercase()
                && i > 0
                && (chars[i - 1].is_lowercase()
                    || chars.get(i + 1).is_some_and(|n| n.is_lowercase())
                        && chars[i - 1].is_uppercase());
            if boundary && !cur.is_empty() {
                out.push(std::mem::take(&mut cur).to_lowercase());
            }
            cur.push(c);
        }
        if !cur.is_empty() {
            out.push(cur.to_lowercase());
        }
    }
    out
}

impl Progression {
    pub fn compile(raw: RawProgression) -> Result<Progression, String> {
        let mut numbered = Vec::new();
        for (i, r) in raw.numbered.iter().enumerate() {
            let re =
                Regex::new(r).map_err(|e| format!("pairing.progression.numbered[{i}]: {e}"))?;
            let names: Vec<&str> = re.capture_names().flatten().collect();
            if !names.contains(&"stem") || !names.contains(&"n") {
                return Err(format!(
                    "pairing.progression.numbered[{i}]: the regex needs named groups `stem` and `n`"
                ));
            }
            numbered.push(re);
        }
        let words = |v: &[String], key: &str| -> Result<Vec<Vec<String>>, String> {
            v.iter()
                .map(|w| {
                    let ws = name_words(w);
                    if ws.is_empty() {
                        Err(format!("pairing.progression.{key}: empty word {w:?}"))
                    } else {
                        Ok(ws)
                    }
                })
                .collect()
        };
        Ok(Progression {
            steps: raw.steps,
            numbered,
            slow_words: words(&raw.slow_words, "slow_words")?,
            fast_words: words(&raw.fast_words, "fast_words")?,
            siblings: raw.siblings,
        })
    }

    /// `(stem, rest, n)` of a numbered series member, by the first regex that matches.
    pub(super) fn series_key(&self, name: &str) -> Option<(String, String, u64)> {
        self.numbered.iter().find_map(|re| {
            let c = re.captures(name)?;
            let n = c.name("n")?.as_str().parse().ok()?;
            let rest = c.name("rest").map(|m| m.as_str()).unwrap_or("");
            Some((c["stem"].to_string(), rest.to_string(), n))
        })
    }

    /// The stem of a name holding one of `words` (the name's other words joined by `_`).
    pub(super) fn named_stem(words: &[Vec<String>], name: &str) -> Option<String> {
        let nw = name_words(name);
        for w in words {
            if let Some(i) =
                (0..=nw.len().saturating_sub(w.len())).find(|&i| nw[i..].starts_with(w))
            {
                let mut rest = nw[..i].to_vec();
                rest.extend_from_slice(&nw[i + w.len()..]);
                if !rest.is_empty() {
                    return Some(rest.join("_"));
                }
            }
        }
        None
    }
}

/// The stem of a path component (a folder name or a file stem) holding one of `words`:
/// its other words joined by `_`, empty for a component that is only the word
/// (`baseline`, `tiled`). None when it holds none.
pub(super) fn component_stem(words: &[Vec<String>], component: &str) -> Option<String> {
    let nw = name_words(component);
    words.iter().find_map(|w| {
        let i = (0..=nw.len().saturating_sub(w.len())).find(|&i| nw[i..].starts_with(w))?;
        let mut rest = nw[..i].to_vec();
        rest.extend_from_slice(&nw[i + w.len()..]);
        Some(rest.join("_"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_words_split_snake_and_camel_case() {
        assert_eq!(
            name_words("transposeNoBankConflicts"),
            ["transpose", "no", "bank", "conflicts"]
        );
        assert_eq!(
            name_words("softmax_forward_kernel1"),
            ["softmax", "forward", "kernel1"]
        );
        assert_eq!(name_words("MMTiled"), ["mm", "tiled"]);
    }
}
