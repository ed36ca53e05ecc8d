// The reference appending N messages: node ref-append.mjs pi16 FILE N
// FILE may exist (opened) or not (a new session). Prints microseconds per entry as JSON.
const [which, file, n] = process.argv.slice(2);
const mod = await import(new URL(`../interop/node_modules/${which}/dist/core/session-manager.js`, import.meta.url));
const { existsSync } = await import("node:fs");
const { dirname } = await import("node:path");
const t0 = performance.now();
const sm = existsSync(file) ? mod.SessionManager.open(file) : mod.SessionManager.create("/home/dev/project", dirname(file));
const openMs = performance.now() - t0;
const message = { role: "user", content: [{ type: "text", text: "a message of ordinary size, with a few words so that the line is about three hundred bytes long, like a short prompt typed by a person at a terminal" }], timestamp: 1733234400000 };
const count = Number(n);
const t = performance.now();
for (let i = 0; i < count; i++) sm.appendMessage(message);
const us = ((performance.now() - t) * 1000) / count;
console.log(JSON.stringify({ open_ms: +openMs.toFixed(1), us_per_entry: +us.toFixed(2), entries_per_s: Math.round(1e6 / us) }));
