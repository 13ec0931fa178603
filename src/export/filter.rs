//! Quality filters: exact and near-duplicate removal over normalized kernel tokens
//! (MinHash over token shingles, LSH banding for candidates), with a report of what went.

use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Tokens per shingle: long enough that shared boilerplate (`int i = blockIdx.x *`) does not
/// make unrelated kernels look alike, short enough that a renamed variable changes few shingles.
const SHINGLE: usize = 5;
/// MinHash signature length = BANDS × ROWS. 32 bands of 4 rows find pairs with Jaccard ≥ 0.7
/// as candidates with probability > 0.999, and the signature then estimates the Jaccard
/// within about ±0.04.
const BANDS: usize = 32;
const ROWS: usize = 4;
const PERMS: usize = BANDS * ROWS;

/// Source text → tokens with comments and whitespace gone and every literal kept, so two
/// kernels that differ only in layout or comments have the same token sequence.
pub fn normalized_tokens(source: &str) -> Vec<String> {
    let b = source.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if let Some(end) = crate::cuda::lex::comment_end(b, i) {
            i = end;
        } else if c.is_ascii_alphanumeric() || c == b'_' || (c == b'.' && next_is_digit(b, i)) {
            let start = i;
            while i < b.len()
                && (b[i].is_ascii_alphanumeric()
                    || b[i] == b'_'
                    || (b[i] == b'.' && number(b, start)))
            {
                i += 1;
            }
            out.push(source[start..i].to_string());
        } else if c == b'"' || c == b'\'' {
            let start = i;
            i += 1;
            // An unterminated literal (an apostrophe in prose) ends at the line's end.
            while i < b.len() && b[i] != c && b[i] != b'\n' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = i.min(b.len());
            if i < b.len() && b[i] == c {
                i += 1;
            }
            out.push(String::from_utf8_lossy(&b[start..i]).into_owned());
        } else {
            // Punctuation: the longest of the multi-character operators that matter for code shape.
            const OPS: &[&str] = &[
                "<<=", ">>=", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
                "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "::",
            ];
            let op = OPS
                .iter()
                .find(|op| b[i..].starts_with(op.as_bytes()))
                .map(|op| op.len())
                .unwrap_or_else(|| utf8_len(c));
            out.push(String::from_utf8_lossy(&b[i..(i + op).min(b.len())]).into_owned());
            i += op;
        }
    }
    out
}

fn next_is_digit(b: &[u8], i: usize) -> bool {
    b.get(i + 1).is_some_and(|c| c.is_ascii_digit())
}

fn number(b: &[u8], start: usize) -> bool {
    b[start].is_ascii_digit() || b[start] == b'.'
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// 64-bit FNV-1a: stable across platforms and Rust releases (std's hasher is not).
fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The MinHash signature of a token sequence's shingles.
pub fn minhash(tokens: &[String]) -> Vec<u64> {
    let shingles: Vec<u64> = if tokens.len() <= SHINGLE {
        vec![fnv1a(tokens.join("\u{1f}").into_bytes())]
    } else {
        tokens
            .windows(SHINGLE)
            .map(|w| fnv1a(w.join("\u{1f}").into_bytes()))
            .collect()
    };
    (0..PERMS as u64)
        .map(|p| {
            let salt = splitmix64(p.wrapping_add(0x5eed));
            shingles
                .iter()
                .map(|s| splitmix64(s ^ salt))
                .min()
                .unwrap_or(u64::MAX)
        })
        .collect()
}

pub fn estimated_jaccard(a: &[u64], b: &[u64]) -> f64 {
    let same = a.iter().zip(b).filter(|(x, y)| x == y).count();
    same as f64 / a.len().max(1) as f64
}

/// Why a sample was dropped as a duplicate, for the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Duplicate {
    pub id: String,
    pub duplicate_of: String,
    /// `exact` (same normalized tokens) or `near` (estimated Jaccard ≥ the threshold).
    pub kind: &'static str,
    /// Estimated Jaccard similarity of the shingle sets, rounded to 3 decimals.
    pub similarity: f64,
}

