//! The exporter's HTTP side on a real socket: concurrent scrapes all get the whole current
//! text, OpenMetrics only when asked for, and the endpoint is read-only.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, RwLock};

use virtlens_host::serve::http::{Http, Texts};

fn request(addr: SocketAddr, head: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "{head}\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (h, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = h.split_whitespace().nth(1).unwrap().parse().unwrap();
    let kind = h
        .lines()
        .find_map(|l| l.strip_prefix("Content-Type: "))
        .unwrap_or("")
        .to_string();
    (status, kind, body.to_string())
}

#[test]
fn concurrent_scrapes_read_the_same_text_and_nothing_else_is_served() {
    let classic = "# TYPE a_total counter\na_total 1\n".repeat(2000);
    let texts = Arc::new(RwLock::new(Texts {
        openmetrics: Arc::new("# TYPE a counter\na_total 1\n# EOF\n".into()),
        classic: Arc::new(classic.clone()),
    }));
    let http = Http::start("127.0.0.1:0".parse().unwrap(), 2, texts).unwrap();
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
