// The web console in headless Chromium against the real `codemode serve`.
// Started by tests/console.rs with:
//   CONSOLE_URL        a server on loopback (no token)
//   CONSOLE_TOKEN_URL  a server bound off loopback that requires CONSOLE_TOKEN
//   CODEMODE_BIN       the binary, to start (and stop) a server of our own
//   FIXTURES           the fixtures directory holding node_modules/playwright-core
//   SCREENSHOTS        where to save a screenshot of each view

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const require = createRequire(path.join(process.env.FIXTURES, 'package.json'));
const { chromium } = require('playwright-core');

const URL = process.env.CONSOLE_URL;
const TOKEN_URL = process.env.CONSOLE_TOKEN_URL;
const TOKEN = process.env.CONSOLE_TOKEN;
const SHOTS = process.env.SCREENSHOTS;
const WAIT = 20000;

let context;
let profile;

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  profile = mkdtempSync(path.join(tmpdir(), 'codemode-console-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
  context.setDefaultTimeout(WAIT);
});

after(async () => {
  if (context) await context.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/** A new tab that fails the test on any page error or CSP violation. */
async function tab(url) {
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource|ERR_CONNECTION_REFUSED|ERR_EMPTY_RESPONSE/.test(m.text())) {
      page.errors.push(m.text());
    }
  });
  if (url) await page.goto(url);
  return page;
}