/// Decide which samples stay. `items` are (id, text) in priority order: an item is dropped
/// when it duplicates an earlier kept one. Returns the kept flags and the duplicates.
pub fn dedup(items: &[(String, String)], threshold: f64) -> (Vec<bool>, Vec<Duplicate>) {
    dedup_grouped(items, &[], threshold)
}

/// [`dedup`], where items of one group (`groups[i]`, when given: the candidates of one
/// kernel exported with `--all-candidates`) are never near duplicates of each other, only
/// exact ones: they differ on purpose, in one technique each.
pub fn dedup_grouped(
    items: &[(String, String)],
    groups: &[String],
    threshold: f64,
) -> (Vec<bool>, Vec<Duplicate>) {
    let mut keep = vec![true; items.len()];
    let mut dups = Vec::new();
    let mut exact: HashMap<Vec<String>, usize> = HashMap::new();
    let mut sigs: Vec<Option<Vec<u64>>> = vec![None; items.len()];
    // band → bucket hash → kept items in it
    let mut buckets: Vec<HashMap<u64, Vec<usize>>> = vec![HashMap::new(); BANDS];
    for (i, (id, text)) in items.iter().enumerate() {
        let tokens = normalized_tokens(text);
        if let Some(&j) = exact.get(&tokens) {
            keep[i] = false;
            dups.push(Duplicate {
                id: id.clone(),
                duplicate_of: items[j].0.clone(),
                kind: "exact",
                similarity: 1.0,
            });
            continue;
        }
        let sig = minhash(&tokens);
        let band_keys: Vec<u64> = (0..BANDS)
            .map(|b| {
                fnv1a(
                    sig[b * ROWS..(b + 1) * ROWS]
                        .iter()
                        .flat_map(|v| v.to_le_bytes()),
                )
            })
            .collect();
        // Candidates in index order, so the reported original is the earliest kept one.
        let mut candidates: Vec<usize> = band_keys
            .iter()
            .enumerate()
            .flat_map(|(b, k)| buckets[b].get(k).into_iter().flatten().copied())
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        let same_group = |j: usize| groups.len() == items.len() && groups[i] == groups[j];
        let hit = candidates
            .into_iter()
            .filter(|&j| !same_group(j))
            .find_map(|j| {
                let s = estimated_jaccard(&sig, sigs[j].as_ref().expect("kept items have a sig"));
                (s >= threshold).then_some((j, s))
            });
        if let Some((j, s)) = hit {
            keep[i] = false;
            dups.push(Duplicate {
                id: id.clone(),
                duplicate_of: items[j].0.clone(),
                kind: "near",
                similarity: (s * 1000.0).round() / 1000.0,
            });
            continue;
        }
        exact.insert(tokens, i);
        for (b, k) in band_keys.into_iter().enumerate() {
            buckets[b].entry(k).or_default().push(i);
        }
        sigs[i] = Some(sig);
    }
    (keep, dups)
}

/// A sample over the token limit, for the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TooLong {
    pub id: String,
    pub tokens: usize,
}

