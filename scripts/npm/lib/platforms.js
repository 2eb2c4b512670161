'use strict';
// The prebuilt platform packages: node's `${process.platform}-${process.arch}` → the npm
// package that holds holdline-hub and holdline-mcp for it. scripts/dist-npm.js writes the
// main package's optionalDependencies from this list, and lib/launch.js finds the binary by it.
module.exports = {
  'linux-x64': '@holdline/linux-x64',
  'linux-arm64': '@holdline/linux-arm64',
  'darwin-x64': '@holdline/darwin-x64',
  'darwin-arm64': '@holdline/darwin-arm64',
};
