//! The MCP clients `holdline-mcp install` writes entries for, by the name its `--client`
//! takes: the hub names them (`key create --print-config CLIENT`) without linking the
//! installer. The installer's own list is checked against this one by a test.

/// Every `--client` name, in the installer's order.
pub const CLIENT_NAMES: [&str; 19] = [
    "cursor",
    "claude-code",
    "codex",
    "vscode",
    "windsurf",
    "trae",
    "cline",
    "gemini",
    "qwen",
    "copilot",
    "opencode",
    "continue",
    "kilo",
    "droid",
    "mistral-vibe",
    "kimi-code",
    "openhands",
    "roo-code",
    "zed",
];

/// `name` if it is one of [`CLIENT_NAMES`].
pub fn client_name(name: &str) -> Option<&'static str> {
    CLIENT_NAMES.iter().copied().find(|n| *n == name)
}

/// The command that writes a remote entry (the hub's `/mcp` at `url`, with the agent key
/// `key`) into `client`'s config on the agent's machine.
pub fn remote_install_command(client: &str, url: &str, key: &str) -> String {
    format!("holdline-mcp install --client {client} --url {url} --key {key}")
}
