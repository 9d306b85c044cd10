//! Property test: a JavaScript value of any kind (JSON, `undefined`, holes, NaN, ±Infinity,
//! -0, BigInt, Date, Map, Set, typed arrays, Error, RegExp, objects shaped like a tag, and
//! what cannot cross: functions, symbols, Promises, WeakMaps, cycles) either comes back the
//! same from `codemode.step` and from a connector that echoes it, on the pass that resumes
//! after an approval (replayed from the log), or is refused on the first pass with a message
//! that starts with its path. The first pass notes what it saw in a call whose arguments a
//! replay must match, so a replay that saw anything else would diverge. On a SQLite file and
//! on PostgreSQL. `PROPTEST_CASES` sets the number of cases.

use codemode::{Outcome, Runtime, RustConnector, RustTool, Store};
use codemode_postgres::{PostgresStore, ScratchDatabase};
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestRunner};
use serde_json::{json, Value};
use std::sync::Arc;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A JavaScript value, written as source by [`Node::js`].
#[derive(Clone, Debug)]
enum Node {
    Null,
    Bool(bool),
    Number(f64),
    Text(String),
    BigInt(i128),
    HugeBigInt,
    Undefined,
    Date(Option<i64>),
    Bytes(Vec<u8>),
    Typed(&'static str, Vec<i16>),
    /// `None` is a hole.
    Array(Vec<Option<Node>>),
    Object(Vec<(String, Node)>),
    Map(Vec<(Node, Node)>),
    Set(Vec<Node>),
    Error(String),
    RegExp,
    Function,
    Symbol,
    Promise,
    WeakMap,
    /// `{x: 1, self: <itself>}`.
    Cycle,
}

/// Where a value is: its path as an error names it, and whether its holder is an array.
fn child(path: &str, key: &str) -> String {
    let identifier = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", serde_json::to_string(key).unwrap())
    }
}

const TAG_KEYS: [&str; 5] = ["$map", "$bigint", "$escape", "$date", "$undefined"];

impl Node {
    fn js(&self) -> String {
        match self {
            Node::Null => "null".into(),
            Node::Bool(b) => b.to_string(),
            Node::Number(n) if n.is_nan() => "NaN".into(),
            Node::Number(n) if n.is_infinite() => {
                if *n > 0.0 { "Infinity" } else { "-Infinity" }.into()
            }
            Node::Number(n) if *n == 0.0 && n.is_sign_negative() => "-0".into(),
            Node::Number(n) => format!("{n:e}"),
            Node::Text(s) => serde_json::to_string(s).unwrap(),
            Node::BigInt(i) => format!("{i}n"),
            Node::HugeBigInt => "10n ** 10001n".into(),
            Node::Undefined => "undefined".into(),
            Node::Date(Some(ms)) => format!("new Date({ms})"),
            Node::Date(None) => "new Date('not a date')".into(),
            Node::Bytes(b) => format!("new Uint8Array({b:?})"),
            Node::Typed(kind, items) => format!("new {kind}({items:?})"),
            Node::Array(items) => {
                let parts: Vec<String> = items
                    .iter()
                    .map(|i| i.as_ref().map_or(String::new(), Node::js))
                    .collect();
                // A trailing hole needs its own comma.
                let trailing = if matches!(items.last(), Some(None)) {
                    ","
                } else {
                    ""
                };
                format!("[{}{trailing}]", parts.join(", "))
            }
            Node::Object(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{}: {}", serde_json::to_string(k).unwrap(), v.js()))
                    .collect();
                format!("({{{}}})", parts.join(", "))
            }
            Node::Map(entries) => {
                let parts: Vec<String> = entries
                    .iter()
                    .map(|(k, v)| format!("[{}, {}]", k.js(), v.js()))
                    .collect();
                format!("new Map([{}])", parts.join(", "))
            }
            Node::Set(items) => {
                let parts: Vec<String> = items.iter().map(Node::js).collect();
                format!("new Set([{}])", parts.join(", "))
            }
            Node::Error(m) => format!("new RangeError({})", serde_json::to_string(m).unwrap()),
            Node::RegExp => "/a+b/giu".into(),
            Node::Function => "(() => 1)".into(),
            Node::Symbol => "Symbol('s')".into(),
            Node::Promise => "Promise.resolve(1)".into(),
            Node::WeakMap => "new WeakMap()".into(),
            Node::Cycle => "(() => { const o = {x: 1}; o.self = o; return o })()".into(),
        }
    }

