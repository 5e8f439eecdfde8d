//! What the standard `OTEL_*` variables ask for: which signals are exported, and over
//! which protocol.

use crate::TelemetryError;

/// A signal Baton exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    Traces,
    Metrics,
}

impl Signal {
    /// The variable naming this signal's own endpoint, and the one naming every signal's.
    fn endpoints(self) -> [&'static str; 2] {
        match self {
            Signal::Traces => [
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ],
            Signal::Metrics => [
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ],
        }
    }

    /// The variable choosing this signal's protocol, and the one choosing every signal's.
    fn protocols(self) -> [&'static str; 2] {
        match self {
            Signal::Traces => [
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ],
            Signal::Metrics => [
                "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ],
        }
    }

    /// The variable that turns this signal's exporter off with `none`.
    fn exporter(self) -> &'static str {
        match self {
            Signal::Traces => "OTEL_TRACES_EXPORTER",
            Signal::Metrics => "OTEL_METRICS_EXPORTER",
        }
    }
}

/// The one protocol this build speaks.
const HTTP_PROTOBUF: &str = "http/protobuf";

/// The variable the GenAI instrumentations read to capture prompts and answers.
const CAPTURE_CONTENT: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

fn set(get: &impl Fn(&str) -> Option<String>, name: &str) -> bool {
    get(name).is_some_and(|v| !v.trim().is_empty())
}

fn is(get: &impl Fn(&str) -> Option<String>, name: &str, value: &str) -> bool {
    get(name).is_some_and(|v| v.trim().eq_ignore_ascii_case(value))
}

/// Whether the variables `get` reads turn `signal`'s export on: an endpoint is named, and
/// neither the SDK is disabled (`OTEL_SDK_DISABLED=true`) nor the signal's exporter `none`.
pub(crate) fn enabled(signal: Signal, get: impl Fn(&str) -> Option<String>) -> bool {
    signal.endpoints().iter().any(|v| set(&get, v))
        && !is(&get, "OTEL_SDK_DISABLED", "true")
        && !is(&get, signal.exporter(), "none")
}

/// The protocol asked for `signal`, when it is not the one this build speaks.
pub(crate) fn unsupported_protocol(
    signal: Signal,
    get: impl Fn(&str) -> Option<String>,
) -> Option<TelemetryError> {
    let (variable, value) = signal
        .protocols()
        .iter()
        .find_map(|v| get(v).filter(|x| !x.trim().is_empty()).map(|x| (*v, x)))?;
    (value.trim() != HTTP_PROTOBUF).then_some(TelemetryError::Protocol { variable, value })
}

/// Whether prompts and answers go on the spans (`true` only; anything else keeps them off).
pub(crate) fn content_captured(get: impl Fn(&str) -> Option<String>) -> bool {
    is(&get, CAPTURE_CONTENT, "true")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn export_is_off_without_an_endpoint() {
        for signal in [Signal::Traces, Signal::Metrics] {
            assert!(!enabled(signal, vars(&[])));
            assert!(!enabled(
                signal,
                vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])
            ));
            assert!(!enabled(signal, vars(&[("OTEL_SERVICE_NAME", "baton")])));
        }
    }

    #[test]
    fn an_endpoint_turns_export_on_unless_disabled() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        assert!(enabled(Signal::Traces, vars(&[endpoint])));
        assert!(enabled(Signal::Metrics, vars(&[endpoint])));
        assert!(!enabled(
            Signal::Traces,
            vars(&[endpoint, ("OTEL_SDK_DISABLED", "TRUE")])
        ));
        assert!(enabled(
            Signal::Traces,
            vars(&[endpoint, ("OTEL_SDK_DISABLED", "false")])
        ));
    }

    #[test]
    fn each_signal_has_its_own_endpoint_and_off_switch() {
        let traces = (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://127.0.0.1:4318/v1/traces",
        );
        assert!(enabled(Signal::Traces, vars(&[traces])));
        assert!(!enabled(Signal::Metrics, vars(&[traces])));
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        let no_metrics = ("OTEL_METRICS_EXPORTER", "none");
        assert!(enabled(Signal::Traces, vars(&[endpoint, no_metrics])));
        assert!(!enabled(Signal::Metrics, vars(&[endpoint, no_metrics])));
        let no_traces = ("OTEL_TRACES_EXPORTER", "none");
        assert!(!enabled(Signal::Traces, vars(&[endpoint, no_traces])));
        assert!(enabled(Signal::Metrics, vars(&[endpoint, no_traces])));
    }

    #[test]
    fn only_http_protobuf_is_accepted() {
        assert!(unsupported_protocol(Signal::Traces, vars(&[])).is_none());
        let generic = ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
        assert!(unsupported_protocol(Signal::Traces, vars(&[generic])).is_none());
        let e = unsupported_protocol(
            Signal::Traces,
            vars(&[generic, ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")]),
        )
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            e.contains("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL = \"grpc\""),
            "{e}"
        );
        let e = unsupported_protocol(
            Signal::Metrics,
            vars(&[
                generic,
                ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/json"),
            ]),
        );
        assert!(e.is_some());
    }

    #[test]
    fn content_is_captured_only_when_asked_for() {
        assert!(!content_captured(vars(&[])));
        assert!(!content_captured(vars(&[(CAPTURE_CONTENT, "yes")])));
        assert!(content_captured(vars(&[(CAPTURE_CONTENT, " TRUE ")])));
    }
}
