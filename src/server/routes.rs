//! The route table: every API route's path template and methods, in the
//! order `GET /metrics` reports them. The router (`api::router`) routes
//! these paths and no other; the metrics count by them.

/// An API route.
#[derive(Clone, Copy, Debug)]
pub struct Route {
    /// The path template, as axum matches it (`{user}`: one segment).
    pub path: &'static str,
    /// The methods it answers (others get 405 `method_not_allowed`).
    pub methods: &'static [&'static str],
    /// A 1:N route: answered by the galleries (`serve --service-key`), or
    /// with 404 `identify_disabled` without them.
    pub one_to_n: bool,
}

pub const HEALTHZ: &str = "/healthz";
pub const METRICS: &str = "/metrics";
pub const PARAMS: &str = "/v1/params";
pub const USER: &str = "/v1/users/{user}";
pub const USER_KEYS: &str = "/v1/users/{user}/keys";
pub const USER_TEMPLATE: &str = "/v1/users/{user}/template";
pub const USER_VERIFY: &str = "/v1/users/{user}/verify";
pub const USER_TICKETS: &str = "/v1/users/{user}/tickets";
pub const USER_PUBLIC_KEY: &str = "/v1/users/{user}/public-key";
pub const USER_CHALLENGES: &str = "/v1/users/{user}/challenges";
pub const USER_LOGIN: &str = "/v1/users/{user}/login";
pub const JWKS: &str = "/.well-known/jwks.json";
pub const SERVICE_PUBLIC_KEY: &str = "/v1/service/public-key";
pub const GALLERIES: &str = "/v1/galleries";
pub const GALLERY: &str = "/v1/galleries/{gallery}";
pub const GALLERY_PUBLIC_KEY: &str = "/v1/galleries/{gallery}/public-key";
pub const GALLERY_TEMPLATES: &str = "/v1/galleries/{gallery}/templates";
pub const GALLERY_TEMPLATE: &str = "/v1/galleries/{gallery}/templates/{index}";
pub const GALLERY_IDENTIFY: &str = "/v1/galleries/{gallery}/identify";
pub const GALLERY_SHARD_IDENTIFY: &str = "/v1/galleries/{gallery}/shards/{shard}/identify";
pub const CLUSTER_KEYS: &str = "/v1/cluster/keys";

const fn route(path: &'static str, methods: &'static [&'static str]) -> Route {
    Route {
        path,
        methods,
        one_to_n: false,
    }
}

const fn one_to_n(path: &'static str, methods: &'static [&'static str]) -> Route {
    Route {
        one_to_n: true,
        ..route(path, methods)
    }
}

/// Every API route. Static files (`/`, `/pkg/...`) are the fallback.
pub const ROUTES: [Route; 21] = [
    route(HEALTHZ, &["GET"]),
    route(METRICS, &["GET"]),
    route(PARAMS, &["GET"]),
    route(USER, &["GET", "DELETE"]),
    route(USER_KEYS, &["PUT"]),
    route(USER_TEMPLATE, &["PUT"]),
    route(USER_VERIFY, &["POST"]),
    route(USER_TICKETS, &["POST"]),
    route(USER_PUBLIC_KEY, &["GET"]),
    route(USER_CHALLENGES, &["POST"]),
    route(USER_LOGIN, &["POST"]),
    route(JWKS, &["GET"]),
    one_to_n(SERVICE_PUBLIC_KEY, &["GET"]),
    one_to_n(GALLERIES, &["GET"]),
    one_to_n(GALLERY, &["GET", "PUT", "DELETE"]),
    one_to_n(GALLERY_PUBLIC_KEY, &["GET"]),
    one_to_n(GALLERY_TEMPLATES, &["POST"]),
    one_to_n(GALLERY_TEMPLATE, &["DELETE"]),
    one_to_n(GALLERY_IDENTIFY, &["POST"]),
    one_to_n(GALLERY_SHARD_IDENTIFY, &["POST"]),
    one_to_n(CLUSTER_KEYS, &["GET"]),
];

/// The metrics label of requests outside [`ROUTES`] (static files,
/// unknown paths).
pub const OTHER: &str = "other";
