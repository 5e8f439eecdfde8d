"""Checks template.yaml against the code it deploys: no AWS, no build, only the sources.

    python infra/template_code_checks.py TEMPLATE TRANSFORMED.json [REPO_ROOT]

TRANSFORMED.json is the output of infra/sam_transform.py. Checked:

1. metrics: every metric an alarm or the dashboard reads is one the turn function emits
   (the names in baton_core::ports::metrics, as reported by `.count`/`.measure` calls),
   with exactly the dimension set the code reports it with, in the namespace the template
   gives the function (BATON_METRICS_NAMESPACE); counters are read as sums; the figures the
   dashboard must show are all there;
2. IAM: the DynamoDB, S3, Bedrock, Secrets Manager and SSM actions each function's role allows
   are exactly the ones its code calls (SDK operations mapped to IAM actions; the grants read
   with the optional parameters set, so conditional statements count), and every DeleteItem
   in the turn function's code deletes under the one key prefix the role lets it delete; the
   header secrets' grants (ToolSecretArns, ToolSecretKeyArns) are exactly the ARNs given,
   and absent without them;
3. routes: the REST API serves exactly the routes the HTTP router (shared/http) defines;
4. sample events: the API Gateway events in events/ have the resources, paths, stage and
   method ARNs the template's API sends.

Exits 1 with one line per failed check.
"""

import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sam_transform import ACCOUNT, REGION, Checks, Resolver, as_list, role_statements  # noqa: E402

# Where the turn function's metrics are reported: the crates it links.
METRIC_SOURCES = [
    "shared/core/src",
    "shared/runtime/src",
    "shared/http/src",
    "shared/aws/src",
    "shared/connectors/src",
    "functions/turn/src",
]
METRIC_NAMES = "shared/core/src/ports/metrics.rs"
TURN_CONFIG = "functions/turn/src/config.rs"
# Where the functions' shared settings (BATON_METRICS_NAMESPACE …) are read.
SETTINGS = "shared/aws/src/settings.rs"
ROUTER = "shared/http/src/app.rs"
KEYS = "shared/aws/src/journal/keys.rs"
LINK_KEY_CODE = "shared/aws/src/link_key.rs"

# The figures the dashboard must show: (metric constant, statistic or None for any).
DASHBOARD_FIGURES = [
    ("TURN_LATENCY_MS", "p50"),
    ("TURN_LATENCY_MS", "p99"),
    ("TIME_TO_FIRST_EVENT_MS", "p50"),
    ("TIME_TO_FIRST_EVENT_MS", "p99"),
    ("SUBAGENT_LATENCY_MS", "p99"),
    ("SUBAGENT_INVOCATIONS_TOTAL", None),
    ("TURN_COST_USD", None),
    ("MODEL_TOKENS_TOTAL", None),
    ("GUARD_FIRINGS_TOTAL", None),
    ("INTERVENTIONS_TOTAL", None),
]
# alarm -> the metric it must read: (namespace, or None for the function's; the metric's name
# or constant; its dimensions with their values, or a phrase for a sum over all values).
ALARMS = {
    "PrincipalMismatchAlarm": (None, "PRINCIPAL_MISMATCH_TOTAL", "sum over every dimension value"),
    "FailedTurnsAlarm": (None, "TURNS_TOTAL", {"outcome": "failed"}),
    "TurnErrorsAlarm": ("AWS/Lambda", "Errors", {"FunctionName": "<TurnFunction>"}),
    "TurnThrottlesAlarm": ("AWS/Lambda", "Throttles", {"FunctionName": "<TurnFunction>"}),
}
LAMBDA_METRICS = {"Invocations", "Errors", "Throttles", "Duration", "ConcurrentExecutions"}

