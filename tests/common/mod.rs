//! Shared by the integration tests that talk to a scripted OpenAI-style endpoint on
//! loopback (`harness complete`, the Rodinia end-to-end build).
#![allow(dead_code)] // each test binary uses part of it

use std::path::Path;

/// One request the scripted server saw: its Authorization header and JSON body.
#[derive(Clone)]
pub struct Seen {
    pub auth: Option<String>,
    pub body: serde_json::Value,
}

/// A loopback OpenAI-style endpoint answering each request with `script(request, earlier)`.
pub fn serve(
    script: impl Fn(&Seen, &[Seen]) -> String + Send + Sync + 'static,
) -> (String, std::sync::Arc<std::sync::Mutex<Vec<Seen>>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", l.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Seen>::new()));
    let s2 = seen.clone();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut r = BufReader::new(conn.try_clone().unwrap());
            let (mut len, mut auth, mut line) = (0usize, None, String::new());
            loop {
                line.clear();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let t = line.trim_end();
                if t.is_empty() {
                    break;
                }
                if let Some((k, v)) = t.split_once(':') {
                    match k.to_ascii_lowercase().as_str() {
                        "content-length" => len = v.trim().parse().unwrap_or(0),
                        "authorization" => auth = Some(v.trim().to_string()),
                        _ => {}
                    }
                }
            }
            let mut body = vec![0u8; len];
            if r.read_exact(&mut body).is_err() {
                continue;
            }
            let req = Seen {
                auth,
                body: serde_json::from_slice(&body).unwrap_or_default(),
            };
            let before = {
                let mut all = s2.lock().unwrap();
                let b = all.clone();
                all.push(req.clone());
                b
            };
            let content = script(&req, &before);
            let body = serde_json::json!({
                "id": "x", "object": "chat.completion", "model": "test",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
            })
            .to_string();
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, seen)
}

/// Every file under `dir`, as text (lossy).
pub fn all_text(dir: &Path) -> String {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `fixtures/<name>`; `KERNELPAIR_FIXTURES` points at a carried copy of fixtures/ when the
/// test binary runs on the device machine.
pub fn fixture(name: &str) -> std::path::PathBuf {
    match std::env::var_os("KERNELPAIR_FIXTURES") {
        Some(d) => std::path::PathBuf::from(d).join(name),
        None => std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(name),
    }
}

/// `kernelpair extract ROOT -o DIR/units.jsonl --no-compile`; returns (units path, pair ids
/// by kernel: (kernel, id) per pair, in file order).
pub fn extract_units(root: &Path, dir: &Path) -> (std::path::PathBuf, Vec<(String, String)>) {
    let units = dir.join("units.jsonl");
    kp().arg("extract")
        .arg(root)
        .arg("-o")
        .arg(&units)
        .arg("--no-compile")
        .assert()
        .success();
    let ids = kernelpair::jsonl::read_records(&units)
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            kernelpair::record::Record::Pair(p) => Some((p.kernel.clone(), p.id.clone())),
            _ => None,
        })
        .collect();
    (units, ids)
}

/// `kernelpair harness infer UNITS -o OUT --root ROOT`, which must succeed.
pub fn infer_into(units: &Path, root: &Path, out: &Path) {
    infer_with(units, root, out, &[]);
}

/// `kernelpair harness infer UNITS -o OUT --root ROOT --assume-size N`, which must succeed.
pub fn infer_assumed_into(units: &Path, root: &Path, out: &Path, n: u32) {
    infer_with(units, root, out, &["--assume-size", &n.to_string()]);
}

fn infer_with(units: &Path, root: &Path, out: &Path, extra: &[&str]) {
    kp().args(["harness", "infer"])
        .arg(units)
        .arg("-o")
        .arg(out)
        .arg("--root")
        .arg(root)
        .args(extra)
        .assert()
        .success();
}

/// The kernelpair binary under test.
pub fn kp() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("kernelpair").unwrap()
}

/// `kernelpair harness check FILE --units UNITS --pair ID`, to be asserted on.
pub fn harness_check(
    file: impl AsRef<Path>,
    units: impl AsRef<Path>,
    pair: &str,
) -> assert_cmd::assert::Assert {
    kp().args(["harness", "check"])
        .arg(file.as_ref())
        .arg("--units")
        .arg(units.as_ref())
        .args(["--pair", pair])
        .assert()
}

/// `kernelpair harness selfcheck UNITS --inferred-dir DIR [--pair ID] --out REPORT`, which
/// must exit with `code`: the report's rows.
pub fn selfcheck_inferred(
    units: &Path,
    inferred: &Path,
    pair: Option<&str>,
    report: &Path,
    code: i32,
) -> Vec<serde_json::Value> {
    let mut c = kp();
    c.args(["harness", "selfcheck"])
        .arg(units)
        .arg("--inferred-dir")
        .arg(inferred);
    if let Some(p) = pair {
        c.args(["--pair", p]);
    }
    c.arg("--out").arg(report).assert().code(code);
    std::fs::read_to_string(report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
