//! The web cockpit in a real browser: `fm serve` over a fixture fleet of
//! live stand-in workers (the one `fm top`'s tests use), and headless
//! Chromium driven over its `DevTools` protocol ([`crate::browser`]). The
//! page is reached with the captain's token and not without; its rows come
//! attention first and move when a worker writes a status line; a
//! decision answered in the page lands on the ledger once, however often
//! it is submitted and from however many browsers; a forged cross-site
//! form is refused; screenshots at a phone's and a desktop's size are
//! saved (`<target>/tmp/screenshots/`).

use std::path::PathBuf;
use std::time::Instant;

use crate::browser::{Chromium, Page, js_str};
use crate::harness::{Started, wait_for};
use crate::top::Fleet;

/// Generous bound for what a page must come to show.
const SECS: f64 = 20.0;

/// `fm serve` on a free loopback port of the fleet's home.
struct Served {
    _proc: Started,
    /// `http://127.0.0.1:PORT`
    base: String,
    /// The first line it printed: the address with the token.
    token_url: String,
}

fn serve(f: &Fleet) -> Served {
    let proc =
        f.h.fm("fm")
            .args(["serve", "--listen", "127.0.0.1:0"])
            .status_any()
            .stdout_any()
            .stderr_any()
            .start();
    wait_for("fm serve's first line", SECS, || {
        proc.stdout_so_far().contains('\n')
    });
    let out = proc.stdout_so_far();
    let token_url = out.lines().next().unwrap().trim().to_string();
    assert!(
        token_url.starts_with("http://127.0.0.1:") && token_url.contains("token="),
        "the first line is the address with the token: {token_url:?}"
    );
    let rest = &token_url["http://".len()..];
    let base = format!("http://{}", &rest[..rest.find('/').unwrap_or(rest.len())]);
    Served {
        _proc: proc,
        base,
        token_url,
    }
}

/// The task ids of the page's rows, in order.
fn row_ids(p: &mut Page) -> Vec<String> {
    let v = p.eval("[...document.querySelectorAll('#rows tr.row')].map(r => r.dataset.task)");
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn version(p: &mut Page) -> u64 {
    p.eval("Number(document.body.dataset.version || 0)")
        .as_u64()
        .unwrap_or(0)
}

/// `resolved` lines of a status log that carry `key`.
fn resolved_lines(f: &Fleet, id: &str, key: &str) -> Vec<String> {
    f.h.read_string(&format!("state/{id}.status"))
        .lines()
        .filter(|l| l.starts_with("resolved") && l.contains(&format!("[key={key}]")))
        .map(str::to_string)
        .collect()
}

/// The inbox records of `id` whose text holds `needle`, pending or
/// handled (the stand-in acknowledges what it reads).
fn inbox_with(f: &Fleet, id: &str, needle: &str) -> usize {
    let dir = f.h.path(&format!("state/{id}.inbox"));
    [dir.clone(), dir.join("handled")]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".msg"))
        .filter(|e| std::fs::read_to_string(e.path()).is_ok_and(|s| s.contains(needle)))
        .count()
}

fn shots() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots")
}

/// A status line as the worker writes it, through `fm-status`.
fn status(f: &Fleet, id: &str, args: &[&str]) {
    f.h.fm("status")
        .arg(id)
        .args(args)
        .stdout_any()
        .stderr_any()
        .run();
}

