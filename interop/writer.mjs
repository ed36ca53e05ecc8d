#!/usr/bin/env node
// Ask the reference to write: runs a JSON script of SessionManager calls.
//
//   node writer.mjs SCRIPT.json        (or `-` to read the script from stdin)
//
// The script is either a JSON array of operations, or an object
//   {"writer": "pi16"|"pi083"|"pi073",          default "pi16"
//    "seed": 123,                               optional: seeded entry/session ids
//    "clock": {"start": "2025-01-01T00:00:00.000Z" | ms, "stepMs": 1},   optional fake clock
//    "stopOnError": false,
//    "ops": [ ... ]}
//
// Operations:
//   {"op":"create", "cwd":..., "sessionDir":..., "options":{...}}      SessionManager.create
//   {"op":"open", "path":..., "sessionDir":..., "cwdOverride":...}     SessionManager.open
//   {"op":"continueRecent", "cwd":..., "sessionDir":...}
//   {"op":"forkFrom", "sourcePath":..., "targetCwd":..., "sessionDir":..., "options":{...}}
//   {"op":"inMemory", "cwd":...}
//   {"op":"setClock", "ms": N | "iso": "...", "stepMs": N}             needs "clock"
//   {"op": METHOD, "args": [...]}        sm[METHOD](...args): any public method
//   {"op": METHOD, field: value, ...}    the same with named parameters (see NAMED below)
// A top-level argument (an element of "args" or a named field) that is the string "$N"
// becomes the id produced by operation N (0-based): its result if that is a string, else
// result.id. "$$..." stands for the literal string "$...". {"$undefined": true} stands for
// undefined (JSON has none).
//
// Prints one JSON object: {"writer", "results": [{"op", "result"?, "error"?}], "sessionFile",
// "sessionId", "leafId", "files": [every session file path the run produced or used, that
// exists], "ids": [ids of the entries appended, in order]}.

import { existsSync, readFileSync } from "node:fs";
import { FakeClock, Rng, WRITERS, die, installDeterminism, loadSessionModule } from "./lib/common.mjs";

const USAGE = "usage: node writer.mjs SCRIPT.json   (or - for stdin)";

const NAMED = {
  appendMessage: ["message"],
  appendThinkingLevelChange: ["thinkingLevel"],
  appendModelChange: ["provider", "modelId"],
  appendUsage: ["kind", "provider", "model", "usage", "note"],
  appendCompaction: ["summary", "firstKeptEntryId", "tokensBefore", "details", "fromHook", "usage"],
  appendCustomEntry: ["customType", "data"],
  appendSessionInfo: ["name"],
  appendCustomMessageEntry: ["customType", "content", "display", "details"],
  appendContextEdit: ["targetId", "replacement"],
  appendLabelChange: ["targetId", "label"],
  branch: ["branchFromId"],
  resetLeaf: [],
  branchWithSummary: ["branchFromId", "summary", "details", "fromHook", "usage"],
  createBranchedSession: ["leafId"],
  getBranch: ["fromId"],
  getChildren: ["parentId"],
  getEntry: ["id"],
  getLabel: ["id"],
  newSession: ["options"],
  setSessionFile: ["sessionFile"],
};
// accepted aliases for named fields
const ALIASES = { branchFromId: ["id", "targetId"], leafId: ["id"], fromId: ["id"], parentId: ["id"] };

const APPENDS = new Set([
  "appendMessage",
  "appendThinkingLevelChange",
  "appendModelChange",
  "appendUsage",
  "appendCompaction",
  "appendCustomEntry",
  "appendSessionInfo",
  "appendCustomMessageEntry",
  "appendContextEdit",
  "appendLabelChange",
  "branchWithSummary",
]);

const [scriptPath] = process.argv.slice(2);
if (!scriptPath || scriptPath === "--help") die(USAGE, scriptPath ? 0 : 2);
let script;
try {
  script = JSON.parse(readFileSync(scriptPath === "-" ? 0 : scriptPath, "utf8"));
} catch (e) {
  die(`cannot read script: ${e.message}`);
}
if (Array.isArray(script)) script = { ops: script };
if (!script || !Array.isArray(script.ops)) die("script must be an array of ops or an object with an ops array");
const writer = script.writer ?? "pi16";
if (!WRITERS.includes(writer)) die(`unknown writer ${writer} (want ${WRITERS.join("|")})`);

