#!/usr/bin/env node
// Seeded generator of random session files, written by the reference itself.
//
//   node gen.mjs --out DIR --seed N --count K [--writer pi16|pi083|pi073|v1|v2|all]
//                [--no-hostile] [--nondeterministic] [--quiet]
//
// Layout: DIR/sessions/--<encoded cwd>--/<timestamp>_<id>.jsonl (the agent-dir layout, so
// `PI_CODING_AGENT_DIR=DIR` / `oracle.mjs list-all DIR` see every file) and DIR/manifest.json.
// See README.md for the manifest shape.

import { existsSync, mkdirSync, readFileSync, writeFileSync, rmSync, readdirSync } from "node:fs";
import { join, resolve, relative } from "node:path";
import { FakeClock, Rng, WRITERS, die, installDeterminism, loadSessionModule, parseArgs, realNow } from "./lib/common.mjs";
import * as C from "./lib/content.mjs";

const USAGE =
  "usage: node gen.mjs --out DIR --seed N --count K [--writer pi16|pi083|pi073|v1|v2|all] [--no-hostile] [--nondeterministic] [--quiet]";

let opts;
try {
  opts = parseArgs(process.argv.slice(2), ["no-hostile", "nondeterministic", "quiet", "help"]);
} catch (e) {
  die(`${e.message}\n${USAGE}`);
}
if (opts.help) {
  console.log(USAGE);
  process.exit(0);
}
if (!opts.out) die(USAGE);
const OUT = resolve(opts.out);
const SEED = Number(opts.seed ?? 1);
const COUNT = Number(opts.count ?? 10);
const WRITER = opts.writer ?? "all";
const ALL_KINDS = ["pi16", "pi083", "pi073", "v1", "v2"];
if (!Number.isInteger(SEED)) die("--seed must be an integer");
if (!Number.isInteger(COUNT) || COUNT < 0) die("--count must be a non-negative integer");
if (WRITER !== "all" && !ALL_KINDS.includes(WRITER)) die(`unknown --writer ${WRITER}\n${USAGE}`);
const HOSTILE = !opts["no-hostile"];
const DETERMINISTIC = !opts.nondeterministic;
const QUIET = !!opts.quiet;

// ---------------------------------------------------------------------------
// clock and ids
// ---------------------------------------------------------------------------

const clock = DETERMINISTIC
  ? new FakeClock(Date.UTC(2025, 0, 1))
  : { tick: () => realNow(), peek: () => realNow(), set() {} };
if (DETERMINISTIC) installDeterminism({ idRng: new Rng(SEED, "ids"), clock });

/** Per-session clock behaviour. */
function setSessionClock(rng, startMs) {
  const mode = rng.weighted([
    [70, "normal"],
    [20, "ties"],
    [10, "skew"],
  ]);
  const stepRng = new Rng(rng.u32(), "clock");
  const step =
    mode === "normal"
      ? () => stepRng.int(1, 3000)
      : mode === "ties"
        ? () => (stepRng.chance(0.6) ? 0 : 1)
        : () => (stepRng.chance(0.15) ? -stepRng.int(1, 5000) : stepRng.int(1, 2000));
  clock.set(startMs, step);
  return mode;
}

// ---------------------------------------------------------------------------
// layout
// ---------------------------------------------------------------------------

const CWDS = ["/work/proj-alpha", "/home/pi/my project/ünïcode", "/tmp/a:b/c", "/srv/x/y/z"];
// 0.73.1 stores the cwd as given: give it some unnormalised ones.
const RAW_CWDS_073 = ["/srv/x/y/z/", "/srv/x/../x/y/z", "/work/proj-alpha/./"];

