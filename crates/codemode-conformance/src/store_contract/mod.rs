//! The contracts of the [`Store`] and [`FileStore`](codemode::FileStore) traits, as cases any store is held to.
//!
//! Each case is an `async fn` that takes a fresh, empty store and panics, naming the broken
//! rule, when the store breaks the contract. Three lists name them, one per kind of store:
//! [`for_each_store_contract_case!`](crate::for_each_store_contract_case), what every store
//! of executions owes (and all a new one owes);
//! [`for_each_file_store_contract_case!`](crate::for_each_file_store_contract_case), what a
//! store of workspace files owes; and
//! [`for_each_store_with_files_contract_case!`](crate::for_each_store_with_files_contract_case),
//! what a store that keeps both owes besides (an execution's undo records go with it). Each
//! store's test file (`tests/store_contract_*.rs`) turns the lists it implements into one
//! test per case, each on a store of its own. What only one store can show (two connections
//! racing on one SQLite file, rows left in its tables) stays in that store's crate.

mod archive;
mod claim;
mod clock;
mod commit;
mod decisions;
mod executions;
mod files;
mod listing;
mod queries;
mod runtimes;
mod values;

pub use archive::*;
pub use claim::*;
pub use clock::*;
pub use commit::*;
pub use decisions::*;
pub use executions::*;
pub use files::*;
pub use listing::*;
pub use queries::*;
pub use runtimes::*;
pub use values::*;

use codemode::{
    Claim, Commit, EntryState, Execution, ExecutionStatus, Lease, LogEntry, Snippet, Store,
    Transition,
};
use serde_json::json;

/// Calls the macro `$then!` with the name of every case of the execution store's contract
/// ([`Store`]; each takes a `&dyn Store`), comma-separated.
#[macro_export]
macro_rules! for_each_store_contract_case {
    ($then:ident) => {
        $then! {
            a_commit_upserts_entries_by_seq,
            a_commit_records_the_clock_tape_and_a_claim_reads_it_back,
            a_transition_records_its_result_and_logs_and_a_later_one_keeps_them,
            an_error_transition_records_its_message,
            a_commit_with_a_stale_status_writes_nothing_not_even_its_entries,
            a_commit_by_a_node_that_does_not_hold_the_lease_writes_nothing,
            a_commit_by_a_node_that_lost_its_lease_writes_nothing,
            a_commit_on_a_missing_execution_writes_nothing,
            an_illegal_transition_is_an_error_and_writes_nothing,
            every_status_transition_is_written_exactly_when_the_contract_allows_it,
            decisions_and_approved_args_are_kept_in_order,
            a_cancel_takes_the_run_from_the_pass_holding_it,
            a_cancelled_run_is_held_to_record_its_writes,
            only_one_of_two_claims_on_a_paused_execution_wins,
            a_claim_on_a_running_execution_waits_for_its_lease_to_expire,
            a_claim_from_another_status_or_on_a_missing_execution_loses,
            leaving_running_releases_the_lease_so_a_paused_execution_is_claimable_at_once,
            a_claim_returns_the_execution_it_won_or_the_one_it_was_refused,
            a_claim_is_refused_while_a_connector_the_execution_recorded_is_unavailable,
            an_inserted_execution_reads_back_exactly,
            a_duplicate_id_is_a_clear_error_and_writes_nothing,
            executions_list_newest_first_with_their_logs,
            executions_filter_by_status,
            summaries_page_newest_first_with_counts_and_no_log,
            the_audit_read_filters_its_window_and_entries_in_the_store,
            delete_removes_the_execution_and_its_log,
            a_hold_excludes_every_other_decision_until_released,
            retention_prunes_the_oldest_terminal_executions_and_never_running_or_paused,
            retention_breaks_created_at_ties_by_insertion_order,
            retention_off_keeps_every_execution,
            retention_keeps_recent_approved_writes_for_their_audit_and_rollback,
            retention_keeps_recent_writes_that_needed_no_approval,
            a_pruned_execution_leaves_no_log_behind,
            stale_finds_old_paused_and_expired_running_executions_only,
            pending_lists_pending_entries_of_paused_executions_newest_first,
            pending_pages_follow_the_order_of_the_full_list,
            snippets_are_saved_replaced_listed_by_name_and_deleted,
            runtime_names_keep_separate_executions,
            runtime_names_keep_separate_snippets,
            text_with_nul_characters_round_trips_exactly,
            the_audit_trail_outlives_pruning_and_deletion_until_its_max_age,
        }
    };
}

