//! The HTTPS listener (`--tls-cert`, `--tls-key`): rustls (on aws-lc-rs, the provider reqwest
//! already brings) over the gateway's TCP listener, each connection's handshake run beside the
//! others so that a slow or silent client holds up no one.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::crypto::aws_lc_rs;
use tokio_rustls::server::TlsStream;

use super::log_limit::{LOG_INTERVAL, LogLimit};

/// How long a client has to finish its TLS handshake once connected.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How many handshakes may be under way at once; past it, new connections wait in the
/// listener's backlog.
const MAX_HANDSHAKES: usize = 1024;

/// The server side of TLS: a certificate chain and its private key, from PEM files.
///
/// The `Debug` form shows neither.
#[derive(Clone)]
pub struct TlsServer {
    acceptor: TlsAcceptor,
}

impl fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TlsServer")
    }
}

impl TlsServer {
    /// The certificate chain of PEM file `cert` (the server's certificate first, then the
    /// intermediates; `CERTIFICATE` blocks) and the private key of PEM file `key` (PKCS#8
    /// `PRIVATE KEY`, PKCS#1 `RSA PRIVATE KEY` or SEC1 `EC PRIVATE KEY`). TLS 1.2 and 1.3,
    /// HTTP/1.1 by ALPN.
    ///
    /// # Errors
    ///
    /// A [`TlsError`] naming the flag (`--tls-cert` or `--tls-key`) and the file: it cannot be
    /// read, holds no certificate or no private key, or the key does not belong to the
    /// certificate. The key's content is never in it.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<TlsServer, TlsError> {
        let cert_error = |problem: String| TlsError {
            flag: "--tls-cert",
            path: cert.to_owned(),
            problem,
        };
        let key_error = |problem: String| TlsError {
            flag: "--tls-key",
            path: key.to_owned(),
            problem,
        };
        let cert_pem =
            std::fs::read(cert).map_err(|e| cert_error(format!("cannot be read: {e}")))?;
        let chain = CertificateDer::pem_slice_iter(&cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| cert_error(format!("is not valid PEM: {e}")))?;
        if chain.is_empty() {
            return Err(cert_error(
                "holds no certificate (a PEM `CERTIFICATE` block)".to_owned(),
            ));
        }
        let key_pem = std::fs::read(key).map_err(|e| key_error(format!("cannot be read: {e}")))?;
        // What the PEM reader says of a key file may quote it: not shown.
        let private = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|_| {
            key_error(
                "holds no private key (a PEM `PRIVATE KEY`, `RSA PRIVATE KEY` or \
                 `EC PRIVATE KEY` block)"
                    .to_owned(),
            )
        })?;
        let mut config =
            ServerConfig::builder_with_provider(Arc::new(aws_lc_rs::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|e| cert_error(format!("no TLS version available: {e}")))?
                .with_no_client_auth()
                .with_single_cert(chain, private)
                .map_err(|e| {
                    key_error(format!(
                        "is not a usable key for the certificate of --tls-cert {}: {e}",
                        cert.display()
                    ))
                })?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsServer {
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }

    /// `listener`, each connection it accepts (with `TCP_NODELAY`) in TLS: what
    /// [`serve_tls`](super::serve_tls) serves.
    pub(crate) fn listener(&self, listener: TcpListener) -> TlsListener {
        TlsListener {
            tcp: listener,
            acceptor: self.acceptor.clone(),
            handshakes: FuturesUnordered::new(),
        }
    }
}

/// A [`TlsServer`] that cannot be made: the flag, its file, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsError {
    flag: &'static str,
    path: PathBuf,
    problem: String,
}

impl TlsError {
    /// The flag whose file is at fault: `--tls-cert` or `--tls-key`.
    pub fn flag(&self) -> &'static str {
        self.flag
    }
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.flag, self.path.display(), self.problem)
    }
}

impl std::error::Error for TlsError {}

type Handshake = BoxFuture<'static, Option<(TlsStream<TcpStream>, SocketAddr)>>;

