//! The admin subcommands: they talk HTTP to the running hub (found through
//! `hub.addr` in the home, else the configured listen address) and, for
//! export, import and agent keys when no hub runs, open the store directly.

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use holdline_contract::{clients, local_hub, routes};
use serde_json::Value;

use crate::config::Config;
use crate::home::Home;
use crate::interchange::ExportFile;
use crate::process::{HubProcess, StartedBy};

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{0}")]
    Message(String),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

type Result<T> = std::result::Result<T, AdminError>;

/// `println!` for what a command prints: when the reader stops reading
/// (`panel-url | head`), the command ends quietly, as every Unix tool does,
/// instead of panicking on the failed write.
macro_rules! say {
    ($($arg:tt)*) => {
        say_line(format_args!($($arg)*))
    };
}

fn say_line(line: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("holdline-hub: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

fn fail<T>(msg: impl Into<String>) -> Result<T> {
    Err(AdminError::Message(msg.into()))
}

/// `notify test`: a test notification to every channel, each result on a
/// line; fails when any channel failed.
pub async fn notify_test(config: &Config) -> Result<()> {
    let n = &config.notify;
    if !n.is_on() {
        return fail(format!(
            "no notification channel is configured: add [notify] to {}",
            config.home.join("config.toml").display()
        ));
    }
    let link = match &n.panel_url {
        Some(u) => u.clone(),
        None => {
            format!("http://{}/", crate::net::advertised(listening(config)))
        }
    };
    let mut failed = 0;
    for (name, result) in crate::notify::test(n, &link, None).await {
        match result {
            Ok(()) => say!("{name}: sent"),
            Err(e) => {
                failed += 1;
                say!("{name}: FAILED: {e}");
            }
        }
    }
    if n.webpush.is_some() {
        match push_test(config).await {
            Ok(()) => say!("webpush: sent"),
            Err(e) => {
                failed += 1;
                say!("webpush: FAILED: {e}");
            }
        }
    }
    if failed > 0 {
        return fail(format!("{failed} channel(s) failed"));
    }
    Ok(())
}

/// Web Push's test: the subscriptions live in the running hub's store, so
/// the hub sends it (`POST /api/push/test`).
async fn push_test(config: &Config) -> Result<()> {
    let c = Client::new(config)?;
    let answer = c
        .call(c.http.post(format!("{}/api/push/test", c.base)))
        .await?;
    match answer["error"].as_str() {
        None if answer["sent"] == true => Ok(()),
        e => fail(e.unwrap_or("the hub did not say").to_owned()),
    }
}

/// `1 session`, `2 sessions`.
fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn queued(n: u64) -> String {
    match n {
        1 => "1 reply queued".into(),
        n => format!("{n} replies queued"),
    }
}

/// Nothing answers at `base`: say how to start the hub.
fn not_running(base: &str) -> AdminError {
    let service = if cfg!(target_os = "macos") {
        "launchctl kickstart gui/$(id -u)/dev.holdline.hub"
    } else {
        "systemctl --user start holdline-hub"
    };
    AdminError::Message(format!(
        "no holdline-hub is running at {base}. Start it with `holdline-hub serve` \
         (or, if you installed the service, `{service}`), then try again"
    ))
}

/// The hub's `/mcp` URL as another machine reaches it (the address it listens on, or
/// this machine's primary address when it listens on all).
fn mcp_url(config: &Config) -> String {
    format!(
        "http://{}{}",
        crate::net::advertised(listening(config)),
        routes::MCP
    )
}

/// Where this hub listens: the address it wrote when it started, else its setting.
fn listening(config: &Config) -> std::net::SocketAddr {
    local_hub::running_addr(&config.home).unwrap_or(config.listen)
}

/// Where the running hub answers, as a base URL.
pub fn hub_url(config: &Config) -> String {
    format!("http://{}", local_hub::reachable(listening(config)))
}

struct Client {
    http: reqwest::Client,
    base: String,
    secret: String,
}

impl Client {
    fn new(config: &Config) -> Result<Client> {
        let home = Home::new(config.home.clone());
        let secret = home.read_secret().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                AdminError::Message(format!(
                    "no hub has run with the home {} yet (it has no secret). Start it with \
                     `holdline-hub serve`, then try again",
                    home.root.display()
                ))
            } else {
                AdminError::Message(format!(
                    "cannot read the secret in {}: {e}",
                    home.root.display()
                ))
            }
        })?;
        // The hub never redirects; a redirect would carry the secret elsewhere.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| AdminError::Message(e.to_string()))?;
        Ok(Client {
            http,
            base: hub_url(config),
            secret,
        })
    }

    /// How many options the question a reply to `token` answers offers: the
    /// agent's newest message among the session's last 50 (0 when none asks).
    async fn offered_options(&self, token: &str) -> Result<usize> {
        let url = format!("{}/api/sessions/{token}?limit=50", self.base);
        let session = self.call(self.http.get(url)).await?;
        let newest_question = session["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .rev()
            .find(|m| m["role"] == "assistant");
        Ok(newest_question
            .and_then(|m| m["options"].as_array())
            .map_or(0, Vec::len))
    }

    /// Whether a hub answers here: `/healthz` is 200, or 503 while its store
    /// fails (it still runs and holds the store).
    async fn is_up(&self) -> bool {
        self.http
            .get(format!("{}/healthz", self.base))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .is_ok_and(|r| {
                r.status().is_success() || r.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE
            })
    }

    /// `/healthz` with the secret, whatever its status (503: the store fails).
    async fn health(&self) -> Result<Value> {
        let res = self
            .http
            .get(format!("{}/healthz", self.base))
            .bearer_auth(&self.secret)
            .send()
            .await
            .map_err(|_| not_running(&self.base))?;
        res.json()
            .await
            .map_err(|e| AdminError::Message(format!("the hub at {} answered: {e}", self.base)))
    }

    /// `GET /api/export`, its body not yet read (it streams).
    async fn export_stream(&self) -> Result<reqwest::Response> {
        let res = reqwest::Client::new()
            .get(format!("{}/api/export", self.base))
            .bearer_auth(&self.secret)
            .send()
            .await
            .map_err(|_| not_running(&self.base))?;
        if !res.status().is_success() {
            return fail(format!("the hub answered {} to the export", res.status()));
        }
        Ok(res)
    }

    async fn call(&self, req: reqwest::RequestBuilder) -> Result<Value> {
        let res = req.bearer_auth(&self.secret).send().await.map_err(|e| {
            if e.is_connect() {
                not_running(&self.base)
            } else {
                AdminError::Message(format!("the hub at {} did not answer: {e}", self.base))
            }
        })?;
        let status = res.status();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        if status.is_success() {
            Ok(body)
        } else {
            let msg = body["error"]["message"].as_str().unwrap_or("no details");
            fail(format!("the hub answered {status}: {msg}"))
        }
    }
}

