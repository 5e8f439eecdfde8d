"""The example registry's points ledger (demo data, in memory): where `redeem_points`
spends points. Each redemption is recorded under the caller's `Idempotency-Key`. A second
request with a key already recorded spends nothing: with the same arguments it gets the
first answer again (HTTP 200, `Idempotent-Replayed: true`, as Stripe-style APIs answer),
with other arguments HTTP 422. So a retried or replayed call never redeems twice, and its
caller still learns what was done. Python's standard library only.

    python3 ledger.py PORT

    POST /redemptions   body: Baton's http request envelope {"principal", "args", ...}
                        args: {"points": int, "reward_type": "gift_card"|"cash_out"|"donation"}
    GET  /redemptions   every recorded redemption, oldest first (for the tests)
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RATES = {"gift_card": 0.001, "cash_out": 0.0008, "donation": 0.0011}
LOCK = threading.Lock()
REDEMPTIONS = []  # recorded redemptions, oldest first
KEYS = {}  # idempotency key -> (the request's arguments, the first answer)


class Ledger(BaseHTTPRequestHandler):
    def answer(self, status, body, replayed=False):
        data = json.dumps(body).encode()
        self.send_response(status)
        if replayed:
            self.send_header("Idempotent-Replayed", "true")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path != "/redemptions":
            return self.answer(404, {"error": "not found"})
        with LOCK:
            return self.answer(200, {"redemptions": list(REDEMPTIONS)})

    def do_POST(self):
        if self.path != "/redemptions":
            return self.answer(404, {"error": "not found"})
        key = self.headers.get("Idempotency-Key", "").strip()
        if not key:
            return self.answer(400, {"error": "an Idempotency-Key header is required"})
        try:
            length = int(self.headers.get("Content-Length", "0"))
            request = json.loads(self.rfile.read(length) or b"{}")
            args = request.get("args") or {}
            points = int(args["points"])
            reward_type = args.get("reward_type", "gift_card")
            rate = RATES[reward_type]
        except (ValueError, KeyError, TypeError):
            return self.answer(400, {"error": "points (an integer) and a known reward_type are required"})
        if points < 1:
            return self.answer(400, {"error": "points must be at least 1"})
        asked = {"principal": request.get("principal"), "points": points, "reward_type": reward_type}
        with LOCK:
            if key in KEYS:
                first_asked, first_answer = KEYS[key]
                if first_asked != asked:
                    return self.answer(422, {"error": "this Idempotency-Key was used for another request"})
                return self.answer(200, first_answer, replayed=True)
            redemption = {
                "id": f"RD-{len(REDEMPTIONS) + 1:05d}",
                "principal": request.get("principal"),
                "points": points,
                "reward_type": reward_type,
                "value_usd": f"{points * rate:.2f}",
                "idempotency_key": key,
            }
            REDEMPTIONS.append(redemption)
            KEYS[key] = (asked, {"redemption": redemption})
        return self.answer(200, {"redemption": redemption})

    def log_message(self, *_):
        pass  # quiet: the tests read the ledger, not its log


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8942
    ThreadingHTTPServer(("127.0.0.1", port), Ledger).serve_forever()
