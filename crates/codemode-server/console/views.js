// The console's views. Each has mount(root, params), refresh(app) (called whenever an event
// says the data changed) and, optionally, unmount(). Everything from the server is rendered as
// text.

import { get, post, del, enc, stream } from './api.js';
import {
  h, replace, badge, shortId, timeEl, jsonView, codeView, pausingLines, toast, modal,
} from './dom.js';

const STATUSES = ['running', 'paused', 'completed', 'error', 'rejected', 'rolled_back'];

function heading(title, sub, ...extra) {
  return h('header', { class: 'view-head' },
    h('div', {},
      h('h1', { tabindex: '-1' }, title),
      sub ? h('p', { class: 'sub' }, sub) : null),
    ...extra);
}

function path(e) {
  return `${e.connector}.${e.method}`;
}

function execLink(id, text) {
  return h('a', { href: `#/executions/${enc(id)}`, class: 'mono' }, text || shortId(id));
}

function errorBox(err) {
  return h('p', { class: 'notice error', role: 'alert' }, err.message || String(err));
}

/** What an approve (or reject) led to, shown where the action was. */
function outcomeView(out, verb) {
  const id = out.executionId;
  if (out.status === 'completed') {
    return h('div', { class: 'outcome ok' },
      h('p', {}, h('strong', {}, `${verb}. `), 'The execution completed. ', execLink(id, 'Open execution')),
      h('h4', {}, 'Result'), jsonView(out.result, 'Result'),
      out.logs && out.logs.length ? [h('h4', {}, 'Console output'), h('pre', { class: 'logs' }, out.logs.join('\n'))] : null);
  }
  if (out.status === 'paused') {
    const next = (out.pending || [])[0];
    return h('div', { class: 'outcome paused' },
      h('p', {}, h('strong', {}, `${verb}. `),
        'Paused again',
        next ? [' at ', h('code', {}, path(next)), ` (seq ${next.seq})`] : null,
        ': it waits for approval above. ', execLink(id, 'Open execution')));
  }
  if (out.status === 'error') {
    return h('div', { class: 'outcome err' },
      h('p', {}, h('strong', {}, `${verb}. `), 'The execution failed. ', execLink(id, 'Open execution')),
      h('pre', { class: 'error-text' }, out.error || ''),
      out.logs && out.logs.length ? [h('h4', {}, 'Console output'), h('pre', { class: 'logs' }, out.logs.join('\n'))] : null);
  }
  return h('div', { class: 'outcome' },
    h('p', {}, h('strong', {}, `${verb}. `), `Status: ${out.status}. `, execLink(id, 'Open execution')));
}

// ---------------------------------------------------------------- pending approvals

export class PendingView {
  constructor() {
    this.cards = new Map(); // "id:seq" -> card
    this.details = new Map(); // execution id -> execution
  }

  mount(root) {
    // Mounted again on every visit: the cards (and the outcomes shown in them) are kept.
    if (!this.list) {
      this.head = heading('Pending approvals', 'What the model wants to do before it happens, newest first.');
      this.list = h('div', { class: 'cards', id: 'pending-list' });
      this.empty = h('p', { class: 'empty', hidden: true }, 'Nothing waits for approval. New actions appear here by themselves.');
    }
    replace(root, this.head, this.empty, this.list);
  }

  async refresh(app) {
    const role = app.me ? `${app.me.name}:${app.me.role}` : '';
    if (role !== this.role) {
      // Another token: the cards' buttons depend on what it may do.
      this.role = role;
      this.cards.clear();
      replace(this.list);
    }
    const pending = app.pending || [];
    const key = (p) => `${p.executionId}:${p.seq}`;
    // One card per pause: the actions one pass waits on (a batch) are decided together.
    const batches = new Map();
    for (const p of pending) {
      if (!batches.has(p.executionId)) batches.set(p.executionId, []);
      batches.get(p.executionId).push(p);
    }
    const want = new Map([...batches.values()].map((b) => {
      b.sort((x, y) => x.seq - y.seq);
      return [key(b[0]), b];
    }));
    const stale = new Set();
    for (const p of pending) {
      const d = this.details.get(p.executionId);
      if (!d || !d.log.some((e) => e.seq === p.seq && e.state === 'pending')) stale.add(p.executionId);
    }
    await Promise.all([...stale].map((id) => get(`/api/executions/${enc(id)}`)
      .then((e) => this.details.set(id, e)).catch(() => {})));
    for (const [k, b] of want) {
      if (!this.cards.has(k)) this.cards.set(k, this.card(b, this.details.get(b[0].executionId), app));
    }
    for (const [k, c] of this.cards) {
      if (!want.has(k) && !c.handled) c.elsewhere();
    }
    const order = [...this.cards.values()].sort((a, b) => b.at - a.at || b.seq - a.seq);
    const now = [...this.list.children];
    if (order.length !== now.length || order.some((c, i) => c.el !== now[i])) {
      for (const c of order) this.list.append(c.el);
    }
    this.empty.hidden = this.cards.size > 0;
  }

