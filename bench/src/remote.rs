//! The hub's MCP endpoint `/mcp` (Streamable HTTP) measured beside the stdio
//! bridge in one run: reply latency (rounds alternated between the two on one
//! hub), memory per waiting agent (a fresh hub each way), and many remote agents
//! waiting at once under a burst of replies (lost, duplicated, latency, memory).
//!
//! Every remote agent is its own rmcp client over Streamable HTTP, with its own
//! HTTP client and connections, as separate agent processes would have: while it
//! waits it holds the POST stream of its tool call (the hub answers the session's
//! standalone GET with 405, as MCP allows, and the client goes on without it).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

use crate::http::Conn;
use crate::mcp::{self, Client, HubAddr};
use crate::procs::{HubProcess, open_files, rss, tree_rss};
use crate::stats::Samples;

/// How long one wait may last: longer than any run, so no call ends on a limit.
const WAIT_SECS: u64 = 3_600;
/// How long the call after a reply waits: a duplicate delivery would come at once.
const RECHECK_SECS: u64 = 2;
/// Agents connected (and their sessions made) at the same time during set-up.
const CONNECTING: usize = 16;

/// Who the bench's clients say they are, over both transports: a client the
/// bridge has no limit for (each wait passes `timeoutSec`), speaking 2025-11-25,
/// the version with an MCP session that most clients speak.
pub fn client_info() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("holdline-bench", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25)
}

/// The arguments every wait of this part adds: no limit within a run.
fn long_wait() -> Value {
    json!({"timeoutSec": WAIT_SECS})
}

/// One remote agent: an rmcp client of the hub's `/mcp` with the hub's bearer.
pub async fn connect(hub: &HubAddr) -> anyhow::Result<Client> {
    let config = StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", hub.addr))
        .auth_header(hub.secret.clone());
    client_info()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .context("MCP initialize over /mcp")
}

/// How an agent reaches the hub.
#[derive(Clone)]
pub enum Transport {
    /// A `holdline-mcp` process per agent, spoken to over its stdio.
    Stdio { mcp: PathBuf, cwd: PathBuf },
    /// The hub's `/mcp`, one HTTP client per agent.
    Remote,
}

/// An agent with a session of its own.
struct Agent {
    client: Client,
    /// The bridge process (stdio only).
    bridge_pid: Option<u32>,
    token: String,
}

/// Connects an agent over `t` and makes its session, named `label`.
async fn connect_agent(t: &Transport, hub: &HubAddr, label: &str) -> anyhow::Result<Agent> {
    let (client, bridge_pid) = match t {
        Transport::Stdio { mcp, cwd } => {
            let b = mcp::spawn_bridge(mcp, hub, cwd, client_info()).await?;
            (b.client, Some(b.pid))
        }
        Transport::Remote => (connect(hub).await?, None),
    };
    // A title and workspace of its own: a session of its own.
    let token = mcp::init_conversation(
        client.peer(),
        &format!("bench {label}"),
        json!({"workspace": format!("/bench/{label}")}),
    )
    .await
    .with_context(|| format!("bench {label}"))?;
    Ok(Agent {
        client,
        bridge_pid,
        token,
    })
}

/// Agents `0..n`, [`CONNECTING`] at a time, in order.
async fn connect_agents(t: &Transport, hub: &HubAddr, n: usize) -> anyhow::Result<Vec<Agent>> {
    let gate = Arc::new(Semaphore::new(CONNECTING));
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        let (t, hub, gate) = (t.clone(), hub.clone(), gate.clone());
        tasks.push(tokio::spawn(async move {
            let _turn = gate.acquire_owned().await?;
            connect_agent(&t, &hub, &format!("agent-{i}")).await
        }));
    }
    let mut agents = Vec::with_capacity(n);
    for task in tasks {
        agents.push(task.await??);
    }
    Ok(agents)
}

async fn close(agents: Vec<Agent>) {
    for a in agents {
        a.client.cancel().await.ok();
    }
}

