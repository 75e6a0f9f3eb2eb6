//! `runcontext._core.Transcript`: the core's transcript state, for `runcontext.transcript`.
//!
//! Converts arguments and results only: every rule of the record format is in
//! `runcontext_core::transcript`.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple, PyType};
use runcontext_core::tokens::Tokens;
use runcontext_core::transcript::{self as core, Envelope, Item, SectionRef, TranscriptError};
use runcontext_core::{Position, Value, MAX_SAFE_INTEGER};

/// One transcript's reading and writing state (see the core's `Transcript`).
#[pyclass(module = "runcontext._core", name = "Transcript")]
pub struct Transcript {
    inner: core::Transcript,
    /// What errors call the transcript: its path or store name.
    name: String,
    /// The line of the last message record read (0: none yet).
    last_message_line: usize,
    /// The header's time ("" until line 1 is read).
    header_time: String,
    /// The last envelope's sections and facts as Python tuples: runs that repeat them share
    /// one tuple instead of holding a copy each.
    shared: Shared,
}

#[derive(Default)]
struct Shared {
    sections: Kept<Vec<SectionRef>>,
    facts: Kept<Vec<(String, String)>>,
}

/// A value the core returned and the Python tuple made of it.
type Kept<T> = Option<(T, Py<PyTuple>)>;

fn transcript_error(py: Python<'_>, name: &str, error: TranscriptError) -> PyErr {
    static FORMAT: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    static DIGEST: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    static VERSION: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let (cell, class_name) = if error.kind.is_digest() {
        (&DIGEST, "TranscriptDigestError")
    } else if error.kind == core::ErrorKind::Version {
        (&VERSION, "TranscriptVersionError")
    } else {
        (&FORMAT, "TranscriptFormatError")
    };
    let build = || -> PyResult<PyErr> {
        let cls = cell.import(py, "runcontext.transcript.errors", class_name)?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("kind", error.kind.id())?;
        kwargs.set_item("line", error.line)?;
        kwargs.set_item("path", name)?;
        Ok(PyErr::from_value(
            cls.call((error.message.clone(),), Some(&kwargs))?,
        ))
    };
    build().unwrap_or_else(|e| e)
}

fn write_error(error: core::WriteError) -> PyErr {
    PyValueError::new_err(error.0)
}

