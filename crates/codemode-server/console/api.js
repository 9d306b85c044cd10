// The JSON control API: bearer token from sessionStorage, 401 asks for one, network failures
// are reported to whoever listens (the "server went away" banner).

import { h, modal } from './dom.js';

const TOKEN_KEY = 'codemode.token';

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

const listeners = new Set();
/** `fn(online: boolean)` after every request. */
export function onConnectivity(fn) {
  listeners.add(fn);
}
function report(online) {
  for (const fn of listeners) fn(online);
}

let asking = null;
let declined = false;

/** Asks for the token now (after the person dismissed the prompt once). */
export function signIn() {
  declined = false;
  return askToken(false);
}

/** Asks for the token once; concurrent 401s wait on the same prompt. */
function askToken(refused) {
  if (!asking) {
    const input = h('input', {
      id: 'token-input', type: 'password', autocomplete: 'current-password', required: true,
      spellcheck: 'false',
    });
    const body = h('div', {},
      h('p', {}, refused
        ? 'The server refused that token. Enter the bearer token again.'
        : 'This server requires a bearer token (the value of the variable given to codemode serve --token-env). It is kept for this tab only.'),
      h('label', { for: 'token-input' }, 'Bearer token'),
      input);
    asking = modal({
      title: 'Sign in to codemode',
      body,
      okLabel: 'Continue',
      onOk: () => {
        const t = input.value.trim();
        if (!t) throw new Error('Enter a token.');
        sessionStorage.setItem(TOKEN_KEY, t);
        return true;
      },
    }).finally(() => { asking = null; });
  }
  return asking;
}

/** One API call; resolves with the parsed JSON body or throws ApiError (status 0: no server). */
export async function api(method, path, body) {
  for (;;) {
    const token = sessionStorage.getItem(TOKEN_KEY);
    const headers = { Accept: 'application/json' };
    if (token) headers.Authorization = `Bearer ${token}`;
    // The server takes state-changing requests only as JSON, from this origin.
    if (body !== undefined || method !== 'GET') headers['Content-Type'] = 'application/json';
    let resp;
    try {
      resp = await fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: 'no-store',
      });
    } catch (e) {
      report(false);
      throw new ApiError(0, 'The codemode server cannot be reached.');
    }
    report(true);
    if (resp.status === 401) {
      if (token && sessionStorage.getItem(TOKEN_KEY) === token) sessionStorage.removeItem(TOKEN_KEY);
      const ok = declined ? null : await askToken(Boolean(token));
      if (!ok) {
        declined = true;
        throw new ApiError(401, 'A bearer token is required.');
      }
      continue;
    }
    let data = null;
    try {
      data = await resp.json();
    } catch {
      data = null;
    }
    if (!resp.ok) {
      throw new ApiError(resp.status, (data && data.error) || `HTTP ${resp.status}`, data);
    }
    return data;
  }
}

export const get = (path) => api('GET', path);
export const post = (path, body) => api('POST', path, body === undefined ? {} : body);
export const del = (path) => api('DELETE', path);
export const enc = encodeURIComponent;

/**
 * Follows a server-sent event stream with the bearer token (EventSource cannot send one).
 * `onOpen()` once the server says it is ready, `onEvent({id, event, data})` per event.
 * Returns `{close(), done}`: `done` resolves `{status}` when the stream ends (0: no server or
 * cut off, 401: needs a token, 200: ended by the server, -1: closed here).
 */
export function stream(path, { after, onOpen, onEvent } = {}) {
  const ctl = new AbortController();
  const done = (async () => {
    const token = sessionStorage.getItem(TOKEN_KEY);
    const headers = { Accept: 'text/event-stream' };
    if (token) headers.Authorization = `Bearer ${token}`;
    if (after) headers['Last-Event-ID'] = String(after);
    let resp;
    try {
      resp = await fetch(path, { headers, cache: 'no-store', signal: ctl.signal });
    } catch {
      if (ctl.signal.aborted) return { status: -1 };
      report(false);
      return { status: 0 };
    }
    report(true);
    if (!resp.ok) return { status: resp.status };
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for (;;) {
        const { value, done: end } = await reader.read();
        if (end) return { status: 200 };
        buf += decoder.decode(value, { stream: true }).replace(/\r\n/g, '\n');
        let at;
        while ((at = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, at);
          buf = buf.slice(at + 2);
          const e = { id: null, event: '', data: '' };
          for (const line of block.split('\n')) {
            if (line === ': ready') { if (onOpen) onOpen(); }
            else if (line.startsWith('id: ')) e.id = Number(line.slice(4));
            else if (line.startsWith('event: ')) e.event = line.slice(7);
            else if (line.startsWith('data: ')) e.data += line.slice(6);
          }
          if (!e.event) continue;
          try { e.data = JSON.parse(e.data); } catch { /* kept as text */ }
          if (onEvent) onEvent(e);
        }
      }
    } catch {
      if (ctl.signal.aborted) return { status: -1 };
      report(false);
      return { status: 0 };
    }
  })();
  return { close: () => ctl.abort(), done };
}
