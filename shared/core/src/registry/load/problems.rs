//! The problems found while loading, kept in the order found.

use crate::registry::LoadError;

/// Every problem found so far, in the order [`crate::registry::LoadErrors`] reports them.
#[derive(Debug, Default)]
pub(super) struct Problems(Vec<LoadError>);

impl Problems {
    /// Records one problem, naming file, field and value (D-2).
    pub(super) fn add(
        &mut self,
        file: &str,
        field: impl Into<String>,
        value: impl Into<String>,
        problem: impl Into<String>,
    ) {
        self.0.push(LoadError {
            file: file.to_owned(),
            field: field.into(),
            value: value.into(),
            problem: problem.into(),
        });
    }

    /// How many so far: a step compares counts to learn whether it found any.
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether none was found.
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every problem, in the order found.
    pub(super) fn into_vec(self) -> Vec<LoadError> {
        self.0
    }
}
