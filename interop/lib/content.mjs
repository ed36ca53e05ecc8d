// Random, deliberately nasty content for generated sessions. All values are built from
// ordinary JS values (no lone surrogates: JS strings can hold them but the interesting
// cases for those live in hand-written hostile files, see gen.mjs).

const CONTROL = Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).join("") + "\u007f";

export const NASTY_FRAGMENTS = [
  "hello",
  "Hello, world.",
  "héllo wörld ñandú",
  "日本語のテキストです",
  "中文字符测试",
  "한국어 텍스트",
  "مرحبا بالعالم",
  "שלום עולם",
  "emoji 😀👍🏽👨‍👩‍👧‍👦🏳️‍🌈🇩🇪",
  "𝕳𝖊𝖑𝖑𝖔 𝔀𝓸𝓻𝓵𝓭",
  "\u{10FFFF}\uFFFF\uFFFE",
  "e\u0301 combining a\u0308o\u0308",
  "zero\u200bwidth\u200d\ufeffjoiners",
  "</script><script>alert(1)</script>",
  "<!-- comment --> <![CDATA[x]]>",
  CONTROL,
  "nul\u0000inside",
  "line\u2028sep\u2029para",
  "tab\there\vvt\fff",
  "cr\rlf\ncrlf\r\n",
  "\n\n\n",
  '"double" \'single\' `back`',
  "back\\slash \\\\ double \\n not-a-newline \\u0000",
  "C:\\Users\\pi\\file.txt",
  '{"type":"session","id":"fake"}',
  '"},{"type":"message"',
  "\\",
  "'",
  '"',
  " ",
  "",
  "   leading and trailing   ",
  "0.1+0.2=0.30000000000000004",
  "1e21 -0 NaN Infinity",
  "null",
  "true",
  "undefined",
  "$1 $$ $& $` $'",
  "%s %d %n",
  "\u00a0nbsp\u3000ideographic space\u2003em",
  "\u0085nel\u0085",
  "ﬁ ligature Å angstrom K kelvin",
  "İstanbul ß ẞ",
];

export function nastyText(rng, { maxParts = 4, allowLong = false } = {}) {
  const n = rng.int(1, maxParts);
  const parts = [];
  for (let i = 0; i < n; i++) parts.push(rng.pick(NASTY_FRAGMENTS));
  let s = parts.join(rng.pick([" ", "", "\n", " | "]));
  if (allowLong && rng.chance(0.015)) {
    // a long text: 4 KiB .. 24 KiB of mixed content
    const target = rng.int(4096, 24576);
    const chunk = `${rng.pick(NASTY_FRAGMENTS)} lorem ipsum dolor sit amet ${rng.int(0, 1e6)}\n`;
    while (s.length < target) s += chunk;
  }
  return s;
}

/** Short plain-ish identifier-like strings (custom types, tool names). */
export function nastyName(rng) {
  return rng.pick([
    "ext",
    "my-extension",
    "todo.state",
    "ext/with/slash",
    "ünïcode-type",
    "类型",
    "emoji😀",
    "",
    " spaced ",
    "a\"quote",
    "back\\slash",
    "x".repeat(rng.int(1, 3) * 40),
  ]);
}

export const NASTY_NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.1 + 0.2,
  1e21,
  1e-7,
  1e-6,
  123456789.123456789,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53),
  2 ** 31,
  2 ** 32,
  2 ** 64,
  1.7976931348623157e308,
  5e-324,
  2.2250738585072014e-308,
  1e300,
  1e-300,
  3.141592653589793,
  1 / 3,
  100,
  1e20,
  123e-20,
  0.5,
  -1.5e-10,
  4294967295,
  9007199254740991,
];

export function nastyNumber(rng) {
  return rng.chance(0.7) ? rng.pick(NASTY_NUMBERS) : rng.int(-1000, 100000) / rng.pick([1, 1, 10, 1000, 3]);
}

