// sw.js — the panel's service worker: what makes it an installable web app,
// lets it notify where pages may not (Android's Chrome refuses
// `new Notification` and takes only a service worker's), and shows the hub's
// Web Push messages (`{title, body?, token, url}`: one notification per
// session, tagged by its token). It caches nothing: the panel is live data. A
// click on a notification focuses the panel (or opens it at that session) and
// tells it which session to show.

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('push', (event) => {
  let data = {};
  try { data = event.data ? event.data.json() : {}; } catch { data = { title: event.data ? event.data.text() : '' }; }
  const token = typeof data.token === 'string' ? data.token : null;
  const title = data.title || 'holdline';
  const options = {
    body: data.body || '',
    tag: token ? `holdline-${token}` : 'holdline',
    renotify: true,
    icon: 'icon-192.png',
    data: { token, url: typeof data.url === 'string' ? data.url : '/' },
  };
  event.waitUntil(self.registration.showNotification(title, options));
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const data = event.notification.data || {};
  const token = data.token;
  // Only a link on the panel's own origin is opened.
  const url = new URL(data.url || '/', self.registration.scope);
  const target = url.origin === self.location.origin ? url.href : self.registration.scope;
  event.waitUntil((async () => {
    const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
    if (windows[0]) {
      await windows[0].focus();
      if (token) windows[0].postMessage({ type: 'open-session', token });
      return;
    }
    await self.clients.openWindow(target);
  })());
});
