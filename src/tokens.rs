//! Token counting for export's length filter and synth's prompt budget: an embedded BPE
//! (tiktoken's o200k_base by default, cl100k_base on request) or a Hugging Face
//! `tokenizer.json` (the `hf-tokenizers` feature, on by default) counted with the model's
//! own vocabulary.
//!
//! A build without that feature cannot read a `tokenizer.json`, so counting falls back to
//! o200k_base and the fallback is stated in the filter report and the dataset card.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("embedded tokenizer {name}: {message}")]
    Embedded { name: String, message: String },
    #[error("tokenizer file {path}: {message}")]
    File { path: String, message: String },
}

pub struct Tokenizer {
    kind: Kind,
    /// What counted, as written to the report and card (`o200k_base (tiktoken-rs)`).
    pub description: String,
    /// Set when the requested tokenizer could not be used and another one counted instead.
    pub fallback_note: Option<String>,
}

enum Kind {
    Bpe(Box<tiktoken_rs::CoreBPE>),
    #[cfg(feature = "hf-tokenizers")]
    Hf(Box<tokenizers::Tokenizer>),
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("description", &self.description)
            .finish()
    }
}

pub const DEFAULT: &str = "o200k_base";

impl Tokenizer {
    /// `spec` is `o200k_base`, `cl100k_base`, or a path to a Hugging Face tokenizer.json.
    pub fn load(spec: Option<&str>) -> Result<Tokenizer, TokenizerError> {
        let spec = spec.unwrap_or(DEFAULT);
        match spec {
            "o200k_base" | "cl100k_base" => Self::embedded(spec, None),
            path => Self::from_file(Path::new(path)),
        }
    }

    fn embedded(name: &str, fallback_note: Option<String>) -> Result<Tokenizer, TokenizerError> {
        let bpe = match name {
            "cl100k_base" => tiktoken_rs::cl100k_base(),
            _ => tiktoken_rs::o200k_base(),
        }
        .map_err(|e| TokenizerError::Embedded {
            name: name.to_string(),
            message: e.to_string(),
        })?;
        Ok(Tokenizer {
            kind: Kind::Bpe(Box::new(bpe)),
            description: format!("{name} (tiktoken-rs, embedded)"),
            fallback_note,
        })
    }

    #[cfg(feature = "hf-tokenizers")]
    fn from_file(path: &Path) -> Result<Tokenizer, TokenizerError> {
        let t = tokenizers::Tokenizer::from_file(path).map_err(|e| TokenizerError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Ok(Tokenizer {
            kind: Kind::Hf(Box::new(t)),
            description: format!("{} (Hugging Face tokenizers)", file_label(path)),
            fallback_note: None,
        })
    }

    #[cfg(not(feature = "hf-tokenizers"))]
    fn from_file(path: &Path) -> Result<Tokenizer, TokenizerError> {
        if !path.is_file() {
            return Err(TokenizerError::File {
                path: path.display().to_string(),
                message: "not a file (give o200k_base, cl100k_base or a tokenizer.json)".into(),
            });
        }
        let note = format!(
            "{} was requested, but this build has no `hf-tokenizers` feature; \
             tokens were counted with {DEFAULT} instead",
            file_label(path)
        );
        tracing::warn!("{note}");
        Self::embedded(DEFAULT, Some(note))
    }

    /// Number of tokens in `text` (special-token text counts as ordinary text).
    pub fn count(&self, text: &str) -> usize {
        match &self.kind {
            Kind::Bpe(b) => b.encode_ordinary(text).len(),
            #[cfg(feature = "hf-tokenizers")]
            Kind::Hf(t) => t.encode(text, false).map(|e| e.len()).unwrap_or(usize::MAX),
        }
    }
}

/// The file's name only: the card must not leak the user's directory layout.
fn file_label(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_counts_grow_with_text_and_differ_between_vocabularies() {
        let t = Tokenizer::load(None).unwrap();
        assert!(t.description.starts_with("o200k_base"));
        let short = t.count("__global__ void k(float *a) { a[0] = 1.0f; }");
        let long = t.count(&"__global__ void k(float *a) { a[0] = 1.0f; }\n".repeat(10));
        assert!(short > 5 && short < 40, "{short}");
        assert!(long >= 9 * short, "{long} vs {short}");
        assert_eq!(t.count(""), 0);
    }

    #[cfg(not(feature = "hf-tokenizers"))]
    #[test]
    fn tokenizer_json_without_the_feature_falls_back_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tokenizer.json");
        std::fs::write(&p, "{}").unwrap();
        let t = Tokenizer::load(Some(p.to_str().unwrap())).unwrap();
        let note = t.fallback_note.as_deref().unwrap();
        assert!(
            note.contains("tokenizer.json") && note.contains("o200k_base"),
            "{note}"
        );
        assert!(
            !note.contains(dir.path().to_str().unwrap()),
            "no full path: {note}"
        );
        let e = Tokenizer::load(Some("/no/such/tokenizer.json")).unwrap_err();
        assert!(e.to_string().contains("/no/such/tokenizer.json"));
    }

    #[cfg(feature = "hf-tokenizers")]
    #[test]
    fn a_hugging_face_tokenizer_json_counts_with_its_own_vocabulary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tokenizer.json");
        // A word-level tokenizer: one token per whitespace-separated word or punctuation.
        std::fs::write(
            &p,
            r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
               "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,
               "decoder":null,"model":{"type":"WordLevel","vocab":{"[UNK]":0,"a":1},"unk_token":"[UNK]"}}"#,
        )
        .unwrap();
        let t = Tokenizer::load(Some(p.to_str().unwrap())).unwrap();
        assert!(t.fallback_note.is_none());
        assert_eq!(t.description, "tokenizer.json (Hugging Face tokenizers)");
        assert_eq!(t.count("a b c ;"), 4);
    }
}