    /// The path of the first part a step refuses, if any (the order `JSON.stringify` visits).
    fn step_refusal(&self, path: &str) -> Option<String> {
        match self {
            Node::HugeBigInt | Node::Function | Node::Symbol | Node::Promise | Node::WeakMap => {
                Some(path.to_string())
            }
            Node::Cycle => Some(child(path, "self")),
            Node::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
                item.as_ref()
                    .and_then(|n| n.step_refusal(&format!("{path}[{i}]")))
            }),
            Node::Object(fields) => {
                let escaped = fields.len() == 1 && TAG_KEYS.contains(&fields[0].0.as_str());
                let at = if escaped {
                    child(path, "$escape")
                } else {
                    path.to_string()
                };
                fields
                    .iter()
                    .find_map(|(k, v)| v.step_refusal(&child(&at, k)))
            }
            Node::Map(entries) => entries.iter().enumerate().find_map(|(i, (k, v))| {
                k.step_refusal(&format!("{path}.$map[{i}][0]"))
                    .or_else(|| v.step_refusal(&format!("{path}.$map[{i}][1]")))
            }),
            Node::Set(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, n)| n.step_refusal(&format!("{path}.$set[{i}]"))),
            _ => None,
        }
    }

    /// The path of the first part a connector call refuses, if any.
    fn wire_refusal(&self, path: &str, in_array: bool) -> Option<String> {
        match self {
            Node::Number(n) if !n.is_finite() => Some(path.to_string()),
            Node::Undefined if in_array => Some(path.to_string()),
            Node::Date(None)
            | Node::HugeBigInt
            | Node::Typed(..)
            | Node::Map(_)
            | Node::Set(_)
            | Node::Error(_)
            | Node::RegExp
            | Node::Function
            | Node::Symbol
            | Node::Promise
            | Node::WeakMap => Some(path.to_string()),
            Node::Cycle => Some(child(path, "self")),
            Node::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
                let at = format!("{path}[{i}]");
                match item {
                    None => Some(at),
                    Some(n) => n.wire_refusal(&at, true),
                }
            }),
            Node::Object(fields) => fields
                .iter()
                .find_map(|(k, v)| v.wire_refusal(&child(path, k), false)),
            _ => None,
        }
    }
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z]{1,5}",
        1 => "[a-z]{1,3} [a-z]{1,3}",
        1 => prop::sample::select(TAG_KEYS.to_vec()).prop_map(String::from),
    ]
}

fn leaf() -> impl Strategy<Value = Node> {
    prop_oneof![
        Just(Node::Null),
        any::<bool>().prop_map(Node::Bool),
        any::<f64>().prop_map(Node::Number),
        prop::sample::select(vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            0.1 + 0.2
        ])
        .prop_map(Node::Number),
        "\\PC{0,8}".prop_map(Node::Text),
        any::<i128>().prop_map(Node::BigInt),
        Just(Node::HugeBigInt),
        Just(Node::Undefined),
        prop::option::of(-8_640_000_000_000_000i64..=8_640_000_000_000_000).prop_map(Node::Date),
        prop::collection::vec(any::<u8>(), 0..6).prop_map(Node::Bytes),
        (
            prop::sample::select(vec!["Int16Array", "Float64Array", "Float32Array"]),
            prop::collection::vec(any::<i16>(), 0..4)
        )
            .prop_map(|(k, v)| Node::Typed(k, v)),
        "[a-z ]{0,8}".prop_map(Node::Error),
        Just(Node::RegExp),
        Just(Node::Function),
        Just(Node::Symbol),
        Just(Node::Promise),
        Just(Node::WeakMap),
        Just(Node::Cycle),
    ]
}

