//! The processes under test: finding the real `holdline-hub` and
//! `holdline-mcp` binaries, running a hub on a temporary home, and reading
//! memory and CPU counters from `/proc`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// Where the binaries under test are.
#[derive(Debug, Clone)]
pub struct Binaries {
    pub hub: PathBuf,
    pub mcp: PathBuf,
}

impl Binaries {
    /// `--hub-bin`/`--mcp-bin` when given, else beside this executable
    /// (`target/release-lto`, `target/release` or `target/debug`, wherever cargo put us).
    pub fn locate(hub: Option<PathBuf>, mcp: Option<PathBuf>) -> anyhow::Result<Binaries> {
        let here = std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(Path::to_owned));
        let find = |given: Option<PathBuf>, name: &str| -> anyhow::Result<PathBuf> {
            let path = match given {
                Some(p) => p,
                None => here
                    .as_ref()
                    .map(|d| d.join(format!("{name}{}", std::env::consts::EXE_SUFFIX)))
                    .context(
                        "cannot tell where this executable is; pass --hub-bin and --mcp-bin",
                    )?,
            };
            if !path.is_file() {
                bail!(
                    "{} is missing: build it (`cargo build --profile release-lto -p holdline-hub -p holdline-mcp`) or pass its path",
                    path.display()
                );
            }
            // Absolute: the processes under test run in other working directories.
            Ok(std::fs::canonicalize(&path)?)
        };
        Ok(Binaries {
            hub: find(hub, "holdline-hub")?,
            mcp: find(mcp, "holdline-mcp")?,
        })
    }
}

/// A home folder for a hub, with a `config.toml` that points admin commands
/// at a port nothing listens on, so an import never reaches a stranger's hub.
pub fn prepare_home(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    set_private(dir)?;
    let config = dir.join("config.toml");
    if !config.exists() {
        std::fs::write(&config, "listen = \"127.0.0.1:9\"\n")?;
        set_private(&config)?;
    }
    Ok(())
}

fn set_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = if path.is_dir() { 0o700 } else { 0o600 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// A running `holdline-hub serve` on an ephemeral loopback port; killed on drop.
pub struct HubProcess {
    child: Child,
    pub addr: SocketAddr,
    pub secret: String,
    /// From exec to the first 200 from `/healthz`.
    pub start_time: Duration,
}

impl HubProcess {
    /// Starts the hub on `home` and waits until `/healthz` answers 200.
    pub async fn start(bin: &Path, home: &Path) -> anyhow::Result<HubProcess> {
        prepare_home(home)?;
        let addr_file = home.join("hub.addr");
        let _ = std::fs::remove_file(&addr_file);
        // A port chosen up front, so the health probe can start at exec time
        // instead of waiting for the hub to write `hub.addr`.
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let started = Instant::now();
        let child = Command::new(bin)
            .arg("--home")
            .arg(home)
            .arg("serve")
            .arg("--listen")
            .arg(addr.to_string())
            .env_remove("HOLDLINE_MONGO_URI")
            .env_remove("HOLDLINE_LISTEN")
            .env("HOLDLINE_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot run {}", bin.display()))?;
        let mut hub = HubProcess {
            child,
            addr,
            secret: String::new(),
            start_time: Duration::ZERO,
        };
        hub.start_time = hub.wait_healthy(started).await?;
        hub.secret = std::fs::read_to_string(home.join("secret"))
            .context("the hub wrote no secret")?
            .trim()
            .to_owned();
        Ok(hub)
    }

    /// Probes `/healthz` every 0.5 ms until it answers 200; the time since `started`.
    async fn wait_healthy(&mut self, started: Instant) -> anyhow::Result<Duration> {
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("holdline-hub exited at start ({status}); run it by hand to see why");
            }
            if let Ok(mut c) = crate::http::Conn::connect(self.addr, "").await
                && let Ok(a) = c.get(holdline_contract::routes::HEALTHZ).await
                && a.status == 200
            {
                return Ok(started.elapsed());
            }
            if started.elapsed() > Duration::from_secs(120) {
                bail!("holdline-hub did not answer /healthz within 120 s");
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then waits for a clean exit (the store is flushed last).
    pub fn stop(mut self) -> anyhow::Result<()> {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let until = Instant::now() + Duration::from_secs(20);
        while Instant::now() < until {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        bail!("holdline-hub did not stop within 20 s of SIGTERM")
    }
}

impl Drop for HubProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A line of `/proc/PID/status` such as `VmRSS`, in KiB.
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Resident memory of one process, in bytes.
pub fn rss(pid: u32) -> Option<u64> {
    status_kib(pid, "VmRSS").map(|k| k * 1024)
}

/// Resident memory of a process and all its descendants, in bytes.
pub fn tree_rss(pid: u32) -> u64 {
    let mut total = 0;
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        total += rss(p).unwrap_or(0);
        todo.extend(children(p));
    }
    total
}

/// How many files (sockets included) a process has open.
pub fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Raises this process's soft open-files limit to its hard limit (one socket per
/// simulated connection: 10,000 waiting sessions, two per remote agent) and
/// answers the limit in force.
pub fn raise_open_files_limit() -> u64 {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    // An unlimited hard limit cannot be the soft one: then a large finite value.
    let wanted = limit.maximum.unwrap_or(65_536);
    if limit.current.is_some_and(|c| c < wanted) {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(wanted),
                maximum: limit.maximum,
            },
        );
    }
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    out
}

