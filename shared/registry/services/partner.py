"""The example registry's partner airline (demo data, in memory): an OAuth 2.1
authorization server and an MCP server it protects, where `get_partner_miles` reads the
signed-in member's miles. A user connects their own account once (the authorization-code
grant with PKCE); Baton keeps the link and uses it on later turns. Python's standard
library only.

    python3 partner.py PORT

    GET  /.well-known/oauth-protected-resource[/mcp]   the resource's metadata (RFC 9728)
    GET  /.well-known/oauth-authorization-server       the server's metadata (RFC 8414)
    POST /register                                     dynamic client registration (RFC 7591)
    GET  /authorize                                    the sign-in page: Allow or Deny
    POST /authorize                                    the page's answer: back to the client
    POST /token                                        authorization_code (PKCE S256, each
                                                       code once) and refresh_token grants
    POST /mcp                                          MCP (streamable HTTP, JSON answers);
                                                       401 with a challenge without a token
    GET  /api/miles                                    the same miles as plain JSON, for an
                                                       `http` tool (its own resource, /api)
    GET  /stats                                        what happened (for the tests)
    POST /control                                      {"access_ttl": s, "wrong_audience": b,
                                                        "refuse_refresh": b, "more_scope": b}
                                                       (for the tests; `more_scope`: /mcp
                                                       answers every token 403
                                                       insufficient_scope)

Access tokens look like JWTs (unsigned: this is a demo) naming the resource as their
audience; `wrong_audience` issues them for another resource instead.
"""

import base64
import hashlib
import html
import json
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

