//! How the client is built: SDK retries off, the endpoint from the SDK settings.

use super::*;
use baton_aws::bedrock::STALL_GRACE;

#[tokio::test]
async fn sdk_retries_stay_off_even_when_the_sdk_config_enables_them() {
    let fake = FakeBedrock::with_replies([Reply::throttled(), Reply::text("second")])
        .await
        .unwrap();
    // A config with the SDK's default (standard, 3 attempts) retry policy.
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_bedrockruntime::config::Credentials::new(
            "AKID", "SECRET", None, None, "test",
        ))
        .endpoint_url(fake.endpoint_url())
        .load()
        .await;
    let model = BedrockModel::from_sdk_config(&sdk, [spec(CAPABLE, true)]);
    let (_, error) = split_error(events(&model, &request(CAPABLE)).await);
    assert_eq!(error, ModelError::Throttled);
    assert_eq!(fake.request_count(), 1);
    let conf = model.client().config();
    assert_eq!(conf.retry_config().unwrap().max_attempts(), 1);
    assert_eq!(
        conf.stalled_stream_protection().unwrap().grace_period(),
        STALL_GRACE
    );
}

/// What `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` feeds the SDK config, without touching the
/// process environment (other tests run in parallel).
#[derive(Debug)]
struct BedrockEndpoint(String);

impl aws_types::service_config::LoadServiceConfig for BedrockEndpoint {
    fn load_config(&self, key: aws_types::service_config::ServiceConfigKey<'_>) -> Option<String> {
        (key.service_id() == "Bedrock Runtime" && key.env() == "AWS_ENDPOINT_URL")
            .then(|| self.0.clone())
    }
}

#[tokio::test]
async fn the_endpoint_comes_from_the_service_specific_setting() {
    let fake = FakeBedrock::with_replies([Reply::text("found")])
        .await
        .unwrap();
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_bedrockruntime::config::Credentials::new(
            "AKID", "SECRET", None, None, "test",
        ))
        .load()
        .await
        .into_builder()
        .service_config(BedrockEndpoint(fake.endpoint_url()))
        .build();
    let model = BedrockModel::from_sdk_config(&sdk, [spec(CAPABLE, true)]);
    let got = ok(events(&model, &request(CAPABLE)).await);
    assert_eq!(got[0], ModelEvent::TextDelta("found".into()));
    assert_eq!(fake.request_count(), 1);
}
