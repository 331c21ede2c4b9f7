//! The exporter's HTTP side on a real socket: concurrent scrapes all get the whole current
//! text, OpenMetrics only when asked for, and the endpoint is read-only.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use virtlens_host::testing::{Http, Texts};

fn request(addr: SocketAddr, head: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "{head}\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (h, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = h.split_whitespace().nth(1).unwrap().parse().unwrap();
    let kind = h
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-type")
                .then(|| value.trim().to_string())
        })
        .unwrap_or_default();
    (status, kind, body.to_string())
}

#[test]
fn concurrent_scrapes_read_the_same_text_and_nothing_else_is_served() {
    let classic = "# TYPE a_total counter\na_total 1\n".repeat(2000);
    let texts = Arc::new(RwLock::new(Texts {
        openmetrics: "# TYPE a counter\na_total 1\n# EOF\n".into(),
        classic: classic.clone().into(),
    }));
    let http = Http::start("127.0.0.1:0".parse().unwrap(), texts).unwrap();
    let addr = http.addr;
    assert!(addr.ip().is_loopback());
    let scrapers: Vec<_> = (0..12)
        .map(|_| {
            let want = classic.clone();
            std::thread::spawn(move || {
                for _ in 0..10 {
                    let (status, kind, body) = request(addr, "GET /metrics HTTP/1.1");
                    assert_eq!(status, 200);
                    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
                    assert!(
                        body == want,
                        "a scrape got {} bytes of {}",
                        body.len(),
                        want.len()
                    );
                }
            })
        })
        .collect();
    for s in scrapers {
        s.join().unwrap();
    }
    let (status, kind, body) = request(
        addr,
        "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5",
    );
    assert_eq!(status, 200);
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    assert!(body.ends_with("# EOF\n"));
    assert_eq!(request(addr, "GET /other HTTP/1.1").0, 404);
    assert_eq!(
        request(addr, "POST /metrics HTTP/1.1\r\nContent-Length: 0").0,
        405
    );
    assert_eq!(request(addr, "DELETE /metrics HTTP/1.1").0, 405);
    http.stop();
}

/// A server answering from a small text, for the abuse tests.
fn small_server() -> Http {
    let texts = Arc::new(RwLock::new(Texts {
        openmetrics: "# TYPE a counter\na_total 1\n# EOF\n".into(),
        classic: "# TYPE a_total counter\na_total 1\n".into(),
    }));
    Http::start("127.0.0.1:0".parse().unwrap(), texts).unwrap()
}

/// Sends `raw` and reads until the server closes (or `patience` passes: then `None`).
fn exchange(addr: SocketAddr, raw: &[u8], patience: Duration) -> Option<String> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(patience)).unwrap();
    s.write_all(raw).unwrap();
    let mut out = Vec::new();
    match s.read_to_end(&mut out) {
        Ok(_) => Some(String::from_utf8_lossy(&out).into_owned()),
        // Closed with unread bytes still on our side: a reset is a close too.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
            Some(String::from_utf8_lossy(&out).into_owned())
        }
        Err(_) => None,
    }
}

#[test]
fn a_claimed_body_is_never_read_or_allocated() {
    let http = small_server();
    let addr = http.addr;
    // repro A4: 99,999,999,999 bytes claimed; A5: 2^64 - 1.
    for claim in ["99999999999", "18446744073709551615"] {
        let head = format!("GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: {claim}\r\n\r\n");
        let got = exchange(addr, head.as_bytes(), Duration::from_secs(30))
            .expect("the server answers and closes");
        let status = got.split_whitespace().nth(1).unwrap_or("");
        // Answered without the body, or refused (hyper: 431 for a length past u64's range).
        assert!(["200", "400", "431"].contains(&status), "{claim}: {got}");
    }
    // Still up, still answering.
    assert_eq!(request(addr, "GET /metrics HTTP/1.1").0, 200);
    assert!(http.failure().is_none());
    http.stop();
}

#[test]
fn bytes_that_are_not_http_get_a_400_and_a_close() {
    let http = small_server();
    let addr = http.addr;
    let tls_hello: &[u8] = &[
        0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03,
    ];
    let nul = [0u8; 64];
    let junk = b"\xff\xfe\x00garbage\r\n\r\n";
    for raw in [tls_hello, &nul[..], &junk[..]] {
        let got = exchange(addr, raw, Duration::from_secs(30)).expect("closed, not held open");
        assert!(got.starts_with("HTTP/1.1 400"), "{got:?}");
    }
    assert_eq!(request(addr, "GET /metrics HTTP/1.1").0, 200);
    http.stop();
}

#[test]
fn http_1_0_keep_alive_is_answered_and_kept() {
    let http = small_server();
    let mut s = TcpStream::connect(http.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = vec![0u8; 4096];
    for _ in 0..2 {
        s.write_all(b"GET /metrics HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
            .unwrap();
        let n = s.read(&mut buf).unwrap();
        let got = String::from_utf8_lossy(&buf[..n]).to_lowercase();
        assert!(got.starts_with("http/1.0 200"), "{got}");
        assert!(got.contains("connection: keep-alive"), "{got}");
        assert!(got.ends_with("a_total 1\n"), "the whole body: {got}");
    }
    http.stop();
}

#[test]
fn idle_and_half_sent_connections_are_closed_after_the_header_timeout() {
    let http = small_server();
    let patience = virtlens_host::testing::HEADER_TIMEOUT * 4;
    for raw in [&b""[..], b"GET /metrics HTTP/1.1\r\nX-Slow: "] {
        // Closed by the server (read_to_end returns), not left open until our patience ends.
        let got = exchange(http.addr, raw, patience);
        assert!(
            got.is_some(),
            "{:?} was held open",
            String::from_utf8_lossy(raw)
        );
    }
    http.stop();
}

#[test]
fn a_flood_of_idle_connections_does_not_keep_a_scraper_out() {
    let _alone = virtlens_testkit::exclusive();
    let http = small_server();
    let cap = virtlens_host::testing::max_connections();
    // More idle connections than the server keeps: the oldest are closed to make room.
    let held: Vec<TcpStream> = (0..cap + 100)
        .map(|_| TcpStream::connect(http.addr).unwrap())
        .collect();
    for _ in 0..5 {
        assert_eq!(request(http.addr, "GET /metrics HTTP/1.1").0, 200);
    }
    assert!(http.failure().is_none());
    drop(held);
    http.stop();
}