# SDK operation (snake_case, as called on a client) -> the IAM actions it needs.
SDK_ACTIONS = {
    "get_item": ["dynamodb:GetItem"],
    "put_item": ["dynamodb:PutItem"],
    "update_item": ["dynamodb:UpdateItem"],
    "delete_item": ["dynamodb:DeleteItem"],
    "query": ["dynamodb:Query"],
    "scan": ["dynamodb:Scan"],
    "batch_get_item": ["dynamodb:BatchGetItem"],
    "batch_write_item": ["dynamodb:BatchWriteItem"],
    "transact_get_items": ["dynamodb:GetItem"],
    # TransactWriteItems: the actions of the items it holds, found from the builders used.
    "transact_write_items": [],
    "create_table": ["dynamodb:CreateTable"],
    "update_time_to_live": ["dynamodb:UpdateTimeToLive"],
    "describe_table": ["dynamodb:DescribeTable"],
    "put_object": ["s3:PutObject"],
    "get_object": ["s3:GetObject"],
    "head_object": ["s3:GetObject"],
    "copy_object": ["s3:GetObject", "s3:PutObject"],
    "delete_object": ["s3:DeleteObject"],
    "list_objects_v2": ["s3:ListBucket"],
    "converse_stream": ["bedrock:InvokeModelWithResponseStream"],
    "converse": ["bedrock:InvokeModel"],
    "invoke_model": ["bedrock:InvokeModel"],
    "invoke_model_with_response_stream": ["bedrock:InvokeModelWithResponseStream"],
    # The http tools' header secrets by ARN (baton_aws::secrets), read at Init.
    "get_secret_value": ["secretsmanager:GetSecretValue"],
    "get_parameter": ["ssm:GetParameter"],
    # The account links' data key (baton_aws::link_key), decrypted at Init.
    "decrypt": ["kms:Decrypt"],
    # Long-term memory's vectors (baton_aws::recall, D-43); a query that filters or returns
    # metadata is authorised as GetVectors too.
    "put_vectors": ["s3vectors:PutVectors"],
    "get_vectors": ["s3vectors:GetVectors"],
    "delete_vectors": ["s3vectors:DeleteVectors"],
    "query_vectors": ["s3vectors:QueryVectors", "s3vectors:GetVectors"],
    "list_vectors": ["s3vectors:ListVectors"],
}
TRANSACT_ITEM_ACTIONS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}
SDK_CALL = re.compile(
    r"\b(dynamodb|ddb|s3|bedrock|secretsmanager|ssm|kms|vectors|client)\s*\.\s*([a-z_0-9]+)\s*\(\s*\)"
)
LOOKS_LIKE_SDK = re.compile(
    r"^(get|put|update|delete|batch|transact|query|scan|create|describe|list|head|copy|converse|invoke)"
)
ACTION_SCOPE = re.compile(
    r"^(dynamodb:[A-Za-z]*Item|dynamodb:(Query|Scan)|s3:[A-Za-z]*Object|s3:ListBucket"
    r"|bedrock:Invoke|s3vectors:|secretsmanager:|ssm:|kms:Decrypt)"
)
# Values for the optional parameters under which the grants are read: every conditional
# statement is then in force. CommaDelimitedList parameters are lists.
SECRET_ARNS = [
    f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:partner/token-AbCdEf",
    f"arn:aws:ssm:eu-west-1:{ACCOUNT}:parameter/baton/partner-key",
]
SECRET_KEYS = [f"arn:aws:kms:{REGION}:{ACCOUNT}:key/11111111-2222-3333-4444-555555555555"]
LINK_KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/66666666-7777-8888-9999-000000000000"
ALL_GRANTS = {
    "ToolSecretArns": SECRET_ARNS,
    "ToolSecretKeyArns": SECRET_KEYS,
    "LinkKeyArn": LINK_KEY,
    "LinkKeyCiphertext": "AQIDAHhVZWxjb21l",
}
SECRET_ACTIONS = {"secretsmanager:GetSecretValue", "ssm:GetParameter"}

