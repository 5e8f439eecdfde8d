"""Drives `baton serve`'s chat completions face with the official OpenAI SDK for Python.

    python openai_chat.py BASE_URL PRINCIPAL

Runs a turn without streaming, a streamed follow-up in the same episode, and prints what
the SDK made of them as one JSON object for the test to check.
"""

import json
import sys

from openai import OpenAI


def main() -> None:
    base, principal = sys.argv[1], sys.argv[2]
    client = OpenAI(
        base_url=f"{base}/v1",
        api_key="unused-locally",
        default_headers={"x-baton-principal": principal},
        max_retries=0,
        timeout=60,
    )
    out = {"models": [m.id for m in client.models.list()]}
    out["retrieved"] = client.models.retrieve(out["models"][0]).id

    def refusal(call):
        """What the SDK raises for a refused request: its type, status and parsed body."""
        try:
            call()
            return None
        except Exception as e:  # the SDK's own error types
            return {
                "type": type(e).__name__,
                "status": getattr(e, "status_code", None),
                "error_type": (getattr(e, "body", None) or {}).get("type"),
                "message": str(e),
            }

    out["missing_model"] = refusal(lambda: client.models.retrieve("no-such-model"))
    # An endpoint Baton does not serve, and a method a served one does not take.
    out["no_route"] = refusal(lambda: client.embeddings.create(model="baton", input="hi"))
    out["wrong_method"] = refusal(lambda: client.get("/chat/completions", cast_to=object))

    raw = client.chat.completions.with_raw_response.create(
        model="baton",
        messages=[{"role": "user", "content": "find me coffee deals"}],
    )
    completion = raw.parse()
    extension = (completion.model_extra or {}).get("baton", {})
    out["whole"] = {
        "content": completion.choices[0].message.content,
        "finish_reason": completion.choices[0].finish_reason,
        "usage": completion.usage.model_dump() if completion.usage else None,
        "consulted_header": raw.headers.get("x-baton-consulted"),
        "episode_header": raw.headers.get("x-baton-episode-id"),
        "consulted": [c["agent_id"] for c in extension.get("consulted", [])],
    }

    stream = client.chat.completions.create(
        model="baton",
        messages=[
            {"role": "user", "content": "find me coffee deals"},
            {"role": "assistant", "content": completion.choices[0].message.content},
            {"role": "user", "content": "my receipt didn't scan"},
        ],
        metadata={"episode_id": out["whole"]["episode_header"]},
        stream=True,
        stream_options={"include_usage": True},
    )
    pieces, consulted, usage, episode, finish = [], [], None, None, None
    for chunk in stream:
        for choice in chunk.choices:
            if choice.delta.content:
                pieces.append(choice.delta.content)
            if choice.finish_reason:
                finish = choice.finish_reason
        extension = (chunk.model_extra or {}).get("baton")
        if extension:
            consulted = [c["agent_id"] for c in extension.get("consulted", [])]
            episode = extension.get("episode_id")
        if chunk.usage:
            usage = chunk.usage.model_dump()
    out["streamed"] = {
        "content": "".join(pieces),
        "chunks_with_text": len(pieces),
        "finish_reason": finish,
        "consulted": consulted,
        "episode": episode,
        "usage": usage,
    }

    try:
        client.chat.completions.create(
            model="baton",
            messages=[{"role": "system", "content": "no user message"}],
        )
        out["refusal"] = None
    except Exception as e:  # the SDK's own error type for a 400
        out["refusal"] = {"type": type(e).__name__, "message": str(e)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