/// CPU time (user + system, dead threads included) and context switches per
/// thread of a process: what "CPU wake-ups" costs.
#[derive(Debug, Clone, Default)]
pub struct CpuSnapshot {
    pub cpu: Duration,
    /// Thread id → (its name, its context switches).
    switches: std::collections::HashMap<u32, (String, u64)>,
}

/// The change between two snapshots.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuCounters {
    pub cpu: Duration,
    /// Context switches of the threads alive at the end: a thread that came and
    /// went in between is missed, so this is a lower bound.
    pub switches: u64,
    /// Of those, the hub's own code: the main thread and tokio's threads
    /// (the rest are sled's timers and the log writer).
    pub runtime_switches: u64,
}

impl std::ops::Sub for CpuSnapshot {
    type Output = CpuCounters;
    fn sub(self, before: CpuSnapshot) -> CpuCounters {
        let (mut switches, mut runtime_switches) = (0, 0);
        for (tid, (name, n)) in &self.switches {
            let d = n.saturating_sub(before.switches.get(tid).map_or(0, |b| b.1));
            switches += d;
            if name.starts_with("tokio") || name.starts_with("holdline") {
                runtime_switches += d;
            }
        }
        CpuCounters {
            cpu: self.cpu.saturating_sub(before.cpu),
            switches,
            runtime_switches,
        }
    }
}

pub fn cpu_counters(pid: u32) -> CpuSnapshot {
    // Clock ticks are 100 Hz on every Linux that matters here.
    const TICK: Duration = Duration::from_millis(10);
    let mut c = CpuSnapshot::default();
    if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        && let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r)
    {
        let f: Vec<&str> = rest.split_whitespace().collect();
        // After the name: state is field 3, utime 14 and stime 15 (1-based).
        let tick = |i: usize| f.get(i).and_then(|v| v.parse::<u32>().ok()).unwrap_or(0);
        c.cpu = TICK * (tick(11) + tick(12));
    }
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if let Ok(text) = std::fs::read_to_string(t.path().join("status")) {
                let n: u64 = text
                    .lines()
                    .filter_map(|l| {
                        l.strip_prefix("voluntary_ctxt_switches:")
                            .or_else(|| l.strip_prefix("nonvoluntary_ctxt_switches:"))
                    })
                    .filter_map(|v| v.trim().parse::<u64>().ok())
                    .sum();
                c.switches.insert(tid, (name.trim().to_owned(), n));
            }
        }
    }
    c
}
