// Drives `sessiontree serve` in headless Chromium (the system's, via playwright-core) and
// checks it against expectations computed by the Rust test (crates/sessiontree-cli/tests/serve_browser.rs).
//
//   node serve.mjs --expect EXPECT.json [--chromium PATH]
//   node serve.mjs --shots DIR --base URL --session ID --entry ID   (the README's pictures)
//
// EXPECT.json: {base, port, sessions:[ids newest first], search:{term, ids},
//   open:{id, rows, leaf, branch}, abandoned:{entry, roles}, live:{id, bin, file, entry, text},
//   hostile:{id, entry, text}, token:{base, token, id},
//   archive (optional): {base, rows:[[id, owner, machine]...] (the first one's machine holds only it)}}
// Prints one JSON line with the results; exit status 1 when a check fails.
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

const args = process.argv.slice(2);
const opt = (k) => { const i = args.indexOf(k); return i >= 0 ? args[i + 1] : undefined; };
const exe = opt('--chromium') || process.env.CHROMIUM || '/usr/bin/chromium';
const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); };
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
// page.waitForFunction evaluates strings, which the page's CSP (rightly) forbids: poll instead.
async function until(page, fn, arg, timeout = 10000) {
  const end = Date.now() + timeout;
  for (;;) {
    if (await page.evaluate(fn, arg).catch(() => false)) return;
    if (Date.now() > end) throw new Error('timed out waiting for ' + fn);
    await new Promise((r) => setTimeout(r, 25));
  }
}
const ready = (page) => until(page, () => document.body && document.body.dataset.ready === '1');

const browser = await chromium.launch({
  executablePath: exe,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    // A name that resolves to the server, as a rebinding attacker's domain would.
    '--host-resolver-rules=MAP evil.test 127.0.0.1'],
});
const result = {};

if (opt('--shots')) {
  const dir = opt('--shots');
  const base = opt('--base');
  const context = await browser.newContext({ viewport: { width: 1280, height: 760 } });
  const page = await context.newPage();
  await page.goto(base + '/');
  await ready(page);
  await page.fill('#q', 'verbose');
  await until(page, () => document.body.dataset.updated && document.body.dataset.searching === '');
  await page.screenshot({ path: dir + '/serve-list.png' });
  await page.goto(`${base}/s/${opt('--session')}/${opt('--entry')}`);
  await ready(page);
  await page.screenshot({ path: dir + '/serve-session.png' });
  // What the model saw at that entry, beside the (sticky) tree.
  await page.evaluate(() => document.getElementById('context').scrollIntoView({ block: 'start' }));
  await page.screenshot({ path: dir + '/serve-context.png' });
  await browser.close();
  console.log(JSON.stringify({ shots: ['serve-list.png', 'serve-session.png', 'serve-context.png'].map((f) => dir + '/' + f) }));
  process.exit(0);
}

const ex = JSON.parse(readFileSync(opt('--expect'), 'utf8'));
const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
const page = await context.newPage();
const errors = [];
const dialogs = [];
page.on('pageerror', (e) => errors.push(String(e)));
page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
const ids = () => page.evaluate(() => [...document.querySelectorAll('#sessions li.session')].map((l) => l.dataset.id));

