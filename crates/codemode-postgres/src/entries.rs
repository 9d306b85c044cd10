//! Log entries as column arrays, and the upsert that writes them by seq.

use crate::codec::{json, json_decisions, opt_text_in, seq_to_sql};
use codemode::{LogEntry, StoreError};
use std::borrow::Cow;
use std::collections::BTreeMap;
use tokio_postgres::types::ToSql;

/// Upserts the entries given as arrays from `$first` on, if the CTE `cas` returned a row.
pub(crate) fn upsert_entries(first: usize) -> String {
    let p = |i: usize| format!("${}", first + i);
    format!(
        "INSERT INTO codemode_log_entries (runtime, execution_id, seq, connector, method, args,
                                  result, error, requires_approval, ephemeral, state,
                                  approved_args, decisions, delivered, read_only)
    SELECT $1, $2, e.* FROM unnest({}::bigint[], {}::text[], {}::text[], {}::text[],
                                  {}::text[], {}::text[], {}::boolean[], {}::boolean[],
                                  {}::text[], {}::text[], {}::text[], {}::bigint[],
                                  {}::boolean[]) AS e
    WHERE EXISTS (SELECT 1 FROM cas)
    ON CONFLICT (runtime, execution_id, seq) DO UPDATE SET
        connector = excluded.connector, method = excluded.method, args = excluded.args,
        result = excluded.result, error = excluded.error,
        requires_approval = excluded.requires_approval, ephemeral = excluded.ephemeral,
        state = excluded.state, approved_args = excluded.approved_args,
        decisions = excluded.decisions, delivered = excluded.delivered,
        read_only = excluded.read_only",
        p(0),
        p(1),
        p(2),
        p(3),
        p(4),
        p(5),
        p(6),
        p(7),
        p(8),
        p(9),
        p(10),
        p(11),
        p(12)
    )
}

/// Log entries as column arrays, one element per entry (the last of a repeated seq wins).
pub(crate) struct EntryArrays<'a> {
    seqs: Vec<i64>,
    connectors: Vec<&'a str>,
    methods: Vec<&'a str>,
    args: Vec<String>,
    results: Vec<Option<String>>,
    errors: Vec<Option<Cow<'a, str>>>,
    approvals: Vec<bool>,
    ephemerals: Vec<bool>,
    states: Vec<&'a str>,
    approved_args: Vec<Option<String>>,
    decisions: Vec<Option<String>>,
    delivered: Vec<Option<i64>>,
    read_onlys: Vec<bool>,
}

impl<'a> EntryArrays<'a> {
    /// Encodes `entries`.
    pub fn new(entries: &'a [LogEntry]) -> Result<Self, StoreError> {
        let mut by_seq: BTreeMap<u64, &LogEntry> = BTreeMap::new();
        for e in entries {
            by_seq.insert(e.seq, e);
        }
        let n = by_seq.len();
        let mut a = EntryArrays {
            seqs: Vec::with_capacity(n),
            connectors: Vec::with_capacity(n),
            methods: Vec::with_capacity(n),
            args: Vec::with_capacity(n),
            results: Vec::with_capacity(n),
            errors: Vec::with_capacity(n),
            approvals: Vec::with_capacity(n),
            ephemerals: Vec::with_capacity(n),
            states: Vec::with_capacity(n),
            approved_args: Vec::with_capacity(n),
            decisions: Vec::with_capacity(n),
            delivered: Vec::with_capacity(n),
            read_onlys: Vec::with_capacity(n),
        };
        for e in by_seq.into_values() {
            a.seqs.push(seq_to_sql(e.seq)?);
            a.connectors.push(&e.connector);
            a.methods.push(&e.method);
            a.args.push(json(&e.args)?);
            a.results.push(e.result.as_ref().map(json).transpose()?);
            a.errors.push(opt_text_in(e.error.as_deref()));
            a.approvals.push(e.requires_approval);
            a.ephemerals.push(e.ephemeral);
            a.states.push(e.state.as_str());
            a.approved_args
                .push(e.approved_args.as_ref().map(json).transpose()?);
            a.decisions.push(json_decisions(&e.decisions)?);
            a.delivered.push(e.delivered.map(seq_to_sql).transpose()?);
            a.read_onlys.push(e.read_only);
        }
        Ok(a)
    }

    /// The thirteen array parameters, in the order [`upsert_entries`] expects.
    pub fn params(&self) -> [&(dyn ToSql + Sync); 13] {
        [
            &self.seqs,
            &self.connectors,
            &self.methods,
            &self.args,
            &self.results,
            &self.errors,
            &self.approvals,
            &self.ephemerals,
            &self.states,
            &self.approved_args,
            &self.decisions,
            &self.delivered,
            &self.read_onlys,
        ]
    }
}
