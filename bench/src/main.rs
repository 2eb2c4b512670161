//! `holdline-bench`: runs the real `holdline-hub` and `holdline-mcp`
//! binaries as processes and measures the figures of docs/benchmarks.md —
//! reply latency through the bridge, many waiting sessions under reply load,
//! memory, start time on a large store, idle cost, bridge cold start, and the
//! hub's `/mcp` beside the stdio bridge.
//!
//! `--quick` runs small numbers to check the harness works (scripts/test-bench.sh);
//! real figures need release builds (scripts/bench.sh).

#![forbid(unsafe_code)]

mod attachments;
mod floor;
mod http;
mod load;
mod mcp;
mod procs;
mod remote;
mod stats;
mod stored;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use serde_json::{Value, json};

use crate::procs::{Binaries, HubProcess};
use crate::stats::{mib, ms, with_range};

#[derive(Parser)]
#[command(
    name = "holdline-bench",
    version,
    about = "Benchmarks the real holdline-hub and holdline-mcp binaries"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Hub figures: reply latency through the bridge, 10,000 waiting sessions
    /// under 1,000 replies/s, memory, start with 100,000 stored sessions, idle cost;
    /// and `/mcp` beside the stdio bridge (latency, memory, 1,000 remote agents).
    Hub(HubArgs),
    /// Bridge figures: cold start (spawn → tools/list answered) and idle memory.
    Bridge(Common),
    /// A minimal stdio MCP server whose tool call is answered by a UDP datagram
    /// on PORT: what a client measures against it is the client's own share of
    /// the reply latency (scripts/bench-peer.sh).
    FloorServer {
        #[arg(long)]
        port: u16,
    },
}

#[derive(clap::Args)]
struct Common {
    /// Small numbers, to check the harness works (timings are not judged).
    #[arg(long)]
    quick: bool,
    /// The hub binary (default: beside this executable).
    #[arg(long, value_name = "PATH")]
    hub_bin: Option<PathBuf>,
    /// The bridge binary (default: beside this executable).
    #[arg(long, value_name = "PATH")]
    mcp_bin: Option<PathBuf>,
    /// Also write the figures as JSON here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

#[derive(clap::Args)]
struct HubArgs {
    #[command(flatten)]
    common: Common,
    /// Run only these parts (default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Part>,
    /// Where the prepared large store is kept between runs
    /// (default: holdline-bench-cache beside this executable).
    #[arg(long, value_name = "DIR")]
    store_cache: Option<PathBuf>,
    /// Waiting sessions in the load part (default 10,000; quick 200).
    #[arg(long, value_name = "N")]
    sessions: Option<usize>,
    /// Replies per second in the load part (default 1,000; quick 200).
    #[arg(long, value_name = "N")]
    rate: Option<u32>,
    /// Seconds of reply load (default 10; quick 2).
    #[arg(long, value_name = "S")]
    seconds: Option<u64>,
    /// Remote agents waiting at once over /mcp (default 1,000; quick 50).
    #[arg(long, value_name = "N")]
    agents: Option<usize>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Part {
    Reply,
    Load,
    Stored,
    /// The hub's `/mcp` beside the stdio bridge.
    Remote,
    /// 1,000 registers with files by 10 agent keys: RSS and store size.
    Attachments,
}

/// The numbers a run uses.
struct Scale {
    replies: usize,
    load: load::LoadPlan,
    stored_sessions: usize,
    stored_messages: usize,
    start_runs: usize,
    settle: Duration,
    stored_idle: Duration,
    bridge_runs: usize,
    bridge_idle: Duration,
    remote: remote::RemotePlan,
}

impl Scale {
    fn new(quick: bool) -> Scale {
        if quick {
            Scale {
                replies: 20,
                load: load::LoadPlan {
                    sessions: 200,
                    rate: 200,
                    duration: Duration::from_secs(2),
                    poll_hold: Duration::from_secs(1),
                    idle_window: Duration::from_secs(2),
                },
                stored_sessions: 2_000,
                stored_messages: 20,
                start_runs: 2,
                settle: Duration::from_millis(500),
                stored_idle: Duration::from_secs(1),
                bridge_runs: 3,
                bridge_idle: Duration::from_millis(500),
                remote: remote::RemotePlan {
                    replies: 20,
                    memory_agents: 5,
                    many: 50,
                    rate: 200,
                    settle: Duration::from_millis(500),
                },
            }
        } else {
            Scale {
                replies: 200,
                load: load::LoadPlan {
                    sessions: 10_000,
                    rate: 1_000,
                    duration: Duration::from_secs(10),
                    poll_hold: load::BRIDGE_POLL_HOLD,
                    idle_window: Duration::from_secs(30),
                },
                stored_sessions: 100_000,
                stored_messages: 20,
                start_runs: 5,
                settle: Duration::from_secs(2),
                stored_idle: Duration::from_secs(10),
                bridge_runs: 10,
                bridge_idle: Duration::from_secs(2),
                remote: remote::RemotePlan {
                    replies: 200,
                    memory_agents: 200,
                    many: 1_000,
                    rate: 1_000,
                    settle: Duration::from_secs(1),
                },
            }
        }
    }
}

/// One line of the result table.
struct Row {
    figure: String,
    measured: String,
    target: &'static str,
    /// `None`: not judged (a `--quick` run, or a figure given for reference).
    met: Option<bool>,
}

struct Report {
    quick: bool,
    rows: Vec<Row>,
    json: serde_json::Map<String, Value>,
}

impl Report {
    fn row(&mut self, figure: String, measured: String, target: &'static str, met: bool) {
        self.rows.push(Row {
            figure,
            measured,
            target,
            met: (!self.quick).then_some(met),
        });
    }