  card(batch, exec, app) {
    const p = batch[0];
    const many = batch.length > 1;
    const name = many ? `${batch.length} actions` : path(p);
    const seqs = many ? `seqs ${batch.map((a) => a.seq).join(', ')}` : `seq ${p.seq}`;
    const before = exec ? exec.log.filter((e) => e.seq < p.seq) : [];
    const marked = new Set();
    for (const a of batch) {
      const same = exec ? exec.log.filter((e) => e.seq < a.seq && e.connector === a.connector && e.method === a.method).length : 0;
      if (exec) for (const line of pausingLines(exec.code, a.connector, a.method, same)) marked.add(line);
    }
    const outcome = h('div', { class: 'card-outcome', role: 'status', 'aria-live': 'polite' });
    const approve = h('button', { type: 'button', class: 'btn primary', 'data-action': 'approve', 'aria-label': `Approve ${name} (execution ${shortId(p.executionId)}, ${seqs})` }, many ? `Approve all ${batch.length}` : 'Approve');
    const reject = h('button', { type: 'button', class: 'btn danger-outline', 'data-action': 'reject', 'aria-label': `Reject ${name} (execution ${shortId(p.executionId)}, ${seqs})` }, many ? 'Reject all' : 'Reject');
    const args = many
      ? h('section', { class: 'card-section batch' },
        h('h3', {}, `Arguments of each (they run together once approved)`),
        batch.map((a) => h('div', { class: 'batch-action', dataset: { seq: String(a.seq), method: path(a) } },
          h('h4', {}, h('span', { class: 'seq' }, `#${a.seq} `), h('code', {}, path(a))),
          jsonView(a.args, `Arguments of ${path(a)} (seq ${a.seq})`))))
      : h('section', { class: 'card-section' }, h('h3', {}, 'Arguments'), jsonView(p.args, `Arguments of ${name}`));
    const dismiss = h('button', { type: 'button', class: 'btn subtle', hidden: true, 'data-action': 'dismiss' }, 'Dismiss');
    const standing = h('button', { type: 'button', class: 'btn', 'data-action': 'approve-standing', title: 'Also approves every later call of the same method in this execution, without asking again' },
      many ? 'Approve all like these in this run' : `Approve all ${path(p)} in this run`);
    // Approve with edits: the person's arguments run instead of the model's (one action only).
    const editor = h('textarea', { class: 'args-edit', 'aria-label': `Arguments to approve ${name} with`, rows: 6, spellcheck: 'false' });
    const editBox = h('div', { class: 'card-section edit-box', hidden: true },
      h('h3', {}, 'Approve with these arguments'),
      h('p', { class: 'muted' }, 'Approve runs the action with the arguments below, checked against its input schema; the log keeps the model’s too.'),
      editor);
    const edit = many ? null : h('button', { type: 'button', class: 'btn subtle', 'data-action': 'edit', 'aria-expanded': 'false' }, 'Edit arguments…');
    if (edit) {
      edit.addEventListener('click', () => {
        const open = editBox.hidden;
        editBox.hidden = !open;
        edit.setAttribute('aria-expanded', String(open));
        edit.textContent = open ? 'Use the model’s arguments' : 'Edit arguments…';
        if (open) {
          editor.value = JSON.stringify(p.args, null, 2);
          editor.focus();
        }
      });
    }
    const decide = !app.me || app.me.allows.decide;
    const actions = decide
      ? h('div', { class: 'card-actions' }, approve, standing, edit, reject, dismiss)
      : h('p', { class: 'notice no-decide' }, `Your token (${app.me.name}) has the role ${app.me.role}: it may run code and read, but not approve or reject. A person with an approve or admin token decides this.`);
    const el = h('article', { class: 'card pending-card', 'aria-label': `Pending: ${name}`, dataset: { key: `${p.executionId}:${p.seq}`, method: name } },
      h('div', { class: 'card-head' },
        h('h2', {}, h('code', {}, name)),
        badge('needs approval', 'approval'),
        h('span', { class: 'meta' }, 'execution ', execLink(p.executionId), ` · ${seqs}`,
          exec ? [' · paused ', timeEl(exec.updatedAt)] : null)),
      args,
      h('section', { class: 'card-section' },
        h('h3', {}, `Already done in this execution (${before.length})`),
        before.length
          ? h('ol', { class: 'mini-log' }, before.map((e) => h('li', {},
            h('span', { class: 'seq' }, `#${e.seq}`), h('code', {}, path(e)), ' ', badge(e.state),
            e.requiresApproval ? badge('approved', 'approval-done') : null)))
          : h('p', { class: 'muted' }, 'Nothing yet: this is its first call.')),
      exec ? h('details', { class: 'card-section', open: exec.code.split('\n').length <= 30 },
        h('summary', {}, 'The model’s code', marked.size ? ' (pausing call marked)' : ''),
        codeView(exec.code, marked, 'The model’s code')) : null,
      decide ? editBox : null, actions, outcome);
    const c = {
      el, handled: false, seq: p.seq, at: exec ? exec.updatedAt : Date.now(),
      elsewhere: () => {
        c.handled = true;
        for (const b of [approve, standing, reject, edit]) if (b) b.disabled = true;
        dismiss.hidden = false;
        el.classList.add('handled');
        replace(outcome, h('div', { class: 'outcome' }, h('p', {}, h('strong', {}, 'Already handled. '),
          many ? 'Someone approved or rejected these actions elsewhere. ' : 'Someone approved or rejected this action elsewhere. ', execLink(p.executionId, 'Open execution'))));
      },
    };
    const buttons = [approve, standing, reject, edit].filter(Boolean);
    const act = async (kind) => {
      if (c.busy || c.handled) return;
      let body;
      let verb = 'Approved';
      if (kind === 'approve' && !editBox.hidden) {
        try {
          body = { args: JSON.parse(editor.value) };
        } catch (err) {
          replace(outcome, errorBox(new Error(`The edited arguments are not JSON: ${err.message}. Nothing was approved.`)));
          editor.focus();
          return;
        }
        verb = 'Approved with your arguments';
      } else if (kind === 'standing') {
        body = { scope: 'execution' };
        verb = 'Approved for the rest of this run';
      }
      c.busy = true;
      for (const b of buttons) b.disabled = true;
      replace(outcome, h('p', { class: 'muted' }, kind === 'reject' ? 'Rejecting…' : 'Approving and resuming…'));
      try {
        const out = kind === 'reject'
          ? await post(`/api/executions/${enc(p.executionId)}/reject`, { seq: p.seq })
          : await post(`/api/executions/${enc(p.executionId)}/approve`, body);
        c.handled = true;
        editBox.hidden = true;
        replace(outcome, kind !== 'reject'
          ? outcomeView(out, verb)
          : h('div', { class: 'outcome rejected' }, h('p', {}, h('strong', {}, 'Rejected. '), many ? 'None of the actions ran; the execution is rejected. ' : 'The action did not run; the execution is rejected. ', execLink(p.executionId, 'Open execution'))));
        el.classList.add('handled');
      } catch (err) {
        if (err.status === 409 || err.status === 404) {
          c.handled = true;
          el.classList.add('handled');
          replace(outcome, h('div', { class: 'outcome conflict' }, h('p', {}, h('strong', {}, 'Already handled. '), err.message)));
        } else {
          for (const b of buttons) b.disabled = false;
          replace(outcome, errorBox(err));
        }
      } finally {
        c.busy = false;
        dismiss.hidden = !c.handled;
        app.poke();
      }
    };
    approve.addEventListener('click', () => act('approve'));
    standing.addEventListener('click', () => act('standing'));
    reject.addEventListener('click', () => act('reject'));
    dismiss.addEventListener('click', () => {
      const next = el.nextElementSibling || el.previousElementSibling;
      el.remove();
      this.cards.delete(`${p.executionId}:${p.seq}`);
      this.empty.hidden = this.cards.size > 0;
      const target = next && next.querySelector('button:not([disabled]), a');
      if (target) target.focus();
    });
    return c;
  }
}

