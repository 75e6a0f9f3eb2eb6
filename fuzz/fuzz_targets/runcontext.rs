//! Any text as entries: RunContext::new never panics, and rebuilding a context from its kept,
//! normalised entries gives the same digest and texts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use runcontext_core::{Entry, RunContext};

fn entries(text: &str) -> Vec<Entry> {
    // Lines of "name=value"; "name" alone drops the entry (value None).
    text.lines()
        .map(|line| match line.split_once('=') {
            Some((n, v)) => Entry::new(n, Some(v.replace("\\n", "\n"))),
            None => Entry::new(line, None::<String>),
        })
        .collect()
}

fn kept(pairs: &[(String, String)]) -> Vec<Entry> {
    pairs.iter().map(|(n, v)| Entry::new(n.as_str(), Some(v.as_str()))).collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut parts = text.splitn(3, '\u{1}');
    let (head, facts, tail) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if let Ok(rc) = RunContext::new(entries(head), entries(facts), entries(tail)) {
        let again = RunContext::new(kept(rc.head_sections()), kept(rc.facts()), kept(rc.tail_sections()))
            .expect("kept entries are valid");
        assert_eq!(again.digest(), rc.digest());
        assert_eq!(again.tail_text(), rc.tail_text());
        assert_eq!(again.head_text(), rc.head_text());
    }
});