# Code that a deployed function does not run: (file, fn) -> (why, patterns of a call to it
# that must not appear in the function's other sources).
NOT_DEPLOYED = {
    ("shared/aws/src/journal/schema.rs", "create_table"): (
        "the CLI's --create-table",
        [r"\bcreate_table\s*\("],
    ),
    ("shared/aws/src/journal/schema.rs", "create_table_without_ttl"): (
        "the CLI's --create-table",
        [r"\bcreate_table_without_ttl\s*\("],
    ),
    ("functions/history-writer/src/aggregate/view.rs", "read"): (
        "a reader for the tests",
        [r"EpisodeAggregates\s*::\s*read\s*\("],
    ),
    ("functions/history-writer/src/audit.rs", "read_all"): (
        "a reader for the tests",
        [r"\bread_all\s*\("],
    ),
}
# What each function runs: its crate and, for the turn function, all of baton-aws; the other
# functions use only these items of baton-aws (path in the code -> (file, fn or None for the
# whole file) of what it runs).
FUNCTIONS = {
    "TurnFunctionRole": ["functions/turn/src", "shared/aws/src"],
    "HistoryWriterFunctionRole": ["functions/history-writer/src"],
    "CompactionFunctionRole": ["functions/compaction/src"],
    "EvalRunnerFunctionRole": ["functions/eval-runner/src"],
}
# The memory store's files (baton_aws::recall), every one run where memory is saved.
MEMORY_FILES = [
    "deployed.rs",
    "erase.rs",
    "error.rs",
    "items.rs",
    "keys.rs",
    "mod.rs",
    "read.rs",
    "save.rs",
    "search.rs",
    "store.rs",
    "table.rs",
    "vectors.rs",
]
SHARED = {
    "HistoryWriterFunctionRole": {
        "baton_aws::sdk::load_config": [("shared/aws/src/sdk.rs", "load_config")],
        "baton_aws::journal::keys": [("shared/aws/src/journal/keys.rs", None)],
        "baton_aws::journal::s3_config": [("shared/aws/src/journal/config.rs", "s3_config")],
        "baton_aws::journal::dynamodb_config": [
            ("shared/aws/src/journal/config.rs", "dynamodb_config")
        ],
        "baton_aws::logs::init": [("shared/aws/src/logs.rs", "init")],
        # Long-term memory's extraction (D-43): the summarizer, the embedder and the whole
        # memory store (saves, and the cap's erasures); the journal store is built for the
        # runtime but runs no operation there.
        "baton_aws::sdk::Clients::new": [("shared/aws/src/sdk.rs", "new")],
        "baton_aws::sdk::Clients": [("shared/aws/src/sdk.rs", "new")],
        "baton_aws::settings::": [("shared/aws/src/settings.rs", None)],
        "baton_aws::journal::": [("shared/aws/src/journal/config.rs", "new")],
        "baton_aws::bedrock::BedrockModel": [("shared/aws/src/bedrock/mod.rs", "stream")],
        "baton_aws::bedrock::PROVIDER": [("shared/aws/src/bedrock/mod.rs", None)],
        "baton_aws::recall::DeployedMemory": [("shared/aws/src/recall/deployed.rs", None)],
        "baton_aws::recall::deployed": [
            ("shared/aws/src/bedrock/embed.rs", None),
            *[(f"shared/aws/src/recall/{f}", None) for f in MEMORY_FILES],
        ],
    },
    "CompactionFunctionRole": {
        "baton_aws::settings::ConfigError": [("shared/aws/src/settings.rs", None)],
        "baton_aws::settings::Env": [("shared/aws/src/settings.rs", None)],
        "baton_aws::logs::init": [("shared/aws/src/logs.rs", "init")],
        "baton_aws::sdk::Clients": [("shared/aws/src/sdk.rs", "from_env")],
        "baton_aws::emf::EmfMetrics": [("shared/aws/src/emf.rs", None)],
        "baton_aws::journal::JournalConfig": [("shared/aws/src/journal/config.rs", "new")],
        # Compaction reads the episode, the turns after its summary and the due queue, and
        # writes the summary: the store's other operations (claims, commits, bodies) never
        # run there.
        "baton_aws::journal::DynamoStore": [
            ("shared/aws/src/journal/read.rs", "get_item"),
            ("shared/aws/src/journal/read.rs", "turns_after"),
            ("shared/aws/src/journal/read.rs", "turn_page"),
            ("shared/aws/src/journal/memory.rs", "save_summary"),
            ("shared/aws/src/journal/memory.rs", "due_episodes"),
        ],
        "baton_aws::bedrock::BedrockModel": [("shared/aws/src/bedrock/mod.rs", "stream")],
        "baton_aws::bedrock::PROVIDER": [("shared/aws/src/bedrock/mod.rs", None)],
    },
    # The eval runner: Bedrock for the models, its own PutObject for the reports; the
    # cases run on a store in memory.
    "EvalRunnerFunctionRole": {
        "baton_aws::settings::ConfigError": [("shared/aws/src/settings.rs", None)],
        "baton_aws::settings::Env": [("shared/aws/src/settings.rs", None)],
        "baton_aws::logs::init": [("shared/aws/src/logs.rs", "init")],
        "baton_aws::sdk::Clients": [("shared/aws/src/sdk.rs", "from_env")],
        "baton_aws::emf::EmfMetrics": [("shared/aws/src/emf.rs", None)],
        "baton_aws::bedrock::BedrockModel": [("shared/aws/src/bedrock/mod.rs", "stream")],
        "baton_aws::bedrock::PROVIDER": [("shared/aws/src/bedrock/mod.rs", None)],
    },
}


# ----------------------------------------------------------------------------- Rust reading

STRING = re.compile(r'b?"(?:\\.|[^"\\])*"', re.S)
RAW_STRING = re.compile(r'b?r(#*)"')
CHAR = re.compile(r"'(?:\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'")


def skip_literal(text, i):
    """The end of a string or char literal starting at i, or None if none starts there."""
    raw = RAW_STRING.match(text, i)
    if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
        end = text.find('"' + raw.group(1), raw.end())
        return len(text) if end < 0 else end + 1 + len(raw.group(1))
    for pattern in (STRING, CHAR):
        m = pattern.match(text, i)
        if m:
            return m.end()
    return None


def without_comments(text):
    out, i = [], 0
    while i < len(text):
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
            continue
        end = skip_literal(text, i)
        if end is not None:
            out.append(text[i:end])
            i = end
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def closing(text, i):
    """Index just past the bracket that closes the one at i (strings skipped)."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = []
    while i < len(text):
        end = skip_literal(text, i)
        if end is not None:
            i = end
            continue
        c = text[i]
        if c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return len(text)


def without_tests(code):
    """Code without `#[cfg(test)]` items (test modules, test-only functions)."""
    while True:
        m = re.search(r"#\[cfg\(test\)\]", code)
        if not m:
            return code
        brace, semi = code.find("{", m.end()), code.find(";", m.end())
        end = semi + 1 if semi >= 0 and (brace < 0 or semi < brace) else closing(code, brace)
        code = code[: m.start()] + code[end:]


def split_args(text):
    """Top-level comma-separated parts of `text` (the inside of a bracket)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        end = skip_literal(text, i)
        if end is not None:
            i = end
            continue
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
        i += 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


