//! `export [--out FILE]`: the sessions as a `sessions.json` file, streamed, never whole
//! in memory.

use std::io::Write as _;
use std::path::Path;

use super::client::HubClient;
use super::{AdminError, Result, count, open_offline};
use holdline_core::config::Config;

/// The running hub's sessions, or the store's when no hub runs, to `out` or stdout.
pub async fn export(config: &Config, out: Option<&Path>) -> Result<()> {
    let source = match HubClient::running(config).await {
        Some(c) => ExportSource::Hub(c.export().await?),
        None => ExportSource::Store(open_offline(config)?),
    };
    let Some(path) = out else {
        let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
        // A closed pipe (`export | head`) ends the command quietly.
        let _ = source.write_to(&mut stdout).await;
        return Ok(());
    };
    let cannot =
        |e: std::io::Error| AdminError::Message(format!("cannot write {}: {e}", path.display()));
    let mut file = holdline_core::home::PrivateFile::create(path).map_err(cannot)?;
    let mut w = std::io::BufWriter::new(&mut file.file);
    let sessions = source.write_to(&mut w).await.map_err(cannot)?;
    w.flush().map_err(cannot)?;
    drop(w);
    file.commit().map_err(cannot)?;
    eprintln!(
        "exported {} to {}",
        count(sessions as u64, "session"),
        path.display()
    );
    Ok(())
}

/// Where an export's bytes come from.
enum ExportSource {
    /// The running hub's streamed answer.
    Hub(reqwest::Response),
    /// The store, opened because no hub runs.
    Store(holdline_core::hub::Hub),
}

impl ExportSource {
    /// Writes the whole export to `out`; answers the sessions written.
    async fn write_to(self, out: &mut impl std::io::Write) -> std::io::Result<usize> {
        match self {
            ExportSource::Hub(mut res) => {
                let sessions = res
                    .headers()
                    .get(crate::api::dto::EXPORT_SESSIONS_HEADER)
                    .and_then(|v| v.to_str().ok()?.parse().ok())
                    .unwrap_or(0);
                while let Some(chunk) = res.chunk().await.map_err(std::io::Error::other)? {
                    out.write_all(&chunk)?;
                }
                Ok(sessions)
            }
            ExportSource::Store(hub) => hub
                .export_to(&hub.export_tokens(), out)
                .map_err(|e| std::io::Error::other(e.to_string())),
        }
    }
}
