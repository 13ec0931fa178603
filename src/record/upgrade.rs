//! Reading lines of older record versions: version 1 and 2 pair lines become version 3
//! pairs (one `slow` slot instead of `slow` + `origin` + `synth`, the id kept from before
//! synth); other record types did not change shape. Anything that cannot be converted is
//! refused with a message naming the version.

use super::{Line, RECORD_VERSION};
use serde::Deserialize;
use serde_json::{Map, Value};

/// One JSONL line of any version this tool reads, as the current [`Line`].
pub fn parse_line(text: &str) -> Result<Line, LineError> {
    #[derive(Deserialize)]
    struct Head {
        version: u32,
    }
    let head: Head = serde_json::from_str(text).map_err(|e| LineError::Parse(e.to_string()))?;
    if head.version > RECORD_VERSION {
        return Err(LineError::Newer(head.version));
    }
    if head.version == RECORD_VERSION {
        return serde_json::from_str(text).map_err(|e| LineError::Parse(e.to_string()));
    }
    let mut v: Value = serde_json::from_str(text).map_err(|e| LineError::Parse(e.to_string()))?;
    if v["type"] == "pair" {
        let data = v["data"].take();
        v["data"] = pair_v2(data).map_err(|message| LineError::Old {
            version: head.version,
            message,
        })?;
    }
    let mut line: Line = serde_json::from_value(v).map_err(|e| LineError::Old {
        version: head.version,
        message: e.to_string(),
    })?;
    line.version = RECORD_VERSION;
    Ok(line)
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LineError {
    #[error("not a kernelpair record: {0}")]
    Parse(String),
    #[error("record version {0} is newer than this tool understands ({RECORD_VERSION})")]
    Newer(u32),
    #[error("record version {version} cannot be converted to version {RECORD_VERSION}: {message}")]
    Old { version: u32, message: String },
}

/// A version 1/2 pair object as a version 3 one.
fn pair_v2(data: Value) -> Result<Value, String> {
    let Value::Object(mut p) = data else {
        return Err("a pair's data is not an object".into());
    };
    let origin = p.remove("origin").ok_or("the pair has no origin")?;
    let kind = origin["kind"].as_str().unwrap_or_default().to_string();
    let unit = p.remove("slow");
    let synth = p.remove("synth").map(outcome_v2);
    let slow = match (kind.as_str(), unit) {
        ("natural", Some(unit)) => obj([("kind", "natural".into()), ("unit", unit)]),
        ("pending", None) => {
            let mut slot = obj([("kind", "pending".into())]);
            if let Some((outcome, _)) = synth {
                slot["rejected"] = outcome;
            }
            slot
        }
        ("synthesized", Some(unit)) => {
            // The outcome synth wrote beside the pair, or one rebuilt from the origin's
            // copy of its fields; the id goes back to the one the pending pair had.
            let outcome = match synth {
                Some((outcome, pending_id)) => {
                    if let Some(id) = pending_id {
                        p.insert("id".into(), id);
                    }
                    outcome
                }
                None => {
                    let mut o = origin.clone();
                    o.as_object_mut().expect("origin is an object").remove("kind");
                    o
                }
            };
            obj([
                ("kind", "synthesized".into()),
                ("unit", unit),
                ("outcome", outcome),
            ])
        }
        (kind, unit) => {
            return Err(format!(
                "origin `{kind}` with {} slow unit",
                if unit.is_some() { "a" } else { "no" }
            ))
        }
    };
    p.insert("slow".into(), slow);
    Ok(Value::Object(p))
}

/// A version 1/2 synth outcome without its `accepted` flag (the slot says that now) and
/// its `pending_id` (returned: the pair's id from before synth).
fn outcome_v2(mut o: Value) -> (Value, Option<Value>) {
    let m = o.as_object_mut();
    let pending_id = m.and_then(|m| {
        m.remove("accepted");
        m.remove("pending_id")
    });
    (o, pending_id.filter(|v| v.as_str().is_some_and(|s| !s.is_empty())))
}

fn obj<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(Map::from_iter(
        fields.into_iter().map(|(k, v)| (k.to_string(), v)),
    ))
}