class Source:
    """The non-test code of the Rust files under some folders, by path from the repo root."""

    def __init__(self, root, folders):
        self.root = root
        self.files = {}
        for folder in folders:
            path = os.path.join(root, folder)
            paths = [path] if path.endswith(".rs") else glob.glob(f"{path}/**/*.rs", recursive=True)
            for p in sorted(paths):
                with open(p, encoding="utf-8") as f:
                    rel = os.path.relpath(p, root)
                    self.files[rel] = without_tests(without_comments(f.read()))

    def functions(self, rel):
        """(name, start, end) of each `fn` in a file: end is where its body closes."""
        code = self.files[rel]
        out = []
        for m in re.finditer(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)", code):
            params = code.find("(", m.end())
            if params < 0:
                continue
            after = closing(code, params)
            brace, semi = code.find("{", after), code.find(";", after)
            if brace < 0 or 0 <= semi < brace:
                continue  # a declaration without a body (a trait's)
            out.append((m.group(1), m.start(), closing(code, brace)))
        return out

    def enclosing(self, rel, offset):
        """The innermost fn around offset, or None."""
        inside = [f for f in self.functions(rel) if f[1] <= offset < f[2]]
        return min(inside, key=lambda f: f[2] - f[1])[0] if inside else None


def rust_consts(path):
    with open(path, encoding="utf-8") as f:
        return dict(re.findall(r'pub const ([A-Z_0-9]+): &str = "([^"]*)";', f.read()))


# ------------------------------------------------------------------------------ 1. metrics


def emitted_metrics(source, names):
    """metric name -> {"kind": count|measure, "dims": set of frozensets}, from the
    `.count(NAME, value, &[("dim", ..)])`, `.count_with(NAME, value, &[dims], &[properties])`
    and `.measure(..)` calls; and the string literals of the code (dimension values are
    among them)."""
    emitted, problems, literals = {}, [], set()
    for rel, code in source.files.items():
        literals.update(m.group(0)[1:-1] for m in STRING.finditer(code))
        for m in re.finditer(r"\.\s*(count_with|count|measure)\s*\(", code):
            start = m.end() - 1
            args = split_args(code[start + 1 : closing(code, start) - 1])
            # count_with's properties are no dimensions: only its first three arguments count.
            kind = "count" if m.group(1) == "count_with" else m.group(1)
            if m.group(1) == "count_with" and len(args) == 4:
                args = args[:3]
            if len(args) != 3:
                continue
            first = args[0].split("::")[-1].strip()
            name = first[1:-1] if first.startswith('"') else names.get(first)
            if name is None:
                continue
            dims = args[2].lstrip("&").strip()
            if not (dims.startswith("[") and dims.endswith("]")):
                problems.append(
                    f"{rel}: {name} is reported with dimensions {dims!r} the check cannot read"
                )
                continue
            keys = []
            for pair in split_args(dims[1:-1]):
                parts = split_args(pair.strip()[1:-1]) if pair.startswith("(") else []
                if len(parts) != 2 or not parts[0].startswith('"'):
                    problems.append(f"{rel}: {name} has a dimension {pair!r} the check cannot read")
                    continue
                keys.append(parts[0][1:-1])
            entry = emitted.setdefault(name, {"kind": kind, "dims": set()})
            if entry["kind"] != kind:
                problems.append(f"{name} is reported both as a count and as a measure")
            entry["dims"].add(frozenset(keys))
    return emitted, problems, literals


def schema_parts(text):
    """`"Baton/x",a,b` -> ["Baton/x", "a", "b"]."""
    return [p.strip().strip('"') for p in split_args(text)]


class MetricRefs:
    """Every metric an alarm or the dashboard reads: (where, namespace, name, dims, stat), where
    dims maps dimension names to values (None: any value, as a SEARCH or a SCHEMA reads)."""

    def __init__(self):
        self.refs = []

    def add(self, where, namespace, name, dims, stat):
        self.refs.append((where, namespace, name, dims, stat))

    def search(self, where, expression, c):
        found = False
        for m in re.finditer(r"SEARCH\(\s*'\{([^}]*)\}([^']*)'\s*,\s*'([^']+)'", expression):
            found = True
            schema = schema_parts(m.group(1))
            name = re.search(r'MetricName\s*=\s*"([^"]+)"', m.group(2))
            if c.expect(
                name is not None, f'{where}: SEARCH without an exact MetricName="...": {expression}'
            ):
                self.add(where, schema[0], name.group(1), dict.fromkeys(schema[1:]), m.group(3))
        c.expect(
            found,
            f"{where}: an expression that reads no metric the check understands: {expression}",
        )


def dashboard_refs(body, refs, c):
    for w in body.get("widgets", []):
        if w.get("type") != "metric":
            continue
        props = w["properties"]
        where = f"dashboard widget {props.get('title', '?')!r}"
        previous = []
        for row in props.get("metrics", []):
            if len(row) == 1 and isinstance(row[0], dict) and "expression" in row[0]:
                refs.search(where, row[0]["expression"], c)
                continue
            opts = row[-1] if isinstance(row[-1], dict) else {}
            cells = row[:-1] if opts else row
            cells = [
                previous[i] if v == "." and i < len(previous) else v for i, v in enumerate(cells)
            ]
            previous = cells
            dims = dict(zip(cells[2::2], cells[3::2]))
            refs.add(
                where, cells[0], cells[1], dims, opts.get("stat", props.get("stat", "Average"))
            )


