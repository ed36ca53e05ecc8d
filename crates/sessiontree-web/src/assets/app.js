// sessiontree serve: search as you type and filter on the list, live updates of a session
// page. Pages come from the server already rendered and escaped; this script only fetches
// them again and swaps a part. It never writes markup from data: a fetched page is parsed
// by DOMParser (whose scripts never run) and its nodes are adopted.
'use strict';
(function () {
  const body = document.body;

  async function fetchPart(url, id, signal) {
    const res = await fetch(url, { credentials: 'same-origin', signal });
    if (!res.ok) throw new Error(res.status + ' ' + res.statusText);
    const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
    const fresh = doc.getElementById(id);
    const old = document.getElementById(id);
    if (fresh && old) old.replaceWith(document.adoptNode(fresh));
  }

  // The list: every change of the form asks the server for the list part again (the
  // newest request wins; an older one is aborted).
  const form = document.getElementById('filters');
  if (form && document.getElementById('sessions')) {
    let timer = null;
    let pending = null;
    let seq = 0;
    const update = () => {
      const params = new URLSearchParams(new FormData(form));
      for (const [k, v] of [...params.entries()]) if (v === '') params.delete(k);
      const qs = params.toString();
      history.replaceState(null, '', qs ? '/?' + qs : '/');
      params.set('part', 'list');
      if (pending) pending.abort();
      pending = new AbortController();
      const mine = ++seq;
      body.dataset.searching = '1';
      fetchPart('/?' + params.toString(), 'sessions', pending.signal)
        .then(() => { if (mine === seq) { body.dataset.searching = ''; body.dataset.updated = String(mine); } })
        .catch((e) => { if (e.name !== 'AbortError') body.dataset.error = String(e); });
    };
    form.addEventListener('input', (ev) => {
      clearTimeout(timer);
      timer = setTimeout(update, ev.target && ev.target.id === 'q' ? 150 : 0);
    });
    form.addEventListener('submit', (ev) => { ev.preventDefault(); clearTimeout(timer); update(); });
  }

  // A session page: poll the file's version every second; when it changed, fetch the page
  // again and swap its main part (the scroll position stays).
  const live = body.dataset.live;
  if (live) {
    let busy = false;
    setInterval(async () => {
      if (busy || document.hidden) return;
      busy = true;
      try {
        const res = await fetch(live, { credentials: 'same-origin', cache: 'no-store' });
        if (res.ok) {
          const v = (await res.text()).trim();
          if (v && v !== body.dataset.version) {
            const url = new URL(location.href);
            url.searchParams.set('part', 'main');
            await fetchPart(url.pathname + url.search, 'main');
            body.dataset.version = v;
          }
        }
      } catch (e) {
        body.dataset.error = String(e);
      } finally {
        busy = false;
      }
    }, 1000);
  }

  // The focused row in the middle of the tree's own scroll area (the page stays put).
  const tree = document.getElementById('tree');
  const focus = tree && tree.querySelector('.row.focus');
  if (focus && tree.scrollHeight > tree.clientHeight) {
    tree.scrollTop = focus.offsetTop - tree.offsetTop - tree.clientHeight / 2;
  }
  body.dataset.ready = '1';
})();
