#!/usr/bin/env node
// Messages as Pi 1.6.0 builds them: runs the reference's agent loop (pi-agent-core's Agent)
// against pi-ai's scripted "faux" provider with one tool, under a fake clock, and prints
// every message of the run, one JSON line each, as the session manager would store it
// (JSON.stringify). Then one custom message from the coding agent's createCustomMessage.
//
//   node messages.mjs
//
// Used by crates/sessiontree/tests/typed_messages.rs, which builds the same messages with
// sessiontree's typed structs and compares the bytes.

import { installDeterminism } from "./lib/common.mjs";

const base = new URL("./node_modules/pi16/node_modules/@earendil-works/", import.meta.url);
installDeterminism({ clock: { t: 1733234400000, tick() { return this.t++; } } });
const ai = await import(new URL("pi-ai/dist/index.js", base).href);
const core = await import(new URL("pi-agent-core/dist/index.js", base).href);
const msgs = await import(new URL("../../../pi16/dist/core/messages.js", base).href);

const faux = ai.fauxProvider({ provider: "faux", api: "faux-api", models: [{ id: "faux-1" }] });
faux.setResponses([
  ai.fauxAssistantMessage(
    [
      ai.fauxThinking("The user wants an echo."),
      ai.fauxText("Echoing."),
      ai.fauxToolCall("echo", { text: "hi" }, { id: "call_1" }),
    ],
    { stopReason: "toolUse" },
  ),
  ai.fauxAssistantMessage("Done: hi"),
]);

const echo = {
  name: "echo",
  label: "Echo",
  description: "Prints its argument.",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  execute: async (_id, params) => ({
    content: [{ type: "text", text: params.text }],
    details: { length: params.text.length },
  }),
};

const agent = new core.Agent({
  initialState: { model: faux.getModel(), tools: [echo] },
  streamFn: (model, context, options) => faux.provider.stream
    ? faux.provider.stream(model, context, options)
    : faux.provider.streamSimple(model, context, options),
  getApiKey: () => "none",
});
await agent.prompt("echo hi");
for (const m of agent.state.messages) {
  if (m.role !== "system") console.log(JSON.stringify(m));
}
console.log(JSON.stringify(msgs.createCustomMessage("note", "remember this", true, { n: 1 }, "2024-12-03T14:00:00.000Z")));
