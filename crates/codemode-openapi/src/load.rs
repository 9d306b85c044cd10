//! Reading a document from a file or a URL, as JSON or YAML, and checking it is OpenAPI 3.x.

use crate::error::Cause;
use serde_json::Value;
use std::time::Duration;

/// Which OpenAPI line a document follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// 3.0.x: schemas in the OpenAPI dialect (`nullable`…).
    V30,
    /// 3.1.x: schemas are JSON Schema 2020-12.
    V31,
}

/// Whether `spec` names a URL rather than a file.
pub fn is_url(spec: &str) -> bool {
    spec.starts_with("http://") || spec.starts_with("https://")
}

/// The document's bytes, from a file or fetched from a URL.
pub async fn read_source(
    spec: &str,
    client: &reqwest::Client,
    timeout: Duration,
) -> Result<Vec<u8>, Cause> {
    if is_url(spec) {
        let fetch = |message: String| Cause::Fetch {
            url: spec.to_string(),
            message,
        };
        let resp = client
            .get(spec)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| fetch(describe_reqwest(&e)))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(fetch(format!("HTTP {status}")));
        }
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| fetch(describe_reqwest(&e)))?;
        Ok(bytes.to_vec())
    } else {
        tokio::fs::read(spec).await.map_err(|e| Cause::Read {
            path: spec.to_string(),
            message: e.to_string(),
        })
    }
}

/// A reqwest error as text, without the URL (which may carry a query-string secret).
pub fn describe_reqwest(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else if e.is_body() || e.is_decode() {
        "reading the response failed"
    } else if e.is_request() {
        "sending the request failed"
    } else {
        "request failed"
    };
    let mut msg = kind.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        source = s.source();
    }
    msg
}

/// Parses JSON, or YAML when it is not JSON.
pub fn parse(bytes: &[u8]) -> Result<Value, Cause> {
    let json_err = match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    match yaml_serde::from_slice::<Value>(bytes) {
        Ok(v) => Ok(v),
        Err(yaml_err) => Err(Cause::Syntax {
            json: json_err.to_string(),
            yaml: yaml_err.to_string(),
        }),
    }
}

/// Checks the `openapi` field and the `paths` object.
pub fn check(doc: &Value) -> Result<Version, Cause> {
    let Some(obj) = doc.as_object() else {
        return Err(Cause::NotOpenApi(format!(
            "the document is {}, not an object",
            kind_of(doc)
        )));
    };
    let version = match obj.get("openapi") {
        Some(Value::String(v)) => v.as_str(),
        Some(other) => {
            return Err(Cause::NotOpenApi(format!(
                "`openapi` is {}, not a version string",
                kind_of(other)
            )))
        }
        None if obj.contains_key("swagger") => {
            return Err(Cause::NotOpenApi(
                "this is a Swagger 2.0 document; convert it to OpenAPI 3".into(),
            ))
        }
        None => return Err(Cause::NotOpenApi("there is no `openapi` field".into())),
    };
    let v = if version.starts_with("3.0") {
        Version::V30
    } else if version.starts_with("3.1") || version.starts_with("3.2") {
        Version::V31
    } else {
        return Err(Cause::NotOpenApi(format!(
            "version {version:?} is not supported (3.0 and 3.1 are)"
        )));
    };
    match obj.get("paths") {
        Some(Value::Object(_)) | None => Ok(v),
        Some(other) => Err(Cause::NotOpenApi(format!(
            "`paths` is {}, not an object",
            kind_of(other)
        ))),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_json_and_yaml() {
        assert!(parse(br#"{"openapi": "3.0.0"}"#).unwrap().is_object());
        let y = parse(b"openapi: 3.1.0\npaths: {}\n").unwrap();
        assert_eq!(check(&y).unwrap(), Version::V31);
        assert!(matches!(
            parse(b"{not json: [unclosed"),
            Err(Cause::Syntax { .. })
        ));
    }

    #[test]
    fn rejects_non_openapi() {
        for (text, needle) in [
            ("[1, 2]", "an array"),
            ("swagger: '2.0'", "Swagger 2.0"),
            ("title: hello", "no `openapi` field"),
            ("openapi: 2.5.0", "not supported"),
            ("openapi: 3.0.3\npaths: [1]", "`paths` is an array"),
            ("just some text", "a string"),
        ] {
            let doc = parse(text.as_bytes()).unwrap();
            let err = check(&doc).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