/** Keys that V8 orders specially (array indices come first, ascending) and other odd keys. */
export const ODD_KEYS = [
  "10",
  "2",
  "a",
  "01",
  "-1",
  "1.5",
  "0",
  "4294967294",
  "4294967295",
  "9007199254740993",
  "__proto__",
  "constructor",
  "toString",
  "",
  " ",
  "ключ",
  "😀",
  "a\u0000b",
  'q"uote',
  "b\\s",
];

/** A random JSON value (depth-limited), with odd keys, nested arrays, null/true/false. */
export function nastyValue(rng, depth = 0) {
  const kind = depth > 4 ? rng.pick(["str", "num", "lit"]) : rng.pick(["str", "num", "lit", "obj", "arr", "obj", "arr"]);
  switch (kind) {
    case "str":
      return nastyText(rng, { maxParts: 2 });
    case "num":
      return nastyNumber(rng);
    case "lit":
      return rng.pick([null, true, false]);
    case "arr": {
      const n = rng.int(0, 4);
      const a = [];
      for (let i = 0; i < n; i++) a.push(nastyValue(rng, depth + 1));
      if (rng.chance(0.2)) a.push([[[]], [null, [true, [false]]]]);
      return a;
    }
    default:
      return nastyObject(rng, depth + 1);
  }
}

/**
 * An object with keys in a random insertion order. Built through JSON.parse so that
 * "__proto__" becomes an own property (as it would when the reference parses a file).
 */
