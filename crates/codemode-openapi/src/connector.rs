//! The connector: one method per operation, plus `request` and (if configured) `spec`.

use crate::auth::Credentials;
use crate::config::OpenApiConfig;
use crate::error::{Cause, OpenApiError};
use crate::http::Http;
use crate::load::{self, Version};
use crate::methods::method_names;
use crate::operations::{self, Operation};
use crate::refs::SchemaBuilder;
use crate::request;
use crate::sender::{RequestSender, Sender};
use crate::stored::StoredTools;
use async_trait::async_trait;
use codemode::discovery::check_connector_name;
use codemode::policy::{apply_overrides, RevertSet};
use codemode::{CallContext, Connector, ReplayPolicy, ToolError, ToolSpec};
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use url::Url;

pub use crate::methods::{REQUEST_METHOD, SPEC_METHOD};

/// An OpenAPI 3.0/3.1 API as a connector.
#[derive(Debug)]
pub struct OpenApiConnector {
    name: String,
    instructions: Option<String>,
    operations: Vec<Operation>,
    by_name: HashMap<String, usize>,
    tools: StoredTools,
    http: Http,
    reverts: RevertSet,
    spec: Option<Arc<Value>>,
    description: Option<String>,
    warnings: Vec<String>,
}

/// What a method name stands for.
enum Target<'a> {
    Operation(&'a Operation),
    Request,
    Spec(&'a Arc<Value>),
}

impl OpenApiConnector {
    /// Loads the document named by `config.spec` (a file, or a URL fetched now) and builds the
    /// connector. Every failure names the connector and its cause.
    pub async fn from_spec(config: OpenApiConfig) -> Result<OpenApiConnector, OpenApiError> {
        Self::builder(config).load().await
    }

    /// Builds the connector from a document already in memory (JSON or YAML).
    pub fn from_bytes(
        config: OpenApiConfig,
        bytes: &[u8],
    ) -> Result<OpenApiConnector, OpenApiError> {
        Self::builder(config).build(bytes)
    }

    /// A builder, for a connector with a [`RequestSender`] of the host's.
    pub fn builder(config: OpenApiConfig) -> OpenApiBuilder {
        OpenApiBuilder {
            config,
            sender: None,
        }
    }

    fn assemble(
        config: OpenApiConfig,
        bytes: &[u8],
        client: reqwest::Client,
        credentials: Credentials,
        sender: Option<Sender>,
    ) -> Result<OpenApiConnector, OpenApiError> {
        let name = config.settings.name.clone();
        let fail = |cause| OpenApiError::new(name.clone(), cause);
        let doc = load::parse(bytes).map_err(fail)?;
        let version = load::check(&doc).map_err(fail)?;
        let builder = SchemaBuilder::new(&doc, version == Version::V30, operations::input_budget());
        let (mut operations, mut warnings) = operations::collect(&doc, &builder);
        let base = base_url(&config, &doc).map_err(fail)?;
        let names = method_names(&operations, config.expose_spec, &mut warnings);

        let mut by_name = HashMap::with_capacity(names.len());
        for (i, n) in names.iter().enumerate() {
            by_name.insert(n.clone(), i);
        }
        let resolve = |n: &str| -> Option<String> {
            if let Some(i) = operations.iter().position(|o| o.original == n) {
                return Some(names[i].clone());
            }
            if by_name.contains_key(n) || n == REQUEST_METHOD {
                return Some(n.to_string());
            }
            None
        };
        let reverts = RevertSet::build(&config.settings.reverts, resolve)
            .map_err(|e| fail(Cause::Revert(e)))?;

        let mut tools = Vec::with_capacity(operations.len() + 2);
        for (op, method) in operations.iter_mut().zip(&names) {
            let read_only = op.read_only();
            // The schemas move to the tools: requests are built from the parameters, and a
            // large API's schemas are most of its memory.
            tools.push(ToolSpec {
                name: method.clone(),
                description: Some(op.description.clone()),
                input_schema: std::mem::take(&mut op.input_schema),
                output_schema: op.output_schema.take(),
                requires_approval: config
                    .settings
                    .approval
                    .requires_approval(&[&op.original, method], read_only),
                read_only,
                replay: ReplayPolicy::Log,
                has_revert: reverts.has(method),
                http: Some(codemode::connector::HttpOperation {
                    method: op.method.clone(),
                    path: op.path.clone(),
                }),
                result_shape: None,
            });
        }
        tools.push(ToolSpec {
            name: REQUEST_METHOD.into(),
            description: Some(
                "Low-level HTTP request to this API (credentials are added by the host). Use it for \
                 endpoints that have no method of their own."
                    .into(),
            ),
            input_schema: request::raw_schema(),
            output_schema: None,
            requires_approval: config.settings.approval.requires_approval(&[REQUEST_METHOD], false),
            read_only: false,
            replay: ReplayPolicy::Log,
            has_revert: reverts.has(REQUEST_METHOD),
            http: None,
            result_shape: None,
        });
        let unused = apply_overrides(&mut tools, &config.settings.tools, |m| {
            names
                .iter()
                .position(|n| n == m)
                .map(|i| operations[i].original.clone())
        })
        .map_err(|e| fail(Cause::Override(e)))?;
        warnings.extend(unused);
        let spec = if config.expose_spec {
            let mut t = ToolSpec::new(SPEC_METHOD);
            t.description = Some("The API's OpenAPI document, as JSON.".into());
            t.input_schema = serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false});
            t.requires_approval = false;
            t.read_only = true;
            t.replay = ReplayPolicy::Reexecute;
            tools.push(t);
            Some(Arc::new(doc.clone()))
        } else {
            None
        };

        let mut headers = Vec::new();
        for (k, v) in &config.headers {
            let pair = HeaderName::from_bytes(k.as_bytes())
                .ok()
                .zip(HeaderValue::from_str(v).ok())
                .ok_or_else(|| fail(Cause::BadHeader(k.clone())))?;
            headers.push(pair);
        }
        let idempotency_header = match &config.idempotency_header {
            Some(h) => Some(
                HeaderName::from_bytes(h.as_bytes())
                    .map_err(|_| fail(Cause::BadHeader(h.clone())))?,
            ),
            None => None,
        };
        let warnings: Vec<String> = warnings
            .into_iter()
            .map(|w| format!("OpenAPI connector `{name}`: {w}"))
            .collect();
        for w in &warnings {
            tracing::warn!("{w}");
        }
        let instructions = config
            .instructions
            .clone()
            .or_else(|| default_instructions(&doc));
        Ok(OpenApiConnector {
            name: config.settings.name.clone(),
            instructions,
            operations,
            by_name,
            tools: StoredTools::new(tools),
            http: Http {
                client,
                base,
                credentials,
                headers,
                timeout: config.call_timeout(),
                max_error_body: config.max_error_body,
                max_response_bytes: config.max_response_bytes,
                idempotency_header,
                sender,
            },
            reverts,
            spec,
            description: config.description.clone(),
            warnings,
        })
    }

    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        self.http.base.as_str()
    }

    /// What went wrong without stopping the connector (operations renamed or left out), one
    /// sentence each naming the connector; empty when all is well.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// The document itself, shared rather than copied, when loaded with `expose_spec`.
    pub fn document(&self) -> Option<Arc<Value>> {
        self.spec.clone()
    }

    /// The configured `description` of what the API is for.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The number of operations (methods other than `request` and `spec`).
    pub fn operation_count(&self) -> usize {
        self.operations.len()
    }

    fn target(&self, method: &str) -> Option<Target<'_>> {
        if let Some(&i) = self.by_name.get(method) {
            return Some(Target::Operation(&self.operations[i]));
        }
        match (method, &self.spec) {
            (REQUEST_METHOD, _) => Some(Target::Request),
            (SPEC_METHOD, Some(spec)) => Some(Target::Spec(spec)),
            _ => None,
        }
    }

    async fn call(&self, method: &str, args: Value, key: &str) -> Result<Value, ToolError> {
        let req = match self.target(method) {
            Some(Target::Operation(op)) => request::for_operation(op, args)?,
            Some(Target::Request) => request::for_raw(args)?,
            Some(Target::Spec(doc)) => return Ok((**doc).clone()),
            None => {
                return Err(ToolError::new(format!(
                    "{} has no method {method:?}",
                    self.name
                )))
            }
        };
        self.http.send(req, key).await
    }
}