def alarm_refs(name, props, refs, c):
    where = f"alarm {name}"
    if "MetricName" in props:
        dims = {d["Name"]: d["Value"] for d in props.get("Dimensions", [])}
        refs.add(where, props.get("Namespace"), props["MetricName"], dims, props.get("Statistic"))
        return
    for q in props.get("Metrics", []):
        if "MetricStat" in q:
            m = q["MetricStat"]["Metric"]
            dims = {d["Name"]: d["Value"] for d in m.get("Dimensions", [])}
            refs.add(where, m.get("Namespace"), m["MetricName"], dims, q["MetricStat"].get("Stat"))
        elif "Expression" in q:
            e = q["Expression"]
            m = re.match(r"\s*SELECT\s+(\w+)\((\w+)\)\s+FROM\s+SCHEMA\(([^)]*)\)\s*$", e, re.I)
            if c.expect(m is not None, f"{where}: an expression the check cannot read: {e}"):
                schema = schema_parts(m.group(3))
                refs.add(
                    where, schema[0], m.group(2), dict.fromkeys(schema[1:]), m.group(1).title()
                )


def check_metrics(template, out, root, c):
    names = rust_consts(os.path.join(root, METRIC_NAMES))
    source = Source(root, METRIC_SOURCES)
    emitted, problems, literals = emitted_metrics(source, names)
    for p in problems:
        c.expect(False, p)
    for required in ("PRINCIPAL_MISMATCH_TOTAL", "TURNS_TOTAL", "TURN_LATENCY_MS"):
        c.expect(
            names.get(required) in emitted,
            f"the code no longer emits {required} ({names.get(required)})",
        )

    resolve = Resolver(out)
    env = resolve(out["Resources"]["TurnFunction"]["Properties"]["Environment"]["Variables"])
    namespace = env.get("BATON_METRICS_NAMESPACE")
    with open(os.path.join(root, TURN_CONFIG), encoding="utf-8") as f:
        turn_config = f.read()
    with open(os.path.join(root, SETTINGS), encoding="utf-8") as f:
        settings = f.read()
    reads = 'get("BATON_METRICS_NAMESPACE")'
    c.expect(
        reads in turn_config
        or ("env.metrics_namespace()" in turn_config and reads in settings),
        f"{TURN_CONFIG} no longer reads BATON_METRICS_NAMESPACE, which the alarms rely on",
    )

    refs = MetricRefs()
    by_alarm = {}
    for name, res in out["Resources"].items():
        if res["Type"] == "AWS::CloudWatch::Alarm":
            before = len(refs.refs)
            alarm_refs(name, resolve(res["Properties"]), refs, c)
            by_alarm[name] = refs.refs[before:]
        elif res["Type"] == "AWS::CloudWatch::Dashboard":
            dashboard_refs(json.loads(resolve(res["Properties"]["DashboardBody"])), refs, c)

    for where, ns, name, dims, stat in refs.refs:
        what = f"{where}: {ns} {name} {sorted(dims)}"
        if ns == "AWS/Lambda":
            c.expect(
                name in LAMBDA_METRICS and dims == {"FunctionName": "<TurnFunction>"},
                f"{what}: not a Lambda metric of the turn function",
            )
            continue
        if not c.expect(
            ns == namespace, f"{what}: namespace {ns!r} is not the function's {namespace!r}"
        ):
            continue
        if not c.expect(name in emitted, f"{what}: the code emits no metric {name!r}"):
            continue
        c.expect(
            frozenset(dims) in emitted[name]["dims"],
            f"{what}: the code reports {name} with the dimensions "
            f"{[sorted(d) for d in emitted[name]['dims']]}, so this reads nothing",
        )
        for key, value in dims.items():
            c.expect(
                value is None or value in literals,
                f"{what}: no {key} value {value!r} appears in the code",
            )
        if emitted[name]["kind"] == "count":
            c.expect(stat == "Sum", f"{what}: a counter read as {stat}; counters add up (Sum)")

    shown = {(n, s) for w, _, n, _, s in refs.refs if w.startswith("dashboard")}
    for const, stat in DASHBOARD_FIGURES:
        name = names.get(const)
        c.expect(
            any(n == name and (stat is None or s == stat) for n, s in shown),
            f"the dashboard does not show {name} ({const}){' ' + stat if stat else ''}",
        )
    for alarm, (ns, metric, dims) in ALARMS.items():
        got = by_alarm.get(alarm, [])
        name = names.get(metric, metric)
        want_dims = dims if isinstance(dims, dict) else None
        c.expect(
            len(got) == 1
            and got[0][1] == (ns or namespace)
            and got[0][2] == name
            and (want_dims is None or got[0][3] == want_dims)
            and (want_dims is not None or all(v is None for v in got[0][3].values())),
            f"alarm {alarm} must read {ns or namespace} {name} {dims}, reads "
            f"{[(r[1], r[2], r[3]) for r in got]}",
        )


