//! The loopback model server (`tests/model_server/fm_model_server.py`):
//! 127.0.0.1 only, a bounded lifetime, one per test. The test scripts its
//! replies (rewriting the rule file between turns) and reads back what the
//! agent sent it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

/// Longest a server lives, whatever happens to the test.
const MAX_SECS: u32 = 600;

pub struct ModelServer {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
    script: PathBuf,
}

impl ModelServer {
    /// Starts a server in `dir` answering with `rules` (the rule file
    /// format of `tests/model_server/README.md`).
    #[track_caller]
    pub fn start(dir: &Path, rules: &Value) -> ModelServer {
        let server =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/model_server/fm_model_server.py");
        let log = dir.join("model.log");
        let script = dir.join("rules.json");
        write_atomic(&script, rules);
        let mut child = Command::new("python3")
            .arg(&server)
            .args(["--port", "0", "--max-secs", &MAX_SECS.to_string()])
            .arg("--log")
            .arg(&log)
            .arg("--script")
            .arg(&script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the model server");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let port = first
            .trim()
            .strip_prefix("port=")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("model server said {first:?}"));
        ModelServer {
            child,
            port,
            log,
            script,
        }
    }

    /// Replaces the rules (read again on the agent's next request).
    pub fn set_rules(&self, rules: &Value) {
        write_atomic(&self.script, rules);
    }

    /// Every request logged so far.
    pub fn requests(&self) -> Vec<Value> {
        let Ok(text) = std::fs::read_to_string(&self.log) else {
            return Vec::new();
        };
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The agent's main-loop requests (those offering a shell tool).
    pub fn main_requests(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["main"] == json!(true))
            .collect()
    }

    /// The user turns of the latest main request (the whole conversation
    /// the agent sent), each as its list of real text blocks.
    pub fn user_turns(&self) -> Vec<Vec<String>> {
        let reqs = self.main_requests();
        let Some(last) = reqs.last() else {
            return Vec::new();
        };
        last["user_turns"]
            .as_array()
            .map(|turns| {
                turns
                    .iter()
                    .map(|t| {
                        t.as_array()
                            .map(|b| {
                                b.iter()
                                    .map(|x| x.as_str().unwrap_or("").to_string())
                                    .collect()
                            })
                            .unwrap_or_default()
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every text block of every user turn of the latest main request.
    pub fn user_blocks(&self) -> Vec<String> {
        self.user_turns().into_iter().flatten().collect()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        // The child this suite started, by its handle.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn write_atomic(path: &Path, v: &Value) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}
