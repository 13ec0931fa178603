//! The synth stage end to end: the real binary against an OpenAI-compatible test server
//! on 127.0.0.1 with scripted answers (no network), and, `#[ignore]`d, against a real
//! small model served by llama.cpp (scripts/real-llm-test.sh).

use assert_cmd::Command;
use kernelpair::jsonl::{read_records, write_records};
use kernelpair::record::{KernelUnit, Pair, Record, Skipped, Slow, SynthOutcome, Unpaired};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------- test server

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    at: Instant,
    authorization: Option<String>,
    body: Value,
}

impl Seen {
    /// The kernel the conversation is about (named in the first user message).
    fn kernel(&self) -> String {
        let first = self.body["messages"][1]["content"].as_str().unwrap_or("");
        let re = regex::Regex::new(r"The kernel `(\w+)`").unwrap();
        re.captures(first)
            .map(|c| c[1].to_string())
            .unwrap_or_default()
    }
    fn turns(&self) -> usize {
        self.body["messages"].as_array().map_or(0, |m| m.len())
    }
    fn last_user(&self) -> String {
        let m = self.body["messages"].as_array().unwrap();
        m.last().unwrap()["content"].as_str().unwrap().to_string()
    }
}

enum Reply {
    Ok(String),
    Status(u16, Vec<(String, String)>, String),
    Raw(String),
    Sleep(Duration, Box<Reply>),
}

type Script = dyn Fn(&Seen, &[Seen]) -> Reply + Send + Sync;

struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    /// Serve until the test process ends; `script` sees the request and every earlier one.
    fn start(script: impl Fn(&Seen, &[Seen]) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Script> = Arc::new(script);
        let s2 = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let (seen, script) = (s2.clone(), script.clone());
                std::thread::spawn(move || handle(conn, &seen, &*script));
            }
        });
        Server { url, seen }
    }
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
    fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
    fn clear(&self) {
        self.seen.lock().unwrap().clear();
    }
}

fn handle(mut conn: TcpStream, seen: &Mutex<Vec<Seen>>, script: &Script) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut len = 0usize;
    let mut auth = None;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            match k.to_ascii_lowercase().as_str() {
                "content-length" => len = v.trim().parse().unwrap_or(0),
                "authorization" => auth = Some(v.trim().to_string()),
                _ => {}
            }
        }
    }
    let mut body = vec![0u8; len];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let req = Seen {
        at: Instant::now(),
        authorization: auth,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    let before = {
        let mut all = seen.lock().unwrap();
        let before = all.clone();
        all.push(req.clone());
        before
    };
    let reply = script(&req, &before);
    let mut reply = reply;
    while let Reply::Sleep(d, next) = reply {
        std::thread::sleep(d);
        reply = *next;
    }
    let (status, headers, body) = match reply {
        Reply::Ok(content) => (
            200,
            vec![],
            json!({
                "id": "x", "object": "chat.completion", "model": "test",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 40, "total_tokens": 140}
            })
            .to_string(),
        ),
        Reply::Status(s, h, b) => (s, h, b),
        Reply::Raw(b) => (200, vec![], b),
        Reply::Sleep(..) => unreachable!(),
    };
    let mut head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body.as_bytes());
    let _ = conn.flush();
}

// ---------------------------------------------------------------- fixtures (written for these tests)

fn fast_source(name: &str) -> String {
    format!(
        "#define TILE 256\n\
         __global__ void {name}(float* out, const float* __restrict__ in, int n) {{\n\
         \x20   __shared__ float tile[TILE];\n\
         \x20   int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20   tile[threadIdx.x] = (i < n) ? __ldg(&in[i]) : 0.0f;\n\
         \x20   __syncthreads();\n\
         \x20   if (i < n) out[i] = 2.0f * tile[threadIdx.x];\n\
         }}\n"
    )
}

fn naive_source(name: &str) -> String {
    format!(
        "__global__ void {name}(float* out, const float* in, int n) {{\n\
         \x20   int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20   if (i < n) {{\n\
         \x20       float v = in[i];\n\
         \x20       out[i] = 2.0f * v;\n\
         \x20   }}\n\
         }}\n"
    )
}

fn fenced(code: &str) -> String {
    format!("Here is the naive version:\n\n```cuda\n{code}```\n")
}

fn unit(name: &str, variant: &str, source: String) -> KernelUnit {
    serde_json::from_value(json!({
        "id": kernelpair::record::content_id(&["fixture", "bench", variant, name, &source]),
        "suite": "fixture", "benchmark": "bench", "variant": variant,
        "path": format!("bench/{variant}/{name}.cu"), "line": 2, "kernel": name,
        "params": [
            {"name": "out", "type": "float *"},
            {"name": "in", "type": "const float * __restrict__"},
            {"name": "n", "type": "int"}
        ],
        "source": source, "symbol": name, "pulled": {},
        "features": {"shared_memory": true, "dynamic_shared_memory": false, "constant_memory": false,
            "texture_references": false, "atomics": false, "templates": false,
            "warp_primitives": false, "vector_types": false},
        "provenance": {}
    }))
    .unwrap()
}

fn pending_pair(name: &str) -> Pair {
    let fast = unit(name, "cuda", fast_source(name));
    serde_json::from_value(json!({
        "id": Pair::make_id(None, &fast), "suite": "fixture", "benchmark": "bench",
        "kernel": name, "fast": fast, "slow": {"kind": "pending"}, "rule": "no_naive_variant"
    }))
    .unwrap()
}

