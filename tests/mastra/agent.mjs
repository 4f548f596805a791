// Mastra's side of the tests: one step on a store per JSON command (on stdin; with --serve, a
// live process taking one command per line and keeping its stores open), a JSON answer back.
//   {"op": "generate", "db": path, "thread": id, "resource": id, "input": text,
//    "replies": [{"tool": name, "id": call id, "args": {...}} | {"text": "..."}]}
//       -> {"text", "prompts": [the model's input, per call]}
//   {"op": "set_working_memory" | "get_working_memory", "db", "thread", "resource", "text"?}
//   {"op": "recall", "db", "thread", "resource", "last": n} -> {"messages": [...]}
//   {"op": "delete_messages", "db", "ids": [...]} / {"op": "delete_thread", "db", "thread"}
//   {"op": "jsonb", "db", "values": [...]} -> {"hex": [libsql's jsonb(value) per value]}
//   {"op": "observe", "db", "thread", "resource", "scope", "text", "observed": [row ids],
//    "observed_at": ISO, "reflect": bool} (the storage calls Mastra's Observer and Reflector
//    make: the record made where missing, then the text set, or a reflection generation)
//   {"op": "observations", "db", "thread", "resource", "scope"} -> {"record", "history"}
//   {"op": "vector_query", "db" | "pg", "index", "vector", "topK", "resource"} -> {"ids"}
//       (Mastra's vector store queried as its semantic recall queries it)
// Any command may carry "semantic": {"topK", "range", "scope"}: Mastra's semantic recall on
// (LibSQLVector on the same file, or PgVector on the same database and schema) with the hash
// embedder below, which `mastra_side.HashEmbeddings` computes identically in Python.
import { Agent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { Memory } from "@mastra/memory";
import { LibSQLStore } from "@mastra/libsql";
import { MockLanguageModelV2 } from "ai/test";
import { z } from "zod";

// A bag-of-words embedder both runtimes compute alike: each lowercase word (a run of [a-z0-9])
// counted in bucket FNV-1a(word) % 64, the counts scaled to unit length (AI SDK v2 embedding
// model shape, which Mastra's Memory takes as `embedder`).
export const DIMENSION = 64;
function hashVector(text) {
  const vector = new Array(DIMENSION).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    let h = 0x811c9dc5;
    for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 0x01000193) >>> 0;
    vector[h % DIMENSION] += 1;
  }
  const norm = Math.hypot(...vector);
  if (norm === 0) vector[0] = 1;
  return norm === 0 ? vector : vector.map((x) => x / norm);
}
const hashEmbedder = {
  specificationVersion: "v2", provider: "lmm-test", modelId: "hash-64",
  maxEmbeddingsPerCall: 2048, supportsParallelCalls: true,
  doEmbed: async ({ values }) => ({ embeddings: values.map(hashVector) }),
};

const stores = new Map(); // one store (and Memory) per database and options, kept open
async function storeFor(command) {
  if (command.pg) {  // Mastra's PostgresStore: {"pg": connection string, "schema": schemaName}
    const { PostgresStore } = await import("@mastra/pg");
    return new PostgresStore({ id: "side", connectionString: command.pg, schemaName: command.schema });
  }
  return new LibSQLStore({ id: "side", url: "file:" + command.db });
}
async function vectorFor(command) {
  if (command.pg) {
    const { PgVector } = await import("@mastra/pg");
    return new PgVector({ id: "side-vector", connectionString: command.pg, schemaName: command.schema });
  }
  const { LibSQLVector } = await import("@mastra/libsql");
  return new LibSQLVector({ id: "side-vector", url: "file:" + command.db });
}
async function memoryFor(command) {
  const key = JSON.stringify([command.db, command.pg, command.schema, command.last ?? 40, command.scope ?? "resource", command.semantic]);
  if (!stores.has(key)) {
    const storage = await storeFor(command);
    const semantic = command.semantic && {
      semanticRecall: { topK: command.semantic.topK ?? 3, messageRange: command.semantic.range ?? 0, scope: command.semantic.scope ?? "resource" },
    };
    stores.set(key, new Memory({
      storage,
      ...(semantic && { vector: await vectorFor(command), embedder: hashEmbedder }),
      options: { lastMessages: command.last ?? 40, workingMemory: { enabled: true, scope: command.scope ?? "resource" }, ...semantic },
    }));
  }
  return stores.get(key);
}
const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };

