// messenger.test.mjs — what the panel shows of the hub's messenger channels
// ([notify] in config.toml): each channel's state and last error in the bell's
// dialog, and a reply written in Telegram marked as such in the conversation.
// The channels are webhook receivers this test runs on loopback.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { startHub, newAgent, launchBrowser, openPanel, selectSession, sleep } from './harness.mjs';

let hub;
let receivers = [];

/** A webhook receiver on 127.0.0.1 answering every POST with `status`; counts what it got. */
async function receiver(status) {
  const got = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      got.push(body);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(status < 300 ? '{"ok":true}' : '{"error":"this hook was revoked"}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  receivers.push(server);
  return { url: `http://127.0.0.1:${server.address().port}/hook`, got };
}

let working;
let refusing;

before(async () => {
  working = await receiver(200);
  refusing = await receiver(403);
  hub = await startHub({
    config: [
      '[notify]',
      'after_sec = 0',
      '[[notify.webhook]]',
      `url = "${working.url}"`,
      'format = "json"',
      '[[notify.webhook]]',
      `url = "${refusing.url}"`,
      'format = "slack"',
      '',
    ].join('\n'),
  });
});

after(async () => {
  if (hub) await hub.stop();
  for (const s of receivers) s.close();
});

test('the bell dialog shows each messenger channel with its state and last error, never its URL', async () => {
  const agent = await newAgent(hub, 'Told by webhook');
  await agent.wait('Done with the parser; next the tests?');
  for (let i = 0; i < 100 && (working.got.length === 0 || refusing.got.length === 0); i++) await sleep(100);
  assert.ok(working.got.length > 0 && refusing.got.length > 0, 'both channels were told');

  const b = await launchBrowser();
  try {
    const page = b.page;
    await openPanel(page, hub);
    await page.click('[data-testid="notify-toggle"]');
    const channels = page.locator('[data-testid="notify-channel"]');
    await channels.first().waitFor();
    assert.equal(await channels.count(), 2);
    const states = await channels.evaluateAll((els) => els.map((e) => e.dataset.state));
    assert.deepEqual(states.sort(), ['failing', 'ok']);
    const text = await page.locator('[data-testid="notify-channels"]').innerText();
    assert.match(text, /403/, text);
    assert.ok(!text.includes('127.0.0.1'), `a channel URL is shown: ${text}`);
  } finally {
    await b.close();
  }
});

test('a reply written in Telegram is marked in the conversation', async () => {
  const token = 'ct_7e1f0c2a9b8d4e6fa1b2c3d4e5f60718';
  await hub.api('POST', '/api/import', {
    [token]: {
      token, title: 'Answered from the phone', status: 'holding', workspace: '/w', hostIp: '10.0.0.9',
      createdAt: 1782448693854, lastActiveAt: 1782449356228,
      messages: [
        { role: 'assistant', content: 'Shall I ship it?', at: 1782448693900 },
        { role: 'user', content: 'Yes, ship it', at: 1782448699900, via: 'telegram' },
        { role: 'user', content: 'And tag it', at: 1782448799900 },
      ],
    },
  });
  const b = await launchBrowser();
  try {
    const page = b.page;
    await openPanel(page, hub);
    await selectSession(page, token);
    const tags = page.locator('[data-testid="via-tag"]');
    await tags.first().waitFor();
    assert.equal(await tags.count(), 1, 'only the Telegram reply is marked');
    assert.match(await tags.first().innerText(), /Telegram/);
    const marked = page.locator('[data-testid="message"]', { has: tags });
    assert.match(await marked.innerText(), /Yes, ship it/);
  } finally {
    await b.close();
  }
});

test("a notification's link opens the panel on that session", async () => {
  const first = await newAgent(hub, 'Not this one');
  await first.wait('first');
  const agent = await newAgent(hub, 'Linked from the phone');
  await agent.wait('Which database should I use?');
  const b = await launchBrowser();
  try {
    const page = b.page;
    await openPanel(page, hub);
    await page.goto('about:blank');
    await page.goto(`${hub.base}/#session=${agent.token}`);
    await page.waitForFunction(
      (token) => document.querySelector('[data-testid="conv-title"]')?.title.includes(token),
      agent.token,
    );
    assert.ok(!page.url().includes('session='), 'the link is taken out of the address');
  } finally {
    await b.close();
  }
});