#[test]
fn the_page_needs_the_token_then_shows_the_fleet_attention_first_and_live() {
    let Some(f) = Fleet::new() else { return };
    let Some(chrome) = Chromium::start() else {
        return;
    };
    let s = serve(&f);
    let mut p = chrome.page();

    // Without the token: nothing of the fleet.
    p.goto(&format!("{}/", s.base));
    let text = p.text();
    assert!(
        p.eval("document.getElementById('rows') === null") == true,
        "no rows without the token: {text}"
    );
    for id in ["schema", "deaf", "login", "docs"] {
        assert!(!text.contains(id), "{id} shown without the token: {text}");
    }
    p.goto(&format!("{}/task/schema/decision/schema", s.base));
    assert!(
        !p.text().contains("postgres or sqlite"),
        "a decision shown without the token"
    );

    // With it: a cookie, the token gone from the address, the rows.
    p.goto(&s.token_url);
    let url = p.url();
    assert!(!url.contains("token"), "the token left the address: {url}");
    p.wait(
        "the rows",
        SECS,
        "document.querySelectorAll('#rows tr.row').length >= 5",
    );
    let ids = row_ids(&mut p);
    let pos = |id: &str| ids.iter().position(|x| x == id).unwrap();
    // Needs-you rows (a decision, an escalated message, a lost pane) come
    // before the working and the done ones.
    for first in ["schema", "deaf", "gone"] {
        for later in ["login", "docs"] {
            assert!(pos(first) < pos(later), "{first} before {later}: {ids:?}");
        }
    }
    let reason = p
        .eval("document.querySelector('#rows tr.row[data-task=\"schema\"] td.reason').textContent");
    assert!(
        reason.as_str().is_some_and(|r| !r.trim().is_empty()),
        "schema's row says why it needs the captain: {reason}"
    );
    assert_eq!(
        p.eval("document.querySelector('#rows tr.row[data-task=\"schema\"] a.decision').getAttribute('href')"),
        "/task/schema/decision/schema"
    );

    // Live: a worker's status line moves its row without a reload.
    p.eval("window.__samePage = true");
    let before = version(&mut p);
    let t0 = Instant::now();
    status(
        &f,
        "login",
        &["needs-decision", "--key", "cache", "redis or memcached?"],
    );
    p.wait(
        "login's decision to show",
        SECS,
        "!!document.querySelector('#rows tr.row[data-task=\"login\"] a.decision')",
    );
    let took = t0.elapsed();
    eprintln!(
        "needs-decision line to its row in the open page: {:.0} ms",
        took.as_secs_f64() * 1000.0
    );
    assert_eq!(p.eval("window.__samePage === true"), true, "no reload");
    assert!(version(&mut p) > before, "the version grew");
    let ids = row_ids(&mut p);
    let pos = |id: &str| ids.iter().position(|x| x == id).unwrap();
    assert!(pos("login") < pos("docs"), "login now needs you: {ids:?}");

    // Worker text is text: markup in a status line runs nothing.
    status(
        &f,
        "docs",
        &[
            "working",
            "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">",
        ],
    );
    p.wait(
        "the markup to show as text",
        SECS,
        "document.querySelector('#rows tr.row[data-task=\"docs\"]').textContent.includes('<script>')",
    );
    assert_eq!(p.eval("typeof window.__pwned"), "undefined");
    assert_eq!(
        p.eval("document.querySelectorAll('#rows script, #rows img').length"),
        0
    );
    p.goto(&format!("{}/task/docs", s.base));
    p.wait(
        "docs' status lines",
        SECS,
        "!!document.querySelector('#status li')",
    );
    assert!(p.text().contains("<script>window.__pwned=1</script>"));
    assert_eq!(p.eval("typeof window.__pwned"), "undefined");
    assert_eq!(
        p.eval("document.querySelectorAll('#status script, #status img').length"),
        0
    );
    // The worker's screen, as text.
    p.wait(
        "docs' screen",
        SECS,
        "(document.querySelector('#screen')||{}).textContent?.includes('stand-in>')",
    );
}

/// Opens `id`'s decision `key` in `p`, fills `answer` and submits it;
/// returns the outcome the page reports.
fn answer_in_page(p: &mut Page, base: &str, id: &str, key: &str, answer: &str) -> String {
    p.goto(&format!("{base}/task/{id}/decision/{key}"));
    p.wait(
        "the answer form",
        SECS,
        "!!document.querySelector('form.answer')",
    );
    p.eval(&format!(
        "document.querySelector('form.answer textarea[name=answer]').value = {}",
        js_str(answer)
    ));
    p.after_navigation("document.querySelector('form.answer button[type=submit]').click()");
    outcome(p)
}

