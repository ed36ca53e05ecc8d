// Opens a sessiontree HTML export in headless Chromium (the system's, via playwright-core)
// and checks it against expectations computed by the Rust test.
//
//   node browser.mjs --html FILE --expect EXPECT.json [--screenshot PNG] [--chromium PATH]
//   node browser.mjs --html FILE --screenshot PNG --only-screenshot [--viewport 1024x640]   (docs picture)
//   node browser.mjs --html FILE --timing                             (load time only)
//   node browser.mjs --html FILE --lazy                               (long session: chunks and folds)
//   node browser.mjs --smoke LIST.txt                                 (many pages: load, click, search)
//
// EXPECT.json: {name, leaf, leafPath:[ids], labels:{id:label}, clicks:[{id, path:[ids]}],
//               search:{term, ids:[ids]}, hostileId, images}
// Prints one JSON line with the results; exit status 1 when a check fails.
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const args = process.argv.slice(2);
const opt = (k) => { const i = args.indexOf(k); return i >= 0 ? args[i + 1] : undefined; };
const flag = (k) => args.includes(k);
const html = opt('--html') ? path.resolve(opt('--html')) : null;
const exe = opt('--chromium') || process.env.CHROMIUM || '/usr/bin/chromium';
const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); };
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
// page.waitForFunction evaluates strings, which the page's CSP (rightly) forbids: poll instead.
async function until(page, fn, timeout = 10000) {
  const end = Date.now() + timeout;
  for (;;) {
    if (await page.evaluate(fn).catch(() => false)) return;
    if (Date.now() > end) throw new Error('timed out waiting for ' + fn);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const browser = await chromium.launch({
  executablePath: exe,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const result = {};
if (flag('--smoke')) {
  // node browser.mjs --smoke LIST.txt: every page in the list (one path a line) loads,
  // renders without a page error, makes no request, and clicking its first rows works.
  const files = readFileSync(opt('--smoke'), 'utf8').split('\n').filter(Boolean);
  const context = await browser.newContext({ viewport: { width: 1024, height: 700 } });
  const requests = [];
  context.on('request', (r) => { const u = r.url(); if (!u.startsWith('file:') && !u.startsWith('data:')) requests.push(u); });
  await context.route('**/*', (route) => {
    const u = route.request().url();
    return u.startsWith('file:') || u.startsWith('data:') ? route.continue() : route.abort();
  });
  for (const f of files) {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    try {
      await page.goto(pathToFileURL(f).href, { waitUntil: 'load', timeout: 60000 });
      await until(page, () => !!(window.__sessiontree && window.__sessiontree.ready), 60000);
      const rows = await page.$$('#tree .row');
      for (const r of rows.slice(0, 3)) await r.click();
      await page.fill('#search', 'a');
      await until(page, () => document.getElementById('count').textContent !== '');
      const pwned = await page.evaluate(() => typeof window.__pwned);
      check(pwned === 'undefined', `${f}: window.__pwned is ${pwned}`);
    } catch (e) {
      errors.push(String(e));
    }
    check(errors.length === 0, `${f}: ${errors.join(' | ')}`);
    await page.close();
  }
  check(requests.length === 0, 'network requests: ' + requests.join(' '));
  result.pages = files.length;
  await browser.close();
  result.failures = failures;
  console.log(JSON.stringify(result));
  process.exit(failures.length ? 1 : 0);
}
try {
  const [vw, vh] = (opt('--viewport') || '1280x800').split('x').map(Number);
  const context = await browser.newContext({ viewport: { width: vw, height: vh }, colorScheme: 'light' });
  const requests = [];
  context.on('request', (r) => { const u = r.url(); if (!u.startsWith('file:') && !u.startsWith('data:')) requests.push(u); });
  await context.route('**/*', (route) => {
    const u = route.request().url();
    if (u.startsWith('file:') || u.startsWith('data:')) return route.continue();
    return route.abort();
  });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  const t0 = Date.now();
  await page.goto(pathToFileURL(html).href, { waitUntil: 'load', timeout: 180000 });
  await until(page, () => !!(window.__sessiontree && window.__sessiontree.ready), 180000);
  result.loadMs = Date.now() - t0;
  result.entries = await page.evaluate(() => window.__sessiontree.entries);

  if (flag('--lazy')) {
    // A long session: the conversation renders in chunks as it scrolls, the tree folds
    // long chains and unfolds them on click.
    const count = (sel) => page.$$eval(sel, (els) => els.length);
    result.initialMessages = await count('#conv .msg');
    check(result.initialMessages === 200, `first chunk ${result.initialMessages}`);
    for (let k = 0; k < 3; k++) {
      await page.$eval('#conv', (c) => { c.scrollTop = c.scrollHeight; });
      await new Promise((r) => setTimeout(r, 300));
    }
    result.afterScroll = await count('#conv .msg');
    check(result.afterScroll > 200, `after scrolling ${result.afterScroll}`);
    const rows = await count('#tree .row');
    check(rows < 200, `tree rows before unfolding ${rows}`);
    await page.click('#tree .more >> nth=0');
    const rows2 = await count('#tree .row');
    check(rows2 === rows + 200, `tree rows after unfolding ${rows2} (was ${rows})`);
    result.treeRows = [rows, rows2];
    check(errors.length === 0, 'page errors: ' + errors.join(' | '));
    check(requests.length === 0, 'network requests: ' + requests.join(' '));
  } else if (flag('--only-screenshot') || flag('--timing')) {
    if (opt('--screenshot')) await page.screenshot({ path: opt('--screenshot') });
    result.requests = requests;
    result.errors = errors;
    check(errors.length === 0, 'page errors: ' + errors.join(' | '));
  } else {
    const x = JSON.parse(readFileSync(opt('--expect'), 'utf8'));
    const convIds = () => page.$$eval('#conv .msg', (els) => els.map((e) => e.dataset.id));
    const treeIds = (sel) => page.$$eval('#tree ' + sel, (els) => els.map((e) => e.dataset.id));

    // Name, labels, current leaf and its path.
    const title = await page.textContent('#title');
    check(title === x.name, `title ${JSON.stringify(title)} != ${JSON.stringify(x.name)}`);
    const docTitle = await page.title();
    check(docTitle === x.name, `document title ${JSON.stringify(docTitle)}`);
    const labels = await page.$$eval('#tree .row', (rows) => Object.fromEntries(rows.filter((r) => r.querySelector('.badge')).map((r) => [r.dataset.id, r.querySelector('.badge').textContent])));
    check(same(labels, x.labels), `labels ${JSON.stringify(labels)} != ${JSON.stringify(x.labels)}`);
    check(same(await treeIds('.row.leaf'), [x.leaf]), 'leaf row');
    const onpath = await treeIds('.row.onpath');
    check(same(onpath.slice().sort(), x.leafPath.slice().sort()), `highlighted path ${onpath}`);
    check(same(await convIds(), x.leafPath), 'initial conversation = leaf path');
    check((await page.$$('#tree .row.compaction')).length > 0, 'compaction marked in the tree');
    check((await page.$$('#tree .row.branch_summary')).length > 0, 'branch summary marked in the tree');
    check((await page.$$('#conv .msg.compaction')).length > 0, 'compaction shown on the path');

    // Click through nodes.
    for (const c of x.clicks) {
      await page.click(`#tree .row[data-id="${c.id}"]`);
      const ids = await convIds();
      check(same(ids, c.path), `click ${c.id}: shown ${ids} != ${c.path}`);
      check(same(await treeIds('.row.selected'), [c.id]), `click ${c.id}: selected row`);
    }
    result.clicks = x.clicks.length;

    // Hostile text is text; only the allow-listed image is shown.
    if (x.hostileId) {
      await page.click(`#tree .row[data-id="${x.hostileId}"]`);
      const text = await page.textContent(`#conv .msg[data-id="${x.hostileId}"]`);
      check(text.includes('</script><script>window.__pwned=1</script>'), 'hostile script shown as text');
      check(text.includes('<img src=x onerror="window.__pwned=1">'), 'hostile img shown as text');
      const imgs = await page.$$eval('#conv img', (els) => els.map((e) => e.getAttribute('src').slice(0, 22)));
      check(same(imgs, ['data:image/png;base64,']), `images ${imgs}`);
      const badLinks = await page.$$eval('#conv a', (els) => els.map((a) => a.href).filter((h) => !/^https?:/.test(h)));
      check(badLinks.length === 0, `non-http links ${badLinks}`);
      await page.click(`#tree .row[data-id="${x.leaf}"]`);
    }

    // Search box.
    if (x.search) {
      await page.fill('#search', x.search.term);
      await until(page, () => document.getElementById('count').textContent !== '');
      const ids = await convIds();
      check(same(ids, x.search.ids), `search ${x.search.term}: ${ids}`);
      const marks = await page.$$eval('#conv mark', (els) => els.map((e) => e.textContent.toLowerCase()));
      check(marks.length > 0 && marks.every((m) => m === x.search.term.toLowerCase()), `marks ${marks}`);
      result.searchCount = await page.textContent('#count');
      await page.fill('#search', '');
      await until(page, () => document.getElementById('count').textContent === '');
      check(same(await convIds(), x.leafPath), 'search cleared');
    }

    // Dark theme renders too.
    await page.emulateMedia({ colorScheme: 'dark' });
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    check(bg === 'rgb(13, 17, 23)', `dark background ${bg}`);
    await page.emulateMedia({ colorScheme: 'light' });

    const pwned = await page.evaluate(() => typeof window.__pwned);
    check(pwned === 'undefined', 'window.__pwned is ' + pwned);
    check(requests.length === 0, 'network requests: ' + requests.join(' '));
    check(errors.length === 0, 'page errors: ' + errors.join(' | '));
    if (opt('--screenshot')) await page.screenshot({ path: opt('--screenshot'), fullPage: false });
    result.requests = requests;
  }
} finally {
  await browser.close();
}
result.failures = failures;
console.log(JSON.stringify(result));
process.exit(failures.length ? 1 : 0);
