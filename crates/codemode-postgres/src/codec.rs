//! Conversion between rows and the core's records.

use codemode::{Decision, EntryState, Execution, ExecutionStatus, LogEntry, StoreError};
use serde_json::Value;
use std::borrow::Cow;
use tokio_postgres::Row;

/// JSON text of a value.
pub(crate) fn json(value: &Value) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(format!("encoding JSON: {e}")))
}

/// JSON text of a list of decisions; `None` (NULL) for none.
pub(crate) fn json_decisions(decisions: &[Decision]) -> Result<Option<String>, StoreError> {
    if decisions.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(decisions)
        .map(Some)
        .map_err(|e| StoreError::Backend(format!("encoding JSON: {e}")))
}

/// JSON text of one decision.
pub(crate) fn json_decision(decision: &Decision) -> Result<String, StoreError> {
    serde_json::to_string(decision).map_err(|e| StoreError::Backend(format!("encoding JSON: {e}")))
}

fn decisions(text: Option<String>, what: &str) -> Result<Vec<Decision>, StoreError> {
    match text {
        None => Ok(Vec::new()),
        Some(text) => {
            serde_json::from_str(&text).map_err(|e| StoreError::Decode(format!("{what}: {e}")))
        }
    }
}

/// Marks a text stored escaped: the JSON string literal of the text follows it.
const ESCAPED: char = '\u{1}';

/// A text as PostgreSQL's `text` can hold it: one holding NUL (U+0000), which `text` refuses,
/// or starting with [`ESCAPED`] is stored as `ESCAPED` followed by its JSON string literal
/// (NUL written `\u0000`); any other text is stored as it is. [`text_out`] reverses it.
pub(crate) fn text_in(text: &str) -> Cow<'_, str> {
    if !text.contains('\0') && !text.starts_with(ESCAPED) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    out.push(ESCAPED);
    // Serialising a string cannot fail.
    out.push_str(&serde_json::to_string(text).unwrap_or_default());
    Cow::Owned(out)
}

/// [`text_in`] for an optional text.
pub(crate) fn opt_text_in(text: Option<&str>) -> Option<Cow<'_, str>> {
    text.map(text_in)
}

/// A stored text as it was given to [`text_in`].
pub(crate) fn text_out(stored: String) -> Result<String, StoreError> {
    match stored.strip_prefix(ESCAPED) {
        None => Ok(stored),
        Some(literal) => serde_json::from_str(literal)
            .map_err(|e| StoreError::Decode(format!("an escaped text: {e}"))),
    }
}

/// [`text_out`] for an optional text.
pub(crate) fn opt_text_out(stored: Option<String>) -> Result<Option<String>, StoreError> {
    stored.map(text_out).transpose()
}

/// JSON text of a list of strings.
pub(crate) fn json_strings(values: &[String]) -> Result<String, StoreError> {
    serde_json::to_string(values).map_err(|e| StoreError::Backend(format!("encoding JSON: {e}")))
}

/// Parses stored JSON text.
pub(crate) fn value(text: &str, what: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Decode(format!("{what}: {e}")))
}

fn strings(text: &str, what: &str) -> Result<Vec<String>, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Decode(format!("{what}: {e}")))
}

/// A seq as stored (BIGINT is signed).
pub(crate) fn seq_to_sql(seq: u64) -> Result<i64, StoreError> {
    i64::try_from(seq).map_err(|_| StoreError::Backend(format!("seq {seq} is too large")))
}

/// A stored seq.
pub(crate) fn seq_from_sql(seq: i64) -> Result<u64, StoreError> {
    u64::try_from(seq).map_err(|_| StoreError::Decode(format!("negative seq {seq}")))
}

/// Parses a stored execution status.
pub(crate) fn status(text: &str) -> Result<ExecutionStatus, StoreError> {
    ExecutionStatus::parse(text)
        .ok_or_else(|| StoreError::Decode(format!("unknown execution status {text:?}")))
}

/// Reads column `i`, turning a type mismatch into [`StoreError::Decode`].
pub(crate) fn get<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    i: usize,
) -> Result<T, StoreError> {
    row.try_get(i)
        .map_err(|e| StoreError::Decode(format!("column {i}: {e}")))
}

