//! HTTP classification: the status table, `Retry-After`, overrides, and reqwest transport errors
//! over real loopback sockets; an HTTP tool call through the guard, as the README shows it.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{HeaderMap, Response, StatusCode};
use toolbreaker::classify;
use toolbreaker::classify::http::{
    HttpClassifier, classify_response, classify_status, retry_after,
};
use toolbreaker::classify::reqwest::{TextResponse, classify_reqwest, classify_reqwest_error};
use toolbreaker::{
    AgentRun, CircuitBreaker, FailureKind, Outcome, RetryPolicy, ToolGuard, ToolResult,
};

const TIMEOUT: Outcome = Outcome::Failure(FailureKind::Timeout);
const UNAVAILABLE: Outcome = Outcome::Failure(FailureKind::Unavailable);

/// The table in the module docs, written out independently.
fn expected(code: u16) -> Outcome {
    match code {
        408 | 504 => TIMEOUT,
        429 => Outcome::Failure(FailureKind::RateLimited { retry_after: None }),
        200..=399 => Outcome::Success,
        500..=599 => UNAVAILABLE,
        100..=199 | 400..=499 => Outcome::Ignored,
        _ => unreachable!(),
    }
}

#[test]
fn every_status_code_follows_the_table() {
    for code in 100..=599 {
        let status = StatusCode::from_u16(code).unwrap();
        assert_eq!(classify_status(status), expected(code), "{code}");
    }
}

#[test]
fn the_named_codes_of_the_contract() {
    for code in [200, 201, 204, 301, 304] {
        assert_eq!(
            classify_status(StatusCode::from_u16(code).unwrap()),
            Outcome::Success
        );
    }
    for code in [408, 504] {
        assert_eq!(
            classify_status(StatusCode::from_u16(code).unwrap()),
            TIMEOUT,
            "{code}"
        );
    }
    for code in [500, 502, 503, 599] {
        assert_eq!(
            classify_status(StatusCode::from_u16(code).unwrap()),
            UNAVAILABLE,
            "{code}"
        );
    }
    for code in [400, 401, 403, 404, 409, 422, 451] {
        assert_eq!(
            classify_status(StatusCode::from_u16(code).unwrap()),
            Outcome::Ignored,
            "{code} is the request's fault and never trips"
        );
    }
}

fn headers(value: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("retry-after", value.parse().unwrap());
    h
}

#[test]
fn retry_after_reads_seconds_and_http_dates_and_rejects_the_malformed() {
    let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
    assert_eq!(retry_after(&headers("0"), now), Some(Duration::ZERO));
    assert_eq!(
        retry_after(&headers("2"), now),
        Some(Duration::from_secs(2))
    );
    assert_eq!(
        retry_after(&headers(" 7 "), now),
        Some(Duration::from_secs(7))
    );
    let in_90s = httpdate::fmt_http_date(now + Duration::from_secs(90));
    assert_eq!(
        retry_after(&headers(&in_90s), now),
        Some(Duration::from_secs(90))
    );
    let past = httpdate::fmt_http_date(now - Duration::from_secs(90));
    assert_eq!(retry_after(&headers(&past), now), Some(Duration::ZERO));
    for bad in [
        "",
        "-1",
        "1.5",
        "soon",
        "99999999999999999999999",
        "Thu, 99 Foo 2026",
    ] {
        assert_eq!(retry_after(&headers(bad), now), None, "{bad:?}");
    }
    assert_eq!(retry_after(&HeaderMap::new(), now), None);
}

/// A 429 from an LLM API carries its wait in other headers than `Retry-After` (OpenAI's
/// `retry-after-ms` and `x-ratelimit-reset-*`, the IETF draft's `RateLimit`): the longest is the
/// hint, through the classifier as through the function, and one it cannot read is counted.
#[test]
fn a_429_carries_the_longest_wait_of_its_rate_limit_headers() {
    let resp = |pairs: &[(&str, &str)]| {
        let mut builder = Response::builder().status(429);
        for (name, value) in pairs {
            builder = builder.header(*name, *value);
        }
        builder.body(()).unwrap()
    };
    let limited = |ms: u64| {
        Outcome::Failure(FailureKind::RateLimited {
            retry_after: Some(Duration::from_millis(ms)),
        })
    };
    let openai = resp(&[
        ("retry-after", "1"),
        ("retry-after-ms", "1500"),
        ("x-ratelimit-reset-requests", "20ms"),
        ("x-ratelimit-reset-tokens", "6m0s"),
    ]);
    assert_eq!(classify_response(&openai), limited(360_000));
    assert_eq!(HttpClassifier::new().response(&openai), limited(360_000));
    let ietf = resp(&[("ratelimit", "\"default\";r=0;t=42")]);
    assert_eq!(classify_response(&ietf), limited(42_000));
    let before = classify::http::ignored_hints();
    let bad = resp(&[
        ("x-ratelimit-reset-tokens", "soon"),
        ("retry-after-ms", "700"),
    ]);
    assert_eq!(
        classify_response(&bad),
        limited(700),
        "the bad value is left out"
    );
    assert!(classify::http::ignored_hints() > before, "and counted");
}

