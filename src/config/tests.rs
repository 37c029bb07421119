use super::*;

fn load(text: &str, env: &[(&str, &str)]) -> Result<Config> {
    let env: Vec<_> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_parts(Path::new("firstmate.toml"), Some(text), &env)
}

#[test]
fn missing_file_gives_defaults() {
    let c = Config::from_parts(Path::new("x"), None, &[]).unwrap();
    assert_eq!(c, Config::default());
    assert_eq!(c.watch.grace_secs, 90);
}

#[test]
fn the_shipped_config_is_all_defaults_without_warnings() {
    let text = include_str!("../../config/firstmate.toml");
    let c = load(text, &[]).unwrap();
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(
        Config {
            harness: std::collections::BTreeMap::default(),
            hosts: std::collections::BTreeMap::default(),
            projects: std::collections::BTreeMap::default(),
            ..c
        },
        Config::default()
    );
}

#[test]
fn file_values_and_env_overrides() {
    let c = load(
        "[watch]\ngrace_secs = 5\n[tmux]\nsocket = \"a\"\n",
        &[("FM_WATCH_GRACE_SECS", "1"), ("FM_TMUX_SOCKET", "b")],
    )
    .unwrap();
    assert_eq!(c.watch.grace_secs, 1);
    assert_eq!(c.tmux.socket, "b");
    let c = load("[watch]\ngrace_secs = 5\n", &[]).unwrap();
    assert_eq!(c.watch.grace_secs, 5);
}

#[test]
fn bad_env_value_is_exit_3_naming_the_variable() {
    let err = load("", &[("FM_WATCH_GRACE_SECS", "soon")]).unwrap_err();
    assert_eq!(err.exit_code(), 3);
    assert!(err.to_string().contains("FM_WATCH_GRACE_SECS"));
}

#[test]
fn unknown_keys_warn() {
    let c = load("[watch]\nbogus = 1\n[nope]\nx = 2\n", &[]).unwrap();
    assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
    assert!(c.warnings[0].contains("watch.bogus") || c.warnings[1].contains("watch.bogus"));
}

#[test]
fn malformed_file_names_line_and_key() {
    let err = load("[watch]\n\ngrace_secs = \"soon\"\n", &[]).unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.exit_code(), 3);
    assert!(
        msg.contains(":3:") && msg.contains("watch.grace_secs"),
        "{msg}"
    );
    let err = load("[send]\nsettle_ms = = 3\n", &[]).unwrap_err();
    assert!(err.to_string().contains(":2:"), "{err}");
}

#[test]
fn a_harness_regex_that_does_not_compile_is_a_config_error() {
    let err = load(
        "[harness.claude]\nexit = \"/q\"\nbusy_regex = \"esc to (interrupt\"\n",
        &[],
    )
    .unwrap_err();
    assert_eq!(err.exit_code(), 3);
    let msg = err.to_string();
    assert!(
        msg.contains(":3:") && msg.contains("harness.claude.busy_regex"),
        "{msg}"
    );
    assert!(msg.contains("not a valid regular expression"), "{msg}");
    let ok = load("[harness.mine]\ncomposer_regex = \"^> (.*)$\"\n", &[]).unwrap();
    assert!(ok.harness.contains_key("mine"));
}

#[test]
fn a_section_written_as_a_value_is_an_error() {
    let err = load("send = 5\n", &[]).unwrap_err();
    assert_eq!(err.exit_code(), 3);
    assert!(
        err.to_string()
            .ends_with(":1: send: expected a [section] table"),
        "{err}"
    );
    assert!(load("nosuch = 5\n", &[]).unwrap().warnings.len() == 1);
}

#[test]
fn a_duplicate_key_is_named() {
    let err = load("[watch]\ngrace_secs = 1\ngrace_secs = 2\n", &[]).unwrap_err();
    assert!(
        err.to_string().contains("grace_secs") && err.to_string().contains(":3:"),
        "{err}"
    );
}

#[test]
fn harness_tables_are_read() {
    let c = load(
        "[harness.mine]\nlaunch = [\"x\", \"{brief}\"]\nexit = \"/q\"\n",
        &[],
    )
    .unwrap();
    let h = &c.harness["mine"];
    assert_eq!(
        h.launch.as_deref(),
        Some(&["x".to_string(), "{brief}".to_string()][..])
    );
    assert_eq!(h.exit.as_deref(), Some("/q"));
}

#[test]
fn an_overflowing_number_names_its_key_and_line() {
    for n in ["99999999999999999999", "18446744073709551616", "-1"] {
        let err = load(&format!("[watch]\n\ngrace_secs = {n}\n"), &[]).unwrap_err();
        assert_eq!(err.exit_code(), 3);
        assert_eq!(
            err.to_string(),
            "firstmate.toml:3: watch.grace_secs: expected a non-negative integer"
        );
    }
}

#[test]
fn wrong_types_name_the_key_and_what_was_wanted() {
    let msg = |text: &str| load(text, &[]).unwrap_err().to_string();
    assert_eq!(
        msg("[brief]\ntools = 5\n"),
        "firstmate.toml:2: brief.tools: expected an array of strings"
    );
    assert_eq!(
        msg("[brief]\ntools = [\"a\", 1]\n"),
        "firstmate.toml:2: brief.tools: expected a string"
    );
    assert_eq!(
        msg("[harness.mine]\nlaunch = 5\n"),
        "firstmate.toml:2: harness.mine.launch: expected an array of strings"
    );
    assert_eq!(
        msg("watch = { grace_secs = \"x\" }\n"),
        "firstmate.toml:1: watch.grace_secs: expected a non-negative integer"
    );
    assert_eq!(
        msg("harness = 5\n"),
        "firstmate.toml:1: harness: expected a table"
    );
}

