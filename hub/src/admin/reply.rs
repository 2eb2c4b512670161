//! `reply TOKEN [TEXT] [--choose N[,M]] [--in-reply-to SEQ]`: a reply as if typed in the
//! panel.

use super::client::HubClient;
use super::{AdminError, Result};
use crate::api::dto::ReplyBody;
use holdline_core::config::Config;
use holdline_store::session::Role;

/// Sends the reply; `choose` numbers the question's options from 1, as people see them
/// listed. With a question named, the hub refuses it (and this fails, naming the current
/// question) when the agent has asked something newer.
pub async fn reply(
    config: &Config,
    token: &str,
    text: &str,
    choose: &[u32],
    in_reply_to: Option<u64>,
) -> Result<()> {
    let c = HubClient::new(config)?;
    let choices = if choose.is_empty() {
        Vec::new()
    } else {
        chosen_indexes(choose, offered_options(&c, token).await?)?
    };
    let body = ReplyBody {
        token: token.to_owned(),
        text: text.to_owned(),
        images: Vec::new(),
        choices,
        in_reply_to,
    };
    let r = c.reply(&body).await?;
    let how = if r.queued {
        "queued for the next wait"
    } else {
        "delivered to the waiting agent"
    };
    say!("reply {} {how}", r.reply_id);
    Ok(())
}

/// How many options the question a reply to `token` answers offers: the
/// agent's newest message among the session's last 50 (0 when none asks).
async fn offered_options(c: &HubClient, token: &str) -> Result<usize> {
    let session = c.session(token, 50).await?;
    let newest_question = session
        .messages
        .iter()
        .rev()
        .find(|m| m.message.role == Role::Assistant);
    Ok(newest_question.map_or(0, |m| m.message.options.len()))
}

/// The hub's indexes (from 0) of the options the person numbered as listed (from
/// 1), checked against how many the question being answered offers (`offered`).
/// 0 or a number past the list is refused naming the numbers people see: the
/// hub's own refusal would count from 0.
fn chosen_indexes(choose: &[u32], offered: usize) -> Result<Vec<u32>> {
    choose
        .iter()
        .map(|&n| match n {
            0 => Err(AdminError::Message(
                "--choose numbers the options from 1, as they are listed; 0 is not an option"
                    .into(),
            )),
            n if n as usize > offered => Err(AdminError::Message(match offered {
                0 => format!("--choose {n}: the question being answered offers no options"),
                _ => format!(
                    "--choose {n}: the question being answered offers {offered} options (1 to {offered})"
                ),
            })),
            n => Ok(n - 1),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_chosen_by_the_numbers_people_see() {
        assert_eq!(chosen_indexes(&[1, 3], 3).unwrap(), [0, 2]);
        let zero = chosen_indexes(&[0], 3).unwrap_err().to_string();
        assert!(zero.contains("from 1"), "{zero}");
        let past = chosen_indexes(&[2, 4], 3).unwrap_err().to_string();
        assert!(
            past.contains("--choose 4") && past.contains("(1 to 3)"),
            "{past}"
        );
        let none = chosen_indexes(&[1], 0).unwrap_err().to_string();
        assert!(none.contains("offers no options"), "{none}");
    }
}
