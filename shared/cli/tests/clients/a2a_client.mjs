// Drives `baton serve`'s A2A face with the official A2A SDK for JavaScript (@a2a-js/sdk):
//
//   node a2a_client.mjs BASE_URL PRINCIPAL OTHER_PRINCIPAL
//
// Discovers the agent card, streams a turn, follows it up in the same context, addresses a
// specialist's skill (the Direct Line), cancels a slow task, and asks for a task as another
// principal; prints what the SDK made of each as one JSON object for the test to check.
import { randomUUID } from "node:crypto";
import { Role, TaskState } from "@a2a-js/sdk";
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";

const [base, principal, other] = process.argv.slice(2);

// Every call carries the caller's principal, as a deployment's authentication would.
function client(who, config = {}) {
  const fetchImpl = (url, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set("x-baton-principal", who);
    return fetch(url, { ...init, headers });
  };
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    clientConfig: config,
  });
  return new ClientFactory(options).createFromUrl(base);
}

function message(text, { context, skill } = {}) {
  return {
    message: {
      messageId: randomUUID(),
      contextId: context ?? "",
      taskId: "",
      role: Role.ROLE_USER,
      parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
      metadata: skill ? { skillId: skill } : undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
    tenant: "",
  };
}

function textOf(parts) {
  return parts
    .map((p) => (p.content?.$case === "text" ? p.content.value : ""))
    .join("");
}

async function streamed(agent, request) {
  const kinds = [];
  let answer = "";
  let last;
  let taskId;
  let context;
  for await (const event of agent.sendMessageStream(request)) {
    const { $case, value } = event.payload ?? {};
    kinds.push($case);
    if ($case === "task") {
      taskId = value.id;
      context = value.contextId;
    } else if ($case === "artifactUpdate") {
      answer += textOf(value.artifact.parts);
    } else if ($case === "statusUpdate") {
      last = value;
    }
  }
  const record = last?.metadata?.baton ?? {};
  return {
    kinds,
    task_id: taskId,
    context,
    answer,
    state: last ? TaskState[last.status.state] : null,
    consulted: (record.consulted ?? []).map((a) => a.agent_id),
    episode: record.episode_id,
  };
}

const out = {};
const agent = await client(principal);
const card = await agent.getAgentCard();
out.card = {
  name: card.name,
  skills: card.skills.map((s) => s.id),
  url: card.supportedInterfaces[0].url,
  streaming: card.capabilities.streaming,
};
const first = await streamed(agent, message("find me coffee deals"));
out.streamed = first;
out.follow_up = await streamed(agent, message("and anything on tea?", { context: first.context }));
out.direct = await streamed(agent, message("what's on offer today?", { skill: "shop" }));

// A slow task, returned at once (polling), then canceled.
const polling = await client(principal, { polling: true });
const started = await polling.sendMessage(message("find coffee deals slowly"));
const canceled = await polling.cancelTask({ id: started.id, metadata: undefined, tenant: "" });
const got = await polling.getTask({ id: started.id, tenant: "" });
out.cancel = {
  started: TaskState[started.status.state],
  canceled: TaskState[canceled.status.state],
  read_back: TaskState[got.status.state],
  outcome: got.metadata?.baton?.outcome,
};

// Another principal asks for the first task.
const stranger = await client(other);
try {
  await stranger.getTask({ id: first.task_id, tenant: "" });
  out.other_principal = "found";
} catch (e) {
  out.other_principal = e.constructor.name;
}
console.log(JSON.stringify(out));
