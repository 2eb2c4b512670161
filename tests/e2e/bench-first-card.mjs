// bench-first-card.mjs — not a test (no timing in the suite): how long the
// panel takes from navigation to the first session card with 1,000 sessions,
// for the hub binary in HOLDLINE_HUB_BIN; run it for two binaries in one
// sitting to compare: `HOLDLINE_HUB_BIN=… node bench-first-card.mjs`.
import { startHub, newAgent, launchBrowser, openPanel } from './harness.mjs';
const hub = await startHub();
const tasks = [];
for (let i = 0; i < 1000; i++) {
  tasks.push((async () => {
    const a = await newAgent(hub, `Session ${i} with a title`, { workspace: `/srv/p${i % 7}` });
    if (i % 3 === 0) await a.wait(`## Step ${i}\nSome **markdown** with \`code\` and a [link](https://example.com).`, { completionPct: i % 100, nextStep: 'next thing' });
  })());
  if (tasks.length >= 20) { await Promise.all(tasks.splice(0)); }
}
await Promise.all(tasks);
const b = await launchBrowser();
await b.context.addInitScript(() => {
  new MutationObserver((_, obs) => {
    if (document.querySelector('[data-testid="session-item"]')) { window.__firstCard = performance.now(); obs.disconnect(); }
  }).observe(document, { childList: true, subtree: true });
});
await openPanel(b.page, hub); // sign in once (cookie)
const times = [];
for (let i = 0; i < 7; i++) {
  await b.page.goto(hub.base + '/');
  await b.page.locator('[data-testid="session-item"]').first().waitFor();
  await b.page.waitForFunction(() => window.__firstCard);
  times.push(Math.round(await b.page.evaluate(() => window.__firstCard)));
}
times.sort((x, y) => x - y);
console.log(JSON.stringify({ bin: process.env.HOLDLINE_HUB_BIN, ms: times, median: times[3] }));
await b.close(); await hub.stop();
