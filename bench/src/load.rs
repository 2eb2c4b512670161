//! The hub's own load generator: many simulated bridges, each holding one
//! session's long poll on its own keep-alive connection, while a person-side
//! generator sends replies at a fixed rate. Counts every request and byte, so
//! it also gives the idle cost of a waiting session.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;
use tokio::sync::mpsc;

use crate::http::Conn;
use crate::stats::Samples;

/// How long the bridge asks the hub to hold one poll (its `timeoutMs`).
pub const BRIDGE_POLL_HOLD: Duration = Duration::from_secs(10);

/// What to run.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    pub sessions: usize,
    /// Replies per second while the load runs.
    pub rate: u32,
    pub duration: Duration,
    /// How long the hub holds one poll (`timeoutMs`): the bridge's default is 10 s.
    pub poll_hold: Duration,
    /// The idle window over which requests and bytes are counted.
    pub idle_window: Duration,
}

/// What it measured.
#[derive(Debug)]
pub struct LoadFigures {
    pub sessions: usize,
    pub setup: Duration,
    /// The hub's RSS with every session waiting but no poll held yet.
    pub rss_sessions: u64,
    pub rss_waiting: u64,
    pub rss_after: u64,
    pub idle: IdleCost,
    pub latency: Samples,
    pub sent: u64,
    pub delivered: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub achieved_rate: f64,
    pub errors: u64,
}

/// Requests and bytes the waiting sessions cost over the idle window.
#[derive(Debug, Default, Clone)]
pub struct IdleCost {
    pub window: Duration,
    pub requests: u64,
    pub bytes: u64,
    pub hub_cpu: Duration,
    pub hub_switches: u64,
}

impl IdleCost {
    /// Requests per waiting session per `per` (10 s: the renewal the target speaks of).
    pub fn requests_per(&self, sessions: usize, per: Duration) -> f64 {
        self.requests as f64 / sessions.max(1) as f64 * per.as_secs_f64()
            / self.window.as_secs_f64().max(1e-9)
    }
    pub fn bytes_per_request(&self) -> f64 {
        self.bytes as f64 / self.requests.max(1) as f64
    }
}

/// One simulated session, shared by its poller and the reply generator.
struct Slot {
    token: String,
    /// A reply to this session is in flight; the generator picks another.
    busy: AtomicBool,
}

/// Counters the pollers update.
#[derive(Default)]
struct Tally {
    requests: AtomicU64,
    bytes: AtomicU64,
    renewals: AtomicU64,
    errors: AtomicU64,
}

struct Shared {
    slots: Vec<Slot>,
    tally: Tally,
    base: Instant,
    /// Per reply sequence number: when its POST was written (ns since `base`, 0 = not yet).
    sent_at: Vec<AtomicU64>,
    /// Per reply sequence number: delivered to a poller.
    delivered: Vec<AtomicBool>,
    /// Per reply sequence number: the hub answered 200.
    accepted: Vec<AtomicBool>,
    duplicated: AtomicU64,
    latencies: Mutex<Vec<Duration>>,
    hold_ms: u64,
    /// The first error a task met, to say why a run went wrong.
    first_error: Mutex<Option<String>>,
    /// Set with the first error: the generator stops instead of queueing more.
    failed: AtomicBool,
}

impl Shared {
    fn note_error(&self, e: anyhow::Error) {
        self.failed.store(true, Ordering::Relaxed);
        let mut first = self.first_error.lock().unwrap();
        if first.is_none() {
            *first = Some(format!("{e:#}"));
        }
    }
}