/// Builds an [`OpenApiConnector`], optionally with a [`RequestSender`] of the host's.
#[derive(Debug)]
pub struct OpenApiBuilder {
    config: OpenApiConfig,
    sender: Option<Sender>,
}

impl OpenApiBuilder {
    /// Sends every call through `sender` instead of the built-in client (the document is still
    /// fetched with the built-in one). Credentials configured in `auth` are added before it.
    pub fn sender(mut self, sender: Arc<dyn RequestSender>) -> Self {
        self.sender = Some(Sender(sender));
        self
    }

    /// Loads the document named by `config.spec` (a file, or a URL fetched now) and builds.
    pub async fn load(self) -> Result<OpenApiConnector, OpenApiError> {
        let config = self.config;
        let fail = |cause| OpenApiError::new(config.settings.name.clone(), cause);
        check_connector_name(&config.settings.name).map_err(|e| fail(Cause::Name(e)))?;
        let credentials = Credentials::from_config(config.auth.as_ref()).map_err(fail)?;
        let client = build_client().map_err(fail)?;
        let bytes = load::read_source(&config.spec, &client, config.call_timeout())
            .await
            .map_err(fail)?;
        OpenApiConnector::assemble(config, &bytes, client, credentials, self.sender)
    }

    /// Builds from a document already in memory (JSON or YAML).
    pub fn build(self, bytes: &[u8]) -> Result<OpenApiConnector, OpenApiError> {
        let config = self.config;
        let fail = |cause| OpenApiError::new(config.settings.name.clone(), cause);
        check_connector_name(&config.settings.name).map_err(|e| fail(Cause::Name(e)))?;
        let credentials = Credentials::from_config(config.auth.as_ref()).map_err(fail)?;
        let client = build_client().map_err(fail)?;
        OpenApiConnector::assemble(config, bytes, client, credentials, self.sender)
    }
}