#[test]
fn unknown_keys_warn_with_file_line_and_key() {
    let c = load(
            "[watch]\ngrace_secs = 2\nbogus = 1\n[nope]\nx = 2\ny = 3\n[empty]\n[harness.mine]\nlaunch = [\"x\"]\nlunch = 1\n",
            &[],
        )
        .unwrap();
    assert_eq!(
        c.warnings,
        [
            "firstmate.toml:7: unknown key empty (ignored)",
            "firstmate.toml:10: unknown key harness.mine.lunch (ignored)",
            "firstmate.toml:5: unknown key nope.x (ignored)",
            "firstmate.toml:6: unknown key nope.y (ignored)",
            "firstmate.toml:3: unknown key watch.bogus (ignored)",
        ]
    );
    assert_eq!(c.watch.grace_secs, 2);
}

/// Every scalar key the sections have takes its `FM_<SECTION>_<KEY>`.
#[test]
fn every_scalar_key_has_an_env_override() {
    let defaults = toml::Table::try_from(Config::default()).unwrap();
    let mut seen = 0;
    for (section, body) in &defaults {
        for (key, value) in body.as_table().unwrap() {
            let var = format!("FM_{}_{}", section.to_uppercase(), key.to_uppercase());
            let raw = match value {
                toml::Value::Integer(n) => (n + 7).to_string(),
                toml::Value::String(s) => format!("{s}-env"),
                toml::Value::Boolean(b) => (!b).to_string(),
                toml::Value::Array(_) => continue,
                other => panic!("{section}.{key}: a scalar of a new type: {other:?}"),
            };
            let c = load("", &[(var.as_str(), raw.as_str())]).unwrap();
            let got = toml::Table::try_from(&c).unwrap();
            assert_eq!(
                got[section][key].to_string().trim_matches('"'),
                raw,
                "{var}"
            );
            let other: usize = defaults
                .iter()
                .flat_map(|(s, b)| b.as_table().unwrap().iter().map(move |(k, v)| (s, k, v)))
                .filter(|(s, k, v)| got[*s][*k] != **v)
                .count();
            assert_eq!(other, 1, "{var} changed only its own key");
            if value.is_integer() {
                let err = load("", &[(var.as_str(), "-1")]).unwrap_err();
                assert_eq!(err.exit_code(), 3);
                assert!(err.to_string().contains(&var), "{err}");
            }
            seen += 1;
        }
    }
    assert_eq!(seen, 34, "scalar keys in the sections");
}

#[test]
fn env_integers_take_what_parse_takes_up_to_u64_max() {
    for (raw, want) in [
        ("18446744073709551615", u64::MAX),
        (" 007 ", 7),
        ("+7", 7),
        ("0", 0),
        ("000", 0),
    ] {
        let c = load(
            "[control]\nexit_wait_secs = 5\n",
            &[("FM_CONTROL_EXIT_WAIT_SECS", raw)],
        )
        .unwrap();
        assert_eq!(c.control.exit_wait_secs, want, "{raw:?}");
    }
    for raw in ["18446744073709551616", "1_000", "0x10", "", "-0", "7s"] {
        let err = load("", &[("FM_CONTROL_EXIT_WAIT_SECS", raw)]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "environment variable FM_CONTROL_EXIT_WAIT_SECS: expected a non-negative integer, got {raw:?}"
            )
        );
    }
}

#[test]
fn file_errors_come_before_env_errors() {
    let err = load(
        "[watch]\ngrace_secs = \"x\"\n",
        &[("FM_WATCH_POLL_SECS", "x")],
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("firstmate.toml:2: watch.grace_secs"),
        "{err}"
    );
}

#[test]
fn an_env_override_keeps_the_file_harness_tables_and_warnings() {
    let c = load(
        "[harness.mine]\nlaunch = [\"x\"]\n[watch]\nbogus = 1\npoll_secs = 4\n",
        &[("FM_WATCH_GRACE_SECS", "1")],
    )
    .unwrap();
    assert_eq!(c.watch.grace_secs, 1);
    assert_eq!(c.watch.poll_secs, 4);
    assert!(c.harness.contains_key("mine"));
    assert_eq!(c.warnings.len(), 1);
}

#[test]
fn an_empty_regex_switches_a_built_in_one_off() {
    use crate::harness::profile;
    let c = load("[harness.claude]\ncomposer_regex = \"\"\n", &[]).unwrap();
    let claude = profile(&c.harness, "claude").unwrap();
    assert!(claude.composer_regex.is_none());
    assert!(claude.busy_regex.is_some(), "the other regex stays");
    let c = load("[harness.claude]\nbusy_regex = \"\"\n", &[]).unwrap();
    let claude = profile(&c.harness, "claude").unwrap();
    assert!(claude.busy_regex.is_none());
    assert!(claude.composer_regex.is_some());
    let c = load("[harness.claude]\nexit = \"/q\"\n", &[]).unwrap();
    let claude = profile(&c.harness, "claude").unwrap();
    assert!(claude.composer_regex.is_some() && claude.busy_regex.is_some());
    let c = load("[harness.claude]\nbusy_regex = \"^Thinking\"\n", &[]).unwrap();
    let claude = profile(&c.harness, "claude").unwrap();
    assert_eq!(claude.busy_regex.unwrap().as_str(), "^Thinking");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
    #[test]
    fn loader_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = load(&text, &[]);
    }

    #[test]
    fn loader_never_panics_on_tomlish(text in "(\\[[a-z.]{0,12}\\]\n|[a-z_]{1,12} = (\"[^\"\n]{0,8}\"|-?[0-9]{1,22}|\\[\\]|true|\\{\\})\n){0,12}") {
        let _ = load(&text, &[]);
    }
}