fn outcome(p: &mut Page) -> String {
    p.wait("the result", SECS, "!!document.getElementById('result')");
    p.eval("document.getElementById('result').dataset.outcome")
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn a_decision_answered_in_the_page_lands_once() {
    let Some(f) = Fleet::new() else { return };
    let Some(chrome) = Chromium::start() else {
        return;
    };
    let s = serve(&f);
    let mut p = chrome.page();
    p.goto(&s.token_url);
    p.wait("the rows", SECS, "!!document.querySelector('#rows tr.row')");

    // From the row's link to the question, then the answer.
    p.after_navigation(
        "document.querySelector('#rows tr.row[data-task=\"schema\"] a.decision').click()",
    );
    let q = p.eval("document.getElementById('question').textContent");
    assert!(
        q.as_str()
            .is_some_and(|q| q.contains("postgres or sqlite?")),
        "the whole question: {q}"
    );
    p.eval("document.querySelector('form.answer textarea[name=answer]').value = 'sqlite, for now'");
    p.after_navigation("document.querySelector('form.answer button[type=submit]').click()");
    assert_eq!(outcome(&mut p), "answered");
    assert_eq!(resolved_lines(&f, "schema", "schema").len(), 1);
    assert_eq!(inbox_with(&f, "schema", "sqlite, for now"), 1);

    // Two devices have the same decision open; on the first, the form is
    // submitted twice at once (a double tap, a retry): recorded once.
    status(
        &f,
        "login",
        &["needs-decision", "--key", "cache", "redis or memcached?"],
    );
    let other = Chromium::start().unwrap();
    let mut q = other.page();
    q.goto(&s.token_url);
    q.goto(&format!("{}/task/login/decision/cache", s.base));
    q.wait(
        "the answer form",
        SECS,
        "!!document.querySelector('form.answer')",
    );
    p.goto(&format!("{}/task/login/decision/cache", s.base));
    p.wait(
        "the answer form",
        SECS,
        "!!document.querySelector('form.answer')",
    );
    p.eval("document.querySelector('form.answer textarea[name=answer]').value = 'redis'");
    let both = p.eval(
        "(async () => { const f = document.querySelector('form.answer'); \
           const post = () => fetch(f.action, {method: 'POST', body: new URLSearchParams(new FormData(f))}) \
             .then(r => r.text()).then(t => { const d = new DOMParser().parseFromString(t, 'text/html'); \
               const e = d.getElementById('result'); return e ? e.dataset.outcome : 'none'; }); \
           return await Promise.all([post(), post()]); })()",
    );
    let both: Vec<&str> = both
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        both.contains(&"answered"),
        "one of the two answered: {both:?}"
    );
    assert!(
        both.iter()
            .all(|o| *o == "answered" || *o == "already-answered"),
        "{both:?}"
    );
    assert_eq!(resolved_lines(&f, "login", "cache").len(), 1);
    assert_eq!(inbox_with(&f, "login", "redis"), 1);

    // The second device, its own cookie, answers what is answered.
    q.eval("document.querySelector('form.answer textarea[name=answer]').value = 'memcached'");
    q.after_navigation("document.querySelector('form.answer button[type=submit]').click()");
    assert_eq!(outcome(&mut q), "already-answered");
    assert_eq!(resolved_lines(&f, "login", "cache").len(), 1);
    assert_eq!(inbox_with(&f, "login", "memcached"), 0);
    // A decision page opened now says it is answered and offers no form.
    q.goto(&format!("{}/task/login/decision/cache", s.base));
    assert_eq!(
        q.eval("document.querySelector('form.answer') === null"),
        true
    );

    // Resolved meanwhile, in the terminal, while the form was open.
    status(
        &f,
        "docs",
        &["needs-decision", "--key", "tone", "formal or casual?"],
    );
    q.goto(&format!("{}/task/docs/decision/tone", s.base));
    q.wait(
        "the answer form",
        SECS,
        "!!document.querySelector('form.answer')",
    );
    f.h.fm("send")
        .args(["docs", "--resolve-key", "tone", "casual"])
        .status_any()
        .stdout_any()
        .stderr_any()
        .run();
    assert_eq!(resolved_lines(&f, "docs", "tone").len(), 1);
    q.eval("document.querySelector('form.answer textarea[name=answer]').value = 'formal'");
    q.after_navigation("document.querySelector('form.answer button[type=submit]').click()");
    assert_eq!(outcome(&mut q), "resolved-meanwhile");
    assert_eq!(resolved_lines(&f, "docs", "tone").len(), 1);
    assert_eq!(inbox_with(&f, "docs", "formal"), 0);
}

