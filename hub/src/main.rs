//! `holdline-hub`: parses the command line, sets up logging, binds, and hands
//! over to the library (`holdline_hub::run` or an admin command).

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use holdline_core::config::{self, Cli, Command, Config, KeyAction, NotifyAction};
use holdline_core::home::Home;
use holdline_hub::admin;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("holdline-hub: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = match runtime.block_on(dispatch(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("holdline-hub: {}", one_line(&e));
            ExitCode::FAILURE
        }
    };
    // Dropping the runtime would wait for every blocking task, and a flush
    // stuck on a failed disk never ends: give them a moment, then exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    code
}

/// The error and its causes on one line, leaving out a cause whose text the
/// line already holds (many errors repeat their source in their message).
fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

async fn dispatch(cli: Cli) -> anyhow::Result<()> {
    let home = config::home_dir(cli.home.as_deref())?;
    if home.exists() && !home.is_dir() {
        anyhow::bail!(
            "the holdline home {} is a file, not a folder; move it aside or pass --home DIR",
            home.display()
        );
    }
    let serve_args = match &cli.command {
        Command::Serve(a) => Some(a.clone()),
        _ => None,
    };
    let config = Config::load(home, serve_args.as_ref())?;
    if matches!(cli.command, Command::Serve(_) | Command::Config) {
        holdline_sync::check_config(&config)?;
        for w in &config.warnings {
            eprintln!("holdline-hub: warning: {w}");
        }
    }
    // Whatever a command creates (a backup, sled's files when it opens a store
    // or a backup) is for its owner only, as `serve` makes everything.
    rustix::process::umask(rustix::fs::Mode::from_bits_truncate(0o077));
    match cli.command {
        Command::Serve(_) => serve(config).await,
        Command::PanelUrl { no_qr } => Ok(admin::panel_url(&config, no_qr)?),
        Command::Status => Ok(admin::status(&config).await?),
        Command::Stop => Ok(admin::stop(&config).await?),
        Command::Sessions { all } => Ok(admin::sessions(&config, all).await?),
        Command::Reply {
            token,
            text,
            choose,
            in_reply_to,
        } => {
            let text = text.unwrap_or_default();
            Ok(admin::reply(&config, &token, &text, &choose, in_reply_to).await?)
        }
        Command::Attachments {
            prune,
            free_key,
            free_secret,
            free_all,
        } => {
            let free = what_to_free(prune, free_key, free_secret, free_all);
            Ok(admin::attachments(&config, free).await?)
        }
        Command::Export { out } => Ok(admin::export(&config, out.as_deref()).await?),
        Command::Import { file } => Ok(admin::import(&config, &file).await?),
        Command::Backup => Ok(admin::backup(&config).await?),
        Command::Verify { path } => Ok(admin::verify(&config, path.as_deref())?),
        Command::Restore { backup } => Ok(admin::restore(&config, &backup).await?),
        Command::Notify {
            action: NotifyAction::Test,
        } => Ok(admin::notify_test(&config).await?),
        Command::Key { action } => Ok(match action {
            KeyAction::Create { name, print_config } => {
                admin::key_create(&config, &name, print_config.as_deref()).await
            }
            KeyAction::List => admin::key_list(&config).await,
            KeyAction::Revoke { name } => admin::key_revoke(&config, &name).await,
        }?),
        Command::Config => {
            print!("{}", config.to_masked_toml());
            Ok(())
        }
    }
}

/// What `holdline-hub attachments` frees, by its flags (none: it only shows the space).
fn what_to_free(
    prune: bool,
    free_key: Option<String>,
    free_secret: bool,
    free_all: bool,
) -> Option<holdline_hub::api::dto::FreeBody> {
    use holdline_hub::api::dto::FreeBody;
    match (prune, free_key, free_secret, free_all) {
        (true, ..) => Some(FreeBody::Expired),
        (_, Some(key), ..) => Some(FreeBody::Key { key }),
        (_, _, true, _) => Some(FreeBody::Secret),
        (.., true) => Some(FreeBody::All),
        _ => None,
    }
}

async fn serve(config: Config) -> anyhow::Result<()> {
    // Everything the hub creates (sled's files included) is for its owner only.
    rustix::process::umask(rustix::fs::Mode::from_bits_truncate(0o077));
    let home = Home::new(config.home.clone());
    home.prepare()
        .with_context(|| format!("cannot prepare the holdline home {}", home.root.display()))?;
    let _log_guard = init_logging(&home)?;
    let fds = holdline_hub::transport::admission::raise_open_files_limit();
    tracing::info!(fds, "open files limit");
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| anyhow::anyhow!(bind_error(config.listen, &e)))?;
    match holdline_hub::run(listener, config, shutdown_signal()).await? {
        holdline_hub::RunEnd::Stopped => Ok(()),
        holdline_hub::RunEnd::StartAgain => Err(start_again()),
    }
}

/// Replaces this process with a new `holdline-hub` of the same arguments and
/// environment (the same PID, so a service manager sees no exit): every file
/// sled held is closed on exec, so the new image opens the store. Returns
/// only when the exec failed.
fn start_again() -> anyhow::Error {
    use std::os::unix::process::CommandExt as _;
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return anyhow::anyhow!("cannot start the hub again ({e}): start it by hand"),
    };
    tracing::warn!("starting holdline-hub again in place");
    let e = std::process::Command::new(&exe)
        .args(std::env::args_os().skip(1))
        .exec();
    anyhow::anyhow!(
        "cannot start the hub again from {} ({e}): start it by hand",
        exe.display()
    )
}

/// What to do when the listen address cannot be bound, by cause.
fn bind_error(addr: std::net::SocketAddr, e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    let fix = "set `listen` in config.toml or pass --listen HOST:PORT";
    match e.kind() {
        ErrorKind::AddrInUse => format!(
            "cannot listen on {addr}: the port is taken. Is another holdline-hub running there \
             (`holdline-hub status`)? Stop it, or {fix} with another port"
        ),
        ErrorKind::AddrNotAvailable => format!(
            "cannot listen on {addr}: {} is not an address of this machine ({e}). Use \
             127.0.0.1 (this machine only), 0.0.0.0 (every interface) or one of this \
             machine's addresses: {fix}",
            addr.ip()
        ),
        ErrorKind::PermissionDenied => format!(
            "cannot listen on {addr}: not allowed ({e}); ports below 1024 need root. \
             Use a port above 1023: {fix}"
        ),
        _ => format!("cannot listen on {addr}: {e}; {fix}"),
    }
}

/// Logs to stderr and to `logs/hub.log` (0600, rotated at 10 MiB). Never
/// message text or secrets.
fn init_logging(home: &Home) -> anyhow::Result<tracing_appender::non_blocking::WorkerGuard> {
    let path = home.logs_dir().join("hub.log");
    let file = holdline_hub::log_file::LogFile::open(path.clone())
        .with_context(|| format!("cannot open the log file {}", path.display()))?;
    // A bounded queue of lines for the writer thread: the default, 128,000
    // lines, is a 4 MiB array filled at start (most of an idle hub's memory).
    // When it is full, lines are dropped rather than requests slowed.
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(1024)
        .finish(file);
    let filter =
        || EnvFilter::try_from_env("HOLDLINE_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(std::io::stderr().is_terminal())
                .with_writer(std::io::stderr)
                .with_filter(filter()),
        )
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(writer)
                .with_filter(filter()),
        )
        .init();
    Ok(guard)
}

/// Completes on SIGTERM (launchd, systemd) or SIGINT (Ctrl-C).
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    tracing::info!("shutting down");
}
