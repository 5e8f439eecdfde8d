//! Header secrets by ARN: AWS Secrets Manager secrets and SSM parameters, fetched once at
//! Init and then looked up without I/O.
//!
//! The `http` tools of `tools.yaml` name a header secret either as an environment variable
//! (`{env: VAR}`) or by ARN (`{arn: ...}`). On Lambda, the turn function lists the ARNs at
//! Init, [`prefetch`]es each of them once, and answers the connector's (synchronous)
//! lookups from the result ([`PrefetchedSecrets::get`]). Two kinds of ARN are read:
//!
//! - `arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-SUFFIX`: `GetSecretValue`; the
//!   secret must hold text (`SecretString`), a binary secret is refused;
//! - `arn:aws:ssm:REGION:ACCOUNT:parameter/NAME`: `GetParameter` with decryption (a
//!   `SecureString`; a plain `String` is read as written).
//!
//! Each ARN is read in its own region (the one the ARN names), with the credentials and
//! endpoint settings of the given SDK config. A value never appears in Debug output, logs
//! or errors; an error names the ARN and says what to check.
//!
//! This crate does not know the connectors (both are adapters; neither depends on the
//! other): the program wraps [`PrefetchedSecrets`] in the connectors' `SecretSource`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use aws_config::{Region, SdkConfig};
use aws_sdk_secretsmanager::error::{DisplayErrorContext, ProvideErrorMetadata};

/// The error code AWS answers with when IAM refuses the call.
const ACCESS_DENIED: &str = "AccessDeniedException";
/// How long one read may take, retries included: Lambda gives Init 10 s in all, and a
/// function that cannot reach the service should fail Init with the ARN named rather than
/// time out without a word.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The values of the ARNs [`prefetch`] read, by ARN. Debug shows the ARNs only.
#[derive(Clone, Default)]
pub struct PrefetchedSecrets {
    values: BTreeMap<String, String>,
}

impl PrefetchedSecrets {
    /// The value read for `arn`; `None` for an ARN that was not prefetched.
    pub fn get(&self, arn: &str) -> Option<&str> {
        self.values.get(arn).map(String::as_str)
    }

    /// The ARNs held, sorted.
    pub fn arns(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }

    /// How many ARNs are held.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether no ARN is held.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl fmt::Debug for PrefetchedSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // ARNs are names, not secrets; the values are never shown.
        f.debug_struct("PrefetchedSecrets")
            .field("arns", &self.values.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Why a secret could not be prefetched. Each message names the ARN (never a value) and
/// says what to check.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    /// The ARN is neither a Secrets Manager secret nor an SSM parameter.
    #[error(
        "{arn} is not a Secrets Manager secret ARN (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-SUFFIX) or an SSM parameter ARN (arn:aws:ssm:REGION:ACCOUNT:parameter/NAME); a header secret by ARN must be one of those"
    )]
    Unsupported {
        /// The ARN as written in `tools.yaml`.
        arn: String,
    },
    /// The service answered that there is no such secret or parameter.
    #[error(
        "{arn} does not exist in {region}: check the ARN (a Secrets Manager ARN ends in the six characters AWS appends to the secret's name; copy the whole ARN), its account and region, and that it is not scheduled for deletion"
    )]
    NotFound {
        /// The ARN.
        arn: String,
        /// The region it was looked up in (the ARN's).
        region: String,
    },
    /// IAM refused the read.
    #[error(
        "the function may not read {arn}: list this exact ARN in the stack parameter ToolSecretArns (the role allows only those) and redeploy ({detail})"
    )]
    AccessDenied {
        /// The ARN.
        arn: String,
        /// The service's explanation.
        detail: String,
    },
    /// The value is encrypted with a KMS key the function may not use.
    #[error(
        "{arn} could not be decrypted: the function needs kms:Decrypt on the customer managed KMS key that encrypts it; list that key's ARN in the stack parameter ToolSecretKeyArns ({detail})"
    )]
    Decryption {
        /// The ARN.
        arn: String,
        /// The service's explanation.
        detail: String,
    },
    /// A Secrets Manager secret that holds binary data.
    #[error(
        "{arn} is a binary secret (SecretBinary); a header secret must be a text secret (SecretString)"
    )]
    Binary {
        /// The ARN.
        arn: String,
    },
    /// The secret or parameter holds an empty value.
    #[error("{arn} holds an empty value; store the header's secret in it")]
    Empty {
        /// The ARN.
        arn: String,
    },
    /// Anything else: no connection, no credentials, a throttle that outlasted the retries.
    #[error(
        "could not read {arn} in {region}: {detail}; check the region, that the function can reach the service (a function in a VPC needs a NAT gateway or a VPC endpoint), and its permissions"
    )]
    Unreadable {
        /// The ARN.
        arn: String,
        /// The region it was read in (the ARN's).
        region: String,
        /// What the SDK said.
        detail: String,
    },
}

