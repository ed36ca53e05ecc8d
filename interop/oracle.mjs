#!/usr/bin/env node
// The oracle: what the 1.6.0 reference sees in session files, as JSON.
//
//   node oracle.mjs dump FILE... [--list-file PATHS.txt] [--out OUT.json] [--no-llm] [--lone-surrogates replace|keep]
//   node oracle.mjs list DIR [--cwd CWD] [--agent-dir AGENT_DIR]
//   node oracle.mjs list-all AGENT_DIR
//   node oracle.mjs recent DIR [--cwd CWD]
//   node oracle.mjs find-id DIR --cwd CWD --id SESSION_ID
//
// `dump` never touches the given files: the reference's load writes (it appends "\n" to a
// torn tail, rewrites v1/v2 files when migrating, writes a header into an empty file), so
// every file is copied to a private temp dir and the copy is opened.
// See README.md for the exact output shapes.

import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, openSync, writeSync, closeSync } from "node:fs";
import { once } from "node:events";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { die, loadMessagesModule, loadSessionModule, parseArgs } from "./lib/common.mjs";

const USAGE = `usage:
  node oracle.mjs dump FILE... [--list-file PATHS.txt] [--out OUT.json] [--no-llm] [--lone-surrogates replace|keep]
  node oracle.mjs list DIR [--cwd CWD] [--agent-dir AGENT_DIR]
  node oracle.mjs list-all AGENT_DIR
  node oracle.mjs recent DIR [--cwd CWD]
  node oracle.mjs find-id DIR --cwd CWD --id SESSION_ID`;

let opts;
try {
  opts = parseArgs(process.argv.slice(2), ["no-llm", "help"]);
} catch (e) {
  die(`${e.message}\n${USAGE}`);
}
if (opts.help || opts._.length === 0) {
  if (opts.help) {
    console.log(USAGE);
    process.exit(0);
  }
  die(USAGE);
}
const [cmd, ...args] = opts._;

const S = await loadSessionModule("pi16");
const M = await loadMessagesModule("pi16");
const { SessionManager, buildSessionContext } = S;

// ---------------------------------------------------------------------------
// output
// ---------------------------------------------------------------------------

// JSON.stringify writes a lone surrogate (only reachable through a \uD800-style escape in a
// file) as the escape text \udXXX; valid pairs are written raw. Strict parsers (serde_json)
// reject such escapes, so by default they become \ufffd and the result is marked.
const LONE = opts["lone-surrogates"] ?? "replace";
if (LONE !== "replace" && LONE !== "keep") die(`--lone-surrogates must be replace or keep\n${USAGE}`);
const LONE_RE = /(?<!\\)((?:\\\\)*)\\u(d[89a-f][0-9a-f]{2})/g;
function fixLoneSurrogates(json) {
  if (LONE === "keep" || !json.includes("\\ud")) return [json, 0];
  let n = 0;
  const out = json.replace(LONE_RE, (_, bs) => {
    n++;
    return `${bs}\\ufffd`;
  });
  return [out, n];
}

let outFd = null;
if (opts.out) outFd = openSync(resolve(opts.out), "w");
async function emit(str) {
  if (outFd !== null) {
    writeSync(outFd, str);
    return;
  }
  if (!process.stdout.write(str)) await once(process.stdout, "drain");
}
async function finish() {
  if (outFd !== null) closeSync(outFd);
  else await new Promise((r) => process.stdout.write("", r));
}

// ---------------------------------------------------------------------------
// cycle guards: the reference's parent walks never terminate on a parentId cycle
// (getBranch, buildSessionContext) and getTree loops on a cycle reachable from a root.
// These mirror the reference's own lookups exactly (same Map, same truthiness tests)
// and only decide whether it is safe to call the reference.
// ---------------------------------------------------------------------------

const CYCLE = "cycle: the reference would not terminate";

function walkTerminates(index, start) {
  const seen = new Set();
  let cur = start;
  while (cur) {
    if (seen.has(cur)) return false;
    seen.add(cur);
    cur = cur.parentId ? index.get(cur.parentId) : undefined;
  }
  return true;
}

/** Start entry of buildSessionPath(entries, leafId, index). */
function contextStart(entries, index, leafId) {
  if (leafId === null) return undefined;
  let leaf;
  if (leafId) leaf = index.get(leafId);
  leaf ??= entries[entries.length - 1];
  return leaf;
}

/** Start entry of sm.getBranch(fromId). */
function branchStart(sm, fromId) {
  const startId = fromId ?? sm.getLeafId();
  return startId ? sm.byId.get(startId) : undefined;
}

