// Drives an AG-UI run that ends in an interrupt and the run that answers it, with the
// official client, `@ag-ui/client`'s HttpAgent:
//
//   node agui_interrupt.mjs BASE_URL PRINCIPAL MESSAGE ANSWER_JSON [wait]
//
// The first run sends MESSAGE; the second resumes every interrupt the first ended with,
// resolved with the payload ANSWER_JSON. Prints what the client saw as one JSON object.
// With `wait`, it first prints the pending interrupts as one JSON line and waits for a
// line on stdin (the user does something meanwhile, such as signing in); a line that is a
// JSON object is the payload instead (what the user gave then, such as a code).
import { HttpAgent } from "@ag-ui/client";
import { createInterface } from "node:readline";

const [base, principal, message, answer, wait] = process.argv.slice(2);
const agent = new HttpAgent({
  url: `${base}/v1/agui`,
  headers: { "x-baton-principal": principal },
  threadId: "thread-wait",
});
const outcomes = [];
const subscriber = {
  onRunFinishedEvent(params) {
    outcomes.push({ outcome: params.outcome ?? "success", interrupts: params.interrupts ?? [] });
  },
};
agent.addMessage({ id: "m1", role: "user", content: message });
await agent.runAgent({ runId: "run-1" }, subscriber);
const pending = agent.pendingInterrupts.slice();
let payload = JSON.parse(answer);
if (wait === "wait") {
  console.log(JSON.stringify({ pending }));
  const lines = createInterface({ input: process.stdin });
  const line = await new Promise((resolve) => lines.once("line", resolve));
  lines.close();
  if (line.trim().startsWith("{")) payload = JSON.parse(line);
}
const resume = pending.map((i) => ({
  interruptId: i.id,
  status: "resolved",
  payload,
}));
const second = await agent.runAgent({ runId: "run-2", resume }, subscriber);
console.log(
  JSON.stringify({
    outcomes,
    pending,
    pendingAfter: agent.pendingInterrupts,
    second: second.newMessages,
  }),
);
