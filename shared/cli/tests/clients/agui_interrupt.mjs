// Drives an AG-UI run that ends in an interrupt and the run that answers it, with the
// official client, `@ag-ui/client`'s HttpAgent:
//
//   node agui_interrupt.mjs BASE_URL PRINCIPAL MESSAGE ANSWER_JSON
//
// The first run sends MESSAGE; the second resumes every interrupt the first ended with,
// resolved with the payload ANSWER_JSON. Prints what the client saw as one JSON object.
import { HttpAgent } from "@ag-ui/client";

const [base, principal, message, answer] = process.argv.slice(2);
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
const resume = pending.map((i) => ({
  interruptId: i.id,
  status: "resolved",
  payload: JSON.parse(answer),
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