// ---------------------------------------------------------------- executions

export class ExecutionsView {
  mount(root) {
    this.filter = h('select', { id: 'status-filter' },
      h('option', { value: '' }, 'All statuses'),
      STATUSES.map((s) => h('option', { value: s }, s.replace('_', ' '))));
    this.filter.addEventListener('change', () => this.render());
    this.list = h('div', { class: 'exec-list', role: 'list', 'aria-label': 'Executions' });
    replace(root,
      heading('Executions', 'Every run of model code: its calls, results and status.',
        h('div', { class: 'filter' }, h('label', { for: 'status-filter' }, 'Status'), this.filter)),
      this.list);
  }

  async refresh() {
    try {
      const data = await get('/api/executions?limit=200');
      const text = JSON.stringify(data);
      if (text === this.last) return;
      this.last = text;
      this.data = data;
      this.render();
    } catch (err) {
      if (!this.data) replace(this.list, errorBox(err));
    }
  }

  render() {
    if (!this.data) return;
    const want = this.filter.value;
    const rows = this.data.filter((e) => !want || e.status === want);
    if (!rows.length) {
      replace(this.list, h('p', { class: 'empty' }, want ? `No ${want.replace('_', ' ')} executions.` : 'No executions yet.'));
      return;
    }
    replace(this.list, rows.map((e) => {
      const first = e.code.split('\n').map((l) => l.trim()).find((l) => l) || '';
      const calls = e.calls;
      return h('a', { class: 'exec-row', role: 'listitem', href: `#/executions/${enc(e.id)}`, dataset: { id: e.id, status: e.status } },
        h('span', { class: 'col-status' }, badge(e.status)),
        h('span', { class: 'col-id mono' }, shortId(e.id)),
        h('span', { class: 'col-code mono' }, first.length > 90 ? `${first.slice(0, 90)}…` : first),
        h('span', { class: 'col-calls' }, `${calls} call${calls === 1 ? '' : 's'}`),
        h('span', { class: 'col-time' }, timeEl(e.updatedAt)));
    }));
  }
}