# ---------------------------------------------------------------------------------- 2. IAM


def sdk_calls(source, files=None, fn=None):
    """(file, enclosing fn, operation, offset) of each SDK operation call."""
    calls = []
    for rel in files or source.files:
        code = source.files[rel]
        for m in SDK_CALL.finditer(code):
            op = m.group(2)
            if op not in SDK_ACTIONS and not LOOKS_LIKE_SDK.match(op):
                continue
            encl = source.enclosing(rel, m.start())
            if fn is None or encl == fn:
                calls.append((rel, encl, op, m.start()))
    return calls


def used_actions(role, source, root, c):
    calls = sdk_calls(source)
    # The code whose transactions count: the function's own and the shared code it runs.
    transacting = "".join(source.files.values())
    if role in SHARED:
        items = SHARED[role]
        shared = Source(root, sorted({f for parts in items.values() for f, _ in parts}))
        for rel, code in source.files.items():
            for path in set(re.findall(r"baton_aws::[\w:]+", code)):
                parts = items.get(path)
                if c.expect(parts is not None, f"{rel} uses {path}: add it to SHARED[{role!r}]"):
                    for file, fn in parts:
                        if fn is not None:
                            c.expect(
                                any(f == fn for f, _, _ in shared.functions(file)),
                                f"{file}: no fn {fn} any more; fix SHARED[{role!r}]",
                            )
                        calls += sdk_calls(shared, [file], fn)
                        transacting += shared.files[file]
    actions = set()
    for rel, fn, op, _ in calls:
        if (rel, fn) in NOT_DEPLOYED:
            continue
        if not c.expect(op in SDK_ACTIONS, f"{rel}: SDK operation {op} has no IAM mapping here"):
            continue
        actions.update(SDK_ACTIONS[op])
        if op == "transact_write_items":
            for item in set(
                re.findall(
                    r"\b(Put|Update|Delete|ConditionCheck)::builder\(\)",
                    transacting,
                )
            ):
                actions.add(TRANSACT_ITEM_ACTIONS[item])
    for (rel, fn), (why, patterns) in NOT_DEPLOYED.items():
        if rel not in source.files:
            continue
        c.expect(
            any(f == fn for f, _, _ in source.functions(rel)),
            f"{rel}: no fn {fn} any more; drop it from NOT_DEPLOYED",
        )
        for other, code in source.files.items():
            if other == rel:
                continue
            for p in patterns:
                c.expect(
                    re.search(p, code) is None,
                    f"{other} calls {fn} ({rel}), which the check takes for {why}: "
                    "its SDK calls now count",
                )
    return actions


def resolved_statements(out, role, parameters):
    """A role's statements as deployed with `parameters` (conditional policies included or
    left out as CloudFormation would)."""
    props = Resolver(out, parameters)(out["Resources"].get(role, {}).get("Properties", {}))
    for policy in props.get("Policies", []):
        for statement in policy.get("PolicyDocument", {}).get("Statement", []):
            yield statement


def check_tool_secrets(out, root, c):
    """The header secrets' grants: only the turn function's, exactly the ARNs and keys the
    parameters give (the keys only through Secrets Manager and SSM), none without them."""
    secretish = re.compile(r"^(secretsmanager|ssm|kms):")
    with open(os.path.join(root, LINK_KEY_CODE), encoding="utf-8") as f:
        found = re.search(
            r'ENCRYPTION_CONTEXT:\s*\(&str,\s*&str\)\s*=\s*\("([^"]+)",\s*"([^"]+)"\)', f.read()
        )
    c.expect(found is not None, f"{LINK_KEY_CODE}: no ENCRYPTION_CONTEXT any more")
    link_context = {f"kms:EncryptionContext:{found.group(1)}": found.group(2)} if found else {}
    for role in [k for k, v in out["Resources"].items() if v["Type"] == "AWS::IAM::Role"]:
        for params in ({}, ALL_GRANTS):
            for st in resolved_statements(out, role, params):
                actions = [a for a in as_list(st.get("Action", [])) if secretish.match(a)]
                if not actions:
                    continue
                where = f"{role}: statement {st.get('Sid', '?')} grants {actions}"
                if st.get("Sid") == "LinkKeyDecrypt":
                    context = st.get("Condition", {}).get("StringEquals", {})
                    c.expect(
                        role == "TurnFunctionRole"
                        and params
                        and actions == ["kms:Decrypt"]
                        and as_list(st.get("Resource")) == [LINK_KEY]
                        and context == link_context,
                        f"{where}: want only the turn function's kms:Decrypt of LinkKeyArn, "
                        "under the encryption context baton=link-key (baton_aws::link_key)",
                    )
                    continue
                if not c.expect(
                    role == "TurnFunctionRole" and params,
                    f"{where}{' without ToolSecretArns' if not params else ''}: only the turn "
                    "function reads header secrets, and only those its parameters name",
                ):
                    continue
                resources = as_list(st.get("Resource"))
                if set(actions) <= SECRET_ACTIONS:
                    c.expect(
                        resources == SECRET_ARNS and "Condition" not in st,
                        f"{where} on {resources}: want exactly ToolSecretArns",
                    )
                elif actions == ["kms:Decrypt"]:
                    via = st.get("Condition", {}).get("StringLike", {}).get("kms:ViaService")
                    c.expect(
                        resources == SECRET_KEYS
                        and sorted(as_list(via))
                        == ["secretsmanager.*.amazonaws.com", "ssm.*.amazonaws.com"],
                        f"{where} on {resources} via {via}: want exactly ToolSecretKeyArns, "
                        "used only through Secrets Manager and SSM",
                    )
                else:
                    c.expect(
                        False,
                        f"{where}: the header secrets need only GetSecretValue, GetParameter "
                        "and kms:Decrypt, the last in a statement of its own",
                    )
    granted = {
        a
        for st in resolved_statements(out, "TurnFunctionRole", ALL_GRANTS)
        for a in as_list(st.get("Action", []))
    }
    c.expect(
        SECRET_ACTIONS <= granted and "kms:Decrypt" in granted,
        "TurnFunctionRole: with ToolSecretArns and ToolSecretKeyArns set, the role must allow "
        "reading and decrypting them "
        f"(allows {sorted(granted & (SECRET_ACTIONS | {'kms:Decrypt'}))})",
    )