fn node() -> impl Strategy<Value = Node> {
    leaf().prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(prop::option::weighted(0.85, inner.clone()), 0..4)
                .prop_map(Node::Array),
            prop::collection::vec((key(), inner.clone()), 0..4).prop_map(|fields| {
                // Distinct keys: a repeated key in a literal keeps only the last.
                let mut seen = std::collections::HashSet::new();
                Node::Object(
                    fields
                        .into_iter()
                        .filter(|(k, _)| seen.insert(k.clone()))
                        .collect(),
                )
            }),
            prop::collection::vec((inner.clone(), inner.clone()), 0..3).prop_map(Node::Map),
            prop::collection::vec(inner, 0..3).prop_map(Node::Set),
        ]
    })
}

/// The JavaScript `same(a, b, wire)`: whether what came back is what was made, kind for kind.
const SAME: &str = include_str!("values_same.js");

fn program(node: &Node) -> String {
    format!(
        r#"async () => {{
  {SAME}
  const make = () => ({expr});
  const seen = {{}};
  try {{
    const v = await codemode.step("v", make);
    seen.step = same(v, make(), false);
  }} catch (e) {{
    seen.step = "refused: " + e.message;
  }}
  try {{
    const w = await probe.echo({{ v: make() }});
    seen.wire = same(w.v, make(), true);
  }} catch (e) {{
    seen.wire = "refused: " + e.message;
  }}
  await probe.note(seen);
  await probe.gate({{}});
  return seen;
}}"#,
        expr = node.js()
    )
}

fn rig(store: Arc<dyn Store>) -> Runtime {
    let probe = RustConnector::new("probe")
        .tool(RustTool::new("echo", |args, _ctx| async move { Ok(args) }).read_only())
        .tool(RustTool::new("note", |_args, _ctx| async { Ok(json!(null)) }).read_only())
        .tool(RustTool::new("gate", |_args, _ctx| async {
            Ok(json!(null))
        }));
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    Runtime::builder(store, executor)
        .connector(probe)
        .max_executions(10)
        .build()
        .unwrap()
}

fn expect(seen: &Value, refusal: Option<String>, what: &str) -> Result<(), TestCaseError> {
    match refusal {
        None => prop_assert_eq!(seen, &json!(true), "{} came back changed", what),
        Some(path) => {
            let text = seen.as_str().unwrap_or_default();
            prop_assert!(
                text.starts_with(&format!("refused: {path}: ")),
                "{what}: expected a refusal at {path}, got {seen}"
            );
        }
    }
    Ok(())
}

async fn round_trip(rt: &Runtime, node: &Node) -> Result<(), TestCaseError> {
    // Inside an array: `await` would unwrap a Promise at the top.
    let node = &Node::Array(vec![Some(node.clone())]);
    let paused = rt.call(&program(node)).await.unwrap();
    prop_assert!(matches!(paused, Outcome::Paused { .. }), "{paused:?}");
    let done = rt.approve(paused.execution_id()).await.unwrap();
    let Outcome::Completed { result, .. } = done else {
        return Err(TestCaseError::fail(format!("{done:?}")));
    };
    expect(&result["step"], node.step_refusal("step(\"v\")"), "a step")?;
    expect(
        &result["wire"],
        node.wire_refusal("args.v", false),
        "a connector's echo",
    )?;
    Ok(())
}

fn check(tokio: &tokio::runtime::Runtime, rt: &Runtime) {
    let config = ProptestConfig {
        cases: cases(300),
        source_file: Some(file!()),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&node(), |n| tokio.block_on(round_trip(rt, &n)));
    if let Err(e) = result {
        panic!("{e}");
    }
}

fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn every_value_survives_a_replay_or_is_refused_at_its_path_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.path().join("v.db")).unwrap());
    let tokio = tokio();
    let rt = tokio.block_on(async { rig(store) });
    check(&tokio, &rt);
}

#[test]
fn every_value_survives_a_replay_or_is_refused_at_its_path_on_postgres() {
    let tokio = tokio();
    let Some(db) = tokio
        .block_on(ScratchDatabase::for_tests("values_both_ways"))
        .expect("the PostgreSQL test server")
    else {
        return;
    };
    let store = tokio.block_on(async { PostgresStore::connect(db.url()).await.expect("connect") });
    let rt = tokio.block_on(async { rig(Arc::new(store)) });
    check(&tokio, &rt);
    drop(rt);
    tokio.block_on(async move { drop(db) });
}
