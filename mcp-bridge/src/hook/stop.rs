//! The `Stop` event: the agent's last message becomes the person's question (origin
//! "stopped") with one option that lets the agent stop; the person's words continue the
//! turn in the client's shape ([`HookClient::continuation`]).
//!
//! Invariant: a turn whose last tool call was `wait_for_user_input` (read from the
//! client's transcript, [`super::turn`]) is not asked again, nor one the client says did
//! not complete (Cursor's `aborted` or `error`); "Let it finish" and every failure leave
//! no decision, so the turn ends.

use std::time::Duration;

use holdline_contract::{ChoiceOption, QuestionOrigin, Reply};

use super::{
    HookClient, HookError,
    input::{HookInput, StopStatus},
    turn::{self, TurnEnd},
    wait::{Answered, HookWait, Question, write_answer},
};
use crate::config::Config;

/// The one option of a stop question: the person lets the agent end its turn.
pub const LET_IT_FINISH: &str = "Let it finish";
/// The question when neither the payload nor the transcript says what the agent said.
const NO_MESSAGE: &str = "(The agent ended its turn without a message.)";

/// Answers a `Stop`: asks the person unless the model waited for them in this turn, and
/// prints the block when they reply with words.
pub(super) async fn answer_stop(
    client: HookClient,
    config: &Config,
    input: &HookInput,
    limit: Duration,
) -> Result<(), HookError> {
    if input
        .stop_status
        .is_some_and(|s| s != StopStatus::Completed)
    {
        return Ok(());
    }
    let transcript = input.transcript_path.as_deref().map(std::path::Path::new);
    if transcript.map(turn::how_it_ended) == Some(TurnEnd::Waited) {
        return Ok(());
    }
    let question = Question {
        message: client
            .last_message(input)
            .unwrap_or_else(|| NO_MESSAGE.to_owned()),
        options: vec![ChoiceOption {
            label: LET_IT_FINISH.to_owned(),
            description: Some("The agent ends its turn here.".to_owned()),
        }],
        changes: None,
        origin: QuestionOrigin::Stopped,
        occasion: input.turn_id.clone().unwrap_or_default(),
    };
    let wait = HookWait::bind(client, config, input, question, limit).await?;
    wait.ask(|reply| answer(client, reply)).await
}

/// The person's answer in the client's shape: "Let it finish" lets the turn end,
/// anything else continues it.
fn answer(client: HookClient, reply: &Reply) -> Result<Answered, HookError> {
    let let_finish = reply.choices.iter().any(|c| c.index == 0);
    if let_finish {
        return Ok(Answered::Taken);
    }
    write_answer(&client.continuation(reason(reply)))
}

/// What the model reads as its next instruction: the person's words and a line to go on.
fn reason(reply: &Reply) -> String {
    let typed = reply.text.trim();
    let mut said = match typed.is_empty() {
        true => "(The person replied without words.)".to_owned(),
        false if reply.auto => format!("[automatic reply] {typed}"),
        false => typed.to_owned(),
    };
    if !reply.images.is_empty() {
        said.push_str(&format!(
            "\n(The person also attached {} image(s), which a hook cannot pass on; if they matter, ask the person to describe them.)",
            reply.images.len()
        ));
    }
    format!(
        "The person answered you through holdline:\n\n{said}\n\nContinue with this now, then end your turn as usual."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_carries_the_words_and_a_line_to_continue() {
        let reply: Reply =
            serde_json::from_value(serde_json::json!({"id": "r1", "text": " Add tests "})).unwrap();
        let r = reason(&reply);
        assert!(r.contains("\n\nAdd tests\n\n"), "{r}");
        assert!(r.contains("Continue with this now"), "{r}");
    }
}
