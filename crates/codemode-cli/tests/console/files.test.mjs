// The console's file browser in headless Chromium against the real `codemode serve`
// (CONSOLE_URL, FIXTURES and SCREENSHOTS as in console.test.mjs): code writes files through
// `state`, the Files view lists a workspace, opens a directory and shows a file.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const require = createRequire(path.join(process.env.FIXTURES, 'package.json'));
const { chromium } = require('playwright-core');

const URL = process.env.CONSOLE_URL;
const SHOTS = process.env.SCREENSHOTS;

let context;
let profile;

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  profile = mkdtempSync(path.join(tmpdir(), 'codemode-files-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
  context.setDefaultTimeout(20000);
});

after(async () => {
  if (context) await context.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

async function run(code) {
  const r = await fetch(`${URL}/api/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code }),
  });
  const body = await r.json();
  assert.equal(body.status, 'completed', JSON.stringify(body));
  return body;
}

test('the Files view lists a workspace, opens a directory and shows a file', async () => {
  const evil = '<img src=x onerror="window.pwned=1">';
  await run(`
    await state.writeFile("/notes/a.txt", ${JSON.stringify(`hi ${evil}`)});
    await state.writeJson("/data/items.json", { items: [1, 2, 3], name: "three" });
    return "ok";`);
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(`${URL}/#/files`);
  await page.locator('h1', { hasText: 'Files' }).waitFor();
  assert.equal(await page.locator('nav a[data-view="files"]').getAttribute('aria-current'), 'page');

  // The configured workspace is selected, with its file count.
  const ws = page.locator('#workspace-list button[data-workspace="default"]');
  await ws.waitFor();
  assert.equal(await ws.getAttribute('aria-pressed'), 'true');
  await page.locator('#workspace-list', { hasText: '2 files' }).waitFor();

  // The root lists both directories; opening one lists its file.
  await page.locator('#file-list tr[data-path="/data"][data-type="directory"]').waitFor();
  await page.locator('#file-list tr[data-path="/notes"] button').click();
  const row = page.locator('#file-list tr[data-path="/notes/a.txt"]');
  await row.waitFor();
  assert.match(await page.locator('#file-crumbs').textContent(), /default:\/ \/ notes/);
  assert.equal(await page.locator('#file-list tr[data-path="/data"]').count(), 0);

  // Opening the file shows its content as text, never as HTML.
  await row.locator('button').click();
  const content = page.locator('#file-view pre');
  await content.waitFor();
  assert.equal(await content.textContent(), `hi ${evil}`);
  assert.equal(await page.locator('#file-view img').count(), 0);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  await page.screenshot({ path: path.join(SHOTS, 'files.png'), fullPage: true });

  // The crumbs lead back to the root; a JSON file is shown as a value.
  await page.locator('#file-crumbs button', { hasText: 'default:/' }).click();
  await page.locator('#file-list tr[data-path="/data"] button').click();
  await page.locator('#file-list tr[data-path="/data/items.json"] button').click();
  const json = page.locator('#file-view pre.json');
  await json.waitFor();
  assert.match(await json.textContent(), /"name": "three"/);
  assert.deepEqual(errors, [], 'the page logged errors');
  await page.close();
});
