"""Offline SAM -> CloudFormation transform of template.yaml, with checks on the result.

    python infra/sam_transform.py TEMPLATE OUT.json [REGISTRY_DIR]

Runs aws-sam-translator locally (no AWS credentials, no network), writes the transformed
template to OUT.json (for cfn-lint), then checks what neither cfn-lint nor `sam validate`
looks at: every REST route really streams, the function URL streams with IAM auth, the
Bedrock permission names only the model parameters, the table matches the journal contract
(DESIGN D-24), and the model parameters match the registry's models.yaml. Exits 1 with one
line per failed check.
"""

import json
import logging
import os
import re
import sys

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
# The translator logs a feature-toggle warning per transform; it means nothing offline.
logging.disable(logging.WARNING)

import yaml  # noqa: E402  (after the environment is set up)
from cfnlint.decode import decode  # noqa: E402
from samtranslator.translator.transform import transform  # noqa: E402

REGION = "us-east-1"
ACCOUNT = "123456789012"
PLACEHOLDER_URI = "s3://placeholder-bucket/placeholder-key"
MODEL_PARAMETERS = ("OrchestratorModelId", "SpecialistModelId", "SummarizerModelId")
# Which registry model (models.yaml key) each parameter stands for; BATON_MODEL_IDS says the same.
REGISTRY_KEY_OF = {
    "OrchestratorModelId": "claude-haiku",
    "SpecialistModelId": "claude-sonnet",
    "SummarizerModelId": "nova-micro",
}
STREAMED_ROUTES = [("/v1/turns", "post"), ("/v1/episodes/{id}", "get"), ("/healthz", "get")]


class NoManagedPolicies:
    """Managed-policy lookups would need IAM; the template names none by name."""

    def load(self):
        return {}


def with_placeholder_code(template):
    """What `sam package` does to local code paths, so the translator accepts them."""
    # cfn-lint's decoded nodes are dict/str subclasses with their own semantics: use plain ones.
    template = json.loads(json.dumps(template))
    sections = list(template.get("Resources", {}).values())
    sections.append(template.get("Globals", {}))
    for section in sections:
        props = section.get("Properties", section.get("Function", {}))
        for key in ("CodeUri", "ContentUri"):
            if isinstance(props.get(key), str) and not props[key].startswith("s3://"):
                props[key] = PLACEHOLDER_URI
    return template


class Resolver:
    """Evaluates the few intrinsic functions the IAM statements use, for given parameters."""

    def __init__(self, parameters):
        self.values = dict(parameters)
        self.values.update(
            {
                "AWS::Partition": "aws",
                "AWS::Region": REGION,
                "AWS::AccountId": ACCOUNT,
                "AWS::URLSuffix": "amazonaws.com",
                "AWS::StackName": "baton",
            }
        )

    def __call__(self, node, local=None):
        local = local or {}
        if isinstance(node, str):
            return node
        if isinstance(node, list):
            return [self(item, local) for item in node]
        if not isinstance(node, dict) or len(node) != 1:
            raise ValueError(f"cannot evaluate {node!r}")
        (fn, arg), = node.items()
        if fn == "Ref":
            return self.values.get(arg, f"<{arg}>")
        if fn == "Fn::GetAtt":
            name = arg if isinstance(arg, str) else ".".join(arg)
            return f"<{name}>"
        if fn == "Fn::Split":
            return self(arg[1], local).split(arg[0])
        if fn == "Fn::Select":
            return self(arg[1], local)[int(arg[0])]
        if fn == "Fn::Join":
            return arg[0].join(self(arg[1], local))
        if fn == "Fn::Sub":
            text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
            scope = {k: self(v, local) for k, v in extra.items()}

            def value(match):
                name = match.group(1)
                if name in scope:
                    return scope[name]
                if name in self.values:
                    return self.values[name]
                return f"<{name}>"

            return re.sub(r"\$\{([^}!]+)\}", value, text)
        raise ValueError(f"cannot evaluate {fn}")


class Checks:
    def __init__(self):
        self.failures = []

    def expect(self, condition, message):
        if not condition:
            self.failures.append(message)
        return condition


def parameter_defaults(template):
    return {k: str(v.get("Default")) for k, v in template.get("Parameters", {}).items()}


