//! Counters for `GET /metrics` (Prometheus text format, version 0.0.4).
//!
//! Requests are counted by route template (`/v1/users/{user}/verify`, never
//! a user or gallery name) and status class, with a latency histogram per
//! route; verifications add the time of each of their phases. Everything is a
//! relaxed atomic: a request pays a few increments, no lock.
//!
//! The text is written here rather than by `prometheus-client`: that crate
//! writes OpenMetrics (another content type, `# EOF`, its own naming of
//! counters), which would change what every scraper of `/metrics` reads
//! today; and its labelled families take a read lock on every update, where
//! these counters take none. The format written is small and pinned by the server tests.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Upper bounds of the latency buckets, in microseconds (`+Inf` follows).
const BUCKETS_US: [u64; 12] = [
    250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000, 5_000_000,
];

/// The routes counted apart, by template ([`super::routes::ROUTES`]),
/// then `other` for anything else (static files, unknown paths).
pub const ROUTES: [&str; super::routes::ROUTES.len() + 1] = route_labels();

const fn route_labels() -> [&'static str; super::routes::ROUTES.len() + 1] {
    let table = &super::routes::ROUTES;
    let mut out = [super::routes::OTHER; super::routes::ROUTES.len() + 1];
    let mut i = 0;
    while i < table.len() {
        out[i] = table[i].path;
        i += 1;
    }
    out
}

/// The phases of a verification, as in its `Server-Timing` header.
pub const PHASES: [&str; 5] = ["queue", "parse", "match", "audit", "db"];

#[derive(Default)]
struct Route {
    /// By status class: 1xx .. 5xx.
    status: [AtomicU64; 5],
    /// Cumulative counts are made at exposition; these are per bucket, the
    /// last one past every bound.
    buckets: [AtomicU64; BUCKETS_US.len() + 1],
    sum_us: AtomicU64,
}

/// The server's counters.
#[derive(Default)]
pub struct Metrics {
    routes: [Route; ROUTES.len()],
    phases_us: [AtomicU64; PHASES.len()],
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics { .. }")
    }
}