fn build_client() -> Result<reqwest::Client, Cause> {
    codemode_tls::http_client_builder()
        .map_err(|e| Cause::Client(format!("its TLS settings: {e}")))?
        .build()
        .map_err(|e| Cause::Client(e.to_string()))
}

/// The configured base URL, else the document's first server (variables at their defaults).
fn base_url(config: &OpenApiConfig, doc: &Value) -> Result<Url, Cause> {
    let raw = match &config.base_url {
        Some(b) => b.clone(),
        None => {
            let server = doc
                .get("servers")
                .and_then(Value::as_array)
                .and_then(|s| s.first())
                .ok_or(Cause::NoBaseUrl)?;
            let mut url = server
                .get("url")
                .and_then(Value::as_str)
                .ok_or(Cause::NoBaseUrl)?
                .to_string();
            if let Some(vars) = server.get("variables").and_then(Value::as_object) {
                for (k, v) in vars {
                    if let Some(d) = v.get("default").and_then(Value::as_str) {
                        url = url.replace(&format!("{{{k}}}"), d);
                    }
                }
            }
            if !url.contains("://") {
                if load::is_url(&config.spec) {
                    let spec = Url::parse(&config.spec).map_err(|e| Cause::BadBaseUrl {
                        url: url.clone(),
                        message: e.to_string(),
                    })?;
                    spec.join(&url)
                        .map_err(|e| Cause::BadBaseUrl {
                            url: url.clone(),
                            message: e.to_string(),
                        })?
                        .to_string()
                } else {
                    return Err(Cause::NoBaseUrl);
                }
            } else {
                url
            }
        }
    };
    let url = Url::parse(&raw).map_err(|e| Cause::BadBaseUrl {
        url: raw.clone(),
        message: e.to_string(),
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.query().is_some() {
        return Err(Cause::BadBaseUrl {
            url: raw,
            message: "it must be an http(s) URL without a query".into(),
        });
    }
    Ok(url)
}

fn default_instructions(doc: &Value) -> Option<String> {
    let info = doc.get("info")?;
    let title = info.get("title").and_then(Value::as_str).unwrap_or("");
    let desc = info
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("");
    let text: String = format!("{title}\n\n{desc}")
        .trim()
        .chars()
        .take(1_000)
        .collect();
    (!text.is_empty()).then_some(text)
}

#[async_trait]
impl Connector for OpenApiConnector {
    fn name(&self) -> &str {
        &self.name
    }

    fn instructions(&self) -> Option<String> {
        self.instructions.clone()
    }

    fn tools(&self) -> Vec<ToolSpec> {
        self.tools.specs()
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    async fn execute(
        &self,
        method: &str,
        args: Value,
        ctx: CallContext,
    ) -> Result<Value, ToolError> {
        self.call(method, args, &ctx.idempotency_key()).await
    }

    async fn revert(
        &self,
        method: &str,
        args: Value,
        result: Value,
        ctx: CallContext,
    ) -> Result<(), ToolError> {
        let Some(plan) = self.reverts.plan(method, &args, &result) else {
            return Err(ToolError::new(format!(
                "{}.{method} has no revert",
                self.name
            )));
        };
        let (revert, revert_args) =
            plan.map_err(|e| ToolError::new(format!("revert of {}.{method}: {e}", self.name)))?;
        let key = format!("{}:revert", ctx.idempotency_key());
        self.call(&revert, revert_args, &key)
            .await
            .map(|_| ())
            .map_err(|e| {
                ToolError::new(format!("revert of {}.{method} by {revert}: {e}", self.name))
            })
    }
}