export class ExecutionView {
  mount(root, params) {
    this.id = params.id;
    this.root = root;
    this.report = null;
    this.live = { calls: new Map(), lines: [] };
    this.liveEl = h('section', { class: 'panel live', id: 'live', 'aria-live': 'polite' });
    this.renderLive();
    replace(root, h('p', { class: 'muted' }, 'Loading…'));
    this.follow();
  }

  unmount() {
    this.closed = true;
    clearTimeout(this.retry);
    if (this.events) this.events.close();
  }

  /** Follows this execution's events: its running pass's calls and console lines, live. */
  follow() {
    if (this.closed) return;
    this.events = stream(`/api/executions/${enc(this.id)}/events`, { onEvent: (e) => this.onLive(e) });
    this.events.done.then(({ status }) => {
      if (this.closed || status === -1 || status === 404) return;
      this.retry = setTimeout(() => this.follow(), 2000);
    });
  }

  onLive(e) {
    const d = e.data;
    if (e.event === 'status_changed' && d.status === 'running') {
      this.live = { calls: new Map(), lines: [] };
    } else if (e.event === 'call_started') {
      this.live.calls.set(d.seq, { path: `${d.connector}.${d.method}`, seq: d.seq, started: Date.now() });
    } else if (e.event === 'call_ended') {
      const c = this.live.calls.get(d.seq) || { path: `${d.connector}.${d.method}`, seq: d.seq };
      c.durationMs = d.durationMs;
      c.ok = d.ok;
      this.live.calls.set(d.seq, c);
    } else if (e.event === 'console') {
      this.live.lines.push(d.line);
    } else {
      return;
    }
    this.renderLive();
  }

  renderLive() {
    const calls = [...this.live.calls.values()].sort((a, b) => a.seq - b.seq);
    replace(this.liveEl,
      h('h2', {}, 'This pass, live'),
      calls.length
        ? h('ol', { class: 'mini-log', id: 'live-calls' }, calls.map((c) => h('li', { dataset: { seq: String(c.seq) } },
          h('span', { class: 'seq' }, `#${c.seq}`), h('code', {}, c.path), ' ',
          c.durationMs === undefined ? badge('running') : badge(c.ok ? `done in ${c.durationMs} ms` : `failed after ${c.durationMs} ms`, c.ok ? 'applied' : 'failed'))))
        : h('p', { class: 'muted' }, 'No connector calls yet in this pass.'),
      this.live.lines.length ? h('pre', { class: 'logs', id: 'live-console' }, this.live.lines.join('\n')) : null);
  }

  async refresh(app) {
    this.me = app && app.me;
    try {
      const e = await get(`/api/executions/${enc(this.id)}`);
      const text = JSON.stringify(e);
      if (text === this.last) return;
      this.last = text;
      this.exec = e;
      this.render();
    } catch (err) {
      if (err.status === 404) {
        this.last = null;
        replace(this.root, h('a', { href: '#/executions', class: 'back' }, '← Executions'),
          h('p', { class: 'empty' }, `Execution ${this.id} does not exist (it was deleted or pruned).`));
      } else if (!this.exec) {
        replace(this.root, errorBox(err));
      }
    }
  }

