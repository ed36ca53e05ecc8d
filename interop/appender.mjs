#!/usr/bin/env node
// The reference as a foreign writer racing sessiontree's rewrites: opens session files with
// 1.6.0's SessionManager.open (which takes no lock and appends with appendFileSync), then
// appends user messages in bursts, one file after the other.
//
//   node appender.mjs BURST PAUSE_MS FILE...
//
// Prints "ready" once every file is open, then waits for one line on stdin (the caller
// prepares the files meanwhile). Then, for each file in turn, appends BURST messages,
// PAUSE_MS apart, and prints "<file index> <entry id>" after each append returned (that
// entry is acknowledged: Pi told its caller it is saved). Prints "done" at the end.

import { readSync, writeSync } from "node:fs";
import { die, loadSessionModule } from "./lib/common.mjs";

const [burstArg, pauseArg, ...files] = process.argv.slice(2);
const burst = Number(burstArg);
const pause = Number(pauseArg);
if (!Number.isInteger(burst) || burst < 1 || !(pause >= 0) || files.length === 0) {
  die("usage: node appender.mjs BURST PAUSE_MS FILE...", 2);
}

const { SessionManager } = await loadSessionModule("pi16");
const managers = files.map((f) => SessionManager.open(f));
writeSync(1, "ready\n");

// Wait for the go line (synchronously: nothing else runs meanwhile).
const buf = Buffer.alloc(1);
while (readSync(0, buf, 0, 1, null) === 1 && buf[0] !== 0x0a) {}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
let n = 0;
for (let k = 0; k < managers.length; k++) {
  for (let i = 0; i < burst; i++) {
    const id = managers[k].appendMessage({
      role: "user",
      content: `append ${n} to file ${k}`,
      timestamp: Date.now(),
    });
    writeSync(1, `${k} ${id}\n`);
    n++;
    if (pause > 0) Atomics.wait(sleeper, 0, 0, pause);
  }
}
writeSync(1, "done\n");
