"""Runs the template's OIDC token authorizer (the inline code of OidcAuthorizerFunction)
against tokens signed here, with the issuer's discovery document and keys served from
memory: no network, no AWS.

    python infra/oidc_authorizer_check.py TEMPLATE EVENT.json

EVENT.json is the sample TOKEN authorizer event (events/); its token is replaced by each
case's. A valid token must be allowed with the token's `sub` as the principal; every other
case (bad signature, another algorithm, issuer or audience, expired, no `sub`, unknown key,
weak key, no bearer prefix...) must be refused. Exits 1 with one line per failed case.
"""

import base64
import copy
import functools
import hashlib
import hmac
import json
import logging
import os
import random
import sys
import types

logging.disable(logging.WARNING)

from cfnlint.decode import decode  # noqa: E402

ISSUER = "https://issuer.example.com/tenant"
AUDIENCE = "baton-api"
NOW = 1_795_269_600
SHA256_INFO = bytes.fromhex("3031300d060960864801650304020105000420")
# Seeded: the keys are test keys, the same on every run.
RNG = random.Random(20261121)


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64_int(n):
    return b64(n.to_bytes((n.bit_length() + 7) // 8, "big"))


def probably_prime(n):
    for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47):
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for _ in range(32):
        x = pow(RNG.randrange(2, n - 1), d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def prime(bits):
    while True:
        candidate = RNG.getrandbits(bits) | (1 << (bits - 1)) | (1 << (bits - 2)) | 1
        if probably_prime(candidate):
            return candidate


class Key:
    def __init__(self, kid, bits):
        e = 65537
        while True:
            p, q = prime(bits // 2), prime(bits // 2)
            phi = (p - 1) * (q - 1)
            if p != q and phi % e:
                break
        self.kid, self.n, self.e, self.d = kid, p * q, e, pow(e, -1, phi)

    def jwk(self):
        return {
            "kty": "RSA",
            "kid": self.kid,
            "use": "sig",
            "alg": "RS256",
            "n": b64_int(self.n),
            "e": b64_int(self.e),
        }

    def sign(self, data):
        size = (self.n.bit_length() + 7) // 8
        digest = hashlib.sha256(data).digest()
        em = (
            b"\x00\x01"
            + b"\xff" * (size - 3 - len(SHA256_INFO) - 32)
            + b"\x00"
            + SHA256_INFO
            + digest
        )
        return pow(int.from_bytes(em, "big"), self.d, self.n).to_bytes(size, "big")


@functools.cache
def test_keys():
    """Two 2048-bit keys and a 1024-bit one (which the authorizer must refuse)."""
    return Key("k1", 2048), Key("k2", 2048), Key("weak", 1024)


def token(key, claims, header=None, signature=None):
    header = header or {"alg": "RS256", "typ": "JWT", "kid": key.kid}
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    sig = signature if signature is not None else key.sign(signing_input.encode("ascii"))
    return f"{signing_input}.{b64(sig)}"


def claims(**changes):
    base = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "user-7f3a",
        "iat": NOW - 10,
        "exp": NOW + 3600,
        "email": "u@example.com",
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def load(template_path):
    template, errors = decode(template_path)
    if errors:
        raise ValueError(f"{template_path}: {errors[0]}")
    fn = template["Resources"]["OidcAuthorizerFunction"]["Properties"]
    module = types.ModuleType("oidc_authorizer")
    os.environ["OIDC_ISSUER"], os.environ["OIDC_AUDIENCE"] = ISSUER, AUDIENCE
    exec(compile(str(fn["InlineCode"]), "OidcAuthorizerFunction", "exec"), module.__dict__)
    return module


def run(template_path, event_path):
    """The failures of the authorizer in the template at `template_path`."""
    try:
        auth = load(template_path)
    except (ValueError, KeyError, SyntaxError) as e:
        return [f"OIDC authorizer: cannot load its code: {e!r}"]
    with open(event_path, encoding="utf-8") as f:
        sample = json.load(f)
    good, other, weak = test_keys()
    served = {"keys": [good.jwk(), weak.jwk()]}
    fetches = []

    def get_json(url):
        fetches.append(url)
        if url == ISSUER + "/.well-known/openid-configuration":
            return {"issuer": ISSUER, "jwks_uri": "https://issuer.example.com/keys"}
        if url == "https://issuer.example.com/keys":
            return copy.deepcopy(served)
        raise ValueError(f"unexpected fetch of {url}")

    auth.get_json = get_json
    logs = []
    auth.print = logs.append  # the authorizer's log lines, kept to be checked, not shown
    clock = {"now": NOW}
    auth.time = types.SimpleNamespace(time=lambda: clock["now"], monotonic=lambda: clock["now"])
    failures = []

    def call(bearer):
        event = copy.deepcopy(sample)
        event["authorizationToken"] = bearer
        try:
            return auth.handler(event, None)
        except Exception as e:  # the authorizer refuses by raising "Unauthorized"
            return e

    def allowed(name, bearer, sub="user-7f3a"):
        got = call(bearer)
        if isinstance(got, Exception):
            failures.append(f"{name}: refused ({got})")
            return
        statement = got["policyDocument"]["Statement"]
        if got["principalId"] != sub or got["context"] != {"sub": sub}:
            failures.append(
                f"{name}: principal {got['principalId']!r}, context {got['context']}, want {sub!r}"
            )
        if statement != [
            {"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": sample["methodArn"]}
        ]:
            failures.append(f"{name}: policy {statement} is not an Allow of the method only")

    def refused(name, bearer):
        got = call(bearer)
        if not (isinstance(got, Exception) and str(got) == "Unauthorized"):
            failures.append(f"{name}: not refused with Unauthorized: {got!r}")

    valid = token(good, claims())
    allowed("a valid token", "Bearer " + valid)
    if fetches != [ISSUER + "/.well-known/openid-configuration", "https://issuer.example.com/keys"]:
        failures.append(f"discovery then keys expected, fetched {fetches}")
    allowed("an audience among several", "Bearer " + token(good, claims(aud=["other", AUDIENCE])))
    allowed(
        "clock skew within a minute", "Bearer " + token(good, claims(exp=NOW - 30, nbf=NOW + 30))
    )

    head, body, sig = valid.split(".")
    forged_body = b64(json.dumps(claims(sub="someone-else")).encode())
    refused("a changed payload", f"Bearer {head}.{forged_body}.{sig}")
    refused(
        "another key's signature under this key id",
        "Bearer " + token(good, claims(), signature=other.sign(f"{head}.{body}".encode())),
    )
    refused("a truncated signature", f"Bearer {head}.{body}.{sig[:-8]}")
    refused("no signature", f"Bearer {head}.{body}.")
    refused("alg none", "Bearer " + token(good, claims(), {"alg": "none", "kid": "k1"}, b""))
    refused(
        "alg HS256 keyed with the public key",
        "Bearer "
        + token(
            good,
            claims(),
            {"alg": "HS256", "kid": "k1"},
            hmac.new(good.jwk()["n"].encode(), f"{head}.{body}".encode(), "sha256").digest(),
        ),
    )
    refused(
        "RS256 bytes under another alg",
        "Bearer " + token(good, claims(), {"alg": "RS512", "kid": "k1"}),
    )
    refused("another issuer", "Bearer " + token(good, claims(iss="https://evil.example.com")))
    refused("another audience", "Bearer " + token(good, claims(aud="someone-else")))
    refused("no audience", "Bearer " + token(good, claims(aud=None)))
    refused("expired", "Bearer " + token(good, claims(exp=NOW - 120)))
    refused("no expiry", "Bearer " + token(good, claims(exp=None)))
    refused("not valid yet", "Bearer " + token(good, claims(nbf=NOW + 600)))
    refused("no sub", "Bearer " + token(good, claims(sub=None)))
    refused("an empty sub", "Bearer " + token(good, claims(sub="")))
    refused("a sub with a space", "Bearer " + token(good, claims(sub="a b")))
    refused("a sub over 128 characters", "Bearer " + token(good, claims(sub="x" * 129)))
    refused("a key under 2048 bits", "Bearer " + token(weak, claims()))
    refused("no Bearer prefix", valid)
    refused("an empty header", "")
    refused("two parts", "Bearer " + ".".join(valid.split(".")[:2]))

    before = len(fetches)
    refused("an unknown key id", "Bearer " + token(other, claims()))
    refused("an unknown key id again", "Bearer " + token(other, claims()))
    if len(fetches) - before != 0:
        failures.append(f"keys fetched again within a minute of the last fetch: {fetches[before:]}")
    # The issuer rotates in a new key: found once a minute has passed.
    served["keys"].append(other.jwk())
    clock["now"] += 61
    allowed("a rotated-in key after a minute", "Bearer " + token(other, claims(exp=NOW + 3600)))
    if len(fetches) - before != 2:
        failures.append(
            "a new key id a minute later should fetch discovery and keys once, "
            f"got {fetches[before:]}"
        )

    for line in logs:
        record = json.loads(line)
        if record.get("message") != "token refused" or valid.split(".")[1] in line:
            failures.append(
                f"a log line that is not a plain refusal, or that holds a token: {line}"
            )
    if not logs:
        failures.append("refusals are not logged")

    return [f"OIDC authorizer: {f}" for f in failures]


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[4].strip(), file=sys.stderr)
        return 2
    failures = run(argv[1], argv[2])
    if failures:
        for f in failures:
            print(f"check failed: {f}", file=sys.stderr)
        return 1
    print("OIDC authorizer OK: valid tokens allowed as their sub, every bad token refused")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
