//! `models.yaml` (D-4): each model checked against the providers the program can run.

use super::Loader;
use crate::registry::raw::{RawModel, RawModels};
use crate::registry::{ModelCapabilities, ModelEndpoint, ModelSpec, Prices, SourceFile};

impl Loader<'_> {
    /// Loads the models and resolves the `summarizer` alias.
    pub(super) fn load_models(&mut self, file: Option<&SourceFile>) {
        let Some(keyed) = self.load_keyed::<RawModels, _>(file, Self::check_model) else {
            return;
        };
        self.models = keyed.items;
        if let Some(alias) = keyed.rest.summarizer {
            match self.models.get(&alias) {
                Some(m) => self.summarizer = Some(m.clone()),
                None => self
                    .problems
                    .add(keyed.path, "summarizer", &alias, "no such model key"),
            }
        }
    }

    /// One model: a known provider, a context window and prices that make sense. A model
    /// with problems is still kept, so the cards using it are not reported as well.
    fn check_model(&mut self, path: &str, key: &str, m: RawModel) -> Option<ModelSpec> {
        let field = |f: &str| format!("models.{key}.{f}");
        let providers = &self.options.providers;
        if !providers.is_empty() && !providers.contains(&m.provider) {
            self.problems.add(
                path,
                field("provider"),
                &m.provider,
                format!("unknown provider; known: {}", providers.join(", ")),
            );
        }
        if m.context_window == 0 {
            self.problems
                .add(path, field("context_window"), "0", "must be positive");
        }
        for (name, v) in [
            ("input", m.prices.input),
            ("output", m.prices.output),
            ("cache_read", m.prices.cache_read),
            ("cache_write", m.prices.cache_write),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                self.problems.add(
                    path,
                    field(&format!("prices.{name}")),
                    v.to_string(),
                    "prices are non-negative USD per million tokens",
                );
            }
        }
        let endpoint = self.check_endpoint(path, key, &m);
        Some(ModelSpec {
            key: key.into(),
            provider: m.provider.into(),
            model_id: match self.options.model_ids.get(key) {
                Some(id) => id.as_str().into(),
                None => m.model_id.into(),
            },
            context_window: m.context_window,
            prices: Prices {
                input: m.prices.input,
                output: m.prices.output,
                cache_read: m.prices.cache_read,
                cache_write: m.prices.cache_write,
            },
            capabilities: ModelCapabilities {
                tool_choice: m.capabilities.tool_choice,
                cache_points: m.capabilities.cache_points,
                parallel_tool_calls: m.capabilities.parallel_tool_calls,
                reasoning_effort: m.capabilities.reasoning_effort,
                text_verbosity: m.capabilities.text_verbosity,
                pictures: m.capabilities.pictures,
            },
            endpoint,
        })
    }

    /// `base_url` and `api_key_env`: an http(s) URL, and a variable name (not a key).
    fn check_endpoint(&mut self, path: &str, key: &str, m: &RawModel) -> Option<ModelEndpoint> {
        let field = |f: &str| format!("models.{key}.{f}");
        let Some(url) = &m.base_url else {
            if let Some(var) = &m.api_key_env {
                self.problems.add(
                    path,
                    field("api_key_env"),
                    var,
                    "only a model with a base_url takes an API key variable",
                );
            }
            return None;
        };
        let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
        if !scheme_ok || url.contains(char::is_whitespace) {
            self.problems.add(
                path,
                field("base_url"),
                url,
                "must be an http:// or https:// URL, e.g. http://127.0.0.1:11434/v1",
            );
        }
        if let Some(var) = &m.api_key_env {
            let valid = !var.is_empty()
                && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !var.starts_with(|c: char| c.is_ascii_digit());
            if !valid {
                self.problems.add(
                    path,
                    field("api_key_env"),
                    "(not shown)",
                    "must name an environment variable (letters, digits and _), not hold the key",
                );
            }
        }
        Some(ModelEndpoint {
            base_url: url.trim_end_matches('/').into(),
            api_key_env: m.api_key_env.as_deref().map(Into::into),
        })
    }
}
