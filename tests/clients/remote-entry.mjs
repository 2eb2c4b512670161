// remote-entry.mjs — holdline's remote entry (the hub's Streamable HTTP URL and an
// `Authorization: Bearer KEY` header) in each client's config, written the way
// `holdline-mcp install --client X --url URL --key KEY` writes it. `installRemote` runs the
// installer when the binary has `--url`; until then it writes the same entry here, in one
// place, so the drivers do not change when the installer lands.

import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { MCP_BIN, patchJson } from './harness.mjs';

const run = promisify(execFile);
const TOOLS = ['init_conversation', 'select_conversation', 'wait_for_user_input', 'merge_conversation'];
/** Beside a client timeout the installer raises to an hour: the longest single wait, for the hub. */
const MAX_WAIT = { 'Holdline-Max-Wait-Sec': '3570' };

let installerHasUrl;
async function installerSpeaksRemote() {
  if (installerHasUrl === undefined) {
    const { stdout, stderr } = await run(MCP_BIN, ['install', '--help']).catch((e) => e);
    installerHasUrl = /--url/.test(`${stdout}${stderr}`);
  }
  return installerHasUrl;
}

/** Each client's remote entry, as its config file holds it (the installer's shapes). */
const byHand = {
  'claude-code': ({ home, url, key }) => patchJson(join(home, '.claude.json'), (c) => {
    c.mcpServers = { ...c.mcpServers, holdline: { type: 'http', url, headers: { Authorization: `Bearer ${key}` } } };
  }),
  codex: ({ home, url, key, env }) => {
    const file = join(env.CODEX_HOME ?? join(home, '.codex'), 'config.toml');
    mkdirSync(dirname(file), { recursive: true });
    const old = existsSync(file) ? readFileSync(file, 'utf8') : '';
    writeFileSync(file, `${old}[mcp_servers.holdline]\nurl = "${url}"\nhttp_headers = { Authorization = "Bearer ${key}", Holdline-Max-Wait-Sec = "3570" }\ntool_timeout_sec = 3600\ndefault_tools_approval_mode = "approve"\n`);
  },
  gemini: ({ home, url, key }) => patchJson(join(home, '.gemini', 'settings.json'), (s) => {
    s.mcpServers = { ...s.mcpServers, holdline: { type: 'http', url, headers: { Authorization: `Bearer ${key}`, ...MAX_WAIT }, timeout: 3_600_000 } };
  }),
  qwen: ({ home, url, key }) => patchJson(join(home, '.qwen', 'settings.json'), (s) => {
    s.mcpServers = { ...s.mcpServers, holdline: { httpUrl: url, headers: { Authorization: `Bearer ${key}`, ...MAX_WAIT }, timeout: 3_600_000 } };
  }),
  cline: ({ home, url, key }) => patchJson(join(home, '.cline', 'data', 'settings', 'cline_mcp_settings.json'), (s) => {
    s.mcpServers = { ...s.mcpServers, holdline: { type: 'streamableHttp', url, headers: { Authorization: `Bearer ${key}`, ...MAX_WAIT }, disabled: false, timeout: 3600, autoApprove: TOOLS } };
  }),
  opencode: ({ home, url, key }) => patchJson(join(home, '.config', 'opencode', 'opencode.json'), (c) => {
    c.mcp = { ...c.mcp, holdline: { type: 'remote', url, headers: { Authorization: `Bearer ${key}` }, oauth: false, enabled: true } };
  }),
  copilot: ({ home, url, key }) => patchJson(join(home, '.copilot', 'mcp-config.json'), (c) => {
    c.mcpServers = { ...c.mcpServers, holdline: { type: 'http', url, headers: { Authorization: `Bearer ${key}` }, tools: ['*'] } };
  }),
  continue: ({ home, url, key }) => {
    const file = join(home, '.continue', 'config.yaml');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `mcpServers:\n  - name: holdline\n    type: streamable-http\n    url: ${url}\n    requestOptions:\n      headers:\n        Authorization: Bearer ${key}\n`);
  },
};

/**
 * Puts holdline's remote entry for `client` into the config under `home`: through
 * `holdline-mcp install --client X --url URL --key KEY` when the installer has it, else by hand.
 * `env` is the installer's environment beyond HOME (e.g. CODEX_HOME), `args` further flags (`--trust`).
 */
export async function installRemote(client, { home, project, url, key, env = {}, args = [] }) {
  if (await installerSpeaksRemote()) {
    const { stdout, stderr } = await run(MCP_BIN, ['install', '--client', client, '--url', url, '--key', key, '--project', project, ...args], {
      env: { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), ...env },
    });
    return stdout + stderr;
  }
  if (!byHand[client]) throw new Error(`no remote entry for ${client}`);
  byHand[client]({ home, url, key, env });
  // `--trust`: Gemini CLI and Qwen Code connect to servers only in trusted folders.
  if (args.includes('--trust')) patchJson(join(home, `.${client}`, 'trustedFolders.json'), (t) => ({ ...t, [project]: 'TRUST_FOLDER' }));
  return `${client}: remote entry written by the test (the installer has no --url yet)`;
}