/// The columns [`execution`] decodes, from `e` (an execution row) and `l` (its log).
const WITH_LOG_COLUMNS: &str = "
       e.id, e.code, e.status, e.result, e.error, e.logs, e.connectors, e.created_at,
       e.updated_at, e.decisions, l.seqs, l.connectors, l.methods, l.args, l.results,
       l.errors, l.approvals, l.ephemerals, l.states, l.approved_args, l.decisions,
       l.delivered, l.read_onlys, e.traceparent, e.clock";

/// The log of `e`, aggregated into one array per column.
const LOG_JOIN: &str = "
CROSS JOIN LATERAL (
    SELECT array_agg(seq ORDER BY seq) AS seqs,
           array_agg(connector ORDER BY seq) AS connectors,
           array_agg(method ORDER BY seq) AS methods,
           array_agg(args ORDER BY seq) AS args,
           array_agg(result ORDER BY seq) AS results,
           array_agg(error ORDER BY seq) AS errors,
           array_agg(requires_approval ORDER BY seq) AS approvals,
           array_agg(ephemeral ORDER BY seq) AS ephemerals,
           array_agg(state ORDER BY seq) AS states,
           array_agg(approved_args ORDER BY seq) AS approved_args,
           array_agg(decisions ORDER BY seq) AS decisions,
           array_agg(delivered ORDER BY seq) AS delivered,
           array_agg(read_only ORDER BY seq) AS read_onlys
    FROM codemode_log_entries
    WHERE runtime = e.runtime AND execution_id = e.id
) l";

/// The columns [`execution`] decodes with the code, results, errors and console output
/// left out (an audit export's read), from `e` and `l` as in [`audit_executions`].
const AUDIT_COLUMNS: &str = "
       e.id, '' AS code, e.status, NULL::text AS result, NULL::text AS error, '[]' AS logs,
       e.connectors, e.created_at, e.updated_at, e.decisions, l.seqs, l.connectors,
       l.methods, l.args, l.results, l.errors, l.approvals, l.ephemerals, l.states,
       l.approved_args, l.decisions, l.delivered, l.read_onlys, e.traceparent";

/// The applied and reverted entries of `e` and those a decision concerned, without results
/// or errors, one array a column.
pub(crate) const AUDIT_LOG_JOIN: &str = "
CROSS JOIN LATERAL (
    SELECT array_agg(seq ORDER BY seq) AS seqs,
           array_agg(connector ORDER BY seq) AS connectors,
           array_agg(method ORDER BY seq) AS methods,
           array_agg(args ORDER BY seq) AS args,
           array_agg(NULL::text ORDER BY seq) AS results,
           array_agg(NULL::text ORDER BY seq) AS errors,
           array_agg(requires_approval ORDER BY seq) AS approvals,
           array_agg(ephemeral ORDER BY seq) AS ephemerals,
           array_agg(state ORDER BY seq) AS states,
           array_agg(approved_args ORDER BY seq) AS approved_args,
           array_agg(decisions ORDER BY seq) AS decisions,
           array_agg(delivered ORDER BY seq) AS delivered,
           array_agg(read_only ORDER BY seq) AS read_onlys
    FROM codemode_log_entries
    WHERE runtime = e.runtime AND execution_id = e.id
      AND (state IN ('applied', 'reverted') OR decisions IS NOT NULL)
) l";

/// A query of the executions in `rows` (aliased `e`) as an audit export reads them;
/// [`execution`] decodes its rows.
pub(crate) fn audit_executions(rows: &str) -> String {
    format!("SELECT {AUDIT_COLUMNS}\nFROM {rows} e{AUDIT_LOG_JOIN}")
}

/// A query of the executions in `rows` (a table or a CTE, aliased `e`), each with its whole
/// log aggregated into arrays, in one snapshot; [`execution`] decodes its rows.
pub(crate) fn executions_with_log(rows: &str) -> String {
    format!("SELECT {WITH_LOG_COLUMNS}\nFROM {rows} e{LOG_JOIN}")
}