/// Gauges read at exposition time.
#[derive(Debug, Clone)]
pub struct Gauges {
    pub backend: crate::Backend,
    pub params_id: String,
    pub threads: usize,
    /// Matching slots free at this moment.
    pub slots_free: usize,
    pub cached_users: usize,
    /// Audit rows journaled and not yet in the database.
    pub audit_journaled: usize,
    /// Audit flushes that failed since the server started.
    pub audit_flush_failures: u64,
    /// 1:N: galleries and their templates (None without `--service-key`).
    pub galleries: Option<(usize, usize)>,
    /// Requests refused with 503 `overloaded`, by queue name.
    pub overloaded: [(&'static str, u64); 2],
}

impl Metrics {
    /// The index of `route` in [`ROUTES`] (`other` if it is not there).
    pub fn route_index(route: Option<&str>) -> usize {
        route
            .and_then(|r| ROUTES.iter().position(|&x| x == r))
            .unwrap_or(ROUTES.len() - 1)
    }

    /// Counts one answered request.
    pub fn request(&self, route: usize, status: u16, micros: u64) {
        let r = &self.routes[route.min(ROUTES.len() - 1)];
        let class = (status / 100).clamp(1, 5) as usize - 1;
        r.status[class].fetch_add(1, Relaxed);
        let b = BUCKETS_US
            .iter()
            .position(|&le| micros <= le)
            .unwrap_or(BUCKETS_US.len());
        r.buckets[b].fetch_add(1, Relaxed);
        r.sum_us.fetch_add(micros, Relaxed);
    }

    /// Adds a verification's phase times (microseconds, in [`PHASES`] order).
    pub fn verify_phases(&self, us: [u64; PHASES.len()]) {
        for (c, v) in self.phases_us.iter().zip(us) {
            c.fetch_add(v, Relaxed);
        }
    }

    /// The exposition text.
    pub fn render(&self, g: &Gauges) -> String {
        let mut o = String::with_capacity(16 * 1024);
        let secs = |us: u64| us as f64 / 1e6;
        let _ = writeln!(
            o,
            "# HELP blindmatch_build_info The running server: version, kernel set and parameter id.\n\
             # TYPE blindmatch_build_info gauge\n\
             blindmatch_build_info{{version=\"{}\",backend=\"{}\",params=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION"),
            g.backend.name(),
            g.params_id
        );
        let _ = writeln!(
            o,
            "# HELP blindmatch_kernels The backend each kernel family runs on.\n\
             # TYPE blindmatch_kernels gauge"
        );
        for (family, backend) in g.backend.kernels() {
            let _ = writeln!(
                o,
                "blindmatch_kernels{{family=\"{}\",backend=\"{backend}\"}} 1",
                family.name()
            );
        }
        let _ = writeln!(
            o,
            "# HELP blindmatch_http_requests_total HTTP requests answered, by route template and status class.\n\
             # TYPE blindmatch_http_requests_total counter"
        );
        for (name, r) in ROUTES.iter().zip(&self.routes) {
            for (i, c) in r.status.iter().enumerate() {
                let n = c.load(Relaxed);
                if n > 0 {
                    let _ = writeln!(
                        o,
                        "blindmatch_http_requests_total{{route=\"{name}\",status=\"{}xx\"}} {n}",
                        i + 1
                    );
                }
            }
        }
        let _ = writeln!(
            o,
            "# HELP blindmatch_http_request_duration_seconds From the request reaching the handlers to its reply handed to the connection.\n\
             # TYPE blindmatch_http_request_duration_seconds histogram"
        );
        for (name, r) in ROUTES.iter().zip(&self.routes) {
            let counts: Vec<u64> = r.buckets.iter().map(|b| b.load(Relaxed)).collect();
            let total: u64 = counts.iter().sum();
            if total == 0 {
                continue;
            }
            let mut cum = 0;
            for (le, n) in BUCKETS_US.iter().zip(&counts) {
                cum += n;
                let _ = writeln!(
                    o,
                    "blindmatch_http_request_duration_seconds_bucket{{route=\"{name}\",le=\"{}\"}} {cum}",
                    secs(*le)
                );
            }
            let _ = writeln!(
                o,
                "blindmatch_http_request_duration_seconds_bucket{{route=\"{name}\",le=\"+Inf\"}} {total}\n\
                 blindmatch_http_request_duration_seconds_sum{{route=\"{name}\"}} {}\n\
                 blindmatch_http_request_duration_seconds_count{{route=\"{name}\"}} {total}",
                secs(r.sum_us.load(Relaxed))
            );
        }
        let _ = writeln!(
            o,
            "# HELP blindmatch_verify_phase_seconds_total Time of successful verifications, by phase (as in Server-Timing).\n\
             # TYPE blindmatch_verify_phase_seconds_total counter"
        );
        for (name, c) in PHASES.iter().zip(&self.phases_us) {
            let _ = writeln!(
                o,
                "blindmatch_verify_phase_seconds_total{{phase=\"{name}\"}} {}",
                secs(c.load(Relaxed))
            );
        }
        let _ = writeln!(
            o,
            "# HELP blindmatch_matching_threads Verifications that can compute at once.\n\
             # TYPE blindmatch_matching_threads gauge\n\
             blindmatch_matching_threads {}\n\
             # HELP blindmatch_matching_threads_free Of those, free at this moment.\n\
             # TYPE blindmatch_matching_threads_free gauge\n\
             blindmatch_matching_threads_free {}\n\
             # HELP blindmatch_cached_users Users whose parsed keys and template are in memory.\n\
             # TYPE blindmatch_cached_users gauge\n\
             blindmatch_cached_users {}\n\
             # HELP blindmatch_audit_rows_journaled Audit rows in the journal, not yet in the database.\n\
             # TYPE blindmatch_audit_rows_journaled gauge\n\
             blindmatch_audit_rows_journaled {}\n\
             # HELP blindmatch_audit_flush_failures_total Failed moves of journaled audit rows into the database.\n\
             # TYPE blindmatch_audit_flush_failures_total counter\n\
             blindmatch_audit_flush_failures_total {}",
            g.threads, g.slots_free, g.cached_users, g.audit_journaled, g.audit_flush_failures
        );
        let _ = writeln!(
            o,
            "# HELP blindmatch_overloaded_total Requests refused with 503 because a queue was full.\n\
             # TYPE blindmatch_overloaded_total counter"
        );
        for (queue, n) in g.overloaded {
            let _ = writeln!(o, "blindmatch_overloaded_total{{queue=\"{queue}\"}} {n}");
        }
        if let Some((galleries, templates)) = g.galleries {
            let _ = writeln!(
                o,
                "# HELP blindmatch_galleries 1:N galleries in memory.\n\
                 # TYPE blindmatch_galleries gauge\n\
                 blindmatch_galleries {galleries}\n\
                 # HELP blindmatch_gallery_templates 1:N templates in all galleries (erased ones not counted).\n\
                 # TYPE blindmatch_gallery_templates gauge\n\
                 blindmatch_gallery_templates {templates}"
            );
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative_and_routes_are_templates() {
        let m = Metrics::default();
        let verify = Metrics::route_index(Some("/v1/users/{user}/verify"));
        assert_eq!(ROUTES[verify], "/v1/users/{user}/verify");
        assert_eq!(
            ROUTES[Metrics::route_index(Some("/v1/users/alice/verify"))],
            "other"
        );
        assert_eq!(ROUTES[Metrics::route_index(None)], "other");
        for us in [100, 250, 251, 7_000, 9_000_000] {
            m.request(verify, 200, us);
        }
        m.request(verify, 404, 10);
        m.verify_phases([1, 2, 3_000_000, 4, 5]);
        let text = m.render(&Gauges {
            backend: crate::Backend::scalar(),
            params_id: "00".into(),
            threads: 2,
            slots_free: 1,
            cached_users: 0,
            audit_journaled: 7,
            audit_flush_failures: 0,
            galleries: None,
            overloaded: [("verify", 3), ("work", 0)],
        });
        let line = |prefix: &str| {
            text.lines()
                .find(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("{prefix} missing:\n{text}"))
                .rsplit(' ')
                .next()
                .unwrap()
                .to_string()
        };
        let r = "route=\"/v1/users/{user}/verify\"";
        assert_eq!(
            line(&format!(
                "blindmatch_http_requests_total{{{r},status=\"2xx\"}}"
            )),
            "5"
        );
        assert_eq!(
            line(&format!(
                "blindmatch_http_requests_total{{{r},status=\"4xx\"}}"
            )),
            "1"
        );
        let bucket = |le: &str| {
            line(&format!(
                "blindmatch_http_request_duration_seconds_bucket{{{r},le=\"{le}\"}}"
            ))
        };
        assert_eq!(bucket("0.00025"), "3");
        assert_eq!(bucket("0.0005"), "4");
        assert_eq!(bucket("0.01"), "5");
        assert_eq!(bucket("5"), "5");
        assert_eq!(bucket("+Inf"), "6");
        assert_eq!(
            line(&format!(
                "blindmatch_http_request_duration_seconds_count{{{r}}}"
            )),
            "6"
        );
        assert_eq!(
            line("blindmatch_verify_phase_seconds_total{phase=\"match\"}"),
            "3"
        );
        assert_eq!(line("blindmatch_audit_rows_journaled"), "7");
        assert_eq!(line("blindmatch_overloaded_total{queue=\"verify\"}"), "3");
        assert!(!text.contains("blindmatch_galleries"));
    }
}
