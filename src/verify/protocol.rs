//! The worker protocol: one JSON object per line each way (schemas/worker.schema.json).
//!
//! parent → worker: `{"version":1,"type":"job","job":{…}}` or `{"version":1,"type":"shutdown"}`.
//! worker → parent: first a `hello` (device, limits, NVRTC) or `no_gpu`, then one
//! `result` per job. A worker that hits a sticky CUDA error answers, then exits;
//! the parent restarts it.

use super::engine::Job;
use crate::gpu::Props;
use crate::record::{DeviceInfo, Verification};
use serde::{Deserialize, Serialize};

pub const PROTOCOL_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    Job { job: Box<Job> },
    Shutdown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Response {
    Hello {
        device: DeviceInfo,
        props: Props,
        arch: String,
        nvrtc_version: String,
        /// Device-to-device copy bandwidth measured at start-up (bytes read + written per
        /// second / 1e9): the bound `suspect_slow` compares kernel times with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bandwidth_gbs: Option<f64>,
    },
    NoGpu {
        reason: String,
    },
    /// A step of the pair's job finished (a compile, a seed's check, a timing round):
    /// the parent's no-progress timeout starts again.
    Progress {
        pair_id: String,
        step: String,
    },
    Result {
        pair_id: String,
        verification: Box<Verification>,
        /// The worker exits after this answer (its CUDA context is unusable).
        #[serde(default)]
        sticky: bool,
    },
}

/// A line with its protocol version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope<T> {
    pub version: u32,
    #[serde(flatten)]
    pub body: T,
}

pub fn encode<T: Serialize>(body: T) -> String {
    serde_json::to_string(&Envelope {
        version: PROTOCOL_VERSION,
        body,
    })
    .expect("protocol types serialize")
}

pub fn decode<T: for<'de> Deserialize<'de>>(line: &str) -> Result<T, String> {
    let e: Envelope<T> = serde_json::from_str(line).map_err(|e| e.to_string())?;
    if e.version != PROTOCOL_VERSION {
        return Err(format!(
            "protocol version {} (expected {PROTOCOL_VERSION})",
            e.version
        ));
    }
    Ok(e.body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_carry_the_version() {
        let l = encode(Response::NoGpu {
            reason: "no GPU: x".into(),
        });
        assert!(l.starts_with("{\"version\":1,\"type\":\"no_gpu\""), "{l}");
        assert_eq!(
            decode::<Response>(&l).unwrap(),
            Response::NoGpu {
                reason: "no GPU: x".into()
            }
        );
        let bad = l.replace("\"version\":1", "\"version\":9");
        assert!(decode::<Response>(&bad).unwrap_err().contains("version 9"));
        assert_eq!(
            decode::<Request>(&encode(Request::Shutdown)).unwrap(),
            Request::Shutdown
        );
    }
}
