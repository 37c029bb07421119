//! The cockpit's pages, as maud templates: every value interpolated into
//! a page is escaped (`<`, `>`, `&`, `"` and `'`), in text and in
//! attributes alike, so a worker's status line holding `<script>` is
//! shown as text. The element ids and classes are the page contract
//! (docs/spec/serve.md#pages): the browser tests and `app.js` find
//! things by them.
//!
//! The fleet's two live fragments ([`rows`], [`wakes`]) are rendered once
//! per fleet version by the reader ([`super::fleet`]) and sent as they
//! are to every open page; they hold no session's data (the forms that
//! need the anti-forgery token sit outside them).

use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::fleet::Shown;
use crate::crew_state::Row;
use crate::top::seen::FeedLine;

/// A whole page around `body`.
pub fn page(title: &str, version: u64, body: &Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " \u{b7} firstmate" }
                link rel="stylesheet" href="/app.css";
                script src="/app.js" defer {}
            }
            body data-version=(version) {
                header { a href="/" { "firstmate" } }
                main { (body) }
            }
        }
    }
    .into_string()
}

/// The table of rows, attention first (the order given).
pub fn rows(rows: &[Row]) -> Markup {
    html! {
        table id="rows" {
            thead { tr { th { "task" } th { "state" } th { "waiting on you" } th { "detail" } } }
            tbody {
                @for r in rows {
                    tr.row data-task=(r.id) data-state=(r.state.as_str()) {
                        td.task {
                            a href={ "/task/" (r.id) } { (r.id) }
                            @if let Some(h) = &r.host { " " span.host { "@" (h) } }
                        }
                        td.state { (r.state.as_str()) }
                        td.reason { (r.attention.as_ref().map(crate::crew_state::attention::Attention::reason).unwrap_or_default()) }
                        td.detail {
                            (r.detail)
                            @for d in &r.open_decisions {
                                " " a.decision href={ "/task/" (r.id) "/decision/" (d.key) } { "answer " (d.key) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The wakes feed, oldest first, local and the hosts' (`fm top`'s `w`).
pub fn wakes(lines: &[FeedLine], shown: &Shown) -> Markup {
    html! {
        ol id="wakes" data-upto=(shown.upto) data-hosts=(shown.hosts_field()) {
            @for l in lines {
                @let w = &l.wake;
                li.wake.new[l.new] data-seq=(w.seq) {
                    span.when { (crate::clock::rfc3339(w.epoch)) } " "
                    a href={ "/task/" (w.task) } { (w.task) }
                    @if let Some(h) = &l.host { " " span.host { "@" (h) } }
                    " "
                    span.kind { (w.kind) } ": " (w.text)
                }
            }
        }
    }
}

fn csrf(token: &str) -> Markup {
    html! { input type="hidden" name="csrf" value=(token); }
}

/// `GET /`.
pub fn fleet(
    rows_html: &str,
    wakes_html: &str,
    unseen: usize,
    warning: Option<&str>,
    csrf_token: &str,
    shown: &Shown,
) -> Markup {
    html! {
        h1 { "Fleet" }
        @if let Some(w) = warning { p.warning { (w) } }
        (PreEscaped(rows_html))
        section.wakes {
            h2 { "Wakes " span #unseen { (unseen) " new" } }
            (PreEscaped(wakes_html))
            form #wakes-seen method="post" action="/wakes/seen" {
                (csrf(csrf_token))
                // What the feed showed: a wake that arrives later stays
                // new (app.js keeps these in step with the live feed).
                input type="hidden" name="upto" value=(shown.upto);
                input type="hidden" name="hosts" value=(shown.hosts_field());
                button type="submit" { "Mark wakes seen" }
            }
        }
    }
}

/// What a task page shows.
pub struct Task<'a> {
    pub id: &'a str,
    pub row: Option<&'a Row>,
    /// The pane's text, or why it cannot be shown.
    pub screen: Result<Vec<String>, String>,
    pub status: Vec<String>,
    /// The send form's one-time nonce.
    pub once: &'a str,
}

/// `GET /task/ID`.
pub fn task(t: &Task, csrf_token: &str) -> Markup {
    html! {
        h1 { (t.id) }
        @if let Some(r) = t.row {
            p.state data-state=(r.state.as_str()) {
                (r.state.as_str()) " \u{b7} " (r.detail)
            }
            @if let Some(a) = &r.attention { p.reason { (a.reason()) } }
            @if !r.open_decisions.is_empty() {
                ul.decisions {
                    @for d in &r.open_decisions {
                        li { a.decision href={ "/task/" (t.id) "/decision/" (d.key) } { (d.key) ": " (d.text) } }
                    }
                }
            }
        }
        h2 { "Screen" }
        @match &t.screen {
            Ok(lines) => pre #screen { (lines.join("\n")) },
            Err(why) => pre #screen.unavailable { (why) },
        }
        h2 { "Status" }
        ol #status { @for l in &t.status { li { (l) } } }
        h2 { "Send a message" }
        form #send method="post" action={ "/task/" (t.id) "/send" } {
            (csrf(csrf_token))
            input type="hidden" name="once" value=(t.once);
            textarea name="body" rows="3" required {}
            button type="submit" { "Send" }
        }
    }
}

/// What the decision page asks.
pub struct Decision<'a> {
    pub id: &'a str,
    pub key: &'a str,
    /// The question, when the decision is open.
    pub question: Option<&'a str>,
    /// The decision line's identity (docs/spec/serve.md#answer-once).
    pub line: &'a str,
    pub once: &'a str,
    /// What the cockpit answered, when the decision is not open.
    pub answered: Option<&'a str>,
}

/// `GET /task/ID/decision/KEY`.
pub fn decision(d: &Decision, csrf_token: &str) -> Markup {
    html! {
        h1 { (d.id) " \u{b7} " (d.key) }
        @match d.question {
            Some(q) => {
                p #question { (q) }
                form.answer method="post" action={ "/task/" (d.id) "/answer" } {
                    (csrf(csrf_token))
                    input type="hidden" name="key" value=(d.key);
                    input type="hidden" name="once" value=(d.once);
                    input type="hidden" name="line" value=(d.line);
                    textarea name="answer" rows="3" required autofocus {}
                    button type="submit" { "Answer" }
                }
            }
            None => {
                p #question.closed { "This decision is not open (answered, or never asked)." }
                @if let Some(a) = d.answered { p.answered { "Answered here: " (a) } }
            }
        }
        p { a href={ "/task/" (d.id) } { "the task" } }
    }
}

/// The page after a POST: `outcome` is the contract's word.
pub fn result(outcome: &str, text: &str, back: &str) -> Markup {
    html! {
        p #result data-outcome=(outcome) { (text) }
        p { a href=(back) { "back" } }
    }
}

/// The page a request without the token gets: nothing of the fleet.
pub fn unauthorised() -> String {
    page(
        "sign in",
        0,
        &html! {
            h1 { "Not signed in" }
            p { "Open the URL fm serve printed (it carries the token) once in this browser; it sets a cookie and the link is not needed again." }
        },
    )
}
