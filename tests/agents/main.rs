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
//! tests under its module. The first mate's scenarios (`mate.rs`: the
//! harness as the lead, woken by its hooks) are `mate_claude::<scenario>`
//! and `mate_codex::<scenario>`. A missing agent program skips a test with a
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

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_macros,
    reason = "tests and benches set up homes and print as they like; clippy.toml's rules are the library's"
)]

#[path = "../cli/harness.rs"]
mod harness;

mod agents;
mod leg_codex;
mod mate;
mod model;
mod restore;
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
    hooks_report_the_turn,
    one_send,
    three_quick_sends,
    half_typed_text_is_never_sent,
    ack_loop,
    busy_while_streaming,
    busy_while_streaming_without_hooks,
    busy_while_silent,
    busy_while_a_tool_runs,
    captain_interrupts_while_streaming,
    send_while_busy_rings_when_the_turn_ends,
    rering_then_escalation,
    interrupt_while_busy,
    interrupt_twice_while_idle,
    exit,
    relaunch_then_send,
    dialog_folder_trust,
    dialog_permission,
    dialog_history,
    dialog_raises_one_wake,
    send_while_booting,
    interrupt_after_the_captains_escape,
    exit_force_over_half_typed_text,
    exit_force_over_a_dialog,
    relaunch_force_over_half_typed_text,
    doctor_knows_the_version_under_test,
    usage_shows_the_model_servers_tokens,
    leg_latency,
    agent_session_reports,
);

/// The ring scenarios again on the harness's delivery leg
/// (docs/spec/ring.md#legs), `claude_leg::<scenario>`: the same scenario
/// functions, their worlds with `[send] legs = true`
/// ([`world::with_leg`]); every doorbell must reach the model through the
/// leg and none be typed ([`world::World::doorbells_received`]). The
/// `conformance!` tests run with the legs off: the typed fallback.
macro_rules! legged {
    ($($(#[$attr:meta])* $scenario:ident),* $(,)?) => {
        mod claude_leg {
            $($(#[$attr])* #[test]
              fn $scenario() {
                  crate::world::with_leg(|| crate::scenarios::$scenario(crate::Harness::Claude))
              })*
        }
    };
}

legged!(
    one_send,
    three_quick_sends,
    half_typed_text_is_never_sent,
    ack_loop,
    busy_while_streaming,
    busy_while_silent,
    send_while_busy_rings_when_the_turn_ends,
    rering_then_escalation,
    relaunch_then_send,
    dialog_folder_trust,
    dialog_permission,
    dialog_history,
    send_while_booting,
    leg_latency,
);

/// The first mate's scenarios (`mate.rs`), one `#[test]` per scenario and
/// harness under `mate_claude::` and `mate_codex::`; attributes as in
/// [`conformance!`].
macro_rules! first_mate {
    ($($(#[$attr:meta])* $scenario:ident $(claude = $claude:literal)? $(codex = $codex:literal)?),* $(,)?) => {
        mod mate_claude {
            $($(#[$attr])* $(#[ignore = $claude])? #[test]
              fn $scenario() { crate::mate::$scenario(crate::Harness::Claude) })*
        }
        mod mate_codex {
            $($(#[$attr])* $(#[ignore = $codex])? #[test]
              fn $scenario() { crate::mate::$scenario(crate::Harness::Codex) })*
        }
    };
}

first_mate!(
    digest_at_session_start,
    no_request_while_waiting,
    decision_reaches_the_model_at_once,
    answer_reaches_the_worker,
    acked_items_not_presented_again,
    killed_mid_wake_handles_it_once,
    destructive_verb_refused_without_grant,
    decision_during_the_leads_turn_is_shown_once,
);
