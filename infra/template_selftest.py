"""Breaks the template on purpose, one way at a time, and expects the template checks to
fail for the reason meant: proof that the checks of infra/template-checks.sh can fail.

    python infra/template_selftest.py TEMPLATE REGISTRY_DIR

Each case replaces one piece of the template's text (everywhere it occurs); the transform
checks (infra/sam_transform.py), the checks against the code (infra/template_code_checks.py)
or the authorizer's check (infra/oidc_authorizer_check.py) must then fail with the phrase
given.
Exits 1 when a broken template passes, fails for another reason, or the piece is not found.
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oidc_authorizer_check  # noqa: E402
import sam_transform  # noqa: E402
import template_code_checks  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN_EVENT = os.path.join(ROOT, "events", "oidc-authorizer-token.json")
ANY_AUTH = "security: !If [UseCognito, [{ CognitoUserPool: [] }], !If [UseOidc"

# (what is broken, text in the template, its replacement, the check, a phrase of its failure)
CASES = [
    (
        "a buffered REST route",
        "ResponseTransferMode: RESPONSE_STREAM",
        "ResponseTransferMode: STREAM",
        "transform",
        "integration is not responseTransferMode STREAM",
    ),
    (
        "a route without the parameters' auth scheme",
        f"/v1/agents:\n            get:\n              {ANY_AUTH}",
        "/v1/agents:\n            get:\n"
        "              security: !If [UseCognito, [{ AWS_IAM: [] }], !If [UseOidc",
        "transform",
        "[CognitoUserPool] GET /v1/agents: route is protected by [{'AWS_IAM': []}]",
    ),
    (
        "DeleteItem on any key",
        "                - dynamodb:ConditionCheckItem\n",
        "                - dynamodb:ConditionCheckItem\n                - dynamodb:DeleteItem\n",
        "transform",
        "beyond the principal's own items",
    ),
    (
        "a role that may subscribe to AWS Marketplace",
        "Sid: LargeBodies\n              Effect: Allow\n"
        "              Action: [s3:GetObject, s3:PutObject]",
        "Sid: LargeBodies\n              Effect: Allow\n"
        "              Action: [s3:GetObject, s3:PutObject, aws-marketplace:Subscribe]",
        "transform",
        "grants aws-marketplace:Subscribe",
    ),
    (
        "a layer shared by every stack",
        "LayerName: !Sub ${AWS::StackName}-registry",
        "LayerName: baton-registry",
        "transform",
        "is not scoped to the stack",
    ),
    (
        "a security alarm that waits for two mismatches",
        "      Threshold: 0\n      EvaluationPeriods: 1\n      DatapointsToAlarm: 1",
        "      Threshold: 1\n      EvaluationPeriods: 1\n      DatapointsToAlarm: 1",
        "transform",
        "PrincipalMismatchAlarm must fire on any occurrence",
    ),
    (
        "a region mapped to another geography",
        "    eu-west-1: { Geo: eu }",
        "    eu-west-1: { Geo: us }",
        "transform",
        "GeoByRegion maps eu-west-1 to 'us'",
    ),
    (
        "an alarm on a metric the code does not emit",
        "SELECT SUM(principal_mismatch_total)",
        "SELECT SUM(principal_mismatches_total)",
        "code",
        "the code emits no metric 'principal_mismatches_total'",
    ),
    (
        "a dashboard figure read without its dimension",
        """SEARCH('{\\"${Namespace}\\",outcome} MetricName=\\"turn_latency_ms\\"', 'p99', 300)""",
        """SEARCH('{\\"${Namespace}\\"} MetricName=\\"turn_latency_ms\\"', 'p99', 300)""",
        "code",
        "so this reads nothing",
    ),
    (
        "a counter read as an average",
        """MetricName=\\"model_tokens_total\\"', 'Sum', 300)""",
        """MetricName=\\"model_tokens_total\\"', 'Average', 300)""",
        "code",
        "a counter read as Average",
    ),
    (
        "a dashboard without the interventions",
        """MetricName=\\"interventions_total\\\"""",
        """MetricName=\\"privacy_masked_total\\\"""",
        "code",
        "the dashboard does not show interventions_total",
    ),
    (
        "a role without the ConditionCheckItem its claims and checkpoints hold",
        "                - dynamodb:ConditionCheckItem\n",
        "",
        "code",
        "the code calls ['dynamodb:ConditionCheckItem'], which the role does not allow",
    ),
    (
        "a transaction check the history writer never makes",
        "Action: [dynamodb:PutItem, dynamodb:UpdateItem]",
        "Action: [dynamodb:PutItem, dynamodb:UpdateItem, dynamodb:ConditionCheckItem]",
        "code",
        "the role allows ['dynamodb:ConditionCheckItem'], which the code never calls",
    ),
    (
        "a route the REST API lacks",
        "            Path: /v1/agents",
        "            Path: /v1/agent-list",
        "code",
        "the REST API lacks the router's routes [('/v1/agents', 'GET')]",
    ),
    (
        "another stage than the sample events'",
        "    Default: dev\n    AllowedPattern: '^[a-zA-Z0-9_]{1,64}$'",
        "    Default: prod\n    AllowedPattern: '^[a-zA-Z0-9_]{1,64}$'",
        "code",
        "stage 'dev', the template's is 'prod'",
    ),
    (
        "an authorizer that ignores the issuer",
        'if claims.get("iss") != ISSUER:',
        'if claims.get("iss") is None:',
        "authorizer",
        "another issuer: not refused",
    ),
    (
        "an authorizer that takes any signature",
        "if not hmac.compare_digest(actual, expected):",
        "if not actual:",
        "authorizer",
        "a changed payload: not refused",
    ),
]


def failures_of(kind, path, registry_dir):
    if kind == "authorizer":
        return oidc_authorizer_check.run(path, TOKEN_EVENT)
    out, failures = sam_transform.run(path, registry_dir)
    if kind == "transform" or out is None:
        return failures
    return template_code_checks.run(path, out, ROOT)


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        text = f.read()
    problems = []
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "broken.yaml")
        for name, old, new, kind, phrase in CASES:
            if old not in text:
                problems.append(f"{name}: the piece to break is not in the template: {old!r}")
                continue
            with open(path, "w", encoding="utf-8") as f:
                f.write(text.replace(old, new))
            got = failures_of(kind, path, argv[2])
            if not got:
                problems.append(f"the checks passed a template with {name}; they are broken")
            elif not any(phrase in g for g in got):
                problems.append(f"the checks failed {name} for another reason: {got[:3]}")
            else:
                print(f"the checks catch {name}")
    for p in problems:
        print(f"check failed: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
