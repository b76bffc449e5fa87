//! Where the gateway listens (`--listen`): an IP or a host name, and a port; a name is resolved
//! when the gateway starts.

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::str::FromStr;

use tokio::net::TcpListener;

/// A listen address: `IP:PORT` (an IPv6 address in brackets, `[::1]:8080`) or `NAME:PORT`
/// (`localhost:8080`, resolved by the system's resolver when it is used).
///
/// # Examples
///
/// ```
/// use toolbreaker_gateway::serve::ListenAddr;
///
/// let named: ListenAddr = "localhost:8080".parse().unwrap();
/// assert_eq!(named.host(), "localhost");
/// assert_eq!(named.port(), 8080);
/// assert!(named.resolve().unwrap().iter().all(|a| a.ip().is_loopback()));
/// let ip: ListenAddr = "[::1]:80".parse().unwrap();
/// assert_eq!(ip.to_string(), "[::1]:80");
/// assert!("localhost".parse::<ListenAddr>().is_err(), "a port is required");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenAddr {
    /// The host as given, without an IPv6 address's brackets.
    host: String,
    port: u16,
}

impl ListenAddr {
    /// The host: an IP (IPv6 without brackets) or a name.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port (0: any free port).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The host as an IP, when it is one (not a name).
    pub fn ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }

    /// The socket addresses it stands for: the one of an IP, those a name resolves to (at
    /// least one).
    ///
    /// # Errors
    ///
    /// A name that does not resolve, or resolves to nothing.
    pub fn resolve(&self) -> io::Result<Vec<SocketAddr>> {
        if let Some(ip) = self.ip() {
            return Ok(vec![SocketAddr::new(ip, self.port)]);
        }
        let found: Vec<SocketAddr> = (self.host.as_str(), self.port).to_socket_addrs()?.collect();
        if found.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "the name resolves to no address",
            ));
        }
        Ok(found)
    }

    /// Whether every address it stands for is a loopback one (`false` when a name does not
    /// resolve).
    pub fn is_loopback(&self) -> bool {
        self.resolve()
            .is_ok_and(|all| all.iter().all(|addr| addr.ip().is_loopback()))
    }

    /// A listener bound to the first of its addresses that can be bound.
    ///
    /// # Errors
    ///
    /// In words, naming `--listen` and this address: the name does not resolve, or no address
    /// can be bound (the port is in use, the address is not this machine's, …).
    pub async fn bind(&self) -> Result<TcpListener, String> {
        let addrs = self
            .resolve()
            .map_err(|e| format!("--listen {self}: cannot resolve `{}`: {e}", self.host))?;
        let mut last = None;
        for addr in addrs {
            match TcpListener::bind(addr).await {
                Ok(listener) => return Ok(listener),
                Err(error) => last = Some((addr, error)),
            }
        }
        Err(match last {
            Some((addr, error)) if addr.to_string() == self.to_string() => {
                format!("--listen {self}: cannot listen: {error}")
            }
            Some((addr, error)) => format!("--listen {self}: cannot listen on {addr}: {error}"),
            None => format!("--listen {self}: no address to listen on"),
        })
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl From<SocketAddr> for ListenAddr {
    fn from(addr: SocketAddr) -> ListenAddr {
        ListenAddr {
            host: addr.ip().to_string(),
            port: addr.port(),
        }
    }
}

/// Why a `--listen` value is not a listen address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadListenAddr(&'static str);

impl fmt::Display for BadListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for BadListenAddr {}

impl FromStr for ListenAddr {
    type Err = BadListenAddr;

    fn from_str(text: &str) -> Result<ListenAddr, BadListenAddr> {
        const SHAPE: &str = "expected HOST:PORT: an IP (IPv6 in brackets, [::1]:8080) or a host \
                             name (localhost:8080), and a port from 0 to 65535";
        if let Ok(addr) = text.parse::<SocketAddr>() {
            return Ok(addr.into());
        }
        let Some((host, port)) = text.rsplit_once(':') else {
            return Err(BadListenAddr(SHAPE));
        };
        let port: u16 = port.parse().map_err(|_| BadListenAddr(SHAPE))?;
        // A host name: letters, digits, `-`, `_` (container names) and `.` (an IPv6 address
        // needs brackets, and one in brackets parsed above).
        let name = !host.is_empty()
            && host.len() <= 253
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !name {
            return Err(BadListenAddr(SHAPE));
        }
        Ok(ListenAddr {
            host: host.to_owned(),
            port,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ips_and_names_with_a_port_are_listen_addresses() {
        for (text, host, port) in [
            ("127.0.0.1:8080", "127.0.0.1", 8080),
            ("[::1]:0", "::1", 0),
            ("localhost:80", "localhost", 80),
            ("gw.internal:65535", "gw.internal", 65535),
            ("my_service:8080", "my_service", 8080),
        ] {
            let addr: ListenAddr = text.parse().unwrap();
            assert_eq!((addr.host(), addr.port()), (host, port), "{text}");
            assert_eq!(addr.to_string(), text);
        }
        for bad in [
            "localhost",
            ":80",
            "localhost:",
            "localhost:65536",
            "::1:80",
            "a b:80",
            "http://localhost:80",
            "",
        ] {
            assert!(bad.parse::<ListenAddr>().is_err(), "{bad}");
        }
    }

    #[test]
    fn localhost_is_loopback_and_a_public_ip_is_not() {
        assert!("localhost:1".parse::<ListenAddr>().unwrap().is_loopback());
        assert!("[::1]:1".parse::<ListenAddr>().unwrap().is_loopback());
        assert!(!"0.0.0.0:1".parse::<ListenAddr>().unwrap().is_loopback());
        assert!(!"10.0.0.1:1".parse::<ListenAddr>().unwrap().is_loopback());
    }

    #[tokio::test]
    async fn a_name_is_resolved_and_bound() {
        let listener = "localhost:0".parse::<ListenAddr>().unwrap().bind().await;
        assert!(listener.unwrap().local_addr().unwrap().ip().is_loopback());
    }

    #[tokio::test]
    async fn a_busy_port_is_reported_with_the_address() {
        let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr: ListenAddr = busy.local_addr().unwrap().into();
        let error = addr.bind().await.unwrap_err();
        assert!(
            error.starts_with(&format!("--listen {addr}: cannot listen: ")),
            "{error}"
        );
    }
}
