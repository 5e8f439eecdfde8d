#!/usr/bin/env bash
# Offline checks of template.yaml: no AWS account, credentials or network needed once the
# pinned tools are installed (infra/python-tools.sh does that on the first run).
#
#   ./infra/template-checks.sh [TEMPLATE]
#
# 1. cfn-lint on the template;
# 2. sam validate (runs the SAM translator) and sam validate --lint;
# 3. the SAM transform done locally (infra/sam_transform.py), with checks on the result:
#    every REST route streams (responseTransferMode STREAM, response-streaming-invocations),
#    the function URL streams with IAM auth, Bedrock is allowed only for the model
#    parameters, the table is the journal contract, the model ids match models.yaml;
# 4. cfn-lint on the transformed CloudFormation;
# 5. the checks of step 3 still catch the SAM pitfall `ResponseTransferMode: STREAM`.
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

step "the checks catch a buffered REST route"
sed 's/ResponseTransferMode: RESPONSE_STREAM/ResponseTransferMode: STREAM/' "$template" >"$work/buffered.yaml"
if "$bin/python" infra/sam_transform.py "$work/buffered.yaml" "$work/buffered.json" shared/registry \
    >"$work/buffered.log" 2>&1; then
  fail "the streaming checks passed a template with ResponseTransferMode: STREAM; they are broken"
fi
grep -q "responseTransferMode STREAM" "$work/buffered.log" \
  || { cat "$work/buffered.log" >&2; fail "the streaming checks failed for another reason than the buffered route"; }

echo "template checks passed"
