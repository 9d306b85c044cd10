//! The execution statuses and log-entry states, and the one table of legal transitions for each.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Where an execution stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// A pass is running (or a node died while running one).
    Running,
    /// Waiting for a person to approve or reject a pending action.
    Paused,
    /// The code returned a value.
    Completed,
    /// The code threw, replay diverged, a limit was hit, or a stale run was expired.
    Error,
    /// A pending action was rejected, or a stale pause expired.
    Rejected,
    /// At least one applied action was reverted.
    RolledBack,
    /// Stopped while running by the client or a person; what it applied stays.
    Cancelled,
}

/// What happened to one logged call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryState {
    /// Marked before the connector runs; left so by a crash, it runs again with the same key.
    Executing,
    /// The result is recorded; replay returns it.
    Applied,
    /// Waiting for approval; nothing ran yet.
    Pending,
    /// Compensated by the tool's revert.
    Reverted,
    /// The call failed; replay throws the recorded error again.
    Error,
}

/// Every legal execution transition, as `(from, to)`. Nothing else is allowed.
pub const EXECUTION_TRANSITIONS: &[(ExecutionStatus, ExecutionStatus)] = {
    use ExecutionStatus::*;
    &[
        (Running, Completed),
        (Running, Paused),
        (Running, Error),
        (Running, Cancelled),
        // A run left by a dead node is taken over again by lease.
        (Running, Running),
        (Paused, Running),
        (Paused, Rejected),
        (Paused, RolledBack),
        (Completed, RolledBack),
        (Error, RolledBack),
        (Rejected, RolledBack),
        (Cancelled, RolledBack),
    ]
};

/// Every legal log-entry transition, as `(from, to)`; `None` is a new entry.
pub const ENTRY_TRANSITIONS: &[(Option<EntryState>, EntryState)] = {
    use EntryState::*;
    &[
        (None, Executing),
        (None, Pending),
        (Some(Executing), Applied),
        (Some(Executing), Error),
        // A crash left it executing: the next pass runs it again with the same key.
        (Some(Executing), Executing),
        (Some(Pending), Executing),
        // Rejected while others of its batch were approved: the code gets an error.
        (Some(Pending), Error),
        // A `reexecute` (ephemeral) entry runs again on every pass.
        (Some(Applied), Applied),
        (Some(Applied), Reverted),
        // Left by a crash (outcome unknown) and undone by a rollback.
        (Some(Executing), Reverted),
    ]
};

/// Which transitions a process has made, for the test that proves every one is exercised.
#[cfg(feature = "transition-coverage")]
pub mod coverage {
    use super::{EntryState, ExecutionStatus};
    use std::collections::BTreeSet;
    use std::sync::Mutex;

    static EXECUTIONS: Mutex<BTreeSet<(ExecutionStatus, ExecutionStatus)>> =
        Mutex::new(BTreeSet::new());
    static ENTRIES: Mutex<BTreeSet<(Option<EntryState>, EntryState)>> = Mutex::new(BTreeSet::new());

    pub(crate) fn execution(from: ExecutionStatus, to: ExecutionStatus) {
        EXECUTIONS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((from, to));
    }

    pub(crate) fn entry(from: Option<EntryState>, to: EntryState) {
        ENTRIES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((from, to));
    }

    /// Execution transitions made so far in this process.
    pub fn executions() -> BTreeSet<(ExecutionStatus, ExecutionStatus)> {
        EXECUTIONS.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Log-entry transitions made so far in this process.
    pub fn entries() -> BTreeSet<(Option<EntryState>, EntryState)> {
        ENTRIES.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Notes an execution transition the store accepted.
pub(crate) fn note_execution(from: ExecutionStatus, to: ExecutionStatus) {
    #[cfg(feature = "transition-coverage")]
    coverage::execution(from, to);
    let _ = (from, to);
}

/// Checks a log-entry transition against the table, noting it; false if illegal.
pub(crate) fn note_entry(from: Option<EntryState>, to: EntryState) -> bool {
    #[cfg(feature = "transition-coverage")]
    coverage::entry(from, to);
    to.can_follow(from)
}

impl ExecutionStatus {
    /// All statuses, for tables and tests.
    pub const ALL: [ExecutionStatus; 7] = [
        Self::Running,
        Self::Paused,
        Self::Completed,
        Self::Error,
        Self::Rejected,
        Self::RolledBack,
        Self::Cancelled,
    ];

    /// Whether the transition `self -> to` is in the table.
    pub fn can_become(self, to: ExecutionStatus) -> bool {
        EXECUTION_TRANSITIONS.contains(&(self, to))
    }

    /// Whether no pass will ever run for this execution again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Error | Self::Rejected | Self::RolledBack | Self::Cancelled
        )
    }

    /// The name used in JSON and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Completed => "completed",
            Self::Error => "error",
            Self::Rejected => "rejected",
            Self::RolledBack => "rolled_back",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses the name used in JSON and in the store.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

impl EntryState {
    /// All states, for tables and tests.
    pub const ALL: [EntryState; 5] = [
        Self::Executing,
        Self::Applied,
        Self::Pending,
        Self::Reverted,
        Self::Error,
    ];

    /// Whether `from -> self` is in the table (`from` is `None` for a new entry).
    pub fn can_follow(self, from: Option<EntryState>) -> bool {
        ENTRY_TRANSITIONS.contains(&(from, self))
    }

    /// The name used in JSON and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Executing => "executing",
            Self::Applied => "applied",
            Self::Pending => "pending",
            Self::Reverted => "reverted",
            Self::Error => "error",
        }
    }

    /// Parses the name used in JSON and in the store.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

impl fmt::Display for ExecutionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for EntryState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The legal pairs as the contract states them, written out by name (not read from the
    /// tables): a change to a table that the contract does not make fails here.
    #[test]
    fn the_tables_hold_exactly_the_contracts_transitions() {
        let executions = [
            "running->completed",
            "running->paused",
            "running->error",
            "running->cancelled",
            "running->running",
            "paused->running",
            "paused->rejected",
            "paused->rolled_back",
            "completed->rolled_back",
            "error->rolled_back",
            "rejected->rolled_back",
            "cancelled->rolled_back",
        ];
        for from in ExecutionStatus::ALL {
            for to in ExecutionStatus::ALL {
                let legal = executions.contains(&format!("{from}->{to}").as_str());
                assert_eq!(from.can_become(to), legal, "{from} -> {to}");
            }
        }
        let entries = [
            "new->executing",
            "new->pending",
            "executing->applied",
            "executing->error",
            "executing->executing",
            "executing->reverted",
            "pending->executing",
            "pending->error",
            "applied->applied",
            "applied->reverted",
        ];
        let froms = std::iter::once(None).chain(EntryState::ALL.into_iter().map(Some));
        for from in froms {
            let name = from.map_or("new", |f| f.as_str());
            for to in EntryState::ALL {
                let legal = entries.contains(&format!("{name}->{to}").as_str());
                assert_eq!(to.can_follow(from), legal, "{name} -> {to}");
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for s in ExecutionStatus::ALL {
            assert_eq!(ExecutionStatus::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        for s in EntryState::ALL {
            assert_eq!(EntryState::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }
}