/// `panel-url`: the login link and a QR code for a phone.
pub fn panel_url(config: &Config, no_qr: bool) -> Result<()> {
    let home = Home::new(config.home.clone());
    let secret = home.read_secret().map_err(|e| {
        AdminError::Message(format!(
            "no secret yet in {} ({e}); start the hub once with `holdline-hub serve`",
            home.root.display()
        ))
    })?;
    let addr = listening(config);
    let url = format!("http://{}/#key={secret}", crate::net::advertised(addr));
    say!("{url}");
    if addr.ip().is_unspecified() && crate::net::primary_ip().is_none() {
        // A QR code of 127.0.0.1 would point a phone at itself.
        say!(
            "(the hub listens on every interface, but this machine has no route to a LAN, so its \
             address is unknown: on a phone open http://THIS-MACHINE'S-ADDRESS:{}/#key=… instead)",
            addr.port()
        );
        return Ok(());
    }
    if !no_qr {
        let code = qrcode::QrCode::new(url.as_bytes())
            .map_err(|e| AdminError::Message(format!("cannot draw a QR code: {e}")))?;
        let art = code
            .render::<qrcode::render::unicode::Dense1x2>()
            .quiet_zone(true)
            .build();
        say!("{art}");
        if addr.ip().is_loopback() {
            say!(
                "(the hub listens on loopback only: a phone needs --listen 0.0.0.0:{} or an SSH tunnel)",
                addr.port()
            );
        }
    }
    Ok(())
}

