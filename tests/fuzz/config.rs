//! Config (docs/spec/config.md): TOML text and `FM_*` overrides.

use proptest::collection::vec;
use proptest::prelude::*;

use crate::{Outcome, bytes, fuzz};
use std::path::Path;

use firstmate::config::Config;

fn toml_ish() -> impl Strategy<Value = String> {
    let section = prop_oneof![
        proptest::sample::select(vec![
            "[tmux]",
            "[paths]",
            "[brief]",
            "[send]",
            "[watch]",
            "[control]",
            "[harness]",
            "[harness.mine]",
            "[[harness]]",
            "[harness.x.y]",
        ])
        .prop_map(str::to_string),
        "\\[[a-z._\"]{0,14}\\]",
    ];
    let key = prop_oneof![
        proptest::sample::select(vec![
            "session",
            "socket",
            "worktrees",
            "delegator",
            "paused_verb",
            "tools",
            "max_intent_bytes",
            "settle_ms",
            "max_body_bytes",
            "grace_secs",
            "on_wake",
            "launch",
            "interrupt",
            "busy_regex",
            "composer_regex",
            "exit_wait_secs",
            "harness",
        ])
        .prop_map(str::to_string),
        "[a-z_.\"]{1,12}",
    ];
    let value = prop_oneof![
        "\"[^\"\\\\\n]{0,10}\"",
        "-?[0-9]{1,22}",
        Just("[]".to_string()),
        "\\[(\"[a-z{}]{0,6}\", ?){0,3}\\]",
        "\\[[0-9, ]{0,8}\\]",
        Just("true".to_string()),
        Just("{}".to_string()),
        Just("{ a = 1 }".to_string()),
        "[0-9.e+-]{1,8}",
        "'[^'\n]{0,8}'",
        "[^\n]{0,8}",
    ];
    let line = prop_oneof![
        section,
        (key, value).prop_map(|(k, v)| format!("{k} = {v}")),
        "#[^\n]{0,10}",
        Just(String::new()),
    ];
    vec(line, 0..16).prop_map(|ls| ls.join("\n"))
}

const ENV_VARS: &[&str] = &[
    "FM_WATCH_GRACE_SECS",
    "FM_TMUX_SOCKET",
    "FM_SEND_MAX_BODY_BYTES",
    "FM_BRIEF_TOOLS",
    "FM_CONTROL_EXIT_WAIT_SECS",
    "FM_NOPE",
];

fn check_config(text: Option<&str>, env: &[(String, String)]) -> Outcome {
    match Config::from_parts(Path::new("firstmate.toml"), text, env) {
        Ok(_) => {}
        Err(e) => {
            prop_assert_eq!(e.exit_code(), 3, "config error with a non-3 exit: {}", e);
            let msg = e.to_string();
            prop_assert!(
                msg.contains("firstmate.toml") || msg.contains("FM_"),
                "error names neither file nor variable: {}",
                msg
            );
        }
    }
    Ok(())
}

#[test]
fn config_from_raw_bytes() {
    fuzz("config/bytes", bytes(400), |b| {
        check_config(Some(&String::from_utf8_lossy(&b)), &[])
    });
}

#[test]
fn config_that_looks_like_toml() {
    let env = vec(
        (
            proptest::sample::select(ENV_VARS).prop_map(str::to_string),
            "[^\0]{0,8}",
        ),
        0..3,
    );
    fuzz("config/structured", (toml_ish(), env), |(text, env)| {
        check_config(Some(&text), &env)
    });
}
