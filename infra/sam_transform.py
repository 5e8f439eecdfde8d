"""Offline SAM -> CloudFormation transform of template.yaml, with checks on the result.

    python infra/sam_transform.py TEMPLATE OUT.json [REGISTRY_DIR]

Runs aws-sam-translator locally (no AWS credentials, no network), writes the transformed
template to OUT.json (for cfn-lint), then checks what neither cfn-lint nor `sam validate`
looks at: every REST route really streams and is protected by the scheme the parameters pick
(IAM, Cognito or the OIDC authorizer), the function URL streams with IAM auth, the Bedrock
permission names only the model parameters under the region's geography, the table matches
the journal contract (DESIGN D-24), the model parameters match the registry's models.yaml,
no role may subscribe to AWS Marketplace or delete more than idempotency claims, and the
alarms and the dashboard are there and wired. Exits 1 with one line per failed check.

The intrinsic functions are evaluated by `Resolver` for given parameters and region, so the
checks see what CloudFormation would deploy. infra/template_code_checks.py imports it.
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
MODEL_PARAMETERS = ("OrchestratorModel", "SpecialistModel", "SummarizerModel")
# Which registry model (models.yaml key) each parameter stands for; BATON_MODEL_IDS says the same.
REGISTRY_KEY_OF = {
    "OrchestratorModel": "claude-haiku",
    "SpecialistModel": "claude-sonnet",
    "SummarizerModel": "nova-micro",
}
# Parameter sets for the three ways callers authenticate to the REST API.
COGNITO_POOL = f"arn:aws:cognito-idp:{REGION}:{ACCOUNT}:userpool/{REGION}_Example1"
AUTH_MODES = {
    "AWS_IAM": {},
    "CognitoUserPool": {"CognitoUserPoolArn": COGNITO_POOL},
    "OidcToken": {"OidcIssuer": "https://issuer.example.com", "OidcAudience": "baton-api"},
}
NO_VALUE = object()  # AWS::NoValue: the property is left out


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
    """Evaluates the intrinsic functions the template uses, for given parameter values (the
    rest at their defaults) and region, as CloudFormation would: conditions, Fn::If and
    AWS::NoValue, Fn::FindInMap, Fn::Sub, Fn::Select, Fn::Split, Fn::Join. References to
    resources and their attributes stay symbolic: `<Name>`, `<Name.Attr>`."""

    def __init__(self, template, parameters=None, region=REGION, stack="baton"):
        self.template = template
        self.values = parameter_defaults(template)
        self.values.update(parameters or {})
        self.values.update(
            {
                "AWS::Partition": "aws",
                "AWS::Region": region,
                "AWS::AccountId": ACCOUNT,
                "AWS::URLSuffix": "amazonaws.com",
                "AWS::StackName": stack,
            }
        )
        self._conditions = {}

    def condition(self, name):
        if name not in self._conditions:
            definition = self.template.get("Conditions", {}).get(name)
            if definition is None:
                raise ValueError(f"no condition {name}")
            self._conditions[name] = bool(self(definition))
        return self._conditions[name]

    def active(self, resource):
        """Whether a resource (with an optional Condition) is deployed."""
        return "Condition" not in resource or self.condition(resource["Condition"])

    def __call__(self, node):
        if isinstance(node, (str, int, float, bool)) or node is None:
            return node
        if isinstance(node, list):
            return [v for v in (self(item) for item in node) if v is not NO_VALUE]
        if not isinstance(node, dict):
            raise ValueError(f"cannot evaluate {node!r}")
        if len(node) == 1:
            ((fn, arg),) = node.items()
            if fn == "Ref" or fn.startswith("Fn::") or (fn == "Condition" and isinstance(arg, str)):
                return self.intrinsic(fn, arg)
        out = {}
        for k, v in node.items():
            value = self(v)
            if value is not NO_VALUE:
                out[k] = value
        return out

    def intrinsic(self, fn, arg):
        if fn == "Ref":
            if arg == "AWS::NoValue":
                return NO_VALUE
            return self.values.get(arg, f"<{arg}>")
        if fn == "Condition":
            return self.condition(arg)
        if fn == "Fn::If":
            return self(arg[1] if self.condition(arg[0]) else arg[2])
        if fn == "Fn::Equals":
            return self(arg[0]) == self(arg[1])
        if fn == "Fn::Not":
            return not self(arg[0])
        if fn == "Fn::And":
            return all(self(a) for a in arg)
        if fn == "Fn::Or":
            return any(self(a) for a in arg)
        if fn == "Fn::GetAtt":
            name = arg if isinstance(arg, str) else ".".join(arg)
            return f"<{name}>"
        if fn == "Fn::FindInMap":
            name, first, second = (self(a) for a in arg)
            try:
                return self.template["Mappings"][name][first][second]
            except KeyError:
                raise ValueError(f"Fn::FindInMap: {name} has no {first}/{second}") from None
        if fn == "Fn::Split":
            return self(arg[1]).split(arg[0])
        if fn == "Fn::Select":
            return self(arg[1])[int(self(arg[0]))]
        if fn == "Fn::Join":
            return arg[0].join(self(arg[1]))
        if fn == "Fn::Sub":
            text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
            scope = {k: self(v) for k, v in extra.items()}

            def value(match):
                name = match.group(1)
                if name.startswith("!"):
                    return "${" + name[1:] + "}"
                if name in scope:
                    return str(scope[name])
                if name in self.values:
                    return str(self.values[name])
                return f"<{name}>"

            return re.sub(r"\$\{([^}]+)\}", value, text)
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


def streamed_routes(template):
    """(path, method) of the turn function's REST events (infra/template_code_checks.py holds
    them to the router's routes)."""
    events = template["Resources"]["TurnFunction"]["Properties"].get("Events", {})
    return sorted(
        (e["Properties"]["Path"], e["Properties"]["Method"].lower())
        for e in events.values()
        if e.get("Type") == "Api"
    )