async function done(page) {
  assert.deepEqual(page.errors, [], 'the page logged errors');
  await page.close();
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

async function api(base, method, route, body, token) {
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const r = await fetch(base + route, { method, headers, body: body ? JSON.stringify(body) : undefined });
  return { status: r.status, body: await r.json() };
}

async function run(code, base = URL, token) {
  const r = await api(base, 'POST', '/api/run', { code }, token);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

const card = (page, id, seq) => page.locator(`.pending-card[data-key="${id}:${seq}"]`);

test('the page is served with a strict policy and embedded assets only', async () => {
  const r = await fetch(URL + '/');
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^text\/html/);
  assert.match(r.headers.get('content-security-policy'), /^default-src 'self'/);
  const js = await fetch(URL + '/console/app.js');
  assert.match(js.headers.get('content-type'), /^text\/javascript/);
  const page = await tab();
  const remote = [];
  page.on('request', (req) => { if (!req.url().startsWith(URL)) remote.push(req.url()); });
  await page.goto(URL + '/#/pending');
  await page.locator('h1', { hasText: 'Pending approvals' }).waitFor();
  assert.deepEqual(remote, []);
  await done(page);
});

test('approve in the page: HTML in arguments is text, the resumed run completes in place', async () => {
  const evil = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><b>bold</b>';
  const long = 'x'.repeat(500);
  const out = await run(`
    await tasks.add_note({ text: ${JSON.stringify(long)} });
    const t = await tasks.create_task({ title: ${JSON.stringify(evil)} });
    console.log('created', t.id);
    return { created: t.title };
  `);
  assert.equal(out.status, 'paused');
  const id = out.executionId;
  const page = await tab(URL + '/#/pending');
  const c = card(page, id, 1);
  await c.waitFor();
  // Arguments are text: the markup shows literally and nothing ran.
  await c.locator('pre.json', { hasText: '<script>' }).waitFor();
  assert.ok((await c.locator('pre.json').first().textContent()).includes(evil.replace(/"/g, '\\"')));
  assert.equal(await c.locator('img, script, b').count(), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  // The applied call before it, the code with the pausing call marked.
  await c.locator('.mini-log', { hasText: 'tasks.add_note' }).waitFor();
  assert.match(await c.locator('.code .line.marked').textContent(), /tasks\.create_task/);
  // The nav counts what waits.
  assert.notEqual(await page.locator('#pending-count').textContent(), '');
  await shot(page, '01-pending');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, '01-pending-narrow');
  await page.setViewportSize({ width: 1280, height: 900 });

  // Keyboard: focus Approve and press Enter.
  await c.locator('button[data-action="approve"]').focus();
  await page.keyboard.press('Enter');
  const outcome = c.locator('.outcome.ok');
  await outcome.waitFor();
  assert.match(await outcome.textContent(), /completed/);
  assert.ok((await outcome.textContent()).includes(evil.replace(/"/g, '\\"')));
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  await shot(page, '02-approved');
  const after = await api(URL, 'GET', `/api/executions/${id}`);
  assert.equal(after.body.status, 'completed');
  await done(page);
});

test('paused again: the outcome says so and the next action appears by itself', async () => {
  const out = await run(`
    const t = await tasks.create_task({ title: 'two steps' });
    return await tasks.complete_task({ id: t.id });
  `);
  const id = out.executionId;
  const page = await tab(URL + '/#/pending');
  await card(page, id, 0).locator('button[data-action="approve"]').click();
  await card(page, id, 0).locator('.outcome.paused', { hasText: 'tasks.complete_task' }).waitFor();
  const next = card(page, id, 1);
  await next.waitFor();
  await next.locator('button[data-action="approve"]').click();
  await next.locator('.outcome.ok', { hasText: 'completed' }).waitFor();
  await done(page);
});

test('reject in the page', async () => {
  const out = await run("return await tasks.create_task({ title: 'do not do this' })");
  const id = out.executionId;
  const page = await tab(URL + '/#/pending');
  const c = card(page, id, 0);
  await c.locator('button[data-action="reject"]').click();
  await c.locator('.outcome.rejected').waitFor();
  assert.equal((await api(URL, 'GET', `/api/executions/${id}`)).body.status, 'rejected');
  await shot(page, '03-rejected');
  await done(page);
});

test('a batch of actions paused together is one card with one pair of buttons', async () => {
  const out = await run(`
    const done = await Promise.all(['first of two', 'second of two'].map((title) => tasks.create_task({ title })));
    return done.map((t) => t.title);
  `);
  assert.equal(out.status, 'paused');
  assert.equal(out.pending.length, 2, JSON.stringify(out));
  const id = out.executionId;
  const page = await tab(URL + '/#/pending');
  const c = card(page, id, 0);
  await c.waitFor();
  // Both actions are on the one card, and no second card is made for seq 1.
  await c.locator('.batch-action[data-seq="1"] pre.json', { hasText: 'second of two' }).waitFor();
  await c.locator('.batch-action[data-seq="0"] pre.json', { hasText: 'first of two' }).waitFor();
  assert.equal(await card(page, id, 1).count(), 0);
  assert.equal(await c.locator('button[data-action="approve"]').count(), 1);
  assert.equal(await c.locator('button[data-action="reject"]').count(), 1);
  assert.match(await c.locator('button[data-action="approve"]').textContent(), /Approve all 2/);
  await shot(page, '03b-batch');
  await c.locator('button[data-action="approve"]').click();
  const outcome = c.locator('.outcome.ok');
  await outcome.waitFor();
  assert.match(await outcome.textContent(), /second of two/);
  const e = (await api(URL, 'GET', `/api/executions/${id}`)).body;
  assert.equal(e.status, 'completed');
  assert.deepEqual(e.result, ['first of two', 'second of two']);
  await done(page);
});

test('a double click approves once', async () => {
  const out = await run("return await tasks.create_task({ title: 'double click' })");
  const id = out.executionId;
  const page = await tab(URL + '/#/pending');
  const approvals = [];
  page.on('request', (r) => { if (r.url().endsWith(`/api/executions/${id}/approve`)) approvals.push(r.url()); });
  const c = card(page, id, 0);
  await c.locator('button[data-action="approve"]').dblclick();
  await c.locator('.outcome.ok').waitFor();
  assert.equal(approvals.length, 1);
  assert.equal(await c.locator('.outcome.conflict').count(), 0);
  await done(page);
});

test('two tabs approve at once: one wins, the other shows it was already handled', async () => {
  const out = await run("return await tasks.create_task({ title: 'contested' })");
  const id = out.executionId;
  const a = await tab(URL + '/#/pending');
  const b = await tab(URL + '/#/pending');
  const ca = card(a, id, 0);
  const cb = card(b, id, 0);
  await Promise.all([ca.waitFor(), cb.waitFor()]);
  // The slower tab may learn of the other's approval before its own click lands (its card
  // is then disabled and says so); either way it must not approve a second time.
  const click = (c) => c.locator('button[data-action="approve"]').click({ timeout: 5000 }).catch(() => {});
  await Promise.all([click(ca), click(cb)]);
  await Promise.all([ca.locator('.outcome').waitFor(), cb.locator('.outcome').waitFor()]);
  const texts = [await ca.locator('.outcome').textContent(), await cb.locator('.outcome').textContent()];
  const won = (await ca.locator('.outcome.ok').count()) + (await cb.locator('.outcome.ok').count());
  const lost = texts.filter((t) => /Already handled/.test(t)).length;
  assert.equal(won, 1, texts.join(' | '));
  assert.equal(lost, 1, texts.join(' | '));
  const loser = /Already handled/.test(texts[0]) ? a : b;
  await shot(loser, '04-already-handled');
  await done(a);
  await done(b);
});

test('roll back from the execution view: the confirmation lists what is reverted, the timeline shows it', async () => {
  const out = await run(`
    await tasks.add_note({ text: 'rollback me' });
    await tasks.list_tasks({});
    const t = await tasks.create_task({ title: 'undo me' });
    return t.id;
  `);
  const id = out.executionId;
  const approved = await api(URL, 'POST', `/api/executions/${id}/approve`);
  assert.equal(approved.body.status, 'completed');
  const page = await tab(URL + `/#/executions/${id}`);
  await page.locator('#timeline .entry[data-state="applied"]').nth(1).waitFor();
  await shot(page, '05-execution');
  await page.locator('button[data-action="rollback"]').click();
  const dialog = page.locator('dialog[open]');
  await dialog.waitFor();
  const plan = await dialog.locator('#rollback-plan').textContent();
  assert.match(plan, /tasks\.create_task[\s\S]*tasks\.add_note/);
  assert.doesNotMatch(plan, /list_tasks/);
  assert.match(await dialog.locator('#rollback-reads').textContent(), /tasks\.list_tasks/);
  assert.equal(await dialog.locator('#rollback-cannot').count(), 0);
  assert.match(await dialog.textContent(), /Cannot be reverted: nothing/);
  await shot(page, '06-rollback-confirm');
  await dialog.locator('button[type="submit"]').click();
  await page.locator('#rollback-report', { hasText: 'Reverted (2)' }).waitFor();
  await page.locator('#timeline .entry[data-state="reverted"]').nth(1).waitFor();
  // Only the read stays applied: it changed nothing.
  const stillApplied = page.locator('#timeline .entry[data-state="applied"]');
  assert.equal(await stillApplied.count(), 1);
  assert.match(await stillApplied.textContent(), /tasks\.list_tasks/);
  await page.locator('#exec-status', { hasText: 'rolled back' }).waitFor();
  await shot(page, '07-rolled-back');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, '07-rolled-back-narrow');
  await page.setViewportSize({ width: 1280, height: 900 });

  // The list, filtered by status.
  await page.goto(URL + '/#/executions');
  await page.locator('.exec-row').first().waitFor();
  await page.selectOption('#status-filter', 'rolled_back');
  await page.locator(`.exec-row[data-id="${id}"]`).waitFor();
  assert.equal(await page.locator('.exec-row:not([data-status="rolled_back"])').count(), 0);
  await page.selectOption('#status-filter', '');
  await shot(page, '08-executions');
  await done(page);
});

test('save a completed execution as a snippet, see it, delete it', async () => {
  const out = await run('return (await tasks.list_tasks({})).tasks.length');
  assert.equal(out.status, 'completed');
  const id = out.executionId;
  const page = await tab(URL + `/#/executions/${id}`);
  await page.locator('button[data-action="save"]').click();
  await page.fill('#snippet-name', 'count_tasks');
  await page.fill('#snippet-description', 'How many tasks <there> are.');
  await page.locator('dialog[open] button[type="submit"]').click();
  await page.locator('#toast', { hasText: 'Saved snippet count_tasks' }).waitFor();
  // Saving the same name again is an error shown in the dialog.
  await page.locator('button[data-action="save"]').click();
  await page.fill('#snippet-name', 'count_tasks');
  await page.locator('dialog[open] button[type="submit"]').click();
  await page.locator('dialog[open] .form-error', { hasText: /exists/ }).waitFor();
  await page.keyboard.press('Escape');
  await page.locator('dialog[open]').waitFor({ state: 'detached' });

  await page.goto(URL + '/#/snippets');
  const s = page.locator('.card[data-snippet="count_tasks"]');
  await s.waitFor();
  assert.match(await s.textContent(), /How many tasks <there> are\./);
  await s.locator('summary', { hasText: 'Code' }).click();
  await shot(page, '09-snippets');
  await s.locator('button', { hasText: 'Delete' }).click();
  await page.locator('dialog[open] button[type="submit"]').click();
  await s.waitFor({ state: 'detached' });
  assert.equal((await api(URL, 'GET', '/api/snippets')).body.length, 0);
  await done(page);
});

test('connectors: methods with their approval policy, search and describe', async () => {
  const page = await tab(URL + '/#/connectors');
  const c = page.locator('.card[data-connector="tasks"]');
  await c.locator('tr', { hasText: 'create_task' }).locator('.badge', { hasText: 'requires approval' }).waitFor();
  await c.locator('tr', { hasText: 'list_tasks' }).locator('.badge', { hasText: 'runs freely' }).waitFor();
  await page.fill('#search-q', 'note');
  await page.keyboard.press('Enter');
  await page.locator('#search-results button', { hasText: 'tasks.add_note' }).click();
  await page.locator('#describe-output pre', { hasText: 'add_note(input: AddNoteInput)' }).waitFor();
  await shot(page, '10-connectors');
  await done(page);
});

test('the token prompt: asked once, kept for the tab, sent with every request', async () => {
  const out = await run("return await tasks.create_task({ title: 'behind a token' })", TOKEN_URL, TOKEN);
  const page = await tab(TOKEN_URL + '/#/pending');
  const input = page.locator('dialog[open] #token-input');
  await input.waitFor();
  await shot(page, '11-token-prompt');
  await input.fill('wrong');
  await page.keyboard.press('Enter');
  await page.locator('dialog[open]', { hasText: 'refused' }).waitFor();
  await page.locator('dialog[open] #token-input').fill(TOKEN);
  await page.keyboard.press('Enter');
  const c = card(page, out.executionId, 0);
  await c.waitFor();
  await c.locator('button[data-action="approve"]').click();
  await c.locator('.outcome.ok').waitFor();
  // Another view, no second prompt.
  await page.goto(TOKEN_URL + '/#/executions');
  await page.locator(`.exec-row[data-id="${out.executionId}"]`).waitFor();
  assert.equal(await page.locator('dialog[open]').count(), 0);
  await done(page);
});

/** Starts `codemode serve` on `listen`; resolves with the process and its base URL. */
/** Every server a test started, killed when the tests end even if a test failed first. */
const started = new Set();
after(() => {
  for (const child of started) child.kill('SIGKILL');
});

function startServer(listen, db, extra = [], env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.env.CODEMODE_BIN, ['serve', '--listen', listen, '--store', `sqlite:${db}`, ...extra], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...env },
    });
    started.add(child);
    child.on('exit', () => started.delete(child));
    let seen = '';
    child.stderr.on('data', (d) => {
      seen += d;
      const m = seen.match(/codemode serving on (\S+)/);
      if (m) resolve({ child, base: m[1] });
    });
    child.on('exit', () => reject(new Error(`serve exited: ${seen}`)));
  });
}

function stop(child) {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.on('exit', resolve);
    child.kill('SIGKILL');
  });
}

