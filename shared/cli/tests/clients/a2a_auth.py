"""Drives an account link through `baton serve`'s A2A face with the official A2A SDK for
Python (`a2a-sdk`).

    python a2a_auth.py BASE_URL PRINCIPAL

Streams a message whose specialist needs the user's own account: prints one JSON line with
the task's last state, its answer (which holds the sign-in page) and its state read back
with GetTask. Then waits for a line
on stdin (the test signs in meanwhile), sends that line (what the user says: the code the
sign-in page showed) on the same task, and prints a second JSON line with that task's last
state and answer.
"""

import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState


def message(text, task=None, context=None):
    m = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    if task:
        m.task_id = task
    if context:
        m.context_id = context
    return SendMessageRequest(message=m)


async def streamed(client, request):
    answer, last, task_id, context = "", None, None, None
    async for event in client.send_message(request):
        kind = event.WhichOneof("payload")
        if kind == "task":
            task_id, context = event.task.id, event.task.context_id
        elif kind == "artifact_update":
            answer += "".join(p.text for p in event.artifact_update.artifact.parts)
        elif kind == "status_update":
            last = event.status_update
    return {
        "task_id": task_id,
        "context": context,
        "state": TaskState.Name(last.status.state) if last else None,
        "answer": answer,
    }


async def main():
    base, principal = sys.argv[1], sys.argv[2]
    async with httpx.AsyncClient(headers={"x-baton-principal": principal}, timeout=60) as http:
        card = await A2ACardResolver(http, base).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        first = await streamed(client, message("what are my partner miles"))
        # Read back, the waiting task is in the state it answered with.
        got = await client.get_task(GetTaskRequest(id=first["task_id"]))
        first["read_back"] = TaskState.Name(got.status.state)
        print(json.dumps(first), flush=True)
        said = sys.stdin.readline().strip()
        second = await streamed(
            client, message(said, task=first["task_id"], context=first["context"])
        )
        print(json.dumps(second), flush=True)
        await client.close()


asyncio.run(main())