/// Reply latency over `/mcp` and through the stdio bridge, from the same
/// client on the same hub, rounds alternated (who goes first swaps every
/// round) so both see the same host: (stdio, `/mcp`).
pub async fn reply_latency_side_by_side(
    mcp_bin: &Path,
    hub: &HubAddr,
    cwd: &Path,
    replies: usize,
) -> anyhow::Result<(Samples, Samples)> {
    let stdio = connect_agent(
        &Transport::Stdio {
            mcp: mcp_bin.to_owned(),
            cwd: cwd.to_owned(),
        },
        hub,
        "stdio",
    )
    .await?;
    let remote = connect_agent(&Transport::Remote, hub, "remote").await?;
    let mut person = Conn::connect(hub.addr, &hub.secret).await?;
    let (mut over_stdio, mut over_mcp) = (Vec::new(), Vec::new());
    // One unmeasured round each first: the first call of a session is not the usual one.
    for i in 0..=replies {
        let order = if i % 2 == 0 {
            [&stdio, &remote]
        } else {
            [&remote, &stdio]
        };
        for agent in order {
            let took = mcp::one_reply(
                agent.client.peer(),
                &mut person,
                &agent.token,
                i,
                long_wait(),
            )
            .await?;
            if i == 0 {
                continue;
            }
            if agent.bridge_pid.is_some() {
                over_stdio.push(took);
            } else {
                over_mcp.push(took);
            }
        }
    }
    close(vec![stdio, remote]).await;
    Ok((Samples::new(over_stdio), Samples::new(over_mcp)))
}

/// The hub's memory with `agents` agents waiting, against the same hub idle.
#[derive(Debug, Clone)]
pub struct AgentMemory {
    pub agents: usize,
    pub hub_idle: u64,
    pub hub_waiting: u64,
    /// Bridge processes' RSS (process trees), mean per agent; 0 over `/mcp`.
    pub bridge_each: u64,
    /// The hub's open files with every agent waiting.
    pub hub_files: usize,
}

impl AgentMemory {
    /// The hub's share of one waiting agent.
    pub fn hub_each(&self) -> u64 {
        self.hub_waiting.saturating_sub(self.hub_idle) / self.agents.max(1) as u64
    }

    /// All one waiting agent costs: its bridge (if any) and its share of the hub.
    pub fn each(&self) -> u64 {
        self.bridge_each + self.hub_each()
    }
}

/// Starts a hub, passes one agent through a reply (so what a first call sets up
/// once is in the idle figure, not the share) and reads the idle hub's RSS.
async fn warmed_hub(
    hub_bin: &Path,
    home: &Path,
    t: &Transport,
    settle: Duration,
    agents: usize,
) -> anyhow::Result<(HubProcess, u64)> {
    home_with_room(home, agents)?;
    let hub = HubProcess::start(hub_bin, home).await?;
    let addr = HubAddr::from(&hub);
    let warm = connect_agent(t, &addr, "warm-up").await?;
    let mut person = Conn::connect(hub.addr, &hub.secret).await?;
    mcp::one_reply(warm.client.peer(), &mut person, &warm.token, 0, long_wait()).await?;
    close(vec![warm]).await;
    drop(person);
    tokio::time::sleep(settle).await;
    let idle = rss(hub.pid()).unwrap_or(0);
    Ok((hub, idle))
}

/// A hub home whose `/mcp` has room for `agents` MCP sessions: every agent here opens
/// its session with the hub's secret, and the hub's default is 64 per credential.
fn home_with_room(home: &Path, agents: usize) -> anyhow::Result<()> {
    std::fs::create_dir_all(home)?;
    let room = (agents + 64).max(4096);
    std::fs::write(
        home.join("config.toml"),
        format!(
            "listen = \"127.0.0.1:9\"\n[mcp]\nsessions_per_credential = {room}\nsessions_total = {room}\n"
        ),
    )?;
    Ok(())
}

/// Starts each agent's `wait_for_user_input`; the handle answers when it ends.
fn start_waits(agents: &[Agent]) -> Vec<tokio::task::JoinHandle<()>> {
    agents
        .iter()
        .map(|a| {
            let peer = a.client.peer().clone();
            let mut wait = mcp::args(long_wait());
            wait.insert("token".into(), json!(a.token));
            wait.insert("message".into(), json!("step 0 done"));
            tokio::spawn(async move {
                let _ = peer
                    .call_tool(
                        CallToolRequestParams::new(holdline_contract::WAIT_TOOL)
                            .with_arguments(wait),
                    )
                    .await;
            })
        })
        .collect()
}

