#!/usr/bin/env node
'use strict';
// Writes the package.json of holdline's two npm packages, in the layout of the Codex and
// Claude Code CLIs: the platform package @holdline/OS-CPU (the binaries, with os/cpu so npm
// installs it only on a matching machine) and the main package holdline-mcp (launchers in bin/,
// every platform package as an optional dependency at the same version).
//
// The main package's `mcpName` (the server.json name) is how the MCP Registry checks that
// the npm package belongs to that server.
//
//   node scripts/dist-npm.js VERSION OS CPU MAIN_DIR PLATFORM_DIR MCP_NAME
const fs = require('fs');
const path = require('path');
const platforms = require('./npm/lib/platforms');

const [version, os, cpu, mainDir, platformDir, mcpName] = process.argv.slice(2);
if (!mcpName) {
  console.error('usage: dist-npm.js VERSION OS CPU MAIN_DIR PLATFORM_DIR MCP_NAME');
  process.exit(2);
}
const common = {
  version,
  license: 'MIT',
};
const bins = { 'holdline-mcp': 'bin/holdline-mcp.js', 'holdline-hub': 'bin/holdline-hub.js' };
const platformName = platforms[`${os}-${cpu}`];
if (!platformName) {
  console.error(`dist-npm.js: no platform package for ${os}-${cpu}`);
  process.exit(2);
}

const main = {
  name: 'holdline-mcp',
  ...common,
  description: 'holdline: the MCP bridge and hub that keep an IDE agent waiting for your answer',
  mcpName,
  bin: bins,
  files: ['bin', 'lib', 'README.md'],
  engines: { node: '>=16' },
  optionalDependencies: Object.fromEntries(Object.values(platforms).map((p) => [p, version])),
};
const platform = {
  name: platformName,
  ...common,
  description: `holdline-hub and holdline-mcp for ${os}-${cpu} (installed by holdline-mcp)`,
  os: [os],
  cpu: [cpu],
  // The Linux binaries need glibc (2.28 or newer): npm skips the package on musl.
  ...(os === 'linux' ? { libc: ['glibc'] } : {}),
  files: ['bin'],
};
const write = (dir, json) => fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(json, null, 2) + '\n');
write(mainDir, main);
write(platformDir, platform);
