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
                    o.as_object_mut()
                        .expect("origin is an object")
                        .remove("kind");
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
    (
        o,
        pending_id.filter(|v| v.as_str().is_some_and(|s| !s.is_empty())),
    )
}

fn obj<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(Map::from_iter(
        fields.into_iter().map(|(k, v)| (k.to_string(), v)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{
        KernelUnit, Pair, PairRule, Record, Slow, SynthReason, UnitBody, UnitPlace,
    };
    use serde_json::json;

    fn unit(variant: &str, source: &str) -> Value {
        let place = UnitPlace {
            suite: "s",
            benchmark: "b",
            variant,
            path: "k.cu",
        };
        let body = UnitBody {
            kernel: "k".into(),
            line: 1,
            params: vec![],
            template_params: vec![],
            source: source.into(),
            symbol: "k".into(),
            pulled: Default::default(),
            features: Default::default(),
            diagnostics: vec![],
        };
        serde_json::to_value(KernelUnit::new(place, body)).unwrap()
    }

    /// A pair line as versions 1 and 2 wrote it.
    fn old_line(version: u32, extra: Value) -> String {
        let mut data = json!({
            "id": "0123456789abcdef", "suite": "s", "benchmark": "b", "kernel": "k",
            "fast": unit("cuda", "__global__ void k() {}"), "rule": "name_and_params",
        });
        for (k, v) in extra.as_object().unwrap() {
            data[k] = v.clone();
        }
        json!({"version": version, "type": "pair", "data": data}).to_string()
    }

    fn pair(line: &str) -> Pair {
        match parse_line(line).unwrap().record {
            Record::Pair(p) => *p,
            r => panic!("{r:?}"),
        }
    }

    fn outcome(extra: Value) -> Value {
        let mut o = json!({
            "model": "m", "prompt_hash": "h", "attempts": 2, "usage":
            {"prompt_tokens": 10, "completion_tokens": 20}
        });
        for (k, v) in extra.as_object().unwrap() {
            o[k] = v.clone();
        }
        o
    }

    #[test]
    fn old_natural_and_pending_pairs_read_as_one_slot() {
        for version in [1, 2] {
            let slow = unit("cuda_base", "__global__ void k() { }");
            let p = pair(&old_line(
                version,
                json!({"slow": slow, "origin": {"kind": "natural"}}),
            ));
            let Slow::Natural { unit } = &p.slow else {
                panic!("{:?}", p.slow)
            };
            assert_eq!(unit.variant, "cuda_base");
            assert_eq!(p.rule, PairRule::NameAndParams);
            assert_eq!(p.id, "0123456789abcdef");

            let p = pair(&old_line(version, json!({"origin": {"kind": "pending"}})));
            assert_eq!(p.slow, Slow::PENDING);
        }
    }

    #[test]
    fn an_old_rejected_outcome_stays_with_the_pending_slot() {
        let rejected = outcome(json!({
            "accepted": false, "reason": "llm_unreachable", "message": "refused",
            "rejections": [{"attempt": 1, "reason": "host_code", "message": "main()"}],
            "pending_id": "0123456789abcdef"
        }));
        let p = pair(&old_line(
            2,
            json!({"origin": {"kind": "pending"}, "synth": rejected}),
        ));
        let Slow::Pending { rejected: Some(o) } = &p.slow else {
            panic!("{:?}", p.slow)
        };
        assert_eq!(o.reason, Some(SynthReason::LlmUnreachable));
        assert_eq!(o.rejections[0].reason, SynthReason::HostCode);
        assert_eq!(o.attempts, 2);
        assert_eq!(p.id, "0123456789abcdef");
    }

    #[test]
    fn an_old_synthesized_pair_gets_back_its_pending_id() {
        let origin = json!({"kind": "synthesized", "model": "m", "prompt_hash": "h",
                            "attempts": 2, "checks": ["compiles"]});
        let accepted = outcome(json!({
            "accepted": true, "checks": ["compiles"], "pending_id": "fedcba9876543210"
        }));
        let slow = unit("synth", "__global__ void k() { /* naive */ }");
        let p = pair(&old_line(
            2,
            json!({"slow": slow, "origin": origin, "synth": accepted}),
        ));
        let Slow::Synthesized { unit, outcome } = &p.slow else {
            panic!("{:?}", p.slow)
        };
        assert_eq!(unit.variant, "synth");
        assert_eq!((outcome.model.as_str(), outcome.attempts), ("m", 2));
        assert_eq!(outcome.usage.total(), 30);
        assert_eq!(p.id, "fedcba9876543210", "the id from before synth");
        // Without synth's own record (version 1 tools wrote only the origin), the outcome
        // is rebuilt from the origin's copy of its fields and the id stays.
        let p = pair(&old_line(1, json!({"slow": slow, "origin": origin})));
        let Slow::Synthesized { outcome, .. } = &p.slow else {
            panic!("{:?}", p.slow)
        };
        assert_eq!(outcome.checks, ["compiles"]);
        assert_eq!(outcome.prompt_hash, "h");
        assert_eq!(p.id, "0123456789abcdef");
    }

    #[test]
    fn current_lines_round_trip_and_other_records_pass_unchanged() {
        let p = pair(&old_line(2, json!({"origin": {"kind": "pending"}})));
        let line = serde_json::to_string(&Line::new(Record::Pair(Box::new(p.clone())))).unwrap();
        assert!(line.starts_with(r#"{"version":3,"type":"pair""#), "{line}");
        assert!(line.contains(r#""slow":{"kind":"pending"}"#), "{line}");
        assert!(!line.contains("origin"), "{line}");
        assert_eq!(pair(&line), p);
        let skipped =
            r#"{"version":1,"type":"skipped","data":{"path":"a","reason":"binary","message":"m"}}"#;
        let l = parse_line(skipped).unwrap();
        assert_eq!(l.version, RECORD_VERSION);
        assert!(matches!(l.record, Record::Skipped(_)));
    }

    #[test]
    fn lines_that_cannot_be_read_are_refused_naming_the_version() {
        let newer = old_line(RECORD_VERSION + 1, json!({}));
        let e = parse_line(&newer).unwrap_err().to_string();
        assert!(
            e.contains(&format!("record version {}", RECORD_VERSION + 1)),
            "{e}"
        );
        assert!(e.contains("newer"), "{e}");
        // A rule no version ever wrote.
        let mut bad = old_line(2, json!({"origin": {"kind": "pending"}}));
        bad = bad.replace("name_and_params", "by_guess");
        let e = parse_line(&bad).unwrap_err().to_string();
        assert!(e.contains("record version 2 cannot be converted"), "{e}");
        assert!(e.contains("by_guess"), "{e}");
        // A natural origin without its unit: the illegal state version 3 cannot hold.
        let e = parse_line(&old_line(1, json!({"origin": {"kind": "natural"}})))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("record version 1") && e.contains("origin `natural` with no slow unit"),
            "{e}"
        );
        // A version-3 line in the old shape is not guessed at.
        let e = parse_line(&old_line(3, json!({"origin": {"kind": "pending"}})))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a kernelpair record"), "{e}");
    }
}
