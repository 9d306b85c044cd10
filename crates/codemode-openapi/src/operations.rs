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

/// Every usable operation in the document, in document order, and one warning for each
/// operation left out (a `$ref` that cannot be followed, a malformed parameter, an input schema
/// that does not compile): one bad operation never costs the others.
pub fn collect<'a>(doc: &'a Value, builder: &SchemaBuilder<'a>) -> (Vec<Operation>, Vec<String>) {
    let resolver = builder.resolver();
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let mut built: Vec<(String, Result<Operation, String>)> = Vec::new();
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
        return (out, warnings);
    };
    for (path, item) in paths {
        let item = match resolver.deref(item) {
            Ok((item, _)) => item,
            Err(e) => {
                warnings.push(format!("path {path} is left out: {e}"));
                continue;
            }
        };
        let Some(item) = item.as_object() else {
            continue;
        };
        let shared = item.get("parameters");
        for method in METHODS {
            let Some(op) = item.get(*method) else {
                continue;
            };
            let label = format!("{} {path}", method.to_uppercase());
            let name = name_of(op, &label);
            built.push((
                name,
                operation(path, method, op, shared, builder, &label).map_err(|e| e.to_string()),
            ));
        }
    }
    let checks = schema_problems(&built);
    for ((name, op), problem) in built.into_iter().zip(checks) {
        match (op, problem) {
            (Ok(op), None) => out.push(op),
            (Ok(_), Some(e)) | (Err(e), _) => {
                warnings.push(format!("operation {name} is left out: {e}"))
            }
        }
    }
    (out, warnings)
}

/// For each built operation, why its input schema is not valid JSON Schema (a structural
/// walk, [`codemode::schema_problem`]; the runtime compiles a validator only when the
/// operation is first called), or `None`. Spread over the machine's cores: a large document
/// has thousands.
fn schema_problems(built: &[(String, Result<Operation, String>)]) -> Vec<Option<String>> {
    let check = |item: &(String, Result<Operation, String>)| match &item.1 {
        Ok(op) => codemode::schema_problem(&op.input_schema)
            .map(|e| format!("its input schema is not valid JSON Schema ({e})")),
        Err(_) => None,
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if threads < 2 || built.len() < 64 {
        return built.iter().map(check).collect();
    }
    let chunk = built.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = built
            .chunks(chunk)
            .map(|part| {
                (
                    part.len(),
                    scope.spawn(move || part.iter().map(check).collect::<Vec<_>>()),
                )
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|(len, h)| {
                h.join()
                    .unwrap_or_else(|_| vec![Some("checking its input schema failed".into()); len])
            })
            .collect()
    })
}

/// `"operationId" (GET /path)`, or the label alone when there is no operationId.
fn name_of(op: &Value, label: &str) -> String {
    match op.get("operationId").and_then(Value::as_str) {
        Some(id) => format!("{id:?} ({label})"),
        None => label.to_string(),
    }
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
    let mut defs = Map::new();

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
        lift_defs(&mut schema, &mut defs);
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
            lift_defs(&mut schema, &mut defs);
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
    if !defs.is_empty() {
        input["$defs"] = Value::Object(defs);
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

/// Moves a property schema's `$defs` into the input schema's own: its refs (`#/$defs/…`) are
/// resolved from the root of the input schema. Names are unique per document, so they merge.
fn lift_defs(schema: &mut Value, defs: &mut Map<String, Value>) {
    if let Some(Value::Object(own)) = schema.as_object_mut().and_then(|m| m.remove("$defs")) {
        defs.extend(own);
    }
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
