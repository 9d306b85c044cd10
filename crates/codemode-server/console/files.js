// The file browser: the workspaces' durable files (what code wrote with state.writeFile, and
// results too large to show, saved whole). Read only; everything is rendered as text.

import { get, enc } from './api.js';
import { h, replace, timeEl, jsonView } from './dom.js';

function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function errorBox(err) {
  return h('p', { class: 'notice error', role: 'alert' }, err.message || String(err));
}

export class FilesView {
  mount(root, params) {
    this.workspace = params.workspace || null;
    this.dir = '/';
    this.file = null;
    this.spaces = h('nav', { class: 'ws-list', id: 'workspace-list', 'aria-label': 'Workspaces' }, h('p', { class: 'muted' }, 'Loading…'));
    this.crumbs = h('nav', { class: 'crumbs', id: 'file-crumbs', 'aria-label': 'Directory' });
    this.list = h('div', { id: 'file-list' });
    this.viewer = h('section', { class: 'panel', id: 'file-view', 'aria-live': 'polite', hidden: true });
    replace(root,
      h('header', { class: 'view-head' }, h('div', {},
        h('h1', { tabindex: '-1' }, 'Files'),
        h('p', { class: 'sub' }, 'The workspaces’ durable files: what code wrote with state.writeFile, and results too large to show, saved whole.'))),
      this.spaces, this.crumbs, this.list, this.viewer);
  }

  async refresh() {
    try {
      const all = await get('/api/workspaces');
      if (!all.enabled) {
        replace(this.spaces, h('p', { class: 'empty' }, 'The workspace is off ([workspace] enabled = false in codemode.toml).'));
        replace(this.list);
        return;
      }
      if (!this.workspace) this.workspace = all.configured;
      const spaces = all.workspaces.some((w) => w.name === this.workspace)
        ? all.workspaces
        : [{ name: this.workspace, files: 0, bytes: 0 }, ...all.workspaces];
      const text = JSON.stringify([spaces, this.workspace]);
      if (text !== this.lastSpaces) {
        this.lastSpaces = text;
        replace(this.spaces, spaces.map((w) => h('button', {
          type: 'button',
          class: 'btn ws',
          dataset: { workspace: w.name },
          'aria-pressed': w.name === this.workspace ? 'true' : 'false',
          onclick: () => this.open(w.name, '/'),
        }, h('code', {}, w.name), h('span', { class: 'meta' }, ` ${w.files} file${w.files === 1 ? '' : 's'} · ${bytes(w.bytes)}`))));
      }
      await this.load();
    } catch (err) {
      replace(this.list, errorBox(err));
    }
  }

  /** Shows directory `dir` of `workspace`, closing any open file. */
  async open(workspace, dir) {
    this.workspace = workspace;
    this.dir = dir;
    this.file = null;
    this.viewer.hidden = true;
    this.lastSpaces = null;
    this.last = null;
    await this.refresh();
  }

  async load() {
    const ws = this.workspace;
    const data = await get(`/api/workspace/${enc(ws)}/files?dir=${enc(this.dir)}`);
    const text = JSON.stringify(data);
    if (text === this.last) return;
    this.last = text;
    const parts = this.dir.split('/').filter(Boolean);
    replace(this.crumbs,
      h('button', { type: 'button', class: 'linkish mono', onclick: () => this.open(ws, '/') }, `${ws}:/`),
      parts.map((p, i) => [' / ', h('button', {
        type: 'button',
        class: 'linkish mono',
        onclick: () => this.open(ws, `/${parts.slice(0, i + 1).join('/')}`),
      }, p)]));
    if (!data.entries.length) {
      replace(this.list, h('p', { class: 'empty' }, this.dir === '/' ? 'No files yet. Code writes them with state.writeFile(path, text).' : 'Nothing here.'));
      return;
    }
    replace(this.list,
      h('table', { class: 'files' },
        h('caption', { class: 'sr-only' }, `Files in ${this.dir}`),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Size'), h('th', { scope: 'col' }, 'Changed'))),
        h('tbody', {}, data.entries.map((e) => h('tr', { dataset: { path: e.path, type: e.type } },
          h('td', {}, h('button', {
            type: 'button',
            class: 'linkish mono',
            onclick: () => (e.type === 'directory' ? this.open(ws, e.path) : this.show(e.path)),
          }, e.type === 'directory' ? `${e.name}/` : e.name)),
          h('td', {}, bytes(e.size)),
          h('td', {}, timeEl(e.updatedAt)))))),
      data.note ? h('p', { class: 'muted' }, data.note) : null);
  }

  /** Opens one file: JSON is shown as a value, anything else as text. */
  async show(path) {
    this.file = path;
    this.viewer.hidden = false;
    try {
      const f = await get(`/api/workspace/${enc(this.workspace)}/file?path=${enc(path)}`);
      let body;
      try {
        body = path.endsWith('.json') ? jsonView(JSON.parse(f.content), `Content of ${path}`) : null;
      } catch (_) {
        body = null;
      }
      replace(this.viewer,
        h('h2', {}, h('code', {}, f.path)),
        h('p', { class: 'meta' }, `${bytes(f.size)} · changed `, timeEl(f.updatedAt)),
        body || h('pre', { class: 'file-content', 'aria-label': `Content of ${path}` }, f.content));
    } catch (err) {
      replace(this.viewer, errorBox(err));
    }
  }
}
