//! From a method's input object to an HTTP request: path, query, headers, cookies and body.

use crate::operations::{is_json, Location, Operation};
use codemode::ToolError;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::{Map, Value};

/// Characters left as they are in a path segment (RFC 3986 unreserved).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// An HTTP request before the connector adds its base URL, credentials and fixed headers.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpRequest {
    /// Upper-case method.
    pub method: String,
    /// Path below the base URL, starting with `/`, parameters substituted and encoded.
    pub path: String,
    /// Query pairs, in order.
    pub query: Vec<(String, String)>,
    /// Headers, in order.
    pub headers: Vec<(String, String)>,
    /// Media type and bytes of the body.
    pub body: Option<(String, Vec<u8>)>,
}

/// A scalar as it appears in a URL or header; arrays and objects as JSON.
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn as_object(args: Value, what: &str) -> Result<Map<String, Value>, ToolError> {
    match args {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(Map::new()),
        other => Err(ToolError::new(format!(
            "{what} takes one object argument, got {other}"
        ))),
    }
}

/// The request for one call of `op`.
pub fn for_operation(op: &Operation, args: Value) -> Result<HttpRequest, ToolError> {
    let mut args = as_object(args, &op.original)?;
    let mut path = op.path.clone();
    let mut query = Vec::new();
    let mut headers = Vec::new();
    let mut cookies = Vec::new();
    for p in &op.params {
        let Some(v) = args.remove(&p.prop) else {
            if p.location == Location::Path {
                return Err(ToolError::new(format!(
                    "missing required path parameter `{}`",
                    p.prop
                )));
            }
            continue;
        };
        if v.is_null() && p.location != Location::Path {
            continue;
        }
        match p.location {
            Location::Path => {
                let text = match &v {
                    Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(","),
                    other => scalar(other),
                };
                let encoded = utf8_percent_encode(&text, SEGMENT).to_string();
                path = path.replace(&format!("{{{}}}", p.name), &encoded);
            }
            Location::Query => push_query(&mut query, &p.name, &v, p.explode, p.deep_object),
            Location::Header => {
                let text = match &v {
                    Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(","),
                    other => scalar(other),
                };
                headers.push((p.name.clone(), text));
            }
            Location::Cookie => cookies.push(format!("{}={}", p.name, scalar(&v))),
        }
    }
    if !cookies.is_empty() {
        headers.push(("Cookie".into(), cookies.join("; ")));
    }
    let mut body = None;
    if let Some(spec) = &op.body {
        if let Some(v) = args.remove(&spec.prop) {
            body = Some((
                spec.content_type.clone(),
                encode_body(&spec.content_type, &v)?,
            ));
        }
    }
    if let Some(extra) = args.keys().next() {
        return Err(ToolError::new(format!(
            "unknown argument `{extra}` for {}; see its input schema",
            op.original
        )));
    }
    Ok(HttpRequest {
        method: op.method.clone(),
        path,
        query,
        headers,
        body,
    })
}

fn push_query(out: &mut Vec<(String, String)>, name: &str, v: &Value, explode: bool, deep: bool) {
    match v {
        Value::Array(items) if explode => {
            out.extend(items.iter().map(|i| (name.to_string(), scalar(i))));
        }
        Value::Array(items) => out.push((
            name.to_string(),
            items.iter().map(scalar).collect::<Vec<_>>().join(","),
        )),
        Value::Object(map) if deep => {
            out.extend(map.iter().map(|(k, v)| (format!("{name}[{k}]"), scalar(v))));
        }
        Value::Object(map) if explode => {
            out.extend(map.iter().map(|(k, v)| (k.clone(), scalar(v))));
        }
        Value::Object(map) => out.push((
            name.to_string(),
            map.iter()
                .flat_map(|(k, v)| [k.clone(), scalar(v)])
                .collect::<Vec<_>>()
                .join(","),
        )),
        other => out.push((name.to_string(), scalar(other))),
    }
}

/// Encodes a body for its media type: JSON, a form, or text as it is.
fn encode_body(content_type: &str, v: &Value) -> Result<Vec<u8>, ToolError> {
    if is_json(content_type) {
        return serde_json::to_vec(v).map_err(|e| ToolError::new(e.to_string()));
    }
    if content_type.starts_with("application/x-www-form-urlencoded") {
        let Value::Object(map) = v else {
            return Err(ToolError::new("a form body must be an object"));
        };
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in map {
            form.append_pair(k, &scalar(v));
        }
        return Ok(form.finish().into_bytes());
    }
    Ok(scalar(v).into_bytes())
}

