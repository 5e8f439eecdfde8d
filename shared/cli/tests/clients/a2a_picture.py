"""Sends pictures to `baton serve`'s A2A face with the official A2A SDK for Python.

    python a2a_picture.py BASE_URL PRINCIPAL RECEIPT.jpg PRODUCT.jpg

Sends a receipt photo and a product photo as file parts (raw bytes) beside their words,
and a file part that points at a remote URL, which is refused; prints who was consulted,
what the task keeps of the message, and the refusal as JSON.
"""

import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, TaskState
from google.protobuf.json_format import MessageToDict


def message(text, picture):
    m = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text), picture])
    return SendMessageRequest(message=m)


def raw(path):
    with open(path, "rb") as f:
        return Part(raw=f.read(), media_type="image/jpeg", filename="photo.jpg")


async def ask(client, request):
    answer, last, task = "", None, None
    async for event in client.send_message(request):
        kind = event.WhichOneof("payload")
        if kind == "task":
            task = event.task
        elif kind == "artifact_update":
            answer += "".join(p.text for p in event.artifact_update.artifact.parts)
        elif kind == "status_update":
            last = event.status_update
    record = MessageToDict(last.metadata).get("baton", {}) if last else {}
    kept = [MessageToDict(p) for m in (task.history if task else []) for p in m.parts]
    return {
        "answer": answer,
        "state": TaskState.Name(last.status.state) if last else None,
        "consulted": [a["agent_id"] for a in record.get("consulted", [])],
        "history_parts": kept,
    }


async def main():
    base, principal, receipt, product = sys.argv[1:5]
    out = {}
    async with httpx.AsyncClient(headers={"x-baton-principal": principal}, timeout=60) as http:
        card = await A2ACardResolver(http, base).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        out["receipt"] = await ask(client, message("this didn't scan", raw(receipt)))
        out["product"] = await ask(client, message("any deals?", raw(product)))
        try:
            remote = Part(url="https://example.com/receipt.jpg", media_type="image/jpeg")
            await ask(client, message("and this?", remote))
            out["remote"] = None
        except Exception as e:  # the SDK's own error type is what the test checks
            out["remote"] = {"type": type(e).__name__, "message": str(e)}
        await client.close()
    print(json.dumps(out))


asyncio.run(main())
