// The reference doing what `sessiontree context FILE --json` does: SessionManager.open +
// buildSessionContext. Usage: node ref-context.mjs pi16|pi073 FILE [--print]
// Prints the in-process time on stderr; with --print also the context JSON on stdout.
// Only for clean generated files: open() would write to a torn or old-format file.
const [which, file, print] = process.argv.slice(2);
const mod = await import(new URL(`../interop/node_modules/${which}/dist/core/session-manager.js`, import.meta.url));
const t0 = performance.now();
const sm = mod.SessionManager.open(file);
const ctx = sm.buildSessionContext();
const t1 = performance.now();
process.stderr.write(`${which} in-process open+context: ${(t1 - t0).toFixed(0)} ms (${ctx.messages.length} messages)\n`);
if (print === "--print") process.stdout.write(JSON.stringify(ctx));
