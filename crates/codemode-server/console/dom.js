// DOM helpers. Data only ever becomes text nodes or attribute values: never HTML.

/** Creates an element: h('a', {href: '#/x', class: 'k'}, 'text', child, [more]). */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** Replaces every child of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A status or state badge. */
export function badge(text, kind) {
  return h('span', { class: `badge badge-${kind || text}` }, String(text).replace('_', ' '));
}

export function shortId(id) {
  return String(id).slice(0, 8);
}

export function fmtTime(ms) {
  if (!ms) return '';
  const d = new Date(ms);
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

export function ago(ms) {
  if (!ms) return '';
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 5) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return fmtTime(ms);
}

export function timeEl(ms) {
  return h('time', { datetime: new Date(ms || 0).toISOString(), title: fmtTime(ms) }, ago(ms));
}

const FOLD = 160;

/** Pretty JSON as DOM text; strings longer than FOLD characters are folded behind a button. */
export function jsonView(value, label) {
  const pre = h('pre', { class: 'json', 'aria-label': label || 'JSON value' });
  render(pre, value, 0);
  return pre;
}

function render(out, v, depth) {
  const pad = '  '.repeat(depth + 1);
  const close = '  '.repeat(depth);
  if (Array.isArray(v)) {
    if (v.length === 0) return out.append('[]');
    out.append('[\n');
    v.forEach((x, i) => {
      out.append(pad);
      render(out, x, depth + 1);
      out.append(i < v.length - 1 ? ',\n' : '\n');
    });
    out.append(close + ']');
  } else if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 0) return out.append('{}');
    out.append('{\n');
    keys.forEach((k, i) => {
      out.append(pad);
      out.append(h('span', { class: 'j-key' }, JSON.stringify(k)));
      out.append(': ');
      render(out, v[k], depth + 1);
      out.append(i < keys.length - 1 ? ',\n' : '\n');
    });
    out.append(close + '}');
  } else if (typeof v === 'string') {
    out.append(stringView(v));
  } else if (v === undefined) {
    out.append(h('span', { class: 'j-null' }, 'undefined'));
  } else {
    out.append(h('span', { class: v === null ? 'j-null' : `j-${typeof v}` }, JSON.stringify(v)));
  }
}

function stringView(s) {
  const full = JSON.stringify(s);
  if (full.length <= FOLD) return h('span', { class: 'j-string' }, full);
  const span = h('span', { class: 'j-string' }, full.slice(0, FOLD) + '…');
  const more = full.length - FOLD;
  const btn = h('button', {
    type: 'button',
    class: 'fold',
    'aria-expanded': 'false',
    onclick: () => {
      const open = btn.getAttribute('aria-expanded') === 'true';
      span.textContent = open ? full.slice(0, FOLD) + '…' : full;
      btn.setAttribute('aria-expanded', String(!open));
      btn.textContent = open ? `show ${more} more characters` : 'fold';
    },
  }, `show ${more} more characters`);
  return h('span', {}, span, ' ', btn);
}

/** Code with line numbers; `marked` is a set of 1-based line numbers to highlight. */
export function codeView(code, marked, label) {
  const lines = String(code).split('\n');
  const pre = h('pre', { class: 'code', 'aria-label': label || 'Code', tabindex: '0' });
  lines.forEach((line, i) => {
    const n = i + 1;
    const isMarked = marked && marked.has(n);
    pre.append(h('span', { class: isMarked ? 'line marked' : 'line' },
      h('span', { class: 'ln', 'aria-hidden': 'true' }, String(n)),
      isMarked ? h('span', { class: 'sr-only' }, '(pausing call) ') : null,
      line || ' '));
  });
  return pre;
}

/** Lines of `code` holding the call `connector.method(` that an execution is paused at: the
 * occurrence after as many earlier calls of the same method as the log already holds. */
export function pausingLines(code, connector, method, earlierSameCalls) {
  const re = new RegExp(`\\b${escapeRe(connector)}\\s*\\.\\s*${escapeRe(method)}\\s*\\(`, 'g');
  const hits = [];
  for (const m of String(code).matchAll(re)) hits.push(m.index);
  if (hits.length === 0) return new Set();
  const at = hits[Math.min(earlierSameCalls, hits.length - 1)];
  const line = String(code).slice(0, at).split('\n').length;
  return new Set([line]);
}

function escapeRe(s) {
  return String(s).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

let toastTimer = null;
/** A short message in the live region. */
export function toast(text, kind) {
  const el = document.getElementById('toast');
  replace(el, text);
  el.className = `toast show ${kind || ''}`;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.className = 'toast'; }, 4000);
}

/** A modal dialog; resolves with the value `onOk` returns (or true), or null when cancelled.
 * `onOk` may throw to show an error and keep the dialog open. */
export function modal({ title, body, okLabel = 'OK', danger = false, onOk }) {
  return new Promise((resolve) => {
    const error = h('p', { class: 'form-error', role: 'alert' });
    const ok = h('button', { type: 'submit', class: danger ? 'btn danger' : 'btn primary' }, okLabel);
    const cancel = h('button', { type: 'button', class: 'btn', value: 'cancel' }, 'Cancel');
    const titleId = `dlg-${Math.random().toString(36).slice(2)}`;
    const form = h('form', { method: 'dialog' },
      h('h2', { id: titleId }, title),
      h('div', { class: 'dialog-body' }, body),
      error,
      h('div', { class: 'dialog-actions' }, cancel, ok));
    const dlg = h('dialog', { 'aria-labelledby': titleId }, form);
    let result = null;
    cancel.addEventListener('click', () => dlg.close());
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      if (ok.disabled) return;
      ok.disabled = true;
      error.textContent = '';
      try {
        result = onOk ? await onOk() : true;
        if (result === undefined) result = true;
        dlg.close();
      } catch (err) {
        error.textContent = err.message || String(err);
      } finally {
        ok.disabled = false;
      }
    });
    dlg.addEventListener('close', () => { dlg.remove(); resolve(result); });
    document.body.append(dlg);
    dlg.showModal();
    const first = dlg.querySelector('input, textarea, select');
    (first || ok).focus();
  });
}
