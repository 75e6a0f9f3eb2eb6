//! The canonical JSON (RFC 8785) cases of `docs/vectors/jcs.json`: each input text must
//! canonicalise to exactly its `canonical` bytes, or be refused with an error of its
//! category (`ParseErrorKind::id`). See `docs/vectors/README.md`.

use runcontext_core::{canonicalize_text, parse, Value};

const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/vectors/jcs.json");

const MIN_CASES: usize = 40;

fn field<'a>(case: &'a Value, key: &str, name: &str) -> Option<&'a str> {
    case.get(key).map(|v| {
        v.as_str()
            .unwrap_or_else(|| panic!("case {name:?}: {key:?} is not a string"))
    })
}

#[test]
fn canonicalize_text_matches_the_vectors() {
    let text = std::fs::read(VECTORS).unwrap_or_else(|e| panic!("reading {VECTORS}: {e}"));
    let doc = parse(&text).unwrap_or_else(|e| panic!("{VECTORS} is not strict JSON: {e}"));
    let cases = doc
        .get("cases")
        .and_then(Value::as_array)
        .expect("jcs.json has a \"cases\" array");
    assert!(
        cases.len() >= MIN_CASES,
        "{VECTORS} has {} cases; at least {MIN_CASES} expected",
        cases.len()
    );

    let mut failures = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        let name = case
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("case {index} has no name"));
        let input =
            field(case, "input", name).unwrap_or_else(|| panic!("case {name:?} has no input"));
        let result = canonicalize_text(input.as_bytes());
        match (field(case, "canonical", name), field(case, "error", name)) {
            (Some(expected), None) => match result {
                Ok(got) if got == expected.as_bytes() => {}
                Ok(got) => failures.push(format!(
                    "{name}\n    input:    {input:?}\n    expected: {expected:?}\n    got:      {:?}",
                    String::from_utf8_lossy(&got)
                )),
                Err(e) => failures.push(format!(
                    "{name}\n    input:    {input:?}\n    expected: {expected:?}\n    got error: {e}"
                )),
            },
            (None, Some(category)) => {
                match result {
                    Err(e) => {
                        if e.kind.id() != category {
                            failures.push(format!(
                                "{name}\n    input:    {input:?}\n    expected error {category}\n    got error {}: {e}",
                                e.kind.id()
                            ));
                        }
                    }
                    Ok(got) => failures.push(format!(
                        "{name}\n    input:    {input:?}\n    expected error {category}\n    got:      {:?}",
                        String::from_utf8_lossy(&got)
                    )),
                }
            }
            _ => panic!("case {name:?} must have exactly one of \"canonical\" and \"error\""),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