  render() {
    const e = this.exec;
    const focused = document.activeElement && this.root.contains(document.activeElement)
      ? document.activeElement.dataset.action : null;
    const applied = e.log.filter((x) => x.state === 'applied' && x.connector !== 'codemode');
    const rollback = h('button', {
      type: 'button', class: 'btn', 'data-action': 'rollback',
      disabled: e.status === 'running' || applied.length === 0,
      title: e.status === 'running' ? 'A running execution cannot be rolled back' : applied.length === 0 ? 'Nothing applied to revert' : null,
      onclick: () => this.rollback(),
    }, 'Roll back…');
    const save = e.status === 'completed'
      ? h('button', { type: 'button', class: 'btn', 'data-action': 'save', onclick: () => this.save() }, 'Save as snippet…')
      : null;
    const remove = h('button', { type: 'button', class: 'btn danger-outline', 'data-action': 'delete', onclick: () => this.remove() }, 'Delete…');
    const calls = e.log;
    const may = (what) => !this.me || this.me.allows[what];
    if (!may('decide')) rollback.hidden = true;
    if (save && !may('admin')) save.hidden = true;
    if (!may('admin')) remove.hidden = true;
    replace(this.root,
      h('a', { href: '#/executions', class: 'back' }, '← Executions'),
      heading(h('span', {}, 'Execution ', h('span', { class: 'mono' }, shortId(e.id))), null,
        h('div', { class: 'head-actions' }, rollback, save, remove)),
      h('dl', { class: 'facts' },
        h('div', {}, h('dt', {}, 'Status'), h('dd', { id: 'exec-status' }, badge(e.status))),
        h('div', {}, h('dt', {}, 'Id'), h('dd', { class: 'mono' }, e.id)),
        h('div', {}, h('dt', {}, 'Started'), h('dd', {}, timeEl(e.createdAt))),
        h('div', {}, h('dt', {}, 'Updated'), h('dd', {}, timeEl(e.updatedAt))),
        h('div', {}, h('dt', {}, 'Connectors'), h('dd', {}, (e.connectors || []).join(', ') || '—'))),
      this.report ? this.reportView(this.report) : null,
      e.status === 'paused' ? h('p', { class: 'notice' }, 'This execution waits for approval. ', h('a', { href: '#/pending' }, 'Review it in Pending approvals')) : null,
      e.status === 'running' ? this.liveEl : null,
      'result' in e && e.result !== undefined && e.status !== 'error'
        ? h('section', { class: 'panel' }, h('h2', {}, 'Result'), jsonView(e.result, 'Result')) : null,
      e.error ? h('section', { class: 'panel' }, h('h2', {}, 'Error'), h('pre', { class: 'error-text' }, e.error)) : null,
      h('section', { class: 'panel' }, h('h2', {}, `Timeline (${calls.length} call${calls.length === 1 ? '' : 's'})`),
        calls.length
          ? h('ol', { class: 'timeline', id: 'timeline' }, calls.map((x) => this.entry(x)))
          : h('p', { class: 'muted' }, 'No connector calls.')),
      e.logs && e.logs.length
        ? h('section', { class: 'panel' }, h('h2', {}, 'Console output'), h('pre', { class: 'logs' }, e.logs.join('\n'))) : null,
      h('section', { class: 'panel' }, h('h2', {}, 'Code'), codeView(e.code, pendingLines(e), 'The model’s code')));
    if (focused) {
      const again = this.root.querySelector(`[data-action="${focused}"]`);
      if (again && !again.disabled) again.focus();
    }
  }

  entry(x) {
    return h('li', { class: `entry state-${x.state}`, dataset: { seq: x.seq, state: x.state } },
      h('div', { class: 'entry-head' },
        h('span', { class: 'seq', 'aria-label': `seq ${x.seq}` }, `#${x.seq}`),
        h('code', { class: 'entry-path' }, path(x)),
        badge(x.state),
        x.requiresApproval ? badge('requires approval', 'approval') : null),
      h('div', { class: 'entry-body' },
        h('div', {}, h('h4', {}, 'Arguments'), jsonView(x.args, `Arguments of #${x.seq}`)),
        x.error !== undefined && x.error !== null
          ? h('div', {}, h('h4', {}, 'Error'), h('pre', { class: 'error-text' }, String(x.error)))
          : x.result !== undefined
            ? h('div', {}, h('h4', {}, 'Result'), jsonView(x.result, `Result of #${x.seq}`))
            : h('div', {}, h('h4', {}, 'Result'), h('p', { class: 'muted' }, x.state === 'pending' ? 'Not run: waiting for approval.' : '—'))));
  }

