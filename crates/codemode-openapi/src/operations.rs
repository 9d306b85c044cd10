//! Walks `paths` and turns each operation into a method: its input schema, and how each input
//! property maps onto the HTTP request.

use crate::error::{Cause, RefError};
use crate::refs::SchemaBuilder;
use serde_json::{json, Map, Value};

/// HTTP methods an operation may have, in the order they are listed.
pub const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Node budget for one inlined input schema before every ref is hoisted instead.
const INPUT_BUDGET: usize = 20_000;
/// Node budget for one inlined output schema.
const OUTPUT_BUDGET: usize = 1_000;
/// Longest operation description kept for the model.
const MAX_DESCRIPTION: usize = 1_000;

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// Substituted into the path template.
    Path,
    /// A query-string parameter.
    Query,
    /// A request header.
    Header,
    /// A cookie.
    Cookie,
}

impl Location {
    fn parse(s: &str) -> Option<Location> {
        Some(match s {
            "path" => Location::Path,
            "query" => Location::Query,
            "header" => Location::Header,
            "cookie" => Location::Cookie,
            _ => return None,
        })
    }

    fn label(self) -> &'static str {
        match self {
            Location::Path => "path",
            Location::Query => "query",
            Location::Header => "header",
            Location::Cookie => "cookie",
        }
    }
}

/// One parameter of an operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// The input property holding it.
    pub prop: String,
    /// The name on the wire.
    pub name: String,
    /// Where it goes.
    pub location: Location,
    /// Whether arrays and objects are exploded (`a=1&a=2`), per OpenAPI `explode`.
    pub explode: bool,
    /// Whether objects use `deepObject` style (`a[k]=v`).
    pub deep_object: bool,
}

/// How an operation's request body is sent.
#[derive(Debug, Clone, PartialEq)]
pub struct BodySpec {
    /// The input property holding it.
    pub prop: String,
    /// The media type sent.
    pub content_type: String,
}

/// One operation: a method of the connector.
#[derive(Debug, Clone)]
pub struct Operation {
    /// The operationId, or `METHOD /path` when there is none.
    pub original: String,
    /// The HTTP method, upper case.
    pub method: String,
    /// The path template, as in the document.
    pub path: String,
    /// Its parameters.
    pub params: Vec<Param>,
    /// Its request body, if any.
    pub body: Option<BodySpec>,
    /// For the model: summary, method and path, description.
    pub description: String,
    /// The input object's schema.
    pub input_schema: Value,
    /// The schema of the success response, when it is JSON.
    pub output_schema: Option<Value>,
}

impl Operation {
    /// GET, HEAD and OPTIONS change nothing.
    pub fn read_only(&self) -> bool {
        matches!(self.method.as_str(), "GET" | "HEAD" | "OPTIONS")
    }
}

/// Every operation in the document, in document order.
pub fn collect<'a>(doc: &'a Value, builder: &SchemaBuilder<'a>) -> Result<Vec<Operation>, Cause> {
    let resolver = builder.resolver();
    let mut out = Vec::new();
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
        return Ok(out);
    };
    for (path, item) in paths {
        let (item, _) = resolver
            .deref(item)
            .map_err(|e| at(&format!("path {path}"), e))?;
        let Some(item) = item.as_object() else {
            continue;
        };
        let shared = item.get("parameters");
        for method in METHODS {
            let Some(op) = item.get(*method) else {
                continue;
            };
            let label = format!("{} {path}", method.to_uppercase());
            out.push(operation(path, method, op, shared, builder, &label)?);
        }
    }
    Ok(out)
}

fn at(label: &str, e: RefError) -> Cause {
    Cause::Invalid(format!("{label}: {e}"))
}