impl SecretsError {
    /// The ARN the error is about.
    pub fn arn(&self) -> &str {
        match self {
            SecretsError::Unsupported { arn }
            | SecretsError::NotFound { arn, .. }
            | SecretsError::AccessDenied { arn, .. }
            | SecretsError::Decryption { arn, .. }
            | SecretsError::Binary { arn }
            | SecretsError::Empty { arn }
            | SecretsError::Unreadable { arn, .. } => arn,
        }
    }
}

/// Which service holds an ARN's value, and in which region.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Secret { region: String },
    Parameter { region: String },
}

/// Reads `arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE`.
fn target(arn: &str) -> Result<Target, SecretsError> {
    let unsupported = || SecretsError::Unsupported {
        arn: arn.to_owned(),
    };
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    let [prefix, partition, service, region, account, resource] = parts[..] else {
        return Err(unsupported());
    };
    if prefix != "arn" || partition.is_empty() || region.is_empty() || account.is_empty() {
        return Err(unsupported());
    }
    let region = region.to_owned();
    match service {
        "secretsmanager" if resource.len() > "secret:".len() && resource.starts_with("secret:") => {
            Ok(Target::Secret { region })
        }
        "ssm" if resource.len() > "parameter/".len() && resource.starts_with("parameter/") => {
            Ok(Target::Parameter { region })
        }
        _ => Err(unsupported()),
    }
}

/// Reads each ARN once (duplicates are read once), all at once, and keeps the values.
///
/// Nothing is sent when `arns` is empty. Each ARN is read in the region it names, with the
/// credentials, endpoint and retry settings of `sdk`, within [`READ_TIMEOUT`].
///
/// # Errors
/// The first ARN (in sorted order) that could not be read, named, with what to check; see
/// [`SecretsError`]. ARNs of an unknown kind are refused before anything is sent.
pub async fn prefetch(
    sdk: &SdkConfig,
    arns: impl IntoIterator<Item = String>,
) -> Result<PrefetchedSecrets, SecretsError> {
    let arns: BTreeSet<String> = arns.into_iter().collect();
    if arns.is_empty() {
        return Ok(PrefetchedSecrets::default());
    }
    let targets = arns
        .iter()
        .map(|arn| target(arn).map(|t| (arn.clone(), t)))
        .collect::<Result<Vec<_>, _>>()?;
    let reads = targets.into_iter().map(|(arn, target)| async move {
        let (read, region) = match &target {
            Target::Secret { region } => (
                futures::future::Either::Left(secret_value(sdk, &arn, region)),
                region,
            ),
            Target::Parameter { region } => (
                futures::future::Either::Right(parameter_value(sdk, &arn, region)),
                region,
            ),
        };
        let value = tokio::time::timeout(READ_TIMEOUT, read)
            .await
            .map_err(|_| SecretsError::Unreadable {
                arn: arn.clone(),
                region: region.clone(),
                detail: format!("no answer within {} s", READ_TIMEOUT.as_secs()),
            })??;
        if value.is_empty() {
            return Err(SecretsError::Empty { arn });
        }
        Ok((arn, value))
    });
    let mut values = BTreeMap::new();
    for read in futures::future::join_all(reads).await {
        let (arn, value) = read?;
        values.insert(arn, value);
    }
    tracing::info!(
        arns = ?values.keys().collect::<Vec<_>>(),
        "header secrets read"
    );
    Ok(PrefetchedSecrets { values })
}