/// `status`: is the hub up, and what it holds.
pub async fn status(config: &Config) -> Result<()> {
    let c = Client::new(config)?;
    let h = c.health().await?;
    say!(
        "holdline-hub {} at {}: {}, {} waiting, up {}s",
        h["version"].as_str().unwrap_or("?"),
        c.base,
        count(h["sessions"].as_u64().unwrap_or(0), "session"),
        h["waiting"],
        h["uptimeMs"].as_u64().unwrap_or(0) / 1000
    );
    if let Ok(p) = serde_json::from_value::<HubProcess>(h["process"].clone()) {
        say!("Process: PID {}, {}", p.pid, started_by_text(p.started_by));
    }
    if h["store"]["state"] == "failing" {
        say!(
            "Store: FAILING since {} ms: {} (writes answer errors; the hub retries by itself)",
            h["store"]["since"],
            h["store"]["lastError"].as_str().unwrap_or("no details")
        );
    }
    match &h["mongo"] {
        Value::Null => say!("MongoDB sync: off"),
        m => say!(
            "MongoDB sync: {} (pending {}, lag {} ms)",
            m["state"].as_str().unwrap_or("?"),
            m["pending"],
            m["lagMs"]
        ),
    }
    Ok(())
}

/// How `status` says what started the hub.
fn started_by_text(by: StartedBy) -> &'static str {
    match by {
        StartedBy::Systemd => "started by systemd (the holdline-hub service)",
        StartedBy::Launchd => "started by launchd (the dev.holdline.hub LaunchAgent)",
        StartedBy::Bridge => "started by a holdline-mcp bridge that found no hub",
        StartedBy::Shell => "started by hand (a shell, nohup or cron)",
    }
}

/// How long `stop` waits for the hub to finish its requests, flush and exit
/// (its own shutdown gives requests 5 s).
const STOP_WAIT: Duration = Duration::from_secs(15);

