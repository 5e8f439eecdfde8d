#!/usr/bin/env bash
# Offline checks of template.yaml: no AWS account, credentials or network needed once the
# pinned tools are installed (infra/python-tools.sh does that on the first run).
#
#   ./infra/template-checks.sh [TEMPLATE]
#
# 1. cfn-lint on the template;
# 2. sam validate (runs the SAM translator) and sam validate --lint;
# 3. the SAM transform done locally (infra/sam_transform.py), with checks on the result:
#    every REST route streams and carries the auth scheme the parameters pick (IAM, Cognito,
#    OIDC), the function URL streams with IAM auth, Bedrock is allowed only for the model
#    parameters under the region's geography, the table is the journal contract, the model
#    ids match models.yaml, no role reaches AWS Marketplace or deletes beyond idempotency
#    claims, the alarms and the dashboard are there;
# 4. cfn-lint on the transformed CloudFormation;
# 5. the template against the code (infra/template_code_checks.py): the metrics the alarms
#    and the dashboard read are the ones the code emits, each role allows exactly the SDK
#    calls its function makes, the REST routes are the router's, the sample events match;
# 6. the OIDC authorizer's code against signed test tokens (infra/oidc_authorizer_check.py);
# 7. the checks themselves: templates broken on purpose must fail them, for the reason meant.
set -euo pipefail
# A template named on the command line is relative to where the script was called from.
template="$(realpath "${1:-$(dirname "$0")/../template.yaml}")"
cd "$(dirname "$0")/.."
[[ -f "$template" ]] || { echo "error: no template at $template" >&2; exit 1; }

bin="$(./infra/python-tools.sh)"
work="$(mktemp -d "${TMPDIR:-/tmp}/baton-template-checks.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# sam needs a region even offline; nothing here talks to AWS.
export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
export SAM_CLI_TELEMETRY=0

step() { printf '== %s\n' "$*"; }
fail() { echo "error: $*" >&2; exit 1; }

step "cfn-lint $template"
"$bin/cfn-lint" "$template" || fail "cfn-lint found problems in $template (listed above)"

step "sam validate"
"$bin/sam" validate --region us-east-1 -t "$template" >"$work/validate.log" 2>&1 \
  || { cat "$work/validate.log" >&2; fail "sam validate rejected $template"; }
"$bin/sam" validate --lint --region us-east-1 -t "$template" >"$work/validate.log" 2>&1 \
  || { cat "$work/validate.log" >&2; fail "sam validate --lint rejected $template"; }

step "SAM transform and checks"
"$bin/python" infra/sam_transform.py "$template" "$work/transformed.json" shared/registry \
  || fail "the transformed template does not do what Baton needs (see the checks above)"

step "cfn-lint on the transformed template"
"$bin/cfn-lint" "$work/transformed.json" \
  || fail "cfn-lint found problems in the transformed template (listed above)"

step "template against the code"
"$bin/python" infra/template_code_checks.py "$template" "$work/transformed.json" \
  || fail "the template does not match the code (see the checks above)"

step "OIDC authorizer"
"$bin/python" infra/oidc_authorizer_check.py "$template" events/oidc-authorizer-token.json \
  || fail "the OIDC authorizer accepts or refuses the wrong tokens (see above)"

step "the checks catch templates broken on purpose"
"$bin/python" infra/template_selftest.py "$template" shared/registry \
  || fail "a template broken on purpose passed the checks, or failed them for another reason"

echo "template checks passed"