export function nastyObject(rng, depth = 0) {
  const n = rng.int(0, 5);
  const keys = [];
  for (let i = 0; i < n; i++) {
    const k = rng.chance(0.6) ? rng.pick(ODD_KEYS) : rng.pick(["name", "value", "items", "meta", "x", "y", "path"]);
    if (!keys.includes(k)) keys.push(k);
  }
  const body = keys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(nastyValue(rng, depth + 1))}`).join(",");
  return JSON.parse(`{${body}}`);
}

/** details/data payloads: usually an object, sometimes other JSON values. */
export function nastyDetails(rng) {
  return rng.weighted([
    [6, () => nastyObject(rng)],
    [1, () => nastyValue(rng)],
    [1, () => ({ "10": "ten", "2": "two", a: "a", "01": "zero-one", nested: [[1, [2, [3]]], { "3": null, b: true }] })],
    [1, () => null],
    [1, () => []],
  ])();
}

export function base64ish(rng) {
  const bytes = rng.bytes(rng.int(0, 48));
  return Buffer.from(bytes).toString("base64");
}

export function imageBlock(rng) {
  return { type: "image", data: base64ish(rng), mimeType: rng.pick(["image/png", "image/jpeg", "image/webp", "image/gif"]) };
}

export function textBlock(rng, opts) {
  const b = { type: "text", text: nastyText(rng, opts) };
  if (rng.chance(0.05)) b.textSignature = rng.hex(16);
  return b;
}

export function userContent(rng) {
  if (rng.chance(0.45)) return nastyText(rng, { allowLong: true });
  const n = rng.int(1, 4);
  const blocks = [];
  for (let i = 0; i < n; i++) blocks.push(rng.chance(0.8) ? textBlock(rng, { allowLong: true }) : imageBlock(rng));
  return blocks;
}

export function toolResultContent(rng) {
  const n = rng.int(0, 3);
  const blocks = [];
  for (let i = 0; i < n; i++) blocks.push(rng.chance(0.85) ? textBlock(rng, { allowLong: true }) : imageBlock(rng));
  return blocks;
}

export const PROVIDERS = [
  ["anthropic", "anthropic-messages", ["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"]],
  ["openai", "openai-responses", ["gpt-5", "gpt-5-mini", "o4-mini"]],
  ["google", "google-generative-ai", ["gemini-2.5-pro", "gemini-2.5-flash"]],
  ["openrouter", "openai-completions", ["qwen/qwen3-coder", "z-ai/glm-4.6"]],
  ["ünïcode-provider", "custom-api", ["model/with/slashes", "模型"]],
];

export function usageObject(rng) {
  const input = rng.chance(0.1) ? nastyNumber(rng) : rng.int(0, 200000);
  const output = rng.int(0, 20000);
  const cacheRead = rng.int(0, 100000);
  const cacheWrite = rng.int(0, 5000);
  const u = { input, output, cacheRead, cacheWrite };
  if (rng.chance(0.9)) u.totalTokens = input + output + cacheRead + cacheWrite;
  const ci = input * 3e-6;
  const co = output * 1.5e-5;
  const cr = cacheRead * 3e-7;
  const cw = cacheWrite * 3.75e-6;
  u.cost = { input: ci, output: co, cacheRead: cr, cacheWrite: cw, total: ci + co + cr + cw };
  if (rng.chance(0.05)) u.cost.total = rng.pick([0.1 + 0.2, 1e-7, 5e-324, 1e21]);
  return u;
}

export function msgTimestamp(rng, clock) {
  // Mostly the clock's ms; sometimes odd values that listing code has to cope with.
  return rng.weighted([
    [90, () => clock.peek()],
    [3, () => undefined],
    [3, () => new Date(clock.peek()).toISOString()],
    [2, () => clock.peek() + 0.5],
    [2, () => 0],
  ])();
}

function withTimestamp(msg, ts) {
  if (ts !== undefined) msg.timestamp = ts;
  return msg;
}

export function userMessage(rng, clock) {
  return withTimestamp({ role: "user", content: userContent(rng) }, msgTimestamp(rng, clock));
}

export function assistantMessage(rng, clock, { toolCallIds = [] } = {}) {
  const [provider, api, models] = rng.pick(PROVIDERS);
  const content = [];
  const n = rng.int(0, 4);
  for (let i = 0; i < n; i++) {
    const kind = rng.weighted([
      [5, "text"],
      [2, "thinking"],
      [3, "toolCall"],
    ]);
    if (kind === "text") content.push(textBlock(rng, { allowLong: true }));
    else if (kind === "thinking") {
      const b = { type: "thinking", thinking: nastyText(rng) };
      if (rng.chance(0.5)) b.thinkingSignature = rng.hex(32);
      if (rng.chance(0.1)) b.redacted = true;
      content.push(b);
    } else {
      const id = `toolu_${rng.hex(12)}`;
      toolCallIds.push(id);
      content.push({
        type: "toolCall",
        id,
        name: rng.pick(["read", "bash", "edit", "write", "grep", nastyName(rng)]),
        arguments: rng.chance(0.8) ? nastyObject(rng) : {},
      });
    }
  }
  const stopReason = rng.weighted([
    [10, "stop"],
    [2, "length"],
    [5, "toolUse"],
    [1, "error"],
    [1, "aborted"],
  ]);
  const msg = {
    role: "assistant",
    content,
    api,
    provider,
    model: rng.pick(models),
    usage: usageObject(rng),
    stopReason,
  };
  if (stopReason === "error" || (stopReason === "aborted" && rng.chance(0.5))) msg.errorMessage = nastyText(rng);
  if (rng.chance(0.1)) msg.responseId = `resp_${rng.hex(10)}`;
  if (rng.chance(0.05)) msg.futureField = nastyDetails(rng);
  return withTimestamp(msg, msgTimestamp(rng, clock));
}

export function toolResultMessage(rng, clock, toolCallId) {
  const msg = {
    role: "toolResult",
    toolCallId: toolCallId ?? `toolu_${rng.hex(12)}`,
    toolName: rng.pick(["read", "bash", "edit", "write", "grep", nastyName(rng)]),
    content: toolResultContent(rng),
  };
  if (rng.chance(0.6)) msg.details = nastyDetails(rng);
  msg.isError = rng.chance(0.15);
  return withTimestamp(msg, msgTimestamp(rng, clock));
}

export function bashExecutionMessage(rng, clock) {
  const msg = {
    role: "bashExecution",
    command: rng.pick(["ls -la", "echo 'hi'", "cat </dev/null", "printf '\\x00\\n'", nastyText(rng, { maxParts: 1 })]),
    output: rng.chance(0.15) ? "" : nastyText(rng, { allowLong: true }),
  };
  const exit = rng.weighted([
    [6, 0],
    [2, 1],
    [1, 127],
    [1, -1],
    [1, undefined],
    [1, null],
  ]);
  if (exit !== undefined) msg.exitCode = exit;
  msg.cancelled = rng.chance(0.1);
  msg.truncated = rng.chance(0.2);
  if (msg.truncated ? rng.chance(0.8) : rng.chance(0.1)) msg.fullOutputPath = `/tmp/pi-bash-${rng.hex(8)}.log`;
  if (rng.chance(0.3)) msg.excludeFromContext = rng.chance(0.6);
  return withTimestamp(msg, msgTimestamp(rng, clock));
}

export function customRoleMessage(rng, clock, role = "custom") {
  const msg = {
    role,
    customType: nastyName(rng),
    content: rng.chance(0.5) ? nastyText(rng) : toolResultContent(rng),
    display: rng.chance(0.5),
  };
  if (rng.chance(0.5)) msg.details = nastyDetails(rng);
  return withTimestamp(msg, msgTimestamp(rng, clock));
}

const SECTION_NAMES = ["agents", "skills", "env", "10", "2", "date", "ünïcode", "01", "__proto__"];

export function toolDeclaration(rng, name) {
  return {
    name,
    description: nastyText(rng, { maxParts: 2 }),
    parameters: { type: "object", properties: nastyObject(rng), required: [] },
  };
}

export function systemMessage(rng, clock) {
  const msg = { role: "system" };
  msg.content = rng.weighted([
    [5, () => nastyText(rng)],
    [3, () => Array.from({ length: rng.int(0, 3) }, () => textBlock(rng))],
    [1, () => ""],
  ])();
  if (rng.chance(0.5)) {
    const body = [];
    const used = new Set();
    for (let i = rng.int(1, 4); i > 0; i--) {
      const k = rng.pick(SECTION_NAMES);
      if (used.has(k)) continue;
      used.add(k);
      body.push(`${JSON.stringify(k)}:${JSON.stringify(rng.chance(0.25) ? null : nastyText(rng, { maxParts: 2 }))}`);
    }
    msg.sections = JSON.parse(`{${body.join(",")}}`);
  }
  msg.timestamp = clock.peek();
  const tools = ["read", "bash", "edit", "write", "grep", "find", "ls"];
  if (rng.chance(0.4)) msg.toolsAdded = Array.from({ length: rng.int(1, 3) }, () => toolDeclaration(rng, rng.pick(tools)));
  if (rng.chance(0.25)) msg.toolsRemoved = Array.from({ length: rng.int(1, 2) }, () => ({ name: rng.pick(tools) }));
  return msg;
}

/** Messages whose content is null or missing (readers must cope). */
export function nullContentMessage(rng, clock) {
  const role = rng.pick(["user", "assistant", "toolResult", "system", "custom"]);
  const msg = { role };
  if (role === "assistant") Object.assign(msg, { api: "x", provider: "x", model: "x", usage: usageObject(rng), stopReason: "stop" });
  if (role === "toolResult") Object.assign(msg, { toolCallId: `toolu_${rng.hex(6)}`, toolName: "read", isError: false });
  if (role === "custom") Object.assign(msg, { customType: "ext", display: true });
  if (rng.chance(0.5)) msg.content = null;
  msg.timestamp = clock.peek();
  return msg;
}

export const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "ünknown-level 😀"];

export const SESSION_NAMES = [
  "My session",
  "  spaced name  ",
  "multi\r\nline\n\nname\r\r",
  "",
  "   ",
  "\t\ttabs\t",
  "名前 😀",
  "\r\n",
  "\ufeffbom-wrapped\ufeff",
  "\u0085nel-wrapped\u0085",
  "\u00a0nbsp\u3000",
  "\u2028line-sep\u2029",
  "\u200bzwsp\u200b",
  "quote\"and\\back",
  "</script>",
];

export const LABELS = ["checkpoint", "good", "⭐ important", "label with spaces ", "\u0000nul", "名前", "x".repeat(200), "0", "false"];