# Routes open to anyone: only the account links' sign-in callback.
UNAUTHENTICATED = {("/v1/links/callback", "get")}


def check_rest_api(out, template, c):
    raw = out["Resources"].get("TurnApi", {}).get("Properties", {})
    routes = streamed_routes(template)
    c.expect(("/v1/turns", "post") in routes, "the REST API has no POST /v1/turns")
    for mode, params in AUTH_MODES.items():
        resolve = Resolver(out, params)
        api = resolve(raw)
        c.expect(
            api.get("EndpointConfiguration", {}).get("Types") == ["REGIONAL"],
            "the REST API must use a REGIONAL endpoint "
            "(edge-optimized cuts idle streams after 30 s)",
        )
        body = api.get("Body", {})
        paths = body.get("paths", {})
        schemes = body.get("components", {}).get("securitySchemes", {})
        c.expect(
            set(schemes) == {"AWS_IAM", mode},
            f"[{mode}] the REST API defines the schemes {sorted(schemes)}, "
            f"want exactly AWS_IAM and {mode}",
        )
        for path, method in routes:
            op = paths.get(path, {}).get(method)
            if not c.expect(op is not None, f"the REST API has no {method.upper()} {path}"):
                continue
            where = f"[{mode}] {method.upper()} {path}"
            integ = op.get("x-amazon-apigateway-integration", {})
            c.expect(
                integ.get("responseTransferMode") == "STREAM",
                f"{where}: integration is not responseTransferMode STREAM "
                "(the SAM event needs ResponseTransferMode: RESPONSE_STREAM)",
            )
            c.expect(
                "response-streaming-invocations" in json.dumps(integ.get("uri")),
                f"{where}: integration URI is not the response-streaming-invocations one",
            )
            c.expect(
                "credentials" not in integ,
                f"{where}: integration invokes with the caller's credentials",
            )
            # The sign-in callback is where a user's browser comes back from an
            # authorization server: it carries none of the API's credentials, and the
            # function checks the sealed state it brings. Every other route is protected.
            want = [] if (path, method) in UNAUTHENTICATED else [{mode: []}]
            c.expect(
                op.get("security") == want,
                f"{where}: route is protected by {op.get('security')}, want {want}",
            )
        turns = (
            paths.get("/v1/turns", {}).get("post", {}).get("x-amazon-apigateway-integration", {})
        )
        c.expect(
            int(turns.get("timeoutInMillis", 0)) > 29000,
            "POST /v1/turns: integration timeout is not raised above 29 s for streaming",
        )
        served = sorted((p, m) for p, ops in paths.items() for m in ops)
        c.expect(
            served == routes,
            f"[{mode}] the REST API body has {served}, want exactly the function's events {routes}",
        )
        scheme = schemes.get(mode, {})
        authorizer = scheme.get("x-amazon-apigateway-authorizer", {})
        authorizer_fn = out["Resources"].get("OidcAuthorizerFunction")
        if mode == "AWS_IAM":
            c.expect(
                scheme.get("x-amazon-apigateway-authtype") == "awsSigv4",
                "the AWS_IAM scheme must be awsSigv4",
            )
            c.expect(
                authorizer_fn is not None and not resolve.active(authorizer_fn),
                "without a token issuer the OIDC authorizer function must not be deployed",
            )
        elif mode == "CognitoUserPool":
            c.expect(
                authorizer.get("type") == "cognito_user_pools"
                and authorizer.get("providerARNs") == [COGNITO_POOL],
                f"the Cognito scheme must name exactly CognitoUserPoolArn, got {authorizer}",
            )
        else:
            fn = "OidcAuthorizerFunction"
            c.expect(
                authorizer.get("type") == "token"
                and f"functions/<{fn}.Arn>/invocations" in str(authorizer.get("authorizerUri"))
                and authorizer.get("authorizerResultTtlInSeconds") == 0,
                f"the OIDC scheme must be an uncached TOKEN authorizer calling {fn}, "
                f"got {authorizer}",
            )
            c.expect(
                authorizer_fn is not None and resolve.active(authorizer_fn),
                "with an OIDC issuer the authorizer function must be deployed",
            )
            if authorizer_fn is not None:
                env = (
                    resolve(authorizer_fn["Properties"]).get("Environment", {}).get("Variables", {})
                )
                c.expect(
                    env
                    == {
                        "OIDC_ISSUER": params["OidcIssuer"],
                        "OIDC_AUDIENCE": params["OidcAudience"],
                    },
                    f"the OIDC authorizer must get the issuer and audience parameters, got {env}",
                )
            allowed = [
                resolve(r["Properties"])
                for r in out["Resources"].values()
                if r["Type"] == "AWS::Lambda::Permission" and resolve.active(r)
            ]
            c.expect(
                any(
                    p.get("FunctionName") == f"<{fn}.Arn>"
                    and p.get("Principal") == "apigateway.amazonaws.com"
                    and str(p.get("SourceArn", "")).endswith("<TurnApi>/authorizers/*")
                    for p in allowed
                ),
                "API Gateway may not invoke the OIDC authorizer for this API's authorizers",
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
        out["Resources"]
        .get("TurnFunction", {})
        .get("Properties", {})
        .get("Environment", {})
        .get("Variables", {})
    )
    for name in (
        "BATON_TABLE",
        "BATON_BUCKET",
        "BATON_INLINE_BODY_LIMIT",
        "BATON_REGISTRY",
        "BATON_MODEL_IDS",
        "BATON_METRICS_NAMESPACE",
        "RUST_LOG",
    ):
        c.expect(name in env, f"TurnFunction: environment variable {name} is not set")