def check_iam(out, root, c):
    check_tool_secrets(out, root, c)
    for role, folders in FUNCTIONS.items():
        source = Source(root, folders)
        used = used_actions(role, source, root, c)
        granted = {
            a
            for st in resolved_statements(out, role, ALL_GRANTS)
            if st.get("Effect") == "Allow"
            for a in as_list(st.get("Action", []))
            if ACTION_SCOPE.match(a)
        }
        c.expect(
            not used - granted,
            f"{role}: the code calls {sorted(used - granted)}, which the role does not allow",
        )
        c.expect(
            not granted - used,
            f"{role}: the role allows {sorted(granted - used)}, which the code never calls",
        )
        if role != "TurnFunctionRole":
            continue
        # Every DeleteItem deletes an idempotency claim: keyed on principal_pk, whose prefix is
        # the one the role's LeadingKeys condition allows.
        prefix = rust_consts(os.path.join(root, KEYS)).get("PRINCIPAL_PREFIX")
        with open(os.path.join(root, KEYS), encoding="utf-8") as f:
            c.expect(
                re.search(
                    r"fn principal_pk\([^)]*\)[^{]*\{\s*format!\(\"\{PRINCIPAL_PREFIX\}", f.read()
                )
                is not None,
                f"{KEYS}: principal_pk is no longer PRINCIPAL_PREFIX + the principal",
            )
        for rel, fn, op, at in sdk_calls(source):
            if op != "delete_item":
                continue
            code = source.files[rel]
            chain = code[at : code.find(".send()", at)]
            body = next(code[s:e] for f, s, e in source.functions(rel) if s <= at < e)
            c.expect(
                re.search(r"\.key\(\s*keys::PK\s*,\s*s\(\s*principal_pk\s*\)\s*\)", chain)
                is not None
                and re.search(r"let\s+principal_pk\s*=\s*keys::principal_pk\(", body) is not None,
                f"{rel} ({fn}): a DeleteItem not keyed on keys::principal_pk",
            )
        # Deletes inside transactions and batches are long-term memory's erasures alone, each
        # keyed by items::key, whose partition is the principal's own (D-43).
        for rel, code in source.files.items():
            if "Delete::builder()" in code or "DeleteRequest::builder()" in code:
                c.expect(
                    rel.startswith("shared/aws/src/recall/"),
                    f"{rel} deletes in a transaction or batch: check its keys against the role",
                )
        items = source.files.get("shared/aws/src/recall/items.rs", "")
        memory_keys = source.files.get("shared/aws/src/recall/keys.rs", "")
        c.expect(
            re.search(r"fn key\([^)]*\)[^{]*\{[^}]*keys::partition\(principal", items) is not None
            and re.search(r"fn partition\([^)]*\)[^{]*\{\s*principal_pk\(", memory_keys)
            is not None,
            "shared/aws/src/recall: memory items are no longer keyed under keys::principal_pk",
        )
        for rel, code in source.files.items():
            if not rel.startswith("shared/aws/src/recall/"):
                continue
            for m in re.finditer(r"(Delete|DeleteRequest)::builder\(\)", code):
                chain = code[m.start() : code.find(".build()", m.start())]
                c.expect(
                    "items::key(" in chain or ".set_key(Some(key))" in chain,
                    f"{rel}: a delete not keyed by items::key",
                )
        conditions = [
            st.get("Condition", {})
            for st in role_statements(out, role)
            if "dynamodb:DeleteItem" in as_list(st.get("Action", []))
        ]
        c.expect(
            all(
                as_list(k.get("ForAllValues:StringLike", {}).get("dynamodb:LeadingKeys"))
                == [f"{prefix}*"]
                for k in conditions
            ),
            f"{role}: DeleteItem must be limited to the keys {prefix}* (keys::PRINCIPAL_PREFIX)",
        )


