//! Reading a `done` line's words (docs/spec/dod.md#gate): the pull request it names
//! and whether it is the no-mistakes pipeline's final `PR … checks green`
//! line. Pure text functions, used by the gate's [`super::gate::precheck`].

fn trim_punct(w: &str) -> &str {
    w.trim_end_matches([',', '.', ';', ':', ')'])
        .trim_start_matches(['(', '<'])
        .trim_end_matches('>')
}

/// The word `PR` (any case, surrounding punctuation dropped: `PR:`, `(PR`).
fn is_pr_token(w: &str) -> bool {
    trim_punct(w).eq_ignore_ascii_case("pr")
}

/// `PR#N` written as one word (any case).
fn is_glued_pr_number(w: &str) -> bool {
    let w = trim_punct(w).to_ascii_lowercase();
    w.strip_prefix("pr#").is_some_and(is_number)
}

/// `#N`, the number after a `PR` token.
fn is_hash_number(w: &str) -> bool {
    trim_punct(w).strip_prefix('#').is_some_and(is_number)
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn is_http_url(w: &str) -> bool {
    let w = trim_punct(w).to_ascii_lowercase();
    w.starts_with("https://") || w.starts_with("http://")
}

fn is_pull_url(w: &str) -> bool {
    let w = trim_punct(w);
    (w.starts_with("https://") || w.starts_with("http://"))
        && w.split('/')
            .any(|seg| seg == "pull" || seg == "pulls" || seg == "merge_requests")
}

/// The pull-request URL a done line names, if any: the `https://…` word
/// after a `PR` token (`PR`, `PR:`, any case), else the first pull URL
/// anywhere in the text. Trailing punctuation is dropped.
pub(crate) fn pr_url(text: &str) -> Option<&str> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let after_token = words.windows(2).find_map(|w| {
        (is_pr_token(w[0]) && trim_punct(w[1]).starts_with("https://")).then(|| trim_punct(w[1]))
    });
    after_token.or_else(|| {
        words
            .iter()
            .copied()
            .find(|w| is_pull_url(w))
            .map(trim_punct)
    })
}

/// Whether a done line names a pull request the way the final line does:
/// the word `PR` followed by an http(s) URL or by `#N`, or `PR#N` as one
/// word (any case). The bare word — "addressed the PR feedback" — is not a
/// pull request named.
fn names_pr(text: &str) -> bool {
    let words: Vec<&str> = text.split_whitespace().collect();
    words.iter().any(|w| is_glued_pr_number(w))
        || words
            .windows(2)
            .any(|w| is_pr_token(w[0]) && (is_http_url(w[1]) || is_hash_number(w[1])))
}

/// The no-mistakes final line, `PR <url> … checks green`, recognised in
/// the forms workers actually write: `PR <url>`, `PR #N`, `PR#N`, or the
/// words `checks green` (any case). Every other done line is the
/// pipeline hand-off.
pub(crate) fn is_checks_green(text: &str) -> bool {
    names_pr(text) || text.to_lowercase().contains("checks green")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pr_urls() {
        assert_eq!(
            pr_url("PR: https://g/o/r/pull/3 checks green"),
            Some("https://g/o/r/pull/3")
        );
        assert_eq!(pr_url("pr https://x/1"), Some("https://x/1"));
        assert_eq!(
            pr_url("opened (https://g/o/r/pull/4)."),
            Some("https://g/o/r/pull/4")
        );
        assert_eq!(
            pr_url("PR https://g/o/r/pull/3 checks green"),
            Some("https://g/o/r/pull/3")
        );
        assert_eq!(pr_url("PR #3"), None);
        assert_eq!(pr_url("see PR https://x/1."), Some("https://x/1"));
    }
}