def check_rest_api(out, c):
    api = out["Resources"].get("TurnApi", {}).get("Properties", {})
    c.expect(
        api.get("EndpointConfiguration", {}).get("Types") == ["REGIONAL"],
        "the REST API must use a REGIONAL endpoint (edge-optimized cuts idle streams after 30 s)",
    )
    paths = api.get("Body", {}).get("paths", {})
    for path, method in STREAMED_ROUTES:
        op = paths.get(path, {}).get(method)
        if not c.expect(op is not None, f"the REST API has no {method.upper()} {path}"):
            continue
        integ = op.get("x-amazon-apigateway-integration", {})
        where = f"{method.upper()} {path}"
        c.expect(
            integ.get("responseTransferMode") == "STREAM",
            f"{where}: integration is not responseTransferMode STREAM "
            "(the SAM event needs ResponseTransferMode: RESPONSE_STREAM)",
        )
        uri = json.dumps(integ.get("uri"))
        c.expect(
            "response-streaming-invocations" in uri,
            f"{where}: integration URI is not the response-streaming-invocations one",
        )
        c.expect(
            "credentials" not in integ,
            f"{where}: integration invokes with the caller's credentials (set InvokeRole: NONE)",
        )
        c.expect(
            any("AWS_IAM" in sec for sec in op.get("security", [])),
            f"{where}: route is not protected by AWS_IAM",
        )
    turns = paths.get("/v1/turns", {}).get("post", {}).get("x-amazon-apigateway-integration", {})
    c.expect(
        int(turns.get("timeoutInMillis", 0)) > 29000,
        "POST /v1/turns: integration timeout is not raised above 29 s for streaming",
    )


def check_function_url(out, c):
    url = out["Resources"].get("TurnFunctionUrl", {}).get("Properties", {})
    c.expect(url.get("AuthType") == "AWS_IAM", "the function URL must use AuthType AWS_IAM")
    c.expect(
        url.get("InvokeMode") == "RESPONSE_STREAM",
        "the function URL must use InvokeMode RESPONSE_STREAM",
    )


def check_turn_environment(out, c):
    env = (
        out["Resources"].get("TurnFunction", {}).get("Properties", {})
        .get("Environment", {}).get("Variables", {})
    )
    for name in ("BATON_TABLE", "BATON_BUCKET", "BATON_INLINE_BODY_LIMIT", "BATON_REGISTRY",
                 "BATON_MODEL_IDS", "RUST_LOG"):
        c.expect(name in env, f"TurnFunction: environment variable {name} is not set")


def role_statements(out, role):
    props = out["Resources"].get(role, {}).get("Properties", {})
    for policy in props.get("Policies", []):
        for statement in policy.get("PolicyDocument", {}).get("Statement", []):
            yield statement


def as_list(value):
    return value if isinstance(value, list) else [value]