/// Pending pairs named `names`, plus records synth must pass through untouched.
fn write_input(dir: &Path, names: &[&str]) -> (PathBuf, Vec<Record>) {
    let mut recs: Vec<Record> = names
        .iter()
        .map(|n| Record::Pair(Box::new(pending_pair(n))))
        .collect();
    let fast = unit("natural_k", "cuda", fast_source("natural_k"));
    let slow = unit("natural_k", "cuda_base", naive_source("natural_k"));
    let mut natural = pending_pair("natural_k");
    natural.id = Pair::make_id(Some(&slow), &fast);
    natural.slow = Slow::natural(slow);
    recs.push(Record::Pair(Box::new(natural)));
    recs.push(Record::Unit(Box::new(fast)));
    recs.push(Record::Unpaired(Unpaired {
        suite: "fixture".into(),
        benchmark: "bench".into(),
        variant: "cuda".into(),
        path: "bench/cuda/lonely.cu".into(),
        kernel: "lonely".into(),
        unit_id: "0".into(),
        reason: kernelpair::record::UnpairedReason::NoMatch {
            variants: vec!["cuda_base".into()],
        },
    }));
    recs.push(Record::Skipped(Skipped {
        path: "bench/bin.cu".into(),
        reason: kernelpair::record::SkipReason::Binary,
        message: "NUL byte".into(),
    }));
    let p = dir.join("pairs.jsonl");
    write_records(&p, &recs).unwrap();
    (p, recs)
}

const KEY_ENV: &str = "KERNELPAIR_TEST_API_KEY";
const KEY: &str = "sk-test-1f2e3d4c5b6a79887766";

fn llm_toml(dir: &Path, url: &str) -> PathBuf {
    let p = dir.join("llm.toml");
    std::fs::write(
        &p,
        format!(
            "base_url = \"{url}\"\nmodel = \"test-model\"\napi_key_env = \"{KEY_ENV}\"\n\
             concurrency = 4\nmax_retries = 3\nbackoff_base_ms = 50\nbackoff_max_ms = 400\ntimeout_secs = 1.5\n\
             [price]\nprompt_per_mtok = 1.0\ncompletion_per_mtok = 2.0\n"
        ),
    )
    .unwrap();
    p
}

fn synth(dir: &Path, input: &Path, llm: &Path, extra: &[&str]) -> std::process::Output {
    Command::cargo_bin("kernelpair")
        .unwrap()
        .current_dir(dir)
        .env(KEY_ENV, KEY)
        .args(["synth", "--in"])
        .arg(input)
        .args(["--out", "out.jsonl", "--llm"])
        .arg(llm)
        .args(["--cache", "cache", "--report", "report.json"])
        .args(extra)
        .output()
        .unwrap()
}

fn pairs_by_kernel(path: &Path) -> std::collections::BTreeMap<String, Pair> {
    read_records(path)
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            Record::Pair(p) => Some((p.kernel.clone(), *p)),
            _ => None,
        })
        .collect()
}

fn reason(p: &Pair) -> Option<String> {
    outcome(p)
        .and_then(|s| s.reason)
        .map(|r| r.as_str().to_string())
}

/// What synth recorded for the pair, accepted or not.
fn outcome(p: &Pair) -> Option<&SynthOutcome> {
    p.slow.synth_outcome()
}

fn accepted(p: &Pair) -> bool {
    matches!(p.slow, Slow::Synthesized { .. })
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn cache_files(dir: &Path) -> Vec<PathBuf> {
    let c = dir.join("cache");
    if !c.exists() {
        return vec![];
    }
    files(&c)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect()
}

fn schema_check(schema: &str, instance: &Value) {
    let s: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("schemas")
                .join(schema),
        )
        .unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&s).unwrap();
    let errors: Vec<String> = v.iter_errors(instance).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{schema}: {errors:?}\n{instance:#}");
}

// ---------------------------------------------------------------- the scripted model

