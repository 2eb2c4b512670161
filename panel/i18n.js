// i18n.js — the panel's Chinese and English strings, the chosen language
// (browser language by default, remembered in localStorage) and t().

const STRINGS = {
  en: {
    appName: 'holdline',
    loginTitle: 'Sign in to holdline',
    loginHint: 'Open the link that holdline-hub panel-url prints, or paste the secret here.',
    loginKey: 'Secret key',
    loginSubmit: 'Sign in',
    loginWrong: 'Wrong key. Check the secret and try again.',
    loginRateLimited: 'Too many failed attempts. Wait a minute and try again.',
    loginFailed: 'Could not reach the hub: {msg}',
    logout: 'Log out',
    logoutEverywhere: 'Log out everywhere',
    logoutEverywhereTitle: 'End the panel login on every browser and device',
    search: 'Search titles and messages',
    viewOpen: 'Open',
    viewArchived: 'Archived',
    noSessions: 'No sessions yet. Start an agent with the holdline MCP tools.',
    noArchived: 'No archived sessions.',
    noMatch: 'No session matches.',
    pickSession: 'Pick a session on the left.',
    waitingFor: 'waiting {d}',
    queuedN: '{n} queued',
    msgs: '{n} msgs',
    'status.init': 'new',
    'status.holding': 'holding',
    'status.waiting': 'waiting',
    'status.replied': 'replied',
    'status.running': 'running',
    'status.merged': 'merged',
    'status.archived': 'archived',
    'role.assistant': 'Agent',
    'role.user': 'You',
    'role.system': 'System',
    auto: 'auto',
    queued: 'queued',
    delivered: 'delivered',
    sent: 'sent',
    loadMore: 'More sessions',
    sending: 'sending…',
    loadOlder: 'Load older messages',
    showAll: 'Show all ({size})',
    truncated: 'Long message: showing the first {shown} of {size}.',
    replyPlaceholder: 'Reply… (Enter sends, Shift+Enter new line; paste or drop images)',
    replyPlaceholderPhone: 'Reply…',
    send: 'Send',
    attach: 'Attach image',
    removeImage: 'Remove image',
    replyDelivered: 'Delivered to the waiting agent.',
    replyQueued: 'Queued: the agent gets it when it next waits.',
    replySent: 'Sent.',
    replyTooLarge: 'This reply is too large (over {max}). Remove some images or text.',
    replyFailed: 'Could not send: {msg}',
    replyClosed: 'This session is closed (merged or archived); it takes no replies.',
    staleQuestion: 'Not sent: the agent has asked something newer since. It now asks:',
    sendAnyway: 'Send anyway',
    staleEdit: 'Edit the reply',
    badImage: 'Only PNG, JPEG, GIF and WebP images can be sent.',
    quickReplies: 'Quick replies',
    editTemplates: 'Edit quick replies',
    templatesTitle: 'Quick replies',
    templateLabel: 'Label',
    templateText: 'Text sent',
    addTemplate: 'Add',
    remove: 'Remove',
    save: 'Save',
    cancel: 'Cancel',
    close: 'Close',
    saved: 'Saved.',
    saveFailed: 'Could not save: {msg}',
    settings: 'Settings',
    settingsTitle: 'Keep-alive settings',
    keepAlive: 'Keep-alive mode',
    modeHold: 'True hold (only my reply ends a wait)',
    modeTimed: 'Timed reply (send the continue prompt every interval)',
    modeAuto: 'Auto-continue when idle',
    interval: 'Interval (seconds)',
    continuePrompt: 'Continue prompt',
    continueMode: 'Continue mode',
    maxAutoStreak: 'Max automatic replies in a row',
    rename: 'Rename',
    renamePrompt: 'Name shown in the panel (empty for the agent\'s title)',
    merge: 'Merge',
    mergeTitle: 'Merge into another session',
    mergeHint: 'The messages of “{from}” are appended to the chosen session; “{from}” is closed and its agent is told the new token.',
    mergeTarget: 'Target session',
    mergeFind: 'Find the target',
    mergeFindPlaceholder: 'Title, workspace, host or token',
    mergeNoTarget: 'There is no other open session to merge into.',
    mergeConfirm: 'Merge “{from}” into “{to}”? This cannot be undone.',
    merged: 'Merged into “{to}”.',
    archive: 'Archive',
    restore: 'Restore',
    archiveConfirm: 'Archive “{title}”? An agent waiting in it is released.',
    restoreConfirm: 'Restore “{title}”?',
    confirm: 'Confirm',
    back: 'Back',
    language: '中文',
    languageTitle: 'Switch language',
    themeTitle: 'Switch light / dark',
    notifyOn: 'Notifications and sound on',
    notifyOff: 'Notifications and sound off',
    notifyTitle: '{title} is waiting for you',
    connected: 'live',
    disconnected: 'reconnecting…',
    progress: '{pct}%',
    nextStep: 'Next: {step}',
    token: 'Token',
    workspace: 'Workspace',
    host: 'Host',
    errorGeneric: 'Something went wrong: {msg}',
    justNow: 'just now',
    ago: '{d} ago',
    syncOk: 'MongoDB ✓',
    syncBehind: 'MongoDB: {n} behind ({s}s)',
    syncDown: 'MongoDB down',
    syncConnecting: 'MongoDB connecting',
    syncTitle: 'MongoDB sync: {state}, {n} changes not yet sent',
    mirrorTag: 'on {hub}',
    mirrorTagTitle: 'Read-only copy: the hub at {hub} owns this session',
    mirrorNotice: 'This session belongs to the hub at {hub} — answer it there',
    mirrorClosed: 'Read-only copy of a session on another hub; reply on that hub.',
    replyPending: 'The hub is not answering: this reply waits here and goes out when it is back.',
    hubAway: 'The hub is not answering. Replies you send wait here and go out when it is back.',
    hubAwayToast: 'The hub is not answering; staying on this conversation.',
    newSince: 'New since you looked',
    newBadge: 'new',
    nextWaiting: 'Next waiting session (Alt+N)',
    noneWaiting: 'No other session is waiting.',
    newBelow: 'New message ↓',
    messagesLabel: 'Messages',
    notifyTitleSettings: 'Notifications',
    notifyEnabled: 'Notify and play a sound when a session starts waiting',
    notifySound: 'Sound',
    'sound.chime': 'Chime',
    'sound.bell': 'Bell',
    'sound.soft': 'Soft',
    'sound.none': 'No sound',
    notifyTest: 'Test',
    notifyChannels: 'Messenger channels (config.toml [notify])',
    'channel.idle': 'nothing sent yet',
    'channel.ok': 'working',
    'channel.retrying': 'retrying',
    'channel.failing': 'failing',
    channelCounts: '{sent} sent, {failed} failed',
    channelError: 'last error: {error}',
    via: 'from {via}',
    notifyTestTitle: 'holdline test notification',
    notifyTestBody: 'This is how a waiting session is announced.',
    notifySettings: 'Notification settings',
    'blocked.insecure': 'This page is plain http on {host}, which browsers do not trust with notifications (only https pages and localhost get them): the sound still plays while the page is open, but no desktop or phone notification can show. Open the panel through HTTPS — a reverse proxy such as Caddy in front of the hub, see docs/operations.md — or on this machine as http://localhost.',
    'blocked.unsupported': 'This browser has no desktop notifications; the sound still plays while the page is open.',
    'blocked.denied': 'Notifications are blocked for this site in the browser\'s settings; allow them there to be notified.',
    infoOpen: 'Info',
    infoTitle: 'Session info and export',
    loading: 'Loading…',
    statusLabel: 'Status',
    createdLabel: 'Created',
    statRounds: 'Rounds (agent messages)',
    statWorked: 'Agent worked',
    statWaited: 'Agent waited for you',
    statReplies: 'Replies',
    statRepliesValue: '{yours} yours, {auto} automatic',
    statMessages: 'Messages',
    imagesN: '{n} image(s) not included',
    copy: 'Copy',
    copyMessage: 'Copy this message',
    copied: 'Copied.',
    copyFailed: 'Could not copy: {msg}',
    copySession: 'Copy as Markdown',
    exportMarkdown: 'Download Markdown',
    exportJson: 'Download JSON',
    exportAll: 'Export all sessions',
    conversationLabel: 'Conversation',
    progressLabel: 'Progress',
    convMenu: 'Actions',
    keepTimedIn: 'Timed reply in {left}',
    keepTimedDue: 'Timed reply due',
    keepTimedEvery: 'Timed reply every {every}',
    keepAuto: 'Auto-continue',
    keepPaused: 'Automatic replies paused (limit of {n} reached)',
    keepTimedShort: '⏱ {left}',
    keepTimedTag: '⏱ timed',
    keepAutoTag: 'Auto',
    keysTitle: 'Agent keys',
    keysHint: 'A key lets an agent on another machine wait for your replies, and nothing else. Make one on the hub\'s machine: holdline-hub key create --name NAME.',
    keysEmpty: 'No agent keys yet.',
    keysFailed: 'Could not load the agent keys: {msg}',
    keyName: 'Name',
    keyCreated: 'Created',
    keyLastUsed: 'Last used',
    keyNeverUsed: 'never',
    keyActions: 'Actions',
    keyRevoke: 'Revoke',
    keyRevokeLabel: 'Revoke {name}',
    keyRevokeConfirm: 'Revoke the agent key “{name}”? Agents using it are refused at once and their waits end.',
    keyRevoked: 'Revoked “{name}”.',
  },
  zh: {
    appName: 'holdline',
    loginTitle: '登录 holdline',
    loginHint: '打开 holdline-hub panel-url 打印的链接，或在此粘贴密钥。',
    loginKey: '密钥',
    loginSubmit: '登录',
    loginWrong: '密钥错误，请检查后重试。',
    loginRateLimited: '失败次数过多，请一分钟后再试。',
    loginFailed: '无法连接到 hub：{msg}',
    logout: '退出登录',
    logoutEverywhere: '全部退出',
    logoutEverywhereTitle: '结束所有浏览器和设备上的面板登录',
    search: '搜索标题和消息',
    viewOpen: '进行中',
    viewArchived: '已归档',
    noSessions: '还没有会话。用 holdline 的 MCP 工具启动一个 agent。',
    noArchived: '没有已归档的会话。',
    noMatch: '没有匹配的会话。',
    pickSession: '在左侧选择一个会话。',
    waitingFor: '已等待 {d}',
    queuedN: '{n} 条排队中',
    msgs: '{n} 条消息',
    'status.init': '新建',
    'status.holding': '挂起',
    'status.waiting': '等待回复',
    'status.replied': '已回复',
    'status.running': '运行中',
    'status.merged': '已合并',
    'status.archived': '已归档',
    'role.assistant': 'Agent',
    'role.user': '我',
    'role.system': '系统',
    auto: '自动',
    queued: '排队中',
    delivered: '已送达',
    sent: '已发送',
    loadMore: '更多会话',
    sending: '发送中…',
    loadOlder: '加载更早的消息',
    showAll: '显示全部（{size}）',
    truncated: '消息很长：只显示了前 {shown}，共 {size}。',
    replyPlaceholder: '回复…（Enter 发送，Shift+Enter 换行；可粘贴或拖入图片）',
    replyPlaceholderPhone: '回复…',
    send: '发送',
    attach: '添加图片',
    removeImage: '移除图片',
    replyDelivered: '已送达正在等待的 agent。',
    replyQueued: '已排队：agent 下次等待时收到。',
    replySent: '已发送。',
    replyTooLarge: '回复太大（超过 {max}）。请删掉一些图片或文字。',
    replyFailed: '发送失败：{msg}',
    replyClosed: '会话已关闭（已合并或归档），不能再回复。',
    staleQuestion: '未发送：智能体已经提出了新的问题。现在的问题是：',
    sendAnyway: '仍然发送',
    staleEdit: '修改回复',
    badImage: '只能发送 PNG、JPEG、GIF 和 WebP 图片。',
    quickReplies: '快捷回复',
    editTemplates: '编辑快捷回复',
    templatesTitle: '快捷回复',
    templateLabel: '标签',
    templateText: '发送的文字',
    addTemplate: '添加',
    remove: '删除',
    save: '保存',
    cancel: '取消',
    close: '关闭',
    saved: '已保存。',
    saveFailed: '保存失败：{msg}',
    settings: '设置',
    settingsTitle: '保活设置',
    keepAlive: '保活模式',
    modeHold: '真挂起（只有我的回复结束等待）',
    modeTimed: '定时回复（每隔一段时间发送续跑提示）',
    modeAuto: '空闲时自动续跑',
    interval: '间隔（秒）',
    continuePrompt: '续跑提示',
    continueMode: '续跑模式',
    maxAutoStreak: '最多连续自动回复次数',
    rename: '重命名',
    renamePrompt: '面板中显示的名称（留空则用 agent 的标题）',
    merge: '合并',
    mergeTitle: '合并到另一个会话',
    mergeHint: '“{from}”的消息会追加到所选会话；“{from}”将关闭，其 agent 会收到新的 token。',
    mergeTarget: '目标会话',
    mergeFind: '查找目标会话',
    mergeFindPlaceholder: '标题、工作区、主机或 token',
    mergeNoTarget: '没有其他进行中的会话可以合并。',
    mergeConfirm: '把“{from}”合并到“{to}”？此操作无法撤销。',
    merged: '已合并到“{to}”。',
    archive: '归档',
    restore: '恢复',
    archiveConfirm: '归档“{title}”？正在等待的 agent 会被释放。',
    restoreConfirm: '恢复“{title}”？',
    confirm: '确定',
    back: '返回',
    language: 'English',
    languageTitle: '切换语言',
    themeTitle: '切换浅色 / 深色',
    notifyOn: '通知和提示音：开',
    notifyOff: '通知和提示音：关',
    notifyTitle: '“{title}”在等你回复',
    connected: '实时',
    disconnected: '重新连接中…',
    progress: '{pct}%',
    nextStep: '下一步：{step}',
    token: 'Token',
    workspace: '工作区',
    host: '主机',
    errorGeneric: '出错了：{msg}',
    justNow: '刚刚',
    ago: '{d}前',
    syncOk: 'MongoDB ✓',
    syncBehind: 'MongoDB：落后 {n} 条（{s} 秒）',
    syncDown: 'MongoDB 已断开',
    syncConnecting: 'MongoDB 连接中',
    syncTitle: 'MongoDB 同步：{state}，{n} 条改动尚未发送',
    mirrorTag: '在 {hub}',
    mirrorTagTitle: '只读副本：此会话属于 {hub} 上的 hub',
    mirrorNotice: '此会话属于 {hub} 上的 hub——请在那里回复',
    mirrorClosed: '这是另一个 hub 上会话的只读副本；请在那个 hub 上回复。',
    replyPending: 'hub 没有响应：这条回复先留在这里，hub 恢复后自动发出。',
    hubAway: 'hub 没有响应。现在发送的回复会先留在这里，hub 恢复后自动发出。',
    hubAwayToast: 'hub 没有响应；仍停留在当前会话。',
    newSince: '你上次查看后有新消息',
    newBadge: '新',
    nextWaiting: '下一个等待中的会话（Alt+N）',
    noneWaiting: '没有其他会话在等待。',
    newBelow: '新消息 ↓',
    messagesLabel: '消息',
    notifyTitleSettings: '通知',
    notifyEnabled: '会话开始等待时通知并播放提示音',
    notifySound: '提示音',
    'sound.chime': '叮咚',
    'sound.bell': '铃声',
    'sound.soft': '轻柔',
    'sound.none': '无声',
    notifyTest: '测试',
    notifyChannels: '消息渠道（config.toml [notify]）',
    'channel.idle': '尚未发送',
    'channel.ok': '正常',
    'channel.retrying': '重试中',
    'channel.failing': '失败',
    channelCounts: '已发送 {sent}，失败 {failed}',
    channelError: '最近错误：{error}',
    via: '来自 {via}',
    notifyTestTitle: 'holdline 测试通知',
    notifyTestBody: '会话等待时就会这样提醒你。',
    notifySettings: '通知设置',
    'blocked.insecure': '此页面通过 http 访问 {host}，浏览器不允许这种页面发通知（只有 https 页面和 localhost 可以）：页面打开时仍会播放提示音，但不会出现桌面或手机通知。请通过 HTTPS 打开面板——在 hub 前面放一个反向代理（例如 Caddy，见 docs/operations.md）——或在本机用 http://localhost 打开。',
    'blocked.unsupported': '此浏览器不支持桌面通知；页面打开时仍会播放提示音。',
    'blocked.denied': '浏览器的网站设置禁止了此站点的通知；在那里允许后才能收到通知。',
    infoOpen: '信息',
    infoTitle: '会话信息与导出',
    loading: '加载中…',
    statusLabel: '状态',
    createdLabel: '创建于',
    statRounds: '轮数（agent 消息）',
    statWorked: 'agent 工作时长',
    statWaited: 'agent 等你回复的时长',
    statReplies: '回复',
    statRepliesValue: '你 {yours} 条，自动 {auto} 条',
    statMessages: '消息',
    imagesN: '{n} 张图片未包含',
    copy: '复制',
    copyMessage: '复制这条消息',
    copied: '已复制。',
    copyFailed: '复制失败：{msg}',
    copySession: '复制为 Markdown',
    exportMarkdown: '下载 Markdown',
    exportJson: '下载 JSON',
    exportAll: '导出全部会话',
    conversationLabel: '会话',
    progressLabel: '进度',
    convMenu: '操作',
    keepTimedIn: '定时回复：{left} 后',
    keepTimedDue: '定时回复即将发出',
    keepTimedEvery: '定时回复：每 {every}',
    keepAuto: '自动续跑',
    keepPaused: '自动回复已暂停（已达 {n} 次上限）',
    keepTimedShort: '⏱ {left}',
    keepTimedTag: '⏱ 定时',
    keepAutoTag: '自动',
    keysTitle: 'Agent 密钥',
    keysHint: '密钥只允许另一台机器上的 agent 等待你的回复，别的都不能做。在 hub 所在的机器上创建：holdline-hub key create --name 名称。',
    keysEmpty: '还没有 agent 密钥。',
    keysFailed: '无法加载 agent 密钥：{msg}',
    keyName: '名称',
    keyCreated: '创建于',
    keyLastUsed: '最近使用',
    keyNeverUsed: '从未',
    keyActions: '操作',
    keyRevoke: '吊销',
    keyRevokeLabel: '吊销 {name}',
    keyRevokeConfirm: '吊销 agent 密钥“{name}”？使用它的 agent 会立即被拒绝，正在进行的等待也会结束。',
    keyRevoked: '已吊销“{name}”。',
  },
};

