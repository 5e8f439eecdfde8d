"""Drives `baton serve`'s A2A face with the official A2A SDK for Python (`a2a-sdk`).

    python a2a_client.py BASE_URL PRINCIPAL OTHER_PRINCIPAL

Discovers the agent card, streams a turn, follows it up in the same context, addresses a
specialist's skill (the Direct Line), cancels a slow task, and asks for a task as another
principal; prints what the SDK made of each as one JSON object for the test to check.
"""

import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from google.protobuf.json_format import MessageToDict


def message(text, context=None, skill=None):
    m = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    if context:
        m.context_id = context
    if skill:
        m.metadata.update({"skillId": skill})
    return SendMessageRequest(message=m)


async def streamed(client, request):
    """Sends a message over the stream; what arrived, in order."""
    kinds, answer, last = [], "", None
    task_id = context = None
    async for event in client.send_message(request):
        kind = event.WhichOneof("payload")
        kinds.append(kind)
        if kind == "task":
            task_id, context = event.task.id, event.task.context_id
        elif kind == "artifact_update":
            answer += "".join(p.text for p in event.artifact_update.artifact.parts)
        elif kind == "status_update":
            last = event.status_update
    record = MessageToDict(last.metadata).get("baton", {}) if last else {}
    return {
        "kinds": kinds,
        "task_id": task_id,
        "context": context,
        "answer": answer,
        "state": TaskState.Name(last.status.state) if last else None,
        "consulted": [a["agent_id"] for a in record.get("consulted", [])],
        "episode": record.get("episode_id"),
    }


async def main():
    base, principal, other = sys.argv[1], sys.argv[2], sys.argv[3]
    out = {}
    async with httpx.AsyncClient(
        headers={"x-baton-principal": principal}, timeout=60
    ) as http, httpx.AsyncClient(headers={"x-baton-principal": other}, timeout=60) as theirs:
        card = await A2ACardResolver(http, base).get_agent_card()
        out["card"] = {
            "name": card.name,
            "skills": [s.id for s in card.skills],
            "url": card.supported_interfaces[0].url,
            "streaming": card.capabilities.streaming,
        }
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)

        first = await streamed(client, message("find me coffee deals"))
        out["streamed"] = first
        out["follow_up"] = await streamed(
            client, message("and anything on tea?", context=first["context"])
        )
        out["direct"] = await streamed(
            client, message("what's on offer today?", skill="shop")
        )

        # A slow task, returned at once (polling), then canceled.
        polling = ClientFactory(
            ClientConfig(httpx_client=http, streaming=False, polling=True)
        ).create(card)
        started = None
        async for event in polling.send_message(message("find coffee deals slowly")):
            started = event.task
        canceled = await polling.cancel_task(CancelTaskRequest(id=started.id))
        got = await polling.get_task(GetTaskRequest(id=started.id))
        out["cancel"] = {
            "started": TaskState.Name(started.status.state),
            "canceled": TaskState.Name(canceled.status.state),
            "read_back": TaskState.Name(got.status.state),
            "outcome": MessageToDict(got.metadata).get("baton", {}).get("outcome"),
        }

        # Another principal asks for the first task.
        stranger = ClientFactory(ClientConfig(httpx_client=theirs, streaming=False)).create(card)
        try:
            await stranger.get_task(GetTaskRequest(id=first["task_id"]))
            out["other_principal"] = "found"
        except Exception as e:  # the SDK's own error type is what the test checks
            out["other_principal"] = type(e).__name__
        await client.close()
        await polling.close()
        await stranger.close()
    print(json.dumps(out))


asyncio.run(main())