fn scripted(req: &Seen, before: &[Seen]) -> Reply {
    if req.body["messages"][1]["content"]
        .as_str()
        .unwrap_or("")
        .contains("Below are two versions")
    {
        return Reply::Ok("The optimized kernel stages the input in a shared-memory tile and reads it through the read-only cache.".into());
    }
    let k = req.kernel();
    let earlier = before.iter().filter(|s| s.kernel() == k).count();
    let good = fenced(&naive_source(&k));
    match k.as_str() {
        "k_good" => Reply::Ok(good),
        "k_nocode" => Reply::Ok("I would remove the shared memory tile and read in[] directly.".into()),
        "k_wrongsig" => Reply::Ok(fenced(&naive_source(&k).replace("int n", "long n"))),
        "k_host" => Reply::Ok(fenced(&format!(
            "{}\nint main() {{ float* d; cudaMalloc(&d, 4); k_host<<<1, 1>>>(d, d, 1); return 0; }}\n",
            naive_source(&k)
        ))),
        "k_spin" => Reply::Ok(fenced(&naive_source(&k).replace(
            "float v = in[i];",
            "float v = in[i];\n        long long t0 = clock64();\n        while (clock64() - t0 < 100000) { }",
        ))),
        "k_verbatim" => Reply::Ok(fenced(&fast_source(&k))),
        "k_repair" => {
            if req.turns() == 2 {
                Reply::Ok(fenced(&naive_source(&k).replace("2.0f * v", "scale_factor * v")))
            } else {
                assert!(req.last_user().contains("scale_factor"), "the log goes back: {}", req.last_user());
                Reply::Ok(good)
            }
        }
        "k_429" if earlier == 0 => Reply::Status(
            429,
            vec![("Retry-After".into(), "1".into())],
            r#"{"error":{"message":"slow down"}}"#.into(),
        ),
        "k_500" if earlier < 2 => Reply::Status(500, vec![], "internal error".into()),
        "k_timeout" if earlier == 0 => Reply::Sleep(Duration::from_secs(4), Box::new(Reply::Ok(good))),
        "k_malformed" => Reply::Raw("{\"choices\": [ {\"message\": ".into()),
        "k_401" => Reply::Status(401, vec![], r#"{"error":"bad key"}"#.into()),
        _ => Reply::Ok(good),
    }
}

const ALL: &[&str] = &[
    "k_good",
    "k_nocode",
    "k_wrongsig",
    "k_host",
    "k_spin",
    "k_verbatim",
    "k_repair",
    "k_429",
    "k_500",
    "k_timeout",
    "k_malformed",
    "k_401",
];

#[test]
fn scripted_server_every_outcome_recorded_retries_cache_and_no_key_leak() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = Server::start(scripted);
    let (input, recs) = write_input(d, ALL);
    let llm = llm_toml(d, &server.url);

    let out = synth(d, &input, &llm, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(
        out.status.code(),
        Some(3),
        "partial: some pairs rejected\n{stderr}"
    );

    // Every record is in the output, in order; the ones synth does not own are unchanged.
    let got = read_records(&d.join("out.jsonl")).unwrap();
    assert_eq!(got.len(), recs.len());
    assert_eq!(&got[ALL.len()..], &recs[ALL.len()..]);

    let pairs = pairs_by_kernel(&d.join("out.jsonl"));
    let expect_reason = [
        ("k_nocode", "no_code_block"),
        ("k_wrongsig", "signature_mismatch"),
        ("k_host", "host_code"),
        ("k_spin", "artificial_slowdown"),
        ("k_verbatim", "same_as_fast"),
        ("k_malformed", "llm_malformed_response"),
        ("k_401", "llm_request_rejected"),
    ];
    for (k, r) in expect_reason {
        let p = &pairs[k];
        assert_eq!(reason(p).as_deref(), Some(r), "{k}: {:?}", p.slow);
        assert!(p.slow.is_pending(), "{k}");
        assert!(outcome(p).is_some(), "{k}: the rejection is recorded");
    }
    for k in ["k_good", "k_repair", "k_429", "k_500", "k_timeout"] {
        let p = &pairs[k];
        let o = outcome(p).unwrap();
        assert!(accepted(p), "{k}: {o:?}");
        let slow = p.slow.unit().unwrap();
        assert_eq!(slow.kernel, k);
        assert_eq!(slow.variant, "synth");
        assert!(slow.compile.as_ref().unwrap().ok);
        assert!(p.verification.is_none(), "synth never verifies");
        assert_eq!(o.model, "test-model");
        assert_eq!(o.attempts, if k == "k_repair" { 2 } else { 1 }, "{k}");
        assert_eq!(o.checks.last().map(String::as_str), Some("compiles"));
        assert_eq!(o.prompt_hash.len(), 16);
        assert_eq!(o.reason, None, "{k}");
        // The id is the pending pair's: synth fills the slot, the pair stays one id.
        assert_eq!(p.id, Pair::make_id(None, &p.fast));
        assert!(
            p.techniques.contains(&"shared_memory".to_string()),
            "{:?}",
            p.techniques
        );
    }
    let repair = outcome(&pairs["k_repair"]).unwrap();
    assert_eq!(repair.rejections.len(), 1);
    assert_eq!(repair.rejections[0].reason.as_str(), "compile_error");

    // Retries: per kernel, how many requests the server saw.
    let seen = server.seen();
    let count = |k: &str| seen.iter().filter(|s| s.kernel() == k).count();
    assert_eq!(count("k_good"), 1);
    assert_eq!(count("k_repair"), 2);
    assert_eq!(count("k_429"), 2);
    assert_eq!(count("k_500"), 3);
    assert_eq!(count("k_timeout"), 2);
    assert_eq!(count("k_malformed"), 4, "1 + max_retries");
    assert_eq!(count("k_401"), 1, "no retry on 401");
    let t429: Vec<_> = seen
        .iter()
        .filter(|s| s.kernel() == "k_429")
        .map(|s| s.at)
        .collect();
    assert!(
        t429[1] - t429[0] >= Duration::from_millis(950),
        "Retry-After honoured: {:?}",
        t429[1] - t429[0]
    );
    assert!(seen
        .iter()
        .all(|s| s.authorization.as_deref() == Some(&format!("Bearer {KEY}")[..])));

    // The summary and the report.
    assert!(stderr.contains("same_as_fast"), "{stderr}");
    assert!(stderr.contains("cost $"), "{stderr}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    schema_check("synth-report.schema.json", &report);
    assert_eq!(report["pending"], ALL.len());
    assert_eq!(report["accepted"], 5);
    assert_eq!(report["requests_sent"], seen.len());
    assert_eq!(report["rejected_answers"]["compile_error"], 1);
    // Eleven answers were examined (k_repair twice), each 100 + 40 tokens at $1/$2 per Mtok.
    assert_eq!(
        report["usage"],
        json!({"prompt_tokens": 1100, "completion_tokens": 440})
    );
    assert!((report["cost_usd"].as_f64().unwrap() - 0.00198).abs() < 1e-12);

    // Cache entries follow the schema.
    let entries = cache_files(d);
    assert!(!entries.is_empty());
    for f in &entries {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        schema_check("llm-cache.schema.json", &v);
    }

    // The key is in no file written and in no output printed.
    let mut all_text = stderr.clone() + &String::from_utf8_lossy(&out.stdout);
    for f in files(d) {
        all_text.push_str(&String::from_utf8_lossy(&std::fs::read(&f).unwrap()));
    }
    assert!(!all_text.contains(KEY), "the API key leaked");
    assert!(!all_text.contains(&KEY[8..]), "part of the API key leaked");

    // Second run: the journal finishes every model-decided pair without a request; only the
    // transport failures (malformed, 401) are tried again.
    server.clear();
    let out2 = synth(d, &input, &llm, &[]);
    assert_eq!(out2.status.code(), Some(3));
    let kernels: std::collections::BTreeSet<String> =
        server.seen().iter().map(|s| s.kernel()).collect();
    assert_eq!(
        kernels.into_iter().collect::<Vec<_>>(),
        ["k_401", "k_malformed"]
    );
    let pairs2 = pairs_by_kernel(&d.join("out.jsonl"));
    for k in ["k_good", "k_repair", "k_verbatim", "k_spin"] {
        assert_eq!(pairs2[k], pairs[k], "{k} resumed unchanged");
    }
    let report2: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    assert_eq!(report2["resumed"], ALL.len() - 2);

    // Without the journal the cache answers everything it holds: zero requests for those.
    std::fs::remove_file(d.join("out.jsonl.journal")).unwrap();
    server.clear();
    let out3 = synth(d, &input, &llm, &["--offline"]);
    assert_eq!(out3.status.code(), Some(3));
    assert_eq!(server.count(), 0, "offline sends nothing");
    let pairs3 = pairs_by_kernel(&d.join("out.jsonl"));
    for k in ["k_good", "k_repair", "k_429", "k_verbatim", "k_host"] {
        assert_eq!(pairs3[k], pairs[k], "{k} replayed from the cache");
    }
    assert_eq!(
        reason(&pairs3["k_malformed"]).as_deref(),
        Some("offline_cache_miss")
    );
    let stderr3 = String::from_utf8_lossy(&out3.stderr);
    assert!(
        stderr3.contains("offline: 2 requests are not in the cache"),
        "{stderr3}"
    );
    assert!(stderr3.contains("k_malformed"), "{stderr3}");
}

#[test]
fn finished_run_reruns_with_zero_requests() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = Server::start(scripted);
    let names = ["k_good", "k_repair", "k_verbatim", "k_nocode"];
    let (input, _) = write_input(d, &names);
    let llm = llm_toml(d, &server.url);
    let first = synth(d, &input, &llm, &["--describe"]);
    assert_eq!(first.status.code(), Some(3));
    let sent = server.count();
    assert_eq!(
        sent,
        1 + 2 + 1 + 1 + 2,
        "one per answer, plus two descriptions"
    );
    let out1 = std::fs::read(d.join("out.jsonl")).unwrap();
    let pairs = pairs_by_kernel(&d.join("out.jsonl"));
    assert!(pairs["k_good"].description.is_some());

    // Same inputs, journal and cache removed, still nothing sent: the cache replays it all.
    std::fs::remove_file(d.join("out.jsonl.journal")).unwrap();
    server.clear();
    let second = synth(d, &input, &llm, &["--describe"]);
    assert_eq!(second.status.code(), Some(3));
    assert_eq!(server.count(), 0);
    assert_eq!(
        std::fs::read(d.join("out.jsonl")).unwrap(),
        out1,
        "deterministic output"
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["cache_hits"], sent);
    assert_eq!(report["requests_sent"], 0);
}

/// The library call behind `build`: records in, records out, in memory. Besides the
/// response cache and the journal it is given, it writes nothing: no temporary JSONL (the
/// stage used to go file to file through `<cache>/work/`). The journal still resumes.
#[test]
fn synthesize_records_works_in_memory_writing_only_the_cache_and_the_journal() {
    use kernelpair::pipeline::stages::{Library, Stages};
    use kernelpair::synth::{synthesize_records, Config, Settings};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = Server::start(scripted);
    let (input, recs) = write_input(d, &["k_good", "k_nocode"]);
    std::fs::remove_file(&input).unwrap();
    let llm = d.join("llm.toml");
    std::fs::write(
        &llm,
        format!("base_url = \"{}\"\nmodel = \"m\"\n", server.url),
    )
    .unwrap();
    let journal = d.join("cache/journal/chunk.journal");
    let settings = Settings {
        llm: Some(llm.clone()),
        cache: d.join("cache"),
        journal: Some(journal.clone()),
        ..Settings::default()
    };
    let cfg = Config::new(settings.clone()).unwrap();
    let (out, report) = synthesize_records(recs.clone(), &cfg).unwrap();
    assert_eq!(
        (report.pending, report.accepted, report.rejected),
        (2, 1, 1)
    );
    assert_eq!(out.len(), recs.len(), "every record comes back, in order");
    for (was, now) in recs.iter().zip(&out) {
        match (was, now) {
            (Record::Pair(a), Record::Pair(b)) if a.slow.is_pending() => assert_eq!(a.id, b.id),
            _ => assert_eq!(
                was, now,
                "records synth has nothing to do with pass through"
            ),
        }
    }
    let by_kernel = |recs: &[Record]| -> std::collections::BTreeMap<String, Pair> {
        recs.iter()
            .filter_map(|r| match r {
                Record::Pair(p) => Some((p.kernel.clone(), (**p).clone())),
                _ => None,
            })
            .collect()
    };
    let pairs = by_kernel(&out);
    assert!(accepted(&pairs["k_good"]));
    assert_eq!(reason(&pairs["k_nocode"]).as_deref(), Some("no_code_block"));
    let sent = server.count();
    assert_eq!(sent, 2);
    // On disk: the endpoint file, one cache entry per request, the journal. Nothing else.
    let mut written = files(d);
    written.sort();
    assert_eq!(written.len(), 1 + sent + 1, "{written:?}");
    assert!(
        written.contains(&llm) && written.contains(&journal),
        "{written:?}"
    );
    assert_eq!(cache_files(d).len(), sent, "{written:?}");
    // Run again over the same records: both outcomes come from the journal, none is asked.
    let (again, report) = synthesize_records(recs.clone(), &cfg).unwrap();
    assert_eq!((report.resumed, server.count()), (2, sent));
    assert_eq!(again, out);

    // `build`'s stage call: the same, with the journal kept beside the cache it is given.
    let cache = d.join("build-cache");
    let build = kernelpair::pipeline::config::SynthSettings {
        llm: Some(llm.clone()),
        ..Default::default()
    };
    let pending: Vec<Record> = recs
        .iter()
        .filter(|r| matches!(r, Record::Pair(p) if p.slow.is_pending()))
        .cloned()
        .collect();
    let staged = Library.synth(pending, &build, &cache).unwrap();
    assert_eq!(by_kernel(&staged), {
        let mut m = pairs.clone();
        m.remove("natural_k");
        m
    });
    let staged_files = files(&cache);
    assert!(!cache.join("work").exists(), "{staged_files:?}");
    assert!(
        staged_files
            .iter()
            .all(|p| p.extension().is_some_and(|e| e == "json")
                || p.parent().is_some_and(|d| d.ends_with("journal"))),
        "only cache entries and the journal: {staged_files:?}"
    );
    assert!(
        staged_files
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "journal")),
        "{staged_files:?}"
    );
}