const LANG_KEY = 'holdline.lang';

/** The language in use: remembered choice, else the browser's. */
export let lang = pickLanguage();

function pickLanguage() {
  let saved = null;
  try { saved = localStorage.getItem(LANG_KEY); } catch { /* storage disabled */ }
  if (saved === 'zh' || saved === 'en') return saved;
  const langs = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || 'en'];
  return String(langs[0]).toLowerCase().startsWith('zh') ? 'zh' : 'en';
}

/** Switches and remembers the language. */
export function setLang(next) {
  lang = next === 'zh' ? 'zh' : 'en';
  try { localStorage.setItem(LANG_KEY, lang); } catch { /* storage disabled */ }
  document.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en';
}

/** The string for `key` in the current language with `{name}` filled from `vars`. */
export function t(key, vars = {}) {
  const s = STRINGS[lang][key] ?? STRINGS.en[key] ?? key;
  return s.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
}

/** Fills every `[data-i18n]` (text), `[data-i18n-placeholder]`, `[data-i18n-label]` (aria-label) and `[data-i18n-title]` under `root`. */
export function applyStatic(root = document) {
  document.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en';
  for (const el of root.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  const narrow = matchMedia('(max-width: 720px)').matches;
  for (const el of root.querySelectorAll('[data-i18n-placeholder]')) {
    const key = el.dataset.i18nPlaceholder;
    // Phones get the short form where there is one.
    el.placeholder = narrow && STRINGS.en[`${key}Phone`] ? t(`${key}Phone`) : t(key);
  }
  for (const el of root.querySelectorAll('[data-i18n-label]')) el.setAttribute('aria-label', t(el.dataset.i18nLabel));
  for (const el of root.querySelectorAll('[data-i18n-title]')) {
    el.title = t(el.dataset.i18nTitle);
    // An icon button is named by its title; a button with words is named by them (what is seen is what is said).
    if (!el.classList.contains('text')) el.setAttribute('aria-label', el.title);
  }
}

/** A duration in ms as a short human string: "45s", "3m", "2h 5m", "3d". */
export function duration(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  const zh = lang === 'zh';
  if (s < 60) return zh ? `${s} 秒` : `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return zh ? `${m} 分钟` : `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return zh ? `${h} 小时 ${m % 60} 分` : `${h}h ${m % 60}m`;
  const d = Math.floor(h / 24);
  return zh ? `${d} 天` : `${d}d`;
}

/** How long ago `at` (ms since epoch) was. */
export function ago(at, now = Date.now()) {
  if (!at) return '';
  if (now - at < 45_000) return t('justNow');
  return t('ago', { d: duration(now - at) });
}

/** A clock time for a message, with the date when it is not today. */
export function clock(at) {
  const d = new Date(at);
  const today = new Date();
  const opts = { hour: '2-digit', minute: '2-digit' };
  if (d.toDateString() !== today.toDateString()) Object.assign(opts, { month: 'short', day: 'numeric' });
  return d.toLocaleString(lang === 'zh' ? 'zh-CN' : 'en', opts);
}

/** A byte count as "1.0 MB". */
export function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** The quick replies when the hub cannot be asked (the hub has the same defaults), tagged by language. */
export const DEFAULT_TEMPLATES = [
  { label: '继续', text: '继续', lang: 'zh' },
  { label: 'Continue', text: 'Continue.', lang: 'en' },
  { label: '先写测试', text: '先补测试，再继续。', lang: 'zh' },
  { label: 'Run the tests', text: 'Run the tests and show me the result.', lang: 'en' },
  { label: '提交', text: '可以，提交吧。', lang: 'zh' },
  { label: 'Looks good, commit', text: 'Looks good. Commit it.', lang: 'en' },
  { label: '停', text: '先停下，等我看一下。', lang: 'zh' },
  { label: 'Stop and explain', text: 'Stop here and explain what you changed.', lang: 'en' },
];

/** A countdown as "9:58" (or "1:02:03"). */
export function countdown(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const hh = Math.floor(s / 3600);
  const mm = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return hh ? `${hh}:${String(mm).padStart(2, '0')}:${ss}` : `${mm}:${ss}`;
}
