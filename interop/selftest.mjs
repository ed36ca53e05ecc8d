#!/usr/bin/env node
// Self-test of the interop scripts (not of sessiontree): runs gen + oracle + writer the way
// the Rust tests do and checks that they behave.
//
//   node selftest.mjs [--keep] [--count 300]
//
// Checks: gen is deterministic for a seed; the oracle prints valid JSON with the documented
// shape for every file (hostile ones included) and never modifies the files it reads;
// list / list-all / recent / find-id run; writer.mjs drives all three releases; and a
// `--count` session run of gen + oracle stays well under a minute.

import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "./lib/common.mjs";

const opts = parseArgs(process.argv.slice(2), ["keep"]);
const HERE = fileURLToPath(new URL(".", import.meta.url));
const root = mkdtempSync(join(tmpdir(), "sessiontree-interop-selftest-"));
let failures = 0;

function check(cond, msg) {
  if (!cond) {
    failures++;
    console.error(`FAIL: ${msg}`);
  }
}

function node(args, { input } = {}) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { cwd: HERE, encoding: "utf8", maxBuffer: 1 << 30, input });
  const ms = performance.now() - t0;
  if (r.status !== 0) {
    console.error(r.stderr);
    throw new Error(`node ${args.join(" ")} exited with ${r.status}`);
  }
  return { stdout: r.stdout, stderr: r.stderr, ms };
}

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (p.endsWith(".jsonl")) out.push(p);
  }
  return out.sort();
}

const sha = (p) => createHash("sha256").update(readFileSync(p)).digest("hex");

function validateResult(x) {
  check(typeof x.file === "string", "result.file");
  check(x.error === null || typeof x.error === "string", `error type in ${x.file}`);
  if (x.readError || x.oracleError) return check(false, `oracle could not handle ${x.file}: ${x.error}`);
  if (x.error === null) {
    for (const k of ["header", "entries", "leafId", "name", "entryCount", "sessionId", "labels", "children", "branches", "contexts"]) {
      check(k in x, `missing ${k} in ${x.file}`);
    }
    check(Array.isArray(x.entries), `entries array in ${x.file}`);
    check(x.contexts.some((c) => c.kind === "default") && x.contexts.some((c) => c.kind === "null"), `default/null contexts in ${x.file}`);
    for (const c of x.contexts) check(c.error !== undefined || (c.context && Array.isArray(c.context.messages) && Array.isArray(c.llm)), `context shape in ${x.file}`);
    for (const b of x.branches) check(b.error !== undefined || Array.isArray(b.ids), `branch shape in ${x.file}`);
  }
  check(["none", "tail-repaired", "rewritten"].includes(x.fileChange), `fileChange in ${x.file}`);
  check(x.migratedLines === null || Array.isArray(x.migratedLines), `migratedLines in ${x.file}`);
  check(Array.isArray(x.nonCanonicalLines), `nonCanonicalLines in ${x.file}`);
}