/// A page on another origin (another port of 127.0.0.1: the same site,
/// so the browser sends the cookie) whose form posts an answer to the
/// cockpit on its own.
fn forger(target: &str, csrf: Option<&str>) -> (String, std::thread::JoinHandle<()>) {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = format!("http://{}", l.local_addr().unwrap());
    let csrf_field = csrf.map_or(String::new(), |c| {
        format!("<input type=hidden name=csrf value=\"{c}\">")
    });
    let page = format!(
        "<!doctype html><form id=f method=post action=\"{target}\">\
         <input type=hidden name=key value=schema>\
         <input type=hidden name=once value=forged>\
         <input type=hidden name=answer value=forged-answer>{csrf_field}</form>\
         <script>document.getElementById('f').submit()</script>"
    );
    let h = std::thread::spawn(move || {
        // One page, then the listener closes.
        if let Ok((mut c, _)) = l.accept() {
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            let _ = write!(
                c,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    (addr, h)
}

#[test]
fn a_forged_cross_site_post_is_refused() {
    let Some(f) = Fleet::new() else { return };
    let Some(chrome) = Chromium::start() else {
        return;
    };
    let s = serve(&f);
    let mut p = chrome.page();
    p.goto(&s.token_url);
    // The real anti-forgery token, as if the forger had learned it: the
    // origin check alone must refuse.
    p.goto(&format!("{}/task/schema/decision/schema", s.base));
    let csrf = p
        .eval("document.querySelector('form.answer input[name=csrf]').value")
        .as_str()
        .unwrap()
        .to_string();
    assert!(!csrf.is_empty());
    let target = format!("{}/task/schema/answer", s.base);
    for token in [None, Some(csrf.as_str())] {
        let (addr, h) = forger(&target, token);
        p.goto(&format!("{addr}/"));
        p.wait(
            "the forged post's answer",
            SECS,
            &format!("location.href.startsWith({})", js_str(&s.base)),
        );
        p.wait("the page", SECS, "document.readyState === 'complete'");
        let text = p.text();
        h.join().unwrap();
        let refused =
            p.eval("(document.getElementById('result') || {dataset: {}}).dataset.outcome");
        assert!(
            refused == "refused" || refused.is_null(),
            "a refusal, not an answer: {refused} {text}"
        );
        assert!(resolved_lines(&f, "schema", "schema").is_empty(), "{text}");
        assert_eq!(inbox_with(&f, "schema", "forged-answer"), 0);
    }
    // The real page still answers.
    assert_eq!(
        answer_in_page(&mut p, &s.base, "schema", "schema", "postgres"),
        "answered"
    );
}

#[test]
fn screenshots_at_a_phones_size_and_a_desktops() {
    let Some(f) = Fleet::new() else { return };
    let Some(chrome) = Chromium::start() else {
        return;
    };
    let s = serve(&f);
    let mut p = chrome.page();
    p.goto(&s.token_url);
    for (name, w, h, mobile) in [("phone", 390, 844, true), ("desktop", 1280, 800, false)] {
        p.viewport(w, h, mobile);
        p.goto(&format!("{}/", s.base));
        p.wait(
            "the rows",
            SECS,
            "document.querySelectorAll('#rows tr.row').length >= 5",
        );
        // Nothing wider than the screen: no sideways scrolling on a phone.
        let wide = p
            .eval("document.documentElement.scrollWidth")
            .as_u64()
            .unwrap();
        assert!(
            wide <= u64::from(w),
            "{name}: page {wide} px wide in {w} px"
        );
        let n = p.screenshot(&shots().join(format!("serve-fleet-{name}.png")));
        assert!(n > 2000, "{name}: a real picture ({n} bytes)");
        p.goto(&format!("{}/task/schema/decision/schema", s.base));
        p.wait(
            "the answer form",
            SECS,
            "!!document.querySelector('form.answer')",
        );
        let wide = p
            .eval("document.documentElement.scrollWidth")
            .as_u64()
            .unwrap();
        assert!(wide <= u64::from(w), "{name}: decision page {wide} px wide");
        p.screenshot(&shots().join(format!("serve-decision-{name}.png")));
    }
    eprintln!("screenshots in {}", shots().display());
}