/// What the filters removed and why; written as `filter_report.json` and summarized in the card.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FilterReport {
    /// Pairs in the input, and how many were left out before filtering, by reason
    /// (`identical`, `missing_slow`, `unverified:<status>`, `not_redistributable`).
    pub input_pairs: usize,
    pub excluded: BTreeMap<String, usize>,
    pub near_duplicate_threshold: f64,
    pub duplicates: Vec<Duplicate>,
    pub max_tokens: usize,
    pub tokenizer: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokenizer_note: Option<String>,
    pub too_long: Vec<TooLong>,
    /// Samples the training text lint left out (a defect in the pair's own code), each
    /// with its first finding.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lint_left_out: Vec<String>,
    pub kept: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAXPY: &str = "__global__ void saxpy(int n, float a, const float *x, float *y) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x; // index\n  if (i < n) y[i] = a * x[i] + y[i];\n}\n";

    #[test]
    fn normalization_ignores_layout_and_comments_but_not_code() {
        let reformatted = "__global__ void saxpy(int n,float a,const float*x,float*y){/* c */int i=blockIdx.x*blockDim.x+threadIdx.x;if(i<n)y[i]=a*x[i]+y[i];}";
        assert_eq!(normalized_tokens(SAXPY), normalized_tokens(reformatted));
        let t = normalized_tokens("a <<= 2.5f; b->c; s = \"x y\"; x=.5");
        assert_eq!(normalized_tokens("it's\nx y")[..2], ["it", "'s"]);
        assert_eq!(normalized_tokens("it's\nx y")[2..], ["x", "y"]);
        assert_eq!(
            t,
            [
                "a", "<<=", "2.5f", ";", "b", "->", "c", ";", "s", "=", "\"x y\"", ";", "x", "=",
                ".5"
            ]
        );
        assert_ne!(
            normalized_tokens(SAXPY),
            normalized_tokens(&SAXPY.replace("a *", "a +"))
        );
    }

    #[test]
    fn exact_and_near_duplicates_are_found_and_distinct_kernels_kept() {
        let near = SAXPY.replace("saxpy", "saxpy2");
        let distinct = "__global__ void reduce(float *in, float *out) {\n extern __shared__ float s[];\n unsigned t = threadIdx.x;\n s[t] = in[blockIdx.x * blockDim.x + t];\n __syncthreads();\n for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) { if (t < k) s[t] += s[t + k]; __syncthreads(); }\n if (t == 0) out[blockIdx.x] = s[0];\n}\n";
        // Pad so one renamed identifier changes a small share of the shingles.
        let body = |s: &str| format!("{s}\n{}", distinct.replace("reduce", "helper"));
        let items = vec![
            ("a".to_string(), body(SAXPY)),
            (
                "b".to_string(),
                body(&SAXPY.replace("// index", "// other comment")),
            ),
            ("c".to_string(), body(&near)),
            ("d".to_string(), distinct.to_string()),
        ];
        let (keep, dups) = dedup(&items, 0.7);
        assert_eq!(keep, [true, false, false, true], "{dups:?}");
        assert_eq!(dups[0].kind, "exact");
        assert_eq!(dups[0].duplicate_of, "a");
        assert_eq!(dups[1].kind, "near");
        assert!(
            dups[1].similarity >= 0.7 && dups[1].similarity < 1.0,
            "{dups:?}"
        );
        // A threshold of 1.0 keeps the near-duplicate.
        let (keep, _) = dedup(&items, 1.0);
        assert_eq!(keep, [true, false, true, true]);
        // Candidates of one kernel (one group) are never near duplicates of each other,
        // only exact ones; another group's near copy still is.
        let groups = |g: [&str; 4]| g.map(String::from).to_vec();
        let (keep, _) = dedup_grouped(&items, &groups(["k", "k", "k", "d"]), 0.7);
        assert_eq!(keep, [true, false, true, true]);
        let (keep, _) = dedup_grouped(&items, &groups(["k", "k", "j", "d"]), 0.7);
        assert_eq!(keep, [true, false, false, true]);
    }

    #[test]
    fn jaccard_estimate_tracks_the_true_overlap() {
        let a: Vec<String> = (0..200).map(|i| format!("t{i}")).collect();
        let mut b = a.clone();
        for t in b.iter_mut().skip(100) {
            t.push('x');
        }
        // Shingles: 196 each, 96 shared → Jaccard 96 / 296 ≈ 0.32.
        let j = estimated_jaccard(&minhash(&a), &minhash(&b));
        assert!((j - 0.32).abs() < 0.1, "{j}");
        assert_eq!(estimated_jaccard(&minhash(&a), &minhash(&a)), 1.0);
    }
}
