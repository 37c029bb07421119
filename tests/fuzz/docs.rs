//! Frontmatter, the brief check and responses (docs/spec/brief.md#anatomy, #check,
//! docs/spec/chains.md).

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::{Outcome, bytes, fuzz, lines_of};
use firstmate::{TaskId, brief, clock, frontmatter};

fn markdown_ish() -> BoxedStrategy<String> {
    prop_oneof![
        Just("---".to_string()),
        "[a-zA-Z_-]{0,10}: ?[^\n]{0,16}",
        "[a-z]{1,6}: \"[^\n]{0,10}",
        "[a-z]{1,6}: '[^\n]{0,10}",
        proptest::sample::select(vec![
            "# Task",
            "## Captain's intent",
            "## Firstmate spec",
            "# Definition of done",
            "# Charter",
            "Delivery contract: mode=local-only",
            "Delivery contract: mode=direct-PR",
            "{TASK}",
            "{FIRSTMATE_SPEC}",
            "```",
            "~~~~",
            "   ```rust",
            "Captain: do it",
            "kind: secondmate",
            "kind: scout",
            "mode: no-mistakes",
            "",
        ])
        .prop_map(str::to_string),
        " {0,4}#{1,7}[ \t]?[^\n]{0,16}",
        "[^\n]{0,24}",
    ]
    .boxed()
}

fn check_markdown(text: &str) -> Outcome {
    if let Ok((fields, body)) = frontmatter::parse(text) {
        prop_assert!(text.ends_with(body));
        for (k, _) in &fields {
            prop_assert!(!k.is_empty());
        }
    }
    for mode in [None, Some(firstmate::meta::Mode::LocalOnly)] {
        let _ = brief::check::problems(text, mode);
    }
    let id = TaskId::parse("t1").unwrap();
    if let Ok(r) = firstmate::brief::response::problems(text, &id) {
        prop_assert_eq!(r.id.as_str(), "t1");
        prop_assert!(firstmate::brief::response::STATUSES.contains(&r.status.as_str()));
    }
    Ok(())
}

#[test]
fn frontmatter_briefs_and_responses_from_raw_bytes() {
    fuzz("frontmatter/bytes", bytes(300), |b| {
        let text = String::from_utf8_lossy(&b);
        check_markdown(&text)?;
        check_markdown(&format!("---\n{text}"))
    });
}

#[test]
fn frontmatter_briefs_and_responses_that_look_like_briefs() {
    let doc = (any::<bool>(), lines_of(markdown_ish(), 30));
    fuzz("frontmatter/structured", doc, |(fm, b)| {
        let text = String::from_utf8_lossy(&b);
        let text = if fm {
            format!("---\n{text}")
        } else {
            text.into_owned()
        };
        check_markdown(&text)
    });
}

#[test]
fn frontmatter_round_trips_any_value() {
    let fields = vec(("[A-Za-z0-9_-]{1,12}", any::<String>()), 0..6);
    fuzz(
        "frontmatter/render-round-trip",
        (fields, any::<String>()),
        |(fields, body)| {
            let refs: Vec<(&str, String)> = fields
                .iter()
                .map(|(k, v)| (k.as_str(), v.clone()))
                .collect();
            let text = format!("{}{body}", frontmatter::render(&refs));
            let (got, rest) = frontmatter::parse(&text).map_err(TestCaseError::fail)?;
            prop_assert_eq!(&got, &fields);
            prop_assert_eq!(rest, body.as_str());
            Ok(())
        },
    );
}

#[test]
fn rendered_responses_validate() {
    let status = proptest::sample::select(firstmate::brief::response::STATUSES.to_vec());
    fuzz(
        "response/render-round-trip",
        (status, any::<u64>(), any::<String>()),
        |(status, epoch, body)| {
            let id = TaskId::parse("t1").unwrap();
            let ts = clock::rfc3339(epoch % 253_402_300_800);
            let text = firstmate::brief::response::render(&id, status, &ts, &body);
            let r = firstmate::brief::response::problems(&text, &id)
                .map_err(|p| TestCaseError::fail(p.join("; ")))?;
            prop_assert_eq!(r.status.as_str(), status);
            prop_assert_eq!(&r.timestamp, &ts);
            let mut want = body.trim_start_matches('\n').to_string();
            if !want.is_empty() && !want.ends_with('\n') {
                want.push('\n');
            }
            prop_assert_eq!(r.body, want);
            Ok(())
        },
    );
}
