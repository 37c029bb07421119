//! `GET /events`: the live fleet as server-sent events. Each event is
//! `event: fleet` with one JSON line `{version, rows, wakes, unseen}`,
//! `rows` and `wakes` the rendered (escaped) fragments `app.js` puts in
//! place of `#rows` and `#wakes`. The first event is the current
//! snapshot; each next one the latest when it changes (a slow client
//! skips versions, it never queues them); a comment line every
//! [`KEEPALIVE`] keeps proxies from closing an idle stream. At most
//! `max_streams` are open at once (503 beyond).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use tokio::sync::watch;

use super::app::{St, StreamSlot, too_many_streams};
use super::fleet::Snapshot;

pub const KEEPALIVE: Duration = Duration::from_secs(15);

/// One snapshot as an event.
pub fn event(s: &Snapshot) -> String {
    let data = serde_json::json!({
        "version": s.version,
        "rows": s.rows_html,
        "wakes": s.wakes_html,
        "unseen": s.unseen,
    });
    format!("event: fleet\nid: {}\ndata: {data}\n\n", s.version)
}

struct Stream {
    rx: watch::Receiver<Arc<Snapshot>>,
    first: bool,
    _slot: StreamSlot,
}

pub async fn stream(State(s): State<St>) -> Response {
    let Some(slot) = StreamSlot::take(&s) else {
        return too_many_streams();
    };
    let st = Stream {
        rx: s.fleet.latest.clone(),
        first: true,
        _slot: slot,
    };
    let body = futures_util::stream::unfold(st, |mut st| async move {
        if st.first {
            st.first = false;
            let _ = st.rx.wait_for(|s| s.version > 0).await;
        } else {
            match tokio::time::timeout(KEEPALIVE, st.rx.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return None,
                Err(_) => {
                    return Some((
                        Ok::<_, Infallible>(Bytes::from_static(b": keepalive\n\n")),
                        st,
                    ));
                }
            }
        }
        let text = event(&st.rx.borrow_and_update());
        Some((Ok(Bytes::from(text)), st))
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}