# ------------------------------------------------------------------------------- 3. routes


def router_routes(root):
    code = Source(root, [ROUTER]).files[ROUTER]
    start = code.index("Router::new()")
    chain = code[start : code.index(";", start)]
    routes = set()
    for m in re.finditer(r"\.route\(", chain):
        args = split_args(chain[m.end() : closing(chain, m.end() - 1) - 1])
        path = args[0].strip('"')
        for method in re.findall(r"\b(get|post|put|delete|patch)\(", args[1]):
            routes.add((path, method.upper()))
    return routes


def rest_routes(template):
    events = template["Resources"]["TurnFunction"]["Properties"].get("Events", {})
    return {
        (e["Properties"]["Path"], e["Properties"]["Method"].upper())
        for e in events.values()
        if e.get("Type") == "Api"
    }


def check_routes(template, root, c):
    router, rest = router_routes(root), rest_routes(template)
    c.expect(router, f"no routes found in {ROUTER}")
    c.expect(not router - rest, f"the REST API lacks the router's routes {sorted(router - rest)}")
    c.expect(
        not rest - router, f"the REST API serves routes the router lacks {sorted(rest - router)}"
    )


# ------------------------------------------------------------------------------- 4. events


def route_of(path, routes):
    for resource, method in routes:
        pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(resource)) + "$"
        if re.match(pattern, path):
            yield resource, method


def check_events(template, root, c):
    rest = rest_routes(template)
    stage = str(template["Parameters"]["Stage"]["Default"])
    checked = 0
    for path in sorted(glob.glob(os.path.join(root, "events", "*.json"))):
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            try:
                event = json.load(f)
            except ValueError:
                continue  # the malformed sample
        if not isinstance(event, dict):
            continue
        ctx = event.get("requestContext", {})
        if "resourcePath" in ctx:  # API Gateway REST (payload 1.0)
            checked += 1
            resource, method, raw = (
                event.get("resource"),
                event.get("httpMethod"),
                event.get("path"),
            )
            c.expect(
                (resource, method) in rest,
                f"{name}: {method} {resource} is not a route of the REST API",
            )
            c.expect(
                ctx.get("resourcePath") == resource, f"{name}: resourcePath is not the resource"
            )
            c.expect(ctx.get("httpMethod") == method, f"{name}: requestContext.httpMethod differs")
            c.expect(
                ctx.get("stage") == stage,
                f"{name}: stage {ctx.get('stage')!r}, the template's is {stage!r}",
            )
            c.expect(
                ctx.get("path") == f"/{stage}{raw}",
                f"{name}: requestContext.path must be /{stage}{raw}",
            )
            c.expect(
                (resource, method) in set(route_of(raw or "", rest)),
                f"{name}: path {raw} does not match resource {resource}",
            )
            params = event.get("pathParameters")
            names = re.findall(r"\{([^}]+)\}", resource or "")
            c.expect(
                (params or {})
                == {
                    n: raw.split("/")[i]
                    for i, n in ((resource.split("/").index("{" + n + "}"), n) for n in names)
                },
                f"{name}: pathParameters {params} do not match {resource}",
            )
            c.expect(ctx.get("accountId") == ACCOUNT, f"{name}: accountId is not {ACCOUNT}")
        elif event.get("type") == "TOKEN":  # the OIDC authorizer's input
            checked += 1
            m = re.match(
                r"^arn:aws:execute-api:([a-z0-9-]+):(\d{12}):(\w+)/([^/]+)/([A-Z]+)(/.*)$",
                event.get("methodArn", ""),
            )
            if c.expect(m is not None, f"{name}: methodArn is not an execute-api method ARN"):
                region, account, _, arn_stage, method, raw = m.groups()
                c.expect(
                    (region, account) == (REGION, ACCOUNT), f"{name}: methodArn region/account"
                )
                c.expect(
                    arn_stage == stage,
                    f"{name}: methodArn stage {arn_stage!r}, the template's is {stage!r}",
                )
                c.expect(
                    any(m2 == method for _, m2 in route_of(raw, rest)),
                    f"{name}: {method} {raw} is not a route of the REST API",
                )
    c.expect(checked >= 3, f"only {checked} API Gateway sample events found in events/")


def run(template_path, out, root):
    """The failures of the checks of the template at `template_path`, transformed to `out`,
    against the code under `root`."""
    from cfnlint.decode import decode

    template, errors = decode(template_path)
    if errors:
        return [f"{template_path}: {e}" for e in errors]
    template = json.loads(json.dumps(template))
    c = Checks()
    check_metrics(template, out, root, c)
    check_iam(out, root, c)
    check_routes(template, root, c)
    check_events(template, root, c)
    return c.failures


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    with open(argv[2], encoding="utf-8") as f:
        out = json.load(f)
    root = (
        argv[3] if len(argv) == 4 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    )
    failures = run(argv[1], out, root)
    if failures:
        for f in failures:
            print(f"check failed: {f}", file=sys.stderr)
        return 1
    print("template matches the code: metrics, IAM actions, routes, sample events")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