#[test]
fn a_429_carries_its_hint_and_other_statuses_ignore_the_header() {
    let resp = |status: u16, value: &str| {
        Response::builder()
            .status(status)
            .header("retry-after", value)
            .body(())
            .unwrap()
    };
    assert_eq!(
        classify_response(&resp(429, "3")),
        Outcome::Failure(FailureKind::RateLimited {
            retry_after: Some(Duration::from_secs(3))
        })
    );
    assert_eq!(
        classify_response(&resp(429, "garbage")),
        Outcome::Failure(FailureKind::RateLimited { retry_after: None }),
        "a malformed hint is dropped, the 429 still counts"
    );
    assert_eq!(classify_response(&resp(503, "3")), UNAVAILABLE);
    let date = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(3_600));
    let Outcome::Failure(FailureKind::RateLimited {
        retry_after: Some(wait),
    }) = classify_response(&resp(429, &date))
    else {
        panic!("a dated hint");
    };
    assert!(wait > Duration::from_secs(3_500) && wait <= Duration::from_secs(3_600));
}

#[test]
fn per_dependency_overrides_win_and_the_rest_follows_the_table() {
    let classify = HttpClassifier::new()
        .status(StatusCode::NOT_FOUND, UNAVAILABLE)
        .status(StatusCode::SERVICE_UNAVAILABLE, Outcome::Ignored)
        .status(
            StatusCode::CONFLICT,
            Outcome::Failure(FailureKind::RateLimited { retry_after: None }),
        );
    for code in 100..=599 {
        let status = StatusCode::from_u16(code).unwrap();
        let want = match code {
            404 => UNAVAILABLE,
            503 => Outcome::Ignored,
            409 => Outcome::Failure(FailureKind::RateLimited { retry_after: None }),
            _ => expected(code),
        };
        assert_eq!(classify.classify_status(status), want, "{code}");
    }
    let conflict = Response::builder()
        .status(409)
        .header("retry-after", "4")
        .body(())
        .unwrap();
    assert_eq!(
        classify.response(&conflict).retry_after(),
        Some(Duration::from_secs(4))
    );
}

/// An override's own `retry_after` is a default: kept when the response has no usable
/// `Retry-After`, replaced by the header's wait when it has one (the server's word is newer).
#[test]
fn a_rate_limited_override_keeps_its_own_hint_unless_the_response_gives_one() {
    let two_seconds = Outcome::Failure(FailureKind::RateLimited {
        retry_after: Some(Duration::from_secs(2)),
    });
    let classify = HttpClassifier::new()
        .status(StatusCode::TOO_MANY_REQUESTS, two_seconds)
        .status(StatusCode::SERVICE_UNAVAILABLE, two_seconds);
    let response = |status: u16, header: Option<&str>| {
        let mut builder = Response::builder().status(status);
        if let Some(value) = header {
            builder = builder.header("retry-after", value);
        }
        builder.body(()).unwrap()
    };
    for status in [429, 503] {
        assert_eq!(
            classify.response(&response(status, None)),
            two_seconds,
            "{status} without a header keeps the override's 2 s"
        );
        assert_eq!(
            classify.response(&response(status, Some("soon"))),
            two_seconds,
            "{status} with a malformed header keeps the override's 2 s"
        );
        assert_eq!(
            classify
                .response(&response(status, Some("7")))
                .retry_after(),
            Some(Duration::from_secs(7)),
            "{status}: the header wins"
        );
        assert_eq!(
            classify
                .response(&response(status, Some("0")))
                .retry_after(),
            Some(Duration::ZERO),
            "{status}: a header of 0 wins too: retry at once"
        );
    }
    // Through the `Classify` impl (what the tower layer calls), the same.
    let result: Result<Response<()>, ()> = Ok(response(429, None));
    assert_eq!(
        toolbreaker::Classify::classify(&classify, &result),
        two_seconds
    );
    // An override without a hint of its own still takes the header's.
    let bare = HttpClassifier::new().status(
        StatusCode::CONFLICT,
        Outcome::Failure(FailureKind::RateLimited { retry_after: None }),
    );
    assert_eq!(bare.response(&response(409, None)).retry_after(), None);
    assert_eq!(
        bare.response(&response(409, Some("4"))).retry_after(),
        Some(Duration::from_secs(4))
    );
}

