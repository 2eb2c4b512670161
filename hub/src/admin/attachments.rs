//! `attachments [--free-expired | --free-secret | --free-key NAME | --free-all]`: frees
//! what is named (if anything), then shows what the questions' files take per owner and
//! in all.

use super::client::HubClient;
use super::{Result, count, open_offline, said};
use crate::api::dto::{AttachmentsAnswer, FileUsageDto, FreeAnswer, FreeBody};
use holdline_core::config::Config;

/// Through the running hub, or on the store when none runs.
pub async fn attachments(config: &Config, free: Option<FreeBody>) -> Result<()> {
    let (freed, usage) = match HubClient::running(config).await {
        Some(c) => online(&c, free).await?,
        None => offline(config, free).await?,
    };
    if let Some(f) = freed {
        say!(
            "released the files of {}; {} freed on disk",
            count(f.attachments, "attachment"),
            mib(f.bytes)
        );
    }
    say!(
        "{:<24}  {:>6}  {:>12}  {:>10}",
        "OWNER",
        "FILES",
        "USED",
        "QUOTA"
    );
    for o in &usage.owners {
        let owner = o
            .key
            .as_deref()
            .map_or("(hub secret)".to_owned(), |k| format!("key {k}"));
        say_row(&owner, o);
    }
    say_row("(all)", &usage.total);
    say!(
        "files of answered or superseded questions are released {} after they came",
        duration_words(usage.keep_sec)
    );
    Ok(())
}

fn say_row(owner: &str, u: &FileUsageDto) {
    say!(
        "{owner:<24}  {:>6}  {:>12}  {:>10}",
        u.files,
        mib(u.bytes),
        mib(u.quota)
    );
}

type FilesAnswers = (Option<FreeAnswer>, AttachmentsAnswer);

/// Through the running hub's person routes.
async fn online(c: &HubClient, free: Option<FreeBody>) -> Result<FilesAnswers> {
    let freed = match &free {
        Some(body) => Some(c.free_attachments(body).await?),
        None => None,
    };
    Ok((freed, c.attachments().await?))
}

/// On the store, when no hub runs.
async fn offline(config: &Config, free: Option<FreeBody>) -> Result<FilesAnswers> {
    let hub = open_offline(config)?;
    let freed = match free {
        Some(body) => {
            let f = hub.free_files(body.into()).await.map_err(said)?;
            Some(FreeAnswer {
                attachments: f.attachments,
                bytes: f.bytes,
            })
        }
        None => None,
    };
    Ok((freed, AttachmentsAnswer::of(hub.file_usage())))
}

/// Bytes as MiB with two decimals.
fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn duration_words(sec: u64) -> String {
    match sec {
        s if s % 86_400 == 0 => count(s / 86_400, "day"),
        s if s % 3_600 == 0 => count(s / 3_600, "hour"),
        s => count(s, "second"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn retention_is_said_in_the_largest_whole_unit() {
        assert_eq!(super::duration_words(86_400 * 2), "2 days");
        assert_eq!(super::duration_words(3_600), "1 hour");
        assert_eq!(super::duration_words(90), "90 seconds");
        assert_eq!(super::mib(1024 * 1024), "1.00 MiB");
    }
}
