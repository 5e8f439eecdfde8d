"""Sends pictures to `baton serve`'s chat completions face with the official OpenAI SDK.

    python openai_picture.py BASE_URL PRINCIPAL RECEIPT.jpg PRODUCT.jpg

Asks about a receipt photo and a product photo as `image_url` parts with data URLs, then
sends a remote URL, which is refused; prints who was consulted and the refusal as JSON.
"""

import base64
import json
import sys

from openai import OpenAI


def data_url(path):
    with open(path, "rb") as f:
        return "data:image/jpeg;base64," + base64.b64encode(f.read()).decode()


def main() -> None:
    base, principal, receipt, product = sys.argv[1:5]
    client = OpenAI(
        base_url=f"{base}/v1",
        api_key="unused-locally",
        default_headers={"x-baton-principal": principal},
        max_retries=0,
        timeout=60,
    )

    def ask(text, url):
        raw = client.chat.completions.with_raw_response.create(
            model="baton",
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": text},
                        {"type": "image_url", "image_url": {"url": url, "detail": "auto"}},
                    ],
                }
            ],
        )
        completion = raw.parse()
        extension = (completion.model_extra or {}).get("baton", {})
        return {
            "content": completion.choices[0].message.content,
            "consulted": [c["agent_id"] for c in extension.get("consulted", [])],
            "privacy": extension.get("privacy"),
        }

    out = {
        "receipt": ask("this didn't scan", data_url(receipt)),
        "product": ask("any deals?", data_url(product)),
    }
    try:
        ask("and this?", "https://example.com/receipt.jpg")
        out["remote"] = None
    except Exception as e:  # the SDK's own error type for a 400
        out["remote"] = {
            "type": type(e).__name__,
            "status": getattr(e, "status_code", None),
            "message": str(e),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
