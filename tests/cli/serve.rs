//! `fm serve` over plain HTTP (and once over TLS) with `ureq`: a real
//! server process on a free port, in a fixture fleet whose workers are
//! live stand-in agents (`top::Fleet`). What a browser does with the pages
//! is the browser suite's; here, who gets in, what a POST may change, and
//! that an answer is recorded once.

use std::time::Duration;

use crate::harness::{Started, TestHome, bin, wait_for, wait_until};
use crate::top::Fleet;

/// A running `fm serve` and a client that keeps its cookie by hand.
struct Server {
    proc: Option<Started>,
    /// `http://127.0.0.1:PORT`
    base: String,
    token: String,
    agent: ureq::Agent,
}

fn agent(tls: Option<ureq::tls::TlsConfig>) -> ureq::Agent {
    let mut b = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)));
    if let Some(t) = tls {
        b = b.tls_config(t);
    }
    b.build().into()
}

/// A response: status, headers (lower-case names), body.
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `data-outcome` of `#result`.
    fn outcome(&self) -> &str {
        let at = self
            .body
            .find("id=\"result\" data-outcome=\"")
            .unwrap_or_else(|| panic!("no #result in {}: {}", self.status, self.body));
        let rest = &self.body[at + 26..];
        &rest[..rest.find('"').unwrap()]
    }

    /// The value of the hidden input `name`.
    fn input(&self, name: &str) -> String {
        let pat = format!("name=\"{name}\" value=\"");
        let at = self
            .body
            .find(&pat)
            .unwrap_or_else(|| panic!("no input {name} in {}", self.body));
        let rest = &self.body[at + pat.len()..];
        rest[..rest.find('"').unwrap()].to_string()
    }
}

