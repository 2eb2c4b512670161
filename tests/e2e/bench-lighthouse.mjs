// bench-lighthouse.mjs — not a test: Lighthouse 12.8 (performance,
// accessibility, best practices) on the panel signed in through a Bearer
// header, desktop and mobile, for the hub binary in HOLDLINE_HUB_BIN.
//   npm install --prefix /tmp/lh lighthouse@12.8.2   (once; it is not a dependency of the suite)
//   LABEL=after HOLDLINE_HUB_BIN=… LIGHTHOUSE=/tmp/lh/node_modules/.bin/lighthouse node bench-lighthouse.mjs
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { readFileSync } from 'node:fs';
const { startHub, newAgent } = await import('./harness.mjs');
const hub = await startHub();
const a = await newAgent(hub, 'Fix flaky CI', { hostIp: '192.168.1.31' });
await a.wait('## Done\nThe retry loop in `ci.yml` now waits.\n\n```yaml\nrun: pg_isready\n```', { completionPct: 80, nextStep: 'remove the sleep' });
const b = await newAgent(hub, 'Docs'); await b.wait('README updated. Anything else?');
const out = {};
for (const form of ['desktop', 'mobile']) {
  const file = `${tmpdir()}/holdline-lighthouse-${process.env.LABEL || 'run'}-${form}.json`;
  const args = [hub.base + '/', '--quiet', '--output=json', `--output-path=${file}`,
    '--only-categories=performance,accessibility,best-practices',
    `--extra-headers=${JSON.stringify({ Authorization: `Bearer ${hub.secret}` })}`,
    '--chrome-flags=--headless=new --no-sandbox --disable-gpu'];
  if (form === 'desktop') args.push('--preset=desktop');
  try { execFileSync(process.env.LIGHTHOUSE || 'lighthouse', args, { env: { ...process.env, CHROME_PATH: '/usr/bin/chromium' }, stdio: 'inherit', timeout: 240000 }); } catch (e) { console.log('lighthouse failed', e.message); continue; }
  const r = JSON.parse(readFileSync(file, 'utf8'));
  out[form] = Object.fromEntries(Object.entries(r.categories).map(([k, v]) => [k, Math.round(v.score * 100)]));
  const fails = Object.values(r.audits).filter((x) => x.score !== null && x.score < 1 && ['binary', 'numeric'].includes(x.scoreDisplayMode) && r.categories.accessibility.auditRefs.concat(r.categories['best-practices'].auditRefs).some((ref) => ref.id === x.id)).map((x) => x.id);
  out[form].failing = fails;
}
console.log(process.env.LABEL || 'run', JSON.stringify(out));
await hub.stop();
