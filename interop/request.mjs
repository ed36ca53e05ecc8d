#!/usr/bin/env node
// What the 1.6.0 reference would send to an Anthropic model when resuming a session: the
// request body its Anthropic provider builds from the session's context
// (buildSessionContext, then convertToLlm), taken from the provider's onPayload hook. The
// client handed to the provider refuses to send, so nothing leaves the process.
//
//   node request.mjs FILE... --model MODEL_ID [--out OUT.json]
//
// Output: [{file, model, supportsMidConvoSystemMessages, system, messages} | {file, error}]
// (the model is the reference's own catalogue entry). Files are copied to a temp dir first
// (opening a session may write to it).

import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { die, loadMessagesModule, loadSessionModule, parseArgs } from "./lib/common.mjs";

const USAGE = "usage: node request.mjs FILE... --model MODEL_ID [--out OUT.json]";
let opts;
try {
  opts = parseArgs(process.argv.slice(2));
} catch (e) {
  die(`${e.message}\n${USAGE}`);
}
if (opts._.length === 0 || !opts.model) die(USAGE);

const piAi = (rel) =>
  import(new URL(`./node_modules/pi16/node_modules/@earendil-works/pi-ai/dist/${rel}`, import.meta.url).href);
const { SessionManager } = await loadSessionModule("pi16");
const M = await loadMessagesModule("pi16");
const { stream } = await piAi("api/anthropic-messages.js");
const { ANTHROPIC_MODELS } = await piAi("providers/anthropic.models.js");
const known = ANTHROPIC_MODELS[opts.model];
if (!known) die(`no Anthropic model ${opts.model} in the reference's catalogue`);
// A local base URL: the request is never sent, and nothing keys on the real host.
const model = { ...known, baseUrl: "http://127.0.0.1:9" };

const refuse = {
  beta: {
    messages: {
      create: () => ({ asResponse: () => Promise.reject(new Error("not sent")) }),
    },
  },
};

const tmp = mkdtempSync(join(tmpdir(), "pi-request-"));
const results = [];
try {
  for (const file of opts._) {
    try {
      const copy = join(tmp, basename(file));
      copyFileSync(file, copy);
      const sm = SessionManager.open(copy);
      const context = sm.buildSessionContext();
      let body;
      const s = stream(model, { messages: M.convertToLlm(context.messages) }, {
        client: refuse,
        maxRetries: 0,
        onPayload: (params) => {
          body = params;
        },
      });
      for await (const _ of s) {
        // drain: the refused send ends the stream with an error event
      }
      if (!body) throw new Error("the provider built no request");
      results.push({
        file,
        model: body.model,
        supportsMidConvoSystemMessages: model.compat?.supportsMidConvoSystemMessages === true,
        system: body.system ?? null,
        messages: body.messages,
      });
    } catch (e) {
      results.push({ file, error: String(e?.message ?? e) });
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
const out = JSON.stringify(results, null, 1) + "\n";
if (opts.out) writeFileSync(opts.out, out);
else process.stdout.write(out);