test('a server that went away: a clear banner, then retry', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'codemode-gone-'));
  const db = path.join(dir, 'c.db');
  let server = await startServer('127.0.0.1:0', db);
  const page = await tab(server.base + '/#/pending');
  await page.locator('h1', { hasText: 'Pending approvals' }).waitFor();
  await stop(server.child);
  const banner = page.locator('#banner');
  await banner.locator('text=not answering').waitFor();
  assert.equal(await banner.getAttribute('role'), 'alert');
  await shot(page, '12-server-gone');
  // Retry now while it is still away: the banner stays.
  await page.locator('#retry').click();
  await banner.locator('text=not answering').waitFor();
  server = await startServer(server.base.replace('http://', ''), db);
  const out = await run("return await tasks.create_task({ title: 'after the restart' })", server.base);
  // The page follows the server again by itself (Retry now makes it at once, if it is
  // still showing).
  await page.locator('#retry').click({ timeout: 1000 }).catch(() => {});
  await banner.waitFor({ state: 'hidden' });
  await card(page, out.executionId, 0).waitFor();
  await stop(server.child);
  await page.close();
  rmSync(dir, { recursive: true, force: true });
});

test('rollback confirmation: calls whose connector is gone or has no revert cannot be reverted', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'codemode-gone-connector-'));
  const db = path.join(dir, 'c.db');
  // The execution is made with the demo connector...
  let server = await startServer('127.0.0.1:0', db);
  const out = await run("await tasks.add_note({ text: 'left behind' }); return 1;", server.base);
  assert.equal(out.status, 'completed');
  await stop(server.child);
  // ...and reviewed on a node configured with another connector only.
  const spec = path.join(dir, 'items.json');
  writeFileSync(spec, JSON.stringify({
    openapi: '3.0.3', info: { title: 'Items', version: '1' },
    paths: { '/items': { post: { operationId: 'createItem', responses: { 200: { description: 'ok' } } } } },
  }));
  server = await startServer('127.0.0.1:0', db, ['--openapi', `items=${spec}@http://127.0.0.1:9`]);
  const connectors = (await api(server.base, 'GET', '/api/connectors')).body;
  // The configured connector, then the workspace connector `state` (on by default).
  assert.deepEqual(connectors.connectors.map((c) => c.name), ['items', 'state']);
  const create = connectors.connectors[0].methods.find((m) => m.name === 'createItem');
  assert.equal(create.requiresApproval, true);
  assert.equal(create.hasRevert, false);
  const page = await tab(server.base + `/#/executions/${out.executionId}`);
  await page.locator('button[data-action="rollback"]').click();
  const dialog = page.locator('dialog[open]');
  const cannot = dialog.locator('#rollback-cannot');
  await cannot.waitFor();
  assert.match(await cannot.textContent(), /tasks\.add_note[\s\S]*connector tasks is not configured/);
  assert.match(await dialog.locator('#rollback-plan').textContent(), /Nothing here can be reverted/);
  await shot(page, '13-rollback-connector-gone');
  await page.keyboard.press('Escape');
  // The Connectors view lists every method from /api/connectors, with its revert.
  await page.goto(server.base + '/#/connectors');
  const row = page.locator('.card[data-connector="items"] tr[data-method="createItem"]');
  await row.locator('.badge', { hasText: 'no revert' }).waitFor();
  await row.locator('.badge', { hasText: 'requires approval' }).waitFor();
  await page.locator('.card[data-connector="items"] tr[data-method="request"]').waitFor();
  await done(page);
  await stop(server.child);
  rmSync(dir, { recursive: true, force: true });
});