def check_layer(out, c):
    """Layer names are per stack: two stacks in one account must not publish versions of one
    layer."""
    layers = [r for r in out["Resources"].values() if r["Type"] == "AWS::Lambda::LayerVersion"]
    for layer in layers:
        names = [
            Resolver(out, stack=s)(layer["Properties"].get("LayerName", "")) for s in ("one", "two")
        ]
        c.expect(
            names[0] != names[1] and all("<" not in str(n) for n in names),
            f"layer name {names[0]!r} is not scoped to the stack (two stacks would share it)",
        )


def role_statements(out, role):
    props = out["Resources"].get(role, {}).get("Properties", {})
    for policy in props.get("Policies", []):
        for statement in policy.get("PolicyDocument", {}).get("Statement", []):
            yield statement


def as_list(value):
    return value if isinstance(value, list) else [value]


def geo_of(region, geo):
    """The inference-profile geography `ModelGeo: auto` must pick in a region."""
    return (
        {"us": "us", "eu": "eu", "ap": "apac"}.get(region.split("-")[0]) if geo == "auto" else geo
    )


# (region, ModelGeo, model parameters): the Bedrock grants are resolved under each.
BEDROCK_CASES = [
    ("us-east-1", "auto", {}),
    ("eu-west-1", "auto", {}),
    ("ap-southeast-1", "auto", {}),
    ("ap-northeast-1", "jp", {}),
    (
        "us-west-2",
        "global",
        {
            "OrchestratorModel": "anthropic.claude-test-a-v1:0",
            "SpecialistModel": "meta.llama-test-b-v2:0",
            "SummarizerModel": "amazon.nova-test-c-v1:0",
        },
    ),
]


