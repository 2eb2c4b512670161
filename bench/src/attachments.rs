//! A hub taking questions with files: 10 agent keys each register 100
//! questions (a new `requestId` each), every one carrying the key's same
//! 1 MiB screenshot and a 256 KiB log of its own — 1.25 MiB sent per register,
//! within the default quotas (256 MiB per key, 1 GiB in all). Measured: the
//! hub's RSS after them (and its peak meanwhile), and what the store takes on
//! disk against the distinct bytes it was given.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine as _;
use serde_json::{Value, json};

use crate::http::Conn;
use crate::procs::{HubProcess, prepare_home, rss};

/// The numbers of one run.
pub struct AttachmentPlan {
    pub keys: usize,
    pub registers_per_key: usize,
    /// The file every register of a key carries again.
    pub shared_bytes: usize,
    /// The file each register carries of its own.
    pub own_bytes: usize,
}

/// What the run measured.
pub struct AttachmentFigures {
    pub registers: usize,
    pub rss_after: u64,
    pub rss_peak: u64,
    /// Sled's files and the attachments' files.
    pub store_bytes: u64,
    pub files_bytes: u64,
    /// Distinct bytes the hub was given.
    pub distinct_bytes: u64,
    pub took: Duration,
}

pub async fn measure(hub_bin: &Path, plan: &AttachmentPlan) -> anyhow::Result<AttachmentFigures> {
    let dir = tempfile::tempdir()?;
    let home = dir.path().join("home");
    prepare_home(&home)?;
    let keys: Vec<String> = (0..plan.keys)
        .map(|i| create_key(hub_bin, &home, &format!("bench-{i}")))
        .collect::<anyhow::Result<_>>()?;
    let hub = HubProcess::start(hub_bin, &home).await?;
    let pid = hub.pid();
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                peak.fetch_max(rss(pid).unwrap_or(0), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let started = Instant::now();
    let mut agents = Vec::new();
    for (i, key) in keys.into_iter().enumerate() {
        let (addr, plan) = (
            hub.addr,
            (plan.registers_per_key, plan.shared_bytes, plan.own_bytes),
        );
        agents.push(tokio::spawn(async move {
            agent(addr, key, i as u8, plan).await
        }));
    }
    for a in agents {
        a.await??;
    }
    let took = started.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_after = rss(pid).unwrap_or(0);
    sampler.abort();
    let files_bytes = folder_bytes(&home.join("db").join("attachments"));
    let store_bytes = folder_bytes(&home.join("db"));
    hub.stop()?;
    let registers = plan.keys * plan.registers_per_key;
    Ok(AttachmentFigures {
        registers,
        rss_after,
        rss_peak: peak.load(Ordering::Relaxed).max(rss_after),
        store_bytes,
        files_bytes,
        distinct_bytes: (plan.keys * (plan.shared_bytes + plan.registers_per_key * plan.own_bytes))
            as u64,
        took,
    })
}

/// One key's agent: its session, then its registers one after another.
async fn agent(
    addr: std::net::SocketAddr,
    key: String,
    seed: u8,
    (registers, shared, own): (usize, usize, usize),
) -> anyhow::Result<()> {
    let mut c = Conn::connect(addr, &key).await?;
    let init = json!({"cursorTitle": "bench", "workspace": "/w", "hostIp": "10.0.0.9"});
    let token = c.post("/api/init", &init).await?.ok_json()?["token"]
        .as_str()
        .context("no token")?
        .to_owned();
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let screenshot = b64(&bytes(seed, 0, shared));
    for n in 0..registers {
        let log = b64(&bytes(seed, n as u32 + 1, own));
        let body = json!({"token": token, "message": format!("step {n}"),
            "cursorTitle": "bench", "workspace": "/w", "hostIp": "10.0.0.9",
            "requestId": format!("r{n}"),
            "attachments": [
                {"name": "shot.png", "mimeType": "image/png", "data": screenshot},
                {"name": "run.log", "mimeType": "text/plain", "data": log}]});
        let a = c.post("/api/wait/register", &body).await?;
        if a.status != 200 {
            bail!(
                "register {n} of key {seed} answered {}: {:?}",
                a.status,
                a.json().ok()
            );
        }
    }
    Ok(())
}

/// `n` bytes unique to (`seed`, `file`).
fn bytes(seed: u8, file: u32, n: usize) -> Vec<u8> {
    let mut x = (u64::from(seed) << 32 | u64::from(file)) ^ 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn create_key(bin: &Path, home: &Path, name: &str) -> anyhow::Result<String> {
    let out = std::process::Command::new(bin)
        .arg("--home")
        .arg(home)
        .args(["key", "create", "--name", name])
        .env_remove("HOLDLINE_LISTEN")
        .output()?;
    if !out.status.success() {
        bail!("key create: {}", String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8(out.stdout)?;
    Ok(text.lines().next().unwrap_or_default().to_owned())
}

fn folder_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => todo.push(e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

/// The JSON of the figures, for `--json`.
pub fn as_json(f: &AttachmentFigures) -> Value {
    json!({"registers": f.registers, "rss_after": f.rss_after, "rss_peak": f.rss_peak,
           "store_bytes": f.store_bytes, "files_bytes": f.files_bytes,
           "distinct_bytes": f.distinct_bytes, "took_s": f.took.as_secs_f64()})
}