test('roles: a run token sees no Approve button and why; an approve token approves', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'codemode-roles-'));
  const config = path.join(dir, 'codemode.toml');
  writeFileSync(config, [
    'demo = true',
    '[auth.tokens.bot]', 'env = "CM_ROLE_RUN"', 'role = "run"',
    '[auth.tokens.ops]', 'env = "CM_ROLE_APPROVE"', 'role = "approve"', '',
  ].join('\n'));
  const env = { CM_ROLE_RUN: 'bot-token-1', CM_ROLE_APPROVE: 'ops-token-1' };
  const { child, base } = await startServer('127.0.0.1:0', path.join(dir, 'r.db'), ['--config', config], env);
  try {
    const out = await run("return await tasks.create_task({ title: 'decided by ops' })", base, env.CM_ROLE_RUN);
    assert.equal(out.status, 'paused');
    const signIn = async (token) => {
      const page = await tab(base + '/#/pending');
      await page.locator('dialog[open] #token-input').fill(token);
      await page.keyboard.press('Enter');
      return page;
    };
    // The run token: the card, no Approve or Reject, and a sentence saying why.
    const runner = await signIn(env.CM_ROLE_RUN);
    const c = card(runner, out.executionId, 0);
    await c.locator('.no-decide').waitFor();
    assert.match(await c.locator('.no-decide').textContent(), /bot.*role run.*not approve/);
    assert.equal(await c.locator('button[data-action="approve"]').count(), 0);
    assert.match(await runner.locator('#whoami').textContent(), /bot \(role run\)/);
    await shot(runner, '12-run-token');
    await done(runner);
    // The approve token: Approve is there and works; the decision names the token.
    const approver = await signIn(env.CM_ROLE_APPROVE);
    const a = card(approver, out.executionId, 0);
    await a.locator('button[data-action="approve"]').click();
    await a.locator('.outcome.ok').waitFor();
    assert.match(await approver.locator('#whoami').textContent(), /ops \(role approve\)/);
    await done(approver);
    const e = await api(base, 'GET', `/api/executions/${out.executionId}`, undefined, env.CM_ROLE_RUN);
    assert.equal(e.body.status, 'completed');
    assert.equal(e.body.decisions[0].by, 'ops');
  } finally {
    await stop(child);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the console follows the event stream: no polling, a new pending action appears by itself', async () => {
  const page = await tab();
  const reads = [];
  page.on('request', (req) => {
    const u = new globalThis.URL(req.url());
    if (u.pathname.startsWith('/api/')) reads.push({ path: u.pathname, at: Date.now() });
  });
  await page.goto(URL + '/#/pending');
  await page.locator('h1', { hasText: 'Pending approvals' }).waitFor();
  await page.waitForTimeout(1000);
  const quietFrom = Date.now();
  await page.waitForTimeout(5000);
  const quiet = reads.filter((r) => r.at >= quietFrom);
  assert.deepEqual(quiet, [], 'the page made requests while nothing happened');
  assert.equal(reads.filter((r) => r.path === '/api/events').length, 1, JSON.stringify(reads));
  // Something happens: the event brings it.
  const out = await run("return await tasks.create_task({ title: 'brought by an event' })");
  await card(page, out.executionId, 0).waitFor();
  assert.ok(reads.some((r) => r.at >= quietFrom && r.path === '/api/pending'));
  assert.equal(reads.filter((r) => r.path === '/api/events').length, 1, 'one stream, kept open');
  await card(page, out.executionId, 0).locator('button[data-action="reject"]').click();
  await card(page, out.executionId, 0).locator('.outcome.rejected').waitFor();
  await done(page);
});