LOCK = threading.Lock()
CLIENTS = {}  # client_id -> registration
CODES = {}  # code -> grant (spent once)
TOKENS = {}  # access token -> {"member", "aud", "exp", "scope"}
REFRESH = {}  # refresh token -> {"member", "client_id", "scope", "resource"}
MILES = {"member-1": 12400, "member-2": 310}
SETTINGS = {"access_ttl": 3600, "wrong_audience": False, "refuse_refresh": False, "more_scope": False}
STATS = {"codes": 0, "tokens": 0, "refreshes": 0, "refused": 0, "calls": 0, "unauthorized": 0, "more_scope": 0}
SCOPE = "miles:read"


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Partner(BaseHTTPRequestHandler):
    base = ""

    def answer(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def redirect(self, to):
        self.send_response(302)
        self.send_header("Location", to)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def body(self):
        length = int(self.headers.get("Content-Length", "0") or 0)
        return self.rfile.read(length) if length else b""

    def form(self):
        return {k: v[0] for k, v in parse_qs(self.body().decode()).items()}

    def resource(self):
        return self.base + "/mcp"

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/.well-known/oauth-protected-resource/api":
            return self.answer(200, {
                "resource": self.base + "/api",
                "authorization_servers": [self.base],
                "scopes_supported": [SCOPE],
            })
        if url.path == "/api/miles":
            held = self.bearer(self.base + "/api", "/.well-known/oauth-protected-resource/api")
            if held is None:
                return None
            with LOCK:
                STATS["calls"] += 1
            member = held["member"]
            return self.answer(200, {"member": member, "miles": MILES.get(member, 0), "airline": "Partner Air"})
        if url.path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
            return self.answer(200, {
                "resource": self.resource(),
                "authorization_servers": [self.base],
                "scopes_supported": [SCOPE],
            })
        if url.path == "/.well-known/oauth-authorization-server":
            return self.answer(200, {
                "issuer": self.base,
                "authorization_endpoint": self.base + "/authorize",
                "token_endpoint": self.base + "/token",
                "registration_endpoint": self.base + "/register",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "scopes_supported": [SCOPE, "offline_access"],
            })
        if url.path == "/authorize":
            return self.sign_in_page({k: v[0] for k, v in parse_qs(url.query).items()})
        if url.path == "/stats":
            with LOCK:
                return self.answer(200, dict(STATS))
        if url.path == "/mcp":
            return self.answer(405, {"error": "no event stream here"})
        return self.answer(404, {"error": "not found"})

    def sign_in_page(self, query):
        with LOCK:
            client = CLIENTS.get(query.get("client_id", ""))
        if client is None or query.get("redirect_uri") not in client["redirect_uris"]:
            return self.answer(400, {"error": "unknown client or redirect_uri"})
        if query.get("response_type") != "code" or query.get("code_challenge_method") != "S256":
            return self.answer(400, {"error": "the authorization-code grant with PKCE S256 only"})
        hidden = "".join(
            f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
            for k, v in query.items()
        )
        page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Partner Air sign-in</title></head><body>
<h1>Partner Air</h1><p>{html.escape(client.get("client_name", "An app"))} asks to read your miles.</p>
<form method="post" action="/authorize">{hidden}
<label>Member number <input name="member" value="member-1"></label>
<button name="decision" value="allow" id="allow">Allow</button>
<button name="decision" value="deny" id="deny">Deny</button>
</form></body></html>""".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def do_POST(self):
        path = urlparse(self.path).path
        if path == "/register":
            return self.register()
        if path == "/authorize":
            return self.authorize()
        if path == "/token":
            return self.token()
        if path == "/mcp":
            return self.mcp()
        if path == "/control":
            try:
                changes = json.loads(self.body() or b"{}")
            except ValueError:
                return self.answer(400, {"error": "JSON"})
            with LOCK:
                SETTINGS.update({k: v for k, v in changes.items() if k in SETTINGS})
                return self.answer(200, dict(SETTINGS))
        return self.answer(404, {"error": "not found"})

    def do_DELETE(self):
        return self.answer(200, {})

    def register(self):
        try:
            request = json.loads(self.body() or b"{}")
        except ValueError:
            return self.answer(400, {"error": "invalid_client_metadata"})
        uris = request.get("redirect_uris") or []
        if not uris:
            return self.answer(400, {"error": "invalid_redirect_uri"})
        client_id = "client-" + secrets.token_hex(8)
        with LOCK:
            CLIENTS[client_id] = {"redirect_uris": uris, "client_name": request.get("client_name", "")}
        return self.answer(201, {
            "client_id": client_id,
            "redirect_uris": uris,
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
        })

    def authorize(self):
        form = self.form()
        redirect_uri = form.get("redirect_uri", "")
        with LOCK:
            client = CLIENTS.get(form.get("client_id", ""))
        if client is None or redirect_uri not in client["redirect_uris"]:
            return self.answer(400, {"error": "unknown client or redirect_uri"})
        back = {"state": form["state"]} if "state" in form else {}
        if form.get("decision") != "allow":
            back["error"] = "access_denied"
            return self.redirect(redirect_uri + "?" + urlencode(back))
        code = secrets.token_urlsafe(24)
        with LOCK:
            STATS["codes"] += 1
            CODES[code] = {
                "client_id": form.get("client_id"),
                "redirect_uri": redirect_uri,
                "challenge": form.get("code_challenge", ""),
                "scope": form.get("scope", SCOPE),
                "resource": form.get("resource", self.resource()),
                "member": form.get("member") or "member-1",
                "spent": False,
            }
        back["code"] = code
        return self.redirect(redirect_uri + "?" + urlencode(back))

    def issue(self, member, scope, resource, client_id, refresh=None):
        with LOCK:
            aud = "http://elsewhere.example/mcp" if SETTINGS["wrong_audience"] else resource
            claims = {"sub": member, "aud": aud, "scope": scope, "exp": int(time.time()) + SETTINGS["access_ttl"], "jti": secrets.token_hex(8)}
            token = b64(b'{"alg":"none"}') + "." + b64(json.dumps(claims).encode()) + ".demo"
            TOKENS[token] = {"member": member, "aud": aud, "exp": time.time() + SETTINGS["access_ttl"], "scope": scope}
            if refresh is None:
                refresh = secrets.token_urlsafe(24)
            REFRESH[refresh] = {"member": member, "client_id": client_id, "scope": scope, "resource": resource}
            STATS["tokens"] += 1
            body = {"access_token": token, "token_type": "Bearer", "expires_in": SETTINGS["access_ttl"], "scope": scope}
            if "offline_access" in scope.split():
                body["refresh_token"] = refresh
        return self.answer(200, body, [("Cache-Control", "no-store")])

    def token(self):
        form = self.form()
        grant = form.get("grant_type")
        if grant == "authorization_code":
            with LOCK:
                grant_of = CODES.get(form.get("code", ""))
                if grant_of is None or grant_of["spent"]:
                    STATS["refused"] += 1
                    return self.answer(400, {"error": "invalid_grant", "error_description": "unknown or spent code"})
                grant_of["spent"] = True
            verifier = form.get("code_verifier", "")
            if b64(hashlib.sha256(verifier.encode()).digest()) != grant_of["challenge"]:
                return self.answer(400, {"error": "invalid_grant", "error_description": "PKCE verifier mismatch"})
            if form.get("redirect_uri") != grant_of["redirect_uri"] or form.get("client_id") != grant_of["client_id"]:
                return self.answer(400, {"error": "invalid_grant", "error_description": "client or redirect_uri mismatch"})
            return self.issue(grant_of["member"], grant_of["scope"], grant_of["resource"], grant_of["client_id"])
        if grant == "refresh_token":
            with LOCK:
                held = REFRESH.get(form.get("refresh_token", ""))
                if held is None or SETTINGS["refuse_refresh"]:
                    STATS["refused"] += 1
                    return self.answer(400, {"error": "invalid_grant"})
                STATS["refreshes"] += 1
            return self.issue(held["member"], held["scope"], held["resource"], held["client_id"], form.get("refresh_token"))
        return self.answer(400, {"error": "unsupported_grant_type"})

    def bearer(self, audience, metadata):
        """The request's token if it is good for `audience`; else answers 401 with the
        challenge naming the resource's `metadata` and returns None."""
        auth = self.headers.get("Authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else ""
        with LOCK:
            held = TOKENS.get(token)
            good = held is not None and held["exp"] > time.time() and held["aud"] == audience
            if not good:
                STATS["unauthorized"] += 1
        if not good:
            challenge = f'Bearer resource_metadata="{self.base}{metadata}", scope="{SCOPE}"'
            self.answer(401, {"error": "invalid_token"}, [("WWW-Authenticate", challenge)])
            return None
        return held

    def mcp(self):
        metadata = "/.well-known/oauth-protected-resource/mcp"
        held = self.bearer(self.resource(), metadata)
        if held is None:
            return None
        with LOCK:
            more = SETTINGS["more_scope"]
            if more:
                STATS["more_scope"] += 1
        if more:
            # A server that is never satisfied: a client must stop asking the user.
            challenge = f'Bearer error="insufficient_scope", scope="{SCOPE} miles:transfer", resource_metadata="{self.base}{metadata}"'
            return self.answer(403, {"error": "insufficient_scope"}, [("WWW-Authenticate", challenge)])
        try:
            message = json.loads(self.body() or b"{}")
        except ValueError:
            return self.answer(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}})
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if method == "initialize":
            version = (message.get("params") or {}).get("protocolVersion", "2025-06-18")
            result = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": {"name": "partner-air", "version": "1.0.0"}}
        elif method == "tools/list":
            result = {"tools": [{
                "name": "get_partner_miles",
                "description": "The signed-in member's Partner Air miles.",
                "inputSchema": {"type": "object", "properties": {}},
            }]}
        elif method == "tools/call":
            member = held["member"]
            with LOCK:
                STATS["calls"] += 1
            data = {"member": member, "miles": MILES.get(member, 0), "airline": "Partner Air"}
            result = {"content": [{"type": "text", "text": json.dumps(data)}], "structuredContent": data}
        elif method == "ping":
            result = {}
        else:
            return self.answer(200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}})
        return self.answer(200, {"jsonrpc": "2.0", "id": rid, "result": result})

    def log_message(self, *_):
        pass  # quiet: the tests read /stats, not the log


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8943
    Partner.base = f"http://127.0.0.1:{port}"
    ThreadingHTTPServer(("127.0.0.1", port), Partner).serve_forever()
