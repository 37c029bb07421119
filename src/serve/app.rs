//! The routes (docs/spec/serve.md#routes) and the guard every request
//! passes first: the `Host` it was sent to, the token or the session
//! cookie, and for a POST the same-origin check; each POST handler then
//! checks its form's anti-forgery token. GET never changes anything.
//!
//! Library calls block (files, tmux, ssh), so handlers run them with
//! `spawn_blocking`; the runtime's workers only move bytes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Form};
use serde::Deserialize;

use super::answer::{self, Outcome, Submission};
use super::auth::{self, Keys, Origins};
use super::fleet::Fleet;
use super::pages;
use crate::config::Config;
use crate::home::Home;
use crate::task_id::TaskId;

/// Largest request body (a form).
pub const MAX_BODY: usize = 64 * 1024;
/// How long a request body may take to arrive.
const BODY_TIME: Duration = Duration::from_secs(30);
/// How long a page waits for the fleet's first read.
const FIRST_READ: Duration = Duration::from_secs(10);

/// What every handler shares.
pub struct Shared {
    pub home: Home,
    pub cfg: Config,
    pub keys: Keys,
    pub origins: Origins,
    /// The session cookie is `Secure`: under TLS, or behind an https
    /// public URL (the browser sees https though this server speaks http).
    pub secure_cookie: bool,
    pub fleet: Fleet,
    pub streams: AtomicUsize,
    pub max_streams: usize,
}

pub type St = Arc<Shared>;

/// The session cookie of a request that passed the guard.
#[derive(Clone)]
struct Session(String);

pub fn router(s: St) -> Router {
    Router::new()
        .route("/", get(fleet_page))
        .route("/app.js", get(app_js))
        .route("/app.css", get(app_css))
        .route("/events", get(super::events::stream))
        .route("/task/{id}", get(task_page))
        .route("/task/{id}/send", post(send))
        .route("/task/{id}/decision/{key}", get(decision_page))
        .route("/task/{id}/answer", post(answer))
        .route("/wakes/seen", post(wakes_seen))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state(Arc::clone(&s), guard))
        .layer(middleware::map_response(headers))
        .with_state(s)
}

/// The security headers of every response.
async fn headers(mut r: Response) -> Response {
    let h = r.headers_mut();
    for (k, v) in [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        // Not no-referrer: under it a browser sends `Origin: null` with a
        // same-origin form post, which the origin check must refuse.
        (header::REFERRER_POLICY, "same-origin"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        h.insert(k, HeaderValue::from_static(v));
    }
    r
}

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

fn refused(status: StatusCode, why: &str) -> Response {
    html(
        status,
        pages::page("refused", 0, &pages::result("refused", why, "/")),
    )
}

fn header_str(h: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// The query without its `token=` pair, and the token if there was one.
fn split_token(query: &str) -> (Option<&str>, String) {
    let mut token = None;
    let mut rest = Vec::new();
    for kv in query.split('&').filter(|kv| !kv.is_empty()) {
        match kv.strip_prefix("token=") {
            Some(t) => token = Some(t),
            None => rest.push(kv),
        }
    }
    (token, rest.join("&"))
}

/// The guard's refusals end their connection: a client without the
/// token holds no place with kept-alive connections (listen.rs).
async fn guard(State(s): State<St>, req: Request, next: Next) -> Response {
    match admit(s, req).await {
        Ok(req) => next.run(req).await,
        Err(mut r) => {
            if matches!(r.status(), StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
                r.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            r
        }
    }
}

/// The request, once the guard lets it through; else the answer.
async fn admit(s: St, mut req: Request) -> Result<Request, Response> {
    let host = header_str(req.headers(), header::HOST)
        .unwrap_or("")
        .to_string();
    if !s.origins.host_ok(&host) {
        return Err(refused(
            StatusCode::FORBIDDEN,
            &format!("this server does not answer as {host:?}"),
        ));
    }
    let (token, rest) = split_token(req.uri().query().unwrap_or(""));
    if let Some(t) = token {
        if !s.keys.token_ok(t) || req.method() != Method::GET {
            return Err(html(StatusCode::UNAUTHORIZED, pages::unauthorised()));
        }
        let Ok(session) = s.keys.new_session() else {
            return Err(refused(StatusCode::INTERNAL_SERVER_ERROR, "no randomness"));
        };
        let path = req.uri().path();
        let to = if rest.is_empty() {
            path.to_string()
        } else {
            format!("{path}?{rest}")
        };
        let mut r = StatusCode::SEE_OTHER.into_response();
        let h = r.headers_mut();
        if let (Ok(loc), Ok(c)) = (
            HeaderValue::from_str(&to),
            HeaderValue::from_str(&auth::set_cookie(&session, s.secure_cookie)),
        ) {
            h.insert(header::LOCATION, loc);
            h.insert(header::SET_COOKIE, c);
        }
        return Err(r);
    }
    let session = header_str(req.headers(), header::COOKIE)
        .and_then(|c| auth::cookie_value(c, auth::COOKIE))
        .filter(|c| s.keys.session_ok(c))
        .map(str::to_string);
    let Some(session) = session else {
        return Err(html(StatusCode::UNAUTHORIZED, pages::unauthorised()));
    };
    match *req.method() {
        Method::GET | Method::HEAD => {}
        Method::POST => {
            let h = req.headers();
            if let Err(why) = s.origins.same_origin(
                &host,
                header_str(h, header::ORIGIN),
                header_str(h, header::REFERER),
            ) {
                return Err(refused(StatusCode::FORBIDDEN, &why));
            }
        }
        _ => return Err(refused(StatusCode::METHOD_NOT_ALLOWED, "GET or POST only")),
    }
    req.extensions_mut().insert(Session(session));
    if req.method() == Method::POST {
        // The whole body within BODY_TIME and MAX_BODY, before any
        // handler: a client trickling a body holds no handler.
        let (parts, body) = req.into_parts();
        let bytes =
            match tokio::time::timeout(BODY_TIME, axum::body::to_bytes(body, MAX_BODY)).await {
                Ok(Ok(b)) => b,
                Ok(Err(_)) => {
                    return Err(refused(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "the request is too large",
                    ));
                }
                Err(_) => {
                    return Err(refused(
                        StatusCode::REQUEST_TIMEOUT,
                        "the request body was too slow",
                    ));
                }
            };
        req = Request::from_parts(parts, axum::body::Body::from(bytes));
    }
    Ok(req)
}

async fn not_found() -> Response {
    refused(StatusCode::NOT_FOUND, "no such page")
}

async fn app_js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("app.js"),
    )
        .into_response()
}

async fn app_css() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("app.css"),
    )
        .into_response()
}