/// `GetSecretValue` of a Secrets Manager secret, in its region.
async fn secret_value(sdk: &SdkConfig, arn: &str, region: &str) -> Result<String, SecretsError> {
    let client = aws_sdk_secretsmanager::Client::from_conf(
        aws_sdk_secretsmanager::config::Builder::from(sdk)
            .region(Region::new(region.to_owned()))
            .build(),
    );
    match client.get_secret_value().secret_id(arn).send().await {
        Ok(answer) => match (answer.secret_string(), answer.secret_binary()) {
            (Some(text), _) => Ok(text.to_owned()),
            (None, Some(_)) => Err(SecretsError::Binary {
                arn: arn.to_owned(),
            }),
            (None, None) => Err(SecretsError::Empty {
                arn: arn.to_owned(),
            }),
        },
        Err(e) => {
            let service = e.as_service_error();
            Err(failure(
                Failure {
                    not_found: service.is_some_and(|s| s.is_resource_not_found_exception()),
                    decryption: service.is_some_and(|s| s.is_decryption_failure()),
                    access_denied: service.and_then(|s| s.code()) == Some(ACCESS_DENIED),
                    detail: DisplayErrorContext(&e).to_string(),
                },
                arn,
                region,
            ))
        }
    }
}

/// `GetParameter` (decrypted) of an SSM parameter, by its ARN, in its region.
async fn parameter_value(sdk: &SdkConfig, arn: &str, region: &str) -> Result<String, SecretsError> {
    let client = aws_sdk_ssm::Client::from_conf(
        aws_sdk_ssm::config::Builder::from(sdk)
            .region(Region::new(region.to_owned()))
            .build(),
    );
    match client
        .get_parameter()
        .name(arn)
        .with_decryption(true)
        .send()
        .await
    {
        Ok(answer) => Ok(answer
            .parameter()
            .and_then(|p| p.value())
            .unwrap_or_default()
            .to_owned()),
        Err(e) => {
            let service = e.as_service_error();
            Err(failure(
                Failure {
                    not_found: service.is_some_and(|s| s.is_parameter_not_found()),
                    decryption: service.is_some_and(|s| s.is_invalid_key_id()),
                    access_denied: service.and_then(aws_sdk_ssm::error::ProvideErrorMetadata::code)
                        == Some(ACCESS_DENIED),
                    detail: aws_sdk_ssm::error::DisplayErrorContext(&e).to_string(),
                },
                arn,
                region,
            ))
        }
    }
}

/// What a failed read's SDK error says, whichever the service.
struct Failure {
    not_found: bool,
    decryption: bool,
    access_denied: bool,
    /// The SDK's whole explanation (error responses never carry a value).
    detail: String,
}