/// The hub's RSS with `n` agents over `t` each holding a wait, against the same
/// hub idle; a fresh hub on a fresh home.
pub async fn memory_per_agent(
    hub_bin: &Path,
    t: &Transport,
    n: usize,
    settle: Duration,
) -> anyhow::Result<AgentMemory> {
    let home = tempfile::tempdir()?;
    let (hub, hub_idle) = warmed_hub(hub_bin, &home.path().join("home"), t, settle, n).await?;
    let addr = HubAddr::from(&hub);
    let agents = connect_agents(t, &addr, n).await?;
    let waits = start_waits(&agents);
    crate::load::wait_for_waiting(hub.addr, &hub.secret, n).await?;
    tokio::time::sleep(settle).await;
    let hub_waiting = rss(hub.pid()).unwrap_or(0);
    let hub_files = open_files(hub.pid());
    let bridges: u64 = agents
        .iter()
        .filter_map(|a| a.bridge_pid)
        .map(tree_rss)
        .sum();
    for w in &waits {
        w.abort();
    }
    close(agents).await;
    hub.stop()?;
    Ok(AgentMemory {
        agents: n,
        hub_idle,
        hub_waiting,
        bridge_each: bridges / n.max(1) as u64,
        hub_files,
    })
}

/// What many remote agents waiting at once, then one reply each, measured.
#[derive(Debug)]
pub struct ManyFigures {
    pub memory: AgentMemory,
    /// Connecting every agent, making its session and opening its wait.
    pub setup: Duration,
    pub hub_after: u64,
    /// Reply POST written → tool result at the agent's client.
    pub latency: Samples,
    pub sent: u64,
    pub delivered: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub errors: u64,
    pub achieved_rate: f64,
}

