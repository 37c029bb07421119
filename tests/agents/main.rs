//! The real-harness conformance suite: the pinned Claude Code and Codex CLI
//! (`scripts/agents.sh`, versions in `scripts/agents.versions`) driven
//! through `fm-control`, `fm-send`, `fm-crew-state` and `fm-watch` in a
//! private tmux server, their model replaced by the loopback server in
//! `tests/model_server/` — nothing reaches the network. Each test checks
//! what the model received: every doorbell exactly one user text block,
//! nothing glued to it, nothing lost.
//!
//! Every scenario runs once per harness (`claude::<scenario>`,
//! `codex::<scenario>`), so the pass count per harness is the number of
//! tests under its module. A missing agent program skips a test with a
//! printed reason, or fails it under `FM_REQUIRE_AGENTS=1`.
//!
//! The target is not part of a plain `cargo test` (`test = false` in
//! Cargo.toml): it is run by name, as `.ci/run` does. A scenario waiting on
//! behaviour not built yet is `#[ignore]`d with its reason, and listed in
//! docs/harnesses.md ("Conformance suite").
//!
//! ```text
//! scripts/agents.sh && FM_REQUIRE_AGENTS=1 cargo test --release --test agents
//! ```

#[path = "../cli/harness.rs"]
mod harness;

mod agents;
mod model;
mod scenarios;
mod world;

pub use agents::Harness;

/// One `#[test]` per scenario and harness. Attributes written before a
/// scenario (an `#[ignore = "why"]`) apply to both of its tests;
/// `claude = "why"` or `codex = "why"` after it ignores that harness's
/// test alone, with that reason.
macro_rules! conformance {
    ($($(#[$attr:meta])* $scenario:ident $(claude = $claude:literal)? $(codex = $codex:literal)?),* $(,)?) => {
        mod claude {
            $($(#[$attr])* $(#[ignore = $claude])? #[test]
              fn $scenario() { crate::scenarios::$scenario(crate::Harness::Claude) })*
        }
        mod codex {
            $($(#[$attr])* $(#[ignore = $codex])? #[test]
              fn $scenario() { crate::scenarios::$scenario(crate::Harness::Codex) })*
        }
    };
}

conformance!(
    spawn_to_prompt_then_idle,
    #[ignore = "spawn installs no harness hooks yet (docs/harnesses.md, Conformance suite)"]
    hooks_report_the_turn,
    one_send,
    three_quick_sends,
    half_typed_text_is_never_sent,
    ack_loop,
    busy_while_streaming codex = "Codex shows nothing busy while text streams and spawn installs no hooks yet (docs/harnesses.md, Conformance suite)",
    busy_while_silent,
    send_while_busy_rings_when_the_turn_ends,
    rering_then_escalation,
    interrupt_while_busy,
    #[ignore = "fm-control interrupt presses Escape on an idle agent: twice opens its history dialog (docs/harnesses.md, Conformance suite)"]
    interrupt_twice_while_idle,
    exit codex = "exit presses Enter right after /quit, which Codex swallows (docs/harnesses.md, Conformance suite)",
    relaunch_then_send
        claude = "right after a relaunch Claude Code's composer is not on screen within fm-send's 3 s wait: the doorbell is skipped, not queued (docs/harnesses.md, Conformance suite)"
        codex = "relaunch exits through the same /quit + Enter that Codex swallows (docs/harnesses.md, Conformance suite)",
    dialog_folder_trust
        claude = "after the captain trusts the folder, two watcher rings while Claude Code starts reach the model glued in one block (docs/harnesses.md, Conformance suite)",
    dialog_permission,
    dialog_history,
    #[ignore = "the watcher raises no dialog wake yet (docs/harnesses.md, Conformance suite)"]
    dialog_raises_one_wake,
);