async function generate(command, memory) {
  const prompts = [];
  const replies = [...(command.replies ?? [])];
  const model = new MockLanguageModelV2({
    doGenerate: async (options) => {
      prompts.push(options.prompt);
      const reply = replies.shift() ?? { text: "(no more replies)" };
      if (reply.tool) {
        return { content: [{ type: "tool-call", toolCallId: reply.id, toolName: reply.tool, input: JSON.stringify(reply.args ?? {}) }],
                 finishReason: "tool-calls", usage, warnings: [] };
      }
      return { content: [{ type: "text", text: reply.text }], finishReason: "stop", usage, warnings: [] };
    },
  });
  const get_weather = createTool({
    id: "get_weather", description: "The weather in a city", inputSchema: z.object({ city: z.string() }),
    execute: async (input) => ({ tempC: 18, city: input?.city ?? input?.context?.city }),
  });
  const agent = new Agent({ id: "side", name: "side", instructions: "be brief", model, tools: { get_weather }, memory });
  const out = await agent.generate(command.input, { memory: { thread: command.thread, resource: command.resource } });
  return { text: out.text, prompts };
}

const vectors = new Map(); // one LibSQLVector / PgVector per database, kept open
async function handle(command) {
  if (command.op === "vector_query") {  // Mastra's own vector query, as its semantic recall makes it
    const key = JSON.stringify([command.db, command.pg, command.schema]);
    if (!vectors.has(key)) vectors.set(key, await vectorFor(command));
    const hits = await vectors.get(key).query({
      indexName: command.index, queryVector: command.vector, topK: command.topK ?? 3,
      filter: { resource_id: command.resource },
    });
    return { ids: hits.map((h) => h.metadata?.message_id) };
  }
  const memory = await memoryFor(command);
  if (command.op === "generate") return await generate(command, memory);
  if (command.op === "set_working_memory") {
    await memory.updateWorkingMemory({ threadId: command.thread, resourceId: command.resource, workingMemory: command.text });
    return {};
  }
  if (command.op === "get_working_memory") {
    return { text: await memory.getWorkingMemory({ threadId: command.thread, resourceId: command.resource }) };
  }
  if (command.op === "recall") {
    const { messages } = await memory.recall({ threadId: command.thread, resourceId: command.resource, perPage: command.last ?? 40 });
    return { messages };
  }
  if (command.op === "delete_messages") {
    await memory.deleteMessages(command.ids);
    return {};
  }
  if (command.op === "delete_thread") {
    await memory.deleteThread(command.thread);
    return {};
  }
  if (command.op === "observe" || command.op === "observations") {
    const store = await memory.storage.getStore("memory");
    const scope = command.scope ?? "resource";
    const threadId = scope === "thread" ? command.thread : null;
    let record = await store.getObservationalMemory(threadId, command.resource);
    if (command.op === "observations") {
      const history = await store.getObservationalMemoryHistory(threadId, command.resource, 10);
      return { record, history };
    }
    record ??= await store.initializeObservationalMemory({ threadId, resourceId: command.resource, scope, config: {} });
    if (command.reflect) {
      await store.createReflectionGeneration({ currentRecord: record, reflection: command.text, tokenCount: command.tokens ?? 10 });
    } else {
      await store.updateActiveObservations({
        id: record.id, observations: command.text, tokenCount: command.tokens ?? 10,
        lastObservedAt: new Date(command.observed_at ?? Date.now()), observedMessageIds: command.observed,
      });
    }
    return {};
  }
  if (command.op === "jsonb") {
    const { createClient } = await import("@libsql/client");
    const client = createClient({ url: "file:" + command.db });
    const hex = [];
    for (const value of command.values) {
      const result = await client.execute({ sql: "SELECT hex(jsonb(?)) AS h", args: [JSON.stringify(value)] });
      hex.push(result.rows[0].h);
    }
    return { hex };
  }
  throw new Error("unknown op " + command.op);
}

if (process.argv.includes("--serve")) {
  // a live Mastra process: one command per line on stdin, one answer per line on stdout
  // ({"error": ...} for a failed one), its stores kept open between them
  const { createInterface } = await import("node:readline");
  for await (const line of createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    let answer;
    const started = performance.now();
    try {
      answer = { ...(await handle(JSON.parse(line))), ms: performance.now() - started };
    } catch (error) {
      answer = { error: String(error?.stack ?? error), ms: performance.now() - started };
    }
    await new Promise((resolve) => process.stdout.write(JSON.stringify(answer) + "\n", resolve));
  }
  process.exit(0);
}
const command = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text));
}));
const answer = await handle(command);
// (exit once the pipe took it all: a large answer is written in several chunks)
process.stdout.write(JSON.stringify(answer), () => process.exit(0));