/// Regression: the journal was keyed by pair id alone, so an input pair with the same id
/// but newer fields (here its provenance) came back from the journal with the old ones.
#[test]
fn journal_never_returns_stale_input_fields() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = Server::start(scripted);
    let (input, mut recs) = write_input(d, &["k_good", "k_verbatim"]);
    let llm = llm_toml(d, &server.url);
    assert_eq!(synth(d, &input, &llm, &[]).status.code(), Some(3));
    let Record::Pair(p) = &mut recs[0] else {
        panic!()
    };
    p.fast.provenance.commit = Some("0123abc".into());
    write_records(&input, &recs).unwrap();
    server.clear();
    assert_eq!(synth(d, &input, &llm, &[]).status.code(), Some(3));
    assert_eq!(server.count(), 0, "replayed from the cache");
    let pairs = pairs_by_kernel(&d.join("out.jsonl"));
    assert_eq!(
        pairs["k_good"].fast.provenance.commit.as_deref(),
        Some("0123abc")
    );
    assert!(accepted(&pairs["k_good"]));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    assert_eq!(
        report["resumed"], 1,
        "only the unchanged pair comes from the journal"
    );
}

#[test]
fn unreachable_endpoint_records_every_pair_and_exits_partial() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let names = ["k_a", "k_b", "k_c", "k_d", "k_e"];
    let (input, recs) = write_input(d, &names);
    let llm = llm_toml(d, &format!("http://127.0.0.1:{port}/v1"));
    let out = synth(d, &input, &llm, &[]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = read_records(&d.join("out.jsonl")).unwrap();
    assert_eq!(got.len(), recs.len(), "nothing lost");
    let pairs = pairs_by_kernel(&d.join("out.jsonl"));
    for k in names {
        assert_eq!(reason(&pairs[k]).as_deref(), Some("llm_unreachable"), "{k}");
        assert!(outcome(&pairs[k])
            .unwrap()
            .message
            .as_ref()
            .unwrap()
            .contains("127.0.0.1"));
    }
    // Transport failures are not journaled: a rerun will try them.
    let journal = std::fs::read_to_string(d.join("out.jsonl.journal")).unwrap_or_default();
    assert!(journal.trim().is_empty(), "{journal}");
}

