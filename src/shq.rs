//! Shell quoting for the commands that briefs and `DoD` blocks print for a
//! worker to paste. Every path is single-quoted, and an apostrophe inside
//! becomes `'\''`, so a home under `/tmp/it's here/` still yields a command
//! a POSIX shell runs as written.

/// `s` as one single-quoted shell word.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// A path as one single-quoted shell word (lossy for non-UTF-8 bytes).
pub fn quote_path(p: &std::path::Path) -> String {
    quote(&p.to_string_lossy())
}

/// The command a worker pastes to append one status line.
pub(crate) fn status_append(verb: &str, text: &str, status_path: &std::path::Path) -> String {
    format!(
        "echo \"{verb} [at=$(date +%s)]: {text}\" >> {}",
        quote_path(status_path)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_apostrophes_and_spaces() {
        assert_eq!(quote("/a b/c"), "'/a b/c'");
        assert_eq!(quote("it's"), "'it'\\''s'");
    }

    #[test]
    fn a_real_shell_reads_the_word_back() {
        for s in ["/tmp/it's here/x", "plain", "a\"b$c`d\\e", "'''", ""] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", quote(s)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), s);
        }
    }
}
