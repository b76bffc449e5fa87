//! `serve_tls`: the routes in TLS with a certificate made at test time, `/readyz` beside
//! `/healthz`, a client that never sends its TLS hello holding up no one, and the graceful
//! shutdown.

use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use serde_json::json;
use toolbreaker_gateway::serve::{
    HANDSHAKE_TIMEOUT, HttpApp, HttpOptions, TlsServer, UpstreamReadiness, serve_tls,
};

use crate::probe::{Probe, WAIT};

/// A file in the temporary directory named for this process and `name`.
fn file(name: &str, contents: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!(
        "toolbreaker-gateway-serve-tls-{}-{name}",
        std::process::id()
    ));
    std::fs::write(&path, contents).unwrap();
    path
}

#[tokio::test]
async fn the_routes_are_served_in_tls_and_a_silent_client_holds_up_no_one() {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let (cert, key) = (
        file("cert.pem", &cert.pem()),
        file("key.pem", &key.serialize_pem()),
    );
    let tls = TlsServer::from_pem_files(&cert, &key).unwrap();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (probe, _events) = Probe::new();
    let status = Arc::new(|| json!({"upstreams": []}));
    let upstreams = Arc::new(|| {
        vec![UpstreamReadiness {
            name: "search".into(),
            required: true,
            connected: false,
        }]
    });
    let app = HttpApp::new(
        &HttpOptions::new(addr),
        move || Ok(probe.clone()),
        status,
        None,
    )
    .unwrap()
    .with_readiness(upstreams);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        serve_tls(listener, &tls, app, async move {
            let _ = stopped.await;
        })
        .await
    });

    // Connected, and silent: its handshake never ends until the handshake timeout.
    let _silent = tokio::net::TcpStream::connect(addr).await.unwrap();
    let client = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(ca.pem().as_bytes()).unwrap()])
        .build()
        .unwrap();
    // Well within the silent client's handshake timeout: served beside it, not after it.
    let answered = tokio::time::timeout(
        HANDSHAKE_TIMEOUT / 2,
        client.get(format!("https://{addr}/healthz")).send(),
    )
    .await
    .expect("served while another client's handshake is pending")
    .unwrap();
    assert_eq!(answered.status(), 200);
    assert_eq!(answered.text().await.unwrap(), "ok");
    let ready = client
        .get(format!("https://{addr}/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 503);
    let body: serde_json::Value = ready.json().await.unwrap();
    assert_eq!(body, json!({"ready": false, "not_connected": ["search"]}));

    stop.send(()).unwrap();
    tokio::time::timeout(WAIT + Duration::from_secs(2), server)
        .await
        .expect("serve_tls returns after the signal")
        .unwrap()
        .expect("a clean shutdown");
    let _ = std::fs::remove_file(cert);
    let _ = std::fs::remove_file(key);
}