/// A TCP listener whose connections are served once their TLS handshake is done.
pub(crate) struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    handshakes: FuturesUnordered<Handshake>,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    // Cancel-safe, as axum's loop needs: what is accepted is kept in `self`.
    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            tokio::select! {
                Some(done) = self.handshakes.next(), if !self.handshakes.is_empty() => {
                    if let Some(connection) = done {
                        return connection;
                    }
                }
                accepted = self.tcp.accept(), if self.handshakes.len() < MAX_HANDSHAKES => {
                    match accepted {
                        Ok((tcp, addr)) => {
                            let handshake = handshake(self.acceptor.clone(), tcp, addr);
                            self.handshakes.push(Box::pin(handshake));
                        }
                        Err(error) => accept_failed(error).await,
                    }
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.tcp.local_addr()
    }
}

/// The TLS handshake of one connection, within [`HANDSHAKE_TIMEOUT`]; `None` when it fails.
async fn handshake(
    acceptor: TlsAcceptor,
    tcp: TcpStream,
    addr: SocketAddr,
) -> Option<(TlsStream<TcpStream>, SocketAddr)> {
    if let Err(error) = tcp.set_nodelay(true) {
        tracing::debug!(%error, "TCP_NODELAY not set");
    }
    let failure = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(tls)) => return Some((tls, addr)),
        Ok(Err(error)) => error.to_string(),
        Err(_) => format!("not done within {HANDSHAKE_TIMEOUT:?}"),
    };
    // A client's fault (plain HTTP on the HTTPS port, a certificate it does not trust): once
    // per interval at most.
    static FAILED: LogLimit = LogLimit::new(LOG_INTERVAL);
    if let Some(suppressed) = FAILED.admit("tls handshake") {
        tracing::info!(
            client = %addr,
            error = %crate::redact::shown(&failure),
            suppressed,
            "TLS handshake failed (`suppressed`: how many since the last one logged)"
        );
    }
    None
}

/// What axum's own listener does when `accept` fails: a connection's own error is skipped; any
/// other (out of file descriptors) is logged and waited out for a second.
async fn accept_failed(error: io::Error) {
    if matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!(%error, "accept failed; trying again in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, contents: &[u8]) -> PathBuf {
        let path = std::env::temp_dir().join(format!(
            "toolbreaker-gateway-tls-{}-{name}",
            std::process::id()
        ));
        std::fs::write(&path, contents).unwrap();
        path
    }

    #[test]
    fn bad_files_are_named_with_their_flag() {
        let missing = Path::new("/nonexistent/cert.pem");
        let error = TlsServer::from_pem_files(missing, missing).unwrap_err();
        assert_eq!(error.flag(), "--tls-cert");
        assert!(
            error
                .to_string()
                .starts_with("--tls-cert /nonexistent/cert.pem: cannot be read: "),
            "{error}"
        );
        let empty = file("empty.pem", b"not pem at all\n");
        let error = TlsServer::from_pem_files(&empty, &empty).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "--tls-cert {}: holds no certificate (a PEM `CERTIFICATE` block)",
                empty.display()
            )
        );
        let issued = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let cert = file("cert.pem", issued.cert.pem().as_bytes());
        let error = TlsServer::from_pem_files(&cert, &empty).unwrap_err();
        assert_eq!(error.flag(), "--tls-key");
        assert!(
            error.to_string().contains("holds no private key"),
            "{error}"
        );
        let other = rcgen::KeyPair::generate().unwrap();
        let other_key = file("other.key", other.serialize_pem().as_bytes());
        let error = TlsServer::from_pem_files(&cert, &other_key).unwrap_err();
        assert_eq!(error.flag(), "--tls-key");
        assert!(error.to_string().contains("is not a usable key"), "{error}");
        let key = file("key.pem", issued.signing_key.serialize_pem().as_bytes());
        assert!(TlsServer::from_pem_files(&cert, &key).is_ok());
        for path in [empty, cert, other_key, key] {
            let _ = std::fs::remove_file(path);
        }
    }
}