/// `stop`: asks the running hub for its process id (with the secret, so only
/// the hub itself names the process) and sends it SIGTERM, then waits until it
/// has flushed and exited. No hub running is not an error.
pub async fn stop(config: &Config) -> Result<()> {
    let home = Home::new(config.home.clone());
    let Ok(c) = Client::new(config) else {
        say!(
            "no holdline-hub has run with the home {}",
            home.root.display()
        );
        return Ok(());
    };
    if !c.is_up().await {
        say!("no holdline-hub is running at {}", c.base);
        return Ok(());
    }
    let h = c.health().await?;
    let p: HubProcess = serde_json::from_value(h["process"].clone()).map_err(|_| {
        AdminError::Message(format!(
            "the hub at {} did not say its process id (it is older than this command):              stop it with its service manager or `kill`",
            c.base
        ))
    })?;
    crate::process::terminate(p.pid)
        .map_err(|e| AdminError::Message(format!("cannot stop the hub (PID {}): {e}", p.pid)))?;
    let deadline = std::time::Instant::now() + STOP_WAIT;
    // The hub removes hub.addr as it exits, after its last flush.
    while crate::process::is_alive(p.pid) && home.addr_file().exists() {
        if std::time::Instant::now() > deadline {
            return fail(format!(
                "sent the hub (PID {}) SIGTERM, but it is still running after {} s",
                p.pid,
                STOP_WAIT.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    say!("stopped holdline-hub (PID {}) at {}", p.pid, c.base);
    if let Some(hint) = p.started_by.service_hint() {
        say!(
            "It ran as a service, which may start it again (at login or on its own); `{hint}` keeps it stopped."
        );
    }
    Ok(())
}

/// `sessions`: a table, waiting first.
pub async fn sessions(config: &Config, all: bool) -> Result<()> {
    let c = Client::new(config)?;
    let status = if all { "all" } else { "" };
    let list = c
        .call(
            c.http
                .get(format!("{}/api/sessions?limit=200&status={status}", c.base)),
        )
        .await?;
    let now = crate::session::now_ms();
    say!(
        "{:<36} {:<9} {:>8}  {:<16} {:<16} TITLE",
        "TOKEN",
        "STATUS",
        "WAITED",
        "MACHINE",
        "FOLDER"
    );
    for s in list["sessions"].as_array().into_iter().flatten() {
        let waited = s["waitingSince"]
            .as_i64()
            .map(|t| format!("{}s", (now - t).max(0) / 1000))
            .unwrap_or_default();
        let title = match s["displayTitle"].as_str() {
            Some(d) if !d.is_empty() => d,
            _ => s["title"].as_str().unwrap_or(""),
        };
        let workspace = s["workspace"].as_str().unwrap_or("");
        let folder = workspace
            .trim_end_matches(['/', '\\'])
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or(workspace);
        say!(
            "{:<36} {:<9} {:>8}  {:<16} {:<16} {}",
            s["token"].as_str().unwrap_or(""),
            s["status"].as_str().unwrap_or(""),
            waited,
            s["machine"].as_str().unwrap_or(""),
            folder,
            title
        );
    }
    Ok(())
}

/// `reply TOKEN [TEXT] [--choose N[,M]] [--in-reply-to SEQ]`: as if typed in the
/// panel; `choose` numbers the question's options from 1, as people see them
/// listed. With a question named, the hub refuses it (and this fails, naming
/// the current question) when the agent has asked something newer.
pub async fn reply(
    config: &Config,
    token: &str,
    text: &str,
    choose: &[u32],
    in_reply_to: Option<u64>,
) -> Result<()> {
    let c = Client::new(config)?;
    let mut body = serde_json::json!({"token": token, "text": text});
    if !choose.is_empty() {
        let offered = c.offered_options(token).await?;
        body["choices"] = chosen_indexes(choose, offered)?.into();
    }
    if let Some(seq) = in_reply_to {
        body["inReplyTo"] = seq.into();
    }
    let r = c
        .call(c.http.post(format!("{}/api/reply", c.base)).json(&body))
        .await?;
    let how = if r["queued"].as_bool() == Some(true) {
        "queued for the next wait"
    } else {
        "delivered to the waiting agent"
    };
    say!("reply {} {how}", r["replyId"].as_str().unwrap_or("?"));
    Ok(())
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

/// Opens the store directly, for when no hub runs.
fn open_offline(config: &Config) -> Result<crate::hub::Hub> {
    Home::new(config.home.clone()).prepare().map_err(|e| {
        AdminError::Message(format!("cannot prepare {}: {e}", config.home.display()))
    })?;
    Ok(crate::hub::Hub::open(
        config.clone(),
        config.listen.to_string(),
        tokio_util::sync::CancellationToken::new(),
    )?)
}

/// `export`: the running hub's sessions, or the store's when no hub runs;
/// streamed from the hub (or the store) to the file or stdout, never whole in memory.
pub async fn export(config: &Config, out: Option<&Path>) -> Result<()> {
    let c = Client::new(config).ok();
    let source = match c {
        Some(c) if c.is_up().await => ExportSource::Hub(c.export_stream().await?),
        _ => ExportSource::Store(open_offline(config)?),
    };
    let Some(path) = out else {
        let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
        // A closed pipe (`export | head`) ends the command quietly.
        let _ = source.write_to(&mut stdout).await;
        return Ok(());
    };
    let cannot =
        |e: std::io::Error| AdminError::Message(format!("cannot write {}: {e}", path.display()));
    let mut file = crate::home::PrivateFile::create(path).map_err(cannot)?;
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
    Store(crate::hub::Hub),
}

impl ExportSource {
    /// Writes the whole export to `out`; answers the sessions written.
    async fn write_to(self, out: &mut impl std::io::Write) -> std::io::Result<usize> {
        match self {
            ExportSource::Hub(mut res) => {
                let sessions = res
                    .headers()
                    .get("x-holdline-sessions")
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

/// `backup`: a backup now, by the running hub or from the store when none runs.
pub async fn backup(config: &Config) -> Result<()> {
    let (path, sessions) = match running(config).await {
        Some(c) => {
            let r = c
                .call(c.http.post(format!("{}/api/backup", c.base)))
                .await?;
            (
                r["path"].as_str().unwrap_or("?").to_owned(),
                r["sessions"].as_u64().unwrap_or(0),
            )
        }
        None => {
            let home = Home::new(config.home.clone());
            let store = crate::store::Store::open(&home.db_dir(), config.cache_bytes)?;
            let made = store.backup()?;
            (made.path.display().to_string(), made.sessions)
        }
    };
    say!("backed up {} to {path}", count(sessions, "session"));
    Ok(())
}

/// `verify [PATH]`: checks a store or backup whole (the home's store by default).
pub fn verify(config: &Config, path: Option<&Path>) -> Result<()> {
    let dir = path.map_or_else(|| Home::new(config.home.clone()).db_dir(), Path::to_owned);
    let v = crate::store::verify(&dir)?;
    let what = match v.older_schema {
        None => "complete".to_owned(),
        Some(n) => format!("readable, schema version {n} (a hub upgrades it when it starts on it)"),
    };
    say!(
        "{}: {what}, {}, {}, {}",
        dir.display(),
        count(v.sessions, "session"),
        count(v.messages, "message"),
        queued(v.replies)
    );
    Ok(())
}

/// `restore BACKUP`: puts a verified copy of the backup in place of the home's
/// store, which is kept beside it; refused while a hub runs.
pub async fn restore(config: &Config, backup: &Path) -> Result<()> {
    let home = Home::new(config.home.clone());
    let db = home.db_dir();
    if store_in_use(&db) || running(config).await.is_some() {
        return fail(format!(
            "a hub runs on {}; stop it before restoring a backup",
            config.home.display()
        ));
    }
    let credentials = [crate::keys::META, crate::logins::META];
    let done = crate::store::restore(backup, &db, &credentials)?;
    let v = &done.verified;
    say!(
        "restored {} from {}: {}, {}",
        count(v.sessions, "session"),
        backup.display(),
        count(v.messages, "message"),
        queued(v.replies)
    );
    match done.credentials {
        crate::store::Credentials::Carried => say!(
            "agent keys and panel logins are those of the store it replaced (a key revoked or a login ended after the backup stays so)"
        ),
        crate::store::Credentials::Dropped => say!(
            "agent keys and panel logins: none kept (the store it replaced could not be read to vouch for the backup's); make keys again with `holdline-hub key create` and log in with `holdline-hub panel-url`"
        ),
    }
    if let Some(aside) = done.aside {
        say!("the store it replaced is kept in {}", aside.display());
    }
    Ok(())
}

/// Whether a process holds the lock sled takes on its `db` file, tried
/// without opening sled (which would write to a damaged store).
fn store_in_use(db_dir: &Path) -> bool {
    use rustix::fs::{FlockOperation, flock};
    match std::fs::File::open(db_dir.join("db")) {
        Ok(f) => flock(&f, FlockOperation::NonBlockingLockExclusive).is_err(),
        Err(_) => false,
    }
}

/// `import FILE`: adds the sessions the hub does not have yet.
pub async fn import(config: &Config, path: &Path) -> Result<()> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| AdminError::Message(format!("cannot read {}: {e}", path.display())))?;
    let file: ExportFile = serde_json::from_str(&text).map_err(|e| {
        AdminError::Message(format!(
            "{} is not a sessions.json file: {e}",
            path.display()
        ))
    })?;
    let c = Client::new(config).ok();
    let (imported, skipped) = match &c {
        Some(c) if c.is_up().await => {
            let r = c
                .call(c.http.post(format!("{}/api/import", c.base)).json(&file))
                .await?;
            (
                r["imported"].as_u64().unwrap_or(0) as usize,
                r["skipped"].as_u64().unwrap_or(0) as usize,
            )
        }
        _ => {
            let hub = open_offline(config)?;
            hub.import(file)
                .map_err(|e| AdminError::Message(e.to_string()))?
                .flushed(&hub)
                .await
                .map_err(|e| AdminError::Message(e.to_string()))?
        }
    };
    say!(
        "imported {}, skipped {skipped} already present",
        count(imported as u64, "session")
    );
    Ok(())
}

/// The agent keys of a stopped hub, straight from its store (a running hub
/// holds the store's lock; then the commands go over HTTP).
fn offline_keys(config: &Config) -> Result<crate::keys::Keys> {
    let home = Home::new(config.home.clone());
    home.prepare().map_err(|e| {
        AdminError::Message(format!("cannot prepare {}: {e}", config.home.display()))
    })?;
    let store = crate::store::Store::open(&home.db_dir(), config.cache_bytes)?;
    Ok(crate::keys::Keys::open(&store)?)
}

/// The running hub's client, or `None` when no hub answers.
async fn running(config: &Config) -> Option<Client> {
    let c = Client::new(config).ok()?;
    c.is_up().await.then_some(c)
}

/// `key create --name NAME [--print-config CLIENT]`: the key alone on stdout's first
/// line, so `KEY=$(holdline-hub key create --name x | head -1)` works, then, when asked,
/// the `holdline-mcp install` command that writes the client's remote entry on the
/// agent's machine; how to use it on stderr.
pub async fn key_create(config: &Config, name: &str, print_config: Option<&str>) -> Result<()> {
    let name = crate::keys::KeyName::parse(name).map_err(|e| AdminError::Message(e.to_string()))?;
    let key = match running(config).await {
        Some(c) => {
            let body = serde_json::json!({ "name": name.as_str() });
            let r = c
                .call(c.http.post(format!("{}/api/keys", c.base)).json(&body))
                .await?;
            r["key"]
                .as_str()
                .ok_or_else(|| AdminError::Message("the hub's answer has no key".into()))?
                .to_owned()
        }
        None => {
            let keys = offline_keys(config)?;
            keys.create(name.as_str())
                .await
                .map_err(|e| AdminError::Message(e.to_string()))?
                .1
        }
    };
    {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{key}");
        if let Some(client) = print_config {
            let url = mcp_url(config);
            let command = clients::remote_install_command(client, &url, &key);
            let _ = writeln!(stdout, "{command}");
        }
        let _ = stdout.flush();
    }
    if let Some(client) = print_config {
        let url = mcp_url(config);
        eprintln!(
            "Above, after the key: on the agent's machine, that command writes the {client} \
             entry for {url} (the hub's /mcp with this key) into the client's config; with \
             --print added it prints the entry instead, to paste where holdline-mcp is not."
        );
        if url.contains("://127.") || url.contains("://[::1]") || url.contains("://localhost") {
            eprintln!(
                "The hub listens on loopback only: another machine needs it started with \
                 --listen 0.0.0.0:PORT (or `listen` in config.toml)."
            );
        }
    }
    eprintln!(
        "Agent key \"{name}\" created. It is shown only this once (the hub keeps its hash).\n\
         Give it to that machine's agent: HOLDLINE_KEY=<key> in the holdline-mcp entry's env,\n\
         or the header `Authorization: Bearer <key>` for the hub's /mcp URL.\n\
         It opens the agent routes only; `holdline-hub key revoke {name}` ends it at once."
    );
    Ok(())
}

/// A time for `key list`: `2026-12-03 19:53 UTC`, or `never`.
fn when(ms: Option<i64>) -> String {
    let Some(ms) = ms else {
        return "never".into();
    };
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| {
            t.format(time::macros::format_description!(
                "[year]-[month]-[day] [hour]:[minute] UTC"
            ))
            .ok()
        })
        .unwrap_or_else(|| "?".into())
}

/// `key list`: name, when made, when last used.
pub async fn key_list(config: &Config) -> Result<()> {
    let rows: Vec<(String, Option<i64>, Option<i64>)> = match running(config).await {
        Some(c) => {
            let r = c.call(c.http.get(format!("{}/api/keys", c.base))).await?;
            r["keys"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|k| {
                    (
                        k["name"].as_str().unwrap_or("?").to_owned(),
                        k["createdAt"].as_i64(),
                        k["lastUsedAt"].as_i64(),
                    )
                })
                .collect()
        }
        None => offline_keys(config)?
            .list()
            .into_iter()
            .map(|k| (k.name.to_string(), Some(k.created_ms), k.last_used_ms))
            .collect(),
    };
    if rows.is_empty() {
        eprintln!("no agent keys yet; make one with `holdline-hub key create --name NAME`");
        return Ok(());
    }
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(4).max(4);
    say!("{:<width$}  {:<20}  LAST USED", "NAME", "CREATED");
    for (name, created, used) in rows {
        say!("{name:<width$}  {:<20}  {}", when(created), when(used));
    }
    Ok(())
}

/// `key revoke NAME`: refused from now on; a running hub ends its open waits
/// at once, a stopped one when it starts.
pub async fn key_revoke(config: &Config, name: &str) -> Result<()> {
    let name =
        crate::names::KeyName::parse(name).map_err(|e| AdminError::Message(e.to_string()))?;
    match running(config).await {
        Some(c) => {
            let r = c
                .call(c.http.delete(format!("{}/api/keys/{name}", c.base)))
                .await?;
            let closed = r["closedWaits"].as_u64().unwrap_or(0);
            say!(
                "revoked agent key \"{name}\"; {} ended",
                count(closed, "open wait")
            );
        }
        None => {
            offline_keys(config)?
                .revoke(name.as_str())
                .await
                .map_err(|e| AdminError::Message(e.to_string()))?;
            say!(
                "revoked agent key \"{name}\" (the hub is not running: it ends the key's open waits when it starts)"
            );
        }
    }
    Ok(())
}

/// `attachments`: frees what `free` names (if anything), then shows what the
/// questions' files take per owner and in all, through the running hub or the store.
pub async fn attachments(config: &Config, free: Option<crate::api::dto::FreeBody>) -> Result<()> {
    let (freed, usage) = match running(config).await {
        Some(c) => attachments_online(&c, free).await?,
        None => attachments_offline(config, free).await?,
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
        say!(
            "{owner:<24}  {:>6}  {:>12}  {:>10}",
            o.files,
            mib(o.bytes),
            mib(o.quota)
        );
    }
    let t = &usage.total;
    say!(
        "{:<24}  {:>6}  {:>12}  {:>10}",
        "(all)",
        t.files,
        mib(t.bytes),
        mib(t.quota)
    );
    say!(
        "files of answered or superseded questions are released {} after they came",
        duration_words(usage.keep_sec)
    );
    Ok(())
}

type FilesAnswers = (
    Option<crate::api::dto::FreeAnswer>,
    crate::api::dto::AttachmentsAnswer,
);

/// `attachments` through the running hub's person routes.
async fn attachments_online(
    c: &Client,
    free: Option<crate::api::dto::FreeBody>,
) -> Result<FilesAnswers> {
    let freed = match &free {
        Some(body) => {
            let url = format!("{}/api/attachments/free", c.base);
            Some(decoded(c.call(c.http.post(url).json(body)).await?)?)
        }
        None => None,
    };
    let usage = c
        .call(c.http.get(format!("{}/api/attachments", c.base)))
        .await?;
    Ok((freed, decoded(usage)?))
}

/// `attachments` on the store, when no hub runs.
async fn attachments_offline(
    config: &Config,
    free: Option<crate::api::dto::FreeBody>,
) -> Result<FilesAnswers> {
    let hub = open_offline(config)?;
    let freed = match free {
        Some(body) => {
            let f = hub
                .free_files(body.into())
                .await
                .map_err(|e| AdminError::Message(e.to_string()))?;
            Some(crate::api::dto::FreeAnswer {
                attachments: f.attachments,
                bytes: f.bytes,
            })
        }
        None => None,
    };
    Ok((
        freed,
        crate::api::dto::AttachmentsAnswer::of(hub.file_usage()),
    ))
}

fn decoded<T: serde::de::DeserializeOwned>(v: Value) -> Result<T> {
    serde_json::from_value(v).map_err(|e| AdminError::Message(format!("the hub's answer: {e}")))
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

    #[test]
    fn counts_agree_with_their_noun() {
        assert_eq!(count(0, "session"), "0 sessions");
        assert_eq!(count(1, "session"), "1 session");
        assert_eq!(count(2, "session"), "2 sessions");
    }

    #[test]
    fn times_are_shown_in_utc_or_never() {
        assert_eq!(when(None), "never");
        assert_eq!(when(Some(0)), "1970-01-01 00:00 UTC");
    }
}