async fn fleet_page(State(s): State<St>, Extension(Session(c)): Extension<Session>) -> Response {
    let snap = s.fleet.current(FIRST_READ).await;
    let body = pages::fleet(
        &snap.rows_html,
        &snap.wakes_html,
        snap.unseen,
        snap.warning.as_deref(),
        &s.keys.csrf(&c),
        &snap.shown,
    );
    html(StatusCode::OK, pages::page("fleet", snap.version, &body))
}

/// Runs blocking library work off the runtime's workers.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

async fn task_page(
    State(s): State<St>,
    Extension(Session(c)): Extension<Session>,
    Path(id): Path<String>,
) -> Response {
    let Ok(tid) = TaskId::parse(&id) else {
        return refused(StatusCode::NOT_FOUND, "no such task");
    };
    let snap = s.fleet.current(FIRST_READ).await;
    let row = snap.rows.iter().find(|r| r.id == id);
    let s2 = Arc::clone(&s);
    let t2 = tid.clone();
    let read = blocking(move || super::screen::read(&s2.home, &s2.cfg, &t2)).await;
    let (screen, status) = read.unwrap_or((Err("failed".into()), Vec::new()));
    let Ok(once) = auth::random_hex(16) else {
        return refused(StatusCode::INTERNAL_SERVER_ERROR, "no randomness");
    };
    let t = pages::Task {
        id: tid.as_str(),
        row,
        screen,
        status,
        once: &once,
    };
    let body = pages::task(&t, &s.keys.csrf(&c));
    html(StatusCode::OK, pages::page(&id, snap.version, &body))
}

async fn decision_page(
    State(s): State<St>,
    Extension(Session(c)): Extension<Session>,
    Path((id, key)): Path<(String, String)>,
) -> Response {
    let Ok(tid) = TaskId::parse(&id) else {
        return refused(StatusCode::NOT_FOUND, "no such decision");
    };
    if !crate::status::valid_key(&key) {
        return refused(StatusCode::NOT_FOUND, "no such decision");
    }
    let version = s.fleet.latest.borrow().version;
    // A fresh read of this one task: a page must not offer a decision
    // answered a moment ago.
    let s2 = Arc::clone(&s);
    let k2 = key.clone();
    let (rows, answered) = blocking(move || {
        let answered = answer::recorded(&s2.home, &tid, &k2);
        let rows = crate::route::fleet::rows(&s2.home, &s2.cfg, &[tid], crate::clock::now()).0;
        (rows, answered)
    })
    .await
    .unwrap_or_default();
    let open = rows
        .iter()
        .flat_map(|r| &r.open_decisions)
        .find(|d| d.key == key);
    let line = open.map_or_else(String::new, |d| {
        answer::line_identity(&id, &key, d.at, &d.text)
    });
    let Ok(once) = auth::random_hex(16) else {
        return refused(StatusCode::INTERNAL_SERVER_ERROR, "no randomness");
    };
    let d = pages::Decision {
        id: &id,
        key: &key,
        question: open.map(|d| d.text.as_str()),
        line: &line,
        once: &once,
        answered: answered.as_deref().filter(|_| open.is_none()),
    };
    let body = pages::decision(&d, &s.keys.csrf(&c));
    html(StatusCode::OK, pages::page(&key, version, &body))
}

