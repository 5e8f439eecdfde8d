//! `tools.yaml` (D-5): each tool's id, connector kind and argument schema.

use std::sync::Arc;

use serde_json::Value;

use super::Loader;
use crate::approval::{ApprovalPolicy, Condition};
use crate::model::ToolDef;
use crate::registry::raw::{RawTool, RawTools};
use crate::registry::{SourceFile, Tool};
use crate::tool::PayloadType;

/// A tool's timeout when `tools.yaml` sets none.
const DEFAULT_TOOL_TIMEOUT_MS: u64 = 30_000;

impl Loader<'_> {
    /// Loads the tools.
    pub(super) fn load_tools(&mut self, file: Option<&SourceFile>) {
        if let Some(keyed) = self.load_keyed::<RawTools, _>(file, Self::check_tool) {
            self.tools = keyed.items;
        }
    }

    /// One tool; one with a bad id or schema is left out, so the cards listing it are
    /// named too.
    fn check_tool(&mut self, path: &str, id: &str, t: RawTool) -> Option<Tool> {
        if !self.check_tool_id(path, id) {
            return None;
        }
        let field = |f: &str| format!("tools.{id}.{f}");
        let kinds = &self.options.connector_kinds;
        if !kinds.is_empty() && !kinds.contains(&t.connector.kind) {
            self.problems.add(
                path,
                field("connector.kind"),
                &t.connector.kind,
                format!("unknown connector kind; known: {}", kinds.join(", ")),
            );
        }
        let discovered = self.options.discovered.get(id);
        let Some(schema) = t.schema.or_else(|| discovered.map(|d| d.schema.clone())) else {
            self.problems.add(
                path,
                field("schema"),
                "",
                "missing: declare the argument schema (a JSON Schema of type object), or use \
                 a connector whose backend lists its tools (mcp)",
            );
            return None;
        };
        let description = t
            .description
            .or_else(|| discovered.and_then(|d| d.description.clone()))
            .filter(|d| !d.trim().is_empty());
        let Some(description) = description else {
            self.problems.add(
                path,
                field("description"),
                "",
                "missing: say what the tool does (the model reads it)",
            );
            return None;
        };
        let validator = self.tool_validator(path, id, &schema)?;
        if t.timeout_ms == Some(0) {
            self.problems
                .add(path, field("timeout_ms"), "0", "must be positive");
        }
        let approval = t.approval.and_then(|a| {
            let rule = a.when.as_deref().unwrap_or("always");
            let when = match Condition::parse(rule) {
                Ok(when) => when,
                Err(e) => {
                    self.problems.add(path, field("approval.when"), rule, e);
                    return None;
                }
            };
            if a.action.trim().is_empty() {
                self.problems.add(
                    path,
                    field("approval.action"),
                    "",
                    "missing: say in plain words what the call does, e.g. `Redeem {points} points`",
                );
                return None;
            }
            Some(Arc::new(ApprovalPolicy {
                when,
                action: a.action,
            }))
        });
        let payload_type = match t.payload_type {
            None => None,
            Some(declared) => {
                let validator = match declared.schema.as_ref().map(jsonschema::validator_for) {
                    None => None,
                    Some(Ok(v)) => Some(v),
                    Some(Err(e)) => {
                        self.problems.add(
                            path,
                            field("payload_type.schema"),
                            e.instance_path().to_string(),
                            format!("not a valid JSON Schema: {e}"),
                        );
                        return None;
                    }
                };
                Some(Arc::new(PayloadType {
                    domain_type: declared.domain_type,
                    enricher_id: declared.enricher_id,
                    validator,
                }))
            }
        };
        Some(Tool {
            id: Arc::from(id),
            description: Arc::from(description),
            connector_kind: Arc::from(t.connector.kind),
            connector_config: Arc::new(Value::Object(t.connector.config)),
            schema: Arc::new(schema),
            validator: Arc::new(validator),
            timeout_ms: t.timeout_ms.unwrap_or(DEFAULT_TOOL_TIMEOUT_MS),
            status_code: t.status.map(Arc::from),
            result_template: t.result_template.map(Arc::from),
            envelope_major: t.envelope_major,
            payload_type,
            approval,
        })
    }

    /// Whether `id` can be a tool name the model sees and is not an ask tool's.
    fn check_tool_id(&mut self, path: &str, id: &str) -> bool {
        if !valid_tool_name(id) {
            self.problems.add(
                path,
                format!("tools.{id}"),
                id,
                "tool ids are 1-64 characters of a-z, 0-9 or '_'",
            );
            return false;
        }
        if id.starts_with("ask_") {
            self.problems.add(
                path,
                format!("tools.{id}"),
                id,
                "the ask_ prefix is reserved for sub-agent tools",
            );
            return false;
        }
        true
    }

    /// The compiled argument schema, which must be a JSON Schema of type object.
    fn tool_validator(
        &mut self,
        path: &str,
        id: &str,
        schema: &Value,
    ) -> Option<jsonschema::Validator> {
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            self.problems.add(
                path,
                format!("tools.{id}.schema.type"),
                schema
                    .get("type")
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
                "a tool's argument schema must be of type object",
            );
            return None;
        }
        match jsonschema::validator_for(schema) {
            Ok(v) => Some(v),
            Err(e) => {
                self.problems.add(
                    path,
                    format!("tools.{id}.schema"),
                    e.instance_path().to_string(),
                    format!("not a valid JSON Schema: {e}"),
                );
                None
            }
        }
    }
}

/// 1-64 characters of a-z, 0-9 or '_'.
fn valid_tool_name(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// A tool as the model sees it.
pub(super) fn tool_def(tool: &Tool) -> ToolDef {
    ToolDef {
        name: tool.id.clone(),
        description: tool.description.clone(),
        input_schema: tool.schema.clone(),
    }
}
