//! What a host provides to the kinds it starts, found by type.

use super::error::MissingResource;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Values the host provides to connector kinds at start, one per type: a kind asks for what
/// it needs ([`require`](HostResources::require)) instead of the host knowing each kind.
/// A workspace asks for the store its files live in, say; a kind of your own, for a client
/// your program already holds.
#[derive(Clone, Default)]
pub struct HostResources {
    values: HashMap<TypeId, (&'static str, Arc<dyn Any + Send + Sync>)>,
}

impl HostResources {
    /// No resources.
    pub fn new() -> Self {
        HostResources::default()
    }

    /// These resources and `value` (replacing one of the same type).
    pub fn with<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.insert(value);
        self
    }

    /// Provides `value` (replacing one of the same type).
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.values.insert(
            TypeId::of::<T>(),
            (std::any::type_name::<T>(), Arc::new(value)),
        );
    }

    /// The value of type `T`, if the host provides one.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.values
            .get(&TypeId::of::<T>())
            .and_then(|(_, v)| v.downcast_ref::<T>())
    }

    /// The value of type `T`; an error naming the type and `what` it is for when the host
    /// provides none.
    pub fn require<T: Any + Send + Sync>(&self, what: &str) -> Result<&T, MissingResource> {
        self.get::<T>().ok_or_else(|| MissingResource {
            type_name: std::any::type_name::<T>(),
            what: what.to_string(),
        })
    }
}

impl fmt::Debug for HostResources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.values.values().map(|(n, _)| *n).collect();
        names.sort_unstable();
        f.debug_struct("HostResources")
            .field("types", &names)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_is_found_by_its_type() {
        let r = HostResources::new().with(7u32).with(String::from("x"));
        assert_eq!(r.get::<u32>(), Some(&7));
        assert_eq!(r.require::<String>("a name").unwrap(), "x");
        let missing = r.require::<u64>("a count").unwrap_err().to_string();
        assert!(
            missing.contains("u64") && missing.contains("a count"),
            "{missing}"
        );
    }
}