/// Decodes one row of [`executions_with_log`].
pub(crate) fn execution(row: &Row) -> Result<Execution, StoreError> {
    let id: String = get(row, 0)?;
    let what = |field: &str| format!("execution {id} {field}");
    let result: Option<String> = get(row, 3)?;
    let logs: String = get(row, 5)?;
    let connectors: String = get(row, 6)?;
    // An audit read has no clock column: the tape matters to passes only.
    let clock: Option<String> = if row.len() > 24 { get(row, 24)? } else { None };
    Ok(Execution {
        clock: codemode::ClockTape::from_json(clock.as_deref())
            .map_err(|e| StoreError::Decode(format!("{}: {e}", what("clock"))))?,
        code: text_out(get(row, 1)?)?,
        status: status(&get::<String>(row, 2)?)?,
        log: log(row, 10)?,
        decisions: decisions(get(row, 9)?, &what("decisions"))?,
        result: result.map(|t| value(&t, &what("result"))).transpose()?,
        error: opt_text_out(get(row, 4)?)?,
        logs: strings(&logs, &what("logs"))?,
        connectors: strings(&connectors, &what("connectors"))?,
        created_at: get(row, 7)?,
        updated_at: get(row, 8)?,
        traceparent: get(row, 23)?,
        id,
    })
}

/// Decodes the thirteen entry arrays starting at column `at`.
fn log(row: &Row, at: usize) -> Result<Vec<LogEntry>, StoreError> {
    let seqs: Option<Vec<i64>> = get(row, at)?;
    let Some(seqs) = seqs else {
        return Ok(Vec::new());
    };
    let mut connectors: Vec<String> = get(row, at + 1)?;
    let mut methods: Vec<String> = get(row, at + 2)?;
    let args: Vec<String> = get(row, at + 3)?;
    let mut results: Vec<Option<String>> = get(row, at + 4)?;
    let mut errors: Vec<Option<String>> = get(row, at + 5)?;
    let approvals: Vec<bool> = get(row, at + 6)?;
    let ephemerals: Vec<bool> = get(row, at + 7)?;
    let states: Vec<String> = get(row, at + 8)?;
    let mut approved: Vec<Option<String>> = get(row, at + 9)?;
    let mut entry_decisions: Vec<Option<String>> = get(row, at + 10)?;
    let delivered: Vec<Option<i64>> = get(row, at + 11)?;
    let read_onlys: Vec<bool> = get(row, at + 12)?;
    let n = seqs.len();
    let lens = [
        connectors.len(),
        methods.len(),
        args.len(),
        results.len(),
        errors.len(),
        approvals.len(),
        ephemerals.len(),
        states.len(),
        approved.len(),
        entry_decisions.len(),
        delivered.len(),
        read_onlys.len(),
    ];
    if lens.iter().any(|&l| l != n) {
        return Err(StoreError::Decode("log columns of unequal length".into()));
    }
    let mut out = Vec::with_capacity(n);
    for (i, seq) in seqs.into_iter().enumerate() {
        let seq = seq_from_sql(seq)?;
        let state = &states[i];
        out.push(LogEntry {
            seq,
            connector: std::mem::take(&mut connectors[i]),
            method: std::mem::take(&mut methods[i]),
            args: value(&args[i], &format!("seq {seq} args"))?,
            result: results[i]
                .take()
                .map(|t| value(&t, &format!("seq {seq} result")))
                .transpose()?,
            error: opt_text_out(errors[i].take())?,
            approved_args: approved[i]
                .take()
                .map(|t| value(&t, &format!("seq {seq} approved args")))
                .transpose()?,
            decisions: decisions(entry_decisions[i].take(), &format!("seq {seq} decisions"))?,
            requires_approval: approvals[i],
            ephemeral: ephemerals[i],
            read_only: read_onlys[i],
            state: EntryState::parse(state)
                .ok_or_else(|| StoreError::Decode(format!("unknown entry state {state:?}")))?,
            delivered: delivered[i].map(seq_from_sql).transpose()?,
        });
    }
    Ok(out)
}
