//! The skeleton `models.yaml` and `tools.yaml` share: the file must be there and parse,
//! then each entry is checked on its own, under its key, and kept unless its check drops it.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::Loader;
use crate::registry::SourceFile;
use crate::registry::raw::{RawModel, RawModels, RawTool, RawTools};

/// A registry-wide file of entries by key.
pub(super) trait KeyedFile: DeserializeOwned {
    /// One entry as written.
    type Entry;
    /// The path named when the file is missing.
    const PATH: &'static str;
    /// The problem when the file is missing.
    const MISSING: &'static str;
    /// What the file holds, as in "not a valid models file".
    const WHAT: &'static str;

    /// Takes the entries out, leaving the rest of the file (such as `summarizer`).
    fn take_entries(&mut self) -> BTreeMap<String, Self::Entry>;
}

impl KeyedFile for RawModels {
    type Entry = RawModel;
    const PATH: &'static str = "models.yaml";
    const MISSING: &'static str = "missing: every registry needs a models.yaml";
    const WHAT: &'static str = "models";

    fn take_entries(&mut self) -> BTreeMap<String, RawModel> {
        std::mem::take(&mut self.models)
    }
}

impl KeyedFile for RawTools {
    type Entry = RawTool;
    const PATH: &'static str = "tools.yaml";
    const MISSING: &'static str =
        "missing: every registry needs a tools.yaml (it may list no tools)";
    const WHAT: &'static str = "tools";

    fn take_entries(&mut self) -> BTreeMap<String, RawTool> {
        std::mem::take(&mut self.tools)
    }
}

/// A keyed file once read.
pub(super) struct Keyed<'s, F, T> {
    /// Its path, for problems found after the entries.
    pub(super) path: &'s str,
    /// The file without its entries.
    pub(super) rest: F,
    /// The entries that passed their check, by key.
    pub(super) items: BTreeMap<String, Arc<T>>,
}

impl Loader<'_> {
    /// Reads a keyed file: a missing or unparsable file is one problem and `None`; otherwise
    /// `check` sees each entry in key order, records its problems and returns `None` to
    /// leave the entry out.
    pub(super) fn load_keyed<'s, F: KeyedFile, T>(
        &mut self,
        file: Option<&'s SourceFile>,
        mut check: impl FnMut(&mut Self, &str, &str, F::Entry) -> Option<T>,
    ) -> Option<Keyed<'s, F, T>> {
        let Some(file) = file else {
            self.problems.add(F::PATH, "(file)", "", F::MISSING);
            return None;
        };
        let mut rest: F = match serde_norway::from_str(&file.text) {
            Ok(raw) => raw,
            Err(e) => {
                self.problems.add(
                    &file.path,
                    "(file)",
                    "",
                    format!("not a valid {} file: {e}", F::WHAT),
                );
                return None;
            }
        };
        let mut items = BTreeMap::new();
        for (key, entry) in rest.take_entries() {
            if let Some(item) = check(self, &file.path, &key, entry) {
                items.insert(key, Arc::new(item));
            }
        }
        Some(Keyed {
            path: &file.path,
            rest,
            items,
        })
    }
}
