//! The redis-server the fleet benchmark runs against: started on a free loopback port with no
//! persistence, stopped (SIGKILL) when dropped, so a panicking benchmark stops it too.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    port: u16,
    child: Child,
}

impl RedisServer {
    /// Start a server on a free loopback port and wait until it answers `PING`.
    pub fn start() -> RedisServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start redis-server ({e}): the fleet benchmark needs a real Redis \
                     server; install it with `apt-get install -y redis-server` (Debian's package)"
                )
            });
        let server = RedisServer { port, child };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let pong =
                connect(&server.url()).and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
            match pong {
                Ok(_) => return server,
                Err(e) => assert!(
                    Instant::now() < deadline,
                    "redis-server did not answer PING on port {port} within 10 s: {e}"
                ),
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

/// A blocking connection of the benchmark's own to the server at `url`.
pub fn connect(url: &str) -> redis::RedisResult<redis::Connection> {
    redis::Client::open(url)?.get_connection_with_timeout(Duration::from_secs(1))
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Calls per command name since the server started, from `INFO commandstats` on `connection`
/// (`cmdstat_evalsha:calls=12,...` → `evalsha: 12`). The server counts the commands a script runs
/// (`redis.call`) under their own names, as well as the `EVALSHA` that ran it.
pub fn command_counts(connection: &mut redis::Connection) -> BTreeMap<String, u64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(connection)
        .expect("INFO commandstats");
    info.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("cmdstat_")?;
            let (name, stats) = rest.split_once(':')?;
            let calls = stats.split(',').find_map(|kv| kv.strip_prefix("calls="))?;
            Some((name.to_owned(), calls.parse().ok()?))
        })
        .collect()
}
