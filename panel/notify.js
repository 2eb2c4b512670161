// notify.js — telling the person a session started waiting: a desktop
// notification and a short chime made with WebAudio (no sound file), both
// behind one remembered on/off switch.

const KEY = 'holdline.notify';
let audio = null;

/** Whether notifications and sound are on (default on). */
export function enabled() {
  try { return localStorage.getItem(KEY) !== 'off'; } catch { return true; }
}

/** Turns them on or off; turning on asks for notification permission. */
export function setEnabled(on) {
  try { localStorage.setItem(KEY, on ? 'on' : 'off'); } catch { /* storage disabled */ }
  if (on) {
    unlockAudio();
    if ('Notification' in window && Notification.permission === 'default') {
      Notification.requestPermission().catch(() => {});
    }
  }
}

/** Browsers only start audio after a user gesture; call this from one. */
export function unlockAudio() {
  try {
    if (!audio) {
      const Ctx = window.AudioContext || window.webkitAudioContext;
      if (!Ctx) return;
      audio = new Ctx();
    }
    if (audio.state === 'suspended') audio.resume().catch(() => {});
  } catch { /* no audio */ }
}

/** A short two-note chime. */
export function chime() {
  if (!audio) unlockAudio();
  if (!audio) return;
  const now = audio.currentTime;
  for (const [i, freq] of [[0, 880], [1, 1318.5]]) {
    const osc = audio.createOscillator();
    const gain = audio.createGain();
    osc.type = 'sine';
    osc.frequency.value = freq;
    const start = now + i * 0.14;
    gain.gain.setValueAtTime(0.0001, start);
    gain.gain.exponentialRampToValueAtTime(0.2, start + 0.02);
    gain.gain.exponentialRampToValueAtTime(0.0001, start + 0.3);
    osc.connect(gain).connect(audio.destination);
    osc.start(start);
    osc.stop(start + 0.32);
  }
}

/** Tells the person `title` waits: chime plus a desktop notification; `onClick` focuses it. */
export function announce(title, body, onClick) {
  if (!enabled()) return;
  chime();
  if ('Notification' in window && Notification.permission === 'granted') {
    try {
      const n = new Notification(title, { body, tag: `holdline-${title}`, renotify: true });
      n.onclick = () => { window.focus(); if (onClick) onClick(); n.close(); };
    } catch { /* some browsers only allow notifications from a service worker */ }
  }
}
