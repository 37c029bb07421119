//! A real browser for the web cockpit's tests: Debian's headless Chromium,
//! started with a throwaway profile and driven over its `DevTools` protocol
//! (a WebSocket of JSON commands) — navigate, evaluate in the page, click
//! by script, resize to a phone or a desktop, take a screenshot.
//!
//! Chromium is required by `FM_REQUIRE_BROWSER=1` (CI sets it); without
//! it and without the flag the browser tests say why and return. The
//! web cockpit's benchmark (benches/serve.rs) drives the same client.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};

/// The Chromium program: `FM_CHROMIUM`, else the first of Debian's names
/// found on `PATH` or in `/usr/bin`.
fn program() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FM_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path).chain([PathBuf::from("/usr/bin")]);
    for d in dirs {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = d.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// A headless Chromium of this test's own, killed (by its pid) on drop.
pub struct Chromium {
    child: Child,
    port: u16,
    profile: tempfile::TempDir,
}

impl Chromium {
    /// Starts one, or `None` (with the reason printed) when Chromium is
    /// missing and `FM_REQUIRE_BROWSER` is not `1`.
    #[track_caller]
    pub fn start() -> Option<Chromium> {
        let Some(prog) = program() else {
            assert!(
                std::env::var("FM_REQUIRE_BROWSER").as_deref() != Ok("1"),
                "chromium (Debian's package) is required (FM_REQUIRE_BROWSER=1) but missing"
            );
            eprintln!("skipped: chromium missing (set FM_REQUIRE_BROWSER=1 to fail instead)");
            return None;
        };
        let profile = tempfile::tempdir().unwrap();
        // The flags that keep it off the network (this machine's network is
        // closed; every refused connection would be noise) and out of any
        // state of the caller's.
        let child = Command::new(&prog)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", prog.display()));
        let mut c = Chromium {
            child,
            port: 0,
            profile,
        };
        // It writes the port it chose in the profile once it listens.
        let file = c.profile.path().join("DevToolsActivePort");
        let start = Instant::now();
        loop {
            if let Ok(s) = std::fs::read_to_string(&file)
                && let Some(port) = s.lines().next().and_then(|l| l.trim().parse().ok())
            {
                c.port = port;
                break;
            }
            if let Ok(Some(st)) = c.child.try_wait() {
                panic!("chromium exited at start-up: {st}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "chromium did not open its DevTools port within 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(c)
    }

    /// A new tab, its `DevTools` session open. Tabs share cookies.
    pub fn page(&self) -> Page {
        let url = format!("http://127.0.0.1:{}/json/new?about:blank", self.port);
        let mut resp = ureq::put(&url)
            .send_empty()
            .unwrap_or_else(|e| panic!("chromium /json/new: {e}"));
        let target: Value =
            serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
        let ws_url = target["webSocketDebuggerUrl"]
            .as_str()
            .expect("a new target's WebSocket URL")
            .to_string();
        let stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let (ws, _) = tungstenite::client(ws_url.as_str(), stream)
            .unwrap_or_else(|e| panic!("DevTools WebSocket: {e}"));
        let mut p = Page { ws, next: 0 };
        p.call("Page.enable", json!({}));
        p.call("Runtime.enable", json!({}));
        p
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One tab.
pub struct Page {
    ws: WebSocket<TcpStream>,
    next: u64,
}

impl Page {
    /// Sends `method` and returns its result; a protocol error panics
    /// with the method and the message.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.try_call(method, params)
            .unwrap_or_else(|e| panic!("DevTools {method}: {e}"))
    }

    /// [`Page::call`], the protocol's error returned.
    pub fn try_call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next += 1;
        let id = self.next;
        let msg = json!({"id": id, "method": method, "params": params}).to_string();
        self.ws
            .send(Message::text(msg))
            .map_err(|e| format!("send: {e}"))?;
        loop {
            let m = self.ws.read().map_err(|e| format!("read: {e}"))?;
            let Message::Text(t) = m else { continue };
            let v: Value = serde_json::from_str(t.as_str()).map_err(|e| e.to_string())?;
            // Events (no id) and answers to earlier calls are skipped.
            if v["id"].as_u64() != Some(id) {
                continue;
            }
            if let Some(err) = v.get("error") {
                return Err(err.to_string());
            }
            return Ok(v["result"].clone());
        }
    }

    /// Evaluates `js` in the page (promises awaited) and returns its value;
    /// an exception is an `Err` with its text.
    pub fn try_eval(&mut self, js: &str) -> Result<Value, String> {
        let r = self.try_call(
            "Runtime.evaluate",
            json!({"expression": js, "returnByValue": true, "awaitPromise": true}),
        )?;
        if let Some(ex) = r.get("exceptionDetails") {
            return Err(ex.to_string());
        }
        Ok(r["result"]["value"].clone())
    }

    /// [`Page::try_eval`]; an exception panics.
    pub fn eval(&mut self, js: &str) -> Value {
        self.try_eval(js)
            .unwrap_or_else(|e| panic!("evaluating {js}: {e}"))
    }

    /// Waits until `js` is truthy (exceptions and navigations in between
    /// count as not yet) and returns its value.
    #[track_caller]
    pub fn wait(&mut self, what: &str, secs: f64, js: &str) -> Value {
        let start = Instant::now();
        loop {
            let last = match self.try_eval(js) {
                Ok(v) if truthy(&v) => return v,
                Ok(v) => v.to_string(),
                Err(e) => e,
            };
            assert!(
                start.elapsed().as_secs_f64() < secs,
                "waited {secs} s for {what}; last: {last}\npage: {}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Opens `url` and waits for its document to be loaded.
    #[track_caller]
    pub fn goto(&mut self, url: &str) {
        // A mark on the old document: the new one lacks it.
        let _ = self.try_eval("window.__fmOld = true");
        let r = self.call("Page.navigate", json!({"url": url}));
        if let Some(e) = r.get("errorText").and_then(Value::as_str) {
            panic!("navigating to {url}: {e}");
        }
        self.wait(
            &format!("{url} to load"),
            20.0,
            "!window.__fmOld && document.readyState === 'complete'",
        );
    }

    /// Waits for the document that a click or a form's submission loads.
    #[track_caller]
    pub fn after_navigation(&mut self, act: &str) {
        self.eval("window.__fmOld = true");
        self.eval(act);
        self.wait(
            &format!("the page after `{act}`"),
            20.0,
            "!window.__fmOld && document.readyState === 'complete'",
        );
    }

    /// The page's visible text.
    pub fn text(&mut self) -> String {
        self.try_eval("document.body ? document.body.innerText : ''")
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// The current address.
    pub fn url(&mut self) -> String {
        self.eval("location.href")
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    /// Sizes the viewport as a phone (`mobile`, touch) or a desktop.
    pub fn viewport(&mut self, width: u32, height: u32, mobile: bool) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height,
                   "deviceScaleFactor": if mobile { 2 } else { 1 }, "mobile": mobile}),
        );
    }

    /// A PNG of the viewport, written to `path`; returns its size.
    pub fn screenshot(&mut self, path: &Path) -> usize {
        let r = self.call("Page.captureScreenshot", json!({"format": "png"}));
        let png = base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().expect("screenshot data"))
            .expect("screenshot base64");
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(path, &png).unwrap();
        png.len()
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

/// A JavaScript string literal of `s`.
pub fn js_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}