def check_bedrock(out, template, c):
    """Resolve the Bedrock resources under the defaults and under other ids: always exactly the
    parameters' inference profiles here and their foundation models in any region."""
    defaults = parameter_defaults(template)
    other = dict(defaults)
    other.update(
        {
            "OrchestratorModelId": "eu.anthropic.claude-test-a-v1:0",
            "SpecialistModelId": "apac.meta.llama-test-b-v2:0",
            "SummarizerModelId": "global.amazon.nova-test-c-v1:0",
        }
    )
    roles = [k for k, v in out["Resources"].items() if v["Type"] == "AWS::IAM::Role"]
    for role in roles:
        for st in role_statements(out, role):
            actions = as_list(st.get("Action", []))
            if not any(a.startswith("bedrock:") for a in actions):
                continue
            c.expect(
                role == "TurnFunctionRole",
                f"{role}: only the turn function may call Bedrock",
            )
            c.expect(
                actions == ["bedrock:InvokeModelWithResponseStream"],
                f"{role}: Bedrock actions must be exactly InvokeModelWithResponseStream, got {actions}",
            )
    statements = [
        st
        for st in role_statements(out, "TurnFunctionRole")
        if st.get("Sid") == "BedrockConverseStream"
    ]
    if not c.expect(len(statements) == 1, "TurnFunctionRole: no BedrockConverseStream statement"):
        return
    for params in (defaults, other):
        resolve = Resolver(params)
        got = sorted(resolve(as_list(statements[0]["Resource"])))
        want = []
        for name in MODEL_PARAMETERS:
            model = params[name]
            want.append(f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/{model}")
            want.append(f"arn:aws:bedrock:*::foundation-model/{model.split('.', 1)[1]}")
        c.expect(
            got == sorted(want),
            "Bedrock resources are not exactly the model parameters' profiles and models:\n"
            f"  got  {got}\n  want {sorted(want)}",
        )


def check_registry_models(template, registry_dir, c):
    """The parameter defaults and BATON_MODEL_IDS must cover the registry's Bedrock models."""
    with open(os.path.join(registry_dir, "models.yaml"), encoding="utf-8") as f:
        models = yaml.safe_load(f).get("models", {})
    bedrock = {k: v["model_id"] for k, v in models.items() if v.get("provider") == "bedrock"}
    defaults = parameter_defaults(template)
    for name, key in REGISTRY_KEY_OF.items():
        c.expect(
            bedrock.get(key) == defaults.get(name),
            f"parameter {name} defaults to {defaults.get(name)!r} but models.yaml "
            f"has {key}: {bedrock.get(key)!r}",
        )
    c.expect(
        set(bedrock) == set(REGISTRY_KEY_OF.values()),
        f"models.yaml Bedrock models {sorted(bedrock)} are not the ones the template "
        f"maps {sorted(REGISTRY_KEY_OF.values())}",
    )
    env = (
        template["Resources"]["TurnFunction"]["Properties"]
        .get("Environment", {})
        .get("Variables", {})
    )
    mapping = Resolver(defaults)(env.get("BATON_MODEL_IDS", ""))
    pairs = dict(p.split("=", 1) for p in mapping.split(",") if "=" in p)
    c.expect(
        pairs == bedrock,
        f"BATON_MODEL_IDS resolves to {pairs}, models.yaml has {bedrock}",
    )


def check_table(out, c):
    t = out["Resources"].get("JournalTable", {}).get("Properties", {})
    keys = {k["AttributeName"]: k["KeyType"] for k in t.get("KeySchema", [])}
    c.expect(keys == {"pk": "HASH", "sk": "RANGE"}, f"journal keys must be pk/sk, got {keys}")
    c.expect(t.get("BillingMode") == "PAY_PER_REQUEST", "journal must be PAY_PER_REQUEST")
    c.expect(
        t.get("StreamSpecification", {}).get("StreamViewType") == "NEW_AND_OLD_IMAGES",
        "journal stream must be NEW_AND_OLD_IMAGES",
    )
    ttl = t.get("TimeToLiveSpecification", {})
    c.expect(
        ttl.get("AttributeName") == "expires_at" and ttl.get("Enabled") is True,
        "journal TTL must be enabled on expires_at",
    )
    gsis = {g["IndexName"]: g for g in t.get("GlobalSecondaryIndexes", [])}
    due = gsis.get("compaction-due", {})
    due_keys = {k["AttributeName"]: k["KeyType"] for k in due.get("KeySchema", [])}
    c.expect(
        due_keys == {"due_pk": "HASH", "compaction_due": "RANGE"}
        and due.get("Projection", {}).get("ProjectionType") == "KEYS_ONLY",
        "journal needs the KEYS_ONLY index compaction-due on due_pk/compaction_due",
    )
    types = {a["AttributeName"]: a["AttributeType"] for a in t.get("AttributeDefinitions", [])}
    c.expect(
        types == {"pk": "S", "sk": "S", "due_pk": "S", "compaction_due": "N"},
        f"journal attribute types are wrong: {types}",
    )
    c.expect(
        t.get("PointInTimeRecoverySpecification", {}).get("PointInTimeRecoveryEnabled") is True,
        "journal needs point-in-time recovery",
    )
    c.expect(t.get("SSESpecification", {}).get("SSEEnabled") is True, "journal needs SSE")


def check_stream_consumer(out, c):
    mappings = [
        v["Properties"]
        for v in out["Resources"].values()
        if v["Type"] == "AWS::Lambda::EventSourceMapping"
    ]
    if not c.expect(len(mappings) == 1, "expected one event source mapping (the journal stream)"):
        return
    m = mappings[0]
    c.expect(m.get("StartingPosition") == "TRIM_HORIZON", "stream must start at TRIM_HORIZON")
    c.expect(
        m.get("FunctionResponseTypes") == ["ReportBatchItemFailures"],
        "stream consumer must report batch item failures",
    )
    c.expect(m.get("BisectBatchOnFunctionError") is True, "stream consumer must bisect batches")
    c.expect(
        "OnFailure" in m.get("DestinationConfig", {}),
        "stream consumer needs an on-failure destination",
    )
    for f in m.get("FilterCriteria", {}).get("Filters", []):
        try:
            json.loads(f["Pattern"])
        except (ValueError, KeyError, TypeError):
            c.expect(False, f"stream filter pattern is not JSON: {f!r}")


def check_no_broad_grants(out, c):
    """Inline statements only: no table-wide CRUD, no bucket-wide S3, no wildcard actions."""
    for name, res in out["Resources"].items():
        if res["Type"] != "AWS::IAM::Role":
            continue
        for st in role_statements(out, name):
            if st.get("Effect") != "Allow":
                continue
            for action in as_list(st.get("Action", [])):
                c.expect(
                    not action.endswith("*") and action not in (
                        "dynamodb:Scan", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem",
                        "s3:DeleteObject",
                    ),
                    f"{name}: statement {st.get('Sid', '?')} grants {action}",
                )


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    source, target = argv[1], argv[2]
    registry_dir = argv[3] if len(argv) == 4 else os.path.join(
        os.path.dirname(os.path.abspath(source)), "shared", "registry"
    )
    template, errors = decode(source)
    if errors:
        for e in errors:
            print(f"{source}: {e}", file=sys.stderr)
        return 1
    try:
        out = transform(with_placeholder_code(template), {}, NoManagedPolicies())
    except Exception as e:  # the translator raises several types, all with a readable text
        print(f"SAM transform failed: {e}", file=sys.stderr)
        return 1
    with open(target, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, default=str)

    c = Checks()
    check_rest_api(out, c)
    check_function_url(out, c)
    check_turn_environment(out, c)
    check_bedrock(out, template, c)
    check_registry_models(template, registry_dir, c)
    check_table(out, c)
    check_stream_consumer(out, c)
    check_no_broad_grants(out, c)
    if c.failures:
        for f in c.failures:
            print(f"check failed: {f}", file=sys.stderr)
        return 1
    print(f"SAM transform OK: {len(out['Resources'])} resources, all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
