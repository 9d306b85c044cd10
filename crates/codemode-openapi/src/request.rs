//! From a method's input object to an HTTP request: path, query, headers, cookies and body.

use crate::operations::{is_json, Location, Operation};
use base64::Engine;
use codemode::ToolError;
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
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
                check_path_param(&p.prop, &text)?;
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

/// The bytes of a `{"$bytes": "<base64>"}` envelope (a `Uint8Array` in the sandbox), if `v`
/// is one.
fn bytes_envelope(v: &Value) -> Option<Result<Vec<u8>, ToolError>> {
    let Value::Object(map) = v else {
        return None;
    };
    let Some(Value::String(b64)) = map.get("$bytes").filter(|_| map.len() == 1) else {
        return None;
    };
    Some(
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| {
                ToolError::new(format!(
                    "`body` has a `$bytes` value that is not base64: {e}"
                ))
            }),
    )
}

/// Encodes a body for its media type: bytes (a `Uint8Array`) as they are, JSON, a form, or
/// text as it is.
fn encode_body(content_type: &str, v: &Value) -> Result<Vec<u8>, ToolError> {
    if let Some(bytes) = bytes_envelope(v) {
        return bytes;
    }
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

/// The request for one call of the low-level
/// `request({method, path, query, body, contentType, headers})`.
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
    check_raw_path(&path)?;
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
    match (args.remove("contentType"), &content_type) {
        (None | Some(Value::Null), _) => {}
        (Some(Value::String(_)), Some(_)) => {
            return Err(ToolError::new(
                "the content type is given twice (`contentType` and a `content-type` header); give it once, as `contentType`",
            ))
        }
        (Some(Value::String(ct)), None) => content_type = Some(ct),
        (Some(other), _) => {
            return Err(ToolError::new(format!(
                "`contentType` must be a string like \"text/csv\", got {other}"
            )))
        }
    }
    let body = match args.remove("body") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let fallback = if bytes_envelope(&v).is_some() {
                "application/octet-stream"
            } else {
                "application/json"
            };
            let ct = content_type.unwrap_or_else(|| fallback.into());
            let bytes = encode_body(&ct, &v)?;
            Some((ct, bytes))
        }
    };
    if let Some(extra) = args.keys().next() {
        return Err(ToolError::new(format!(
            "unknown argument `{extra}` for request; it takes method, path, query, body, contentType, headers"
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

/// Whether `segment` is `.` or `..`, as written or percent-encoded (`%2e%2e`).
fn is_dot_segment(segment: &str) -> bool {
    let decoded = percent_decode_str(segment).decode_utf8_lossy();
    matches!(decoded.as_ref(), "." | "..")
}

/// A path parameter fills one segment: it may contain `/` (sent as `%2F`), but it cannot be a
/// dot segment or a URL.
fn check_path_param(prop: &str, text: &str) -> Result<(), ToolError> {
    let why = if is_dot_segment(text) {
        "cannot be `.` or `..`"
    } else if text.contains("://") || text.starts_with("//") {
        "cannot be a URL"
    } else {
        return Ok(());
    };
    Err(ToolError::new(format!(
        "path parameter `{prop}` is {text:?}: it {why}; a path parameter is one segment of a path below the API's base URL"
    )))
}

/// The `path` of a raw request: below the base URL, segment by segment.
fn check_raw_path(path: &str) -> Result<(), ToolError> {
    let refuse = |why: &str| {
        Err(ToolError::new(format!(
            "`path` {path:?} {why}; give a path below the API's base URL, like \"/users/1\", and put parameters in `query`"
        )))
    };
    if path.contains("://") {
        return refuse("must be a path, not a URL");
    }
    if !path.starts_with('/') || path.starts_with("//") {
        return refuse("must start with a single `/`");
    }
    if path.contains(['?', '#', '\\']) || path.chars().any(char::is_control) {
        return refuse("contains `?`, `#`, `\\` or a control character");
    }
    let segments: Vec<&str> = path[1..].split('/').collect();
    for (i, segment) in segments.iter().enumerate() {
        if segment.is_empty() && i + 1 < segments.len() {
            return refuse("has an empty segment (`//`)");
        }
        if is_dot_segment(segment) {
            return refuse("has a `.` or `..` segment");
        }
        let decoded = percent_decode_str(segment).decode_utf8_lossy();
        if decoded.contains(['/', '\\']) {
            return refuse("has an encoded `/` or `\\` (`%2F`, `%5C`)");
        }
    }
    Ok(())
}

/// The input schema of `request`.
pub fn raw_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "method": {"type": "string", "enum": ["GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH"], "description": "HTTP method; GET when absent."},
            "path": {"type": "string", "description": "Path below the API's base URL, starting with `/`, e.g. `/users/1`."},
            "query": {"type": "object", "description": "Query parameters; arrays repeat the name.", "additionalProperties": true},
            "body": {"description": "Request body: sent as JSON, unless `contentType` says otherwise; then a string is sent as it is, an object as a form for application/x-www-form-urlencoded, and a Uint8Array as its bytes."},
            "contentType": {"type": "string", "description": "Media type of `body`, e.g. `text/csv`; `application/json` when absent (`application/octet-stream` for a Uint8Array)."},
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