def check_bedrock(out, template, c):
    """Resolve the Bedrock resources and BATON_MODEL_IDS in several regions and for other
    models: always exactly the parameters' inference profiles, under the region's geography
    (or the one named), and their foundation models in any region."""
    roles = [k for k, v in out["Resources"].items() if v["Type"] == "AWS::IAM::Role"]
    # Long-term memory's embeddings (D-43): InvokeModel on Titan V2 alone, in its own
    # statement, for the functions that keep memory.
    embeddings = "MemoryEmbeddings"
    for role in roles:
        for st in role_statements(out, role):
            actions = as_list(st.get("Action", []))
            if not any(a.startswith("bedrock:") for a in actions):
                continue
            c.expect(
                role
                in (
                    "TurnFunctionRole",
                    "CompactionFunctionRole",
                    "EvalRunnerFunctionRole",
                    "HistoryWriterFunctionRole",
                ),
                f"{role}: only the turn, compaction, eval-runner and history-writer functions "
                "may call Bedrock",
            )
            if st.get("Sid") == embeddings:
                c.expect(
                    role in ("TurnFunctionRole", "HistoryWriterFunctionRole")
                    and actions == ["bedrock:InvokeModel"],
                    f"{role}: {embeddings} must grant exactly bedrock:InvokeModel, to the "
                    f"functions that keep memory, got {actions}",
                )
                c.expect(
                    json.dumps(st.get("Resource")).count("titan-embed-text-v2") == 1
                    and len(as_list(st.get("Resource"))) == 1,
                    f"{role}: {embeddings} must name Titan Text Embeddings V2 alone",
                )
                continue
            c.expect(
                actions == ["bedrock:InvokeModelWithResponseStream"],
                f"{role}: Bedrock actions must be exactly InvokeModelWithResponseStream, "
                f"got {actions}",
            )
    statements = [
        st
        for st in role_statements(out, "TurnFunctionRole")
        if st.get("Sid") == "BedrockConverseStream"
    ]
    if not c.expect(len(statements) == 1, "TurnFunctionRole: no BedrockConverseStream statement"):
        return
    for region, entry in template.get("Mappings", {}).get("GeoByRegion", {}).items():
        c.expect(
            entry.get("Geo") == geo_of(region, "auto"),
            f"GeoByRegion maps {region} to {entry.get('Geo')!r}, "
            f"not its geography {geo_of(region, 'auto')!r}",
        )
    env = template["Resources"]["TurnFunction"]["Properties"]["Environment"]["Variables"]
    compaction = [
        st
        for st in role_statements(out, "CompactionFunctionRole")
        if st.get("Sid") == "BedrockSummarizer"
    ]
    c.expect(len(compaction) == 1, "CompactionFunctionRole: no BedrockSummarizer statement")
    compaction_env = template["Resources"]["CompactionFunction"]["Properties"]["Environment"][
        "Variables"
    ]
    # Memory's extraction in the history writer calls the summarizer as compaction does.
    extraction = [
        st
        for st in role_statements(out, "HistoryWriterFunctionRole")
        if st.get("Sid") == "BedrockSummarizer"
    ]
    c.expect(
        len(extraction) == 1
        and compaction
        and extraction[0].get("Resource") == compaction[0].get("Resource"),
        "HistoryWriterFunctionRole: its BedrockSummarizer statement must be compaction's",
    )
    writer_env = template["Resources"]["HistoryWriterFunction"]["Properties"]["Environment"][
        "Variables"
    ]
    c.expect(
        writer_env.get("BATON_MODEL_IDS") == compaction_env.get("BATON_MODEL_IDS"),
        "the history writer's BATON_MODEL_IDS differ from the compaction function's",
    )
    for region, geo, models in BEDROCK_CASES:
        params = dict(models, ModelGeo=geo)
        resolve = Resolver(template, params, region)
        try:
            got = sorted(resolve(as_list(statements[0]["Resource"])))
            ids = resolve(env["BATON_MODEL_IDS"])
        except ValueError as e:
            c.expect(False, f"Bedrock grants in {region} with ModelGeo {geo}: {e}")
            continue
        prefix = geo_of(region, geo)
        want = []
        for name in MODEL_PARAMETERS:
            model = resolve.values[name]
            want.append(f"arn:aws:bedrock:{region}:{ACCOUNT}:inference-profile/{prefix}.{model}")
            want.append(f"arn:aws:bedrock:*::foundation-model/{model}")
        c.expect(
            got == sorted(want),
            f"Bedrock resources in {region} with ModelGeo {geo} are not exactly the model "
            f"parameters' profiles and models:\n  got  {got}\n  want {sorted(want)}",
        )
        pairs = dict(p.split("=", 1) for p in ids.split(","))
        want_ids = {
            REGISTRY_KEY_OF[name]: f"{prefix}.{resolve.values[name]}" for name in MODEL_PARAMETERS
        }
        c.expect(
            pairs == want_ids,
            f"BATON_MODEL_IDS in {region} with ModelGeo {geo} is {pairs}, want {want_ids}",
        )
        # The eval runner may call exactly the turn function's models.
        evals = [
            st
            for st in role_statements(out, "EvalRunnerFunctionRole")
            if st.get("Sid") == "BedrockEvalModels"
        ]
        c.expect(len(evals) == 1, "EvalRunnerFunctionRole: no BedrockEvalModels statement")
        if evals:
            c.expect(
                sorted(resolve(as_list(evals[0]["Resource"]))) == got,
                f"the eval runner's Bedrock resources in {region} differ from the turn function's",
            )
        # The compaction function calls the summarizer only, with the turn function's ids.
        if compaction:
            summarizer = resolve.values["SummarizerModel"]
            got = sorted(resolve(as_list(compaction[0]["Resource"])))
            want = sorted(
                [
                    f"arn:aws:bedrock:{region}:{ACCOUNT}:inference-profile/{prefix}.{summarizer}",
                    f"arn:aws:bedrock:*::foundation-model/{summarizer}",
                ]
            )
            c.expect(
                got == want,
                f"compaction's Bedrock resources in {region} with ModelGeo {geo}:\n"
                f"  got  {got}\n  want {want}",
            )
            c.expect(
                resolve(compaction_env["BATON_MODEL_IDS"]) == ids,
                "the compaction function's BATON_MODEL_IDS differ from the turn function's",
            )