fn read(r: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Resp {
    let mut r = r.expect("the request reached the server");
    let headers = r
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    Resp {
        status: r.status().as_u16(),
        headers,
        body: r.body_mut().read_to_string().unwrap_or_default(),
    }
}

impl Server {
    fn start(h: &TestHome, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut cmd = h.fm("fm").args(["serve", "--listen", "127.0.0.1:0"]);
        cmd = cmd.args(extra);
        for (k, v) in env {
            cmd = cmd.env(k, v);
        }
        Server::wait_url(cmd.stdout_any().stderr_any().start(), None)
    }

    fn wait_url(p: Started, tls: Option<ureq::tls::TlsConfig>) -> Server {
        wait_for("the URL line", 30.0, || p.stdout_so_far().contains('\n'));
        let first = p.stdout_so_far().lines().next().unwrap().to_string();
        let (base, token) = first
            .split_once("/?token=")
            .unwrap_or_else(|| panic!("first line {first:?}"));
        Server {
            base: base.to_string(),
            token: token.to_string(),
            proc: Some(p),
            agent: agent(tls),
        }
    }

    fn get(&self, path: &str, cookie: Option<&str>) -> Resp {
        let mut req = self.agent.get(format!("{}{path}", self.base));
        if let Some(c) = cookie {
            req = req.header("Cookie", format!("fm_session={c}"));
        }
        read(req.call())
    }

    /// Signs in with the token URL; returns the session cookie's value.
    fn sign_in(&self) -> String {
        let r = self.get(&format!("/?token={}", self.token), None);
        assert_eq!(r.status, 303, "{}", r.body);
        let set = r.header("set-cookie").unwrap();
        let v = set.strip_prefix("fm_session=").unwrap();
        v[..v.find(';').unwrap()].to_string()
    }

    fn post(&self, path: &str, cookie: &str, origin: Option<&str>, form: &[(&str, &str)]) -> Resp {
        let mut req = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Cookie", format!("fm_session={cookie}"));
        if let Some(o) = origin {
            req = req.header("Origin", o);
        }
        read(req.send_form(form.iter().copied()))
    }

    fn stop(&mut self, sig: i32) -> i32 {
        let mut p = self.proc.take().unwrap();
        p.signal(sig);
        assert!(
            wait_until(10.0, || p.exited().is_some()),
            "fm serve did not stop"
        );
        p.exited().unwrap()
    }
}

fn own(s: &Server) -> String {
    s.base.clone()
}

/// The answer form of `schema`'s decision, as the page has it.
fn answer_form(s: &Server, c: &str) -> (String, String, String) {
    let d = s.get("/task/schema/decision/schema", Some(c));
    assert_eq!(d.status, 200, "{}", d.body);
    assert!(
        d.body
            .contains("<p id=\"question\">postgres or sqlite?</p>"),
        "{}",
        d.body
    );
    (d.input("csrf"), d.input("once"), d.input("line"))
}

/// The task's records, pending and handled (a stand-in reads its
/// messages at once), as `dir/name` paths below `state/`.
fn inbox(h: &TestHome, id: &str) -> Vec<String> {
    let mut v = Vec::new();
    for dir in [format!("{id}.inbox"), format!("{id}.inbox/handled")] {
        if let Ok(d) = std::fs::read_dir(h.path(&format!("state/{dir}"))) {
            v.extend(
                d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .filter(|n| n.ends_with(".msg"))
                    .map(|n| format!("{dir}/{n}")),
            );
        }
    }
    v.sort();
    v
}

fn resolved_lines(h: &TestHome, id: &str) -> Vec<String> {
    h.read_string(&format!("state/{id}.status"))
        .lines()
        .filter(|l| l.starts_with("resolved"))
        .map(str::to_string)
        .collect()
}

#[test]
fn without_the_token_nothing_shows_and_the_token_url_sets_a_cookie() {
    let Some(f) = Fleet::new() else { return };
    let s = Server::start(&f.h, &[], &[]);
    let r = s.get("/", None);
    assert_eq!(r.status, 401);
    assert!(
        !r.body.contains("schema"),
        "nothing of the fleet: {}",
        r.body
    );
    assert_eq!(s.get("/?token=nope", None).status, 401);
    assert_eq!(s.get("/task/schema", Some("forged.cookie")).status, 401);
    let r = s.get(&format!("/task/schema?token={}&x=1", s.token), None);
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/task/schema?x=1"));
    let set = r.header("set-cookie").unwrap();
    assert!(
        set.ends_with("; HttpOnly; SameSite=Strict; Path=/"),
        "{set}"
    );
    let c = s.sign_in();
    let r = s.get("/", Some(&c));
    assert_eq!(r.status, 200);
    for (h, v) in [
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("cache-control", "no-store"),
    ] {
        assert_eq!(r.header(h), Some(v), "{h}");
    }
    assert!(
        r.header("content-security-policy")
            .unwrap()
            .contains("script-src 'self'")
    );
    // Attention first: the decision, the escalation, the lost pane, then
    // the working and the done.
    let order: Vec<&str> = r
        .body
        .match_indices("<tr class=\"row\" data-task=\"")
        .map(|(i, m)| {
            let rest = &r.body[i + m.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    assert_eq!(order[0], "schema", "{order:?}");
    assert_eq!(order.last(), Some(&"docs"), "{order:?}");
    assert!(
        r.body
            .contains("<a class=\"decision\" href=\"/task/schema/decision/schema\">")
    );
    assert!(
        r.body
            .contains("<td class=\"reason\">needs decision: schema")
    );
    // The task page: the worker's screen as text, its status lines.
    let t = s.get("/task/schema", Some(&c));
    assert!(t.body.contains("<pre id=\"screen\">"), "{}", t.body);
    assert!(
        t.body.contains("stand-in&gt;"),
        "the pane's text: {}",
        t.body
    );
    assert!(
        t.body.contains("<ol id=\"status\"><li>needs-decision"),
        "{}",
        t.body
    );
}

#[test]
fn a_cross_origin_or_unforged_post_is_refused_and_writes_nothing() {
    let Some(f) = Fleet::new() else { return };
    let s = Server::start(&f.h, &[], &[]);
    let c = s.sign_in();
    let (csrf, once, line) = answer_form(&s, &c);
    let form = |csrf: &'static str| -> Vec<(&'static str, &'static str)> {
        let leak = |v: &str| -> &'static str { Box::leak(v.to_string().into_boxed_str()) };
        vec![
            ("csrf", csrf),
            ("key", "schema"),
            ("once", leak(&once)),
            ("line", leak(&line)),
            ("answer", "postgres"),
        ]
    };
    let good = form(Box::leak(csrf.into_boxed_str()));
    let as_ref = |f: &[(&'static str, &'static str)]| f.to_vec();
    let path = "/task/schema/answer";
    let r = s.post(path, &c, Some("http://evil.example"), &as_ref(&good));
    assert_eq!((r.status, r.outcome()), (403, "refused"), "{}", r.body);
    assert!(r.body.contains("cross-origin"), "{}", r.body);
    assert_eq!(
        s.post(path, &c, None, &as_ref(&good)).status,
        403,
        "no Origin"
    );
    let r = s.post(path, &c, Some(&own(&s)), &as_ref(&form("")));
    assert_eq!((r.status, r.outcome()), (403, "refused"), "no csrf");
    let other = s.sign_in();
    let r = s.post(path, &other, Some(&own(&s)), &as_ref(&good));
    assert_eq!(
        (r.status, r.outcome()),
        (403, "refused"),
        "another session's csrf"
    );
    // A name that resolves to loopback (DNS rebinding) is not this server.
    let r = read(
        s.agent
            .get(format!("{}/", s.base))
            .header("Host", "evil.example")
            .header("Cookie", format!("fm_session={c}"))
            .call(),
    );
    assert_eq!(r.status, 403);
    // GET never changes anything.
    assert_eq!(s.get("/wakes/seen", Some(&c)).status, 405);
    assert!(resolved_lines(&f.h, "schema").is_empty());
    assert!(inbox(&f.h, "schema").is_empty());
}

#[test]
fn an_answer_lands_once_when_posted_twice_and_at_once_and_a_second_device_is_told() {
    let Some(f) = Fleet::new() else { return };
    let s = Server::start(&f.h, &[], &[]);
    let c = s.sign_in();
    let (csrf, once, line) = answer_form(&s, &c);
    let form = [
        ("csrf", csrf.as_str()),
        ("key", "schema"),
        ("once", once.as_str()),
        ("line", line.as_str()),
        ("answer", "postgres"),
    ];
    let path = "/task/schema/answer";
    let origin = own(&s);
    let outcomes: Vec<String> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..4)
            .map(|_| sc.spawn(|| s.post(path, &c, Some(&origin), &form).outcome().to_string()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(outcomes, ["answered"; 4]);
    let r = s.post(path, &c, Some(&origin), &form);
    assert_eq!(r.outcome(), "answered", "a retry gets the kept report");
    assert_eq!(resolved_lines(&f.h, "schema").len(), 1, "one resolved line");
    assert_eq!(inbox(&f.h, "schema").len(), 1, "one record");
    let rec =
        f.h.read_string(&format!("state/{}", inbox(&f.h, "schema")[0]));
    assert!(rec.contains("decision schema: postgres"), "{rec}");
    // A second device: its own page (another once), another answer.
    let phone = s.sign_in();
    let d = s.get("/task/schema/decision/schema", Some(&phone));
    assert!(
        !d.body.contains("id=\"question\">postgres"),
        "closed: {}",
        d.body
    );
    assert!(d.body.contains("Answered here: postgres"), "{}", d.body);
    let pcsrf = s.get("/", Some(&phone)).input("csrf");
    let r = s.post(
        path,
        &phone,
        Some(&origin),
        &[
            ("csrf", pcsrf.as_str()),
            ("key", "schema"),
            ("once", "0123456789abcdef"),
            ("line", line.as_str()),
            ("answer", "sqlite"),
        ],
    );
    assert_eq!(r.outcome(), "already-answered", "{}", r.body);
    assert!(r.body.contains("already answered: postgres"), "{}", r.body);
    assert_eq!(resolved_lines(&f.h, "schema").len(), 1);
    assert_eq!(inbox(&f.h, "schema").len(), 1);
}

#[test]
fn a_decision_resolved_meanwhile_says_so_and_sends_nothing() {
    let Some(f) = Fleet::new() else { return };
    let s = Server::start(&f.h, &[], &[]);
    let c = s.sign_in();
    let (csrf, once, line) = answer_form(&s, &c);
    f.h.fm("send")
        .args(["--resolve-key", "schema", "schema", "sqlite"])
        .stdout_any()
        .stderr_any()
        .run();
    assert_eq!(inbox(&f.h, "schema").len(), 1);
    let r = s.post(
        "/task/schema/answer",
        &c,
        Some(&own(&s)),
        &[
            ("csrf", csrf.as_str()),
            ("key", "schema"),
            ("once", once.as_str()),
            ("line", line.as_str()),
            ("answer", "postgres"),
        ],
    );
    assert_eq!(r.outcome(), "resolved-meanwhile", "{}", r.body);
    assert_eq!(inbox(&f.h, "schema").len(), 1, "nothing sent");
    assert_eq!(resolved_lines(&f.h, "schema").len(), 1);
}

#[test]
fn worker_text_is_escaped_in_pages_and_events() {
    let Some(f) = Fleet::new() else { return };
    f.h.write(
        "state/login.status",
        "working: <script>alert(1)</script> & \"quotes\"\n",
    );
    let s = Server::start(&f.h, &[], &[]);
    let c = s.sign_in();
    let r = s.get("/", Some(&c));
    assert!(!r.body.contains("<script>alert"), "{}", r.body);
    assert!(
        r.body
            .contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp;"),
        "{}",
        r.body
    );
    let t = s.get("/task/login", Some(&c));
    assert!(!t.body.contains("<script>alert"));
    assert!(t.body.contains("<li>working: &lt;script&gt;"), "{}", t.body);
    // The event stream carries the same escaped fragment.
    let mut ev = s
        .agent
        .get(format!("{}/events", s.base))
        .header("Cookie", format!("fm_session={c}"))
        .call()
        .unwrap();
    assert_eq!(
        ev.headers().get("content-type").unwrap().to_str().unwrap(),
        "text/event-stream"
    );
    let mut buf = vec![0u8; 64 * 1024];
    let mut got = Vec::new();
    let mut body = ev.body_mut().as_reader();
    while !got.windows(2).any(|w| w == b"\n\n") {
        let n = std::io::Read::read(&mut body, &mut buf).unwrap();
        assert!(n > 0, "the stream ended");
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("event: fleet\n"), "{text}");
    assert!(text.contains("&lt;script&gt;alert(1)"), "{text}");
    assert!(!text.contains("<script>"), "{text}");
}

#[test]
fn bodies_and_event_streams_are_bounded() {
    let h = TestHome::new();
    let s = Server::start(&h, &[], &[("FM_SERVE_MAX_STREAMS", "2")]);
    let c = s.sign_in();
    let csrf = s.get("/", Some(&c)).input("csrf");
    let big = "x".repeat(70 * 1024);
    let r = s.post(
        "/task/t1/send",
        &c,
        Some(&own(&s)),
        &[("csrf", csrf.as_str()), ("body", big.as_str())],
    );
    assert_eq!(r.status, 413);
    let open = |s: &Server| {
        s.agent
            .get(format!("{}/events", s.base))
            .header("Cookie", format!("fm_session={c}"))
            .call()
            .unwrap()
    };
    let a = open(&s);
    let b = open(&s);
    assert_eq!((a.status().as_u16(), b.status().as_u16()), (200, 200));
    let r = read(Ok(open(&s)));
    assert_eq!(r.status, 503);
    drop(a);
    // The place comes back once the server sees the stream closed.
    assert!(wait_until(10.0, || open(&s).status().as_u16() == 200));
    drop(b);
}

#[test]
fn listening_beyond_loopback_needs_allow_remote_and_tls() {
    let h = TestHome::new();
    for extra in [
        &["--listen", "0.0.0.0:0"][..],
        &["--listen", "0.0.0.0:0", "--allow-remote"],
    ] {
        h.fm("fm")
            .arg("serve")
            .args(extra)
            .status(2)
            .stderr_has("ssh -L 7878:127.0.0.1:7878")
            .stderr_has("--allow-remote")
            .run();
    }
    h.fm("fm")
        .args(["serve", "--listen", "nowhere"])
        .status(2)
        .stderr_has("ADDR:PORT")
        .run();
}

/// PEM of DER `bytes` under `label`.
fn pem(label: &str, bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut b64 = String::new();
    for ch in bytes.chunks(3) {
        let n = ch
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= ch.len() {
                b64.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                b64.push('=');
            }
        }
    }
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// Under TLS with the certificate named (the test CA's, for 127.0.0.1),
/// the URL is https and the cookie is Secure; it runs with an empty
/// environment (`env -i`) but the home, and stops on SIGTERM with 0 and
/// on SIGINT with 130.
#[test]
fn tls_with_a_named_certificate_in_an_empty_environment_and_clean_stops() {
    let h = TestHome::new();
    h.write(
        "cert.pem",
        pem("CERTIFICATE", include_bytes!("../fixtures/tls/server.der")),
    );
    h.write(
        "key.pem",
        pem(
            "PRIVATE KEY",
            include_bytes!("../fixtures/tls/server.key.der"),
        ),
    );
    let ca = ureq::tls::Certificate::from_pem(include_bytes!("../fixtures/tls/ca.pem")).unwrap();
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::new_with_certs(&[ca]))
        .build();
    for (sig, code) in [(libc::SIGTERM, 0), (libc::SIGINT, 130)] {
        let p = crate::harness::Cmd::new("env")
            .args(["-i", &format!("FM_HOME={}", h.root().display())])
            .arg(bin("fm"))
            .args(["serve", "--listen", "127.0.0.1:0", "--tls-cert"])
            .arg(h.path("cert.pem"))
            .arg("--tls-key")
            .arg(h.path("key.pem"))
            .stdout_any()
            .stderr_any()
            .start();
        let mut s = Server::wait_url(p, Some(tls.clone()));
        assert!(s.base.starts_with("https://127.0.0.1:"), "{}", s.base);
        let r = s.get(&format!("/?token={}", s.token), None);
        assert_eq!(r.status, 303);
        assert!(r.header("set-cookie").unwrap().ends_with("; Secure"));
        let c = s.sign_in();
        assert_eq!(s.get("/", Some(&c)).status, 200);
        assert_eq!(s.stop(sig), code);
    }
    // The token file is private.
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(h.path("state/.serve.token"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
}

/// Reads events from `r` until one satisfies `f`; returns its data.
fn next_event(
    r: &mut impl std::io::Read,
    buf: &mut Vec<u8>,
    f: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        while let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
            let ev: Vec<u8> = buf.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&ev);
            if let Some(data) = text.lines().find_map(|l| l.strip_prefix("data: ")) {
                let v: serde_json::Value = serde_json::from_str(data).unwrap();
                if f(&v) {
                    return v;
                }
            }
        }
        let n = r.read(&mut chunk).unwrap();
        assert!(n > 0, "the stream ended");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// The page is live: a worker's new status line reaches an open event
/// stream as a higher version whose rows show it, attention first; a
/// message sent from the page lands in the worker's inbox; marking the
/// wakes seen moves `fm top`'s own cursor.
#[test]
fn rows_update_live_and_send_and_mark_seen_use_the_same_use_cases() {
    let Some(f) = Fleet::new() else { return };
    let s = Server::start(&f.h, &[], &[]);
    let c = s.sign_in();
    let mut ev = s
        .agent
        .get(format!("{}/events", s.base))
        .header("Cookie", format!("fm_session={c}"))
        .call()
        .unwrap();
    let mut r = ev.body_mut().as_reader();
    let mut buf = Vec::new();
    let first = next_event(&mut r, &mut buf, |_| true);
    let v1 = first["version"].as_u64().unwrap();
    assert!(v1 >= 1);
    f.h.write(
        "state/login.status",
        "working: typing\nneeds-decision [key=port]: 8080 or 8443?\n",
    );
    let next = next_event(&mut r, &mut buf, |v| {
        v["rows"]
            .as_str()
            .unwrap()
            .contains("/task/login/decision/port")
    });
    assert!(next["version"].as_u64().unwrap() > v1, "{next}");
    let rows = next["rows"].as_str().unwrap();
    let login = rows.find("data-task=\"login\"").unwrap();
    let docs = rows.find("data-task=\"docs\"").unwrap();
    assert!(login < docs, "a decision before a done task: {rows}");
    // Send a message; the same form submitted twice records it once.
    let page = s.get("/task/login", Some(&c));
    let (csrf, once) = (page.input("csrf"), page.input("once"));
    for _ in 0..2 {
        let r2 = s.post(
            "/task/login/send",
            &c,
            Some(&own(&s)),
            &[
                ("csrf", csrf.as_str()),
                ("once", once.as_str()),
                ("body", "use the staging db"),
            ],
        );
        assert_eq!(r2.outcome(), "sent", "{}", r2.body);
    }
    let recs = inbox(&f.h, "login");
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert!(
        f.h.read_string(&format!("state/{}", recs[0]))
            .contains("use the staging db")
    );
    // The wakes feed and its seen cursor.
    let now = firstmate::clock::now();
    f.h.write(
        "state/wakes.log",
        format!("1\t{now}\tschema\tstatus\tneeds-decision key=schema: <b>postgres</b>?\n"),
    );
    assert!(wait_until(10.0, || s
        .get("/", Some(&c))
        .body
        .contains("<li class=\"wake new\"")));
    let page = s.get("/", Some(&c));
    assert!(page.body.contains("&lt;b&gt;postgres"), "{}", page.body);
    let (upto, hosts) = (page.input("upto"), page.input("hosts"));
    let r3 = s.post(
        "/wakes/seen",
        &c,
        Some(&own(&s)),
        &[("csrf", csrf.as_str()), ("upto", &upto), ("hosts", &hosts)],
    );
    assert_eq!(r3.outcome(), "seen", "{}", r3.body);
    let len = std::fs::metadata(f.h.path("state/wakes.log"))
        .unwrap()
        .len();
    assert_eq!(f.h.read_string("state/.top.cursor").trim(), len.to_string());
}

/// With `[serve] public_url`, a decision's notification carries the link
/// to its page in the cockpit (no token in it); other wakes do not.
#[test]
fn a_decisions_notification_links_its_page() {
    let h = TestHome::new();
    let out = h.path("command.out");
    h.write(
        "config/firstmate.toml",
        format!(
            "[tmux]\nsocket = \"fm-test-unused\"\n[notify]\nevents = [\"needs-decision\", \"failed\"]\ncommand = [\"sh\", \"-c\", \"printf '%s\\\\n' \\\"$1\\\" >> {}\", \"sh\", \"{{text}}\"]\n[serve]\npublic_url = \"https://fleet.example/\"\n",
            out.display()
        ),
    );
    let watch = || h.fm("watch").env("FM_WATCH_POLL_SECS", "30").arg("--once");
    // The first run starts at the log's end; the wakes come after it.
    watch().stdout_any().stderr_any().run();
    let now = firstmate::clock::now();
    let mut log = std::fs::read_to_string(h.path("state/wakes.log")).unwrap_or_default();
    let seq = log.lines().count();
    log.push_str(&format!(
        "{}\t{now}\tt1\tstatus\tneeds-decision key=db: postgres or sqlite?\n{}\t{now}\tt2\tstatus\tfailed: tests\n",
        seq + 1,
        seq + 2
    ));
    h.write("state/wakes.log", log);
    watch().stdout_any().stderr_any().run();
    let got = std::fs::read_to_string(&out).unwrap();
    assert!(
        got.contains(
            "needs-decision key=db: postgres or sqlite? https://fleet.example/task/t1/decision/db\n"
        ),
        "{got}"
    );
    assert!(
        got.contains("failed: tests\n") && !got.contains("t2/decision"),
        "{got}"
    );
    assert!(!got.contains("token"), "{got}");
}

/// A task on another host (over a real sshd): its row, decision and
/// status lines come from the host, and the answer lands there, once.
#[test]
fn a_remote_tasks_decision_is_answered_on_its_host_once() {
    let Some(sshd) = crate::sshd::Sshd::start() else {
        return;
    };
    let h = TestHome::new();
    h.write("config/firstmate.toml", sshd.host_toml("far", 10_000));
    h.write("state/t1.meta", "kind=ship\nhost=far\n");
    sshd.far_write("state/t1.meta", "kind=ship\n");
    sshd.far_write(
        "state/t1.status",
        "working: reading\nneeds-decision [key=db]: postgres or <i>sqlite</i>?\n",
    );
    let s = Server::start(&h, &[], &[]);
    let c = s.sign_in();
    let page = s.get("/", Some(&c));
    assert!(
        page.body.contains("href=\"/task/t1/decision/db\""),
        "{}",
        page.body
    );
    let t = s.get("/task/t1", Some(&c));
    let status = &t.body[t.body.find("<ol id=\"status\">").unwrap()..];
    assert!(
        status.contains("reading"),
        "the far status lines: {}",
        t.body
    );
    let d = s.get("/task/t1/decision/db", Some(&c));
    assert!(
        d.body
            .contains("<p id=\"question\">postgres or &lt;i&gt;sqlite&lt;/i&gt;?</p>"),
        "{}",
        d.body
    );
    let (csrf, once, line) = (d.input("csrf"), d.input("once"), d.input("line"));
    let form = [
        ("csrf", csrf.as_str()),
        ("key", "db"),
        ("once", once.as_str()),
        ("line", line.as_str()),
        ("answer", "postgres"),
    ];
    for _ in 0..2 {
        let r = s.post("/task/t1/answer", &c, Some(&own(&s)), &form);
        assert_eq!(r.outcome(), "answered", "{}", r.body);
    }
    let far_status = std::fs::read_to_string(sshd.far_home.join("state/t1.status")).unwrap();
    assert_eq!(
        far_status
            .lines()
            .filter(|l| l.starts_with("resolved"))
            .count(),
        1,
        "{far_status}"
    );
    let far_inbox: Vec<_> = std::fs::read_dir(sshd.far_home.join("state/t1.inbox"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".msg"))
        .collect();
    assert_eq!(far_inbox.len(), 1);
    assert!(!h.exists("state/t1.inbox/001.msg"), "nothing written here");
    // The host's wakes join the feed, and "seen" moves fm top's cursor
    // of that host.
    let now = firstmate::clock::now();
    sshd.far_write(
        "state/wakes.log",
        format!("1\t{now}\tt1\tstatus\tneeds-decision key=db: far away\n"),
    );
    assert!(
        wait_until(20.0, || {
            let b = s.get("/", Some(&c)).body;
            b.contains("<span class=\"host\">@far</span>") && b.contains("far away")
        }),
        "the host's wake on the page"
    );
    let page = s.get("/", Some(&c));
    let (csrf, upto, hosts) = (page.input("csrf"), page.input("upto"), page.input("hosts"));
    assert_eq!(hosts, "far:1");
    let r = s.post(
        "/wakes/seen",
        &c,
        Some(&own(&s)),
        &[("csrf", csrf.as_str()), ("upto", &upto), ("hosts", &hosts)],
    );
    assert_eq!(r.outcome(), "seen");
    assert_eq!(h.read_string("state/.top-hosts.cursor"), "far\t1\n");
}

/// "Mark wakes seen" marks what the page showed: a wake that arrived
/// after the page rendered stays new.
#[test]
fn marking_wakes_seen_spares_a_wake_the_page_never_showed() {
    let h = TestHome::new();
    let s = Server::start(&h, &[], &[]);
    let c = s.sign_in();
    let now = firstmate::clock::now();
    let first = format!("1\t{now}\tt1\tstatus\tneeds-decision key=a: shown\n");
    h.write("state/wakes.log", &first);
    assert!(wait_until(10.0, || s
        .get("/", Some(&c))
        .body
        .contains("<li class=\"wake new\"")));
    let page = s.get("/", Some(&c));
    let (csrf, upto, hosts) = (page.input("csrf"), page.input("upto"), page.input("hosts"));
    assert_eq!(upto, first.len().to_string());
    assert!(
        page.body.contains(&format!("data-upto=\"{upto}\"")),
        "{}",
        page.body
    );
    // A wake arrives while the captain reads the page.
    h.write(
        "state/wakes.log",
        format!("{first}2\t{now}\tt1\tstatus\tfailed: never shown\n"),
    );
    let r = s.post(
        "/wakes/seen",
        &c,
        Some(&own(&s)),
        &[("csrf", &csrf), ("upto", &upto), ("hosts", &hosts)],
    );
    assert_eq!(r.outcome(), "seen", "{}", r.body);
    assert!(r.body.contains("1 wakes marked seen"), "{}", r.body);
    assert_eq!(h.read_string("state/.top.cursor").trim(), upto);
    assert!(
        wait_until(10.0, || {
            let b = s.get("/", Some(&c)).body;
            b.matches("<li class=\"wake new\"").count() == 1 && b.contains("never shown")
        }),
        "the later wake is still new"
    );
    // A form from an older page never moves the cursor back.
    s.post(
        "/wakes/seen",
        &c,
        Some(&own(&s)),
        &[("csrf", &csrf), ("upto", "0"), ("hosts", "")],
    );
    assert_eq!(h.read_string("state/.top.cursor").trim(), upto);
}

/// Behind a proxy that ends TLS (an https public URL) the session cookie
/// is `Secure`, though this server speaks http.
#[test]
fn the_cookie_is_secure_behind_an_https_public_url() {
    let h = TestHome::new();
    for (url, secure) in [
        ("https://fleet.example/", true),
        ("http://fleet.example/", false),
    ] {
        let s = Server::start(&h, &["--public-url", url], &[]);
        let r = s.get(&format!("/?token={}", s.token), None);
        assert_eq!(r.status, 303, "{}", r.body);
        let set = r.header("set-cookie").unwrap();
        assert_eq!(set.ends_with("; Secure"), secure, "{url}: {set}");
    }
}

/// A connection from `from` to the server at `to`.
fn connect_from(rt: &tokio::runtime::Runtime, from: &str, to: &str) -> std::net::TcpStream {
    rt.block_on(async {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.bind(format!("{from}:0").parse().unwrap()).unwrap();
        let tcp = sock.connect(to.parse().unwrap()).await.unwrap();
        let tcp = tcp.into_std().unwrap();
        tcp.set_nonblocking(false).unwrap();
        tcp
    })
}

/// Clients without the token cannot hold the connection places: a
/// refusal closes its connection, one address holds at most 16, and the
/// captain still gets a page at once.
#[test]
fn idle_unauthenticated_connections_leave_the_captain_a_place() {
    use std::io::{Read, Write};
    let h = TestHome::new();
    let s = Server::start(&h, &[], &[]);
    let c = s.sign_in();
    let addr = s.base.strip_prefix("http://").unwrap().to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let request = format!("GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    // A refusal ends its connection: the response, then end of file.
    let mut one = connect_from(&rt, "127.0.0.1", &addr);
    one.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    one.write_all(request.as_bytes()).unwrap();
    let mut got = Vec::new();
    one.read_to_end(&mut got)
        .expect("the server closes a refused connection");
    let got = String::from_utf8_lossy(&got).to_ascii_lowercase();
    assert!(got.starts_with("http/1.1 401"), "{got}");
    assert!(got.contains("connection: close"), "{got}");
    // More idle connections than there are places, from one address,
    // and kept-alive refusals from another.
    let mut held = Vec::new();
    for _ in 0..150 {
        held.push(connect_from(&rt, "127.0.0.2", &addr));
    }
    for _ in 0..40 {
        let mut t = connect_from(&rt, "127.0.0.3", &addr);
        let _ = t.write_all(request.as_bytes());
        held.push(t);
    }
    std::thread::sleep(Duration::from_millis(500));
    // The captain, on a new connection (not one kept from signing in).
    let t0 = std::time::Instant::now();
    let mut captain = connect_from(&rt, "127.0.0.1", &addr);
    captain
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    captain
        .write_all(
            format!(
                "GET / HTTP/1.1\r\nHost: {addr}\r\nCookie: fm_session={c}\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .unwrap();
    let mut page = Vec::new();
    let read = captain.read_to_end(&mut page);
    let page = String::from_utf8_lossy(&page);
    assert!(
        read.is_ok() && page.starts_with("HTTP/1.1 200"),
        "the captain waited {:?}: {read:?} {page}",
        t0.elapsed()
    );
    // Past its 16 places an address is closed at once.
    let closed = held[..150]
        .iter()
        .filter(|t| {
            let mut t: &std::net::TcpStream = t;
            t.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
            match t.read(&mut [0u8; 16]) {
                Ok(n) => n == 0,
                Err(e) => !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
            }
        })
        .count();
    assert!(closed >= 150 - 48, "{closed} closed");
}