fn outcome_page(word: &str, text: &str, back: &str) -> Response {
    let status = if word == "refused" {
        StatusCode::FORBIDDEN
    } else {
        StatusCode::OK
    };
    html(
        status,
        pages::page(word, 0, &pages::result(word, text, back)),
    )
}

fn csrf_refused(s: &Shared, session: &str, given: &str) -> Option<Response> {
    (!s.keys.csrf_ok(session, given)).then(|| {
        outcome_page(
            "refused",
            "the form's anti-forgery token is missing or wrong: reload the page",
            "/",
        )
    })
}

#[derive(Deserialize)]
struct SendForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    once: String,
    #[serde(default)]
    body: String,
}

async fn send(
    State(s): State<St>,
    Extension(Session(c)): Extension<Session>,
    Path(id): Path<String>,
    Form(f): Form<SendForm>,
) -> Response {
    if let Some(r) = csrf_refused(&s, &c, &f.csrf) {
        return r;
    }
    let back = format!("/task/{id}");
    if f.body.trim().is_empty() {
        return outcome_page("refused", "an empty message", &back);
    }
    let s2 = Arc::clone(&s);
    let id2 = id.clone();
    // The form's nonce keys the send: a double submit or a retry gets the
    // first one's report, and the message is recorded once.
    let key = (!f.once.is_empty()
        && f.once.len() <= 64
        && f.once.bytes().all(|b| b.is_ascii_alphanumeric()))
    .then(|| format!("serve-msg-{}", f.once));
    let sent = blocking(move || {
        crate::top::send_keyed(&s2.home, &s2.cfg, &id2, &f.body, None, key.as_deref())
    })
    .await;
    s.fleet.kick();
    match sent {
        Some(Ok(rep)) => outcome_page("sent", &format!("{id}: {}", rep.record_line()), &back),
        Some(Err(e)) => outcome_page("refused", &crate::error::describe(&e), &back),
        None => outcome_page("refused", "the send failed", &back),
    }
}

#[derive(Deserialize)]
struct AnswerForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    key: String,
    #[serde(default)]
    once: String,
    #[serde(default)]
    line: String,
    #[serde(default)]
    answer: String,
}

async fn answer(
    State(s): State<St>,
    Extension(Session(c)): Extension<Session>,
    Path(id): Path<String>,
    Form(f): Form<AnswerForm>,
) -> Response {
    if let Some(r) = csrf_refused(&s, &c, &f.csrf) {
        return r;
    }
    let s2 = Arc::clone(&s);
    let id2 = id.clone();
    let done = blocking(move || {
        let sub = Submission {
            id: &id2,
            key: &f.key,
            once: &f.once,
            line: Some(f.line.as_str()).filter(|l| !l.is_empty()),
            answer: &f.answer,
        };
        answer::answer(&s2.home, &s2.cfg, &sub)
    })
    .await
    .unwrap_or_else(|| Outcome::Refused("the answer failed".into()));
    s.fleet.kick();
    outcome_page(done.word(), &done.text(), &format!("/task/{id}"))
}

#[derive(Deserialize)]
struct SeenForm {
    #[serde(default)]
    csrf: String,
    /// The local feed's end as the page showed it; none: nothing local.
    #[serde(default)]
    upto: u64,
    /// `<host>:<seq>` pairs the page showed.
    #[serde(default)]
    hosts: String,
}

async fn wakes_seen(
    State(s): State<St>,
    Extension(Session(c)): Extension<Session>,
    Form(f): Form<SeenForm>,
) -> Response {
    if let Some(r) = csrf_refused(&s, &c, &f.csrf) {
        return r;
    }
    let s2 = Arc::clone(&s);
    let shown = super::fleet::Shown {
        upto: f.upto,
        hosts: super::fleet::Shown::parse_hosts(&f.hosts),
    };
    let done = blocking(move || s2.fleet.mark_seen(&s2.home, &shown)).await;
    s.fleet.kick();
    match done {
        Some(Ok(n)) => outcome_page("seen", &format!("{n} wakes marked seen"), "/"),
        Some(Err(e)) => outcome_page("refused", &crate::error::describe(&e), "/"),
        None => outcome_page("refused", "failed", "/"),
    }
}

/// One more open event stream, if the bound allows; dropping the guard
/// gives the place back.
pub struct StreamSlot(St);

impl StreamSlot {
    pub fn take(s: &St) -> Option<StreamSlot> {
        let n = s.streams.fetch_add(1, Ordering::SeqCst);
        if n >= s.max_streams {
            s.streams.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(StreamSlot(Arc::clone(s)))
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.streams.fetch_sub(1, Ordering::SeqCst);
    }
}

pub fn too_many_streams() -> Response {
    refused(
        StatusCode::SERVICE_UNAVAILABLE,
        "too many open event streams; close a page",
    )
}
