// Drives `baton serve`'s AG-UI face with the official client, `@ag-ui/client`'s HttpAgent:
//
//   node agui_run.mjs BASE_URL PRINCIPAL
//
// Runs a turn on a new thread and a follow-up on the same thread, and prints what the
// client made of them (its messages, the custom events, its state) as one JSON object.
import { HttpAgent } from "@ag-ui/client";

const [base, principal] = process.argv.slice(2);
const agent = new HttpAgent({
  url: `${base}/v1/agui`,
  headers: { "x-baton-principal": principal },
  threadId: "thread-1",
});
const custom = [];
const kinds = [];
const subscriber = {
  onEvent({ event }) {
    kinds.push(event.type);
  },
  onCustomEvent({ event }) {
    custom.push(event);
  },
};
agent.addMessage({ id: "m1", role: "user", content: "find me coffee deals" });
const first = await agent.runAgent({ runId: "run-1" }, subscriber);
agent.addMessage({ id: "m2", role: "user", content: "my receipt didn't scan" });
const second = await agent.runAgent({ runId: "run-2" }, subscriber);
console.log(
  JSON.stringify({
    messages: agent.messages,
    first: first.newMessages,
    second: second.newMessages,
    custom,
    kinds,
    state: agent.state,
  }),
);