try {
  // 1. determinism
  const a = join(root, "a");
  const b = join(root, "b");
  node(["gen.mjs", "--out", a, "--seed", "7", "--count", "30", "--quiet"]);
  node(["gen.mjs", "--out", b, "--seed", "7", "--count", "30", "--quiet"]);
  const fa = walk(a).map((p) => relative(a, p));
  const fb = walk(b).map((p) => relative(b, p));
  check(JSON.stringify(fa) === JSON.stringify(fb), "same seed gives the same file names");
  for (const rel of fa) {
    const ta = readFileSync(join(a, rel), "utf8").split(a).join("<DIR>");
    const tb = readFileSync(join(b, rel), "utf8").split(b).join("<DIR>");
    check(ta === tb, `same seed gives the same bytes: ${rel}`);
  }
  const ma = JSON.parse(readFileSync(join(a, "manifest.json"), "utf8"));
  check(ma.files.length === fa.length, "manifest lists every file");
  console.log(`determinism: ${fa.length} files identical across two runs`);

  // 2. every writer, oracle on everything, originals untouched
  for (const w of ["pi16", "pi083", "pi073", "v1", "v2"]) {
    const d = join(root, `w-${w}`);
    node(["gen.mjs", "--out", d, "--seed", "11", "--count", "12", "--writer", w, "--no-hostile", "--quiet"]);
    const files = walk(d);
    check(files.length >= 12, `writer ${w} produced ${files.length} files`);
    const before = files.map(sha);
    const { stdout } = node(["oracle.mjs", "dump", ...files]);
    const doc = JSON.parse(stdout);
    check(doc.results.length === files.length, `oracle: one result per file (${w})`);
    doc.results.forEach(validateResult);
    check(doc.results.every((x) => x.error === null), `every ${w} file opens in 1.6`);
    check(JSON.stringify(files.map(sha)) === JSON.stringify(before), `oracle left ${w} files untouched`);
    if (w === "v1" || w === "v2") check(doc.results.every((x) => x.fileChange === "rewritten"), `${w} files are migrated`);
    else check(doc.results.every((x) => x.fileChange === "none"), `${w} files are not rewritten`);
    console.log(`writer ${w}: ${files.length} files, oracle ok`);
  }

  // 3. hostile files
  {
    const files = walk(a);
    const before = files.map(sha);
    const listFile = join(root, "a.list");
    writeFileSync(listFile, `${files.join("\n")}\n`);
    const out = join(root, "a.json");
    node(["oracle.mjs", "dump", "--list-file", listFile, "--out", out]);
    const doc = JSON.parse(readFileSync(out, "utf8"));
    doc.results.forEach(validateResult);
    check(JSON.stringify(files.map(sha)) === JSON.stringify(before), "oracle left hostile files untouched");
    const byKind = {};
    for (const f of ma.files) byKind[f.kind] = doc.results.find((x) => x.file === join(a, f.path));
    check(byKind["torn-tail"].fileChange === "tail-repaired", "torn tail is repaired on the copy");
    check(byKind["not-a-session"].error?.includes("not a valid"), "not-a-session is rejected");
    check(byKind["v1-primitive-line"].error !== null, "v1 file with a 42 line throws in migration");
    check(byKind["two-cycle"].contexts.find((c) => c.kind === "default").error?.startsWith("cycle"), "cycle is reported, not run");
    check(byKind["primitive-last-line"].leafIsUndefined === true, "primitive last line leaves the leaf undefined");
    check(byKind["empty-file"].fileChange === "rewritten", "empty file gets a header");
    console.log(`hostile: ${Object.keys(byKind).length} kinds, oracle ok`);
  }

  // 4. listing
  {
    const all = JSON.parse(node(["oracle.mjs", "list-all", a]).stdout);
    check(Array.isArray(all.sessions) && all.sessions.length > 0, "list-all returns sessions");
    const dir = join(a, "sessions", "--work-hostile--");
    const flat = JSON.parse(node(["oracle.mjs", "list", dir]).stdout);
    check(flat.sessions.length > 0, "list DIR returns sessions");
    const filtered = JSON.parse(node(["oracle.mjs", "list", dir, "--cwd", "/work/hostile"]).stdout);
    check(filtered.sessions.every((s) => s.cwd === "/work/hostile"), "list --cwd filters by cwd");
    const recent = JSON.parse(node(["oracle.mjs", "recent", dir]).stdout);
    check(typeof recent.path === "string", "recent finds a file");
    const some = flat.sessions[0];
    const found = JSON.parse(node(["oracle.mjs", "find-id", dir, "--cwd", some.cwd || "/work/hostile", "--id", String(some.id)]).stdout);
    check(found.path !== undefined, "find-id runs");
    console.log(`listing: list-all ${all.sessions.length}, list ${flat.sessions.length}, filtered ${filtered.sessions.length}`);
  }

  // 5. writer
  for (const w of ["pi16", "pi083", "pi073"]) {
    const dir = join(root, `writer-${w}`);
    const script = {
      writer: w,
      seed: 1,
      clock: { start: "2025-05-05T05:05:05.005Z", stepMs: 7 },
      ops: [
        { op: "create", cwd: "/work/writer", sessionDir: dir },
        { op: "appendThinkingLevelChange", thinkingLevel: "high" },
        { op: "appendMessage", message: { role: "user", content: "hi", timestamp: 1 } },
        {
          op: "appendMessage",
          message: { role: "assistant", content: [{ type: "text", text: "yo" }], api: "a", provider: "p", model: "m", usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: "stop", timestamp: 2 },
        },
        { op: "appendLabelChange", targetId: "$2", label: "L" },
        { op: "branch", id: "$2" },
        { op: "appendCompaction", args: ["s", { $undefined: true }, 5] },
        { op: "getLeafId" },
        { op: "getBranch" },
      ],
    };
    const out = JSON.parse(node(["writer.mjs", "-"], { input: JSON.stringify(script) }).stdout);
    check(out.results.every((r) => !r.error), `writer ${w}: no errors (${JSON.stringify(out.results.filter((r) => r.error))})`);
    check(out.files.length === 1 && out.ids.length === 5, `writer ${w}: one file, five ids`);
    const again = JSON.parse(node(["writer.mjs", "-"], { input: JSON.stringify({ ...script, ops: script.ops.map((o) => (o.op === "create" ? { ...o, sessionDir: `${dir}-2` } : o)) }) }).stdout);
    check(
      readFileSync(out.files[0], "utf8").split(dir).join("D") === readFileSync(again.files[0], "utf8").split(`${dir}-2`).join("D"),
      `writer ${w}: seeded runs write identical bytes`,
    );
  }
  console.log("writer: pi16, pi083, pi073 ok");

  // 6. timing
  {
    const count = Number(opts.count ?? 300);
    const d = join(root, "big");
    const g = node(["gen.mjs", "--out", d, "--seed", "2024", "--count", String(count), "--quiet"]);
    const files = walk(d);
    const listFile = join(root, "big.list");
    writeFileSync(listFile, `${files.join("\n")}\n`);
    const out = join(root, "big.json");
    const o = node(["oracle.mjs", "dump", "--list-file", listFile, "--out", out]);
    const t0 = performance.now();
    const doc = JSON.parse(readFileSync(out, "utf8"));
    const parseMs = performance.now() - t0;
    check(doc.results.length === files.length, "timing run: one result per file");
    const total = g.ms + o.ms;
    check(total < 60000, `gen+oracle for ${count} sessions took ${total} ms`);
    console.log(
      `timing: ${count} sessions -> ${files.length} files; gen ${g.ms.toFixed(0)} ms, oracle ${o.ms.toFixed(0)} ms ` +
        `(${(statSync(out).size / 1e6).toFixed(1)} MB JSON, parsed in ${parseMs.toFixed(0)} ms)`,
    );
  }
} finally {
  if (opts.keep) console.log(`kept ${root}`);
  else rmSync(root, { recursive: true, force: true });
}

if (failures) {
  console.error(`${failures} check(s) failed`);
  process.exit(1);
}
console.log("selftest: all checks passed");
