// sw.js — the panel's service worker: what makes it an installable web app
// and lets it notify where pages may not (Android's Chrome refuses
// `new Notification` and takes only a service worker's). It caches nothing:
// the panel is live data. A click on a notification focuses the panel (or
// opens it) and tells it which session to show.

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const token = event.notification.data && event.notification.data.token;
  event.waitUntil((async () => {
    const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
    const client = windows[0] || await self.clients.openWindow('/');
    if (!client) return;
    if (windows[0]) await client.focus();
    if (token) client.postMessage({ type: 'open-session', token });
  })());
});
