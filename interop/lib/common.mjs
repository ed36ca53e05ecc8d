// Shared helpers for the interop scripts: seeded PRNG, reference module loading,
// optional determinism hooks (fake clock, seeded ids), tiny argv parser.
//
// Nothing here re-implements the reference: the session layer is always imported
// from node_modules (pi16 = 1.6.0, pi083 = 0.83.0, pi073 = 0.73.1).

import nodeCrypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";

export const WRITERS = ["pi16", "pi083", "pi073"];

/** Import a module of one pinned reference release by path (its exports map hides it). */
export async function importRef(writer, rel) {
  if (!WRITERS.includes(writer)) throw new Error(`unknown reference ${writer} (want ${WRITERS.join("|")})`);
  const url = new URL(`../node_modules/${writer}/dist/${rel}`, import.meta.url);
  return import(url.href);
}

export const loadSessionModule = (writer) => importRef(writer, "core/session-manager.js");
export const loadMessagesModule = (writer) => importRef(writer, "core/messages.js");

// ---------------------------------------------------------------------------
// PRNG: sfc32 seeded through splitmix32. Deterministic for a given seed.
// ---------------------------------------------------------------------------

function splitmix32(a) {
  return () => {
    a |= 0;
    a = (a + 0x9e3779b9) | 0;
    let t = a ^ (a >>> 16);
    t = Math.imul(t, 0x21f0aaad);
    t = t ^ (t >>> 15);
    t = Math.imul(t, 0x735a2d97);
    return ((t ^ (t >>> 15)) >>> 0);
  };
}

export class Rng {
  constructor(...seedParts) {
    // Mix every part (numbers or strings) into one 32-bit seed.
    let h = 0x811c9dc5;
    for (const part of seedParts) {
      const s = String(part);
      for (let i = 0; i < s.length; i++) {
        h ^= s.charCodeAt(i);
        h = Math.imul(h, 0x01000193);
      }
      h ^= 0xff;
      h = Math.imul(h, 0x01000193);
    }
    const sm = splitmix32(h >>> 0);
    this.a = sm();
    this.b = sm();
    this.c = sm();
    this.d = sm();
    for (let i = 0; i < 12; i++) this.u32();
  }
  u32() {
    let { a, b, c, d } = this;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    this.a = a;
    this.b = b;
    this.c = c;
    this.d = d;
    return t >>> 0;
  }
  /** [0, 1) */
  float() {
    return this.u32() / 4294967296;
  }
  /** integer in [lo, hi] inclusive */
  int(lo, hi) {
    return lo + Math.floor(this.float() * (hi - lo + 1));
  }
  chance(p) {
    return this.float() < p;
  }
  pick(arr) {
    if (arr.length === 0) throw new Error("pick from empty array");
    return arr[Math.floor(this.float() * arr.length)];
  }
  /** items: [[weight, value], ...] */
  weighted(items) {
    let total = 0;
    for (const [w] of items) total += w;
    let r = this.float() * total;
    for (const [w, v] of items) {
      if ((r -= w) < 0) return v;
    }
    return items[items.length - 1][1];
  }
  bytes(n) {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.u32() & 0xff;
    return out;
  }
  hex(n) {
    let s = "";
    for (let i = 0; i < n; i++) s += (this.u32() & 15).toString(16);
    return s;
  }
  /** A random RFC 4122 v4 UUID string. */
  uuid4() {
    const b = this.bytes(16);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
}

// ---------------------------------------------------------------------------
// Determinism hooks. The reference takes its entry ids from crypto.randomUUID
// (node:crypto, named ESM import), session ids from a UUIDv7 built on
// globalThis.crypto.getRandomValues + Date.now(), and timestamps from `new Date()`.
// Replacing those three sources makes every byte the reference writes a function of
// the seed and the clock, while the reference code itself runs unchanged.
// ---------------------------------------------------------------------------

const RealDate = globalThis.Date;

/**
 * A controllable clock. Every read (`new Date()` with no argument, `Date.now()`) returns
 * the current time and then advances it by `step()` milliseconds (may be 0 or negative).
 */
export class FakeClock {
  constructor(startMs, step = () => 1) {
    this.ms = startMs;
    this.step = step;
  }
  set(ms, step) {
    this.ms = ms;
    if (step) this.step = step;
  }
  tick() {
    const t = this.ms;
    this.ms += this.step();
    if (this.ms < 0) this.ms = 0;
    return t;
  }
  /** read without advancing */
  peek() {
    return this.ms;
  }
}

let installed = null;

/**
 * Install the hooks. `idRng` feeds crypto.randomUUID and getRandomValues; `clock` feeds Date.
 * Either may be null to keep the real source. Returns the controller.
 */
export function installDeterminism({ idRng = null, clock = null } = {}) {
  if (installed) throw new Error("determinism hooks already installed");
  installed = { idRng, clock };
  if (idRng) {
    nodeCrypto.randomUUID = () => installed.idRng.uuid4();
    syncBuiltinESMExports();
    Object.defineProperty(globalThis.crypto, "getRandomValues", {
      value: (arr) => {
        const u8 = new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
        for (let i = 0; i < u8.length; i++) u8[i] = installed.idRng.u32() & 0xff;
        return arr;
      },
      configurable: true,
      writable: true,
    });
  }
  if (clock) {
    class FakeDate extends RealDate {
      constructor(...args) {
        if (args.length === 0) super(installed.clock.tick());
        else super(...args);
      }
      static now() {
        return installed.clock.tick();
      }
    }
    globalThis.Date = FakeDate;
  }
  return installed;
}

export function realNow() {
  return RealDate.now();
}

// ---------------------------------------------------------------------------
// argv
// ---------------------------------------------------------------------------

/** Parse `--key value`, `--flag`, and positionals. `flags` lists boolean options. */
export function parseArgs(argv, flags = []) {
  const opts = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") {
      opts._.push(...argv.slice(i + 1));
      break;
    }
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      if (eq > 0) {
        opts[a.slice(2, eq)] = a.slice(eq + 1);
      } else {
        const key = a.slice(2);
        if (flags.includes(key)) opts[key] = true;
        else {
          if (i + 1 >= argv.length) throw new Error(`option --${key} needs a value`);
          opts[key] = argv[++i];
        }
      }
    } else opts._.push(a);
  }
  return opts;
}

export function die(msg, code = 2) {
  process.stderr.write(`${msg}\n`);
  process.exit(code);
}