fn failure(f: Failure, arn: &str, region: &str) -> SecretsError {
    let (arn, region) = (arn.to_owned(), region.to_owned());
    if f.not_found {
        SecretsError::NotFound { arn, region }
    } else if f.decryption {
        SecretsError::Decryption {
            arn,
            detail: f.detail,
        }
    } else if f.access_denied {
        SecretsError::AccessDenied {
            arn,
            detail: f.detail,
        }
    } else {
        SecretsError::Unreadable {
            arn,
            region,
            detail: f.detail,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use aws_config::BehaviorVersion;
    use aws_sdk_secretsmanager::config::Credentials;

    #[test]
    fn arns_are_sorted_by_service_and_region() {
        assert_eq!(
            target("arn:aws:secretsmanager:eu-west-1:123456789012:secret:partner/token-AbCdEf")
                .unwrap(),
            Target::Secret {
                region: "eu-west-1".into()
            }
        );
        assert_eq!(
            target("arn:aws-us-gov:ssm:us-gov-west-1:123456789012:parameter/baton/key").unwrap(),
            Target::Parameter {
                region: "us-gov-west-1".into()
            }
        );
        for bad in [
            "arn:aws:s3:::bucket/key",
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:",
            "arn:aws:ssm:eu-west-1:123456789012:document/x",
            "arn:aws:ssm::123456789012:parameter/x",
            "arn:aws:kms:eu-west-1:123456789012:key/1",
            "not an arn",
        ] {
            let e = target(bad).unwrap_err();
            assert!(matches!(e, SecretsError::Unsupported { .. }), "{bad}");
            assert_eq!(e.arn(), bad);
            assert!(e.to_string().starts_with(bad), "{e}");
        }
    }

    #[test]
    fn debug_shows_the_arns_and_never_a_value() {
        let secrets = PrefetchedSecrets {
            values: BTreeMap::from([("arn:aws:ssm:r:1:parameter/p".into(), "hunter2".into())]),
        };
        let shown = format!("{secrets:?}");
        assert!(shown.contains("arn:aws:ssm:r:1:parameter/p"), "{shown}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert_eq!(secrets.get("arn:aws:ssm:r:1:parameter/p"), Some("hunter2"));
        assert_eq!(secrets.get("arn:aws:ssm:r:1:parameter/q"), None);
    }

    /// Settings whose every request would fail to connect (port 9 is closed).
    async fn unreachable() -> SdkConfig {
        aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("local", "local", None, None, "test"))
            .endpoint_url("http://127.0.0.1:9")
            .retry_config(aws_config::retry::RetryConfig::disabled())
            .load()
            .await
    }

    #[tokio::test]
    async fn no_arns_send_nothing() {
        let secrets = prefetch(&unreachable().await, Vec::new()).await.unwrap();
        assert!(secrets.is_empty());
    }

    #[tokio::test]
    async fn an_unknown_kind_of_arn_is_refused_before_anything_is_sent() {
        let e = prefetch(
            &unreachable().await,
            [
                "arn:aws:ssm:us-east-1:123456789012:parameter/fine".to_owned(),
                "arn:aws:s3:::bucket/key".to_owned(),
            ],
        )
        .await
        .unwrap_err();
        assert!(matches!(e, SecretsError::Unsupported { .. }), "{e}");
        assert_eq!(e.arn(), "arn:aws:s3:::bucket/key");
    }

    #[tokio::test(start_paused = true)]
    async fn a_service_that_never_answers_fails_within_the_timeout() {
        // Accepts connections and never answers.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        let sdk = aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("local", "local", None, None, "test"))
            .endpoint_url(endpoint)
            .load()
            .await;
        let arn = "arn:aws:ssm:us-east-1:123456789012:parameter/slow";
        let e = prefetch(&sdk, [arn.to_owned()]).await.unwrap_err();
        assert!(
            matches!(&e, SecretsError::Unreadable { detail, .. } if detail == "no answer within 5 s"),
            "{e}"
        );
        assert!(e.to_string().contains(arn), "{e}");
    }

    #[tokio::test]
    async fn an_unreachable_service_names_the_arn_and_the_region() {
        let arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:t-AbCdEf";
        let e = prefetch(&unreachable().await, [arn.to_owned()])
            .await
            .unwrap_err();
        assert!(matches!(e, SecretsError::Unreadable { .. }), "{e}");
        let text = e.to_string();
        assert!(text.contains(arn) && text.contains("eu-west-1"), "{text}");
    }
}