/// Runs the plan against the hub at `addr` (process `pid`).
pub async fn run(
    addr: SocketAddr,
    secret: &str,
    pid: u32,
    plan: &LoadPlan,
) -> anyhow::Result<LoadFigures> {
    let started = Instant::now();
    let waits = setup(addr, secret, plan.sessions).await?;
    let setup_time = started.elapsed();
    // The setup's connections are closed; what is left is the sessions' cost.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_sessions = crate::procs::rss(pid).unwrap_or(0);
    let shared = Arc::new(Shared::new(&waits, plan));

    // One keep-alive connection per simulated bridge, as real bridges have.
    let mut pollers = Vec::with_capacity(waits.len());
    for (i, (_, wait_id)) in waits.into_iter().enumerate() {
        let conn = Conn::connect(addr, secret).await?;
        let shared = shared.clone();
        pollers.push(tokio::spawn(poller(shared, i, wait_id, conn)));
    }
    wait_for_waiting(addr, secret, plan.sessions).await?;
    // Let every first poll reach the hub and settle.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_waiting = crate::procs::rss(pid).unwrap_or(0);

    let idle = idle_cost(&shared, pid, plan.idle_window).await;

    let (sent, achieved_rate) = generate(addr, secret, &shared, plan).await?;
    last_replies_grace(&shared).await;
    let rss_after = crate::procs::rss(pid).unwrap_or(0);
    for p in &pollers {
        p.abort();
    }
    let delivered = shared
        .accepted
        .iter()
        .zip(&shared.delivered)
        .filter(|(a, d)| a.load(Ordering::Relaxed) && d.load(Ordering::Relaxed))
        .count() as u64;
    let latencies = std::mem::take(&mut *shared.latencies.lock().unwrap());
    if let Some(e) = shared.first_error.lock().unwrap().take() {
        eprintln!("load: first error: {e}");
    }
    Ok(LoadFigures {
        sessions: plan.sessions,
        setup: setup_time,
        rss_sessions,
        rss_waiting,
        rss_after,
        idle,
        latency: Samples::new(latencies),
        sent,
        delivered,
        lost: count(&shared.accepted) - delivered,
        duplicated: shared.duplicated.load(Ordering::Relaxed),
        achieved_rate,
        errors: shared.tally.errors.load(Ordering::Relaxed),
    })
}

/// Grace for the last replies to arrive: until every accepted one is delivered, at most
/// 5 s.
async fn last_replies_grace(shared: &Shared) {
    let grace_until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < grace_until {
        let accepted = count(&shared.accepted);
        let delivered = count(&shared.delivered);
        if delivered >= accepted {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

impl Shared {
    /// The run's shared state for the sessions of `waits`, with room for every reply the
    /// plan sends.
    fn new(waits: &[(String, String)], plan: &LoadPlan) -> Shared {
        let total_replies = (plan.rate as f64 * plan.duration.as_secs_f64()).ceil() as usize + 1;
        Shared {
            slots: waits
                .iter()
                .map(|(token, _)| Slot {
                    token: token.clone(),
                    busy: AtomicBool::new(false),
                })
                .collect(),
            tally: Tally::default(),
            base: Instant::now(),
            sent_at: (0..total_replies).map(|_| AtomicU64::new(0)).collect(),
            delivered: (0..total_replies).map(|_| AtomicBool::new(false)).collect(),
            accepted: (0..total_replies).map(|_| AtomicBool::new(false)).collect(),
            duplicated: AtomicU64::new(0),
            latencies: Mutex::new(Vec::with_capacity(total_replies)),
            hold_ms: plan.poll_hold.as_millis() as u64,
            first_error: Mutex::new(None),
            failed: AtomicBool::new(false),
        }
    }
}

fn count(flags: &[AtomicBool]) -> u64 {
    flags.iter().filter(|f| f.load(Ordering::Relaxed)).count() as u64
}

/// Creates `n` sessions and opens a wait on each, over a few connections.
async fn setup(addr: SocketAddr, secret: &str, n: usize) -> anyhow::Result<Vec<(String, String)>> {
    const WORKERS: usize = 32;
    let mut tasks = Vec::new();
    for w in 0..WORKERS.min(n.max(1)) {
        let secret = secret.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::connect(addr, &secret).await?;
            let mut out = Vec::new();
            for i in (w..n).step_by(WORKERS) {
                let init = conn
                    .post(
                        "/api/init",
                        &json!({"cursorTitle": format!("bench session {i}"),
                                "workspace": "/bench", "hostIp": "10.0.0.2"}),
                    )
                    .await?
                    .ok_json()?;
                let token = init["token"]
                    .as_str()
                    .context("init gave no token")?
                    .to_owned();
                let wait_id = register(&mut conn, &token, i, 0).await?;
                out.push((i, token, wait_id));
            }
            anyhow::Ok(out)
        }));
    }
    let mut all = Vec::with_capacity(n);
    for t in tasks {
        all.extend(t.await??);
    }
    all.sort_by_key(|(i, _, _)| *i);
    Ok(all.into_iter().map(|(_, t, w)| (t, w)).collect())
}