/// A JSON value as Python objects: numbers that are whole and within ±(2**53 − 1) become
/// `int` (canonical JSON wrote them as integer literals), the rest `float` — the
/// large-integer rule of docs/TRANSCRIPT.md.
fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Number(n) => {
            if n.fract() == 0.0 && n.abs() <= MAX_SAFE_INTEGER as f64 {
                (*n as i64).into_pyobject(py)?.into_any()
            } else {
                n.into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => s.into_pyobject(py)?.into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(members) => {
            let dict = PyDict::new(py);
            for (key, item) in members {
                dict.set_item(key, to_python(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// A run's envelope as the tuple `read_line` returns. It and its sections and facts are
/// left untracked by the cyclic collector (`untrack`): a read makes three tuples a run (the
/// envelope, its facts, the fact), and each collection during the read traversed them all
/// again (7-9 % of `runcontext log`'s time); CPython untracks such tuples itself, but only
/// once a collection has examined them.
fn envelope_to_python<'py>(
    py: Python<'py>,
    e: Envelope,
    shared: &mut Shared,
) -> PyResult<Bound<'py, PyTuple>> {
    let sections = match &shared.sections {
        Some((held, tuple)) if *held == e.sections => tuple.bind(py).clone(),
        _ => {
            let items = e.sections.iter().map(|s| {
                let position = match s.position {
                    Position::Head => intern!(py, "head"),
                    Position::Tail => intern!(py, "tail"),
                };
                (position, s.name.as_str(), s.digest.as_str())
                    .into_pyobject(py)
                    .map(untrack)
            });
            let tuple = untrack(PyTuple::new(py, items.collect::<PyResult<Vec<_>>>()?)?);
            shared.sections = Some((e.sections, tuple.clone().unbind()));
            tuple
        }
    };
    let facts = match &shared.facts {
        Some((held, tuple)) if *held == e.facts => tuple.bind(py).clone(),
        _ => {
            let items = e
                .facts
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()).into_pyobject(py).map(untrack));
            let tuple = untrack(PyTuple::new(py, items.collect::<PyResult<Vec<_>>>()?)?);
            shared.facts = Some((e.facts, tuple.clone().unbind()));
            tuple
        }
    };
    let has_tokens = e.tokens.is_some();
    let envelope = (
        intern!(py, "run-context"),
        e.run,
        e.digest,
        e.time,
        e.messages,
        sections,
        facts,
        tokens_to_python(py, e.tokens.as_ref())?,
    )
        .into_pyobject(py)?;
    // A tokens dict can be changed (it is the run's `tokens`): the collector keeps its
    // envelope, which could then be part of a cycle.
    Ok(if has_tokens {
        envelope
    } else {
        untrack(envelope)
    })
}

/// Stop the cyclic collector tracking `tuple`, whose items are strings, integers, `None` or
/// tuples untracked here.
///
/// Why this is sound: the collector only has to find reference cycles, and a cycle passes
/// only through objects that refer to others. A tuple never changes what it refers to, and
/// these items refer to nothing that could ever refer back (strings and integers refer to
/// nothing; the tuples, by the same argument, to strings and integers only), so no cycle can
/// ever pass through `tuple`, and its reference count frees it as before. This is the rule
/// of CPython's own `_PyTuple_MaybeUntrack`, which applies it later, during a collection.
fn untrack(tuple: Bound<'_, PyTuple>) -> Bound<'_, PyTuple> {
    debug_assert!(tuple.iter().all(|item| !crate::ffi::is_gc_tracked(&item)));
    crate::ffi::untrack_tuple(tuple)
}

/// The `tokens` member as the dict it is in the record, or `None`.
fn tokens_to_python<'py>(py: Python<'py>, tokens: Option<&Tokens>) -> PyResult<Bound<'py, PyAny>> {
    let Some(tokens) = tokens else {
        return Ok(py.None().into_bound(py));
    };
    let mut text = Vec::with_capacity(160);
    tokens.write(&mut text);
    let value = runcontext_core::parse(&text).expect("the core writes valid JSON");
    to_python(py, &value)
}

/// `(digest, sections, facts)` of a `runcontext.RunContext`, read through its attributes.
type Parts = (String, Vec<Part>, Vec<(String, String)>);

fn context_parts(context: &Bound<'_, PyAny>) -> PyResult<Parts> {
    let digest: String = context.getattr("digest")?.extract()?;
    let mut sections = Vec::new();
    for section in context.getattr("sections")?.try_iter()? {
        let section = section?;
        let position = match section.getattr("position")?.extract::<String>()?.as_str() {
            "head" => Position::Head,
            "tail" => Position::Tail,
            other => return Err(PyValueError::new_err(format!("bad position {other:?}"))),
        };
        sections.push(Part {
            position,
            name: section.getattr("name")?.extract()?,
            text: section.getattr("text")?.extract()?,
            digest: section.getattr("digest")?.extract()?,
        });
    }
    let facts: Vec<(String, String)> = context.getattr("facts")?.extract()?;
    Ok((digest, sections, facts))
}

struct Part {
    position: Position,
    name: String,
    text: String,
    digest: String,
}

#[pymethods]
impl Transcript {
    #[new]
    #[pyo3(signature = (name, max_line_bytes = core::DEFAULT_MAX_LINE_BYTES))]
    fn new(name: String, max_line_bytes: usize) -> Self {
        Self {
            inner: core::Transcript::with_max_line_bytes(max_line_bytes),
            name,
            last_message_line: 0,
            header_time: String::new(),
            shared: Shared::default(),
        }
    }

    #[getter]
    fn lines(&self) -> usize {
        self.inner.lines()
    }
    #[getter]
    fn chain(&self) -> &str {
        self.inner.chain()
    }
    #[getter]
    fn version(&self) -> u32 {
        self.inner.version()
    }
    #[getter]
    fn seed(&self) -> &str {
        self.inner.seed()
    }
    #[getter]
    fn messages(&self) -> usize {
        self.inner.messages()
    }
    #[getter]
    fn runs(&self) -> usize {
        self.inner.runs()
    }
    #[getter]
    fn max_line_bytes(&self) -> usize {
        self.inner.max_line_bytes()
    }
    /// The line of the last message record read (0 before the first).
    #[getter]
    fn last_message_line(&self) -> usize {
        self.last_message_line
    }
    /// The header's time as recorded ("" until line 1 is read).
    #[getter]
    fn header_time(&self) -> &str {
        &self.header_time
    }

    /// `(name, text)` of the section recorded under `digest`, or `None`.
    fn section(&self, digest: &str) -> Option<(String, String)> {
        self.inner
            .section(digest)
            .map(|(n, t)| (n.to_owned(), t.to_owned()))
    }

    /// Verify one complete line (no newline) and move past it; returns what it held.
    fn read_line<'py>(&mut self, py: Python<'py>, line: &[u8]) -> PyResult<Bound<'py, PyTuple>> {
        match self
            .inner
            .read_line(line)
            .map_err(|e| transcript_error(py, &self.name, e))?
        {
            Item::Header {
                version,
                seed,
                time,
            } => {
                self.header_time.clone_from(&time);
                ("header", version, seed, time).into_pyobject(py)
            }
            Item::Message { index, body } => {
                self.last_message_line = self.inner.lines();
                ("message", index, PyBytes::new(py, &body)).into_pyobject(py)
            }
            Item::Section { digest, name } => ("section", digest, name).into_pyobject(py),
            Item::Run(envelope) => envelope_to_python(py, envelope, &mut self.shared),
        }
    }

    /// `read_line` of each of `lines[start:]` in order, in one call: each message's body is
    /// appended to `messages`, each run's envelope (the tuple `read_line` returns) to `runs`,
    /// each section body not in `sections` yet is put there as `digest: (name, text)`, and
    /// the header's time is kept (`header_time`). The first refused line raises its error;
    /// the lines before it stay read (`lines` says how far).
    fn read_lines(
        &mut self,
        py: Python<'_>,
        lines: &Bound<'_, PyList>,
        start: usize,
        messages: &Bound<'_, PyList>,
        runs: &Bound<'_, PyList>,
        sections: &Bound<'_, PyDict>,
    ) -> PyResult<()> {
        let sinks = Sinks {
            messages,
            runs,
            sections,
        };
        for index in start..lines.len() {
            let line = lines.get_item(index)?;
            let raw = line
                .cast::<PyBytes>()
                .map_err(|_| PyTypeError::new_err(format!("lines[{index}]: expected bytes")))?;
            self.take(py, raw.as_bytes(), &sinks)?;
        }
        Ok(())
    }

    /// `read_lines` of the lines in `chunks` after the first `skip` of them: each chunk holds
    /// one or more lines joined by `\n` (`chunk.split(b"\n")` gives them), as the file store
    /// reads them, so no line becomes a Python object of its own.
    fn read_chunks(
        &mut self,
        py: Python<'_>,
        chunks: &Bound<'_, PyList>,
        skip: usize,
        messages: &Bound<'_, PyList>,
        runs: &Bound<'_, PyList>,
        sections: &Bound<'_, PyDict>,
    ) -> PyResult<()> {
        let sinks = Sinks {
            messages,
            runs,
            sections,
        };
        let mut skip = skip;
        for (index, chunk) in chunks.iter().enumerate() {
            let chunk = chunk
                .cast::<PyBytes>()
                .map_err(|_| PyTypeError::new_err(format!("chunks[{index}]: expected bytes")))?;
            for line in Lines(Some(chunk.as_bytes())) {
                if skip > 0 {
                    skip -= 1;
                } else {
                    self.take(py, line, &sinks)?;
                }
            }
        }
        Ok(())
    }

    fn begin(&mut self) {
        self.inner.begin();
    }
    fn commit(&mut self) {
        self.inner.commit();
    }
    fn rollback(&mut self) {
        self.inner.rollback();
    }

    fn write_header<'py>(
        &mut self,
        py: Python<'py>,
        seed: &str,
        time: &str,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let line = self.inner.write_header(seed, time).map_err(write_error)?;
        Ok(PyBytes::new(py, &line))
    }

    /// The next message line around `message`, the message's canonical JSON.
    fn write_message<'py>(
        &mut self,
        py: Python<'py>,
        message: &[u8],
    ) -> PyResult<Bound<'py, PyBytes>> {
        let line = self.inner.write_message(message).map_err(write_error)?;
        Ok(PyBytes::new(py, &line))
    }

    /// Refuse, without writing, what `write_message` would refuse of the message at `index`
    /// (its canonical JSON): a message a reader would refuse, or a record over the line cap.
    fn check_message(&self, message: &[u8], index: usize) -> PyResult<()> {
        self.inner
            .check_message(message, index)
            .map_err(write_error)
    }

    /// The section lines and the run-context line of the next run with `context`; `tokens`
    /// is the canonical JSON of the run's `tokens` member, or `None`.
    #[pyo3(signature = (context, time, messages, tokens = None))]
    fn write_run<'py>(
        &mut self,
        py: Python<'py>,
        context: &Bound<'py, PyAny>,
        time: &str,
        messages: usize,
        tokens: Option<&[u8]>,
    ) -> PyResult<Bound<'py, PyList>> {
        let tokens = tokens
            .map(|text| {
                runcontext_core::parse(text)
                    .map_err(|e| e.to_string())
                    .and_then(|value| Tokens::from_value(&value))
                    .map_err(|why| PyValueError::new_err(format!("tokens: {why}")))
            })
            .transpose()?;
        let (digest, parts, facts) = context_parts(context)
            .map_err(|_| PyTypeError::new_err("context: expected a RunContext"))?;
        let list = PyList::empty(py);
        for part in &parts {
            if let Some(line) = self
                .inner
                .write_section(&part.name, &part.text)
                .map_err(write_error)?
            {
                list.append(PyBytes::new(py, &line))?;
            }
        }
        let sections: Vec<SectionRef> = parts
            .into_iter()
            .map(|p| SectionRef {
                position: p.position,
                name: p.name,
                digest: p.digest,
            })
            .collect();
        let line = self
            .inner
            .write_envelope(&digest, &sections, &facts, time, messages, tokens.as_ref())
            .map_err(write_error)?;
        list.append(PyBytes::new(py, &line))?;
        Ok(list)
    }
}