/// Calls the macro `$then!` with the name of every case of the workspace files' contract
/// ([`FileStore`](codemode::FileStore); each takes a `&dyn FileStore`), comma-separated.
#[macro_export]
macro_rules! for_each_file_store_contract_case {
    ($then:ident) => {
        $then! {
            file_changes_apply_once_per_key_and_count_bytes,
            a_file_change_over_a_limit_writes_nothing,
            undo_records_count_against_the_quota_until_reverted,
            reverting_file_changes_restores_what_was_there,
            files_list_by_prefix_and_workspaces_stay_apart,
        }
    };
}

/// Calls the macro `$then!` with the name of every case a store that keeps executions and
/// workspace files together owes besides both contracts ([`StoreWithFiles`](codemode::StoreWithFiles); each takes a
/// `&dyn StoreWithFiles`), comma-separated.
#[macro_export]
macro_rules! for_each_store_with_files_contract_case {
    ($then:ident) => {
        $then! {
            deleting_or_pruning_an_execution_drops_its_file_undo_records,
            deleting_or_pruning_an_execution_frees_the_quota_its_undo_records_held,
        }
    };
}

/// The runtime name the cases use unless they compare several.
const RT: &str = "default";

/// A lease end no case reaches.
const FAR: i64 = i64::MAX / 2;

/// A running execution created (and last updated) at `created_at`, with no log.
fn execution(id: &str, created_at: i64) -> Execution {
    Execution {
        id: id.to_string(),
        code: format!("async () => {{ return {id:?}; }}"),
        status: ExecutionStatus::Running,
        log: Vec::new(),
        result: None,
        error: None,
        logs: Vec::new(),
        connectors: vec!["github".into(), "stripe".into()],
        created_at,
        updated_at: created_at,
        decisions: Vec::new(),
        traceparent: None,
        clock: Default::default(),
    }
}

/// A lease held by `owner` until `until_ms`.
fn lease(owner: &str, until_ms: i64) -> Lease {
    Lease {
        owner: owner.to_string(),
        until_ms,
    }
}

/// An entry at `seq` in `state`. Its JSON keys are deliberately out of alphabetical order,
/// so that a store which reorders them is caught.
fn entry(seq: u64, state: EntryState) -> LogEntry {
    LogEntry {
        seq,
        connector: "github".into(),
        method: "create_issue".into(),
        args: json!({ "title": format!("issue {seq}"), "labels": ["a", "b"], "b": 1, "a": 2 }),
        result: (state == EntryState::Applied)
            .then(|| json!({ "number": seq, "z": 0, "y": [1, 2] })),
        error: None,
        requires_approval: state == EntryState::Pending,
        ephemeral: false,
        read_only: false,
        state,
        approved_args: None,
        decisions: Vec::new(),
        delivered: None,
    }
}

/// A snippet named `name`, with an input schema and a connector.
fn snippet(name: &str) -> Snippet {
    Snippet {
        name: name.to_string(),
        description: format!("the {name} recipe"),
        code: "async (input) => input".into(),
        saved_at: 1_000,
        input_schema: Some(
            json!({ "type": "object", "properties": { "n": { "type": "number" } } }),
        ),
        connectors: vec!["github".into()],
    }
}

/// A commit of `entries` to `id`, conditional on `owner` holding the lease when given.
fn commit(id: &str, owner: Option<&str>, entries: Vec<LogEntry>) -> Commit {
    Commit {
        execution_id: id.into(),
        owner: owner.map(str::to_string),
        entries,
        transition: None,
        clock: None,
    }
}

/// A commit that moves `id` from `from` to `to` at `at`, with no entries.
fn transition(
    id: &str,
    owner: Option<&str>,
    from: ExecutionStatus,
    to: ExecutionStatus,
    at: i64,
) -> Commit {
    Commit {
        transition: Some(Transition::new(from, to, at)),
        ..commit(id, owner, Vec::new())
    }
}

/// Inserts `id` with no log, running under `owner` until `until_ms`, pruning nothing.
async fn insert(
    store: &dyn Store,
    runtime: &str,
    id: &str,
    created_at: i64,
    owner: &str,
    until_ms: i64,
) {
    let pruned = store
        .insert_execution(
            runtime,
            &execution(id, created_at),
            &lease(owner, until_ms),
            1_000,
        )
        .await
        .unwrap_or_else(|e| panic!("inserting {id} into {runtime:?} failed: {e}"));
    assert_eq!(pruned, 0, "inserting {id} pruned with nothing to prune");
}