/// The request for one call of the low-level `request({method, path, query, body, headers})`.
pub fn for_raw(args: Value) -> Result<HttpRequest, ToolError> {
    let mut args = as_object(args, "request")?;
    let method = match args.remove("method") {
        None | Some(Value::Null) => "GET".to_string(),
        Some(Value::String(m)) => m.to_ascii_uppercase(),
        Some(other) => {
            return Err(ToolError::new(format!(
                "`method` must be a string, got {other}"
            )))
        }
    };
    if !crate::operations::METHODS.contains(&method.to_ascii_lowercase().as_str()) {
        return Err(ToolError::new(format!(
            "`method` {method:?} is not an HTTP method"
        )));
    }
    let path = match args.remove("path") {
        Some(Value::String(p)) => p,
        _ => {
            return Err(ToolError::new(
                "`path` is required: a path below the base URL, like \"/users/1\"",
            ))
        }
    };
    if !path.starts_with('/') || path.starts_with("//") || path.contains("://") {
        return Err(ToolError::new(format!(
            "`path` {path:?} must be a path below the base URL starting with a single `/`, not a URL"
        )));
    }
    let mut query = Vec::new();
    match args.remove("query") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (k, v) in &map {
                if !v.is_null() {
                    push_query(&mut query, k, v, true, false);
                }
            }
        }
        Some(other) => {
            return Err(ToolError::new(format!(
                "`query` must be an object, got {other}"
            )))
        }
    }
    let mut headers = Vec::new();
    let mut content_type = None;
    match args.remove("headers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (k, v) in map {
                if k.eq_ignore_ascii_case("content-type") {
                    content_type = Some(scalar(&v));
                } else {
                    headers.push((k, scalar(&v)));
                }
            }
        }
        Some(other) => {
            return Err(ToolError::new(format!(
                "`headers` must be an object, got {other}"
            )))
        }
    }
    let body = match args.remove("body") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let ct = content_type.unwrap_or_else(|| "application/json".into());
            let bytes = encode_body(&ct, &v)?;
            Some((ct, bytes))
        }
    };
    if let Some(extra) = args.keys().next() {
        return Err(ToolError::new(format!(
            "unknown argument `{extra}` for request; it takes method, path, query, body, headers"
        )));
    }
    Ok(HttpRequest {
        method,
        path,
        query,
        headers,
        body,
    })
}

/// The input schema of `request`.
pub fn raw_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "method": {"type": "string", "enum": ["GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH"], "description": "HTTP method; GET when absent."},
            "path": {"type": "string", "description": "Path below the API's base URL, starting with `/`, e.g. `/users/1`."},
            "query": {"type": "object", "description": "Query parameters; arrays repeat the name.", "additionalProperties": true},
            "body": {"description": "Request body, sent as JSON unless headers set another content-type."},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Extra request headers."}
        },
        "required": ["path"],
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operations::{BodySpec, Param};
    use serde_json::json;

    fn op() -> Operation {
        let p = |prop: &str, loc, explode, deep| Param {
            prop: prop.into(),
            name: prop.into(),
            location: loc,
            explode,
            deep_object: deep,
        };
        Operation {
            original: "items/update".into(),
            method: "PATCH".into(),
            path: "/items/{id}/tags/{tag}".into(),
            params: vec![
                p("id", Location::Path, false, false),
                p("tag", Location::Path, false, false),
                p("ids", Location::Query, true, false),
                p("csv", Location::Query, false, false),
                p("filter", Location::Query, true, true),
                p("X-Trace", Location::Header, false, false),
                p("session", Location::Cookie, false, false),
            ],
            body: Some(BodySpec {
                prop: "body".into(),
                content_type: "application/json".into(),
            }),
            description: String::new(),
            input_schema: json!({}),
            output_schema: None,
        }
    }

    #[test]
    fn maps_every_location() {
        let r = for_operation(
            &op(),
            json!({
                "id": 7, "tag": "a b/c", "ids": [1, 2], "csv": ["x", "y"],
                "filter": {"state": "open"}, "X-Trace": "t1", "session": "s",
                "body": {"name": "n"}
            }),
        )
        .unwrap();
        assert_eq!(r.method, "PATCH");
        assert_eq!(r.path, "/items/7/tags/a%20b%2Fc");
        assert_eq!(
            r.query,
            vec![
                ("ids".into(), "1".into()),
                ("ids".into(), "2".into()),
                ("csv".into(), "x,y".into()),
                ("filter[state]".into(), "open".into())
            ]
        );
        assert_eq!(
            r.headers,
            vec![
                ("X-Trace".into(), "t1".into()),
                ("Cookie".into(), "session=s".into())
            ]
        );
        assert_eq!(
            r.body,
            Some(("application/json".into(), br#"{"name":"n"}"#.to_vec()))
        );
    }

    #[test]
    fn missing_path_param_and_unknown_args_are_errors() {
        let err = for_operation(&op(), json!({"id": 1})).unwrap_err();
        assert!(err.0.contains("`tag`"), "{err}");
        let err = for_operation(&op(), json!({"id": 1, "tag": "t", "nope": 1})).unwrap_err();
        assert!(err.0.contains("`nope`"), "{err}");
        assert!(for_operation(&op(), json!([1])).is_err());
    }

    #[test]
    fn raw_requests_stay_below_the_base_url() {
        for bad in ["http://evil.example/x", "//evil.example/x", "x/y", "/a://b"] {
            assert!(for_raw(json!({"path": bad})).is_err(), "{bad}");
        }
        let r = for_raw(
            json!({"method": "post", "path": "/a", "query": {"q": [1, 2]}, "body": {"x": 1}}),
        )
        .unwrap();
        assert_eq!(r.method, "POST");
        assert_eq!(r.query.len(), 2);
        assert!(for_raw(json!({"method": "FETCH", "path": "/a"})).is_err());
        assert!(for_raw(json!({"path": "/a", "extra": 1})).is_err());
    }
}
