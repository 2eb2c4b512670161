//! Figures taken through the real bridge over stdio with an rmcp client:
//! cold start (spawn → `tools/list` answered), idle memory of its process
//! tree, and reply latency (reply POST sent → tool result at the client) —
//! one round of which ([`one_reply`]) is also how `/mcp` is timed (`remote.rs`).

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig};
use rmcp::service::{Peer, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::http::Conn;
use crate::procs::{HubProcess, tree_rss};
use crate::stats::Samples;

/// An rmcp client; its handler only says who it is (`clientInfo`, protocol version).
pub type Client = RunningService<RoleClient, ClientConfig>;

/// A bridge process speaking MCP to us.
pub struct Bridge {
    pub client: Client,
    pub pid: u32,
}

/// Where the hub under test listens and its secret.
#[derive(Clone)]
pub struct HubAddr {
    pub addr: SocketAddr,
    pub secret: String,
}

impl From<&HubProcess> for HubAddr {
    fn from(h: &HubProcess) -> Self {
        HubAddr {
            addr: h.addr,
            secret: h.secret.clone(),
        }
    }
}

/// Spawns `holdline-mcp` against `hub` and completes `initialize` as `info`.
pub async fn spawn_bridge(
    mcp: &Path,
    hub: &HubAddr,
    cwd: &Path,
    info: ClientConfig,
) -> anyhow::Result<Bridge> {
    let mut cmd = tokio::process::Command::new(mcp);
    cmd.current_dir(cwd)
        .env("HOLDLINE_HUB", format!("http://{}", hub.addr))
        .env("HOLDLINE_SECRET", &hub.secret)
        .env("HOLDLINE_HOST_ID", "10.0.0.1")
        .env("HOLDLINE_NO_AUTOSTART", "1")
        .env("HOLDLINE_MAX_WAIT_SEC", "0")
        .env_remove("HOLDLINE_HUB_BIN");
    // HOLDLINE_BENCH_BRIDGE_LOG=debug shows the bridge's log, to see why a run failed.
    let log = std::env::var("HOLDLINE_BENCH_BRIDGE_LOG").ok();
    cmd.env(
        "HOLDLINE_LOG",
        log.as_deref()
            .map_or("warn".into(), |l| format!("holdline_mcp={l}")),
    );
    let stderr = if log.is_some() {
        std::process::Stdio::inherit()
    } else {
        std::process::Stdio::null()
    };
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(stderr)
        .spawn()
        .with_context(|| format!("cannot run {}", mcp.display()))?;
    let pid = transport.id().context("the bridge has no pid")?;
    let client = info.serve(transport).await.context("MCP initialize")?;
    Ok(Bridge { client, pid })
}

/// Cold start and idle memory of the bridge.
pub struct BridgeFigures {
    pub cold_start: Samples,
    pub idle_rss: Vec<u64>,
}

/// `runs` cold starts after one warm-up; each process is measured for its
/// idle tree RSS after initialize plus `idle` and then closed.
pub async fn bridge_figures(
    mcp: &Path,
    hub: &HubProcess,
    cwd: &Path,
    runs: usize,
    idle: Duration,
) -> anyhow::Result<BridgeFigures> {
    let mut starts = Vec::with_capacity(runs);
    let mut rss = Vec::with_capacity(runs);
    for run in 0..=runs {
        let t0 = Instant::now();
        let b = spawn_bridge(mcp, &hub.into(), cwd, ClientConfig::default()).await?;
        let tools = b.client.list_all_tools().await.context("tools/list")?;
        let took = t0.elapsed();
        if tools.len() != 4 {
            bail!("the bridge lists {} tools, not 4", tools.len());
        }
        if run > 0 {
            starts.push(took);
            // Memory on a few runs is enough; idling every run would only add time.
            if rss.len() < 3 {
                tokio::time::sleep(idle).await;
                rss.push(tree_rss(b.pid));
            }
        }
        b.client.cancel().await.ok();
    }
    Ok(BridgeFigures {
        cold_start: Samples::new(starts),
        idle_rss: rss,
    })
}

pub fn args(v: Value) -> rmcp::model::JsonObject {
    v.as_object().cloned().unwrap_or_default()
}

pub fn text_of(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `replies` rounds of [`one_reply`] through a bridge spawned for them.
pub async fn reply_latency(
    mcp: &Path,
    hub: &HubAddr,
    cwd: &Path,
    replies: usize,
) -> anyhow::Result<Samples> {
    let b = spawn_bridge(mcp, hub, cwd, ClientConfig::default()).await?;
    let token = init_conversation(b.client.peer(), "bench reply latency", json!({})).await?;
    let mut person = Conn::connect(hub.addr, &hub.secret).await?;
    let mut samples = Vec::with_capacity(replies);
    for i in 0..replies {
        samples.push(one_reply(b.client.peer(), &mut person, &token, i, json!({})).await?);
    }
    b.client.cancel().await.ok();
    Ok(Samples::new(samples))
}

/// `init_conversation` titled `title` (plus `extra` arguments); the session's token.
pub async fn init_conversation(
    peer: &Peer<RoleClient>,
    title: &str,
    extra: Value,
) -> anyhow::Result<String> {
    let mut a = args(extra);
    a.insert("cursorTitle".into(), json!(title));
    let r = peer
        .call_tool(CallToolRequestParams::new("init_conversation").with_arguments(a))
        .await?;
    Ok(r.structured_content
        .as_ref()
        .and_then(|s| s["token"].as_str())
        .with_context(|| format!("init_conversation gave no token: {}", text_of(&r)))?
        .to_owned())
}

/// One round: the agent calls `wait_for_user_input` (with `extra` arguments); once
/// the hub holds the long poll behind it, the person's reply is POSTed; the time
/// from writing that POST to the tool result arriving at the MCP client. Returns
/// once the delivery was acked, so the next round starts from a quiet session.
pub async fn one_reply(
    peer: &Peer<RoleClient>,
    person: &mut Conn,
    token: &str,
    i: usize,
    extra: Value,
) -> anyhow::Result<Duration> {
    let peer = peer.clone();
    let mut wait_args = args(extra);
    wait_args.insert("token".into(), json!(token));
    wait_args.insert("message".into(), json!(format!("step {i} done")));
    // The clock stops when the tool result reaches the client, which may be
    // before the person's 200 (that one also waits for the disk).
    let call = tokio::spawn(async move {
        let result = peer
            .call_tool(
                CallToolRequestParams::new(holdline_contract::WAIT_TOOL).with_arguments(wait_args),
            )
            .await;
        (result, Instant::now())
    });
    wait_until_waiting(person, token).await?;
    // The bridge polls right after its register answers; give that poll
    // time to reach the hub so the reply wakes a held poll.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let text = format!("reply #{i}.");
    let t0 = Instant::now();
    let answer = person
        .post("/api/reply", &json!({"token": token, "text": text}))
        .await?;
    answer.ok_json()?;
    let (result, arrived) = call.await?;
    let result = result?;
    let got = text_of(&result);
    if result.is_error == Some(true) || !got.contains(&text) {
        bail!("wait {i} ended without the reply: {got}");
    }
    // The bridge acks after writing the result; let that ack land before the
    // next call (docs/benchmarks-history.md: an ack racing a new wait closed it).
    wait_until_acked(person, token).await?;
    Ok(arrived - t0)
}

async fn wait_until_acked(conn: &mut Conn, token: &str) -> anyhow::Result<()> {
    wait_for(conn, token, "the reply was not acked", |s| {
        s["status"] == "holding" && s["queuedReplies"] == 0
    })
    .await
}

async fn wait_until_waiting(conn: &mut Conn, token: &str) -> anyhow::Result<()> {
    wait_for(conn, token, "the session did not start waiting", |s| {
        s["status"] == "waiting"
    })
    .await
}

/// Polls the session every millisecond until `done` holds, for up to 10 s.
async fn wait_for(
    conn: &mut Conn,
    token: &str,
    failure: &str,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<()> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let s = conn
            .get(&format!("/api/sessions/{token}?limit=1"))
            .await?
            .ok_json()?;
        if done(&s) {
            return Ok(());
        }
        if Instant::now() > until {
            bail!("{failure} within 10 s: {s}");
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