function encodeCwd(cwd) {
  return `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
}
function sessionDirFor(cwd, raw = false) {
  const d = join(OUT, "sessions", encodeCwd(raw ? cwd : resolve(cwd)));
  mkdirSync(d, { recursive: true });
  return d;
}
function fileNameFor(tsIso, id) {
  return `${tsIso.replace(/[:.]/g, "-")}_${id}.jsonl`;
}

const manifest = {
  generator: "sessiontree interop gen.mjs",
  seed: SEED,
  count: COUNT,
  writer: WRITER,
  deterministic: DETERMINISTIC,
  hostile: HOSTILE,
  files: [],
  warnings: [],
};
function record(absPath, fields) {
  manifest.files.push({ path: relative(OUT, absPath), ...fields });
}
function warn(msg) {
  manifest.warnings.push(msg);
  if (!QUIET) process.stderr.write(`gen: ${msg}\n`);
}

// ---------------------------------------------------------------------------
// random walk over the reference's public API
// ---------------------------------------------------------------------------

const FEATURES = {
  pi16: { system: true, usageEntries: true, contextEdit: true, usageArg: true, fileAt: "user-or-assistant" },
  pi083: { system: false, usageEntries: false, contextEdit: false, usageArg: true, fileAt: "assistant" },
  pi073: { system: false, usageEntries: false, contextEdit: false, usageArg: false, fileAt: "assistant" },
};

function sessionSize(rng, index) {
  if (index % 25 === 3 || rng.chance(0.04)) return rng.int(300, 600);
  if (rng.chance(0.1)) return rng.int(80, 200);
  return rng.int(5, 80);
}

async function walkSession(writer, index) {
  const mod = modules[writer];
  const feat = FEATURES[writer];
  const rng = new Rng(SEED, writer, index, "walk");
  const clockMode = setSessionClock(rng, Date.UTC(2025, 0, 1) + index * 7 * 3600_000 + rng.int(0, 3600_000));
  let cwd = rng.pick(CWDS);
  let raw = false;
  if (writer === "pi073" && rng.chance(0.3)) {
    cwd = rng.pick(RAW_CWDS_073);
    raw = true;
  }
  const sessionDir = sessionDirFor(cwd, raw);
  let sm = mod.SessionManager.create(cwd, sessionDir);
  const target = sessionSize(rng, index);
  const files = []; // {file, kind, parent}
  let current = { file: sm.getSessionFile(), kind: "random", parent: null };
  let ids = [];
  const labeled = new Set();
  const pendingToolCalls = [];
  let branchedOnce = false;
  let ops = 0;
  const opCounts = {};
  const errors = [];

  const appendId = (id) => {
    ids.push(id);
    return id;
  };
  const randomId = () => (ids.length ? rng.pick(ids) : null);
  const pathIds = () => sm.getBranch().map((e) => e.id);

  // setup entries first, like the agent does
  if (rng.chance(0.5)) {
    const [provider, , models] = rng.pick(C.PROVIDERS);
    appendId(sm.appendModelChange(provider, rng.pick(models)));
  }
  if (rng.chance(0.4)) appendId(sm.appendThinkingLevelChange(rng.pick(C.THINKING_LEVELS)));
  if (feat.system && rng.chance(0.6)) appendId(sm.appendMessage(C.systemMessage(rng, clock)));

  const OPS = [
    [16, "user"],
    [18, "assistant"],
    [8, "toolResult"],
    [3, "bash"],
    [2, "customRole"],
    [feat.system ? 2 : 0, "system"],
    [1, "nullContent"],
    [2, "thinking"],
    [2, "model"],
    [3, "compaction"],
    [3, "customEntry"],
    [3, "customMessage"],
    [4, "label"],
    [2, "sessionInfo"],
    [feat.usageEntries ? 2 : 0, "usage"],
    [feat.contextEdit ? 4 : 0, "contextEdit"],
    [4, "branch"],
    [0.4, "resetLeaf"],
    [2, "branchWithSummary"],
    [0.3, "createBranched"],
  ];

  const doOp = (op) => {
    switch (op) {
      case "user":
        appendId(sm.appendMessage(C.userMessage(rng, clock)));
        return true;
      case "assistant": {
        const calls = [];
        appendId(sm.appendMessage(C.assistantMessage(rng, clock, { toolCallIds: calls })));
        pendingToolCalls.push(...calls);
        return true;
      }
      case "toolResult": {
        const id = pendingToolCalls.length && rng.chance(0.85) ? pendingToolCalls.shift() : undefined;
        appendId(sm.appendMessage(C.toolResultMessage(rng, clock, id)));
        return true;
      }
      case "bash":
        appendId(sm.appendMessage(C.bashExecutionMessage(rng, clock)));
        return true;
      case "customRole":
        appendId(sm.appendMessage(C.customRoleMessage(rng, clock)));
        return true;
      case "system":
        appendId(sm.appendMessage(C.systemMessage(rng, clock)));
        return true;
      case "nullContent": {
        const m = C.nullContentMessage(rng, clock);
        if (!feat.system && m.role === "system") m.role = "user";
        appendId(sm.appendMessage(m));
        return true;
      }
      case "thinking":
        appendId(sm.appendThinkingLevelChange(rng.pick(C.THINKING_LEVELS)));
        return true;
      case "model": {
        const [provider, , models] = rng.pick(C.PROVIDERS);
        appendId(sm.appendModelChange(rng.chance(0.05) ? C.nastyName(rng) : provider, rng.pick(models)));
        return true;
      }
      case "compaction": {
        if (ids.length === 0) return false;
        const path = pathIds();
        const choice = rng.weighted([
          [50, "onPath"],
          [20, "none"],
          [15, "offPath"],
          [5, "unknown"],
          [10, "leaf"],
        ]);
        let firstKept;
        if (choice === "onPath" && path.length) firstKept = rng.pick(path);
        else if (choice === "offPath") firstKept = randomId();
        else if (choice === "unknown") firstKept = "deadbeef";
        else if (choice === "leaf" && path.length) firstKept = path[path.length - 1];
        else firstKept = undefined;
        const tokensBefore = rng.chance(0.9) ? rng.int(0, 250000) : C.nastyNumber(rng);
        const details = rng.chance(0.4) ? C.nastyDetails(rng) : undefined;
        const fromHook = rng.chance(0.3) ? rng.chance(0.5) : undefined;
        const usage = feat.usageArg && rng.chance(0.3) ? C.usageObject(rng) : undefined;
        const summary = rng.chance(0.1) ? "" : C.nastyText(rng, { allowLong: true });
        if (feat.usageArg) appendId(sm.appendCompaction(summary, firstKept, tokensBefore, details, fromHook, usage));
        else appendId(sm.appendCompaction(summary, firstKept, tokensBefore, details, fromHook));
        return true;
      }
      case "customEntry":
        appendId(sm.appendCustomEntry(C.nastyName(rng), rng.chance(0.2) ? undefined : C.nastyDetails(rng)));
        return true;
      case "customMessage": {
        const content = rng.weighted([
          [5, () => C.nastyText(rng, { allowLong: true })],
          [4, () => C.toolResultContent(rng)],
          [1, () => null],
        ])();
        appendId(
          sm.appendCustomMessageEntry(C.nastyName(rng), content, rng.chance(0.5), rng.chance(0.5) ? C.nastyDetails(rng) : undefined),
        );
        return true;
      }
      case "label": {
        if (ids.length === 0) return false;
        const mode = rng.weighted([
          [6, "set"],
          [2, "change"],
          [2, "clear"],
        ]);
        const labeledIds = [...labeled];
        let target;
        let label;
        if (mode === "set" || labeledIds.length === 0) {
          target = randomId();
          label = rng.chance(0.5) ? rng.pick(C.LABELS) : C.nastyText(rng, { maxParts: 1 });
        } else {
          target = rng.pick(labeledIds);
          label = mode === "change" ? rng.pick(C.LABELS) : rng.pick([undefined, ""]);
        }
        appendId(sm.appendLabelChange(target, label));
        if (label) labeled.add(target);
        else labeled.delete(target);
        return true;
      }
      case "sessionInfo":
        appendId(sm.appendSessionInfo(rng.chance(0.7) ? rng.pick(C.SESSION_NAMES) : C.nastyText(rng, { maxParts: 2 })));
        return true;
      case "usage": {
        const [provider, , models] = rng.pick(C.PROVIDERS);
        const note = rng.weighted([
          [4, undefined],
          [4, C.nastyText(rng, { maxParts: 1 })],
          [1, ""],
        ]);
        const kind = rng.pick(["cache_warm", "compaction", "title", "branch_summary", "ünïcode kind"]);
        const entry = sm.appendUsage(kind, provider, rng.pick(models), C.usageObject(rng), note);
        appendId(entry.id);
        return true;
      }
      case "contextEdit": {
        const branch = sm.getBranch();
        const editable = branch.filter(
          (e) =>
            e.type === "custom_message" ||
            (e.type === "message" && ["user", "assistant", "toolResult"].includes(e.message.role)),
        );
        if (editable.length === 0) return false;
        const target = rng.pick(editable).id;
        const replacement = rng.weighted([
          [3, () => null],
          [4, () => ({ content: C.nastyText(rng) })],
          [3, () => ({ content: C.toolResultContent(rng) })],
          [1, () => ({ content: [], note: C.nastyText(rng, { maxParts: 1 }) })],
        ])();
        appendId(sm.appendContextEdit(target, replacement));
        return true;
      }
      case "branch": {
        if (ids.length === 0) return false;
        const path = pathIds();
        const to = path.length > 1 && rng.chance(0.7) ? rng.pick(path.slice(0, -1)) : randomId();
        sm.branch(to);
        return true;
      }
      case "resetLeaf":
        sm.resetLeaf();
        return true;
      case "branchWithSummary": {
        const to = ids.length && rng.chance(0.8) ? randomId() : null;
        const summary = rng.chance(0.2) ? "" : C.nastyText(rng, { allowLong: true });
        const details = rng.chance(0.4) ? C.nastyDetails(rng) : undefined;
        const fromHook = rng.chance(0.3) ? rng.chance(0.5) : undefined;
        if (feat.usageArg) {
          const usage = rng.chance(0.3) ? C.usageObject(rng) : undefined;
          appendId(sm.branchWithSummary(to, summary, details, fromHook, usage));
        } else appendId(sm.branchWithSummary(to, summary, details, fromHook));
        return true;
      }
      case "createBranched": {
        if (branchedOnce || ids.length < 3) return false;
        branchedOnce = true;
        const from = randomId();
        files.push(current);
        const parent = current.file;
        sm.createBranchedSession(from);
        current = { file: sm.getSessionFile(), kind: "branched", parent };
        ids = sm.getEntries().map((e) => e.id);
        labeled.clear();
        for (const id of ids) if (sm.getLabel(id)) labeled.add(id);
        return true;
      }
      default:
        throw new Error(`unknown op ${op}`);
    }
  };

  // make sure a conversation starts (the file appears only then)
  doOp("user");
  if (feat.fileAt === "assistant" || rng.chance(0.7)) doOp("assistant");

  while (ops < target) {
    const op = rng.weighted(OPS);
    let done;
    try {
      done = doOp(op);
    } catch (e) {
      errors.push(`${op}: ${e.message}`);
      done = true;
    }
    if (done) {
      ops++;
      opCounts[op] = (opCounts[op] ?? 0) + 1;
    }
  }
  files.push(current);
  for (const e of errors) warn(`${writer} session ${index}: reference threw on ${e}`);

  for (const f of files) {
    if (!f.file || !existsSync(f.file)) {
      // The reference only creates the file once a conversation exists.
      continue;
    }
    record(f.file, {
      writer,
      kind: f.kind,
      index,
      parent: f.parent ? relative(OUT, f.parent) : undefined,
      clock: clockMode,
      ops: f === current ? opCounts : undefined,
    });
  }
}

// ---------------------------------------------------------------------------
// hand-written old formats (v1, v2)
// ---------------------------------------------------------------------------

function isoNow() {
  return new Date(clock.tick()).toISOString();
}

function writeLines(dir, id, lines, { trailingNewline = true } = {}) {
  const file = join(dir, fileNameFor(new Date(clock.peek()).toISOString(), id));
  writeFileSync(file, lines.join("\n") + (trailingNewline && lines.length ? "\n" : ""));
  return file;
}

function v1Message(rng) {
  const role = rng.weighted([
    [5, "user"],
    [5, "assistant"],
    [3, "toolResult"],
    [1, "bashExecution"],
  ]);
  switch (role) {
    case "user":
      return C.userMessage(rng, clock);
    case "assistant":
      return C.assistantMessage(rng, clock);
    case "toolResult":
      return C.toolResultMessage(rng, clock);
    default:
      return C.bashExecutionMessage(rng, clock);
  }
}

function genV1(index) {
  const rng = new Rng(SEED, "v1", index);
  setSessionClock(rng, Date.UTC(2024, 5, 1) + index * 5 * 3600_000);
  const cwd = rng.pick(CWDS);
  const dir = sessionDirFor(cwd);
  const id = rng.uuid4();
  const header = { type: "session", id, timestamp: isoNow(), cwd };
  if (rng.chance(0.7)) {
    const [provider, , models] = rng.pick(C.PROVIDERS);
    Object.assign(header, { provider, modelId: rng.pick(models), thinkingLevel: rng.pick(C.THINKING_LEVELS) });
  }
  if (rng.chance(0.2)) header.branchedFrom = `/old/sessions/${rng.uuid4()}.jsonl`;
  const lines = [JSON.stringify(header)];
  let parsed = 1; // index of the next parsed object (header = 0)
  const n = index % 17 === 5 ? rng.int(300, 500) : rng.int(3, 60);
  for (let i = 0; i < n; i++) {
    if (rng.chance(0.04)) lines.push(rng.pick(["", "   ", "{not json", "\t"]));
    const kind = rng.weighted([
      [12, "message"],
      [1, "thinking_level_change"],
      [1, "model_change"],
      [2, "compaction"],
    ]);
    let obj;
    if (kind === "message") obj = { type: "message", timestamp: isoNow(), message: v1Message(rng) };
    else if (kind === "thinking_level_change") obj = { type: kind, timestamp: isoNow(), thinkingLevel: rng.pick(C.THINKING_LEVELS) };
    else if (kind === "model_change") {
      const [provider, , models] = rng.pick(C.PROVIDERS);
      obj = { type: kind, timestamp: isoNow(), provider, modelId: rng.pick(models) };
    } else {
      const idx = rng.weighted([
        [6, () => rng.int(1, Math.max(1, parsed - 1))],
        [1, () => 0],
        [1, () => parsed + rng.int(0, 5)],
        [1, () => String(rng.int(1, parsed))],
        [1, () => -1],
        [1, () => 1.5],
      ])();
      obj = { type: "compaction", timestamp: isoNow(), summary: C.nastyText(rng), firstKeptEntryIndex: idx, tokensBefore: rng.int(0, 200000) };
      if (rng.chance(0.2)) delete obj.firstKeptEntryIndex;
    }
    lines.push(JSON.stringify(obj));
    parsed++;
  }
  const file = writeLines(dir, id, lines);
  record(file, { writer: "v1", kind: "v1", index });
}

function genV2(index) {
  const rng = new Rng(SEED, "v2", index);
  setSessionClock(rng, Date.UTC(2024, 8, 1) + index * 5 * 3600_000);
  const cwd = rng.pick(CWDS);
  const dir = sessionDirFor(cwd);
  const sid = rng.uuid4();
  const lines = [JSON.stringify({ type: "session", version: 2, id: sid, timestamp: isoNow(), cwd })];
  const ids = [];
  let leaf = null;
  const n = index % 17 === 5 ? rng.int(300, 500) : rng.int(3, 60);
  const newId = () => {
    let id;
    do id = rng.hex(8);
    while (ids.includes(id));
    return id;
  };
  for (let i = 0; i < n; i++) {
    if (ids.length && rng.chance(0.08)) leaf = rng.pick(ids); // a branch
    const id = newId();
    const base = { type: "message", id, parentId: leaf, timestamp: isoNow() };
    const kind = rng.weighted([
      [10, "message"],
      [3, "hook"],
      [1, "thinking_level_change"],
      [1, "model_change"],
      [2, "compaction"],
      [1, "branch_summary"],
      [1, "custom"],
      [1, "custom_message"],
      [1, "label"],
    ]);
    let obj;
    switch (kind) {
      case "message":
        obj = { ...base, message: v1Message(rng) };
        break;
      case "hook":
        obj = { ...base, message: C.customRoleMessage(rng, clock, "hookMessage") };
        break;
      case "thinking_level_change":
        obj = { ...base, type: kind, thinkingLevel: rng.pick(C.THINKING_LEVELS) };
        delete obj.message;
        break;
      case "model_change": {
        const [provider, , models] = rng.pick(C.PROVIDERS);
        obj = { type: kind, id, parentId: leaf, timestamp: base.timestamp, provider, modelId: rng.pick(models) };
        break;
      }
      case "compaction":
        obj = {
          type: kind,
          id,
          parentId: leaf,
          timestamp: base.timestamp,
          summary: C.nastyText(rng),
          firstKeptEntryId: ids.length ? rng.pick(ids) : id,
          tokensBefore: rng.int(0, 100000),
        };
        break;
      case "branch_summary":
        obj = { type: kind, id, parentId: leaf, timestamp: base.timestamp, fromId: leaf ?? "root", summary: C.nastyText(rng) };
        break;
      case "custom":
        obj = { type: kind, customType: C.nastyName(rng), data: C.nastyDetails(rng), id, parentId: leaf, timestamp: base.timestamp };
        break;
      case "custom_message":
        // a custom_message whose content mentions hookMessage: only message roles migrate
        obj = {
          type: kind,
          customType: "hookMessage",
          content: C.nastyText(rng),
          display: true,
          id,
          parentId: leaf,
          timestamp: base.timestamp,
        };
        break;
      default:
        if (!ids.length) {
          obj = { ...base, message: v1Message(rng) };
          break;
        }
        obj = { type: "label", id, parentId: leaf, timestamp: base.timestamp, targetId: rng.pick(ids), label: rng.pick(C.LABELS) };
    }
    lines.push(JSON.stringify(obj));
    ids.push(id);
    leaf = id;
  }
  const file = writeLines(dir, sid, lines);
  record(file, { writer: "v2", kind: "v2", index });
}

// ---------------------------------------------------------------------------
// hostile files
// ---------------------------------------------------------------------------

const HOSTILE_CWD = "/work/hostile";

/** A small valid v3 session as objects (header + chained entries), deterministic per kind. */
function smallSession(rng, n = 6) {
  const sid = rng.uuid4();
  const header = { type: "session", version: 3, id: sid, timestamp: isoNow(), cwd: HOSTILE_CWD };
  const entries = [];
  let parent = null;
  for (let i = 0; i < n; i++) {
    const id = rng.hex(8);
    const role = i % 2 === 0 ? "user" : "assistant";
    const message = role === "user" ? C.userMessage(rng, clock) : C.assistantMessage(rng, clock);
    entries.push({ type: "message", id, parentId: parent, timestamp: isoNow(), message });
    parent = id;
  }
  return { sid, header, entries };
}

const J = (o) => JSON.stringify(o);
const ent = (type, id, parentId, timestamp, fields) => ({ type, id, parentId, timestamp, ...fields });
const userMsg = (text, ts = 1735689600000) => ({ role: "user", content: text, timestamp: ts });

async function genHostile() {
  const dir = sessionDirFor(HOSTILE_CWD);
  const rng = new Rng(SEED, "hostile");
  clock.set(Date.UTC(2025, 6, 1), () => 1000);
  const put = (kind, description, content, extra = {}) => {
    const name = fileNameFor(new Date(clock.tick()).toISOString(), rng.uuid4());
    const file = join(dir, name);
    writeFileSync(file, content);
    record(file, { writer: "hostile", kind, description, ...extra });
    return file;
  };
  const linesOf = (s) => [J(s.header), ...s.entries.map(J)];

  // torn tails
  {
    const s = smallSession(rng, 8);
    const lines = linesOf(s);
    const last = lines.pop();
    put("torn-tail", "last line truncated mid-JSON, no trailing newline", `${lines.join("\n")}\n${last.slice(0, Math.floor(last.length / 2))}`);
  }
  {
    const s = smallSession(rng, 5);
    put("torn-tail-complete", "last line is complete JSON but has no trailing newline", linesOf(s).join("\n"));
  }
  {
    const s = smallSession(rng, 4);
    const lines = linesOf(s);
    const last = lines.pop();
    put(
      "torn-tail-multibyte",
      "last line truncated inside a multi-byte UTF-8 character",
      Buffer.concat([Buffer.from(`${lines.join("\n")}\n`), Buffer.from(`${last.slice(0, 40)}"text":"日本`).subarray(0, -1)]),
    );
  }
  // blank and malformed lines
  {
    const s = smallSession(rng, 6);
    const l = linesOf(s);
    put("blank-lines", "blank / whitespace-only lines before the header and between entries", ["", "   ", "\t", l[0], "", l[1], "  ", "", l[2], "\r", ...l.slice(3), "", ""].join("\n") + "\n");
  }
  {
    const s = smallSession(rng, 6);
    const l = linesOf(s);
    put(
      "malformed-middle",
      "unparseable lines between valid entries",
      [l[0], l[1], "{", "not json at all", l[2], '{"type":"message",', "}{", '{"a":1,}', "[1,2", l[3], "'single'", "NaN", "undefined", ...l.slice(4)].join("\n") + "\n",
    );
  }
  {
    const s = smallSession(rng, 4);
    const l = linesOf(s);
    put(
      "primitive-lines",
      "lines that parse to null/0/false/\"\"/42/[1]/\"str\"/true/{}/-0/1e400 in the middle",
      [l[0], l[1], "null", "0", "false", '""', "42", "[1]", '"str"', l[2], "true", "{}", "-0", "1e400", "[]", '{"type":"session"}', l[3], l[4]].join("\n") + "\n",
    );
  }
  {
    const s = smallSession(rng, 3);
    put("primitive-last-line", "last line parses to 42 (leaf becomes undefined in the reference)", [...linesOf(s), "42"].join("\n") + "\n");
  }
  {
    const s = smallSession(rng, 3);
    put("null-last-line", "last line is null (skipped)", [...linesOf(s), "null"].join("\n") + "\n");
  }
  // duplicated header produced by the real 0.73.1 bug
  {
    const p = join(dir, fileNameFor(new Date(clock.tick()).toISOString(), rng.uuid4()));
    writeFileSync(p, "");
    const sm = modules.pi073.SessionManager.open(p, undefined, HOSTILE_CWD);
    sm.appendMessage(userMsg("first prompt (not written yet)", clock.peek()));
    sm.appendMessage(userMsg("second prompt", clock.peek()));
    sm.appendMessage(C.assistantMessage(rng, clock));
    sm.appendMessage(userMsg("after the assistant", clock.peek()));
    record(p, {
      writer: "hostile",
      kind: "dup-header-073",
      description: "real 0.73.1 run: open an empty file (it writes a header), then user, user, assistant: the header is written again",
    });
  }
  {
    const sm16 = modules.pi16.SessionManager.create(HOSTILE_CWD, dir);
    sm16.appendMessage(userMsg("written by 1.6 at the first user message", clock.peek()));
    const p = sm16.getSessionFile();
    const sm = modules.pi073.SessionManager.open(p);
    sm.appendMessage(userMsg("0.73.1 does not write this yet", clock.peek()));
    sm.appendMessage(C.assistantMessage(rng, clock));
    sm.appendMessage(userMsg("then appends normally", clock.peek()));
    record(p, {
      writer: "hostile",
      kind: "dup-header-073-after-16",
      description: "real run: 1.6 writes header+user, 0.73.1 continues: header and the first entry (same id) repeated",
    });
  }
  {
    const s = smallSession(rng, 4);
    const h2 = { ...s.header, id: rng.uuid4(), timestamp: isoNow(), cwd: "/elsewhere" };
    const l = linesOf(s);
    put("second-header-different", "a second session line with a different id/cwd in the middle", [l[0], l[1], l[2], J(h2), ...l.slice(3)].join("\n") + "\n");
  }
  // ids and parents
  {
    const t = isoNow();
    const lines = [
      J({ type: "session", version: 3, id: rng.uuid4(), timestamp: t, cwd: HOSTILE_CWD }),
      J(ent("message", "aaaa0001", null, t, { message: userMsg("root") })),
      J(ent("message", "dup00001", "aaaa0001", isoNow(), { message: userMsg("first with dup id") })),
      J(ent("message", "bbbb0002", "dup00001", isoNow(), { message: userMsg("child of dup (which one?)") })),
      J(ent("message", "dup00001", "aaaa0001", isoNow(), { message: userMsg("second with dup id") })),
      J(ent("label", "cccc0003", "dup00001", isoNow(), { targetId: "dup00001", label: "on the dup" })),
      J(ent("message", "dddd0004", "bbbb0002", isoNow(), { message: userMsg("grandchild") })),
    ];
    put("dup-ids", "two entries share an id (non-cyclic); children and a label refer to it", lines.join("\n") + "\n");
  }
  {
    const t = isoNow();
    const lines = [
      J({ type: "session", version: 3, id: rng.uuid4(), timestamp: t, cwd: HOSTILE_CWD }),
      J(ent("message", "aaaaaaaa", null, t, { message: userMsg("A (id a, root)") })),
      J(ent("message", "bbbbbbbb", "aaaaaaaa", isoNow(), { message: userMsg("B child of a") })),
      J(ent("message", "aaaaaaaa", "bbbbbbbb", isoNow(), { message: userMsg("A' reuses id a, child of b: cycle a->b->a") })),
      J(ent("message", "cccccccc", null, isoNow(), { message: userMsg("unrelated root, last line") })),
    ];
    put("dup-id-cycle", "a duplicate id closes a cycle (reference getTree/getBranch would not terminate)", lines.join("\n") + "\n");
  }
  {
    const t = isoNow();
    const lines = [
      J({ type: "session", version: 3, id: rng.uuid4(), timestamp: t, cwd: HOSTILE_CWD }),
      J(ent("message", "aaaa0001", null, t, { message: userMsg("root") })),
      J(ent("message", "bbbb0002", "nosuchid", isoNow(), { message: userMsg("orphan") })),
      J(ent("message", "cccc0003", "bbbb0002", isoNow(), { message: userMsg("child of orphan") })),
      J(ent("message", "dddd0004", "aaaa0001", isoNow(), { message: userMsg("normal child") })),
      J(ent("message", "eeee0005", "cccc0003", isoNow(), { message: userMsg("leaf under orphan") })),
    ];
    put("orphan-parent", "an entry whose parentId names no entry", lines.join("\n") + "\n");
  }
  {
    const t = isoNow();
    const lines = [
      J({ type: "session", version: 3, id: rng.uuid4(), timestamp: t, cwd: HOSTILE_CWD }),
      J(ent("message", "aaaa0001", null, t, { message: userMsg("root") })),
      J(ent("message", "self0002", "self0002", isoNow(), { message: userMsg("I am my own parent") })),
      J(ent("message", "cccc0003", "self0002", isoNow(), { message: userMsg("child of the self-parent") })),
      J(ent("message", "dddd0004", "aaaa0001", isoNow(), { message: userMsg("last line, normal") })),
    ];
    put("self-parent", "an entry whose parentId is its own id", lines.join("\n") + "\n");
  }
  {
    const t = isoNow();
    const lines = [
      J({ type: "session", version: 3, id: rng.uuid4(), timestamp: t, cwd: HOSTILE_CWD }),
      J(ent("message", "aaaa0001", null, t, { message: userMsg("root") })),
      J(ent("message", "cyc00001", "cyc00002", isoNow(), { message: userMsg("cycle 1") })),
      J(ent("message", "cyc00002", "cyc00001", isoNow(), { message: userMsg("cycle 2, last line") })),
    ];
    put("two-cycle", "two entries that are each other's parent; the leaf is on the cycle", lines.join("\n") + "\n");
  }
  {
    const t = isoNow();
    const lines = [
      J({ type: "session", version: 3, id: rng.uuid4(), timestamp: t, cwd: HOSTILE_CWD }),
      J(ent("message", "aaaa0001", null, t, { message: userMsg("root") })),
      J({ type: "message", timestamp: isoNow(), message: userMsg("no id, no parentId") }),
      J({ type: "message", id: 12345678, parentId: "aaaa0001", timestamp: isoNow(), message: userMsg("numeric id") }),
      J(ent("message", "eeee0005", "", isoNow(), { message: userMsg("parentId is the empty string") })),
      J(ent("message", "", "aaaa0001", isoNow(), { message: userMsg("id is the empty string") })),
      J(ent("message", "ffff0006", 12345678, isoNow(), { message: userMsg("parentId is a number") })),
      J({ type: "message", id: "gggg0007", timestamp: isoNow(), message: userMsg("parentId missing") }),
      J(ent("message", "hhhh0008", "aaaa0001", isoNow(), { message: userMsg("last, normal") })),
    ];
    put("odd-ids", "entries without id, with numeric / empty ids and parentIds, missing parentId", lines.join("\n") + "\n");
  }
  // not a session / invalid headers
  {
    const s = smallSession(rng, 3);
    put("not-a-session", "first parsed line is an entry, not a header", [...s.entries.map(J), J(s.header)].join("\n") + "\n");
  }
  {
    const s = smallSession(rng, 3);
    put("header-after-garbage", "malformed and blank lines before the header", ["garbage", "", "{", ...linesOf(s)].join("\n") + "\n");
  }
  {
    const s = smallSession(rng, 3);
    put("header-after-null", "a null line before the header (falsy: skipped)", ["null", "0", ...linesOf(s)].join("\n") + "\n");
  }
  {
    const s = smallSession(rng, 3);
    put("header-after-42", "a line 42 before the header (truthy non-object: not a header)", ["42", ...linesOf(s)].join("\n") + "\n");
  }
  {
    const s = smallSession(rng, 3);
    put("header-numeric-id", "header id is a number", [J({ ...s.header, id: 7 }), ...s.entries.map(J)].join("\n") + "\n");
  }
  {
    const s = smallSession(rng, 3);
    const h = { type: "session", id: s.sid, timestamp: s.header.timestamp, cwd: s.header.cwd, version: 3 };
    put("header-version-last", "v3 header with keys in an unusual order and no cwd normalisation", [J(h), ...s.entries.map(J)].join("\n") + "\n");
  }
  {
    const s = smallSession(rng, 3);
    put("header-future-version", "header version 4 with unknown header fields", [J({ ...s.header, version: 4, futureField: { a: 1 } }), ...s.entries.map(J)].join("\n") + "\n");
  }
  {
    const s = smallSession(rng, 2);
    const h = { type: "session", version: 3, id: s.sid };
    put("header-minimal", "header without timestamp and cwd", [J(h), ...s.entries.map(J)].join("\n") + "\n");
  }
  put("empty-file", "0 bytes (the reference writes a fresh header when it opens it)", "");
  put("whitespace-only", "only blank lines", "\n\n   \n\t\n");
  put("only-garbage", "only malformed lines", "{\nnope\n");
  {
    const s = smallSession(rng, 0);
    put("header-only", "a header and nothing else", `${J(s.header)}\n`);
  }
  {
    const s = smallSession(rng, 0);
    put("header-only-torn", "a header without trailing newline", J(s.header));
  }
  // entries the projection must cope with
  {
    const s = smallSession(rng, 2);
    const p = s.entries[1].id;
    const lines = [
      ...linesOf(s),
      J(ent("message", "nomsg001", p, isoNow(), {})),
      J(ent("message", "nullmsg2", "nomsg001", isoNow(), { message: null })),
    ];
    put("message-without-message", "message entries without / with null `message` (reference projection throws)", lines.join("\n") + "\n");
  }
  {
    const s = smallSession(rng, 2);
    let p = s.entries[1].id;
    const extra = [];
    const add = (o) => {
      extra.push(J(o));
      p = o.id;
    };
    add({ type: "future_entry_type", id: "fut00001", parentId: p, timestamp: isoNow(), payload: { x: [1, 2, { y: null }] } });
    add({ type: "message", id: "unk00002", parentId: p, timestamp: isoNow(), message: { role: "user", content: "hi", timestamp: 1, extra: { z: 1 } }, newTopLevel: true });
    add({ type: "message", id: "unk00003", parentId: p, timestamp: isoNow(), message: { role: "futureRole", content: "??", timestamp: 2 } });
    add({ type: "message", id: "unk00004", parentId: p, timestamp: isoNow(), message: { role: "hookMessage", customType: "x", content: "v3 file: not migrated", display: true, timestamp: 3 } });
    add({ type: "message", id: "unk00005", parentId: p, timestamp: isoNow(), message: { role: "branchSummary", summary: "a stored branchSummary message", fromId: "x", timestamp: 4 } });
    add({ type: "message", id: "unk00006", parentId: p, timestamp: isoNow(), message: { role: "compactionSummary", summary: "stored", tokensBefore: 5, timestamp: 5 } });
    add({ type: "message", id: "unk00007", parentId: p, timestamp: isoNow(), message: { content: "no role", timestamp: 6 } });
    add({ type: "message", id: "unk00008", parentId: p, timestamp: isoNow(), message: { role: "bashExecution", command: "x", output: "", exitCode: null, cancelled: false, truncated: true, fullOutputPath: "/tmp/o", timestamp: 7 } });
    add({ type: "model_change", id: "unk00009", parentId: p, timestamp: isoNow() });
    add({ type: "thinking_level_change", id: "unk0000a", parentId: p, timestamp: isoNow() });
    put("unknown-types-and-fields", "unknown entry types, roles and fields; entries missing their type fields", [...linesOf(s), ...extra].join("\n") + "\n");
  }
  // labels
  {
    const s = smallSession(rng, 3);
    const [a, b, c] = s.entries.map((e) => e.id);
    let p = c;
    const extra = [];
    const add = (o) => {
      extra.push(J({ type: "label", id: o.id, parentId: p, timestamp: isoNow(), ...o.f }));
      p = o.id;
    };
    add({ id: "lab00001", f: { targetId: a, label: "set" } });
    add({ id: "lab00002", f: { targetId: "nosuchid", label: "label on unknown target" } });
    add({ id: "lab00003", f: { targetId: b, label: 5 } });
    add({ id: "lab00004", f: { targetId: c, label: "x" } });
    add({ id: "lab00005", f: { targetId: c, label: 0 } });
    add({ id: "lab00006", f: { targetId: a } });
    add({ id: "lab00007", f: { targetId: a, label: "again" } });
    add({ id: "lab00008", f: { targetId: "lab00007", label: "label on a label" } });
    add({ id: "lab00009", f: { label: "no target" } });
    add({ id: "lab0000a", f: { targetId: b, label: { obj: true } } });
    put("label-edge", "labels on unknown targets, non-string labels, clears, label without target", [...linesOf(s), ...extra].join("\n") + "\n");
  }
  // names
  {
    const s = smallSession(rng, 2);
    const p = s.entries[1].id;
    put(
      "session-info-nonstring",
      "a session_info whose name is a number (reference getSessionName throws)",
      [...linesOf(s), J(ent("session_info", "inf00001", p, isoNow(), { name: "ok" })), J(ent("session_info", "inf00002", "inf00001", isoNow(), { name: 42 }))].join("\n") + "\n",
    );
  }
  {
    const s = smallSession(rng, 2);
    let p = s.entries[1].id;
    const names = ["  first  ", "\ufeffbom\ufeff", "\u0085nel\u0085", null, "", "line\nbreak stored raw\r\n"];
    const extra = names.map((name, i) => {
      const id = `nam0000${i}`;
      const o = ent("session_info", id, p, isoNow(), name === null ? {} : { name });
      p = id;
      return J(o);
    });
    // branch away: the name is the last in file order whatever the branch
    extra.push(J(ent("message", "nam00009", s.entries[0].id, isoNow(), { message: userMsg("other branch, last line") })));
    put("session-info-edge", "names needing JS trim semantics, missing name, raw newlines, name on another branch", [...linesOf(s), ...extra].join("\n") + "\n");
  }
  // compaction and context edit edge cases (hand-written v3)
  {
    const t0 = isoNow();
    const L = [J({ type: "session", version: 3, id: rng.uuid4(), timestamp: t0, cwd: HOSTILE_CWD })];
    const e = (type, id, parentId, f) => L.push(J(ent(type, id, parentId, isoNow(), f)));
    e("message", "m0000001", null, { message: { role: "system", content: "sys A", sections: { "10": "ten", "2": "two", a: "A" }, timestamp: 1 } });
    e("message", "m0000002", "m0000001", { message: userMsg("u1") });
    e("message", "m0000003", "m0000002", { message: { role: "assistant", content: [{ type: "text", text: "a1" }], api: "x", provider: "p1", model: "m1", usage: C.usageObject(rng), stopReason: "stop", timestamp: 2 } });
    e("compaction", "c0000001", "m0000003", { summary: "first compaction", firstKeptEntryId: "m0000002", tokensBefore: 10 });
    e("message", "m0000004", "c0000001", { message: { role: "system", content: [{ type: "text", text: "sys B" }, { type: "text", text: "" }], sections: { "2": null, b: "B" }, toolsRemoved: [{ name: "read" }], timestamp: 3 } });
    e("message", "m0000005", "m0000004", { message: userMsg("u2") });
    e("compaction", "c0000002", "m0000005", { summary: "second: keeps from before the first compaction", firstKeptEntryId: "m0000003", tokensBefore: 20, systemMessage: { role: "system", content: "folded", timestamp: 9 } });
    e("message", "m0000006", "c0000002", { message: userMsg("u3") });
    e("compaction", "c0000003", "m0000006", { summary: "third: keeps itself (none)", firstKeptEntryId: "c0000003", tokensBefore: 30 });
    e("message", "m0000007", "c0000003", { message: userMsg("u4") });
    e("compaction", "c0000004", "m0000007", { summary: "fourth: firstKept missing", tokensBefore: 40 });
    e("message", "m0000008", "c0000004", { message: userMsg("u5") });
    e("compaction", "c0000005", "m0000008", { summary: "fifth: firstKept names a later entry", firstKeptEntryId: "m0000009", tokensBefore: 50 });
    e("message", "m0000009", "c0000005", { message: userMsg("u6") });
    e("compaction", "c0000006", "m0000002", { summary: "on a side branch, kept entry off its path", firstKeptEntryId: "m0000007", tokensBefore: 60 });
    e("message", "m000000a", "c0000006", { message: userMsg("side u") });
    e("compaction", "c0000007", "m0000009", { summary: "", firstKeptEntryId: "m0000008", tokensBefore: 70 });
    e("message", "m000000b", "c0000007", { message: userMsg("last") });
    put("compaction-edge", "chains of compactions: keep-none (own id), missing/unknown/later firstKeptEntryId, stored systemMessage, empty summary, side branches", L.join("\n") + "\n");
  }
  {
    const t0 = isoNow();
    const L = [J({ type: "session", version: 3, id: rng.uuid4(), timestamp: t0, cwd: HOSTILE_CWD })];
    const e = (type, id, parentId, f) => L.push(J(ent(type, id, parentId, isoNow(), f)));
    e("message", "s0000001", null, { message: { role: "system", content: null, timestamp: 1 } });
    e("message", "u0000001", "s0000001", { message: userMsg("to be replaced") });
    e("message", "a0000001", "u0000001", { message: { role: "assistant", content: [{ type: "text", text: "a" }], api: "x", provider: "p", model: "m", usage: C.usageObject(rng), stopReason: "stop", timestamp: 2 } });
    e("message", "t0000001", "a0000001", { message: { role: "toolResult", toolCallId: "t", toolName: "read", content: [{ type: "text", text: "r" }], isError: false, timestamp: 3 } });
    e("message", "b0000001", "t0000001", { message: { role: "bashExecution", command: "ls", output: "out", exitCode: 2, cancelled: false, truncated: false, timestamp: 4 } });
    e("custom_message", "cm000001", "b0000001", { customType: "ext", content: "custom", display: true });
    e("custom_message", "cm000002", "cm000001", { customType: "ext", content: null, display: false });
    e("context_edit", "ce000001", "cm000002", { targetId: "u0000001", replacement: { content: "first edit" } });
    e("context_edit", "ce000002", "ce000001", { targetId: "u0000001", replacement: { content: [{ type: "text", text: "second edit wins" }] } });
    e("context_edit", "ce000003", "ce000002", { targetId: "a0000001", replacement: { content: "string into assistant (stored raw)" } });
    e("context_edit", "ce000004", "ce000003", { targetId: "t0000001", replacement: null });
    e("context_edit", "ce000005", "ce000004", { targetId: "b0000001", replacement: { content: "edit on bash (not editable role)" } });
    e("context_edit", "ce000006", "ce000005", { targetId: "s0000001", replacement: null });
    e("context_edit", "ce000007", "ce000006", { targetId: "cm000001", replacement: { content: "custom replaced" } });
    e("context_edit", "ce000008", "ce000007", { targetId: "cm000002", replacement: {} });
    e("context_edit", "ce000009", "ce000008", { targetId: "nosuchid", replacement: null });
    e("context_edit", "ce00000a", "u0000001", { targetId: "a0000001", replacement: null });
    e("message", "u0000002", "ce000009", { message: userMsg("last on main branch") });
    put("context-edit-edge", "context edits: last wins, null/string/array/{} replacements, non-editable targets, edits on another branch", L.join("\n") + "\n");
  }
  // text encodings
  {
    const s = smallSession(rng, 3);
    put("bom", "UTF-8 BOM before the header (JSON.parse rejects the line)", `\ufeff${linesOf(s).join("\n")}\n`);
  }
  {
    const s = smallSession(rng, 3);
    const l = linesOf(s);
    put("bom-then-header", "a BOM-only line, then the header", `\ufeff\n${l.join("\n")}\n`);
  }
  {
    const s = smallSession(rng, 5);
    put("crlf", "CRLF line endings", `${linesOf(s).join("\r\n")}\r\n`);
  }
  {
    const s = smallSession(rng, 2);
    const p = s.entries[1].id;
    const parts = [Buffer.from(`${linesOf(s).join("\n")}\n`)];
    const mk = (id, parent, bytes) =>
      Buffer.concat([
        Buffer.from(`{"type":"message","id":"${id}","parentId":"${parent}","timestamp":"${isoNow()}","message":{"role":"user","content":"`),
        Buffer.from(bytes),
        Buffer.from(`","timestamp":1}}\n`),
      ]);
    parts.push(mk("utf80001", p, [0x61, 0xff, 0x62])); // invalid byte
    parts.push(mk("utf80002", "utf80001", [0xe6, 0x97, 0x61])); // truncated 3-byte sequence
    parts.push(mk("utf80003", "utf80002", [0xc0, 0xaf])); // overlong '/'
    parts.push(mk("utf80004", "utf80003", [0xed, 0xa0, 0x80])); // encoded surrogate (CESU)
    parts.push(mk("utf80005", "utf80004", [0xf4, 0x90, 0x80, 0x80])); // above U+10FFFF
    parts.push(mk("utf80006", "utf80005", [0xf0, 0x9f, 0x98])); // truncated emoji
    put("invalid-utf8", "invalid UTF-8 inside JSON strings (the reference decodes with U+FFFD replacement)", Buffer.concat(parts));
  }
  {
    const s = smallSession(rng, 2);
    const p = s.entries[1].id;
    const lines = [
      ...linesOf(s),
      `{"type":"message","id":"sur00001","parentId":"${p}","timestamp":"${isoNow()}","message":{"role":"user","content":"lone high \\ud800 and low \\udc00 and pair \\ud83d\\ude00","timestamp":1}}`,
      `{"type":"session_info","id":"sur00002","parentId":"sur00001","timestamp":"${isoNow()}","name":"name with \\udfff lone"}`,
    ];
    put("lone-surrogate-escapes", "JSON \\uD800-style escapes of lone surrogates (valid JSON, not valid Unicode; serde_json rejects them)", lines.join("\n") + "\n");
  }
  {
    const s = smallSession(rng, 2);
    const p = s.entries[1].id;
    const lines = [
      ...linesOf(s),
      `{ "type" : "message" , "id":"nc000001","parentId":"${p}","timestamp":"${isoNow()}","message":{"role":"user","content":"\\u0041\\/\\u00e9\\uD83D\\uDE00","timestamp":1.0}}`,
      `{"type":"custom","customType":"keys","data":{"a":1,"10":2,"2":3,"01":4,"-1":5,"4294967295":6,"4294967294":7},"id":"nc000002","parentId":"nc000001","timestamp":"${isoNow()}"}`,
      `{"type":"custom","customType":"dupkeys","data":{"k":1,"k":2,"j":{"x":1,"x":[2]}},"id":"nc000003","parentId":"nc000002","timestamp":"${isoNow()}"}`,
      `{"type":"custom","customType":"numbers","data":[1E2,1e+2,-0.0,0.10,1.5e-7,100000000000000000000000,123456789012345678901234567890,0.1e1,5e-325,1e400],"id":"nc000004","parentId":"nc000003","timestamp":"${isoNow()}"}`,
      `{"id":"nc000005","type":"message","timestamp":"${isoNow()}","parentId":"nc000004","message":{"timestamp":2,"content":"keys out of the reference's order","role":"user"}}`,
      `\t{"type":"custom","customType":"ws","id":"nc000006","parentId":"nc000005","timestamp":"${isoNow()}"}   `,
      `{"type":"custom","customType":"__proto__","data":{"__proto__":{"polluted":true},"constructor":1},"id":"nc000007","parentId":"nc000006","timestamp":"${isoNow()}"}`,
    ];
    put("noncanonical", "valid v3 lines whose text is not JSON.stringify(JSON.parse(text)): spaces, escapes, integer-like keys, duplicate keys, number spellings, __proto__", lines.join("\n") + "\n");
  }
  {
    const s = smallSession(rng, 2);
    const p = s.entries[1].id;
    const depth = 300;
    const deep = `${"[".repeat(depth)}"bottom"${"]".repeat(depth)}`;
    const deepObj = `${'{"d":'.repeat(depth)}null${"}".repeat(depth)}`;
    const lines = [
      ...linesOf(s),
      `{"type":"custom","customType":"deep","data":${deep},"id":"deep0001","parentId":"${p}","timestamp":"${isoNow()}"}`,
      `{"type":"custom_message","customType":"deep","content":"deep details","display":true,"details":${deepObj},"id":"deep0002","parentId":"deep0001","timestamp":"${isoNow()}"}`,
    ];
    put("deep-nesting", `JSON nested ${depth} levels deep (serde_json's default recursion limit is 128)`, lines.join("\n") + "\n");
  }
  {
    // one line longer than the reference's 1 MiB read buffer, with a 4-byte char straddling the boundary
    const s = smallSession(rng, 2);
    const head = `${linesOf(s).join("\n")}\n`;
    const prefix = `{"type":"message","id":"big00001","parentId":"${s.entries[1].id}","timestamp":"${isoNow()}","message":{"role":"user","content":"`;
    const headBytes = Buffer.byteLength(head) + Buffer.byteLength(prefix);
    const fill = 1024 * 1024 - headBytes - 2; // the emoji starts 2 bytes before the 1 MiB boundary
    const body = `${"x".repeat(fill)}😀${"y".repeat(1000)}日本語`;
    const content = `${head}${prefix}${body}","timestamp":1}}\n${J(ent("message", "big00002", "big00001", isoNow(), { message: userMsg("after the big line") }))}\n`;
    put("chunk-boundary", "a >1 MiB line with a 4-byte character straddling the 1 MiB read-buffer boundary", content);
  }
  {
    const s = smallSession(rng, 2);
    const h = { ...s.header, blob: "h".repeat(6000), cwd: `/work/${"very-long-dir/".repeat(20)}x` };
    put("big-header", "a header longer than the 4 KiB header-scan buffer", [J(h), ...s.entries.map(J)].join("\n") + "\n");
  }
  {
    const t0 = isoNow();
    const L = [J({ type: "session", version: 3, id: rng.uuid4(), timestamp: t0, cwd: HOSTILE_CWD })];
    const e = (id, parentId, ts, text) => L.push(J({ type: "message", id, parentId, timestamp: ts, message: userMsg(text) }));
    e("root0001", null, "2025-07-01T00:00:10.000Z", "root");
    e("kid00001", "root0001", "2025-07-01T00:00:30.000Z", "child written first, newest timestamp");
    e("kid00002", "root0001", "2025-07-01T00:00:20.000Z", "child written second, older timestamp");
    e("kid00003", "root0001", "2025-07-01T00:00:20.000Z", "same timestamp as kid2 (stable order)");
    e("kid00004", "root0001", "2025-07-01T01:00:20+01:00", "offset timestamp equal to kid2's instant");
    e("kid00005", "root0001", "2025-07-01T00:00:15Z", "no milliseconds");
    e("kid00006", "root0001", "2025-07-01T00:00:15.0001Z", "sub-millisecond digits");
    put("sibling-order", "siblings out of timestamp order, ties, offsets and odd ISO spellings (getTree sorts children by time)", L.join("\n") + "\n");
  }
  {
    const t0 = isoNow();
    const L = [J({ type: "session", version: 3, id: rng.uuid4(), timestamp: t0, cwd: HOSTILE_CWD })];
    const e = (id, parentId, ts, text) => {
      const o = { type: "message", id, parentId, message: userMsg(text) };
      if (ts !== undefined) o.timestamp = ts;
      L.push(J(o));
    };
    e("root0001", null, "2025-07-01T00:00:10.000Z", "root");
    e("bad00001", "root0001", "not a date", "invalid timestamp");
    e("bad00002", "root0001", undefined, "missing timestamp");
    e("bad00003", "root0001", 1751328000000, "numeric timestamp");
    e("bad00004", "root0001", "2025-07-01T00:00:05.000Z", "valid, older than root");
    put("bad-timestamps", "entries with invalid / missing / numeric timestamps (getTree's comparator returns NaN: order is engine-defined)", L.join("\n") + "\n");
  }
  // old formats gone wrong
  {
    const h = { type: "session", id: rng.uuid4(), timestamp: isoNow(), cwd: HOSTILE_CWD };
    const lines = [J(h), J({ type: "message", timestamp: isoNow(), message: userMsg("v1 entry") }), "42", J({ type: "message", timestamp: isoNow(), message: userMsg("after 42") })];
    put("v1-primitive-line", "v1 file with a line 42: migration assigns .id to a number (the reference throws)", lines.join("\n") + "\n");
  }
  {
    const h = { type: "session", id: rng.uuid4(), timestamp: isoNow(), cwd: HOSTILE_CWD };
    const lines = [
      J(h),
      "",
      "{bad",
      J({ type: "message", timestamp: isoNow(), message: userMsg("index 1") }),
      "[1]",
      J({ type: "message", timestamp: isoNow(), message: userMsg("index 3 (the array is index 2)") }),
      J({ type: "compaction", timestamp: isoNow(), summary: "keep from index 3", firstKeptEntryIndex: 3, tokensBefore: 5 }),
      J({ type: "compaction", timestamp: isoNow(), summary: "index 2 is the array", firstKeptEntryIndex: 2, tokensBefore: 5 }),
      J({ type: "session", id: "second-header", timestamp: isoNow() }),
      J({ type: "compaction", timestamp: isoNow(), summary: "index 7 is the second header", firstKeptEntryIndex: 7, tokensBefore: 5 }),
      J({ type: "message", id: "keep-me?", parentId: "x", timestamp: isoNow(), message: userMsg("v1 entry that already has id/parentId") }),
    ];
    put("v1-edge", "v1 file: firstKeptEntryIndex counts parsed objects (skipping blank/bad lines), an array line, a second header, pre-existing ids", lines.join("\n") + "\n");
  }
  {
    const h = { type: "session", version: 2, id: rng.uuid4(), timestamp: isoNow(), cwd: HOSTILE_CWD };
    const lines = [
      J(h),
      J(ent("message", "v2000001", null, isoNow(), { message: { role: "hookMessage", customType: "h", content: "hook", display: true, timestamp: 1 } })),
      J(ent("message", "v2000002", "v2000001", isoNow(), { message: null })),
      J(ent("message", "v2000003", "v2000002", isoNow(), {})),
      "null",
      "42",
      J(ent("custom_message", "v2000004", "v2000003", isoNow(), { customType: "hookMessage", content: "not a message entry", display: true })),
    ];
    put("v2-edge", "v2 file with hookMessage, null/missing message, primitive lines", lines.join("\n") + "\n");
  }
  {
    const h = { type: "session", version: "2", id: rng.uuid4(), timestamp: isoNow(), cwd: HOSTILE_CWD };
    const lines = [J(h), J(ent("message", "vs000001", null, isoNow(), { message: { role: "hookMessage", customType: "h", content: "hook", display: true, timestamp: 1 } }))];
    put("version-string", 'header version "2" (a string: "2" >= 3 is false, so it migrates)', lines.join("\n") + "\n");
  }
}

