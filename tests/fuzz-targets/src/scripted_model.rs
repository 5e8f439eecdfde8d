//! The scripted-model format (what `--model scripted:FILE` reads) over any text: a script
//! or a plain error, never a panic.

use baton_inproc::ScriptedModel;

/// One input: the bytes as a script.
pub fn run(data: &[u8]) {
    let Some(text) = crate::common::input::<&str>(data) else {
        return;
    };
    let _ = ScriptedModel::from_yaml(text);
}