  reportView(r) {
    const bySeq = new Map(this.exec.log.map((x) => [x.seq, x]));
    const name = (s) => (bySeq.get(s) ? path(bySeq.get(s)) : '?');
    return h('section', { class: 'panel report', id: 'rollback-report', role: 'status' },
      h('h2', {}, 'Rollback'),
      h('p', {}, `Status: ${r.status.replace('_', ' ')}.`),
      h('ul', {},
        h('li', {}, `Reverted (${r.reverted.length}): `, r.reverted.map((s) => `#${s} ${name(s)}`).join(', ') || 'nothing'),
        r.skipped.length ? h('li', {}, `Cannot be reverted, no revert declared (${r.skipped.length}): `, r.skipped.map((s) => `#${s} ${name(s)}`).join(', ')) : null,
        r.failed.length ? h('li', { class: 'error-text' }, `Failed (${r.failed.length}): `, r.failed.map((f) => `#${f.seq} ${f.path}: ${f.error}`).join('; ')) : null));
  }

  async rollback() {
    const e = this.exec;
    const applied = e.log.filter((x) => x.state === 'applied' && x.connector !== 'codemode').reverse();
    const done = e.log.filter((x) => x.state === 'reverted');
    // What this server can revert: the same test the runtime makes (connector, method, revert).
    let known = null;
    try {
      known = await get('/api/connectors');
    } catch (err) {
      if (err.status === 401) return;
    }
    const byName = new Map(((known && known.connectors) || []).map((c) => [c.name, c]));
    const plan = { revert: [], cannot: [], reads: [] };
    for (const x of applied) {
      if (!known) {
        plan.revert.push([x, '']);
        continue;
      }
      const c = byName.get(x.connector);
      const m = c && c.methods.find((mm) => mm.name === x.method);
      if (!c) plan.cannot.push([x, `connector ${x.connector} is not configured on this server`]);
      else if (!m) plan.cannot.push([x, `${x.connector} has no method ${x.method} any more`]);
      else if (m.hasRevert) plan.revert.push([x, '']);
      else if (m.readOnly) plan.reads.push([x, 'a read: nothing changed']);
      else plan.cannot.push([x, 'no revert declared: it stays as it is']);
    }
    const item = ([x, why]) => h('li', { dataset: { seq: x.seq } }, h('span', { class: 'seq' }, `#${x.seq}`), ' ', h('code', {}, path(x)),
      x.requiresApproval ? ' (was approved)' : '', why ? h('span', { class: 'muted' }, ` — ${why}`) : '');
    const body = h('div', {},
      plan.revert.length
        ? [h('p', {}, 'Will be reverted, newest first, with the revert each tool declares:'),
          h('ul', { class: 'plan', id: 'rollback-plan' }, plan.revert.map(item))]
        : h('p', { class: 'plan', id: 'rollback-plan' }, 'Nothing here can be reverted by this server.'),
      plan.cannot.length
        ? [h('p', {}, 'Cannot be reverted (reported as skipped):'),
          h('ul', { class: 'plan-cannot', id: 'rollback-cannot' }, plan.cannot.map(item))]
        : h('p', { class: 'muted' }, 'Cannot be reverted: nothing (every applied write here has a revert).'),
      plan.reads.length
        ? [h('p', { class: 'muted' }, 'Reads, nothing to undo:'), h('ul', { class: 'plan-reads muted', id: 'rollback-reads' }, plan.reads.map(item))]
        : null,
      known ? null : h('p', { class: 'error-text' }, 'The connectors could not be read: which calls have a revert is unknown.'),
      h('p', { class: 'muted' }, 'Pending and failed calls never ran.'),
      done.length ? h('p', { class: 'muted' }, `Already reverted: ${done.map((x) => `#${x.seq} ${path(x)}`).join(', ')}.`) : null);
    const report = await modal({
      title: `Roll back execution ${shortId(e.id)}?`,
      body,
      okLabel: 'Roll back',
      danger: true,
      onOk: () => post(`/api/executions/${enc(e.id)}/rollback`),
    });
    if (!report) return;
    this.report = report;
    this.last = null;
    toast(`Rolled back: ${report.reverted.length} reverted${report.skipped.length ? `, ${report.skipped.length} skipped` : ''}${report.failed.length ? `, ${report.failed.length} failed` : ''}.`, report.failed.length ? 'error' : 'ok');
    await this.refresh();
  }

  async save() {
    const e = this.exec;
    const name = h('input', { id: 'snippet-name', name: 'name', required: true, pattern: '[A-Za-z_$][A-Za-z0-9_$]*', autocomplete: 'off', spellcheck: 'false' });
    const desc = h('textarea', { id: 'snippet-description', name: 'description', rows: '3' });
    const body = h('div', { class: 'form' },
      h('label', { for: 'snippet-name' }, 'Name'), name,
      h('p', { class: 'hint' }, 'Letters, digits and _; the model runs it with codemode.run(name, input).'),
      h('label', { for: 'snippet-description' }, 'Description'), desc);
    const saved = await modal({
      title: 'Save as snippet',
      body,
      okLabel: 'Save snippet',
      onOk: () => {
        if (!name.value.trim()) throw new Error('Enter a name.');
        return post('/api/snippets', {
          name: name.value.trim(),
          executionId: e.id,
          description: desc.value.trim() || undefined,
        });
      },
    });
    if (saved) toast(`Saved snippet ${saved.name}.`, 'ok');
  }

  async remove() {
    const e = this.exec;
    const ok = await modal({
      title: `Delete execution ${shortId(e.id)}?`,
      body: h('p', {}, 'Its log and audit trail are removed. Nothing it did is reverted: roll back first if you mean to undo it.'),
      okLabel: 'Delete',
      danger: true,
      onOk: () => del(`/api/executions/${enc(e.id)}`),
    });
    if (ok) {
      toast('Execution deleted.', 'ok');
      location.hash = '#/executions';
    }
  }
}

function pendingLines(e) {
  const p = e.log.find((x) => x.state === 'pending');
  if (!p) return new Set();
  const same = e.log.filter((x) => x.seq < p.seq && x.connector === p.connector && x.method === p.method).length;
  return pausingLines(e.code, p.connector, p.method, same);
}

// ---------------------------------------------------------------- snippets

export class SnippetsView {
  constructor() {
    this.types = new Map();
  }

  mount(root) {
    this.list = h('div', { class: 'cards', id: 'snippet-list' });
    replace(root, heading('Snippets', 'Saved code the model can run with codemode.run(name, input).'), this.list);
  }

  async refresh() {
    try {
      const data = await get('/api/snippets');
      const text = JSON.stringify(data);
      if (text === this.last) return;
      this.last = text;
      await Promise.all(data.map((s) => {
        const k = `${s.name}:${s.savedAt}`;
        if (this.types.has(k)) return null;
        return get(`/api/describe?target=${enc(s.name)}`).then((d) => this.types.set(k, d.types)).catch(() => {});
      }));
      this.render(data);
    } catch (err) {
      replace(this.list, errorBox(err));
    }
  }

  render(data) {
    if (!data.length) {
      replace(this.list, h('p', { class: 'empty' }, 'No snippets yet. Save one from a completed execution.'));
      return;
    }
    replace(this.list, data.map((s) => {
      const types = this.types.get(`${s.name}:${s.savedAt}`);
      return h('article', { class: 'card', dataset: { snippet: s.name }, 'aria-label': `Snippet ${s.name}` },
        h('div', { class: 'card-head' },
          h('h2', {}, h('code', {}, s.name)),
          h('span', { class: 'meta' }, (s.connectors || []).join(', '), ' · saved ', timeEl(s.savedAt)),
          h('div', { class: 'card-actions inline' },
            h('button', { type: 'button', class: 'btn danger-outline', 'aria-label': `Delete snippet ${s.name}`, onclick: () => this.remove(s.name) }, 'Delete…'))),
        s.description ? h('p', {}, s.description) : h('p', { class: 'muted' }, 'No description.'),
        h('section', { class: 'card-section' }, h('h3', {}, 'Input type'),
          h('pre', { class: 'code ts' }, types || (s.inputSchema ? JSON.stringify(s.inputSchema, null, 2) : 'unknown'))),
        h('details', { class: 'card-section' }, h('summary', {}, 'Code'), codeView(s.code, null, `Code of ${s.name}`)));
    }));
  }

  async remove(name) {
    const ok = await modal({
      title: `Delete snippet ${name}?`,
      body: h('p', {}, 'The model will no longer find or run it.'),
      okLabel: 'Delete',
      danger: true,
      onOk: () => del(`/api/snippets/${enc(name)}`),
    });
    if (ok) {
      toast(`Deleted snippet ${name}.`, 'ok');
      this.last = null;
      await this.refresh();
    }
  }
}

// ---------------------------------------------------------------- connectors

export class ConnectorsView {
  mount(root) {
    this.root = root;
    this.list = h('div', { class: 'cards', id: 'connector-list' }, h('p', { class: 'muted' }, 'Loading…'));
    const q = h('input', { id: 'search-q', type: 'search', placeholder: 'e.g. create task', autocomplete: 'off' });
    this.results = h('div', { id: 'search-results', 'aria-live': 'polite' });
    const target = h('input', { id: 'describe-target', type: 'text', placeholder: 'connector, connector.method or snippet', autocomplete: 'off', spellcheck: 'false' });
    this.described = h('div', { id: 'describe-output', 'aria-live': 'polite' });
    const searchForm = h('form', { class: 'inline-form', role: 'search' },
      h('label', { for: 'search-q' }, 'Search methods and snippets'),
      h('div', { class: 'row' }, q, h('button', { type: 'submit', class: 'btn' }, 'Search')));
    searchForm.addEventListener('submit', (ev) => { ev.preventDefault(); this.search(q.value); });
    const describeForm = h('form', { class: 'inline-form' },
      h('label', { for: 'describe-target' }, 'Describe'),
      h('div', { class: 'row' }, target, h('button', { type: 'submit', class: 'btn' }, 'Describe')));
    describeForm.addEventListener('submit', (ev) => { ev.preventDefault(); this.describe(target.value); });
    this.target = target;
    replace(root,
      heading('Connectors', 'What the model sees: each connector, its instructions and its methods.'),
      this.list,
      h('section', { class: 'panel' }, h('h2', {}, 'Search and describe'),
        h('div', { class: 'two-col' }, h('div', {}, searchForm, this.results), h('div', {}, describeForm, this.described))));
    this.load();
  }

  async load() {
    try {
      const health = await get('/api/connectors');
      const cards = await Promise.all(health.connectors.map(async (c) => {
        const name = c.name;
        const d = await get(`/api/describe?target=${enc(name)}`).catch(() => null);
        const methods = [...c.methods].sort((a, b) => a.name.localeCompare(b.name));
        return h('article', { class: 'card', dataset: { connector: name }, 'aria-label': `Connector ${name}` },
          h('div', { class: 'card-head' }, h('h2', {}, h('code', {}, name)),
            c.hint ? h('span', { class: 'muted' }, c.hint) : null,
            h('span', { class: 'meta' }, `${methods.length} method${methods.length === 1 ? '' : 's'}`)),
          c.instructions ? h('p', { class: 'instructions' }, c.instructions) : null,
          h('table', { class: 'methods' },
            h('caption', { class: 'sr-only' }, `Methods of ${name}`),
            h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Method'), h('th', { scope: 'col' }, 'Approval'), h('th', { scope: 'col' }, 'Rollback'), h('th', { scope: 'col' }, 'Description'))),
            h('tbody', {}, methods.map((m) => h('tr', { dataset: { method: m.name } },
              h('td', {}, h('button', { type: 'button', class: 'linkish mono', onclick: () => { this.target.value = `${name}.${m.name}`; this.describe(`${name}.${m.name}`); } }, m.name)),
              h('td', {}, m.requiresApproval ? badge('requires approval', 'approval') : badge('runs freely', 'free')),
              h('td', {}, m.hasRevert ? badge('revertible', 'free') : m.readOnly ? badge('read-only', 'kind') : badge('no revert', 'error')),
              h('td', {}, m.description || ''))))),
          d ? h('details', { class: 'card-section' }, h('summary', {}, 'TypeScript declarations'), h('pre', { class: 'code ts' }, d.types)) : null);
      }));
      const failed = (health.failed || []).map((f) => h('article', { class: 'card failed' },
        h('div', { class: 'card-head' }, h('h2', {}, h('code', {}, f.connector)), badge('failed', 'error')),
        h('pre', { class: 'error-text' }, f.error)));
      replace(this.list, cards, failed, cards.length + failed.length ? null : h('p', { class: 'empty' }, 'No connectors configured.'));
    } catch (err) {
      replace(this.list, errorBox(err));
    }
  }

  async search(q) {
    if (!q.trim()) return;
    try {
      const r = await get(`/api/search?q=${enc(q)}`);
      replace(this.results,
        h('p', { class: 'muted' }, `${r.total} match${r.total === 1 ? '' : 'es'}${r.truncated ? ' (first ones shown)' : ''}.`, r.note ? ` ${r.note}` : ''),
        h('ul', { class: 'results' }, r.results.map((x) => h('li', {},
          h('button', { type: 'button', class: 'linkish mono', onclick: () => { this.target.value = x.path; this.describe(x.path); } }, x.path),
          ' ', badge(x.kind, 'kind'),
          x.requiresApproval ? [' ', badge('requires approval', 'approval')] : null,
          x.description ? h('div', { class: 'muted' }, x.description) : null))));
    } catch (err) {
      replace(this.results, errorBox(err));
    }
  }

  async describe(target) {
    if (!target.trim()) return;
    try {
      const d = await get(`/api/describe?target=${enc(target.trim())}`);
      replace(this.described,
        h('p', {}, h('code', {}, d.path), ' ', badge(d.kind, 'kind')),
        d.description ? h('p', {}, d.description) : null,
        h('pre', { class: 'code ts' }, d.types));
    } catch (err) {
      replace(this.described, errorBox(err));
    }
  }
}