/// The same through `reqwest`: a 429 without `Retry-After` keeps the override's hint.
#[test]
fn a_rate_limited_override_keeps_its_own_hint_over_reqwest() {
    let two_seconds = Outcome::Failure(FailureKind::RateLimited {
        retry_after: Some(Duration::from_secs(2)),
    });
    let classify = HttpClassifier::new().status(StatusCode::TOO_MANY_REQUESTS, two_seconds);
    for (reply, want) in [
        (
            "HTTP/1.1 429 Too Many Requests\r\ncontent-length: 0\r\n\r\n",
            Some(Duration::from_secs(2)),
        ),
        (
            "HTTP/1.1 429 Too Many Requests\r\nretry-after: 1\r\ncontent-length: 0\r\n\r\n",
            Some(Duration::from_secs(1)),
        ),
    ] {
        let (addr, server) = raw_server(Some(reply));
        let result = runtime().block_on(reqwest::get(format!("http://{addr}/")));
        assert_eq!(classify.reqwest(&result).retry_after(), want, "{reply:?}");
        server.join().unwrap();
    }
}

// ---- reqwest, over real loopback sockets ----

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}

/// A loopback server that answers each connection with `reply` (or holds it open if `None`).
fn raw_server(reply: Option<&'static str>) -> (std::net::SocketAddr, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut buf = [0; 1024];
        let _ = stream.read(&mut buf);
        match reply {
            Some(reply) => {
                stream.write_all(reply.as_bytes()).unwrap();
            }
            // Hold the connection without answering until the client gives up and closes it.
            None => while stream.read(&mut buf).map(|n| n > 0).unwrap_or(false) {},
        }
    });
    (addr, handle)
}

#[test]
fn reqwest_connection_refused_is_a_connect_failure() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    // The listener is dropped: nothing listens on that port.
    let result = runtime().block_on(reqwest::get(format!("http://{addr}/")));
    assert_eq!(
        classify_reqwest(&result),
        Outcome::Failure(FailureKind::Connect)
    );
}

#[test]
fn reqwest_timeout_is_a_timeout_failure() {
    let (addr, server) = raw_server(None);
    let result = runtime().block_on(async {
        // Paused time: the 5 s timeout fires as soon as the runtime is idle, without waiting.
        reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap()
            .get(format!("http://{addr}/"))
            .send()
            .await
    });
    assert_eq!(classify_reqwest(&result), TIMEOUT);
    drop(result);
    server.join().unwrap();
}

#[test]
fn reqwest_status_responses_follow_the_table() {
    for (reply, want) in [
        (
            "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n",
            UNAVAILABLE,
        ),
        (
            "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n",
            Outcome::Ignored,
        ),
        (
            "HTTP/1.1 429 Too Many Requests\r\nretry-after: 1\r\ncontent-length: 0\r\n\r\n",
            Outcome::Failure(FailureKind::RateLimited {
                retry_after: Some(Duration::from_secs(1)),
            }),
        ),
        (
            "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
            Outcome::Success,
        ),
    ] {
        let (addr, server) = raw_server(Some(reply));
        let result = runtime().block_on(reqwest::get(format!("http://{addr}/")));
        assert_eq!(classify_reqwest(&result), want, "{reply:?}");
        assert_eq!(HttpClassifier::new().reqwest(&result), want);
        server.join().unwrap();
    }
}

#[test]
fn reqwest_malformed_responses_are_classified_not_panics() {
    // A body cut short of its declared length, and a reply that is not HTTP at all.
    let (addr, server) = raw_server(Some("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort"));
    let err = runtime().block_on(async {
        let response = reqwest::get(format!("http://{addr}/")).await.unwrap();
        response.text().await.unwrap_err()
    });
    assert_eq!(
        classify_reqwest_error(&err),
        Outcome::Failure(FailureKind::Other)
    );
    server.join().unwrap();

    let (addr, server) = raw_server(Some("this is not http\r\n\r\n"));
    let result = runtime().block_on(reqwest::get(format!("http://{addr}/")));
    assert_eq!(
        classify_reqwest(&result),
        Outcome::Failure(FailureKind::Other)
    );
    server.join().unwrap();
}

