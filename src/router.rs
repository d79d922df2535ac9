//! The route table and the dispatch of one request through it: match, authenticate,
//! read the body within its limit, run the handler, render errors by family,
//! count and log.

use crate::auth::{tokens, Access, Caller};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult, Family};
use crate::http::{json, Cx, Response};
use futures::future::BoxFuture;
use http::{Method, Request, StatusCode};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// A route's handler: takes the decoded request, answers or fails with an error the router renders by family.
pub type Handler = fn(Cx) -> BoxFuture<'static, ApiResult<Response>>;

/// Path parameters by name (the route table's own, not copied), in pattern order.
pub type Params = Vec<(&'static str, String)>;

/// One route of API.md.
pub struct Route {
    /// The HTTP method matched.
    pub method: Method,
    /// The pattern, with `{name}` parameters; also the `route` label of metrics.
    pub path: &'static str,
    /// Which error body the route answers with.
    pub family: Family,
    /// Who may call it; checked before the body is read.
    pub access: Access,
    /// What runs once the caller is authenticated and the body read.
    pub handler: Handler,
    /// What the OpenAPI document says of it (the builder methods of
    /// [`crate::openapi::doc`] fill it in).
    pub doc: crate::openapi::doc::Doc,
}

/// Builds a [`Route`] from an `async fn(Cx) -> ApiResult<Response>`; its
/// summary, body, answers and parameters follow as builder calls.
#[macro_export]
macro_rules! route {
    ($method:ident, $path:literal, $family:expr, $access:expr, $handler:path) => {
        $crate::router::Route {
            method: ::http::Method::$method,
            path: $path,
            family: $family,
            access: $access,
            handler: |cx| Box::pin($handler(cx)),
            doc: $crate::openapi::doc::Doc::default(),
        }
    };
}

/// A request's client address, as an extension, for a program that hands
/// requests to [`dispatch`] itself; Herald's server passes it directly.
#[derive(Clone, Copy, Debug)]
pub struct PeerAddr(pub std::net::SocketAddr);

/// The route table, indexed by method and path pattern for matching.
pub struct Router {
    routes: Vec<Route>,
    by_method: HashMap<Method, matchit::Router<usize>>,
}

impl Router {
    /// Indexes `routes`; fails when two routes of one method have conflicting patterns.
    pub fn new(routes: Vec<Route>) -> Result<Router, String> {
        let mut by_method: HashMap<Method, matchit::Router<usize>> = HashMap::new();
        for (i, r) in routes.iter().enumerate() {
            by_method
                .entry(r.method.clone())
                .or_default()
                .insert(r.path, i)
                .map_err(|e| format!("route {} {}: {e}", r.method, r.path))?;
        }
        Ok(Router { routes, by_method })
    }

    /// The application's router, built once.
    pub fn global() -> &'static Router {
        static ROUTER: OnceLock<Router> = OnceLock::new();
        ROUTER.get_or_init(|| match Router::new(crate::api::routes()) {
            Ok(r) => r,
            // The table is the program's own constant: an inconsistency is a bug
            // every test meets at the first request, not a condition to serve through.
            #[allow(clippy::panic)]
            Err(e) => panic!("the route table is inconsistent: {e}"),
        })
    }

    /// Every route, in table order.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    fn find(&'static self, method: &Method, path: &str) -> Result<(&'static Route, Params), StatusCode> {
        if let Some(m) = self.by_method.get(method).and_then(|r| r.at(path).ok()) {
            let params = m.params.iter().map(|(k, v)| (k, v.to_string())).collect();
            return Ok((&self.routes[*m.value], params));
        }
        let elsewhere = self.by_method.values().any(|r| r.at(path).is_ok());
        Err(if elsewhere { StatusCode::METHOD_NOT_ALLOWED } else { StatusCode::NOT_FOUND })
    }
}

/// The routes the operations port serves.
const OPS_PATHS: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// Answers one request on the operations port: the probes and metrics, and
/// 404 for anything else.
pub async fn dispatch_ops<B>(engine: Arc<Engine>, req: Request<B>) -> Response
where
    B: hyper::body::Body + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if OPS_PATHS.contains(&req.uri().path()) {
        return dispatch(engine, req).await;
    }
    let e = ApiError::not_found("the operations port serves /healthz, /readyz and /metrics only");
    json(e.status, &e.body(Family::Ops)).unwrap_or_else(|_| crate::http::empty(e.status))
}

/// Answers one request; never fails (errors become error bodies). The
/// client's address is the request's [`PeerAddr`] extension, when it has one.
pub async fn dispatch<B>(engine: Arc<Engine>, req: Request<B>) -> Response
where
    B: hyper::body::Body + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let peer = req.extensions().get::<PeerAddr>().map(|p| p.0.ip());
    dispatch_from(engine, req, peer).await
}