// ---------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------

const modules = {};
const wantWriters = WRITER === "all" ? ALL_KINDS : [WRITER];
for (const w of WRITERS) {
  if (wantWriters.includes(w) || HOSTILE) modules[w] = await loadSessionModule(w);
}

mkdirSync(OUT, { recursive: true });
const t0 = realNow();

// Assign each of the COUNT sessions a writer.
const plan = [];
const planRng = new Rng(SEED, "plan");
for (let i = 0; i < COUNT; i++) {
  const w =
    WRITER === "all"
      ? planRng.weighted([
          [60, "pi16"],
          [12, "pi083"],
          [10, "pi073"],
          [9, "v1"],
          [9, "v2"],
        ])
      : WRITER;
  plan.push(w);
}
// with "all", make sure every writer appears at least once when COUNT allows it
if (WRITER === "all" && COUNT >= ALL_KINDS.length) {
  ALL_KINDS.forEach((w, i) => {
    if (!plan.includes(w)) plan[i] = w;
  });
}

for (let i = 0; i < plan.length; i++) {
  const w = plan[i];
  if (w === "v1") genV1(i);
  else if (w === "v2") genV2(i);
  else await walkSession(w, i);
}
if (HOSTILE) await genHostile();

manifest.elapsedMs = realNow() - t0;
writeFileSync(join(OUT, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
if (!QUIET) {
  const byWriter = {};
  for (const f of manifest.files) byWriter[f.writer] = (byWriter[f.writer] ?? 0) + 1;
  process.stderr.write(`gen: ${manifest.files.length} files in ${OUT} (${JSON.stringify(byWriter)}) in ${manifest.elapsedMs} ms\n`);
}
