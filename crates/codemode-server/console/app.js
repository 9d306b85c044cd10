// The console's shell: hash routing, polling for live updates, the "server went away" banner.

import { get, onConnectivity, signIn } from './api.js';
import { h, replace } from './dom.js';
import {
  PendingView, ExecutionsView, ExecutionView, SnippetsView, ConnectorsView,
} from './views.js';
import { FilesView } from './files.js';

const POLL_MS = 2000;
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
  /** Polls now (after an action), instead of at the next tick. */
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

function schedule(ms) {
  clearTimeout(app.timer);
  app.timer = setTimeout(tick, ms);
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
    app.failures = 0;
  } catch (err) {
    if (err.status === 401) app.needToken = true;
    if (err.status === 0 || err.status === 401) app.failures += 1;
  } finally {
    app.ticking = false;
  }
  const wait = app.online && !app.needToken ? POLL_MS : Math.min(15000, 1000 * 2 ** Math.min(app.failures, 4));
  app.retryAt = Date.now() + wait;
  showBanner();
  schedule(document.hidden ? Math.max(wait, 10000) : wait);
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
      h('button', { type: 'button', class: 'btn', id: 'sign-in', onclick: async () => { if (await signIn()) schedule(0); } }, 'Enter token'));
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
  replace(banner, text, h('button', { type: 'button', class: 'btn', id: 'retry', onclick: () => schedule(0) }, 'Retry now'));
}

onConnectivity((online) => {
  if (online === app.online) return;
  app.online = online;
  showBanner();
});

document.addEventListener('visibilitychange', () => { if (!document.hidden) schedule(0); });
window.addEventListener('hashchange', route);
route();
