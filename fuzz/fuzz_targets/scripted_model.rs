//! The scripted-model format (what `--model scripted:FILE` reads) over any text: a script
//! or a plain error, never a panic.
#![no_main]

use baton_inproc::ScriptedModel;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = ScriptedModel::from_yaml(text);
});
