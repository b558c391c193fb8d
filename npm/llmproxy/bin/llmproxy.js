#!/usr/bin/env node
// The llmproxy command of the npm package: it runs the prebuilt binary of
// this machine's platform package (@llmproxy/PLATFORM-ARCH, an optional
// dependency installed only where its os and cpu match), or the binary
// that LLMPROXY_BIN names, with the same arguments and stdio. SIGINT,
// SIGTERM and SIGHUP are passed on to it, and its end is this process's
// end: the same exit code, or the same signal.
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { optionalDependencies = {} } = require('../package.json');

// fail prints message and exits 1, as llmproxy does for an error that is
// not a usage error.
function fail(message) {
  process.stderr.write(`llmproxy: ${message}\n`);
  process.exit(1);
}

// binary is the path of the binary to run: LLMPROXY_BIN, or the one in
// this platform's package.
function binary() {
  const override = process.env.LLMPROXY_BIN;
  if (override) {
    if (fs.existsSync(override) && fs.realpathSync(override) === fs.realpathSync(__filename)) {
      fail(`LLMPROXY_BIN (${override}) names this npm launcher, not the llmproxy binary`);
    }
    return override;
  }
  const platform = `${process.platform}-${process.arch}`;
  const pkg = `@llmproxy/${platform}`;
  const exe = process.platform === 'win32' ? 'llmproxy.exe' : 'llmproxy';
  const instead = 'set LLMPROXY_BIN to an llmproxy binary, or install one with Go: go install github.com/llmproxy/llmproxy/cmd/llmproxy@latest';
  if (!(pkg in optionalDependencies)) {
    const known = Object.keys(optionalDependencies).map((p) => p.replace('@llmproxy/', '')).join(', ');
    fail(`no prebuilt binary for ${platform} (there are for ${known}): ${instead}`);
  }
  try {
    return require.resolve(`${pkg}/bin/${exe}`);
  } catch {
    fail(`the package ${pkg}, which carries the binary for ${platform}, is not installed ` +
      `(was the install run with --omit=optional or --no-optional, or on another platform?): ` +
      `reinstall llmproxy with its optional dependencies, or ${instead}`);
  }
}

// run starts bin with this process's arguments and stdio, passes the
// forwarded signals on, and ends as it ends.
function run(bin) {
  // Only where there are signals to send: on Windows, Ctrl-C reaches every
  // process of the console, the child included.
  const forwarded = process.platform === 'win32' ? [] : ['SIGINT', 'SIGTERM', 'SIGHUP'];
  // The handlers are in place before the child starts: a signal sent the
  // moment it runs must reach it, not end this process and leave it behind.
  let child = null;
  const early = [];
  const pass = (signal) => {
    if (child) child.kill(signal);
    else early.push(signal);
  };
  for (const signal of forwarded) process.on(signal, pass);
  child = spawn(bin, process.argv.slice(2), { stdio: 'inherit', windowsHide: true });
  for (const signal of early) child.kill(signal);
  child.on('error', (err) => fail(`cannot run ${bin}: ${err.message}`));
  child.on('exit', (code, signal) => {
    for (const s of forwarded) process.off(s, pass);
    if (signal) {
      // End by the same signal, so that a shell sees what it would have
      // seen without the launcher; 128+N should the signal not end us.
      process.kill(process.pid, signal);
      process.exit(128 + (os.constants.signals[signal] || 0));
    }
    process.exit(code);
  });
}

run(binary());
