//! What a route says of itself in the OpenAPI document: its summary, request
//! body, answers and query parameters, as Rust types whose schemas utoipa
//! derives. Each route of the table (`crate::api::routes`) declares them with
//! the builder methods below, beside its method, path, access and handler,
//! so the document is generated from the router alone and cannot drift.

use super::schema::query_integer;
use super::Components;
use crate::paging::MAX_PAGE;
use crate::router::Route;
use serde_json::{json, Value};
use utoipa::ToSchema;

/// Registers a schema (and what it refers to) and answers how to refer to it.
pub type SchemaFn = fn(&mut Components) -> Value;

/// `T`, by reference to its component schema.
pub fn one<T: ToSchema>(c: &mut Components) -> Value {
    let name = T::name().to_string();
    if !c.iter().any(|(n, _)| *n == name) {
        c.push((name.clone(), T::schema()));
        T::schemas(c);
    }
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// An array of `T`.
pub fn many<T: ToSchema>(c: &mut Components) -> Value {
    json!({ "type": "array", "items": one::<T>(c) })
}

/// One answer of an operation.
pub enum Answer {
    /// A JSON body of this schema.
    Json(SchemaFn),
    /// A text body of this media type.
    Text(&'static str),
    /// Raw bytes of this media type (`type: string, format: binary`).
    Binary(&'static str),
    /// No body.
    Empty,
}

/// A query parameter.
pub struct Query {
    /// The parameter's name, as the handler reads it.
    pub name: &'static str,
    /// Whether the handler refuses a request without it.
    pub required: bool,
    /// Its JSON schema: free text unless the handler parses it (integers with
    /// their bounds, booleans, closed sets, timestamps).
    pub value: Value,
}

impl Query {
    /// Its JSON schema, for the operation's `parameters`.
    pub fn schema(&self) -> Value {
        self.value.clone()
    }
}

/// The documentation of one route.
pub struct Doc {
    /// One line: the operation's `summary`.
    pub summary: &'static str,
    /// The request body's schema; `None`: the route reads no body.
    pub body: Option<SchemaFn>,
    /// The body may be left out (its defaults apply).
    pub body_optional: bool,
    /// Media types of the body: JSON, or form-encoded on the OAuth endpoints.
    pub media: &'static [&'static str],
    /// The success answers, by status; the error answers come from the route's family.
    pub responses: Vec<(u16, Answer)>,
    /// Query parameters, in declaration order.
    pub query: Vec<Query>,
    /// The route takes an `Idempotency-Key` header and marks a replayed
    /// answer with `Idempotency-Replayed` (see `ops::idempotency`).
    pub idempotent: bool,
}

impl Default for Doc {
    fn default() -> Doc {
        Doc {
            summary: "",
            body: None,
            body_optional: false,
            media: &["application/json"],
            responses: Vec::new(),
            query: Vec::new(),
            idempotent: false,
        }
    }
}

/// The builder methods of the route table.
impl Route {
    /// What the route does, in one line.
    pub fn summary(mut self, summary: &'static str) -> Route {
        self.doc.summary = summary;
        self
    }
    /// A required JSON body.
    pub fn body(mut self, f: SchemaFn) -> Route {
        self.doc.body = Some(f);
        self
    }
    /// A JSON body that may be left out.
    pub fn optional_body(mut self, f: SchemaFn) -> Route {
        self.doc.body_optional = true;
        self.body(f)
    }
    /// Declared form-encoded only (the OAuth endpoints: RFC 6749 §4, RFC 7009, RFC 7662).
    pub fn form(mut self) -> Route {
        self.doc.media = &["application/x-www-form-urlencoded"];
        self
    }
    /// A JSON answer.
    pub fn json(mut self, status: u16, f: SchemaFn) -> Route {
        self.doc.responses.push((status, Answer::Json(f)));
        self
    }
    /// A text answer of `media`.
    pub fn text(mut self, status: u16, media: &'static str) -> Route {
        self.doc.responses.push((status, Answer::Text(media)));
        self
    }
    /// Raw bytes of `media` (a DER CRL).
    pub fn binary(mut self, status: u16, media: &'static str) -> Route {
        self.doc.responses.push((status, Answer::Binary(media)));
        self
    }
    /// An answer without a body.
    pub fn empty(mut self, status: u16) -> Route {
        self.doc.responses.push((status, Answer::Empty));
        self
    }
    /// Optional free-text parameters.
    pub fn query(mut self, names: &[&'static str]) -> Route {
        let text = |name| Query { name, required: false, value: json!({ "type": "string" }) };
        self.doc.query.extend(names.iter().map(|&name| text(name)));
        self
    }
    /// Required free-text parameters.
    pub fn required(mut self, names: &[&'static str]) -> Route {
        let text = |name| Query { name, required: true, value: json!({ "type": "string" }) };
        self.doc.query.extend(names.iter().map(|&name| text(name)));
        self
    }
    /// Optional parameters the handler parses, with their schemas.
    pub fn typed(mut self, params: &[(&'static str, Value)]) -> Route {
        let typed = |(name, value): &(&'static str, Value)| Query { name, required: false, value: value.clone() };
        self.doc.query.extend(params.iter().map(typed));
        self
    }
    /// A required parameter the handler parses.
    pub fn required_typed(mut self, name: &'static str, value: Value) -> Route {
        self.doc.query.push(Query { name, required: true, value });
        self
    }
    /// Takes an `Idempotency-Key` header (see [`Doc::idempotent`]).
    pub fn idempotent(mut self) -> Route {
        self.doc.idempotent = true;
        self
    }
    /// `page` (from 1) and the route's page-size parameter (`size`, from `min` to `max`),
    /// as `crate::paging::Paging::from_query` reads them.
    pub fn paged(mut self, size: &'static str, min: u64, max: u64) -> Route {
        self.doc.query.push(Query { name: "page", required: false, value: query_integer(1, Some(MAX_PAGE as u64)) });
        self.doc.query.push(Query { name: size, required: false, value: query_integer(min, Some(max)) });
        self
    }
}
