//! A hub with a large stored history: the store is prepared once (generated
//! `sessions.json` files, imported with `holdline-hub import` while no hub
//! runs) and kept for later runs; then the hub's start (exec → first 200
//! from `/healthz`) and its idle memory and wake-ups are measured, and its
//! memory again after the panel's list has paged through every session.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};

use crate::procs::{CpuCounters, HubProcess, cpu_counters, prepare_home, rss};
use crate::stats::Samples;

/// Sessions per generated file, so no import holds the whole history at once.
const PER_FILE: usize = 10_000;

/// A prepared store.
pub struct PreparedStore {
    pub home: PathBuf,
    /// How long the import took, when this run made it.
    pub prepared_in: Option<Duration>,
}

/// The home under `cache` holding `sessions` × `messages`, imported once.
pub fn prepare(
    hub_bin: &Path,
    cache: &Path,
    sessions: usize,
    messages: usize,
) -> anyhow::Result<PreparedStore> {
    let home = cache.join(format!("store-{sessions}x{messages}"));
    let marker = cache.join(format!("store-{sessions}x{messages}.ready"));
    let version = hub_version(hub_bin)?;
    if std::fs::read_to_string(&marker).is_ok_and(|v| v == version) && home.is_dir() {
        return Ok(PreparedStore {
            home,
            prepared_in: None,
        });
    }
    let _ = std::fs::remove_file(&marker);
    if home.exists() {
        std::fs::remove_dir_all(&home)
            .with_context(|| format!("cannot clear {}", home.display()))?;
    }
    prepare_home(&home)?;
    let started = Instant::now();
    let files = tempfile::tempdir()?;
    let mut done = 0;
    let mut part = 0;
    while done < sessions {
        let n = PER_FILE.min(sessions - done);
        let path = files.path().join(format!("sessions-{part}.json"));
        write_file(&path, done, n, messages)?;
        let out = Command::new(hub_bin)
            .arg("--home")
            .arg(&home)
            .arg("import")
            .arg(&path)
            .env_remove("HOLDLINE_LISTEN")
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot run {}", hub_bin.display()))?;
        if !out.status.success() {
            bail!(
                "holdline-hub import failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let _ = std::fs::remove_file(&path);
        done += n;
        part += 1;
    }
    let took = started.elapsed();
    std::fs::write(&marker, &version)?;
    Ok(PreparedStore {
        home,
        prepared_in: Some(took),
    })
}

fn hub_version(bin: &Path) -> anyhow::Result<String> {
    let out = Command::new(bin).arg("--version").output()?;
    let meta = std::fs::metadata(bin)?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    // The binary's build time too: a rebuilt hub may store differently.
    Ok(format!(
        "{} {modified}",
        String::from_utf8_lossy(&out.stdout).trim()
    ))
}

/// A deterministic, well-formed token for session `i`.
fn token(i: usize) -> String {
    let mut x = (i as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut mix = || {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    format!("ct_{:016x}{:016x}", mix(), mix())
}

/// Sessions `first..first+n`, each with `messages` alternating agent
/// messages (~160 characters) and person replies (~25), like a working day.
fn write_file(path: &Path, first: usize, n: usize, messages: usize) -> anyhow::Result<()> {
    let base: u64 = 1_780_000_000_000;
    let mut file = Map::new();
    for i in first..first + n {
        let t = token(i);
        let created = base + i as u64 * 60_000;
        let msgs: Vec<Value> = (0..messages)
            .map(|m| {
                let at = created + m as u64 * 30_000;
                if m % 2 == 0 {
                    json!({"role": "assistant", "at": at, "content": format!(
                        "Step {m} of session {i} is done: the parser now keeps comments, \
                         the tests in parser_test.rs pass, and the next step is the formatter."
                    )})
                } else {
                    json!({"role": "user", "at": at, "content": format!("Good, go on with step {}.", m + 1)})
                }
            })
            .collect();
        let title = format!("bench stored {i}");
        file.insert(
            t.clone(),
            json!({
                "token": t, "title": title, "status": "holding",
                "workspace": format!("/work/project-{}", i % 50), "hostIp": "10.0.0.3",
                "createdAt": created, "lastActiveAt": created + messages as u64 * 30_000,
                "messages": msgs,
            }),
        );
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    serde_json::to_writer(&mut out, &file)?;
    out.flush()?;
    Ok(())
}

/// Start time, memory and wake-ups of a hub on a prepared store.
pub struct StoredFigures {
    pub start: Samples,
    pub rss_idle: u64,
    /// RSS after every session was listed, a page at a time, as the panel does.
    pub rss_listed: u64,
    pub sessions_listed: u64,
    pub sessions_reported: u64,
    pub idle_window: Duration,
    pub idle: CpuCounters,
}

/// Starts the hub `runs` times on `home` (stopping it cleanly between runs);
/// the last one stays up for `settle`, then its RSS and idle CPU are read.
pub async fn measure(
    hub_bin: &Path,
    home: &Path,
    runs: usize,
    settle: Duration,
    idle_window: Duration,
) -> anyhow::Result<StoredFigures> {
    let mut starts = Vec::with_capacity(runs);
    for run in 0..runs {
        let hub = HubProcess::start(hub_bin, home).await?;
        starts.push(hub.start_time);
        if run + 1 < runs {
            hub.stop()?;
            continue;
        }
        let mut c = crate::http::Conn::connect(hub.addr, &hub.secret).await?;
        let health = c.get(holdline_contract::routes::HEALTHZ).await?.ok_json()?;
        tokio::time::sleep(settle).await;
        let rss_idle = rss(hub.pid()).unwrap_or(0);
        let c0 = cpu_counters(hub.pid());
        tokio::time::sleep(idle_window).await;
        let idle = cpu_counters(hub.pid()) - c0;
        let sessions_listed = list_all(&mut c).await?;
        tokio::time::sleep(settle).await;
        let rss_listed = rss(hub.pid()).unwrap_or(0);
        hub.stop()?;
        return Ok(StoredFigures {
            start: Samples::new(starts),
            rss_idle,
            rss_listed,
            sessions_listed,
            sessions_reported: health["sessions"].as_u64().unwrap_or(0),
            idle_window,
            idle,
        });
    }
    bail!("no runs")
}

/// Pages through every session (`status=all`, 200 a page, the API's largest)
/// and returns how many were listed.
async fn list_all(c: &mut crate::http::Conn) -> anyhow::Result<u64> {
    let mut listed = 0;
    let mut cursor = String::new();
    loop {
        let page = c
            .get(&format!(
                "/api/sessions?status=all&limit=200&cursor={cursor}"
            ))
            .await?
            .ok_json()?;
        listed += page["sessions"].as_array().map_or(0, Vec::len) as u64;
        match page["nextCursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => return Ok(listed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_well_formed_and_distinct() {
        let a = token(0);
        assert_eq!(a.len(), 35);
        assert!(
            a[3..]
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        let set: std::collections::HashSet<_> = (0..10_000).map(token).collect();
        assert_eq!(set.len(), 10_000);
    }
}
