use super::*;

#[test]
fn escapes_become_visible_and_plain_text_is_untouched() {
    let osc52 = "\x1b]52;c;ZWNobyBoaQ==\x07done";
    assert_eq!(sanitize(osc52), "\\x1b]52;c;ZWNobyBoaQ==\\x07done");
    assert_eq!(sanitize("a\x1b[2Jb\rc\nd"), "a\\x1b[2Jb\\x0dc\\x0ad");
    assert_eq!(
        sanitize("\u{9b}31m \u{202e}txt \x7f"),
        "\\u{9b}31m \\u{202e}txt \\x7f"
    );
    assert!(matches!(sanitize("plain · é\ttab"), Cow::Borrowed(_)));
    let once = sanitize(osc52).into_owned();
    assert_eq!(sanitize(&once), once);
}

#[test]
fn text_holds_only_its_own_colour() {
    let mut t = Text::new();
    t.paint("done", Sgr::Blue, true).push(" \x1b[8mhidden");
    assert_eq!(t, "\x1b[34mdone\x1b[0m \\x1b[8mhidden");
    let mut plain = Text::new();
    plain.paint("done", Sgr::Blue, false).pad(2).trim_end();
    assert_eq!(plain, "done");
}

#[test]
fn json_keeps_the_exact_text_escaped() {
    let v = serde_json::json!({"text": "a\x1b]52;c;x\x07\u{9b}\u{7f}\u{202e}z"});
    let line = json_line(&v).unwrap();
    assert!(!line.chars().any(is_unsafe), "{line}");
    assert!(line.contains("\\u001b") && line.contains("\\u009b") && line.contains("\\u202e"));
    let back: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(back, v);
}

/// Files that may write to the terminal without this layer, and why.
const ALLOWED: &[(&str, &str)] = &[
    ("src/output.rs", "the layer itself"),
    (
        "src/top/run.rs",
        "the dashboard owns the terminal: raw mode, the alternate screen and ratatui's frames",
    ),
    (
        "src/stand_in.rs",
        "the stand-in agent is a worker: its stdout is its own pane",
    ),
];

/// What writes to stdout or stderr directly.
const RAW: &[&str] = &[
    "println!",
    "print!(",
    "eprintln!",
    "eprint!(",
    "io::stdout()",
    "io::stderr()",
    "dbg!(",
];

#[test]
fn only_the_output_layer_writes_to_the_terminal() {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    walk(&root.join("src"), &mut files);
    assert!(files.len() > 50, "src/ not found");
    let mut found = Vec::new();
    for f in files {
        let rel = f.strip_prefix(root).unwrap().display().to_string();
        if ALLOWED.iter().any(|(a, _)| *a == rel) || rel.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        // Unit tests sit at the end of a file, behind `#[cfg(test)]`.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in code.lines().enumerate() {
            let line = line.split("//").next().unwrap_or("");
            if let Some(raw) = RAW.iter().find(|r| line.contains(*r)) {
                found.push(format!("{rel}:{}: {raw}", n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "terminal output outside src/output.rs (print through crate::output):\n{}",
        found.join("\n")
    );
}