test('a running execution shows its calls and console lines live, then its end', async () => {
  const code = "await tasks.list_tasks({}); console.log('first step done'); const t = Date.now(); while (Date.now() - t < 5000) {} return 'finished'";
  const running = api(URL, 'POST', '/api/run', { code });
  let id;
  for (let i = 0; i < 200 && !id; i++) {
    const list = (await api(URL, 'GET', '/api/executions?limit=5')).body;
    const e = list.find((x) => x.code === code && x.status === 'running');
    if (e) id = e.id;
    else await new Promise((r) => setTimeout(r, 25));
  }
  assert.ok(id, 'the run did not start');
  const page = await tab(URL + `/#/executions/${id}`);
  const call = page.locator('#live-calls li[data-seq="0"]');
  await call.locator('code', { hasText: 'tasks.list_tasks' }).waitFor();
  await call.locator('.badge', { hasText: /done in \d+ ms/ }).waitFor();
  await page.locator('#live-console', { hasText: 'first step done' }).waitFor();
  await page.locator('#exec-status', { hasText: 'running' }).waitFor();
  await shot(page, '13-live');
  const r = await running;
  assert.equal(r.body.result, 'finished');
  // The end arrives by the event stream: the page shows it without a reload.
  await page.locator('#exec-status', { hasText: 'completed' }).waitFor();
  await page.locator('#live').waitFor({ state: 'detached' });
  await done(page);
});

