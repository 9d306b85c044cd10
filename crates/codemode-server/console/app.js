// The console's shell: hash routing, live updates from the server's event stream (no polling:
// the data is read again only when an event says it changed), the "server went away" banner.

import { get, onConnectivity, signIn, stream } from './api.js';
import { h, replace } from './dom.js';
import {
  PendingView, ExecutionsView, ExecutionView, SnippetsView, ConnectorsView,
} from './views.js';
import { FilesView } from './files.js';

/** How long to gather events before reading the data again. */
const SETTLE_MS = 100;
const main = document.getElementById('main');
const banner = document.getElementById('banner');
const pendingCount = document.getElementById('pending-count');

const app = {
  pending: null,
  view: null,
  online: true,
  needToken: false,
  failures: 0,
  timer: null,
  ticking: false,
  /** The open event stream, and the id of the last event it brought. */
  events: null,
  lastEventId: 0,
  /** Reads the data again now (after an action). */
  poke() {
    schedule(0);
  },
};

const pendingView = new PendingView(); // kept, so handled cards keep their outcome

function parse() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  switch (parts[0]) {
    case 'executions':
      return parts[1] ? ['executions', new ExecutionView(), { id: parts[1] }] : ['executions', new ExecutionsView(), {}];
    case 'snippets':
      return ['snippets', new SnippetsView(), {}];
    case 'connectors':
      return ['connectors', new ConnectorsView(), {}];
    case 'files':
      return ['files', new FilesView(), { workspace: parts[1] }];
    default:
      return ['pending', pendingView, {}];
  }
}

function route() {
  const [name, view, params] = parse();
  if (app.view && app.view.unmount) app.view.unmount();
  app.view = view;
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.view === name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const root = h('div', { class: `view view-${name}` });
  replace(main, root);
  view.mount(root, params);
  document.title = `${document.querySelector(`nav a[data-view="${name}"]`).textContent.replace(/\d+$/, '').trim()} · codemode`;
  const h1 = root.querySelector('h1');
  if (h1 && app.routed) h1.focus({ preventScroll: true });
  app.routed = true;
  schedule(0);
}

/** Reads the data again in `ms` (or sooner, if that is already planned). */
function schedule(ms) {
  const at = Date.now() + ms;
  if (app.timer && app.dueAt <= at) return;
  clearTimeout(app.timer);
  app.dueAt = at;
  app.timer = setTimeout(() => { app.timer = null; tick(); }, ms);
}

async function tick() {
  if (app.ticking) {
    schedule(200);
    return;
  }
  app.ticking = true;
  try {
    await whoami();
    app.pending = await get('/api/pending');
    pendingCount.textContent = app.pending.length ? String(app.pending.length) : '';
    pendingCount.hidden = app.pending.length === 0;
    app.needToken = false;
    const view = app.view;
    if (view && view.refresh) await view.refresh(app);
    if (!app.events) follow();
  } catch (err) {
    if (err.status === 401) app.needToken = true;
  } finally {
    app.ticking = false;
  }
  showBanner();
}

/** Follows `/api/events`: each event has the data read again; a lost stream is retried. */
function follow() {
  clearTimeout(app.retryTimer);
  if (app.events) app.events.close();
  const events = stream('/api/events', {
    after: app.lastEventId,
    onOpen: () => {
      app.failures = 0;
      app.online = true;
      showBanner();
      schedule(0);
    },
    onEvent: (e) => {
      if (e.id) app.lastEventId = e.id;
      schedule(SETTLE_MS);
    },
  });
  app.events = events;
  events.done.then(({ status }) => {
    if (app.events !== events || status === -1) return;
    app.events = null;
    if (status === 401) {
      // The next read asks for a token, and follows again once it has one.
      app.needToken = true;
      showBanner();
      return;
    }
    app.failures += 1;
    const wait = Math.min(15000, 1000 * 2 ** Math.min(app.failures - 1, 4));
    app.retryAt = Date.now() + wait;
    showBanner();
    app.retryTimer = setTimeout(() => { follow(); }, wait);
  });
}

const whoamiEl = document.getElementById('whoami');
/** Learns the caller's token name and role once per token (`app.me`), and shows it. */
async function whoami() {
  const token = sessionStorage.getItem('codemode.token') || '';
  if (app.me && app.meToken === token) return;
  app.me = await get('/api/whoami');
  app.meToken = sessionStorage.getItem('codemode.token') || '';
  whoamiEl.hidden = app.me.name === 'local';
  replace(whoamiEl, 'Signed in as ', h('strong', {}, app.me.name), ` (role ${app.me.role})`);
}

let countdown = null;
function showBanner() {
  clearInterval(countdown);
  if (app.needToken) {
    banner.hidden = false;
    replace(banner,
      h('span', {}, h('strong', {}, 'Signed out. '), 'This server requires a bearer token.'),
      h('button', { type: 'button', class: 'btn', id: 'sign-in', onclick: async () => { if (await signIn()) { schedule(0); follow(); } } }, 'Enter token'));
    return;
  }
  if (app.online) {
    banner.hidden = true;
    replace(banner);
    return;
  }
  banner.hidden = false;
  const text = h('span', {});
  const update = () => {
    const s = Math.max(0, Math.ceil((app.retryAt - Date.now()) / 1000));
    replace(text, h('strong', {}, 'The codemode server is not answering. '),
      `Nothing shown here is current. ${s > 0 ? `Retrying in ${s} s.` : 'Retrying…'}`);
  };
  update();
  countdown = setInterval(update, 1000);
  replace(banner, text, h('button', { type: 'button', class: 'btn', id: 'retry', onclick: () => { follow(); schedule(0); } }, 'Retry now'));
}

onConnectivity((online) => {
  if (online === app.online) return;
  app.online = online;
  showBanner();
});

document.addEventListener('visibilitychange', () => { if (!document.hidden) schedule(0); });
window.addEventListener('hashchange', route);
route();
