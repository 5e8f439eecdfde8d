"""Drives an account link through `baton serve`'s chat completions face with the official
OpenAI SDK for Python.

    python openai_link.py BASE_URL PRINCIPAL

Asks for something whose specialist needs the user's own account: prints one JSON line with
the answer (which holds the sign-in page) and the episode. Then waits for a line on stdin
(the test signs in meanwhile), says that line (the code the sign-in page showed) in the
same episode, and prints a second JSON line with that answer.
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
    asked = "what are my partner miles"
    raw = client.chat.completions.with_raw_response.create(
        model="baton", messages=[{"role": "user", "content": asked}]
    )
    first = raw.parse().choices[0].message.content
    episode = raw.headers.get("x-baton-episode-id")
    print(json.dumps({"content": first, "episode": episode}), flush=True)
    said = sys.stdin.readline().strip()
    second = client.chat.completions.create(
        model="baton",
        messages=[
            {"role": "user", "content": asked},
            {"role": "assistant", "content": first},
            {"role": "user", "content": said},
        ],
        metadata={"episode_id": episode},
    )
    print(json.dumps({"content": second.choices[0].message.content}), flush=True)


main()