/// Per-agent records, shared by the agents and the reply sender.
struct Tally {
    base: Instant,
    /// When agent i's reply POST was written (ns since `base`, 0 = not yet).
    sent_at: Vec<AtomicU64>,
    /// The hub answered agent i's reply POST with 200.
    accepted: Vec<AtomicBool>,
    /// Agent i's call ended with its reply.
    delivered: Vec<AtomicBool>,
    latencies: Mutex<Vec<Duration>>,
    duplicated: AtomicU64,
    errors: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl Tally {
    fn error(&self, e: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.first_error.lock().unwrap().get_or_insert(e);
    }

    fn count(flags: &[AtomicBool]) -> u64 {
        flags.iter().filter(|f| f.load(Ordering::Relaxed)).count() as u64
    }
}

/// `n` remote agents, each waiting on a session of its own; then one reply to
/// each at `rate` replies/s. After its reply each agent calls again, as an agent
/// does, and a reply that comes a second time is counted duplicated.
pub async fn many_waiting(
    hub_bin: &Path,
    n: usize,
    rate: u32,
    settle: Duration,
) -> anyhow::Result<ManyFigures> {
    let home = tempfile::tempdir()?;
    let (hub, hub_idle) = warmed_hub(
        hub_bin,
        &home.path().join("home"),
        &Transport::Remote,
        settle,
        n,
    )
    .await?;
    let addr = HubAddr::from(&hub);
    let started = Instant::now();
    let agents = connect_agents(&Transport::Remote, &addr, n).await?;
    let tally = Arc::new(Tally {
        base: Instant::now(),
        sent_at: (0..n).map(|_| AtomicU64::new(0)).collect(),
        accepted: (0..n).map(|_| AtomicBool::new(false)).collect(),
        delivered: (0..n).map(|_| AtomicBool::new(false)).collect(),
        latencies: Mutex::new(Vec::with_capacity(n)),
        duplicated: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        first_error: Mutex::new(None),
    });
    let tokens: Arc<Vec<String>> = Arc::new(agents.iter().map(|a| a.token.clone()).collect());
    let runs: Vec<_> = agents
        .into_iter()
        .enumerate()
        .map(|(i, a)| tokio::spawn(waiting_agent(a, i, tally.clone())))
        .collect();
    crate::load::wait_for_waiting(hub.addr, &hub.secret, n).await?;
    let setup = started.elapsed();
    tokio::time::sleep(settle).await;
    let hub_waiting = rss(hub.pid()).unwrap_or(0);
    let hub_files = open_files(hub.pid());

    let (sent, achieved_rate) = send_replies(&addr, &tokens, &tally, rate).await?;
    // Every agent ends after its reply and the call after it.
    let until = Instant::now() + Duration::from_secs(RECHECK_SECS + 20);
    for run in runs {
        let left = until.saturating_duration_since(Instant::now());
        if tokio::time::timeout(left, run).await.is_err() {
            tally.error("an agent did not finish within 20 s of its last call".into());
        }
    }
    let hub_after = rss(hub.pid()).unwrap_or(0);
    hub.stop()?;
    let delivered = tally
        .accepted
        .iter()
        .zip(&tally.delivered)
        .filter(|(a, d)| a.load(Ordering::Relaxed) && d.load(Ordering::Relaxed))
        .count() as u64;
    if let Some(e) = tally.first_error.lock().unwrap().take() {
        eprintln!("remote agents: first error: {e}");
    }
    let latencies = std::mem::take(&mut *tally.latencies.lock().unwrap());
    Ok(ManyFigures {
        memory: AgentMemory {
            agents: n,
            hub_idle,
            hub_waiting,
            bridge_each: 0,
            hub_files,
        },
        setup,
        hub_after,
        latency: Samples::new(latencies),
        sent,
        delivered,
        lost: Tally::count(&tally.accepted) - delivered,
        duplicated: tally.duplicated.load(Ordering::Relaxed),
        errors: tally.errors.load(Ordering::Relaxed),
        achieved_rate,
    })
}

/// One agent: wait for its reply; then call again with the `resume` of that
/// result, as an agent does, and note a reply that comes again.
async fn waiting_agent(agent: Agent, i: usize, tally: Arc<Tally>) {
    let call = |extra: Value, message: &str| {
        let mut a = mcp::args(extra);
        a.insert("token".into(), json!(agent.token));
        a.insert("message".into(), json!(message));
        agent
            .client
            .call_tool(CallToolRequestParams::new(holdline_contract::WAIT_TOOL).with_arguments(a))
    };
    let first = call(long_wait(), "step 0 done").await;
    let arrived = tally.base.elapsed().as_nanos() as u64;
    let result = match first {
        Ok(r) => r,
        Err(e) => return tally.error(format!("agent {i}: {e}")),
    };
    let text = mcp::text_of(&result);
    if result.is_error == Some(true) || !text.contains(&reply_text(i)) {
        return tally.error(format!("agent {i}'s wait ended without its reply: {text}"));
    }
    tally.delivered[i].store(true, Ordering::Relaxed);
    let sent = tally.sent_at[i].load(Ordering::Relaxed);
    if sent > 0 && arrived >= sent {
        tally
            .latencies
            .lock()
            .unwrap()
            .push(Duration::from_nanos(arrived - sent));
    }
    let resume = result
        .structured_content
        .as_ref()
        .and_then(|s| s["resume"].as_str())
        .map(str::to_owned);
    let again = call(
        json!({"timeoutSec": RECHECK_SECS, "resume": resume}),
        "step 1 done",
    )
    .await;
    match again {
        Ok(r) if mcp::text_of(&r).contains(&reply_text(i)) => {
            tally.duplicated.fetch_add(1, Ordering::Relaxed);
        }
        Ok(_) => {}
        Err(e) => tally.error(format!("agent {i}'s second call: {e}")),
    }
    agent.client.cancel().await.ok();
}

fn reply_text(i: usize) -> String {
    format!("bench reply {i}.")
}

/// The person's replies, one per agent in order, paced at `rate` per second over
/// a few keep-alive connections (a reply answers after its disk sync). Answers
/// (replies sent, achieved rate).
async fn send_replies(
    hub: &HubAddr,
    tokens: &Arc<Vec<String>>,
    tally: &Arc<Tally>,
    rate: u32,
) -> anyhow::Result<(u64, f64)> {
    const SENDERS: usize = 32;
    let mut queues = Vec::with_capacity(SENDERS);
    let mut senders = Vec::with_capacity(SENDERS);
    for _ in 0..SENDERS {
        let (tx, mut rx) = mpsc::unbounded_channel::<usize>();
        let mut conn = Conn::connect(hub.addr, &hub.secret).await?;
        let (tokens, tally) = (tokens.clone(), tally.clone());
        queues.push(tx);
        senders.push(tokio::spawn(async move {
            while let Some(i) = rx.recv().await {
                let body = json!({"token": tokens[i], "text": reply_text(i)});
                let at = tally.base.elapsed().as_nanos() as u64;
                tally.sent_at[i].store(at.max(1), Ordering::Relaxed);
                match conn
                    .post("/api/reply", &body)
                    .await
                    .and_then(|a| a.ok_json())
                {
                    Ok(_) => tally.accepted[i].store(true, Ordering::Relaxed),
                    Err(e) => tally.error(format!("reply to agent {i}: {e:#}")),
                }
            }
        }));
    }
    let interval = Duration::from_secs_f64(1.0 / f64::from(rate.max(1)));
    let start = Instant::now();
    for i in 0..tokens.len() {
        let due = start + interval * i as u32;
        tokio::time::sleep_until(due.into()).await;
        queues[i % SENDERS]
            .send(i)
            .map_err(|_| anyhow::anyhow!("a reply sender stopped"))?;
    }
    let elapsed = start.elapsed();
    drop(queues);
    for s in senders {
        s.await?;
    }
    if tokens.is_empty() {
        bail!("no agents to reply to");
    }
    Ok((
        tokens.len() as u64,
        tokens.len() as f64 / elapsed.as_secs_f64().max(1e-9),
    ))
}

/// The same many sessions as the hub sees them from stdio bridges: one
/// long poll each on a keep-alive connection (`load.rs`'s simulated bridges),
/// one reply per session on average at `rate`. Answers the idle hub's RSS
/// with the load's figures.
pub async fn many_polling(
    hub_bin: &Path,
    n: usize,
    rate: u32,
    settle: Duration,
) -> anyhow::Result<(u64, crate::load::LoadFigures)> {
    let home = tempfile::tempdir()?;
    let hub = HubProcess::start(hub_bin, &home.path().join("home")).await?;
    tokio::time::sleep(settle).await;
    let idle = rss(hub.pid()).unwrap_or(0);
    let plan = crate::load::LoadPlan {
        sessions: n,
        rate,
        duration: Duration::from_secs_f64((n as f64 / f64::from(rate.max(1))).max(1.0)),
        poll_hold: crate::load::BRIDGE_POLL_HOLD,
        idle_window: settle,
    };
    let f = crate::load::run(hub.addr, &hub.secret, hub.pid(), &plan).await?;
    hub.stop()?;
    Ok((idle, f))
}

/// The numbers of this part.
#[derive(Debug, Clone)]
pub struct RemotePlan {
    /// Reply latency rounds per transport.
    pub replies: usize,
    /// Agents waiting for the memory figure, per transport.
    pub memory_agents: usize,
    /// Remote agents waiting at once.
    pub many: usize,
    /// Replies per second to them.
    pub rate: u32,
    pub settle: Duration,
}

/// Runs the part and adds its rows: `/mcp` beside the stdio bridge.
pub async fn bench(
    bins: &crate::procs::Binaries,
    plan: &RemotePlan,
    report: &mut crate::Report,
) -> anyhow::Result<()> {
    // Two sockets per waiting remote agent in this process and in the hub (which
    // raises its own limit the same way at start).
    let files = crate::procs::raise_open_files_limit();
    let needed = 2 * plan.many as u64 + 256;
    if files < needed {
        bail!(
            "{} remote agents need about {needed} open files, the limit here is {files}: raise it (`ulimit -n {needed}`) or pass a smaller --agents",
            plan.many
        );
    }
    eprintln!(
        "/mcp beside stdio: reply latency ({} replies each, alternated), memory with {} agents waiting each way, {} remote agents at {} replies/s",
        plan.replies, plan.memory_agents, plan.many, plan.rate
    );
    let home = tempfile::tempdir()?;
    let (over_stdio, over_mcp) = reply_latencies(bins, plan, home.path()).await?;
    report_reply_latencies(report, &over_stdio, &over_mcp);
    let stdio = Transport::Stdio {
        mcp: bins.mcp.clone(),
        cwd: home.path().to_owned(),
    };
    let m_mcp = memory_per_agent(
        &bins.hub,
        &Transport::Remote,
        plan.memory_agents,
        plan.settle,
    )
    .await?;
    let m_stdio = memory_per_agent(&bins.hub, &stdio, plan.memory_agents, plan.settle).await?;
    report_memory(report, &m_mcp, &m_stdio);
    let f = many_waiting(&bins.hub, plan.many, plan.rate, plan.settle).await?;
    let (polling_idle, p) = many_polling(&bins.hub, plan.many, plan.rate, plan.settle).await?;
    report_many(report, &f, polling_idle, &p);
    let samples = samples_json;
    let memory = memory_json;
    let n = f.memory.agents;
    report.json.insert(
        "remote".into(),
        json!({"reply_mcp": samples(&over_mcp), "reply_stdio": samples(&over_stdio),
               "memory_mcp": memory(&m_mcp), "memory_stdio": memory(&m_stdio),
               "many": {"memory": memory(&f.memory), "setup_s": f.setup.as_secs_f64(),
                        "hub_after": f.hub_after, "latency": samples(&f.latency),
                        "rate": f.achieved_rate, "sent": f.sent, "delivered": f.delivered,
                        "lost": f.lost, "duplicated": f.duplicated, "errors": f.errors},
               "many_polling": {"sessions": n, "hub_idle": polling_idle,
                                "hub_waiting": p.rss_waiting, "latency": samples(&p.latency),
                                "rate": p.achieved_rate, "sent": p.sent, "lost": p.lost,
                                "duplicated": p.duplicated, "errors": p.errors}}),
    );
    Ok(())
}

/// Reply latency over stdio and over `/mcp`, rounds alternated on one hub started in
/// `dir`: (stdio, `/mcp`).
async fn reply_latencies(
    bins: &crate::procs::Binaries,
    plan: &RemotePlan,
    dir: &Path,
) -> anyhow::Result<(Samples, Samples)> {
    let hub_home = dir.join("home");
    home_with_room(&hub_home, plan.many.max(plan.memory_agents))?;
    let hub = HubProcess::start(&bins.hub, &hub_home).await?;
    // The measuring clients get a thread of their own, so their clock reads when
    // the result arrives, not when a busy shared runtime gets round to it.
    let (mcp_bin, addr, cwd, replies) = (
        bins.mcp.clone(),
        HubAddr::from(&hub),
        dir.to_owned(),
        plan.replies,
    );
    let both = tokio::task::spawn_blocking(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(reply_latency_side_by_side(&mcp_bin, &addr, &cwd, replies))
    })
    .await??;
    hub.stop()?;
    Ok(both)
}