test('approve with edited arguments, checked against the schema', async () => {
  const out = await run("const t = await tasks.create_task({ title: 'from the model' }); return t.title");
  const id = out.executionId;
  const page = await tab(URL + '/#/pending');
  const c = card(page, id, 0);
  await c.locator('button[data-action="edit"]').click();
  const editor = c.locator('textarea.args-edit');
  assert.match(await editor.inputValue(), /from the model/);
  // Not JSON: said at once, nothing sent.
  await editor.fill('{ title: ');
  await c.locator('button[data-action="approve"]').click();
  await c.locator('.notice.error', { hasText: 'not JSON' }).waitFor();
  // JSON that fails the input schema: the server's 400 names the field; nothing ran.
  await editor.fill('{ "title": 5 }');
  await c.locator('button[data-action="approve"]').click();
  await c.locator('.notice.error', { hasText: 'title' }).waitFor();
  assert.equal((await api(URL, 'GET', `/api/executions/${id}`)).body.status, 'paused');
  await shot(page, '14-edit-args');
  await editor.fill('{ "title": "from the person" }');
  await c.locator('button[data-action="approve"]').click();
  const outcome = c.locator('.outcome.ok');
  await outcome.waitFor();
  assert.match(await outcome.textContent(), /Approved with your arguments/);
  assert.match(await outcome.textContent(), /from the person/);
  const e = (await api(URL, 'GET', `/api/executions/${id}`)).body;
  assert.equal(e.result, 'from the person');
  assert.equal(e.log[0].args.title, 'from the model');
  assert.equal(e.log[0].approvedArgs.title, 'from the person');
  await done(page);
});

test('approve all like this: later calls of the same method in the run need no approval', async () => {
  const out = await run(`
    const made = [];
    for (const title of ['one', 'two', 'three']) made.push((await tasks.create_task({ title })).title);
    return made;
  `);
  const id = out.executionId;
  const page = await tab(URL + '/#/pending');
  const c = card(page, id, 0);
  const standing = c.locator('button[data-action="approve-standing"]');
  assert.match(await standing.textContent(), /Approve all tasks\.create_task in this run/);
  await standing.click();
  const outcome = c.locator('.outcome.ok');
  await outcome.waitFor();
  assert.match(await outcome.textContent(), /for the rest of this run/);
  const e = (await api(URL, 'GET', `/api/executions/${id}`)).body;
  assert.equal(e.status, 'completed');
  assert.deepEqual(e.result, ['one', 'two', 'three']);
  assert.equal(e.decisions.filter((d) => d.kind === 'approve').length, 1, JSON.stringify(e.decisions));
  assert.equal(e.decisions[0].scope, 'execution');
  // No card was made for the later calls.
  assert.equal(await card(page, id, 1).count(), 0);
  await done(page);
});
