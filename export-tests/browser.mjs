// Opens a sessiontree HTML export in headless Chromium (the system's, via playwright-core)
// and checks it against expectations computed by the Rust test.
//
//   node browser.mjs --html FILE --expect EXPECT.json [--screenshot PNG] [--chromium PATH]
//   node browser.mjs --html FILE --screenshot PNG --only-screenshot [--viewport 1024x640]   (docs picture)
//   node browser.mjs --html FILE --timing                             (load time only)
//   node browser.mjs --html FILE --lazy                               (long session: chunks and folds)
//   node browser.mjs --smoke LIST.txt                                 (many pages: load, click, search)
//   node browser.mjs --html FILE --deep DEEP.json [--screenshot PNG]  (deep branched session: readable tree, opens at the leaf)
//
// DEEP.json: {leaf, leafPath:[ids], minChars}
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

  if (opt('--deep')) {
    // A deep branched session: every tree row keeps room for its text, indentation changes
    // only where the tree forks, and the conversation opens at the leaf.
    const x = JSON.parse(readFileSync(opt('--deep'), 'utf8'));
    const tree = await page.evaluate((minChars) => {
      const t = document.getElementById('tree');
      const tr = t.getBoundingClientRect();
      // The width of minChars characters in a row's text.
      const probeRow = document.createElement('div');
      probeRow.className = 'row';
      const probe = document.createElement('span');
      probe.className = 't';
      probe.textContent = 'x'.repeat(minChars);
      probeRow.appendChild(probe);
      t.appendChild(probeRow);
      const need = probe.getBoundingClientRect().width;
      probeRow.remove();
      const D = JSON.parse(document.getElementById('session-data').textContent);
      const rows = [...t.querySelectorAll('.row')];
      const narrow = [];
      const left = {};
      for (const r of rows) {
        const tx = r.querySelector('.t');
        const b = tx.getBoundingClientRect();
        // Shown whole, or at least minChars wide, and inside the pane.
        const whole = tx.scrollWidth <= tx.clientWidth + 1;
        if ((!whole && b.width < need - 0.5) || b.left < tr.left || Math.min(b.right, b.left + need) > tr.left + t.clientWidth + 0.5) {
          narrow.push({ id: r.dataset.id, width: b.width, left: b.left - tr.left });
        }
        left[r.dataset.index] = r.getBoundingClientRect().left;
      }
      const leafRow = t.querySelector('.row.leaf');
      const lt = leafRow.querySelector('.t').getBoundingClientRect();
      return {
        rows: rows.length, need, narrow: narrow.slice(0, 5), narrowCount: narrow.length,
        leafId: leafRow.dataset.id, leafTextWidth: lt.width, leafLeft: leafRow.getBoundingClientRect().left - tr.left,
        leafVisible: lt.top >= tr.top && lt.bottom <= tr.bottom,
        kids: D.kids.map((k) => k.length), left, ids: D.entries.map((e) => e.id),
      };
    }, x.minChars);
    result.treeRows = tree.rows;
    result.leafTextPx = Math.round(tree.leafTextWidth);
    result.needPx = Math.round(tree.need);
    result.leafIndentPx = Math.round(tree.leafLeft);
    check(tree.leafId === x.leaf, `leaf row ${tree.leafId} != ${x.leaf}`);
    check(tree.leafTextWidth >= tree.need - 0.5, `the leaf row's text is ${tree.leafTextWidth}px, ${x.minChars} characters need ${tree.need}px`);
    check(tree.leafVisible, 'the leaf row is scrolled into view');
    check(tree.narrowCount === 0, `${tree.narrowCount} rows too narrow or outside the pane: ${JSON.stringify(tree.narrow)}`);
    // Indentation changes only where the tree forks: along the leaf's path, a child of a
    // single-child entry sits where its parent does; a child of a fork never further left.
    const index = new Map(tree.ids.map((id, i) => [id, i]));
    let flatOk = 0, forkSteps = 0;
    for (let k = 1; k < x.leafPath.length; k++) {
      const p = index.get(x.leafPath[k - 1]), c = index.get(x.leafPath[k]);
      if (!(p in tree.left) || !(c in tree.left)) continue;
      const dp = tree.left[p], dc = tree.left[c];
      if (tree.kids[p] === 1) {
        check(Math.abs(dc - dp) < 0.5, `${x.leafPath[k]} moved ${dc - dp}px after a single-child entry`);
        flatOk++;
      } else {
        check(dc >= dp - 0.5, `${x.leafPath[k]} moved left after a fork`);
        if (dc > dp + 0.5) forkSteps++;
      }
    }
    check(flatOk > 0 && forkSteps > 0, `indentation checks: ${flatOk} flat, ${forkSteps} fork steps`);
    result.forkSteps = forkSteps;
    // The conversation opens at the leaf: its last message is the leaf, in view, and what
    // is shown is the end of the leaf's path; scrolling up loads the entries before it.
    const conv = () => page.evaluate(() => {
      const c = document.getElementById('conv'), cr = c.getBoundingClientRect();
      const msgs = [...c.querySelectorAll('.msg')];
      const last = msgs[msgs.length - 1], lr = last.getBoundingClientRect();
      return { ids: msgs.map((m) => m.dataset.id), lastVisible: lr.bottom > cr.top && lr.top < cr.bottom };
    });
    const suffix = (ids) => same(ids, x.leafPath.slice(x.leafPath.length - ids.length));
    const first = await conv();
    check(first.ids[first.ids.length - 1] === x.leaf, `conversation ends at ${first.ids[first.ids.length - 1]}, not the leaf`);
    check(first.lastVisible, 'the leaf message is in view');
    check(suffix(first.ids), 'the conversation is the end of the leaf path');
    for (let k = 0; k < 3; k++) {
      await page.$eval('#conv', (c) => { c.scrollTop = 0; });
      await new Promise((r) => setTimeout(r, 300));
    }
    const after = await conv();
    check(after.ids.length > first.ids.length && suffix(after.ids), `scrolling up: ${first.ids.length} -> ${after.ids.length} messages`);
    result.conv = [first.ids.length, after.ids.length];
    check(errors.length === 0, 'page errors: ' + errors.join(' | '));
    check(requests.length === 0, 'network requests: ' + requests.join(' '));
    if (opt('--screenshot')) {
      await page.click('#tree .row.leaf');
      await page.screenshot({ path: opt('--screenshot') });
    }
  } else if (flag('--lazy')) {
    // A long session: the conversation renders in chunks as it scrolls, the tree folds
    // long chains and unfolds them on click.
    const count = (sel) => page.$$eval(sel, (els) => els.length);
    result.initialMessages = await count('#conv .msg');
    check(result.initialMessages === 200, `first chunk ${result.initialMessages}`);
    const lastId = await page.$eval('#conv', (c) => { const m = c.querySelectorAll('.msg'); return m[m.length - 1].dataset.id; });
    const leafId = await page.$eval('#tree .row.leaf', (r) => r.dataset.id);
    check(lastId === leafId, `opens at ${lastId}, not at the leaf ${leafId}`);
    for (let k = 0; k < 3; k++) {
      await page.$eval('#conv', (c) => { c.scrollTop = 0; });
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
