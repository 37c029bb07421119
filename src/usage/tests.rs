use std::path::Path;

use super::*;

const A1: &str = r#"{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[],"usage":{"input_tokens":100,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":7}}}"#;

struct World {
    _d: tempfile::TempDir,
    home: Home,
    cfg: Config,
    id: TaskId,
    meta: TaskMeta,
    transcript: PathBuf,
}

/// A task whose worktree is `<d>/wt` and whose Claude Code keeps its
/// transcripts under `<d>/claude` (the launch's `CLAUDE_CONFIG_DIR`).
fn world() -> World {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("home/state")).unwrap();
    let wt = root.join("wt");
    std::fs::create_dir_all(&wt).unwrap();
    std::fs::write(wt.join(".git"), "gitdir: x\n").unwrap();
    let claude = root.join("claude");
    let toml = format!(
        "[harness.claude]\nenv = [\"CLAUDE_CONFIG_DIR={}\"]\n",
        claude.display()
    );
    let cfg = Config::from_parts(&root.join("config.toml"), Some(&toml), &[]).unwrap();
    let dir = claude
        .join("projects")
        .join(transcript::claude_slug(&wt.to_string_lossy()));
    std::fs::create_dir_all(&dir).unwrap();
    let meta = TaskMeta::parse(format!("harness=claude\nworktree={}\n", wt.display()).as_bytes());
    World {
        home: Home::at(&root.join("home")).unwrap(),
        cfg,
        id: TaskId::parse("t1").unwrap(),
        meta,
        transcript: dir.join("s1.jsonl"),
        _d: d,
    }
}

fn append(p: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(p)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

#[test]
fn the_counter_reads_only_what_was_appended_and_keeps_it() {
    let w = world();
    assert_eq!(refresh(&w.home, &w.cfg, &w.id, &w.meta).unwrap(), None);
    assert!(
        !cache_path(&w.home, &w.id).exists(),
        "no transcript, no file"
    );
    append(&w.transcript, &format!("{A1}\n"));
    let t = refresh(&w.home, &w.cfg, &w.id, &w.meta).unwrap().unwrap();
    assert_eq!((t.input, t.output), (100, 7));
    let bytes = std::fs::read(cache_path(&w.home, &w.id)).unwrap();
    assert_eq!(read_cached(&bytes), Some(t));
    // A second message: only it is read (the first is not counted twice).
    append(
        &w.transcript,
        &format!("{}\n", A1.replace("msg_1", "msg_2")),
    );
    let t = refresh(&w.home, &w.cfg, &w.id, &w.meta).unwrap().unwrap();
    assert_eq!((t.input, t.output), (200, 14));
    // The file replaced by a shorter one: counted again from its start.
    std::fs::write(&w.transcript, format!("{A1}\n")).unwrap();
    let t = refresh(&w.home, &w.cfg, &w.id, &w.meta).unwrap().unwrap();
    assert_eq!(t.input, 100);
}

#[test]
fn a_huge_transcript_is_read_a_bounded_chunk_per_pass() {
    let w = world();
    let line = format!("{A1}\n");
    let per_chunk = usize::try_from(transcript::CHUNK).unwrap() / line.len();
    // Two and a half chunks of messages, each its own id.
    let n = per_chunk * 5 / 2;
    let mut text = String::with_capacity(n * (line.len() + 8));
    for i in 0..n {
        text.push_str(&A1.replace("msg_1", &format!("m{i}")));
        text.push('\n');
    }
    std::fs::write(&w.transcript, &text).unwrap();
    let mut passes = 0;
    let mut last = 0;
    loop {
        passes += 1;
        let t = refresh(&w.home, &w.cfg, &w.id, &w.meta).unwrap().unwrap();
        let cache: Cache =
            serde_json::from_slice(&std::fs::read(cache_path(&w.home, &w.id)).unwrap()).unwrap();
        let off = cache.files.values().next().unwrap().1.offset;
        assert!(off - last <= transcript::CHUNK, "a pass read past a chunk");
        last = off;
        if t.output == 7 * n as u64 {
            break;
        }
        assert!(passes < 5, "never caught up");
    }
    assert_eq!(passes, 3);
}

#[test]
fn short_forms_and_costs() {
    let t = Tokens {
        input: 1200,
        output: 300,
        cache_read: 10_000,
        cache_write: 0,
        cost_micro_usd: Some(420_000),
    };
    assert_eq!(t.short(), "11.5k $0.42");
    assert_eq!(Tokens::default().short(), "0");
    let json = serde_json::to_string(&{
        #[derive(Serialize)]
        struct R {
            #[serde(serialize_with = "row_json")]
            usage: Option<Tokens>,
        }
        R { usage: Some(t) }
    })
    .unwrap();
    assert_eq!(
        json,
        r#"{"usage":{"input_tokens":1200,"output_tokens":300,"cache_read_tokens":10000,"cache_write_tokens":0,"total_tokens":11500,"cost_usd":0.42}}"#
    );
}

#[test]
fn a_kept_counter_reads_a_meta_again_when_it_changes() {
    let w = world();
    append(&w.transcript, &format!("{A1}\n"));
    let meta_path = w.home.meta(&w.id);
    let wt = w.meta.worktree.clone().unwrap();
    std::fs::write(
        &meta_path,
        format!("harness=stand-in\nworktree={}\n", wt.display()),
    )
    .unwrap();
    let mut c = Counter::default();
    c.count(&w.home, &w.cfg);
    assert!(
        !cache_path(&w.home, &w.id).exists(),
        "a stand-in writes no transcript"
    );
    // Another harness, a meta of another size: read again, counted.
    std::fs::write(
        &meta_path,
        format!("harness=claude\nworktree={}\n", wt.display()),
    )
    .unwrap();
    c.count(&w.home, &w.cfg);
    let bytes = std::fs::read(cache_path(&w.home, &w.id)).unwrap();
    assert_eq!(read_cached(&bytes).map(|t| t.output), Some(7));
    // A task gone is forgotten.
    std::fs::remove_file(&meta_path).unwrap();
    c.count(&w.home, &w.cfg);
    assert!(c.metas.is_empty());
}
