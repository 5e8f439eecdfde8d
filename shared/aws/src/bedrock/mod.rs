//! The [`Model`] port over Bedrock ConverseStream.
//!
//! - `request`: a [`ModelRequest`] as ConverseStream's system blocks (cache points only for
//!   models that honour them, D-3), messages, tool configuration and limits.
//! - `stream`: the event stream as [`ModelEvent`](baton_core::ports::model::ModelEvent)s;
//!   a stream that ends before `messageStop` is an error, never a short answer.
//! - `errors`: SDK failures as [`ModelError`]s (what the engine can do about them).
//! - `document`: `serde_json::Value` ↔ Smithy `Document`.
//! - [`embed`]: the `Embedder` port over InvokeModel with Titan Text Embeddings V2.
//!
//! The SDK client is built with its own retries off: the engine retries throttling and
//! transient failures with jittered backoff inside the turn's deadline, and a second retry
//! loop underneath would spend that deadline twice.

/// The provider name (`provider:` in `models.yaml`) whose models Bedrock serves.
pub const PROVIDER: &str = "bedrock";

mod document;
pub mod embed;
mod error;
mod request;
mod stream;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_bedrockruntime::Client;
use aws_sdk_bedrockruntime::config::StalledStreamProtectionConfig;
use aws_sdk_bedrockruntime::config::retry::RetryConfig;
use baton_core::ports::model::{Model, ModelError, ModelRequest, ModelStream};
use baton_core::registry::{ModelCapabilities, ModelSpec};

/// How long a stream may stay silent before the SDK gives up on it. A model that thinks
/// long before its first token is silent for a while; the SDK's default (20 s) is too short.
pub const STALL_GRACE: Duration = Duration::from_secs(60);

/// The Bedrock Runtime client from the SDK's standard settings (region, credentials,
/// endpoint: `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` works), with the SDK's retries off (see the
/// module docs) and stalled-stream protection given [`STALL_GRACE`].
pub fn client(config: &aws_config::SdkConfig) -> Client {
    let conf = aws_sdk_bedrockruntime::config::Builder::from(config)
        .retry_config(RetryConfig::disabled())
        .stalled_stream_protection(
            StalledStreamProtectionConfig::enabled()
                .grace_period(STALL_GRACE)
                .build(),
        )
        .build();
    Client::from_conf(conf)
}

/// Bedrock ConverseStream as a [`Model`].
///
/// Capabilities come from the registry's model specs, keyed by the provider's model id; a
/// model id the registry does not know gets the conservative defaults (no cache points, no
/// named tool choice).
#[derive(Debug, Clone)]
pub struct BedrockModel {
    client: Client,
    capabilities: Arc<HashMap<Arc<str>, ModelCapabilities>>,
}

impl BedrockModel {
    /// A model over `client`, with the capabilities of `specs` (e.g. `registry.models()`).
    ///
    /// The client is used as given: build it with [`client`].
    pub fn new<S: AsRef<ModelSpec>>(client: Client, specs: impl IntoIterator<Item = S>) -> Self {
        let mut capabilities: HashMap<Arc<str>, ModelCapabilities> = HashMap::new();
        for spec in specs {
            let spec = spec.as_ref();
            capabilities
                .entry(spec.model_id.clone())
                // Two entries for one model id: only what both promise is relied on.
                .and_modify(|c| {
                    *c = ModelCapabilities {
                        tool_choice: c.tool_choice && spec.capabilities.tool_choice,
                        cache_points: c.cache_points && spec.capabilities.cache_points,
                        parallel_tool_calls: c.parallel_tool_calls
                            && spec.capabilities.parallel_tool_calls,
                        reasoning_effort: c
                            .reasoning_effort
                            .filter(|r| spec.capabilities.reasoning_effort == Some(*r)),
                        text_verbosity: c.text_verbosity && spec.capabilities.text_verbosity,
                        pictures: c.pictures && spec.capabilities.pictures,
                    }
                })
                .or_insert(spec.capabilities);
        }
        BedrockModel {
            client,
            capabilities: Arc::new(capabilities),
        }
    }

    /// A model over [`client`]`(config)`.
    pub fn from_sdk_config<S: AsRef<ModelSpec>>(
        config: &aws_config::SdkConfig,
        specs: impl IntoIterator<Item = S>,
    ) -> Self {
        Self::new(client(config), specs)
    }

    /// The SDK client (to warm its connection during init).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// What the adapter assumes `model_id` supports.
    pub fn capabilities(&self, model_id: &str) -> ModelCapabilities {
        self.capabilities.get(model_id).copied().unwrap_or_default()
    }
}

impl Model for BedrockModel {
    fn stream(&self, request: &ModelRequest) -> ModelStream {
        let model = &*request.model_id;
        // OpenTelemetry GenAI semantic conventions (v1.41): one CLIENT span per call.
        let span = tracing::info_span!(
            "chat",
            otel.name = %format_args!("chat {model}"),
            otel.kind = "client",
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = "aws.bedrock",
            gen_ai.request.model = model,
            gen_ai.request.max_tokens = request.inference.max_output_tokens,
            gen_ai.request.temperature = request.inference.temperature,
            gen_ai.response.finish_reasons = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            gen_ai.usage.cache_read.input_tokens = tracing::field::Empty,
            gen_ai.usage.cache_creation.input_tokens = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        let wire = match request::build(request, self.capabilities(model)) {
            Ok(wire) => wire,
            Err(e) => {
                span.record("error.type", "invalid");
                return Box::pin(futures::stream::once(
                    async move { Err::<_, ModelError>(e) },
                ));
            }
        };
        let builder = self
            .client
            .converse_stream()
            .model_id(model)
            .set_system((!wire.system.is_empty()).then_some(wire.system))
            .set_messages(Some(wire.messages))
            .set_tool_config(wire.tool_config)
            .set_inference_config(wire.inference)
            .set_additional_model_request_fields(wire.additional);
        stream::call(builder, span)
    }
}