/// Where `read_lines` and `read_chunks` put what they read: the session's lists and map.
struct Sinks<'a, 'py> {
    messages: &'a Bound<'py, PyList>,
    runs: &'a Bound<'py, PyList>,
    sections: &'a Bound<'py, PyDict>,
}

impl Transcript {
    /// Read one line in the core and put what it holds in `sinks`: the one step of
    /// `read_lines` and `read_chunks`.
    fn take(&mut self, py: Python<'_>, raw: &[u8], sinks: &Sinks<'_, '_>) -> PyResult<()> {
        let item = self
            .inner
            .read_line(raw)
            .map_err(|e| transcript_error(py, &self.name, e))?;
        match item {
            Item::Message { body, .. } => {
                self.last_message_line = self.inner.lines();
                sinks.messages.append(PyBytes::new(py, &body))?;
            }
            Item::Run(envelope) => {
                let envelope = envelope_to_python(py, envelope, &mut self.shared)?;
                sinks.runs.append(envelope)?;
            }
            Item::Section { digest, name } => {
                if !sinks.sections.contains(&digest)? {
                    let (_, text) = self.inner.section(&digest).expect("just read");
                    sinks.sections.set_item(digest, (name, text))?;
                }
            }
            Item::Header { time, .. } => self.header_time = time,
        }
        Ok(())
    }
}

/// The lines of a chunk, split at each `\n` as `bytes.split(b"\n")` splits them (an empty
/// chunk is one empty line).
struct Lines<'a>(Option<&'a [u8]>);

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.0?;
        match find_newline(rest) {
            Some(end) => {
                self.0 = Some(&rest[end + 1..]);
                Some(&rest[..end])
            }
            None => self.0.take(),
        }
    }
}

/// The index of the first `\n` in `bytes`, found by the `memchr` crate, which tests 16 or
/// 32 bytes at once (for the 7 MB of records of `runcontext log`'s benchmark: 2.2 M
/// instructions, against 11 M for a loop here testing eight bytes at a time).
fn find_newline(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', bytes)
}

/// The Python value of canonical JSON text the caller already holds (a message body just
/// encoded): parsed by the core, with the large-integer rule of `to_python`.
#[pyfunction]
pub fn json_value<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let value = runcontext_core::parse(data).map_err(|e| PyValueError::new_err(e.to_string()))?;
    to_python(py, &value)
}
