//! Reading an agent's own transcript for the tokens it spent, a chunk at a
//! time (docs/crew-state.md, "Usage per worker").
//!
//! - Claude Code writes one JSONL file per session under
//!   `<config>/projects/<cwd-slug>/<session>.jsonl`; each assistant line
//!   carries `message.usage` (`input_tokens`, `output_tokens`,
//!   `cache_read_input_tokens`, `cache_creation_input_tokens`) and, in
//!   the versions that write it, a `costUSD`. One message is written as
//!   several lines (one per content block) with the same `message.id`:
//!   the last line of a message is the one counted.
//! - Codex writes a rollout per thread; its `token_count` events carry
//!   `info.total_token_usage`, the thread's running total, so the last one
//!   read is the rollout's usage. Codex writes no cost.
//!
//! A [`Cursor`] remembers how far a file was read and what it added up to,
//! so each pass reads only what was appended, at most [`CHUNK`] bytes of
//! it; a line still being written (no newline yet) is left for the next
//! pass, and a line longer than a chunk is skipped whole.

use serde::{Deserialize, Serialize};

use super::Tokens;

/// The most a pass reads of one transcript.
pub const CHUNK: u64 = 8 << 20;

/// Which agent wrote a transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Claude,
    Codex,
}

/// How far one transcript was read, and what it added up to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// Bytes read and counted (always the end of a complete line, or of a
    /// skipped over-long chunk).
    pub offset: u64,
    /// The file's inode when read: another file at the path starts over.
    #[serde(default)]
    pub ino: u64,
    /// Inside a line longer than a chunk: drop bytes up to the next newline.
    #[serde(default)]
    pub skipping: bool,
    /// The tokens counted so far.
    pub tokens: Tokens,
    /// Claude: the message last counted and its tokens (a later line of
    /// the same message replaces them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<(String, Tokens)>,
}

impl Cursor {
    /// Takes `bytes`, read from the file at `self.offset`. Returns whether
    /// anything changed.
    pub fn feed(&mut self, kind: Kind, bytes: &[u8]) -> bool {
        let mut at = 0;
        if self.skipping {
            let Some(i) = memchr::memchr(b'\n', bytes) else {
                self.offset += bytes.len() as u64;
                return !bytes.is_empty();
            };
            at = i + 1;
            self.skipping = false;
        }
        let body = &bytes[at..];
        let Some(last) = memchr::memrchr(b'\n', body) else {
            // A whole chunk without a newline: a line too long to count,
            // skipped to its end.
            if bytes.len() as u64 >= CHUNK {
                self.offset += bytes.len() as u64;
                self.skipping = true;
                return true;
            }
            self.offset += at as u64;
            return at > 0;
        };
        let complete = last + 1;
        for line in body[..complete].split(|b| *b == b'\n') {
            match kind {
                Kind::Claude => self.claude_line(line),
                Kind::Codex => {
                    if let Some(t) = codex_total(line) {
                        self.tokens = t;
                    }
                }
            }
        }
        self.offset += (at + complete) as u64;
        true
    }

    fn claude_line(&mut self, line: &[u8]) {
        let Some((id, t)) = claude_usage(line) else {
            return;
        };
        match &mut self.last {
            Some((last_id, last)) if !id.is_empty() && *last_id == id => {
                self.tokens = self.tokens.minus(last).plus(&t);
                *last = t;
            }
            _ => {
                self.tokens = self.tokens.plus(&t);
                self.last = Some((id, t));
            }
        }
    }
}

/// A Claude Code transcript line's message id and usage, if it is an
/// assistant message with usage.
pub fn claude_usage(line: &[u8]) -> Option<(String, Tokens)> {
    // Most lines carry no usage: skip them unparsed.
    memchr::memmem::find(line, b"\"usage\"")?;
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    let msg = v.get("message")?;
    let u = msg.get("usage")?;
    let n = |k: &str| u.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
    let cost = v
        .get("costUSD")
        .and_then(serde_json::Value::as_f64)
        .filter(|c| c.is_finite() && *c >= 0.0);
    let t = Tokens {
        input: n("input_tokens"),
        output: n("output_tokens"),
        cache_read: n("cache_read_input_tokens"),
        cache_write: n("cache_creation_input_tokens"),
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a finite, non-negative cost in millionths of a dollar"
        )]
        cost_micro_usd: cost.map(|c| (c * 1e6).round() as u64),
    };
    let id = msg
        .get("id")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_string();
    Some((id, t))
}