/** Would sm.getTree() terminate? Simulates its node map and links, then looks for a cycle reachable from a root. */
function treeTerminates(entries) {
  const nodeOf = new Map();
  entries.forEach((e, i) => nodeOf.set(e.id, i));
  const kids = new Map();
  const roots = [];
  for (const e of entries) {
    const node = nodeOf.get(e.id);
    if (e.parentId === null || e.parentId === e.id) roots.push(node);
    else {
      const p = nodeOf.get(e.parentId);
      if (p !== undefined) {
        if (!kids.has(p)) kids.set(p, []);
        kids.get(p).push(node);
      } else roots.push(node);
    }
  }
  const state = new Map(); // 1 = on stack, 2 = done
  for (const r of roots) {
    if (state.get(r) === 2) continue;
    const stack = [[r, 0]];
    state.set(r, 1);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const ch = kids.get(top[0]) ?? [];
      if (top[1] < ch.length) {
        const c = ch[top[1]++];
        const st = state.get(c);
        if (st === 1) return false;
        if (st !== 2) {
          state.set(c, 1);
          stack.push([c, 0]);
        }
      } else {
        state.set(top[0], 2);
        stack.pop();
      }
    }
  }
  return true;
}

// ---------------------------------------------------------------------------
// dump
// ---------------------------------------------------------------------------

const MISSING_ID = "\u0000no-such-entry";
const SPREAD = 10;
const ALL_IDS_UP_TO = 30;

function chooseIds(ids) {
  if (ids.length <= ALL_IDS_UP_TO) return ids.slice();
  const out = [];
  for (let i = 0; i < SPREAD; i++) {
    const id = ids[Math.round((i * (ids.length - 1)) / (SPREAD - 1))];
    if (!out.includes(id)) out.push(id);
  }
  return out;
}

function splitLines(text) {
  const lines = text.split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

function nonCanonicalLines(text) {
  const out = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    let v;
    try {
      v = JSON.parse(lines[i]);
    } catch {
      continue;
    }
    if (JSON.stringify(v) !== lines[i]) out.push(i + 1);
  }
  return out;
}

function errMsg(e) {
  return e instanceof Error ? e.message : String(e);
}

function dumpOne(file, tmpRoot, n, withLlm) {
  const abs = resolve(file);
  const res = { file };
  let original;
  try {
    original = readFileSync(abs);
  } catch (e) {
    return { file, error: `cannot read: ${errMsg(e)}`, readError: true };
  }
  const dir = join(tmpRoot, String(n));
  mkdirSync(dir);
  const copy = join(dir, basename(abs));
  copyFileSync(abs, copy);
  const unTemp = (s) => (typeof s === "string" ? s.split(copy).join(abs).split(dir).join(resolve(abs, "..")) : s);

  let sm = null;
  try {
    sm = SessionManager.open(copy);
    res.error = null;
  } catch (e) {
    res.error = unTemp(errMsg(e));
  }
  const fieldErrors = {};
  const safe = (name, fn, fallback = null) => {
    try {
      return fn();
    } catch (e) {
      fieldErrors[name] = unTemp(errMsg(e));
      return fallback;
    }
  };

  if (sm) {
    const entries = sm.getEntries();
    const leafId = sm.getLeafId();
    res.header = sm.getHeader();
    res.entries = entries;
    res.leafId = leafId === undefined ? null : leafId;
    if (leafId === undefined) res.leafIsUndefined = true;
    res.name = safe("name", () => sm.getSessionName() ?? null);
    res.entryCount = sm.getEntryCount();
    res.sessionId = sm.getSessionId();
    res.tree = treeTerminates(entries) ? safe("tree", () => sm.getTree()) : ((fieldErrors.tree = CYCLE), null);

    const ids = [];
    const seenIds = new Set();
    for (const e of entries) {
      const id = e?.id;
      if (typeof id === "string" && !seenIds.has(id)) {
        seenIds.add(id);
        ids.push(id);
      }
    }
    const labels = Object.create(null);
    for (const id of ids) {
      const label = sm.getLabel(id);
      if (label !== undefined) labels[id] = { label, labelTimestamp: sm.labelTimestampsById.get(id) ?? null };
    }
    res.labels = labels;
    // every label the reference holds, including ones whose target is not an entry
    res.labelMap = [...sm.labelsById].map(([targetId, label]) => ({
      targetId: targetId ?? null,
      label,
      labelTimestamp: sm.labelTimestampsById.get(targetId) ?? null,
    }));
    const children = Object.create(null);
    for (const id of ids) children[id] = sm.getChildren(id).map((e) => e?.id ?? null);
    res.children = children;

    const leaves = [{ kind: "default", leaf: "default" }, { kind: "null", leaf: null }];
    for (const id of chooseIds(ids)) leaves.push({ kind: "id", leaf: id });
    leaves.push({ kind: "missing", leaf: MISSING_ID });

    res.branches = leaves.map(({ kind, leaf }) => {
      const fromId = kind === "default" ? undefined : leaf;
      const out = { kind, from: leaf };
      if (!walkTerminates(sm.byId, branchStart(sm, fromId))) out.error = CYCLE;
      else {
        try {
          out.ids = sm.getBranch(fromId).map((e) => e?.id ?? null);
        } catch (e) {
          out.error = unTemp(errMsg(e));
        }
      }
      return out;
    });

    const index = new Map();
    for (const e of entries) index.set(e.id, e);
    res.contexts = leaves.map(({ kind, leaf }) => {
      const out = { kind, leaf };
      const start = kind === "default" ? contextStart(entries, sm.byId, leafId) : contextStart(entries, index, leaf);
      if (!walkTerminates(index, start)) {
        out.error = CYCLE;
        return out;
      }
      try {
        const context = kind === "default" ? sm.buildSessionContext() : buildSessionContext(entries, leaf);
        out.context = context;
        if (withLlm) out.llm = M.convertToLlm(context.messages);
      } catch (e) {
        out.error = unTemp(errMsg(e));
      }
      return out;
    });
  }

  // what the load did to the (copied) file
  const after = readFileSync(copy);
  if (after.equals(original)) {
    res.fileChange = "none";
    res.migratedLines = null;
  } else if (after.length === original.length + 1 && after[after.length - 1] === 0x0a && after.subarray(0, original.length).equals(original)) {
    res.fileChange = "tail-repaired";
    res.migratedLines = null;
  } else {
    res.fileChange = "rewritten";
    res.migratedLines = splitLines(after.toString("utf8"));
  }
  res.nonCanonicalLines = nonCanonicalLines(original.toString("utf8"));
  if (Object.keys(fieldErrors).length) res.fieldErrors = fieldErrors;
  return res;
}

