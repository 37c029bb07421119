//! Notifications: the watcher's wakes reach a loopback HTTP receiver the
//! test runs, a real tmux client (a pane of a second private server
//! running `tmux attach`), a command and a desktop notifier on `PATH` —
//! once per wake, retried after a failure, never holding up the watcher.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::harness::{Cmd, Started, TestHome, Tmux, wait_for, wait_until};

const SECS: f64 = 15.0;

/// What the receiver answers each request, in order; the last one is
/// repeated.
#[derive(Clone, Copy, PartialEq)]
enum Answer {
    Fail,
    Ok,
    /// Read the request, never answer.
    Hang,
}

/// A loopback HTTP receiver recording every request's head and body.
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<(String, String)>>>,
}

impl Receiver {
    fn start(answers: &[Answer]) -> Receiver {
        Receiver::serve(answers, None)
    }

    /// The same receiver behind TLS: its certificate, for 127.0.0.1, is
    /// signed by the test CA in `tests/fixtures/tls/` ([`TEST_CA`]).
    fn start_tls(answers: &[Answer]) -> Receiver {
        let cert = include_bytes!("../fixtures/tls/server.der").to_vec();
        let key = include_bytes!("../fixtures/tls/server.key.der").to_vec();
        // ring, the one provider built (as for the watcher's client).
        let cfg = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.into()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.into()),
            )
            .unwrap();
        Receiver::serve(answers, Some(Arc::new(cfg)))
    }

    fn serve(answers: &[Answer], tls: Option<Arc<rustls::ServerConfig>>) -> Receiver {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{}/fleet", l.local_addr().unwrap());
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&got);
        let answers = answers.to_vec();
        std::thread::spawn(move || {
            let mut held: Vec<Box<dyn Send>> = Vec::new();
            for (n, conn) in l.incoming().enumerate() {
                let Ok(tcp) = conn else { continue };
                let answer = answers[n.min(answers.len() - 1)];
                match &tls {
                    None => answer_one(tcp, answer, &sink, &mut held),
                    Some(cfg) => {
                        let c = rustls::ServerConnection::new(Arc::clone(cfg)).unwrap();
                        answer_one(rustls::StreamOwned::new(c, tcp), answer, &sink, &mut held);
                    }
                }
            }
        });
        Receiver { url, got }
    }

    fn requests(&self) -> Vec<(String, String)> {
        self.got.lock().unwrap().clone()
    }
}

/// The CA that signed the TLS receiver's certificate, as a client is told
/// to trust it (`SSL_CERT_FILE`).
const TEST_CA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls/ca.pem");

fn answer_one<S: Read + Write + Send + 'static>(
    mut s: S,
    answer: Answer,
    sink: &Mutex<Vec<(String, String)>>,
    held: &mut Vec<Box<dyn Send>>,
) {
    let (head, body) = read_request(&mut s);
    sink.lock().unwrap().push((head, body));
    let status: &[u8] = match answer {
        Answer::Fail => b"500 Oops",
        Answer::Ok => b"200 OK",
        Answer::Hang => return held.push(Box::new(s)),
    };
    let _ = s.write_all(&[b"HTTP/1.1 ", status, b"\r\nContent-Length: 0\r\n\r\n"].concat());
    let _ = s.flush();
}