#[test]
fn reqwest_requests_that_cannot_be_built_are_ignored() {
    let result = runtime().block_on(reqwest::get("http://[::1"));
    assert_eq!(classify_reqwest(&result), Outcome::Ignored);
}

// ---- an HTTP tool call through the guard, as the README shows it ----

/// The README's `search` tool, as written there: one GET through the guard, its body for the
/// model.
async fn search(
    guard: &ToolGuard,
    run: &AgentRun,
    breaker: &CircuitBreaker,
    client: &reqwest::Client,
    url: &str,
) -> ToolResult<String> {
    let http = HttpClassifier::new();
    guard
        .call(run, breaker, classify::with(&http), || async {
            TextResponse::read(client.get(url).send().await?).await
        })
        .await
        .map(TextResponse::into_body)
}

/// A search service on a loopback socket: `/search` answers, `/limited` sheds load with a
/// `Retry-After` of 7 s, `/missing` is a 404 with a body that says why.
async fn search_service() -> std::net::SocketAddr {
    use axum::http::header::RETRY_AFTER;
    let router = axum::Router::new()
        .route(
            "/search",
            axum::routing::get(|| async { "3 hits for rust" }),
        )
        .route(
            "/limited",
            axum::routing::get(|| async {
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    [(RETRY_AFTER, "7")],
                    "slow down",
                )
            }),
        )
        .route(
            "/missing",
            axum::routing::get(|| async { (StatusCode::NOT_FOUND, "no index named `rust`") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}

/// The bug a new user hit: `ToolGuard::call` with `HttpClassifier` around `client.get(url)
/// .send()` gave a `ToolResult<reqwest::Response>`, which does not serialise, and turning it
/// into the body lost a 429's `Retry-After`. Read through `TextResponse` and mapped, every kind
/// of answer is JSON for the model: the body, the 429 with its status and hint, the 404's body.
#[tokio::test]
async fn an_http_tool_call_through_the_guard_is_json_for_the_model_with_the_hint_kept() {
    let addr = search_service().await;
    let (clock, _mock) = quanta::Clock::mock();
    let breaker = CircuitBreaker::builder()
        .name("search")
        .clock(clock)
        .build()
        .unwrap();
    // No retries: a retry would honour the 7 s hint by waiting for it.
    let guard = ToolGuard::new(Duration::from_secs(30), RetryPolicy::none());
    let run = AgentRun::new("run-1", Duration::from_secs(300), 10);
    let client = reqwest::Client::new();

    let ok = search(
        &guard,
        &run,
        &breaker,
        &client,
        &format!("http://{addr}/search"),
    )
    .await;
    let json: serde_json::Value = serde_json::from_str(&ok.to_json().unwrap()).unwrap();
    assert_eq!(json["status"], "ok", "{json}");
    assert_eq!(json["value"], "3 hits for rust");

    let limited = search(
        &guard,
        &run,
        &breaker,
        &client,
        &format!("http://{addr}/limited"),
    )
    .await;
    let json: serde_json::Value = serde_json::from_str(&limited.to_json().unwrap()).unwrap();
    assert_eq!(json["status"], "failed", "{json}");
    assert_eq!(json["dependency"], "search");
    assert_eq!(json["kind"], "rate_limited");
    assert_eq!(json["http_status"], 429);
    assert_eq!(
        json["retry_after_ms"], 7_000,
        "the Retry-After hint reaches the model"
    );
    assert_eq!(json["counted"], true);
    let message = json["message"].as_str().unwrap();
    assert!(message.ends_with("or try after 7.0 s."), "{message}");
    assert!(
        !message.contains(&addr.to_string()),
        "no URL reaches the model: {message}"
    );

    // A 404 is the call's own fault: passed on as the dependency's word, its body for the model.
    let missing = search(
        &guard,
        &run,
        &breaker,
        &client,
        &format!("http://{addr}/missing"),
    )
    .await;
    assert!(
        matches!(&missing, ToolResult::Ok { value, .. } if value == "no index named `rust`"),
        "{missing:?}"
    );
}
