// Sends pictures to `baton serve`'s AG-UI face with the official client, `@ag-ui/client`:
//
//   node agui_picture.mjs BASE_URL PRINCIPAL RECEIPT.jpg PRODUCT.jpg
//
// Runs a receipt photo and a product photo as image parts (a data source) beside their
// words, each on its own thread, and prints the tool calls the client saw as JSON.
import { readFileSync } from "node:fs";
import { HttpAgent } from "@ag-ui/client";

const [base, principal, receipt, product] = process.argv.slice(2);

async function ask(thread, text, path) {
  const agent = new HttpAgent({
    url: `${base}/v1/agui`,
    headers: { "x-baton-principal": principal },
    threadId: thread,
  });
  agent.addMessage({
    id: `${thread}-m1`,
    role: "user",
    content: [
      { type: "text", text },
      {
        type: "image",
        source: { type: "data", value: readFileSync(path).toString("base64"), mimeType: "image/jpeg" },
      },
    ],
  });
  const run = await agent.runAgent({ runId: `${thread}-run` });
  const calls = run.newMessages
    .flatMap((m) => m.toolCalls ?? [])
    .map((c) => c.function.name);
  const answer = run.newMessages.find((m) => m.role === "assistant" && typeof m.content === "string");
  return { calls, answer: answer?.content ?? null };
}

const out = {
  receipt: await ask("pictures-1", "this didn't scan", receipt),
  product: await ask("pictures-2", "any deals?", product),
};
console.log(JSON.stringify(out));