/// `p50 / p99 (min, max)`.
fn p50_p99(s: &Samples) -> String {
    use crate::stats::ms;
    format!(
        "{} / {} (min {}, max {})",
        ms(s.median()),
        ms(s.pct(99.0)),
        ms(s.min()),
        ms(s.max())
    )
}

fn report_reply_latencies(report: &mut crate::Report, over_stdio: &Samples, over_mcp: &Samples) {
    report.reference(
        format!(
            "/mcp reply latency: reply POST → tool result at an rmcp client over Streamable HTTP ({} replies) p50 / p99",
            over_mcp.len()
        ),
        p50_p99(over_mcp),
    );
    report.reference(
        format!(
            "/mcp beside: the same through the stdio bridge, rounds alternated on the same hub ({} replies) p50 / p99",
            over_stdio.len()
        ),
        p50_p99(over_stdio),
    );
}

fn report_memory(report: &mut crate::Report, m_mcp: &AgentMemory, m_stdio: &AgentMemory) {
    use crate::stats::{kib, mib};
    report.reference(
        format!(
            "/mcp memory per waiting remote agent ({} waiting): the hub's RSS over its idle RSS, per agent",
            m_mcp.agents
        ),
        format!(
            "{} (hub idle {}, with them waiting {}, {} open files)",
            kib(m_mcp.each()),
            mib(m_mcp.hub_idle),
            mib(m_mcp.hub_waiting),
            m_mcp.hub_files
        ),
    );
    report.reference(
        format!(
            "/mcp beside: memory per waiting stdio agent ({} waiting): its bridge's RSS + the hub's share",
            m_stdio.agents
        ),
        format!(
            "{} = bridge {} + hub {} (hub idle {}, with them waiting {})",
            mib(m_stdio.each()),
            mib(m_stdio.bridge_each),
            kib(m_stdio.hub_each()),
            mib(m_stdio.hub_idle),
            mib(m_stdio.hub_waiting)
        ),
    );
}