def check_registry_models(template, registry_dir, c):
    """In a US region, the default models and BATON_MODEL_IDS are the registry's Bedrock ids."""
    with open(os.path.join(registry_dir, "models.yaml"), encoding="utf-8") as f:
        models = yaml.safe_load(f).get("models", {})
    bedrock = {k: v["model_id"] for k, v in models.items() if v.get("provider") == "bedrock"}
    resolve = Resolver(template)
    for name, key in REGISTRY_KEY_OF.items():
        deployed = f"us.{resolve.values.get(name)}"
        c.expect(
            bedrock.get(key) == deployed,
            f"parameter {name} deploys {deployed!r} in {REGION} but models.yaml "
            f"has {key}: {bedrock.get(key)!r}",
        )
    c.expect(
        set(bedrock) == set(REGISTRY_KEY_OF.values()),
        f"models.yaml Bedrock models {sorted(bedrock)} are not the ones the template "
        f"maps {sorted(REGISTRY_KEY_OF.values())}",
    )
    env = template["Resources"]["TurnFunction"]["Properties"]["Environment"]["Variables"]
    mapping = resolve(env.get("BATON_MODEL_IDS", ""))
    pairs = dict(p.split("=", 1) for p in mapping.split(",") if "=" in p)
    c.expect(
        pairs == bedrock,
        f"BATON_MODEL_IDS resolves to {pairs} in {REGION}, models.yaml has {bedrock}",
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
        and due.get("Projection", {}).get("ProjectionType") == "INCLUDE"
        and due.get("Projection", {}).get("NonKeyAttributes") == ["owner"],
        "journal needs the index compaction-due on due_pk/compaction_due projecting owner",
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


# The only key prefix items may be deleted (or batch-written) under: the principal's own
# partition (account links, long-term memory); the code side (which items are deleted) is
# checked by infra/template_code_checks.py.
DELETABLE_KEYS = ["PR#*"]
# The functions that delete there: the turn function (links revoked, memories forgotten)
# and the history writer (what memory's cap lets go after an extraction).
DELETING_ROLES = ("TurnFunctionRole", "HistoryWriterFunctionRole")


def check_no_broad_grants(out, c):
    """Inline statements only: no table-wide CRUD, no bucket-wide S3, no wildcard actions, no
    AWS Marketplace (the first call to a third-party model would subscribe the account), and
    DeleteItem only on idempotency-claim keys."""
    for name, res in out["Resources"].items():
        if res["Type"] != "AWS::IAM::Role":
            continue
        for st in role_statements(out, name):
            if st.get("Effect") != "Allow":
                continue
            for action in as_list(st.get("Action", [])):
                where = f"{name}: statement {st.get('Sid', '?')} grants {action}"
                c.expect(not action.startswith("aws-marketplace:"), where)
                c.expect(
                    not action.endswith("*")
                    and action
                    not in (
                        "dynamodb:Scan",
                        "s3:DeleteObject",
                    ),
                    where,
                )
                if action in ("dynamodb:DeleteItem", "dynamodb:BatchWriteItem"):
                    leading = (
                        st.get("Condition", {})
                        .get("ForAllValues:StringLike", {})
                        .get("dynamodb:LeadingKeys")
                    )
                    c.expect(
                        name in DELETING_ROLES
                        and as_list(leading) == DELETABLE_KEYS
                        and len(st.get("Condition", {})) == 1,
                        f"{where} beyond the principal's own items "
                        f"(want ForAllValues:StringLike dynamodb:LeadingKeys {DELETABLE_KEYS})",
                    )
        managed = json.dumps(res["Properties"].get("ManagedPolicyArns", []))
        c.expect("Marketplace" not in managed, f"{name}: a managed policy grants AWS Marketplace")


def check_alarms(out, c):
    """The alarms exist and fire on any occurrence in five minutes, notify the topic only
    when one is given, and the dashboard exists. Which metrics they read is checked against
    the code by infra/template_code_checks.py."""
    resources = out["Resources"]
    want = {
        "PrincipalMismatchAlarm": 300,
        "TurnErrorsAlarm": 300,
        "FailedTurnsAlarm": 300,
        "TurnThrottlesAlarm": 300,
    }
    for params, actions in (
        ({}, None),
        ({"AlarmTopicArn": f"arn:aws:sns:{REGION}:{ACCOUNT}:ops"}, 1),
    ):
        resolve = Resolver(out, params)
        for name, period in want.items():
            alarm = resources.get(name)
            if not c.expect(
                alarm is not None and alarm["Type"] == "AWS::CloudWatch::Alarm",
                f"no alarm {name}",
            ):
                continue
            p = resolve(alarm["Properties"])
            queries = p.get("Metrics", [])
            got_period = p.get("Period") or (queries[0].get("Period") if queries else None)
            c.expect(
                p.get("ComparisonOperator") == "GreaterThanThreshold"
                and p.get("Threshold") == 0
                and p.get("EvaluationPeriods") == 1
                and p.get("DatapointsToAlarm", 1) == 1
                and got_period == period
                and p.get("TreatMissingData") == "notBreaching",
                f"{name} must fire on any occurrence (> 0) within {period} s, "
                "and treat no data as fine",
            )
            got = p.get("AlarmActions")
            c.expect(
                (got is None) if actions is None else got == [params["AlarmTopicArn"]],
                f"{name}: alarm actions {got} "
                f"with AlarmTopicArn={params.get('AlarmTopicArn', '')!r}",
            )
    dashboards = [r for r in resources.values() if r["Type"] == "AWS::CloudWatch::Dashboard"]
    c.expect(len(dashboards) == 1, f"expected one CloudWatch dashboard, found {len(dashboards)}")
    if dashboards:
        body = json.loads(Resolver(out)(dashboards[0]["Properties"]["DashboardBody"]))
        shown = {
            a for w in body["widgets"] if w["type"] == "alarm" for a in w["properties"]["alarms"]
        }
        c.expect(
            shown == {f"<{name}.Arn>" for name in want},
            f"the dashboard's alarm widget shows {sorted(shown)}, want every alarm",
        )


def run(source, registry_dir):
    """Transforms and checks the template at `source`: (the transformed template or None,
    the failures)."""
    template, errors = decode(source)
    if errors:
        return None, [f"{source}: {e}" for e in errors]
    try:
        out = transform(with_placeholder_code(template), {}, NoManagedPolicies())
    except Exception as e:  # the translator raises several types, all with a readable text
        return None, [f"SAM transform failed: {e}"]
    template = json.loads(json.dumps(template))
    out = json.loads(json.dumps(out, default=str))
    c = Checks()
    check_rest_api(out, template, c)
    check_function_url(out, c)
    check_turn_environment(out, c)
    check_layer(out, c)
    check_bedrock(out, template, c)
    check_registry_models(template, registry_dir, c)
    check_table(out, c)
    check_stream_consumer(out, c)
    check_no_broad_grants(out, c)
    check_alarms(out, c)
    return out, c.failures


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    source, target = argv[1], argv[2]
    registry_dir = (
        argv[3]
        if len(argv) == 4
        else os.path.join(os.path.dirname(os.path.abspath(source)), "shared", "registry")
    )
    out, failures = run(source, registry_dir)
    if out is not None:
        with open(target, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
    if failures:
        for f in failures:
            print(f"check failed: {f}", file=sys.stderr)
        return 1
    print(f"SAM transform OK: {len(out['Resources'])} resources, all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
