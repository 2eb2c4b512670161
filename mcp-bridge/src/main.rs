//! Thin entry point: `holdline-mcp` serves MCP on stdio; `holdline-mcp install` sets up an IDE.

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "holdline-mcp",
    version,
    about = "holdline bridge: the stdio MCP server each IDE runs"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve MCP on stdin/stdout (the default).
    Serve,
    /// Write (or print) an IDE's MCP entry and a short rule file for holdline.
    Install(holdline_mcp::install::InstallArgs),
    /// Remove holdline's MCP entry and rule from an IDE (or from all of them).
    Uninstall(holdline_mcp::install::UninstallArgs),
    /// Say whether holdline's entry and lifecycle hooks are in place, per client.
    Status(holdline_mcp::install::StatusArgs),
    /// Answer a client's lifecycle hook (Stop) from its JSON on stdin: the person's reply
    /// continues the agent's turn.
    Hook(holdline_mcp::hook::HookArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // Logs go to stderr: stdout is the MCP protocol. Clients keep that stderr (Claude
    // Code's debug log labels every line of it `[ERROR]`), so by default only real
    // problems are written; `HOLDLINE_LOG=info` shows the bridge's life too. A hook says
    // what went wrong in one line of its own, so it logs nothing unless asked.
    let quiet = matches!(cli.command, Some(Command::Hook(_)));
    let default_filter = match quiet {
        true => "off",
        false => "holdline_mcp=warn,holdline_tools=warn,rmcp=warn",
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HOLDLINE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter)),
        )
        .init();
    let result = match cli.command.unwrap_or(Command::Serve) {
        Command::Hook(args) => return holdline_mcp::hook::run(&args),
        Command::Install(args) => holdline_mcp::install::run(&args).map_err(Into::into),
        Command::Uninstall(args) => holdline_mcp::install::uninstall(&args).map_err(Into::into),
        Command::Status(args) => holdline_mcp::install::status(&args).map_err(Into::into),
        // One thread: the bridge only forwards, and a reply crosses no thread hand-off.
        Command::Serve => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(anyhow::Error::from)
            .and_then(|rt| {
                rt.block_on(holdline_mcp::serve_stdio(
                    holdline_mcp::config::Config::from_env(),
                ))
            }),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("holdline-mcp: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
