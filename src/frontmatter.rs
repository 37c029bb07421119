//! The YAML frontmatter of briefs and responses (docs/spec/brief.md#frontmatter,
//! docs/spec/chains.md):
//! a block between two `---` lines of flat `key: value` pairs.
//!
//! Only this flat subset is written and read. A value is written plain when
//! it is a safe YAML scalar and double-quoted (JSON escaping, which YAML
//! accepts) otherwise, so any string round-trips. The parser is total: it
//! never panics, and anything outside the subset is a readable error.

/// An ordered list of `key: value` pairs.
pub(crate) type Fields = Vec<(String, String)>;

fn plain_ok(v: &str) -> bool {
    !v.is_empty()
        && v.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'/')
        && v.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/' | b'+' | b':')
        })
        && !v.contains(": ")
        && !matches!(
            v.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "~"
        )
}

/// One scalar as YAML text.
pub(crate) fn scalar(v: &str) -> String {
    if plain_ok(v) {
        v.to_string()
    } else {
        serde_json::Value::from(v).to_string()
    }
}

/// The frontmatter block, from `---` to `---` inclusive, ending in `\n`.
pub fn render(fields: &[(&str, String)]) -> String {
    let mut out = String::from("---\n");
    for (k, v) in fields {
        out.push_str(k);
        out.push_str(": ");
        out.push_str(&scalar(v));
        out.push('\n');
    }
    out.push_str("---\n");
    out
}

/// Splits `text` into its frontmatter fields and the body after the closing
/// `---` line. Errors say what is wrong.
pub fn parse(text: &str) -> Result<(Fields, &str), String> {
    // A file saved with CRLF line endings is still frontmatter.
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("no frontmatter (the file must start with a `---` line)")?;
    let mut fields = Fields::new();
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        offset += line.len();
        let l = line.trim_end_matches(['\n', '\r']);
        if l == "---" {
            return Ok((fields, &rest[offset..]));
        }
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            continue;
        }
        let (k, v) = l
            .split_once(':')
            .ok_or_else(|| format!("frontmatter line {l:?} is not `key: value`"))?;
        let k = k.trim();
        if k.is_empty()
            || !k
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(format!("frontmatter key {k:?} is not a plain name"));
        }
        let v = v.trim();
        let v = if v.starts_with('"') {
            serde_json::from_str::<String>(v)
                .map_err(|_| format!("frontmatter value of {k} is a malformed quoted string"))?
        } else if let Some(inner) = v.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')) {
            inner.replace("''", "'")
        } else {
            v.to_string()
        };
        fields.push((k.to_string(), v));
    }
    Err("frontmatter has no closing `---` line".into())
}

/// The value of `key` (the last occurrence wins).
pub(crate) fn get<'a>(fields: &'a Fields, key: &str) -> Option<&'a str> {
    fields
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_awkward_values() {
        let vals = [
            "t1",
            "2026-11-30T09:15:02Z",
            "it's: odd",
            "\"q\"",
            "",
            "true",
            "a\nb",
            "1.0.0",
            "fm/t1",
        ];
        let fields: Vec<(&str, String)> = vals
            .iter()
            .enumerate()
            .map(|(i, v)| {
                (
                    ["a", "b", "c", "d", "e", "f", "g", "h", "i"][i],
                    v.to_string(),
                )
            })
            .collect();
        let text = format!("{}body\n", render(&fields));
        let (got, body) = parse(&text).unwrap();
        assert_eq!(body, "body\n");
        for (i, v) in vals.iter().enumerate() {
            assert_eq!(got[i].1, *v);
        }
        assert!(
            text.contains("\nb: 2026-11-30T09:15:02Z\n") && text.contains("\nh: 1.0.0\n"),
            "{text}"
        );
    }

    #[test]
    fn malformed_blocks_are_errors() {
        assert!(parse("no front\n").is_err());
        assert!(parse("---\nid: x\n").is_err());
        assert!(parse("---\njust words\n---\n").is_err());
        assert!(parse("---\nid: \"open\n---\n").is_err());
    }
}