let clock = null;
if (script.clock || script.seed !== undefined) {
  if (script.clock) {
    const start = typeof script.clock.start === "string" ? Date.parse(script.clock.start) : (script.clock.start ?? Date.UTC(2025, 0, 1));
    if (!Number.isFinite(start)) die("clock.start is not a valid time");
    const step = script.clock.stepMs ?? 1;
    clock = new FakeClock(start, () => step);
  }
  installDeterminism({ idRng: script.seed !== undefined ? new Rng(script.seed, "writer-ids") : null, clock });
}

const { SessionManager } = await loadSessionModule(writer);

const results = [];
const ids = [];
const files = [];
let sm = null;

const noteFile = () => {
  const f = sm?.getSessionFile?.();
  if (f && !files.includes(f)) files.push(f);
};

function resolveArg(v) {
  if (typeof v === "string") {
    if (v.startsWith("$$")) return v.slice(1);
    const m = /^\$(\d+)$/.exec(v);
    if (m) {
      const n = Number(m[1]);
      if (n >= results.length) throw new Error(`reference ${v} points at an operation that has not run`);
      const r = results[n].result;
      if (typeof r === "string") return r;
      if (r && typeof r === "object" && typeof r.id === "string") return r.id;
      throw new Error(`reference ${v}: operation ${n} produced no id`);
    }
    return v;
  }
  if (v && typeof v === "object" && !Array.isArray(v) && v.$undefined === true && Object.keys(v).length === 1) return undefined;
  return v;
}

function namedArgs(op, method) {
  const names = NAMED[method];
  if (!names) {
    if (Object.keys(op).some((k) => k !== "op")) throw new Error(`no named parameters known for ${method}: use "args"`);
    return [];
  }
  return names.map((name) => {
    if (name in op) return op[name];
    for (const alias of ALIASES[name] ?? []) if (alias in op) return op[alias];
    return undefined;
  });
}

function run(op) {
  const name = op.op;
  const pick = (k) => resolveArg(op[k]);
  switch (name) {
    case "create":
      sm = SessionManager.create(pick("cwd"), pick("sessionDir"), op.options);
      noteFile();
      return sm.getSessionFile();
    case "open":
      sm = SessionManager.open(pick("path"), pick("sessionDir"), pick("cwdOverride"));
      noteFile();
      return sm.getSessionFile();
    case "continueRecent":
      sm = SessionManager.continueRecent(pick("cwd"), pick("sessionDir"));
      noteFile();
      return sm.getSessionFile();
    case "forkFrom":
      sm = SessionManager.forkFrom(pick("sourcePath"), pick("targetCwd"), pick("sessionDir"), op.options);
      noteFile();
      return sm.getSessionFile();
    case "inMemory":
      sm = SessionManager.inMemory(pick("cwd"));
      return null;
    case "setClock": {
      if (!clock) throw new Error("setClock needs a script-level clock");
      const ms = op.iso !== undefined ? Date.parse(op.iso) : op.ms;
      const step = op.stepMs;
      clock.set(ms, step !== undefined ? () => step : undefined);
      return null;
    }
    default: {
      if (!sm) throw new Error("no session: start with create/open/continueRecent/forkFrom/inMemory");
      if (typeof sm[name] !== "function" || name.startsWith("_") || name === "constructor") throw new Error(`unknown method ${name}`);
      const args = (Array.isArray(op.args) ? op.args : namedArgs(op, name)).map(resolveArg);
      const result = sm[name](...args);
      if (APPENDS.has(name)) ids.push(typeof result === "string" ? result : result?.id);
      if (name === "createBranchedSession" || name === "newSession" || name === "setSessionFile") noteFile();
      return result;
    }
  }
}

for (const op of script.ops) {
  const rec = { op: op?.op ?? null };
  try {
    if (!op || typeof op.op !== "string") throw new Error("operation without a string `op`");
    const result = run(op);
    if (result !== undefined) rec.result = result;
  } catch (e) {
    rec.error = e instanceof Error ? e.message : String(e);
  }
  results.push(rec);
  if (rec.error && script.stopOnError) break;
}

const out = {
  writer,
  results,
  sessionFile: sm?.getSessionFile?.() ?? null,
  sessionId: sm?.getSessionId?.() ?? null,
  leafId: sm?.getLeafId?.() ?? null,
  files: files.filter((f) => existsSync(f)),
  ids,
};
process.stdout.write(`${JSON.stringify(out)}\n`);
