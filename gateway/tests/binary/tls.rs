//! `--tls-cert` and `--tls-key`: the gateway serves HTTPS to a real TLS client that trusts the
//! test's own CA (made at test time), MCP included; a bad file is named with its flag.

use std::path::Path;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::common::Client;
use crate::mcp::{call, text, tools_when};
use crate::process::{Gateway, Outcome, TempFile, check, gateway_command, within};
use crate::upstream::Counted;

fn utf8(path: &Path) -> Result<&str, String> {
    path.to_str()
        .ok_or_else(|| format!("{} is not UTF-8", path.display()))
}

/// A CA, and a certificate it issued for `localhost` and `127.0.0.1` with its key: the CA's
/// PEM, the certificate's file and the key's file.
fn issued() -> Result<(String, TempFile, TempFile), String> {
    let fail = |e: rcgen::Error| e.to_string();
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().map_err(fail)?).map_err(fail)?;
    let key = KeyPair::generate().map_err(fail)?;
    let server = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .map_err(fail)?
        .signed_by(&key, &ca)
        .map_err(fail)?;
    Ok((
        ca.pem(),
        TempFile::new("pem", &server.pem())?,
        TempFile::new("key", &key.serialize_pem())?,
    ))
}

/// Over HTTPS: `/healthz`, `/readyz` and an MCP session (initialize, listing, a call) with a
/// client that trusts the CA; a client that does not, and plain HTTP, are refused.
pub async fn the_gateway_serves_https_with_its_certificate() -> Outcome {
    let (ca, cert, key) = issued()?;
    let (up, _calls) = Counted::serve().await;
    let config = TempFile::new("toml", &format!("[upstreams.up]\nurl = \"{up}\"\n"))?;
    let args = [
        "--config",
        utf8(config.path())?,
        "--listen",
        "127.0.0.1:0",
        "--tls-cert",
        utf8(cert.path())?,
        "--tls-key",
        utf8(key.path())?,
    ];
    let (mut gateway, stderr) = Gateway::start_watched(&args).await?;
    let checked = async {
        check(
            gateway.url.starts_with("https://127.0.0.1:"),
            format!(
                "the gateway says where it listens in https: {}",
                gateway.url
            ),
        )?;
        let ca = reqwest::Certificate::from_pem(ca.as_bytes()).map_err(|e| e.to_string())?;
        let trusting = reqwest::Client::builder()
            .tls_certs_only([ca])
            .build()
            .map_err(|e| e.to_string())?;
        for (path, body) in [("/healthz", "ok"), ("/readyz", r#"{"ready":true}"#)] {
            let response = within(path, trusting.get(gateway.endpoint(path)).send())
                .await?
                .map_err(|e| format!("{path} over HTTPS: {e}"))?;
            check(
                response.status() == 200,
                format!("{path}: {}", response.status()),
            )?;
            let got = response.text().await.map_err(|e| e.to_string())?;
            check(got == body, format!("{path}: {got}"))?;
        }
        // MCP over TLS: initialize, the listing, a call.
        let transport = StreamableHttpClientTransport::with_client(
            trusting.clone(),
            StreamableHttpClientTransportConfig::with_uri(gateway.url.clone()),
        );
        let handler = Client::default();
        let service = within("initialize over HTTPS", handler.clone().serve(transport))
            .await?
            .map_err(|e| format!("initialize over HTTPS: {e}"))?;
        tools_when(&handler, &service, &["up.ask", "up.echo", "up.fail"]).await?;
        let echoed = call(&service, "up.echo", "in TLS").await?;
        check(text(&echoed) == "in TLS", format!("{echoed:?}"))?;
        drop(service);
        // A client that does not trust the CA, and one that speaks plain HTTP, get nothing.
        let untrusting = reqwest::Client::new()
            .get(gateway.endpoint("/healthz"))
            .send();
        let refused = within("an untrusting client", untrusting).await?;
        check(
            refused.is_err(),
            format!("an unknown CA was accepted: {refused:?}"),
        )?;
        let plain = gateway.endpoint("/healthz").replace("https://", "http://");
        let refused = within("plain HTTP", reqwest::get(plain)).await?;
        check(
            refused.as_ref().map_or(true, |r| !r.status().is_success()),
            format!("plain HTTP was served on the HTTPS port: {refused:?}"),
        )
    }
    .await;
    gateway.signal("TERM")?;
    let (status, _) = gateway.exit().await?;
    let logged = stderr.all().await?.join("\n");
    checked.map_err(|e| format!("{e}\n{logged}"))?;
    check(status.code() == Some(0), format!("{status}:\n{logged}"))
}

/// A certificate or key file that cannot be used stops the start (exit 1) with an error that
/// names the flag and the file, before any upstream is started.
pub async fn a_bad_tls_file_is_named_with_its_flag() -> Outcome {
    let (_ca, cert, key) = issued()?;
    let not_pem = TempFile::new("pem", "not a PEM file\n")?;
    let config = TempFile::new("toml", "[upstreams.up]\nurl = \"http://127.0.0.1:9/mcp\"\n")?;
    let missing = std::env::temp_dir().join("toolbreaker-gateway-no-such-cert.pem");
    let cases = [
        (
            utf8(&missing)?,
            utf8(key.path())?,
            "--tls-cert",
            utf8(&missing)?,
            "cannot be read",
        ),
        (
            utf8(cert.path())?,
            utf8(not_pem.path())?,
            "--tls-key",
            utf8(not_pem.path())?,
            "holds no private key",
        ),
        (
            utf8(not_pem.path())?,
            utf8(key.path())?,
            "--tls-cert",
            utf8(not_pem.path())?,
            "holds no certificate",
        ),
    ];
    for (cert, key, flag, file, problem) in cases {
        let args = [
            "--config",
            utf8(config.path())?,
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            cert,
            "--tls-key",
            key,
        ];
        let out = within(
            "the gateway to refuse its TLS file",
            gateway_command(&args)
                .spawn()
                .map_err(|e| format!("cannot start the gateway: {e}"))?
                .wait_with_output(),
        )
        .await?
        .map_err(|e| e.to_string())?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        check(
            out.status.code() == Some(1),
            format!("a bad {flag} exits with 1, not {}: {stderr}", out.status),
        )?;
        check(
            stderr.contains(&format!("{flag} {file}: {problem}")),
            format!("the error names {flag}, {file} and `{problem}`: {stderr}"),
        )?;
    }
    Ok(())
}
