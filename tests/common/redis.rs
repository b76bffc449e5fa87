//! A real `redis-server` for the fleet tests: started on a free loopback port with no
//! persistence, stopped (SIGKILL) when dropped. A test that cannot find the server fails and says
//! how to install it; it never skips.

#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    pub port: u16,
    args: Vec<String>,
    child: Option<Child>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("a free loopback port")
        .local_addr()
        .unwrap()
        .port()
}

impl RedisServer {
    /// Start a server on a free port.
    pub fn start() -> RedisServer {
        RedisServer::start_with(&[])
    }

    /// Start a server on a free port with more command-line settings (`--requirepass x`).
    pub fn start_with(args: &[&str]) -> RedisServer {
        let mut server = RedisServer {
            port: free_port(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            child: None,
        };
        server.restart();
        server
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Start (again) on the same port, with an empty data set.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "the server is running");
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start redis-server ({e}): the fleet tests need a real Redis server; \
                     install it with `apt-get install -y redis-server` (Debian's package)"
                )
            });
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        // Accepting connections is enough (a server that requires a password answers PING
        // with an error).
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// SIGKILL the server.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn connection(&self) -> redis::RedisResult<redis::Connection> {
        let client = redis::Client::open(self.url())?;
        client.get_connection_with_timeout(Duration::from_secs(1))
    }

    /// Run one command with a fresh blocking connection.
    pub fn cmd<T: redis::FromRedisValue>(&self, args: &[&str]) -> T {
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        cmd.query(&mut self.connection().expect("connect"))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// Calls per command name from `INFO commandstats`.
    pub fn command_counts(&self) -> std::collections::BTreeMap<String, u64> {
        let info: String = self.cmd(&["INFO", "commandstats"]);
        info.lines()
            .filter_map(|line| {
                let rest = line.strip_prefix("cmdstat_")?;
                let (name, stats) = rest.split_once(':')?;
                let calls = stats.split(',').find_map(|kv| kv.strip_prefix("calls="))?;
                Some((name.to_owned(), calls.parse().ok()?))
            })
            .collect()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}