fn read_request(s: &mut impl Read) -> (String, String) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).into_owned();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < i + 4 + len {
                match s.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let body = String::from_utf8_lossy(&buf[i + 4..]).into_owned();
            return (head, body);
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return (String::from_utf8_lossy(&buf).into_owned(), String::new()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A home whose `[notify]` section is `notify`, with `notify-send` and a
/// command that each append what they were given to a file.
struct Setup {
    h: TestHome,
    bin: PathBuf,
}

impl Setup {
    fn new(socket: &str, notify: &str) -> Setup {
        let h = TestHome::new();
        let bin = h.path("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let ns = bin.join("notify-send");
        std::fs::write(
            &ns,
            format!(
                "#!/bin/sh\nprintf '%s|' \"$@\" >> {}\necho >> {}\n",
                h.path("desktop.out").display(),
                h.path("desktop.out").display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&ns, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let out = h.path("command.out");
        h.write(
            "config/firstmate.toml",
            format!(
                "[tmux]\nsocket = \"{socket}\"\n[notify]\ncommand = [\"sh\", \"-c\", \"printf '%s|%s|%s\\\\n' \\\"$1\\\" \\\"$2\\\" \\\"$3\\\" >> {}\", \"sh\", \"{{task}}\", \"{{kind}}\", \"{{text}}\"]\n{notify}",
                out.display()
            ),
        );
        Setup { h, bin }
    }

    fn watch(&self) -> Cmd {
        let path = format!(
            "{}:{}",
            self.bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        self.h
            .fm("watch")
            .env("PATH", path)
            .env("FM_WATCH_POLL_SECS", "30")
    }

    fn daemon(&self) -> Started {
        let d = self.watch().stdout_any().stderr_any().start();
        wait_for("the watcher to start", SECS, || {
            d.stderr_so_far().contains("watching")
        });
        d
    }

    fn status(&self, id: &str, line: &str) {
        let rel = format!("state/{id}.status");
        let mut log = if self.h.exists(&rel) {
            self.h.read_string(&rel)
        } else {
            String::new()
        };
        log.push_str(line);
        log.push('\n');
        self.h.write(&rel, log);
    }

    fn lines(&self, rel: &str) -> Vec<String> {
        if !self.h.exists(rel) {
            return Vec::new();
        }
        self.h.read_string(rel).lines().map(String::from).collect()
    }
}

fn now() -> u64 {
    firstmate::clock::now()
}

#[test]
fn a_decision_reaches_every_channel_once_and_a_failure_is_retried() {
    let Some(workers) = Tmux::start() else { return };
    let Some(outer) = Tmux::start() else { return };
    // The captain's client: attached to the workers' server, shown in a
    // pane of another server.
    let client = outer.window(
        "captain",
        &[
            "env",
            "-u",
            "TMUX",
            "tmux",
            "-L",
            &workers.socket,
            "attach-session",
            "-t",
            "fm-test",
        ],
    );
    wait_for("the client to attach", SECS, || {
        !workers.run(["list-clients"]).trim().is_empty()
    });
    let r = Receiver::start(&[Answer::Fail, Answer::Ok]);
    let s = Setup::new(
        &workers.socket,
        &format!(
            "tmux = true\ntmux_display_ms = 0\ndesktop = true\nurl = \"{}\"\nurl_timeout_ms = 3000\nretry_secs = 1\n",
            r.url
        ),
    );
    let d = s.daemon();
    s.status(
        "schema",
        &format!(
            "needs-decision [at={}] [key=db]: postgres or sqlite?",
            now()
        ),
    );
    // The receiver failed the first POST; the retry a second later lands.
    wait_for("the retried POST", SECS, || r.requests().len() >= 2);
    let reqs = r.requests();
    for (head, body) in &reqs {
        assert!(head.starts_with("POST /fleet HTTP/1.1\r\n"), "{head}");
        assert!(
            head.contains("\r\nTitle: firstmate: schema needs-decision"),
            "{head}"
        );
        assert_eq!(body, "needs-decision key=db: postgres or sqlite?");
    }
    wait_for("the command", SECS, || !s.lines("command.out").is_empty());
    assert_eq!(
        s.lines("command.out"),
        ["schema|needs-decision|needs-decision key=db: postgres or sqlite?"]
    );
    wait_for("the desktop notification", SECS, || {
        !s.lines("desktop.out").is_empty()
    });
    assert_eq!(
        s.lines("desktop.out"),
        [
            "-a|firstmate|--|firstmate: schema needs-decision|needs-decision key=db: postgres or sqlite?|"
        ]
    );
    wait_for("the message in the captain's client", SECS, || {
        outer
            .capture(&client)
            .contains("firstmate: schema needs-decision: needs-decision key=db")
    });
    wait_for("the bell in the captain's terminal", SECS, || {
        outer
            .run([
                "display-message",
                "-p",
                "-t",
                &client,
                "#{window_bell_flag}",
            ])
            .trim()
            == "1"
    });
    // A done is not asked for; a blocked is, and only it goes out.
    s.status("docs", &format!("done [at={}]: shipped", now()));
    s.status(
        "schema",
        &format!("blocked [at={}] [key=net]: no network", now()),
    );
    wait_for("the second command", SECS, || {
        s.lines("command.out").len() >= 2
    });
    wait_until(1.0, || false);
    assert_eq!(
        s.lines("command.out")[1..],
        ["schema|blocked|blocked key=net: no network"]
    );
    assert_eq!(r.requests().len(), 3, "one POST per wake after the retry");
    let d = {
        d.signal(libc::SIGTERM);
        d.wait(10.0)
    };
    let err = d.stderr();
    assert!(
        err.contains(
            "fm-watch: warning: notify http failed (attempt 1): the server answered 500 Internal Server Error; 1 wake(s) kept, retrying in 1s"
        ),
        "{err}"
    );
    assert_eq!(err.matches("notify http failed").count(), 1, "{err}");
    // A new watcher resumes from each channel's cursor: nothing again.
    let d = s.daemon();
    wait_until(2.5, || false);
    d.signal(libc::SIGTERM);
    d.wait(10.0);
    assert_eq!(s.lines("command.out").len(), 2);
    assert_eq!(s.lines("desktop.out").len(), 2);
    assert_eq!(r.requests().len(), 3);
    for c in ["tmux", "desktop", "http", "command"] {
        assert!(s.h.exists(&format!("state/.notify-{c}.cursor")), "{c}");
    }
}

#[test]
fn a_hanging_receiver_never_holds_the_watcher_and_cron_runs_deliver() {
    let Some(workers) = Tmux::start() else { return };
    let r = Receiver::start(&[Answer::Hang]);
    let s = Setup::new(
        &workers.socket,
        &format!("url = \"{}\"\nurl_timeout_ms = 4000\n", r.url),
    );
    let d = s.daemon();
    s.status("a", &format!("failed [at={}]: gave up", now()));
    wait_for("the POST", SECS, || r.requests().len() == 1);
    // While the POST hangs, the watcher's passes go on.
    s.status("b", &format!("blocked [at={}]: stuck", now()));
    let wakes = || s.h.read_string("state/wakes.log");
    wait_for("b's wake while the POST hangs", 2.0, || {
        wakes().contains("\tb\tstatus\t")
    });
    assert_eq!(r.requests().len(), 1, "still the first POST");
    // The command channel delivered both meanwhile.
    wait_for("both commands", SECS, || s.lines("command.out").len() == 2);
    wait_for("the timeout and the logged failure", SECS, || {
        d.stderr_so_far()
            .contains("notify http failed (attempt 1): no answer within 4000ms")
    });
    d.signal(libc::SIGTERM);
    d.wait(10.0);
    // fm-watch --once (cron) delivers what the daemon could not.
    let ok = Receiver::start(&[Answer::Ok]);
    s.watch()
        .env("FM_NOTIFY_URL", &ok.url)
        .arg("--once")
        .stdout_any()
        .stderr("")
        .run();
    let reqs = ok.requests();
    assert_eq!(reqs.len(), 1, "one POST for the two kept wakes");
    assert!(
        reqs[0].0.contains("\r\nTitle: firstmate: 2 wakes"),
        "{}",
        reqs[0].0
    );
    assert_eq!(
        reqs[0].1,
        "a failed: failed: gave up\nb blocked: blocked: stuck"
    );
    s.watch()
        .env("FM_NOTIFY_URL", &ok.url)
        .arg("--once")
        .stdout_any()
        .stderr("")
        .run();
    assert_eq!(ok.requests().len(), 1, "nothing twice");
}

#[test]
fn a_wake_past_its_age_is_dropped_with_a_log_line_and_a_first_run_skips_history() {
    let Some(workers) = Tmux::start() else { return };
    let s = Setup::new(&workers.socket, "max_age_secs = 60\n");
    // History from before notifications were on: not replayed.
    s.h.write(
        "state/wakes.log",
        format!("1\t{}\told\tstatus\tfailed: long ago\n", now() - 30),
    );
    s.watch().arg("--once").stdout_any().stderr("").run();
    assert!(s.h.exists("state/.notify-command.cursor"));
    assert_eq!(s.lines("command.out"), Vec::<String>::new());
    // A wake this run raises is new, and goes out.
    s.status("new", &format!("failed [at={}]: just now", now()));
    s.watch().arg("--once").stdout_any().stderr("").run();
    assert_eq!(s.lines("command.out"), ["new|failed|failed: just now"]);
    // A wake the watcher logged an hour ago but never delivered.
    let mut log = s.h.read_string("state/wakes.log");
    let seq = log.lines().count() + 1;
    log.push_str(&format!(
        "{seq}\t{}\tstale\tescalation\t001.msg after 3 rings\n",
        now() - 3600
    ));
    s.h.write("state/wakes.log", log);
    s.watch()
        .arg("--once")
        .stdout_any()
        .stderr(format!(
            "fm-watch: warning: notify command: 1 wake(s) older than 60s not sent (seq {seq})\n"
        ))
        .run();
    assert_eq!(s.lines("command.out"), ["new|failed|failed: just now"]);
}

/// An https URL takes the channel's own client, TLS included: the
/// loopback receiver speaks TLS with a certificate from a test CA the
/// watcher is told to trust (`SSL_CERT_FILE`, as curl and OpenSSL read
/// it). A worker's text is the body and nothing else: a body starting
/// with `@` (which names a local file to post for curl) arrives as text,
/// and no program is run with it (a `curl` on `PATH` records any run).
#[test]
fn an_https_body_starting_with_at_is_posted_as_text_not_as_a_file() {
    let r = Receiver::start_tls(&[Answer::Ok]);
    // No tmux channel here: the socket is only a name.
    let s = Setup::new(
        "fm-test-unused",
        &format!(
            "url = \"{}\"\nurl_timeout_ms = 5000\nevents = [\"dialog\"]\n",
            r.url
        ),
    );
    let args = s.h.path("curl.args");
    std::fs::write(
        s.bin.join("curl"),
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > {args}\nexit 1\n",
            args = args.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        s.bin.join("curl"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let watch = || s.watch().env("SSL_CERT_FILE", TEST_CA);
    // The first run starts at the log's end; the wake comes after it.
    watch().arg("--once").stdout_any().stderr("").run();
    let text = "@/etc/hostname";
    let mut log = s.lines("state/wakes.log").join("\n");
    if !log.is_empty() {
        log.push('\n');
    }
    let seq = log.lines().count() + 1;
    log.push_str(&format!("{seq}\t{}\tt1\tdialog\t{text}\n", now()));
    s.h.write("state/wakes.log", log);
    watch().arg("--once").stdout_any().stderr("").run();
    let reqs = r.requests();
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    assert!(
        reqs[0].0.starts_with("POST /fleet HTTP/1.1\r\n"),
        "{}",
        reqs[0].0
    );
    assert!(
        reqs[0].0.contains("\r\nTitle: firstmate: t1 dialog"),
        "{}",
        reqs[0].0
    );
    assert_eq!(reqs[0].1, text, "the text itself, not a file's content");
    let argv = std::fs::read_to_string(&args).unwrap_or_default();
    assert!(!argv.contains("/etc/hostname"), "{argv}");
    assert!(!s.h.exists("curl.args"), "no program ran: {argv}");
}

/// The server's certificate is checked: one signed by a CA the system
/// does not trust is a failed delivery, logged and kept for a retry, and
/// the receiver never sees the note.
#[test]
fn an_https_receiver_with_an_untrusted_certificate_gets_nothing() {
    let r = Receiver::start_tls(&[Answer::Ok]);
    let s = Setup::new(
        "fm-test-unused",
        &format!(
            "url = \"{}\"\nurl_timeout_ms = 5000\nevents = [\"dialog\"]\n",
            r.url
        ),
    );
    // An empty trust store of its own: nothing the system trusts applies.
    let empty = s.h.path("no-ca.pem");
    std::fs::write(&empty, "").unwrap();
    let watch = || s.watch().env("SSL_CERT_FILE", &empty);
    watch().arg("--once").stdout_any().stderr("").run();
    let seq = s.lines("state/wakes.log").len() + 1;
    let mut log = s.lines("state/wakes.log").join("\n");
    if !log.is_empty() {
        log.push('\n');
    }
    log.push_str(&format!("{seq}\t{}\tt1\tdialog\tallow?\n", now()));
    s.h.write("state/wakes.log", log);
    let out = watch().arg("--once").stdout_any().stderr_any().run();
    let err = String::from_utf8_lossy(&out.stderr_bytes).into_owned();
    assert!(
        err.contains("fm-watch: warning: notify http failed (attempt 1): ")
            && err.contains("certificate"),
        "{err}"
    );
    assert!(err.contains("1 wake(s) kept"), "{err}");
    assert!(
        r.requests().iter().all(|(_, body)| body.is_empty()),
        "{:?}",
        r.requests()
    );
}

/// A tmux notification that found no client waits for one, not for a
/// backoff: the captain who attaches later sees it within seconds, and
/// "no client" is said once, not as a failure per retry.
#[test]
fn a_tmux_notification_reaches_a_client_that_attaches_later_without_a_backoff() {
    let Some(workers) = Tmux::start() else { return };
    let Some(outer) = Tmux::start() else { return };
    // A backoff of 60 s would hold the message well past the bound below.
    let s = Setup::new(
        &workers.socket,
        "tmux = true\ntmux_display_ms = 0\nretry_secs = 60\nretry_max_secs = 300\n",
    );
    let d = s.daemon();
    s.status("schema", &format!("blocked [at={}]: no network", now()));
    wait_for("the try that found no client", SECS, || {
        d.stderr_so_far().contains("no tmux client is attached")
    });
    // Let the lane settle into whatever it waits for, then attach.
    wait_until(2.5, || false);
    let client = outer.window(
        "captain",
        &[
            "env",
            "-u",
            "TMUX",
            "tmux",
            "-L",
            &workers.socket,
            "attach-session",
            "-t",
            "fm-test",
        ],
    );
    wait_for("the client to attach", SECS, || {
        !workers.run(["list-clients"]).trim().is_empty()
    });
    let attached = std::time::Instant::now();
    wait_for("the message in the client that attached", 6.0, || {
        outer
            .capture(&client)
            .contains("firstmate: schema blocked: blocked: no network")
    });
    let took = attached.elapsed();
    eprintln!("the message reached the client {took:?} after it attached");
    assert!(took.as_secs_f64() < 6.0, "{took:?}");
    d.signal(libc::SIGTERM);
    let d = d.wait(10.0);
    let err = d.stderr();
    assert_eq!(
        err.matches("no tmux client is attached").count(),
        1,
        "{err}"
    );
    assert!(!err.contains("notify tmux failed"), "{err}");
}