async function dump() {
  const files = [...args];
  if (opts["list-file"]) {
    for (const line of readFileSync(opts["list-file"], "utf8").split("\n")) {
      const p = line.replace(/\r$/, "");
      if (p !== "") files.push(p);
    }
  }
  const tmpRoot = mkdtempSync(join(tmpdir(), "sessiontree-oracle-"));
  const withLlm = !opts["no-llm"];
  try {
    await emit('{"results":[');
    for (let i = 0; i < files.length; i++) {
      let json;
      try {
        const res = dumpOne(files[i], tmpRoot, i, withLlm);
        json = JSON.stringify(res);
        const n = fixLoneSurrogates(json)[1];
        if (n) {
          res.loneSurrogatesReplaced = n;
          json = fixLoneSurrogates(JSON.stringify(res))[0];
        }
      } catch (e) {
        // e.g. a value JSON cannot represent; keep going
        json = JSON.stringify({ file: files[i], error: `oracle: ${errMsg(e)}`, oracleError: true });
      }
      await emit(i === 0 ? `\n${json}` : `,\n${json}`);
    }
    await emit("\n]}\n");
  } finally {
    rmSync(tmpRoot, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------
// listing
// ---------------------------------------------------------------------------

async function list() {
  const [dir] = args;
  if (!dir) die(USAGE);
  if (opts["agent-dir"]) process.env.PI_CODING_AGENT_DIR = resolve(opts["agent-dir"]);
  const sessions = opts.cwd ? await SessionManager.list(opts.cwd, resolve(dir)) : await SessionManager.listAll(resolve(dir));
  await emit(`${fixLoneSurrogates(JSON.stringify({ sessions }))[0]}\n`);
}

async function listAll() {
  const [agentDir] = args;
  if (!agentDir) die(USAGE);
  process.env.PI_CODING_AGENT_DIR = resolve(agentDir);
  const sessions = await SessionManager.listAll();
  await emit(`${fixLoneSurrogates(JSON.stringify({ sessions }))[0]}\n`);
}

async function recent() {
  const [dir] = args;
  if (!dir) die(USAGE);
  const path = S.findMostRecentSession(resolve(dir), opts.cwd);
  await emit(`${JSON.stringify({ path })}\n`);
}

async function findId() {
  const [dir] = args;
  if (!dir || !opts.cwd || !opts.id) die(USAGE);
  const path = SessionManager.findById(opts.cwd, opts.id, resolve(dir)) ?? null;
  await emit(`${JSON.stringify({ path })}\n`);
}

switch (cmd) {
  case "dump":
    await dump();
    break;
  case "list":
    await list();
    break;
  case "list-all":
    await listAll();
    break;
  case "recent":
    await recent();
    break;
  case "find-id":
    await findId();
    break;
  default:
    die(`unknown command ${cmd}\n${USAGE}`);
}
await finish();