    /// A figure measured beside the targets, not judged.
    fn reference(&mut self, figure: String, measured: String) {
        self.rows.push(Row {
            figure,
            measured,
            target: "for reference",
            met: None,
        });
    }

    fn print(&self) {
        println!();
        println!("| figure | measured | target | met |");
        println!("|---|---|---|---|");
        for r in &self.rows {
            let met = match r.met {
                Some(true) => "met",
                Some(false) => "MISSED",
                None if self.quick => "- (quick)",
                None => "-",
            };
            println!("| {} | {} | {} | {met} |", r.figure, r.measured, r.target);
        }
    }
}

fn main() -> std::process::ExitCode {
    let measured = match Cli::parse().command {
        Cmd::Hub(a) => Measured::Hub(a),
        Cmd::Bridge(c) => Measured::Bridge(c),
        // Plain blocking I/O on one thread: nothing of its own in the figure.
        Cmd::FloorServer { port } => {
            return match floor::serve(port) {
                Ok(()) => std::process::ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("holdline-bench floor-server: {e:#}");
                    std::process::ExitCode::FAILURE
                }
            };
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("holdline-bench: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // On Ctrl-C or SIGTERM the run is dropped, and with it every hub and bridge it started.
    let interrupted = async {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    };
    let run = async {
        tokio::select! {
            r = dispatch(measured) => r,
            _ = interrupted => Err(anyhow::anyhow!("interrupted; the processes under test were stopped")),
        }
    };
    match runtime.block_on(run) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("holdline-bench: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The subcommands that measure the hub and bridge binaries (on the async runtime).
enum Measured {
    Hub(HubArgs),
    Bridge(Common),
}

async fn dispatch(measured: Measured) -> anyhow::Result<()> {
    let common = match &measured {
        Measured::Hub(a) => &a.common,
        Measured::Bridge(c) => c,
    };
    let bins = Binaries::locate(common.hub_bin.clone(), common.mcp_bin.clone())?;
    // A socket per simulated connection: thousands in the load and remote parts.
    procs::raise_open_files_limit();
    let mut scale = Scale::new(common.quick);
    if let Measured::Hub(a) = &measured {
        scale.load.sessions = a.sessions.unwrap_or(scale.load.sessions).max(1);
        scale.load.rate = a.rate.unwrap_or(scale.load.rate).max(1);
        scale.load.duration = a.seconds.map_or(scale.load.duration, Duration::from_secs);
        scale.remote.many = a.agents.unwrap_or(scale.remote.many).max(1);
    }
    let mut report = Report {
        quick: common.quick,
        rows: Vec::new(),
        json: serde_json::Map::new(),
    };
    report.json.insert("quick".into(), json!(common.quick));
    eprintln!(
        "holdline-bench: hub {} / bridge {}{}",
        bins.hub.display(),
        bins.mcp.display(),
        if common.quick { " (quick)" } else { "" }
    );
    match &measured {
        Measured::Hub(a) => {
            let all = a.only.is_empty();
            if all || a.only.contains(&Part::Reply) {
                bench_reply(&bins, &scale, &mut report).await?;
            }
            if all || a.only.contains(&Part::Load) {
                bench_load(&bins, &scale, &mut report).await?;
            }
            if all || a.only.contains(&Part::Stored) {
                let cache = match &a.store_cache {
                    Some(c) => c.clone(),
                    None => std::env::current_exe()?
                        .parent()
                        .map(|d| d.join("holdline-bench-cache"))
                        .unwrap_or_else(|| PathBuf::from("holdline-bench-cache")),
                };
                bench_stored(&bins, &scale, &cache, &mut report).await?;
            }
            if all || a.only.contains(&Part::Remote) {
                remote::bench(&bins, &scale.remote, &mut report).await?;
            }
            if all || a.only.contains(&Part::Attachments) {
                bench_attachments(&bins, common.quick, &mut report).await?;
            }
        }
        Measured::Bridge(_) => bench_bridge(&bins, &scale, &mut report).await?,
    }
    report.print();
    if let Some(path) = &common.json {
        std::fs::write(path, serde_json::to_string_pretty(&report.json)?)?;
    }
    Ok(())
}

async fn bench_reply(bins: &Binaries, scale: &Scale, report: &mut Report) -> anyhow::Result<()> {
    eprintln!(
        "reply latency: {} replies through the bridge",
        scale.replies
    );
    let home = tempfile::tempdir()?;
    let hub = HubProcess::start(&bins.hub, &home.path().join("home")).await?;
    // The measuring client gets a thread of its own, so its clock reads when the
    // result arrives, not when a busy shared runtime gets round to it.
    let (mcp_bin, addr, cwd, replies) = (
        bins.mcp.clone(),
        mcp::HubAddr::from(&hub),
        home.path().to_owned(),
        scale.replies,
    );
    let s = tokio::task::spawn_blocking(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(mcp::reply_latency(&mcp_bin, &addr, &cwd, replies))
    })
    .await??;
    hub.stop()?;
    report.row(
        format!(
            "reply latency, one waiting session, MCP client ({} replies) p50",
            s.len()
        ),
        ms(s.median()),
        "≤ 1 ms",
        s.median() <= Duration::from_millis(1),
    );
    report.row(
        "reply latency, one waiting session, p99".into(),
        with_range(&s, s.pct(99.0)),
        "≤ 3 ms",
        s.pct(99.0) <= Duration::from_millis(3),
    );
    report.json.insert(
        "reply".into(),
        json!({"n": s.len(), "p50_ms": s.median().as_secs_f64()*1e3,
               "p99_ms": s.pct(99.0).as_secs_f64()*1e3, "min_ms": s.min().as_secs_f64()*1e3,
               "max_ms": s.max().as_secs_f64()*1e3}),
    );
    Ok(())
}

async fn bench_load(bins: &Binaries, scale: &Scale, report: &mut Report) -> anyhow::Result<()> {
    let plan = &scale.load;
    eprintln!(
        "load: {} waiting sessions, {} replies/s for {} s, idle window {} s",
        plan.sessions,
        plan.rate,
        plan.duration.as_secs(),
        plan.idle_window.as_secs()
    );
    let home = tempfile::tempdir()?;
    let hub = HubProcess::start(&bins.hub, &home.path().join("home")).await?;
    let f = load::run(hub.addr, &hub.secret, hub.pid(), plan).await?;
    hub.stop()?;
    report_load_delivery(report, &f);
    report_load_memory(report, &f);
    report_idle_cost(report, &f, plan.poll_hold);
    report
        .json
        .insert("load".into(), load_json(&f, plan.poll_hold));
    eprintln!(
        "load: setup of {} waits took {:.1} s",
        f.sessions,
        f.setup.as_secs_f64()
    );
    Ok(())
}

/// The load's latency from reply to poll answer, and whether every reply arrived once.
fn report_load_delivery(report: &mut Report, f: &load::LoadFigures) {
    let l = &f.latency;
    report.row(
        format!(
            "reply→poll answer, {} waiting, {:.0} replies/s ({} sent) p50 / p99",
            f.sessions, f.achieved_rate, f.sent
        ),
        format!(
            "{} / {} (max {})",
            ms(l.median()),
            ms(l.pct(99.0)),
            ms(l.max())
        ),
        "p99 ≤ 10 ms",
        l.pct(99.0) <= Duration::from_millis(10),
    );
    report.row(
        "replies lost / duplicated".into(),
        format!(
            "{} / {} (delivered {}, errors {})",
            f.lost, f.duplicated, f.delivered, f.errors
        ),
        "0 / 0",
        f.lost == 0 && f.duplicated == 0 && f.errors == 0,
    );
}

/// The hub's resident memory with every session waiting.
fn report_load_memory(report: &mut Report, f: &load::LoadFigures) {
    report.row(
        format!("hub RSS, {} sessions waiting", f.sessions),
        format!(
            "{} (the sessions alone, before any poll is held: {}; after the load: {})",
            mib(f.rss_waiting),
            mib(f.rss_sessions),
            mib(f.rss_after)
        ),
        "≤ 64 MiB",
        f.rss_waiting <= 64 << 20,
    );
}

/// What the waiting sessions cost while nothing happens: renewals, bytes, CPU, wake-ups.
fn report_idle_cost(report: &mut Report, f: &load::LoadFigures, hold: Duration) {
    let n = f.sessions;
    let per_hold = f.idle.requests_per(n, hold);
    let cpu_ms_s = f.idle.hub_cpu.as_secs_f64() * 1e3 / f.idle.window.as_secs_f64();
    report.row(
        format!("idle cost per waiting session ({} s window)", f.idle.window.as_secs()),
        format!(
            "{per_hold:.2} requests per {} s poll hold, {:.0} bytes each; hub {cpu_ms_s:.1} ms CPU/s, {:.0} wake-ups/s for {n} sessions",
            hold.as_secs(),
            f.idle.bytes_per_request(),
            f.idle.hub_switches as f64 / f.idle.window.as_secs_f64()
        ),
        "1 renewal / 10 s",
        per_hold <= 1.05,
    );
}

/// The load's figures in the `--json` report.
fn load_json(f: &load::LoadFigures, hold: Duration) -> Value {
    let l = &f.latency;
    json!({"sessions": f.sessions, "setup_s": f.setup.as_secs_f64(), "rate": f.achieved_rate,
           "sent": f.sent, "delivered": f.delivered, "lost": f.lost,
           "duplicated": f.duplicated, "errors": f.errors,
           "p50_ms": l.median().as_secs_f64()*1e3, "p99_ms": l.pct(99.0).as_secs_f64()*1e3,
           "max_ms": l.max().as_secs_f64()*1e3,
           "rss_sessions": f.rss_sessions, "rss_waiting": f.rss_waiting, "rss_after": f.rss_after,
           "idle_window_s": f.idle.window.as_secs_f64(), "idle_requests": f.idle.requests,
           "idle_bytes": f.idle.bytes, "poll_hold_s": hold.as_secs_f64(),
           "idle_requests_per_session_per_hold": f.idle.requests_per(f.sessions, hold),
           "idle_hub_cpu_ms": f.idle.hub_cpu.as_secs_f64()*1e3,
           "idle_hub_switches": f.idle.hub_switches})
}

async fn bench_stored(
    bins: &Binaries,
    scale: &Scale,
    cache: &std::path::Path,
    report: &mut Report,
) -> anyhow::Result<()> {
    let (n, m) = (scale.stored_sessions, scale.stored_messages);
    eprintln!(
        "stored: preparing {n} sessions × {m} messages in {}",
        cache.display()
    );
    let store = stored::prepare(&bins.hub, cache, n, m)?;
    match store.prepared_in {
        Some(t) => eprintln!("stored: imported in {:.1} s", t.as_secs_f64()),
        None => eprintln!("stored: reusing the prepared store"),
    }
    let f = stored::measure(
        &bins.hub,
        &store.home,
        scale.start_runs,
        scale.settle,
        scale.stored_idle,
    )
    .await?;
    if f.sessions_reported != n as u64 {
        anyhow::bail!("the hub reports {} sessions, not {n}", f.sessions_reported);
    }
    if f.sessions_listed != n as u64 {
        anyhow::bail!("the hub listed {} sessions, not {n}", f.sessions_listed);
    }
    let s = &f.start;
    report.row(
        format!(
            "hub start, {n} stored sessions × {m} messages: exec → /healthz 200 (median of {})",
            s.len()
        ),
        with_range(s, s.median()),
        "≤ 300 ms",
        s.median() <= Duration::from_millis(300),
    );
    report.row(
        format!("hub RSS, {n} stored sessions, idle"),
        mib(f.rss_idle),
        "≤ 100 MiB",
        f.rss_idle <= 100 << 20,
    );
    report.reference(
        format!("hub RSS, {n} stored sessions, after the panel's list paged through all"),
        mib(f.rss_listed),
    );
    let secs = f.idle_window.as_secs_f64();
    report.row(
        format!(
            "hub idle, nothing waiting ({} s window)",
            f.idle_window.as_secs()
        ),
        format!(
            "{:.1} wake-ups/s ({:.1}/s in the hub's runtime, the rest sled's timers), {:.2} ms CPU/s",
            f.idle.switches as f64 / secs,
            f.idle.runtime_switches as f64 / secs,
            f.idle.cpu.as_secs_f64() * 1e3 / secs
        ),
        "timers only",
        // sled's pool threads and log flusher wake on their own timers; the hub's
        // own threads should sleep.
        f.idle.runtime_switches as f64 / secs <= 1.0,
    );
    report.json.insert(
        "stored".into(),
        json!({"sessions": n, "messages": m,
               "import_s": store.prepared_in.map(|d| d.as_secs_f64()),
               "start_median_ms": s.median().as_secs_f64()*1e3,
               "start_min_ms": s.min().as_secs_f64()*1e3, "start_max_ms": s.max().as_secs_f64()*1e3,
               "rss_idle": f.rss_idle, "rss_listed": f.rss_listed,
               "idle_switches_per_s": f.idle.switches as f64 / secs,
               "idle_runtime_switches_per_s": f.idle.runtime_switches as f64 / secs,
               "idle_cpu_ms_per_s": f.idle.cpu.as_secs_f64()*1e3 / secs}),
    );
    Ok(())
}

async fn bench_attachments(
    bins: &Binaries,
    quick: bool,
    report: &mut Report,
) -> anyhow::Result<()> {
    let plan = attachments::AttachmentPlan {
        keys: 10,
        registers_per_key: if quick { 2 } else { 100 },
        shared_bytes: 1 << 20,
        own_bytes: 256 << 10,
    };
    eprintln!(
        "attachments: {} keys × {} registers of 1.25 MiB",
        plan.keys, plan.registers_per_key
    );
    let f = attachments::measure(&bins.hub, &plan).await?;
    report.row(
        format!(
            "hub RSS after {} registers with attachments by {} keys (1.25 MiB each, within quota)",
            f.registers, plan.keys
        ),
        format!("{} (peak {})", mib(f.rss_after), mib(f.rss_peak)),
        "≤ 128 MiB",
        f.rss_after <= 128 << 20,
    );
    report.row(
        format!(
            "store size after them ({} of distinct files given)",
            mib(f.distinct_bytes)
        ),
        format!(
            "{} ({} of it the files)",
            mib(f.store_bytes),
            mib(f.files_bytes)
        ),
        "≤ 1.1 × the distinct files + 64 MiB",
        f.store_bytes <= f.distinct_bytes + f.distinct_bytes / 10 + (64 << 20),
    );
    eprintln!("attachments: registers took {:.1} s", f.took.as_secs_f64());
    report
        .json
        .insert("attachments".into(), attachments::as_json(&f));
    Ok(())
}

async fn bench_bridge(bins: &Binaries, scale: &Scale, report: &mut Report) -> anyhow::Result<()> {
    eprintln!("bridge: {} cold starts after a warm-up", scale.bridge_runs);
    let home = tempfile::tempdir()?;
    let hub = HubProcess::start(&bins.hub, &home.path().join("home")).await?;
    let f = mcp::bridge_figures(
        &bins.mcp,
        &hub,
        home.path(),
        scale.bridge_runs,
        scale.bridge_idle,
    )
    .await?;
    hub.stop()?;
    let s = &f.cold_start;
    report.row(
        format!(
            "bridge cold start: spawn → tools/list answered (median of {})",
            s.len()
        ),
        with_range(s, s.median()),
        "≤ 20 ms",
        s.median() <= Duration::from_millis(20),
    );
    let rss = f.idle_rss.iter().copied().max().unwrap_or(0);
    report.row(
        "bridge idle RSS (process tree, after initialize + idle)".into(),
        mib(rss),
        "≤ 10 MiB",
        rss <= 10 << 20,
    );
    report.json.insert(
        "bridge".into(),
        json!({"cold_start_median_ms": s.median().as_secs_f64()*1e3,
               "cold_start_min_ms": s.min().as_secs_f64()*1e3,
               "cold_start_max_ms": s.max().as_secs_f64()*1e3, "idle_rss": f.idle_rss}),
    );
    Ok(())
}
