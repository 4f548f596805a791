// Produce tests/fixtures/mastra_token_limiter.json with Mastra's own TokenLimiter.
//   cd scripts/mastra && npm install && node parity.mjs
// Deterministic: a seeded generator builds the conversations.
import { writeFileSync } from "node:fs";
import { TokenLimiter } from "@mastra/memory/processors";
import cl100k_base from "js-tiktoken/ranks/cl100k_base";

let seed = 12345;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const WORDS = ["hello", "world", "memory", "token", "naïve", "café", "東京", "Москва", "🙂", "don't",
  "JSON", "  spaced  ", "\n", "12345", "3.14", "thread", "résumé", "agent", "recall"];
const text = () => Array.from({ length: 1 + Math.floor(rand() * 40) }, () => pick(WORDS)).join(pick([" ", "", ", "]));

function message(i) {
  const r = rand();
  if (r < 0.4) return { role: "user", content: text() };
  if (r < 0.75) return { role: "assistant", content: text() };
  if (r < 0.8) return { role: "system", content: text() };
  if (r < 0.9) {
    const parts = [];
    if (rand() < 0.5) parts.push({ type: "text", text: text() });
    const args = rand() < 0.7 ? { q: text(), n: Math.floor(rand() * 10), ok: rand() < 0.5 } : JSON.stringify({ q: text() });
    parts.push({ type: "tool-call", toolCallId: `c${i}`, toolName: pick(["search", "weather"]), args });
    return { role: "assistant", content: parts };
  }
  const result = rand() < 0.5 ? text() : { items: [text(), text()], count: 2 };
  return { role: "tool", content: [{ type: "tool-result", toolCallId: `c${i}`, toolName: "search", result }] };
}

const out = { mastra_memory_version: "0.15.13", encodings: {} };
for (const [name, encoding] of [["o200k_base", undefined], ["cl100k_base", cl100k_base]]) {
  const conversations = [];
  for (let c = 0; c < 12; c++) {
    const messages = Array.from({ length: 5 + Math.floor(rand() * 40) }, (_, i) => message(i));
    const limiter = encoding ? new TokenLimiter({ limit: 1, encoding }) : new TokenLimiter(1);
    const counts = messages.map((m) => limiter.countTokens(m));
    // Only text messages go through process() (the walk); counts cover every kind.
    const plain = messages.filter((m) => typeof m.content === "string" && m.role !== "system");
    const limits = [30, 100, 250, 600, 5000].map((limit) => {
      const l = encoding ? new TokenLimiter({ limit, encoding }) : new TokenLimiter(limit);
      l.logger = { info() {}, debug() {}, warn() {}, error() {} };
      const kept = l.process(plain);
      return { limit, kept: kept.map((m) => plain.indexOf(m)) };
    });
    conversations.push({ messages, counts, plain_indexes: messages.map((m, i) => (plain.includes(m) ? i : -1)).filter((i) => i >= 0), limits });
  }
  out.encodings[name] = conversations;
}
writeFileSync(new URL("../../tests/fixtures/mastra_token_limiter.json", import.meta.url), JSON.stringify(out, null, 1));
console.log("wrote tests/fixtures/mastra_token_limiter.json");