/// Moves a running execution (leased by `n`) through `path` at `at`: the step out of
/// `running` as its lease owner, the later ones without an owner condition. Asserts that
/// every step is written.
async fn move_through(
    store: &dyn Store,
    runtime: &str,
    id: &str,
    path: &[ExecutionStatus],
    at: i64,
) {
    let mut from = ExecutionStatus::Running;
    for &to in path {
        let owner = (from == ExecutionStatus::Running).then_some("n");
        let step = transition(id, owner, from, to, at);
        let written = store
            .commit(runtime, &step)
            .await
            .unwrap_or_else(|e| panic!("moving {id} from {from} to {to} failed: {e}"));
        assert!(written, "moving {id} from {from} to {to} was refused");
        from = to;
    }
}

/// Inserts `execution` as it is, under a lease no case reaches, with retention `keep`;
/// returns how many executions were pruned.
async fn insert_execution(
    store: &dyn Store,
    runtime: &str,
    execution: &Execution,
    keep: usize,
) -> usize {
    let id = &execution.id;
    store
        .insert_execution(runtime, execution, &lease("n", FAR), keep)
        .await
        .unwrap_or_else(|e| panic!("inserting {id} into {runtime:?} failed: {e}"))
}

/// Whether `owner` wins a claim of `id` from `from` at `now_ms`, for a lease until
/// `until_ms`, with every connector of [`execution`] available.
async fn wins_claim(
    store: &dyn Store,
    runtime: &str,
    id: &str,
    from: ExecutionStatus,
    owner: &str,
    until_ms: i64,
    now_ms: i64,
) -> bool {
    let available = execution(id, 0).connectors;
    let got = claim(
        store,
        runtime,
        id,
        from,
        &lease(owner, until_ms),
        now_ms,
        &available,
    )
    .await;
    matches!(got, Claim::Won(_))
}

/// What a claim of `id` from `from` at `now_ms` under `lease` finds, with `available`.
async fn claim(
    store: &dyn Store,
    runtime: &str,
    id: &str,
    from: ExecutionStatus,
    lease: &Lease,
    now_ms: i64,
    available: &[String],
) -> Claim {
    store
        .claim(runtime, id, from, lease, now_ms, available)
        .await
        .unwrap_or_else(|e| panic!("a claim of {id} from {from} failed: {e}"))
}

/// The execution `id`, which must exist.
async fn read(store: &dyn Store, runtime: &str, id: &str) -> Execution {
    store
        .execution(runtime, id)
        .await
        .unwrap_or_else(|e| panic!("reading {id} failed: {e}"))
        .unwrap_or_else(|| panic!("execution {id} is missing from {runtime:?}"))
}

/// The ids of the executions `store.executions(runtime, limit, status)` lists, in its order.
async fn listed(
    store: &dyn Store,
    runtime: &str,
    limit: Option<usize>,
    status: Option<ExecutionStatus>,
) -> Vec<String> {
    store
        .executions(runtime, limit, status)
        .await
        .unwrap_or_else(|e| panic!("listing executions failed: {e}"))
        .into_iter()
        .map(|e| e.id)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    macro_rules! names {
        ($($case:ident),* $(,)?) => {
            [$(stringify!($case)),*]
        };
    }

    /// A case defined but missing from the lists would never run against any store.
    #[test]
    fn every_case_is_listed_exactly_once() {
        let list: Vec<&str> = [
            &crate::for_each_store_contract_case!(names)[..],
            &crate::for_each_file_store_contract_case!(names)[..],
            &crate::for_each_store_with_files_contract_case!(names)[..],
        ]
        .concat();
        let listed: BTreeSet<&str> = list.iter().copied().collect();
        assert_eq!(listed.len(), list.len(), "a case is listed twice");
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store_contract");
        let mut defined = BTreeSet::new();
        for file in std::fs::read_dir(&dir).expect("the store_contract sources") {
            let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix("pub async fn ") {
                    defined.insert(rest.split('(').next().unwrap().to_string());
                }
            }
        }
        let listed: BTreeSet<String> = listed.into_iter().map(String::from).collect();
        assert_eq!(
            defined, listed,
            "the defined cases and the listed ones differ"
        );
    }
}
