//! The `http` connector over TLS: a private CA, and an unknown one refused.

use super::*;

// ---- https --------------------------------------------------------------------------

/// A private CA (its PEM in a temporary file) and a TLS server for 127.0.0.1 whose
/// certificate that CA issued, answering one envelope per connection.
async fn tls_server() -> (SocketAddr, tempfile::NamedTempFile) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    use tokio_rustls::rustls;

    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let ca_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(ca_file.path(), ca.pem()).unwrap();

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let addr = raw(move |stream| {
        let acceptor = acceptor.clone();
        async move {
            let Ok(mut tls) = acceptor.accept(stream).await else {
                return;
            };
            let head = read_head(&mut tls).await;
            let principal = head
                .lines()
                .find_map(|l| l.strip_prefix("x-baton-principal: "))
                .unwrap_or("none")
                .to_owned();
            let body = envelope_for(&principal).to_string();
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = tls.write_all(answer.as_bytes()).await;
            let _ = tls.shutdown().await;
        }
    })
    .await;
    (addr, ca_file)
}

#[tokio::test]
async fn https_works_with_a_private_ca_and_refuses_an_unknown_one() {
    let (addr, ca_file) = tls_server().await;
    let url = format!("https://{addr}/offers");
    let config = json!({"url": url, "ca_file": ca_file.path()});
    let e = call(config, json!({})).await.unwrap();
    assert_eq!(e.principal, PRINCIPAL);

    // Without the CA, the system's roots do not know the certificate.
    let detail = unavailable(call(json!({"url": url}), json!({})).await);
    assert!(!detail.is_empty());
}