/// A Codex rollout line's running total, if it is a `token_count` event
/// with one.
pub fn codex_total(line: &[u8]) -> Option<Tokens> {
    memchr::memmem::find(line, b"\"token_count\"")?;
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    let p = v.get("payload")?;
    if p.get("type")?.as_str()? != "token_count" {
        return None;
    }
    let u = p.get("info")?.get("total_token_usage")?;
    let n = |k: &str| u.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
    // Codex counts cached input inside `input_tokens`.
    let cached = n("cached_input_tokens");
    Some(Tokens {
        input: n("input_tokens").saturating_sub(cached),
        output: n("output_tokens"),
        cache_read: cached,
        cache_write: 0,
        cost_micro_usd: None,
    })
}

/// Claude Code's directory name for a working directory: every character
/// that is not an ASCII letter or digit becomes `-`.
pub fn claude_slug(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines as Claude Code 2.1 and Codex 0.169 write them (trimmed).
    const A1: &str = r#"{"parentUuid":"p","type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"x"}],"usage":{"input_tokens":3,"cache_creation_input_tokens":1200,"cache_read_input_tokens":0,"output_tokens":1,"service_tier":"standard"}},"requestId":"req_1","uuid":"u1"}"#;
    const A1B: &str = r#"{"parentUuid":"u1","type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":3,"cache_creation_input_tokens":1200,"cache_read_input_tokens":0,"output_tokens":40}},"requestId":"req_1","uuid":"u2"}"#;
    const A2: &str = r#"{"type":"assistant","costUSD":0.0125,"message":{"id":"msg_2","role":"assistant","content":[],"usage":{"input_tokens":10,"cache_read_input_tokens":1200,"output_tokens":5}}}"#;
    const USER: &str =
        r#"{"type":"user","message":{"role":"user","content":"the word \"usage\" in a prompt"}}"#;
    const TC_NULL: &str = r#"{"timestamp":"2026-12-06T15:37:15.800Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":null}}"#;
    const TC1: &str = r#"{"timestamp":"2026-12-06T15:37:20.100Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":2000,"cached_input_tokens":500,"output_tokens":30,"reasoning_output_tokens":0,"total_tokens":2030},"last_token_usage":{"input_tokens":2000,"cached_input_tokens":500,"output_tokens":30,"reasoning_output_tokens":0,"total_tokens":2030},"model_context_window":258400}}}"#;
    const TC2: &str = r#"{"timestamp":"2026-12-06T15:37:30.100Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":4100,"cached_input_tokens":1900,"output_tokens":70,"reasoning_output_tokens":8,"total_tokens":4170},"last_token_usage":{"input_tokens":2100,"cached_input_tokens":1400,"output_tokens":40,"reasoning_output_tokens":8,"total_tokens":2140},"model_context_window":258400}}}"#;

    fn lines(ls: &[&str]) -> String {
        ls.join("\n") + "\n"
    }

    #[test]
    fn claude_counts_each_message_once_by_its_last_line_and_its_cost() {
        let mut c = Cursor::default();
        assert!(c.feed(Kind::Claude, lines(&[A1, USER, A1B, A2]).as_bytes()));
        assert_eq!(
            c.tokens,
            Tokens {
                input: 13,
                output: 45,
                cache_read: 1200,
                cache_write: 1200,
                cost_micro_usd: Some(12_500),
            }
        );
        assert_eq!(c.offset, lines(&[A1, USER, A1B, A2]).len() as u64);
    }

    #[test]
    fn a_line_still_being_written_waits_for_the_next_pass() {
        let text = lines(&[A1, A2]);
        let cut = A1.len() + 1 + 30;
        let mut c = Cursor::default();
        c.feed(Kind::Claude, &text.as_bytes()[..cut]);
        assert_eq!(c.offset, A1.len() as u64 + 1);
        assert_eq!(c.tokens.output, 1);
        c.feed(
            Kind::Claude,
            &text.as_bytes()[usize::try_from(c.offset).unwrap()..],
        );
        assert_eq!(c.offset, text.len() as u64);
        assert_eq!(c.tokens.output, 6);
        // Nothing new: nothing changes.
        assert!(!c.feed(Kind::Claude, b""));
        assert!(!c.feed(Kind::Claude, b"{\"partial"));
    }

    #[test]
    fn the_same_message_across_two_passes_is_still_counted_once() {
        let mut c = Cursor::default();
        c.feed(Kind::Claude, lines(&[A1]).as_bytes());
        c.feed(Kind::Claude, lines(&[A1B]).as_bytes());
        assert_eq!((c.tokens.input, c.tokens.output), (3, 40));
    }

    #[test]
    fn codex_takes_the_last_running_total() {
        let mut c = Cursor::default();
        c.feed(Kind::Codex, lines(&[TC_NULL, TC1]).as_bytes());
        assert_eq!(
            c.tokens,
            Tokens {
                input: 1500,
                output: 30,
                cache_read: 500,
                cache_write: 0,
                cost_micro_usd: None
            }
        );
        c.feed(Kind::Codex, lines(&[TC_NULL, TC2]).as_bytes());
        assert_eq!((c.tokens.input, c.tokens.cache_read), (2200, 1900));
        assert_eq!(c.tokens.total(), 4170);
    }

    #[test]
    fn a_line_longer_than_a_chunk_is_skipped_whole() {
        let mut c = Cursor::default();
        let chunk = usize::try_from(CHUNK).unwrap();
        let huge = vec![b'x'; chunk];
        assert!(c.feed(Kind::Claude, &huge));
        assert!(c.skipping);
        // The rest of the long line, then a counted one.
        let rest = format!("yyyy\n{A2}\n");
        c.feed(Kind::Claude, rest.as_bytes());
        assert!(!c.skipping);
        assert_eq!(c.tokens.output, 5);
        assert_eq!(c.offset, CHUNK + rest.len() as u64);
    }

    /// Feeds `text` cut at `cuts` as passes would read it: each pass from
    /// the cursor's offset up to the next cut.
    fn fed_in_passes(kind: Kind, text: &[u8], cuts: &[usize]) -> Cursor {
        let mut c = Cursor::default();
        let mut ends: Vec<usize> = cuts.iter().map(|x| x % (text.len() + 1)).collect();
        ends.push(text.len());
        ends.sort_unstable();
        for end in ends {
            let from = usize::try_from(c.offset).unwrap();
            if end > from {
                c.feed(kind, &text[from..end]);
            }
        }
        c
    }

    proptest::proptest! {
        /// Where the passes happen to cut the file changes nothing: the
        /// totals are those of one read of the whole file.
        #[test]
        fn the_totals_do_not_depend_on_where_passes_cut(
            picks in proptest::collection::vec(0usize..7, 0..12),
            cuts in proptest::collection::vec(0usize..4000, 0..6),
        ) {
            let all = [A1, A1B, A2, USER, TC_NULL, TC1, TC2];
            let text = picks.iter().map(|&i| all[i]).collect::<Vec<_>>().join("\n") + "\n";
            for kind in [Kind::Claude, Kind::Codex] {
                let whole = fed_in_passes(kind, text.as_bytes(), &[]);
                let cut = fed_in_passes(kind, text.as_bytes(), &cuts);
                proptest::prop_assert_eq!(cut.tokens, whole.tokens);
                proptest::prop_assert_eq!(cut.offset, text.len() as u64);
            }
        }
    }

    #[test]
    fn slugs_are_claude_codes() {
        assert_eq!(
            claude_slug("/home/cap/fm/worktrees/fix-login.2"),
            "-home-cap-fm-worktrees-fix-login-2"
        );
    }
}