#[test]
fn missing_key_variable_and_key_in_config_are_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (input, _) = write_input(d, &["k_a"]);
    let llm = llm_toml(d, "http://127.0.0.1:9/v1");
    let out = Command::cargo_bin("kernelpair")
        .unwrap()
        .current_dir(d)
        .env_remove(KEY_ENV)
        .args(["synth", "--in"])
        .arg(&input)
        .args(["--out", "out.jsonl", "--llm"])
        .arg(&llm)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(KEY_ENV));
    std::fs::write(&llm, format!("api_key = \"{KEY}\"\n")).unwrap();
    let out = synth(d, &input, &llm, &[]);
    assert_eq!(out.status.code(), Some(1));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("api_key_env") && !e.contains(KEY), "{e}");
}

#[test]
fn killed_run_resumes_sending_only_unanswered_requests() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let names: Vec<String> = (0..8).map(|i| format!("k_slow{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let (input, _) = write_input(d, &refs);
    let slow = Server::start(|req, _| {
        Reply::Sleep(
            Duration::from_millis(400),
            Box::new(Reply::Ok(fenced(&naive_source(&req.kernel())))),
        )
    });
    let llm = llm_toml(d, &slow.url);
    let bin = assert_cmd::cargo::cargo_bin("kernelpair");
    let mut child = std::process::Command::new(bin)
        .current_dir(d)
        .env(KEY_ENV, KEY)
        .args(["synth", "--in"])
        .arg(&input)
        .args(["--out", "out.jsonl", "--llm"])
        .arg(&llm)
        .args(["--cache", "cache", "--concurrency", "1"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while cache_files(d).len() < 3 {
        assert!(start.elapsed() < Duration::from_secs(60), "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !d.join("out.jsonl").exists(),
        "killed before the output was written"
    );
    let cached: Vec<String> = cache_files(d)
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        cached.len() >= 3 && cached.len() < names.len(),
        "{}",
        cached.len()
    );
    let journaled = std::fs::read_to_string(d.join("out.jsonl.journal")).unwrap();
    let journaled = journaled.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(journaled <= cached.len());

    let fresh = Server::start(|req, _| Reply::Ok(fenced(&naive_source(&req.kernel()))));
    let llm = llm_toml(d, &fresh.url);
    let out = synth(d, &input, &llm, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let resent = fresh.seen();
    assert_eq!(
        resent.len(),
        names.len() - cached.len(),
        "only unanswered requests"
    );
    for s in &resent {
        let key = kernelpair::synth::cache::key(&serde_json::from_value(s.body.clone()).unwrap());
        assert!(!cached.contains(&key), "re-sent an answered request");
    }
    let pairs = pairs_by_kernel(&d.join("out.jsonl"));
    assert!(names.iter().all(|k| accepted(&pairs[k])));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["resumed"], journaled);
}

#[test]
fn concurrency_bounds_requests_in_flight() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let names: Vec<String> = (0..6).map(|i| format!("k_par{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let (input, _) = write_input(d, &refs);
    let now = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (n2, p2) = (now.clone(), peak.clone());
    let server = Server::start(move |req, _| {
        let cur = n2.fetch_add(1, Ordering::SeqCst) + 1;
        p2.fetch_max(cur, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(300));
        n2.fetch_sub(1, Ordering::SeqCst);
        Reply::Ok(fenced(&naive_source(&req.kernel())))
    });
    let llm = llm_toml(d, &server.url);
    let out = synth(d, &input, &llm, &["--concurrency", "2"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.count(), 6);
    assert_eq!(
        peak.load(Ordering::SeqCst),
        2,
        "--concurrency 2 overrides the file's 4"
    );
}

// ---------------------------------------------------------------- a real small model

/// Run by scripts/real-llm-test.sh, which starts llama.cpp's server with a small model and
/// sets KERNELPAIR_LLM_URL (and KERNELPAIR_SYNTH_INPUT, pairs extracted from a fixture
/// suite, when available). Every outcome must be recorded and a rerun must send nothing.
#[test]
#[ignore = "needs a local LLM server: scripts/real-llm-test.sh"]
fn real_small_model_end_to_end() {
    let url = std::env::var("KERNELPAIR_LLM_URL").expect("KERNELPAIR_LLM_URL");
    let keep = std::env::var_os("KERNELPAIR_SYNTH_KEEP").map(PathBuf::from);
    let tmp = tempfile::tempdir().unwrap();
    let d = keep.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&d).unwrap();
    let input = match (
        std::env::var_os("KERNELPAIR_SYNTH_INPUT"),
        std::env::var_os("KERNELPAIR_SYNTH_CU_DIR"),
    ) {
        (Some(p), _) => PathBuf::from(p),
        (None, Some(suite)) => isolated_pairs(Path::new(&suite), &d),
        (None, None) => write_input(&d, &["rt_scale", "rt_axpy"]).0,
    };
    let pending = read_records(&input)
        .unwrap()
        .iter()
        .filter(|r| matches!(r, Record::Pair(p) if p.slow.is_pending()))
        .count();
    assert!(pending > 0, "no pending pairs in {}", input.display());
    let llm = d.join("llm.toml");
    std::fs::write(
        &llm,
        format!("base_url = \"{url}\"\nmodel = \"gemma3-270m\"\nmax_tokens = 768\ntimeout_secs = 600\nconcurrency = 1\nmax_retries = 1\n"),
    )
    .unwrap();
    let run = || {
        Command::cargo_bin("kernelpair")
            .unwrap()
            .current_dir(&d)
            .args(["synth", "--in"])
            .arg(&input)
            .args(["--out", "out.jsonl", "--llm"])
            .arg(&llm)
            .args([
                "--cache",
                "cache",
                "--report",
                "report.json",
                "--max-repairs",
                "1",
            ])
            .output()
            .unwrap()
    };
    // A kept folder may already hold the answers (then the first run is a replay too).
    let fresh_cache = !d.join("cache").exists();
    let first = run();
    let stderr = String::from_utf8_lossy(&first.stderr);
    eprintln!("{stderr}");
    assert!(matches!(first.status.code(), Some(0 | 3)), "{stderr}");
    let pairs: Vec<Pair> = read_records(&d.join("out.jsonl"))
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            Record::Pair(p) if outcome(&p).is_some() => Some(*p),
            _ => None,
        })
        .collect();
    assert_eq!(
        pairs.len(),
        pending,
        "every pending pair has a recorded outcome"
    );
    for p in &pairs {
        let o = outcome(p).unwrap();
        assert!(accepted(p) || o.reason.is_some(), "{}: {o:?}", p.kernel);
        eprintln!(
            "{:<28} {:<10} {}",
            p.kernel,
            if accepted(p) {
                "accepted".to_string()
            } else {
                o.reason.unwrap().as_str().to_string()
            },
            o.message.as_deref().unwrap_or("")
        );
    }
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    if fresh_cache {
        assert!(report["requests_sent"].as_u64().unwrap() > 0);
    }
    // Rerun without the journal: the cache answers every request.
    let _ = std::fs::remove_file(d.join("out.jsonl.journal"));
    let first_out = std::fs::read(d.join("out.jsonl")).unwrap();
    let second = run();
    assert!(matches!(second.status.code(), Some(0 | 3)));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["requests_sent"], 0, "second run sends nothing");
    assert!(
        std::fs::read(d.join("out.jsonl")).unwrap() == first_out,
        "deterministic output"
    );
}

/// Pending pairs from every `__global__` kernel under `suite`'s `cuda/<benchmark>/` folders,
/// isolated with `kernelpair::cuda` (each benchmark folder is one scope): what `extract`
/// produces for a suite without naive variants, used by the ignored test until that stage
/// is on the CLI.
fn isolated_pairs(suite: &Path, dir: &Path) -> PathBuf {
    use kernelpair::cuda::{index_file, isolate, Scope};
    let mut recs = Vec::new();
    let mut benches: Vec<PathBuf> = std::fs::read_dir(suite.join("cuda"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    benches.sort();
    for bench in benches {
        let name = bench.file_name().unwrap().to_string_lossy().into_owned();
        let mut files = std::collections::BTreeMap::new();
        for f in self::files(&bench) {
            if f.extension()
                .is_some_and(|x| x == "cu" || x == "cuh" || x == "h")
            {
                let rel = f
                    .strip_prefix(suite)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                let text = std::fs::read_to_string(&f).unwrap();
                files.insert(rel.clone(), index_file(&rel, &text));
            }
        }
        let scope = Scope::new(&files);
        let sites: Vec<_> = files
            .values()
            .flat_map(|f| f.launch_sites().to_vec())
            .collect();
        for (rel, fi) in &files {
            for k in fi.kernels() {
                let iso = isolate(&scope, rel, &k.name).unwrap();
                let mut u = unit(&k.name, "cuda", iso.source.clone());
                u.suite = "rodinia".into();
                u.benchmark = name.clone();
                u.path = rel.clone();
                u.line = iso.line;
                u.params = iso.params;
                u.template_params = iso.template_params;
                u.symbol = iso.symbol;
                u.pulled = iso.pulled;
                u.features = iso.features;
                u.diagnostics = iso.diagnostics;
                u.launch_sites = sites
                    .iter()
                    .filter(|s| s.kernel == k.name)
                    .cloned()
                    .collect();
                u.id = kernelpair::record::content_id(&[
                    "rodinia",
                    &name,
                    "cuda",
                    rel,
                    &k.name,
                    &iso.source,
                ]);
                let mut p = pending_pair(&k.name);
                p.suite = "rodinia".into();
                p.benchmark = name.clone();
                p.id = Pair::make_id(None, &u);
                p.fast = u;
                recs.push(Record::Pair(Box::new(p)));
            }
        }
    }
    let out = dir.join("pairs.jsonl");
    write_records(&out, &recs).unwrap();
    out
}

// ---------------------------------------------------------------- prompt budget (issue 27)

/// A fast unit whose context (400 macros, a type, an uncalled helper) dwarfs its kernel.
fn big_context_source(name: &str) -> String {
    let mut s = String::from("#define TILE 256\n");
    for i in 0..400 {
        s.push_str(&format!("#define C_{i} ({i} * 3 + 1)\n"));
    }
    s.push_str("struct Weights { float w[4]; };\n");
    s.push_str("__device__ float unused_helper(float v) { return v - 1.0f; }\n");
    s.push_str("__device__ float twice(float v) { return 2.0f * v + C_0; }\n");
    s.push_str(&format!(
        "__global__ void {name}(float* out, const float* __restrict__ in, int n) {{\n\
         \x20   __shared__ float tile[TILE];\n\
         \x20   int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20   tile[threadIdx.x] = (i < n) ? __ldg(&in[i]) : 0.0f;\n\
         \x20   __syncthreads();\n\
         \x20   if (i < n) out[i] = twice(tile[threadIdx.x]);\n\
         }}\n"
    ));
    s
}

/// A kernel too long for the budget whatever is cut around it.
fn huge_kernel_source(name: &str) -> String {
    let mut body = String::new();
    for j in 0..600 {
        body.push_str(&format!("    acc += in[(i + {j}) % n] * {j}.5f;\n"));
    }
    format!(
        "__global__ void {name}(float* out, const float* __restrict__ in, int n) {{\n\
         \x20   int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20   if (i >= n) return;\n\
         \x20   float acc = 0.0f;\n{body}\
         \x20   out[i] = acc;\n\
         }}\n"
    )
}

fn pending_pair_with(name: &str, source: String) -> Pair {
    let fast = unit(name, "cuda", source);
    serde_json::from_value(json!({
        "id": Pair::make_id(None, &fast), "suite": "fixture", "benchmark": "bench",
        "kernel": name, "fast": fast, "slow": {"kind": "pending"}, "rule": "no_naive_variant"
    }))
    .unwrap()
}

/// `--max-prompt-tokens`: a unit that fits goes whole; one over the budget goes as the kernel
/// with only the helpers it calls (the rest compiled before the answer, unshown); one still
/// over it is `prompt_too_large` with its size, and nothing about it is sent.
#[test]
fn prompt_budget_sends_the_kernel_with_its_helpers_or_records_prompt_too_large() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = Server::start(|req: &Seen, _: &[Seen]| {
        let k = req.kernel();
        match k.as_str() {
            // Uses C_0 from the unshown context: compiles only with it in front.
            "k_big" => Reply::Ok(fenced(
                "__device__ float twice(float v) { return 2.0f * v + C_0; }\n\
                 __global__ void k_big(float* out, const float* in, int n) {\n\
                 \x20   int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
                 \x20   if (i < n) out[i] = twice(in[i]);\n\
                 }\n",
            )),
            _ => Reply::Ok(fenced(&naive_source(&k))),
        }
    });
    let recs = vec![
        Record::Pair(Box::new(pending_pair("k_small"))),
        Record::Pair(Box::new(pending_pair_with(
            "k_big",
            big_context_source("k_big"),
        ))),
        Record::Pair(Box::new(pending_pair_with(
            "k_huge",
            huge_kernel_source("k_huge"),
        ))),
    ];
    let input = d.join("pairs.jsonl");
    write_records(&input, &recs).unwrap();
    let llm = llm_toml(d, &server.url);
    let out = synth(d, &input, &llm, &["--max-prompt-tokens", "1500"]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(3), "k_huge is rejected\n{stderr}");

    let seen = server.seen();
    let kernels: std::collections::BTreeSet<String> = seen.iter().map(Seen::kernel).collect();
    assert_eq!(
        kernels,
        ["k_big", "k_small"].map(String::from).into(),
        "nothing is sent for k_huge"
    );
    let big = seen.iter().find(|s| s.kernel() == "k_big").unwrap();
    let prompt = big.body["messages"][1]["content"].as_str().unwrap();
    assert!(
        prompt.contains("Below are the kernel and the __device__ helpers"),
        "{prompt}"
    );
    assert!(
        prompt.contains("__device__ float twice(float v)"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("#define C_1 ") && !prompt.contains("unused_helper"),
        "{prompt}"
    );
    // The context's names the code uses are named, without their definitions.
    assert!(prompt.contains("- TILE, C_0"), "{prompt}");
    let small = seen.iter().find(|s| s.kernel() == "k_small").unwrap();
    let small_prompt = small.body["messages"][1]["content"].as_str().unwrap();
    assert!(
        small_prompt.contains("The optimized source:"),
        "{small_prompt}"
    );

    let pairs = pairs_by_kernel(&d.join("out.jsonl"));
    use kernelpair::record::PromptScope;
    let o = outcome(&pairs["k_small"]).unwrap();
    assert!(accepted(&pairs["k_small"]), "{o:?}");
    assert_eq!(o.prompt_scope, Some(PromptScope::Unit));
    assert!(o.prompt_tokens.is_some_and(|t| t <= 1500), "{o:?}");
    let p = &pairs["k_big"];
    let o = outcome(p).unwrap();
    assert!(accepted(p), "{o:?}");
    assert_eq!(o.prompt_scope, Some(PromptScope::KernelWithHelpers));
    assert!(o.prompt_tokens.is_some_and(|t| t <= 1500), "{o:?}");
    // The slow unit stands alone: the unshown context, then the answer.
    let slow = p.slow.unit().unwrap();
    assert!(
        slow.source.contains("#define C_399 (399 * 3 + 1)"),
        "{}",
        slow.source
    );
    assert!(
        slow.source.contains("out[i] = twice(in[i]);"),
        "{}",
        slow.source
    );
    assert!(slow.compile.as_ref().unwrap().ok);
    let p = &pairs["k_huge"];
    let o = outcome(p).unwrap();
    assert_eq!(reason(p).as_deref(), Some("prompt_too_large"));
    assert!(
        p.slow.is_pending() && o.attempts == 0 && o.cache_keys.is_empty(),
        "{o:?}"
    );
    let tokens = o.prompt_tokens.unwrap();
    assert!(tokens > 1500, "{o:?}");
    let msg = o.message.as_deref().unwrap();
    assert!(
        msg.contains(&format!(
            "the prompt is {tokens} tokens with the whole unit"
        )) && msg.contains("with only the kernel and the helpers it calls (no helpers)")
            && msg.contains("max_prompt_tokens = 1500; nothing was sent"),
        "{msg}"
    );
    for line in std::fs::read_to_string(d.join("out.jsonl"))
        .unwrap()
        .lines()
    {
        schema_check("record.schema.json", &serde_json::from_str(line).unwrap());
    }
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["reasons"]["prompt_too_large"], 1);
    schema_check("synth-report.schema.json", &report);

    // Without a budget the whole unit goes, as before (another folder: its own cache).
    server.clear();
    let dir2 = tempfile::tempdir().unwrap();
    let d2 = dir2.path();
    let input2 = d2.join("pairs.jsonl");
    write_records(&input2, &recs[1..2]).unwrap();
    synth(d2, &input2, &llm, &[]);
    let seen = server.seen();
    let prompt = seen[0].body["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("#define C_399") && prompt.contains("The optimized source:"));
    let p = &pairs_by_kernel(&d2.join("out.jsonl"))["k_big"];
    assert_eq!(outcome(p).unwrap().prompt_scope, None);
}

// ---------------------------------------------------------------- candidates per technique (issue 27)

/// `--candidates per-technique`: a kernel with two techniques gets three candidates (both
/// undone, then each alone), each checked and kept with its label in its kernel's group;
/// every request is cached per candidate, so a rerun sends nothing; the default asks one.
#[test]
fn per_technique_candidates_are_checked_labelled_and_cached_each() {
    use kernelpair::record::Undo;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // shared memory undone alone: the tile goes, __ldg stays.
    let no_tile = "__global__ void k_two(float* out, const float* __restrict__ in, int n) {\n\
                   \x20   int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
                   \x20   if (i < n) out[i] = 2.0f * __ldg(&in[i]);\n\
                   }\n";
    let server = Server::start(move |req: &Seen, _: &[Seen]| {
        let prompt = req.body["messages"][1]["content"].as_str().unwrap_or("");
        if prompt.contains("Undo exactly one of its techniques:\n- shared_memory") {
            Reply::Ok(fenced(no_tile))
        } else if prompt.contains("Undo exactly one of its techniques:\n- read_only_cache") {
            // The model hands the fast kernel back: rejected, and kept as such.
            Reply::Ok(fenced(&fast_source("k_two")))
        } else {
            Reply::Ok(fenced(&naive_source("k_two")))
        }
    });
    let pending = pending_pair("k_two");
    let input = d.join("pairs.jsonl");
    write_records(&input, &[Record::Pair(Box::new(pending.clone()))]).unwrap();
    let llm = llm_toml(d, &server.url);
    let out = synth(d, &input, &llm, &["--candidates", "per-technique"]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(
        out.status.code(),
        Some(3),
        "one candidate is rejected\n{stderr}"
    );
    assert!(
        stderr.contains("1 pending pairs, 3 candidates: 2 accepted"),
        "{stderr}"
    );
    assert_eq!(server.count(), 3, "one request per candidate");
    // Requests run concurrently: pick the shared-memory candidate's by its content.
    let one = server
        .seen()
        .into_iter()
        .find(|s| {
            s.body["messages"][1]["content"]
                .as_str()
                .unwrap()
                .contains("Undo exactly one of its techniques:\n- shared_memory")
        })
        .unwrap();
    let prompt = one.body["messages"][1]["content"].as_str().unwrap();
    assert!(
        prompt.contains("Keep the other techniques it uses as they are:\n- read_only_cache"),
        "{prompt}"
    );

    let pairs: Vec<Pair> = read_records(&d.join("out.jsonl"))
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            Record::Pair(p) => Some(*p),
            _ => None,
        })
        .collect();
    let labels: Vec<String> = pairs
        .iter()
        .map(|p| {
            outcome(p)
                .unwrap()
                .candidate
                .as_ref()
                .unwrap()
                .undo
                .label()
                .to_string()
        })
        .collect();
    assert_eq!(labels, ["all", "shared_memory", "read_only_cache"]);
    for p in &pairs {
        let c = outcome(p).unwrap().candidate.clone().unwrap();
        assert_eq!(c.group, pending.id, "one group per kernel");
    }
    assert_eq!(
        pairs[0].id, pending.id,
        "the all candidate keeps the pair's id"
    );
    let ids: std::collections::BTreeSet<&str> = pairs.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids.len(), 3, "each candidate is a pair of its own");
    assert!(accepted(&pairs[0]) && accepted(&pairs[1]));
    // What the shared-memory candidate undid is what its pair's techniques say.
    assert!(
        pairs[1].techniques.contains(&"shared_memory".to_string()),
        "{:?}",
        pairs[1].techniques
    );
    assert!(
        !pairs[1].techniques.contains(&"read_only_cache".to_string()),
        "{:?}",
        pairs[1].techniques
    );
    assert_eq!(
        outcome(&pairs[1]).unwrap().candidate.as_ref().unwrap().undo,
        Undo::One {
            technique: "shared_memory".into()
        }
    );
    assert_eq!(reason(&pairs[2]).as_deref(), Some("same_as_fast"));
    for line in std::fs::read_to_string(d.join("out.jsonl"))
        .unwrap()
        .lines()
    {
        schema_check("record.schema.json", &serde_json::from_str(line).unwrap());
    }
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    assert_eq!(
        (report["pending"].as_u64(), report["candidates"].as_u64()),
        (Some(1), Some(3))
    );
    assert_eq!(
        (report["accepted"].as_u64(), report["rejected"].as_u64()),
        (Some(2), Some(1))
    );
    schema_check("synth-report.schema.json", &report);

    // Cached per candidate: without the journal, a rerun sends nothing and writes the same.
    let first = std::fs::read(d.join("out.jsonl")).unwrap();
    std::fs::remove_file(d.join("out.jsonl.journal")).unwrap();
    server.clear();
    synth(d, &input, &llm, &["--candidates", "per-technique"]);
    assert_eq!(server.count(), 0);
    assert_eq!(std::fs::read(d.join("out.jsonl")).unwrap(), first);

    // At most 2: `all` and the first technique, both from the cache.
    server.clear();
    synth(d, &input, &llm, &["--candidates", "2", "--journal", "j2"]);
    assert_eq!(server.count(), 0);
    let two = read_records(&d.join("out.jsonl")).unwrap();
    assert_eq!(two.len(), 2);

    // The default asks one candidate, and its record carries no candidate label.
    let dir2 = tempfile::tempdir().unwrap();
    let d2 = dir2.path();
    let input2 = d2.join("pairs.jsonl");
    write_records(&input2, &[Record::Pair(Box::new(pending))]).unwrap();
    server.clear();
    let out = synth(d2, &input2, &llm, &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(server.count(), 1);
    let recs = read_records(&d2.join("out.jsonl")).unwrap();
    let Record::Pair(p) = &recs[0] else { panic!() };
    assert_eq!(outcome(p).unwrap().candidate, None);
}
