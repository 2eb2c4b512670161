//! The rule that tells the agent to keep calling `wait_for_user_input`: its text, and how
//! it goes into a file of holdline's own or into a marked section of a person's file (and
//! back out, leaving the rest of their file as it was).

/// What the rule file tells the agent (the wait contract: a re-call after "no reply yet"
/// passes the same token, the same message and the `resume` value the result gave).
pub const RULE: &str = "\
# holdline: keep the conversation going

- At the start of every task, call the MCP tool `init_conversation` with this chat's title as `cursorTitle`, and remember the token it returns.
- Never end your turn on your own. At the end of every step, call `wait_for_user_input` with your token and a short report of what you did and what you propose next; then do what the reply says and call it again.
- When you ask the person to choose (A or B, which of these, yes or no), pass the answers as `options` (and `multiSelect: true` when several may be picked): they answer with one tap, and the result says what they chose.
- Every result of `wait_for_user_input` gives a `resume` value: pass it as `resume` in your next call.
- If `wait_for_user_input` answers \"no reply yet\", call it again at once with the same token, the same message and the `resume` value the result gave.
- If a result gives you a new token (after a merge), use the new token from then on.
";

/// The first line of the rule: how uninstall recognises a rule file of holdline's own.
pub const RULE_TITLE: &str = "# holdline: keep the conversation going";

pub const BEGIN: &str = "<!-- holdline:begin -->";
pub const END: &str = "<!-- holdline:end -->";

/// How the rule reaches the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleKind {
    /// A file of holdline's own, replaced whole.
    OwnFile,
    /// A marked section inside a file the person also edits.
    Section,
}

/// The file's text with the rule in it.
pub fn with_rule(kind: RuleKind, existing: Option<&str>, rule_text: &str) -> String {
    match kind {
        RuleKind::OwnFile => rule_text.to_owned(),
        RuleKind::Section => {
            let section = format!("{BEGIN}\n{rule_text}{END}\n");
            match existing {
                None | Some("") => section,
                Some(text) => match section_span(text) {
                    Some((b, e)) => format!("{}{section}{}", &text[..b], &text[e..]),
                    None => {
                        // One blank line before the section; uninstall takes exactly it away.
                        let sep = if text.ends_with('\n') { "\n" } else { "\n\n" };
                        format!("{text}{sep}{section}")
                    }
                },
            }
        }
    }
}

/// The file's text without the rule section: `Some(None)` when nothing else is left (the
/// file can go), `None` when there is no section.
pub fn without_section(text: &str) -> Option<Option<String>> {
    let (b, e) = section_span(text)?;
    let mut before = &text[..b];
    let after = &text[e..];
    if after.is_empty() && before.ends_with("\n\n") {
        before = &before[..before.len() - 1];
    }
    let rest = format!("{before}{after}");
    Some((!rest.is_empty()).then_some(rest))
}

/// The section from its begin marker to the end of its end-marker line.
fn section_span(text: &str) -> Option<(usize, usize)> {
    let b = text.find(BEGIN)?;
    let e = b + text[b..].find(END)? + END.len();
    let e = if text[e..].starts_with('\n') {
        e + 1
    } else {
        e
    };
    Some((b, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_is_replaced_not_duplicated_and_removed_cleanly() {
        for original in ["# Mine\n\nBe terse.\n", "# Mine\n\n", "no newline"] {
            let once = with_rule(RuleKind::Section, Some(original), RULE);
            let twice = with_rule(RuleKind::Section, Some(&once), RULE);
            assert_eq!(once, twice);
            assert_eq!(once.matches(BEGIN).count(), 1);
            let changed = with_rule(RuleKind::Section, Some(&once), "new rule\n");
            assert!(changed.contains("new rule") && !changed.contains("Never end your turn"));
            let removed = without_section(&once).unwrap().unwrap();
            if original.ends_with('\n') {
                assert_eq!(removed, original);
            } else {
                assert_eq!(removed, format!("{original}\n"));
            }
        }
        let alone = with_rule(RuleKind::Section, None, RULE);
        assert_eq!(without_section(&alone), Some(None));
        assert_eq!(without_section("nothing here\n"), None);
    }

    #[test]
    fn rule_follows_the_wait_contract() {
        assert!(RULE.starts_with(RULE_TITLE));
        assert!(
            RULE.contains(
                "the same token, the same message and the `resume` value the result gave"
            )
        );
    }
}