/// [`dispatch`] of a request from `peer`, as the server passes it: putting
/// it in the request's extensions cost three allocations per request.
pub(crate) async fn dispatch_from<B>(engine: Arc<Engine>, req: Request<B>, peer: Option<IpAddr>) -> Response
where
    B: hyper::body::Body + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let started = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let traceparent = req.headers().get("traceparent").and_then(|v| v.to_str().ok()).map(str::to_string);
    let mut tenant = None;
    let (route_label, family, result) = match Router::global().find(&method, &path) {
        Ok((route, params)) => {
            tenant = params.iter().find(|(k, _)| *k == "tenantId").map(|(_, v)| v.clone());
            (route.path, route.family, run(engine.clone(), route, params, req, peer).await)
        }
        Err(status) => ("unmatched", Family::Ops, Err(ApiError::new(status, format!("no route for {method} {path}")))),
    };
    let response = match result {
        Ok(r) => r,
        Err(e) => {
            let body = e.body(family);
            let mut r = json(e.status, &body).unwrap_or_else(|_| crate::http::empty(e.status));
            if let Some(secs) = e.retry_after {
                r.headers_mut().insert(http::header::RETRY_AFTER, http::HeaderValue::from(secs));
            }
            if let Some(v) = e.challenge.as_deref().and_then(|c| http::HeaderValue::from_str(c).ok()) {
                r.headers_mut().insert(http::header::WWW_AUTHENTICATE, v);
            }
            r
        }
    };
    let status = response.status().as_u16();
    let elapsed = started.elapsed();
    let tenant = tenant.filter(|_| status < 400).and_then(|t| tenant_label(&engine, &t));
    engine.request_series.record(route_label, &method, status, tenant, elapsed);
    tracing::info!(%method, %path, route = route_label, status, micros = elapsed.as_micros() as u64, traceparent = traceparent.as_deref(), "request");
    response
}

/// The `tenant` label of a request to an existing tenant (never one an
/// unauthenticated caller made up, which would grow the label set unboundedly).
fn tenant_label(engine: &Engine, tenant: &str) -> Option<metrics::Label> {
    let known = herald_actors::telemetry::known(tenant).or_else(|| {
        matches!(engine.store.tenants().get(tenant), Ok(Some(_))).then(|| herald_actors::telemetry::tenant(tenant))
    })?;
    known.label.clone()
}

async fn run<B>(
    engine: Arc<Engine>,
    route: &Route,
    params: Params,
    req: Request<B>,
    peer: Option<IpAddr>,
) -> ApiResult<Response>
where
    B: hyper::body::Body + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (parts, body) = req.into_parts();
    let tenant = params.iter().find(|(k, _)| *k == "tenantId").map(|(_, v)| v.as_str());
    let caller = authenticate(&engine, route.access, &parts.headers, tenant).await?;
    if let Caller::Tenant(p) = &caller {
        // A request of a tenant is work for its actor, which bounds what the
        // engine holds of the tenant (see `Push::touch`).
        if let Err(e) = engine.push.touch(&p.tenant).await {
            tracing::warn!(tenant = %p.tenant, error = ?e, "the tenant's actor did not start");
        }
    }
    refuse_writes_when_full(&engine, route)?;
    let body = crate::http::body::read(body, engine.config.body_limit, &engine.config.limits).await?;
    let cx = Cx {
        engine,
        method: parts.method,
        params,
        query: parts.uri.query().map(str::to_string),
        peer,
        headers: parts.headers,
        body,
        caller,
    };
    (route.handler)(cx).await
}

/// A request that may write is refused up front while the store takes no
/// writes (507 on a full disk), so nothing is half done. The OAuth endpoints
/// are let through: the token endpoint issues tokens to existing users
/// without writing, and the others refuse in their own transaction.
fn refuse_writes_when_full(engine: &Engine, route: &Route) -> ApiResult<()> {
    let reads_only = route.method == Method::GET || route.method == Method::HEAD;
    if reads_only || route.family == Family::OAuth {
        return Ok(());
    }
    Ok(engine.store.writable()?)
}

pub(crate) fn bearer(headers: &http::HeaderMap) -> Option<&str> {
    let v = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(token.trim())
}

/// The caller of a request, verified for the route's `access` (the grant
/// check is [`Caller::authorize`], the same for the library API).
pub(crate) async fn authenticate(
    engine: &Engine,
    access: Access,
    headers: &http::HeaderMap,
    tenant: Option<&str>,
) -> ApiResult<Caller> {
    let caller = match access {
        Access::Public => Caller::Anonymous,
        Access::Operator => {
            let token = bearer(headers).ok_or_else(|| ApiError::unauthorized("missing bearer token"))?;
            if !crate::auth::secrets_equal(token.as_bytes(), engine.operator_token.as_bytes()) {
                return Err(ApiError::unauthorized("invalid operator token"));
            }
            Caller::Operator
        }
        Access::Tenant(_) => {
            let token = bearer(headers).ok_or_else(|| ApiError::unauthorized("missing bearer token"))?;
            let v = tokens::verify_shared(
                &engine.store,
                &engine.keys,
                &engine.config.public_url,
                token,
                tokens::TYP_ACCESS,
            )?;
            if Some(v.tenant()) != tenant {
                return Err(ApiError::forbidden("the token belongs to another tenant"));
            }
            crate::auth::session::check_access(engine, v.tenant(), &v.claims).await?;
            Caller::Tenant(Arc::clone(&v.principal))
        }
    };
    caller.authorize(tenant, access)?;
    Ok(caller)
}