/// The rows of many remote agents waiting (`f`) beside as many sessions long-polling
/// (`p`, over a hub of `polling_idle` bytes idle).
fn report_many(
    report: &mut crate::Report,
    f: &ManyFigures,
    polling_idle: u64,
    p: &crate::load::LoadFigures,
) {
    use crate::stats::{kib, mib, ms};
    let n = f.memory.agents;
    report.reference(
        format!("/mcp hub RSS, {n} remote agents waiting at once"),
        format!(
            "{} ({} per agent over the idle {}; {} open files; after the replies {}; set-up {:.1} s)",
            mib(f.memory.hub_waiting),
            kib(f.memory.each()),
            mib(f.memory.hub_idle),
            f.memory.hub_files,
            mib(f.hub_after),
            f.setup.as_secs_f64()
        ),
    );
    let l = &f.latency;
    report.reference(
        format!(
            "/mcp {n} remote agents waiting, one reply each at {:.0} replies/s: reply POST → tool result p50 / p99",
            f.achieved_rate
        ),
        format!(
            "{} / {} (max {}, {} results)",
            ms(l.median()),
            ms(l.pct(99.0)),
            ms(l.max()),
            l.len()
        ),
    );
    report.reference(
        format!(
            "/mcp beside: {n} sessions long-polling as stdio bridges do (simulated), {:.0} replies/s: reply POST → poll answer p50 / p99; hub RSS",
            p.achieved_rate
        ),
        format!(
            "{} / {} (max {}, {} replies, lost {}, duplicated {}); {} ({} per session over the idle {})",
            ms(p.latency.median()),
            ms(p.latency.pct(99.0)),
            ms(p.latency.max()),
            p.sent,
            p.lost,
            p.duplicated,
            mib(p.rss_waiting),
            kib(p.rss_waiting.saturating_sub(polling_idle) / n.max(1) as u64),
            mib(polling_idle)
        ),
    );
    report.row(
        format!("/mcp {n} remote agents: replies lost / duplicated"),
        format!(
            "{} / {} (delivered {} of {} sent, errors {})",
            f.lost, f.duplicated, f.delivered, f.sent, f.errors
        ),
        "0 / 0",
        f.lost == 0 && f.duplicated == 0 && f.errors == 0 && f.delivered == f.sent,
    );
}

fn samples_json(s: &Samples) -> Value {
    json!({"n": s.len(), "p50_ms": s.median().as_secs_f64()*1e3,
           "p99_ms": s.pct(99.0).as_secs_f64()*1e3, "min_ms": s.min().as_secs_f64()*1e3,
           "max_ms": s.max().as_secs_f64()*1e3})
}

fn memory_json(m: &AgentMemory) -> Value {
    json!({"agents": m.agents, "hub_idle": m.hub_idle, "hub_waiting": m.hub_waiting,
           "hub_each": m.hub_each(), "bridge_each": m.bridge_each, "each": m.each(),
           "hub_files": m.hub_files})
}