fn operation<'a>(
    path: &str,
    method: &str,
    op: &'a Value,
    shared: Option<&'a Value>,
    builder: &SchemaBuilder<'a>,
    label: &str,
) -> Result<Operation, Cause> {
    let resolver = builder.resolver();
    let mut properties = Map::new();
    let mut required: Vec<Value> = Vec::new();
    let mut params: Vec<Param> = Vec::new();

    // Operation-level parameters override path-level ones with the same name and location.
    let mut raw: Vec<&'a Value> = Vec::new();
    for list in [shared, op.get("parameters")].into_iter().flatten() {
        if let Some(items) = list.as_array() {
            for p in items {
                let (p, _) = resolver.deref(p).map_err(|e| at(label, e))?;
                let key = (p.get("name"), p.get("in"));
                raw.retain(|q| (q.get("name"), q.get("in")) != key);
                raw.push(p);
            }
        }
    }
    for p in raw {
        let (Some(name), Some(location)) = (
            p.get("name").and_then(Value::as_str),
            p.get("in")
                .and_then(Value::as_str)
                .and_then(Location::parse),
        ) else {
            return Err(Cause::Invalid(format!(
                "{label}: a parameter has no valid `name` and `in`"
            )));
        };
        if location == Location::Header
            && ["accept", "content-type", "authorization"]
                .contains(&name.to_ascii_lowercase().as_str())
        {
            continue;
        }
        let prop = if properties.contains_key(name) {
            format!("{}_{name}", location.label())
        } else {
            name.to_string()
        };
        let mut schema = match p.get("schema") {
            Some(s) => builder.build(s).map_err(|e| at(label, e))?,
            None => content_schema(p.get("content"), builder, label)?.unwrap_or_else(|| json!({})),
        };
        if let (Some(d), Value::Object(m)) = (p.get("description"), &mut schema) {
            m.entry("description").or_insert_with(|| d.clone());
        }
        let is_required =
            location == Location::Path || p.get("required").and_then(Value::as_bool) == Some(true);
        if is_required {
            required.push(Value::String(prop.clone()));
        }
        properties.insert(prop.clone(), schema);
        let style = p.get("style").and_then(Value::as_str);
        params.push(Param {
            prop,
            name: name.to_string(),
            location,
            explode: p
                .get("explode")
                .and_then(Value::as_bool)
                .unwrap_or(matches!(style, None | Some("form"))),
            deep_object: style == Some("deepObject"),
        });
    }

    let mut body = None;
    if let Some(rb) = op.get("requestBody") {
        let (rb, _) = resolver.deref(rb).map_err(|e| at(label, e))?;
        if let Some((content_type, media)) = pick_media(rb.get("content")) {
            let prop = ["body", "requestBody", "request_body"]
                .into_iter()
                .find(|p| !properties.contains_key(*p))
                .unwrap_or("body_")
                .to_string();
            let mut schema = match media.get("schema") {
                Some(s) => builder.build(s).map_err(|e| at(label, e))?,
                None => json!({}),
            };
            if let (Some(d), Value::Object(m)) = (rb.get("description"), &mut schema) {
                m.entry("description").or_insert_with(|| d.clone());
            }
            if rb.get("required").and_then(Value::as_bool) == Some(true) {
                required.push(Value::String(prop.clone()));
            }
            properties.insert(prop.clone(), schema);
            body = Some(BodySpec { prop, content_type });
        }
    }

    let mut input =
        json!({"type": "object", "properties": properties, "additionalProperties": false});
    if !required.is_empty() {
        input["required"] = Value::Array(required);
    }

    let output_schema = success_schema(op.get("responses"), builder, label)?;
    let original = op
        .get("operationId")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| label.to_string());
    Ok(Operation {
        original,
        method: method.to_uppercase(),
        path: path.to_string(),
        params,
        body,
        description: describe(op, label),
        input_schema: input,
        output_schema,
    })
}

/// The JSON media type of a `content` map if there is one, else its first media type.
fn pick_media(content: Option<&Value>) -> Option<(String, &Value)> {
    let content = content?.as_object()?;
    content
        .iter()
        .find(|(ct, _)| is_json(ct))
        .or_else(|| content.iter().next())
        .map(|(ct, m)| (ct.clone(), m))
}

/// Whether a media type is JSON (`application/json`, `application/vnd.x+json`…).
pub fn is_json(content_type: &str) -> bool {
    let ct = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    ct == "application/json" || ct.ends_with("+json") || ct == "*/*"
}

fn content_schema<'a>(
    content: Option<&'a Value>,
    builder: &SchemaBuilder<'a>,
    label: &str,
) -> Result<Option<Value>, Cause> {
    match pick_media(content).and_then(|(_, m)| m.get("schema")) {
        Some(s) => Ok(Some(builder.build(s).map_err(|e| at(label, e))?)),
        None => Ok(None),
    }
}

fn success_schema<'a>(
    responses: Option<&'a Value>,
    builder: &SchemaBuilder<'a>,
    label: &str,
) -> Result<Option<Value>, Cause> {
    let Some(responses) = responses.and_then(Value::as_object) else {
        return Ok(None);
    };
    let Some((_, resp)) = responses.iter().find(|(code, _)| code.starts_with('2')) else {
        return Ok(None);
    };
    let (resp, _) = builder.resolver().deref(resp).map_err(|e| at(label, e))?;
    let Some(content) = resp.get("content").and_then(Value::as_object) else {
        return Ok(None);
    };
    let Some(schema) = content
        .iter()
        .find(|(ct, _)| is_json(ct))
        .and_then(|(_, m)| m.get("schema"))
    else {
        return Ok(None);
    };
    Ok(Some(
        builder
            .build_with_budget(schema, OUTPUT_BUDGET)
            .map_err(|e| at(label, e))?,
    ))
}

fn describe(op: &Value, label: &str) -> String {
    let summary = op
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    let long = op
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    let mut out = String::new();
    if !summary.is_empty() {
        out.push_str(summary);
        out.push_str("\n\n");
    }
    out.push_str(label);
    if !long.is_empty() && long != summary {
        out.push_str("\n\n");
        if long.chars().count() > MAX_DESCRIPTION {
            out.extend(long.chars().take(MAX_DESCRIPTION));
            out.push('…');
        } else {
            out.push_str(long);
        }
    }
    out
}

/// The input budget, for building a [`SchemaBuilder`] for inputs.
pub fn input_budget() -> usize {
    INPUT_BUDGET
}
