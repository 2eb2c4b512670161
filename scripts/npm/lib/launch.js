'use strict';
// Runs a holdline binary from the platform package npm installed for this machine, passing
// arguments, stdio (the MCP stdio stream) and signals through and exiting as the binary does.
//
// HOLDLINE_MCP_LAUNCHER tells the binary the path of this launcher as it was run (npm's bin
// shim, e.g. PREFIX/bin/holdline-mcp), so `holdline-mcp install` writes that path into a
// client's config: it stays the same across upgrades, unlike the platform package's folder.
const { spawn } = require('child_process');
const path = require('path');
const platforms = require('./platforms');

function binaryPath(name) {
  const key = `${process.platform}-${process.arch}`;
  const pkg = platforms[key];
  if (!pkg) {
    throw new Error(`there is no prebuilt holdline for ${key}; build it from source (see the README)`);
  }
  let dir;
  try {
    dir = path.dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    throw new Error(
      `the package ${pkg} with the ${name} binary is not installed ` +
        '(npm leaves optional dependencies out with --omit=optional or --no-optional); ' +
        'install holdline-mcp again without that option',
    );
  }
  return path.join(dir, 'bin', name);
}

module.exports = function launch(name) {
  let bin;
  try {
    bin = binaryPath(name);
  } catch (e) {
    console.error(`${name}: ${e.message}`);
    process.exit(1);
  }
  const env = { ...process.env, HOLDLINE_MCP_LAUNCHER: process.argv[1] };
  const child = spawn(bin, process.argv.slice(2), { stdio: 'inherit', env });
  const forward = (signal) => child.kill(signal);
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const s of signals) process.on(s, forward);
  child.on('error', (e) => {
    console.error(`${name}: cannot run ${bin}: ${e.message}`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    for (const s of signals) process.removeListener(s, forward);
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
};