async fn register(conn: &mut Conn, token: &str, i: usize, round: u64) -> anyhow::Result<String> {
    let r = conn
        .post(
            "/api/wait/register",
            &json!({"token": token, "message": format!("step {round} done"),
                    "cursorTitle": format!("bench session {i}"), "workspace": "/bench",
                    "hostIp": "10.0.0.2", "requestId": format!("q-{i}-{round}")}),
        )
        .await?
        .ok_json()?;
    Ok(r["waitId"]
        .as_str()
        .context("register gave no waitId")?
        .to_owned())
}

/// Until the hub's `/healthz` counts `n` sessions waiting (at most 60 s).
pub async fn wait_for_waiting(addr: SocketAddr, secret: &str, n: usize) -> anyhow::Result<()> {
    let mut conn = Conn::connect(addr, secret).await?;
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let h = conn
            .get(holdline_contract::routes::HEALTHZ)
            .await?
            .ok_json()?;
        if h["waiting"].as_u64().unwrap_or(0) >= n as u64 {
            return Ok(());
        }
        if Instant::now() > until {
            bail!(
                "only {} of {n} sessions are waiting after 60 s",
                h["waiting"]
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One simulated bridge: poll; on a reply, note it, ack it and open the next
/// wait at once, as an agent that answers quickly would.
async fn poller(shared: Arc<Shared>, i: usize, mut wait_id: String, mut conn: Conn) {
    let token = shared.slots[i].token.clone();
    let mut round = 0;
    loop {
        let body = json!({"token": token, "waitId": wait_id, "timeoutMs": shared.hold_ms});
        let hold = Duration::from_millis(shared.hold_ms);
        let a = match conn.post_held("/api/wait/poll", &body, hold).await {
            Ok(a) => a,
            Err(e) => {
                shared.tally.errors.fetch_add(1, Ordering::Relaxed);
                shared.note_error(e);
                return;
            }
        };
        let now = Instant::now();
        shared.tally.requests.fetch_add(1, Ordering::Relaxed);
        shared
            .tally
            .bytes
            .fetch_add((a.sent + a.received) as u64, Ordering::Relaxed);
        let Ok(v) = a.ok_json() else {
            shared.tally.errors.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        match v["status"].as_str() {
            Some("renewal") => {
                shared.tally.renewals.fetch_add(1, Ordering::Relaxed);
            }
            Some("replied") => {
                let reply = &v["reply"];
                let seq = reply["text"]
                    .as_str()
                    .and_then(|t| t.strip_prefix("bench reply "))
                    .and_then(|s| s.parse::<usize>().ok());
                if let Some(seq) = seq.filter(|s| *s < shared.delivered.len()) {
                    if shared.delivered[seq].swap(true, Ordering::Relaxed) {
                        shared.duplicated.fetch_add(1, Ordering::Relaxed);
                    } else {
                        let sent = shared.sent_at[seq].load(Ordering::Relaxed);
                        let at = now.duration_since(shared.base).as_nanos() as u64;
                        if sent > 0 && at >= sent {
                            shared
                                .latencies
                                .lock()
                                .unwrap()
                                .push(Duration::from_nanos(at - sent));
                        }
                    }
                } else {
                    shared.tally.errors.fetch_add(1, Ordering::Relaxed);
                }
                let reply_id = reply["id"].as_str().unwrap_or_default().to_owned();
                let ack = json!({"token": token, "waitId": wait_id, "replyId": reply_id});
                if conn
                    .post("/api/wait/ack", &ack)
                    .await
                    .and_then(|a| a.ok_json())
                    .is_err()
                {
                    shared.tally.errors.fetch_add(1, Ordering::Relaxed);
                }
                round += 1;
                match register(&mut conn, &token, i, round).await {
                    Ok(w) => wait_id = w,
                    Err(e) => {
                        shared.tally.errors.fetch_add(1, Ordering::Relaxed);
                        shared.note_error(e);
                        return;
                    }
                }
                shared.slots[i].busy.store(false, Ordering::Release);
            }
            _ => {
                shared.tally.errors.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
    }
}

/// Counts the pollers' requests and bytes, and the hub's CPU, over `window`
/// with nothing but waiting sessions.
async fn idle_cost(shared: &Shared, pid: u32, window: Duration) -> IdleCost {
    let r0 = shared.tally.requests.load(Ordering::Relaxed);
    let b0 = shared.tally.bytes.load(Ordering::Relaxed);
    let c0 = crate::procs::cpu_counters(pid);
    tokio::time::sleep(window).await;
    let c1 = crate::procs::cpu_counters(pid);
    let d = c1 - c0;
    IdleCost {
        window,
        requests: shared.tally.requests.load(Ordering::Relaxed) - r0,
        bytes: shared.tally.bytes.load(Ordering::Relaxed) - b0,
        hub_cpu: d.cpu,
        hub_switches: d.switches,
    }
}

/// One person-side connection: sends each queued (slot, seq) reply and tallies it.
async fn send_queued_replies(
    shared: Arc<Shared>,
    mut queue: mpsc::UnboundedReceiver<(usize, usize)>,
    mut conn: Conn,
) {
    while let Some((slot, seq)) = queue.recv().await {
        if shared.failed.load(Ordering::Relaxed) {
            continue;
        }
        let body = json!({"token": shared.slots[slot].token,
                          "text": format!("bench reply {seq}")});
        let at = shared.base.elapsed().as_nanos() as u64;
        shared.sent_at[seq].store(at.max(1), Ordering::Relaxed);
        match conn
            .post("/api/reply", &body)
            .await
            .and_then(|a| a.ok_json())
        {
            Ok(_) => shared.accepted[seq].store(true, Ordering::Relaxed),
            Err(e) => {
                shared.tally.errors.fetch_add(1, Ordering::Relaxed);
                shared.note_error(e);
            }
        }
    }
}

/// A session with no reply in flight, marked busy; `None` (give up on this tick) when
/// 64 random tries found all busy.
fn pick_idle_slot(shared: &Shared, rng: &mut u64) -> Option<usize> {
    let n = shared.slots.len();
    for _ in 0..64 {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        let i = (*rng % n as u64) as usize;
        if shared.slots[i]
            .busy
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            return Some(i);
        }
    }
    None
}

/// Sends replies at `plan.rate` for `plan.duration`, each to a session whose
/// poll is waiting; the clock of each starts when its POST is written.
/// Answers (replies sent, achieved rate).
async fn generate(
    addr: SocketAddr,
    secret: &str,
    shared: &Arc<Shared>,
    plan: &LoadPlan,
) -> anyhow::Result<(u64, f64)> {
    // Person-side connections: a reply answers after its fsync, so several
    // are in flight at once at 1,000/s.
    const SENDERS: usize = 48;
    let mut queues = Vec::with_capacity(SENDERS);
    let mut senders = Vec::with_capacity(SENDERS);
    for _ in 0..SENDERS {
        let (tx, rx) = mpsc::unbounded_channel::<(usize, usize)>();
        let conn = Conn::connect(addr, secret).await?;
        let shared = shared.clone();
        queues.push(tx);
        senders.push(tokio::spawn(send_queued_replies(shared, rx, conn)));
    }
    let total = shared.sent_at.len() - 1;
    let interval = Duration::from_secs_f64(1.0 / f64::from(plan.rate.max(1)));
    let start = Instant::now();
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
    let mut seq = 0;
    while seq < total {
        if shared.failed.load(Ordering::Relaxed) {
            let e = shared
                .first_error
                .lock()
                .unwrap()
                .clone()
                .unwrap_or_default();
            bail!("the load run failed after {seq} replies: {e}");
        }
        let due = start + interval * seq as u32;
        let now = Instant::now();
        if due > now {
            tokio::time::sleep(due - now).await;
        }
        if let Some(i) = pick_idle_slot(shared, &mut rng) {
            queues[seq % SENDERS]
                .send((i, seq))
                .map_err(|_| anyhow::anyhow!("a reply sender stopped"))?;
            seq += 1;
        } else {
            tokio::task::yield_now().await;
        }
    }
    let elapsed = start.elapsed();
    drop(queues);
    for s in senders {
        s.await?;
    }
    Ok((seq as u64, seq as f64 / elapsed.as_secs_f64()))
}