try {
  // The list, newest first.
  let t0 = Date.now();
  const res = await page.goto(ex.base + '/');
  await ready(page);
  result.listMs = Date.now() - t0;
  check(res.status() === 200, 'list status ' + res.status());
  result.list = await ids();
  check(same(result.list, ex.sessions), 'list: ' + JSON.stringify(result.list));

  // Search as you type: no navigation (the marker stays), the list narrows, the URL follows.
  await page.evaluate(() => { window.__marker = 'kept'; });
  t0 = Date.now();
  await page.type('#q', ex.search.term, { delay: 40 });
  await until(page, (want) => {
    const got = [...document.querySelectorAll('#sessions li.session')].map((l) => l.dataset.id);
    return document.body.dataset.searching === '' && JSON.stringify(got) === JSON.stringify(want);
  }, ex.search.ids);
  result.searchMs = Date.now() - t0;
  check(await page.evaluate(() => window.__marker) === 'kept', 'search reloaded the page');
  check(new URL(page.url()).searchParams.get('q') === ex.search.term, 'url: ' + page.url());
  const marks = await page.evaluate(() => [...document.querySelectorAll('#sessions mark')].map((m) => m.textContent.toLowerCase()));
  check(marks.length > 0 && marks.every((m) => m === ex.search.term.toLowerCase()), 'marks: ' + marks);

  // Opening a session: its tree (every row), the leaf marked and in view, its branch.
  await page.fill('#q', '');
  await until(page, (n) => document.querySelectorAll('#sessions li.session').length === n, ex.sessions.length);
  await page.click(`#sessions li.session[data-id="${ex.open.id}"] a.open`);
  await page.waitForURL(`**/s/${ex.open.id}`);
  await ready(page);
  const opened = await page.evaluate(() => ({
    rows: document.querySelectorAll('#tree a.row').length,
    focus: document.querySelector('#tree a.row.focus')?.dataset.id,
    leafRow: document.querySelector('#tree .leaf')?.closest('a.row')?.dataset.id,
    branch: [...document.querySelectorAll('#branch article.entry')].map((a) => a.dataset.id),
    folded: [...document.querySelectorAll('#branch details')].every((d) => !d.open),
  }));
  result.opened = opened;
  check(opened.rows === ex.open.rows, 'rows ' + opened.rows);
  check(opened.focus === ex.open.leaf && opened.leafRow === ex.open.leaf, 'leaf ' + JSON.stringify(opened));
  check(same(opened.branch, ex.open.branch), 'branch ' + JSON.stringify(opened.branch));
  check(opened.folded, 'tool calls and results start folded');

  // Moving to an abandoned branch's entry: its branch, marked abandoned, and its context.
  await page.click(`#tree a.row[data-id="${ex.abandoned.entry}"]`);
  await page.waitForURL(`**/s/${ex.open.id}/${ex.abandoned.entry}`);
  await ready(page);
  const at = await page.evaluate(() => ({
    abandoned: !!document.querySelector('.head .abandoned'),
    focus: document.querySelector('#tree a.row.focus')?.dataset.id,
    roles: [...document.querySelectorAll('#context article.msg .kind')].map((k) => k.textContent),
    last: document.querySelector('#branch article.entry:last-of-type')?.dataset.id,
  }));
  result.abandoned = at;
  check(at.abandoned, 'abandoned branch not marked');
  check(at.focus === ex.abandoned.entry && at.last === ex.abandoned.entry, 'focus ' + JSON.stringify(at));
  check(same(at.roles, ex.abandoned.roles), 'context roles ' + JSON.stringify(at.roles));
  // A permalink opens the same page from nothing.
  const perma = await page.getAttribute('a.permalink', 'href');
  check(perma === `/s/${ex.open.id}/${ex.abandoned.entry}`, 'permalink ' + perma);

  // The live update: an append while the page is open shows within two seconds.
  await page.goto(`${ex.base}/s/${ex.live.id}`);
  await ready(page);
  check(!(await page.evaluate((t) => document.body.textContent.includes(t), ex.live.text)), 'live text already there');
  t0 = Date.now();
  execFileSync(ex.live.bin, ['append', ex.live.file, ex.live.entry]);
  await until(page, (t) => document.body.textContent.includes(t), ex.live.text, 5000);
  result.liveMs = Date.now() - t0;
  check(result.liveMs < 2000, 'live update took ' + result.liveMs + ' ms');
  check(await page.evaluate((t) => document.querySelector('#tree a.row.focus .txt')?.textContent.includes(t), ex.live.text), 'the new leaf is not the focus');

  // A hostile session: markup in names, messages and labels stays text; nothing runs.
  for (const path of [`/s/${ex.hostile.id}`, `/s/${ex.hostile.id}/${ex.hostile.entry}`, `/?q=pwned`, `/search?q=pwned`]) {
    await page.goto(ex.base + path);
    await ready(page);
    const h = await page.evaluate((t) => ({
      pwned: typeof window.__pwned,
      text: document.body.textContent.includes(t),
      imgs: document.querySelectorAll('img').length,
      scripts: [...document.scripts].map((s) => s.getAttribute('src')),
    }), ex.hostile.text);
    check(h.pwned === 'undefined', `${path}: window.__pwned is ${h.pwned}`);
    check(h.text, `${path}: the hostile text is not shown as text`);
    check(h.imgs === 0, `${path}: ${h.imgs} img elements`);
    check(same(h.scripts, ['/assets/app.js']), `${path}: scripts ${JSON.stringify(h.scripts)}`);
  }
  check(dialogs.length === 0, 'dialogs: ' + dialogs.join(' | '));

  // The Host check: the same server under another name (DNS rebinding) answers nothing.
  const foreign = await page.goto(`http://evil.test:${ex.port}/`);
  result.foreignStatus = foreign.status();
  check(foreign.status() === 421, 'foreign Host status ' + foreign.status());
  check(!(await page.content()).includes(ex.open.id), 'foreign Host got the list');

  // The token: refused without it; the link sets the cookie and leaves the address bar.
  const tctx = await browser.newContext();
  const tp = await tctx.newPage();
  const r1 = await tp.goto(ex.token.base + '/');
  check(r1.status() === 401, 'no token: ' + r1.status());
  check(!(await tp.content()).includes(ex.token.id), 'no token: the list leaked');
  const r2 = await tp.goto(`${ex.token.base}/?token=${ex.token.token}`);
  check(r2.status() === 200, 'token link: ' + r2.status());
  check(tp.url() === ex.token.base + '/', 'token left in the URL: ' + tp.url());
  await ready(tp);
  check((await tp.evaluate(() => document.querySelectorAll('#sessions li.session').length)) === ex.sessions.length, 'token: list');
  const r3 = await tp.goto(`${ex.token.base}/s/${ex.token.id}`);
  check(r3.status() === 200, 'cookie: ' + r3.status());
  const cookies = await tctx.cookies();
  check(cookies.length === 1 && cookies[0].httpOnly && cookies[0].sameSite === 'Strict', 'cookie ' + JSON.stringify(cookies.map((c) => [c.name, c.httpOnly, c.sameSite])));
  const other = await browser.newContext();
  const op = await other.newPage();
  const r4 = await op.goto(`${ex.token.base}/s/${ex.token.id}`);
  check(r4.status() === 401, 'another browser without the token: ' + r4.status());
  const r5 = await op.goto(`${ex.token.base}/?token=not-the-token-at-all`);
  check(r5.status() === 401, 'wrong token: ' + r5.status());

  // With --archive (when the test has PostgreSQL): the archive's copies beside the local
  // sessions, each with its owner and machine, and the machine filter narrowing to them.
  if (ex.archive) {
    await page.goto(ex.archive.base + '/');
    await ready(page);
    const rows = () => page.evaluate(() => [...document.querySelectorAll('#sessions li.session')]
      .map((l) => [l.dataset.id, l.dataset.owner || '', l.dataset.machine || '',
        l.querySelector('.from')?.textContent || '']));
    result.archiveRows = await rows();
    for (const [id, owner, machine] of ex.archive.rows) {
      check(result.archiveRows.some((r) => same(r, [id, owner, machine, owner + '@' + machine])),
        `archive row ${id} ${owner}@${machine}: ` + JSON.stringify(result.archiveRows));
    }
    check(result.archiveRows.length === ex.archive.rows.length + ex.sessions.length,
      'archive list: ' + result.archiveRows.length);
    await page.selectOption('#machine', ex.archive.rows[0][2]);
    await until(page, (want) => {
      const got = [...document.querySelectorAll('#sessions li.session')].map((l) => l.dataset.id);
      return document.body.dataset.searching === '' && JSON.stringify(got) === JSON.stringify(want);
    }, [ex.archive.rows[0][0]]);
    check(new URL(page.url()).searchParams.get('machine') === ex.archive.rows[0][2], 'machine filter url: ' + page.url());
  }
} catch (e) {
  errors.push(String(e && e.stack || e));
}
check(errors.length === 0, 'errors: ' + errors.join(' | '));
await browser.close();
result.failures = failures;
console.log(JSON.stringify(result));
process.exit(failures.length ? 1 : 0);
