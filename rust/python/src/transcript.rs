//! `runcontext._core.Transcript`: the core's transcript state, for `runcontext.transcript`.
//!
//! Converts arguments and results only: every rule of the record format is in
//! `runcontext_core::transcript`.

use std::collections::HashMap;

use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple, PyType};
use runcontext_core::tokens::Tokens;
use runcontext_core::transcript::{
    self as core, CompactionTokens, Item, Mode, SectionRef, TranscriptError,
};
use runcontext_core::{Position, Value, MAX_SAFE_INTEGER};

use crate::records::{empty_cell, Compaction, ContextCell, Elision, Run, Section};
use crate::runcontext::RunContext;

/// One transcript's state: the core's reading and writing state, and what the session holds
/// of it — each message's canonical JSON, each run as a [`Run`] — so the records have one
/// owner, and Python coordinates stores, locks and errors around it.
#[pyclass(module = "runcontext._core", name = "Transcript")]
pub struct Transcript {
    inner: core::Transcript,
    /// What errors call the transcript: its path or store name.
    name: String,
    /// The line of the last message record read or written (0: none yet).
    last_message_line: usize,
    /// The header's time ("" until line 1 is read).
    header_time: String,
    /// Every message body the transcript holds, once: each `message` record's, each
    /// compaction's replacement messages and each elision's stubs (canonical JSON).
    bodies: Vec<Py<PyBytes>>,
    /// Each generation of the conversation (docs/TRANSCRIPT.md, *Replay*): the body at each
    /// position. The last is the current conversation; a compaction or an elision starts a
    /// new one, and a run refers to one, so no run copies its conversation.
    generations: Vec<Vec<u32>>,
    runs: Vec<Py<Run>>,
    /// The generation of each run, by run index.
    run_generations: Vec<u32>,
    /// Every compaction and elision, in order, and the bodies it added (its replacement
    /// messages or its stubs: `bodies[first..first + count]`).
    edits: Vec<(Py<PyAny>, u32, u32)>,
    /// Each section object made for a run read back, by position and digest, and each
    /// body's text as a str, by digest: the runs that name a body share one str of it.
    section_objects: HashMap<(Position, String), Py<Section>>,
    texts: HashMap<String, Py<PyString>>,
    /// The last run's sections and facts and the Python tuples made of them: runs that repeat
    /// them share the tuples, and the context built from them.
    shared: Shared,
    /// Where the batch in progress started, to undo it (`rollback`).
    mark: Option<Mark>,
}

struct Shared {
    sections: Kept<Vec<SectionRef>>,
    facts: Kept<Vec<(String, String)>>,
    context: ContextCell,
}

impl Default for Shared {
    fn default() -> Self {
        Self {
            sections: None,
            facts: None,
            context: empty_cell(),
        }
    }
}

/// A value the core returned and the Python tuple made of it.
type Kept<T> = Option<(T, Py<PyTuple>)>;

#[derive(Clone, Copy)]
struct Mark {
    bodies: usize,
    generations: usize,
    current: usize,
    runs: usize,
    edits: usize,
    last_message_line: usize,
}

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

/// The `tokens` member as the dict it is in the record, or `None`.
fn tokens_to_python(py: Python<'_>, tokens: Option<&Tokens>) -> PyResult<Option<Py<PyDict>>> {
    let Some(tokens) = tokens else {
        return Ok(None);
    };
    let mut text = Vec::with_capacity(160);
    tokens.write(&mut text);
    let value = runcontext_core::parse(&text).expect("the core writes valid JSON");
    Ok(Some(to_python(py, &value)?.cast_into::<PyDict>()?.unbind()))
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
            bodies: Vec::new(),
            generations: vec![Vec::new()],
            runs: Vec::new(),
            run_generations: Vec::new(),
            edits: Vec::new(),
            section_objects: HashMap::new(),
            texts: HashMap::new(),
            shared: Shared::default(),
            mark: None,
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
    /// The length of the current conversation.
    #[getter]
    fn message_count(&self) -> usize {
        self.current().len()
    }
    #[getter]
    fn run_count(&self) -> usize {
        self.runs.len()
    }
    #[getter]
    fn max_line_bytes(&self) -> usize {
        self.inner.max_line_bytes()
    }
    /// The line of the last message record read or written (0 before the first).
    #[getter]
    fn last_message_line(&self) -> usize {
        self.last_message_line
    }
    /// The header's time as recorded ("" until line 1 is read).
    #[getter]
    fn header_time(&self) -> &str {
        &self.header_time
    }

    /// The canonical JSON of message `index` (0-based) of the current conversation.
    fn message<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyBytes>> {
        self.current()
            .get(index)
            .map(|&body| self.bodies[body as usize].bind(py).clone())
            .ok_or_else(|| PyIndexError::new_err(format!("no message {index}")))
    }

    /// Every message of the current conversation as a new Python value (the large-integer
    /// rule of `to_python`).
    fn decoded_messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.decode(py, self.current())
    }

    /// The conversation run `number` (1-based) was sent, as new Python values: its
    /// generation's first `messages` (docs/TRANSCRIPT.md, *Replay*).
    fn decoded_messages_at<'py>(
        &self,
        py: Python<'py>,
        number: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let (generation, count) = self.sent(py, number)?;
        self.decode(py, &generation[..count])
    }

    /// The canonical JSON of run `number`'s reply: the message at position `messages` of
    /// its generation, if one was added before the next compaction or elision.
    fn reply_of<'py>(
        &self,
        py: Python<'py>,
        number: usize,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let (generation, count) = self.sent(py, number)?;
        Ok(generation
            .get(count)
            .map(|&body| self.bodies[body as usize].bind(py).clone()))
    }

    /// Every compaction and elision, in order, in a new list.
    fn edits<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.edits.iter().map(|(edit, _, _)| edit.bind(py)))
    }

    /// The messages edit `index` (0-based, as `edits()` lists them) added, as new Python
    /// values: a compaction's replacement messages, or an elision's stubs in index order.
    fn edit_messages<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyList>> {
        let (_, first, count) = self
            .edits
            .get(index)
            .ok_or_else(|| PyIndexError::new_err(format!("no edit {index}")))?;
        let ids: Vec<u32> = (*first..first + count).collect();
        self.decode(py, &ids)
    }

    /// The `compaction` line replacing [`start`, `end`) of the current conversation with
    /// `messages` (each its canonical JSON), and the record. `tokens` is `(before, after,
    /// quality)` or `None`. The core refuses what a reader would, and a range that separates
    /// a tool call from its result.
    #[pyo3(signature = (start, end, messages, mode, time, tokens = None))]
    #[allow(clippy::too_many_arguments)]
    fn write_compaction<'py>(
        &mut self,
        py: Python<'py>,
        start: usize,
        end: usize,
        messages: Vec<Bound<'py, PyBytes>>,
        mode: &str,
        time: &str,
        tokens: Option<(u64, u64, String)>,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, Compaction>)> {
        let mode = Mode::from_id(mode).ok_or_else(|| {
            PyValueError::new_err(format!(
                "mode: expected \"summary\" or \"trim\", got {mode:?}"
            ))
        })?;
        let tokens = tokens
            .map(|(before, after, quality)| {
                runcontext_core::tokens::Quality::from_id(&quality)
                    .map(|quality| CompactionTokens {
                        before,
                        after,
                        quality,
                    })
                    .ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "quality: expected \"exact\", \"calibrated\" or \"estimated\", \
                             got {quality:?}"
                        ))
                    })
            })
            .transpose()?;
        let compaction = core::Compaction {
            start,
            end,
            messages: messages.iter().map(|m| m.as_bytes().to_vec()).collect(),
            mode,
            tokens,
            time: time.to_owned(),
        };
        let line = {
            let conversation = bodies_of(py, &self.generations, &self.bodies);
            self.inner
                .write_compaction(&conversation, &compaction)
                .map_err(write_error)?
        };
        let record = Compaction::from_core(self.runs.len(), self.inner.lines(), &compaction);
        let added: Vec<Py<PyBytes>> = messages.into_iter().map(Bound::unbind).collect();
        let record = self.take_compaction(py, start, end, added, record)?;
        Ok((PyBytes::new(py, &line), record))
    }

    /// The `elision` line replacing each `(index, stub)` of `items` (the stub's canonical
    /// JSON; indices strictly increasing), and the record.
    fn write_elision<'py>(
        &mut self,
        py: Python<'py>,
        items: Vec<(usize, Bound<'py, PyBytes>)>,
        time: &str,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, Elision>)> {
        let line = {
            let conversation = bodies_of(py, &self.generations, &self.bodies);
            let pairs: Vec<(usize, &[u8])> =
                items.iter().map(|(i, s)| (*i, s.as_bytes())).collect();
            self.inner
                .write_elision(&conversation, &pairs, time)
                .map_err(write_error)?
        };
        let elision = core::Elision {
            items: items
                .iter()
                .map(|(i, s)| (*i, s.as_bytes().to_vec()))
                .collect(),
            time: time.to_owned(),
        };
        let record = Elision::from_core(self.runs.len(), self.inner.lines(), &elision);
        let stubs = items.into_iter().map(|(i, s)| (i, s.unbind())).collect();
        let record = self.take_elision(py, stubs, record)?;
        Ok((PyBytes::new(py, &line), record))
    }

    /// The range `[start, end)` a pair-aligned hard trim of the current conversation drops,
    /// keeping its first `sticky` messages and at least its last `keep`; `None` when nothing
    /// can be dropped.
    fn trim_range(&self, py: Python<'_>, sticky: usize, keep: usize) -> Option<(usize, usize)> {
        core::trim_range(
            &bodies_of(py, &self.generations, &self.bodies),
            sticky,
            keep,
        )
    }

    /// Every run, in order, in a new list.
    fn runs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.runs.iter().map(|run| run.bind(py)))
    }

    /// Run `number` (1-based).
    fn run<'py>(&self, py: Python<'py>, number: usize) -> PyResult<Bound<'py, Run>> {
        number
            .checked_sub(1)
            .and_then(|index| self.runs.get(index))
            .map(|run| run.bind(py).clone())
            .ok_or_else(|| PyIndexError::new_err(format!("no run {number}")))
    }

    /// `(name, text)` of the section recorded under `digest`, or `None`.
    fn section(&self, digest: &str) -> Option<(String, String)> {
        self.inner
            .section(digest)
            .map(|(n, t)| (n.to_owned(), t.to_owned()))
    }

    /// Verify each of `lines[start:]` in order, in one call, and take in what it holds. The
    /// first refused line raises its error; the lines before it stay read (`lines` says how
    /// far).
    fn read_lines(
        &mut self,
        py: Python<'_>,
        lines: &Bound<'_, PyList>,
        start: usize,
    ) -> PyResult<()> {
        for index in start..lines.len() {
            let line = lines.get_item(index)?;
            let raw = line
                .cast::<PyBytes>()
                .map_err(|_| PyTypeError::new_err(format!("lines[{index}]: expected bytes")))?;
            self.take(py, raw.as_bytes())?;
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
    ) -> PyResult<()> {
        let mut skip = skip;
        for (index, chunk) in chunks.iter().enumerate() {
            let chunk = chunk
                .cast::<PyBytes>()
                .map_err(|_| PyTypeError::new_err(format!("chunks[{index}]: expected bytes")))?;
            for line in Lines(Some(chunk.as_bytes())) {
                if skip > 0 {
                    skip -= 1;
                } else {
                    self.take(py, line)?;
                }
            }
        }
        Ok(())
    }

    /// Start a batch of writes: `rollback` undoes every write since, `commit` keeps them.
    fn begin(&mut self) {
        self.inner.begin();
        self.mark = Some(Mark {
            bodies: self.bodies.len(),
            generations: self.generations.len(),
            current: self.current().len(),
            runs: self.runs.len(),
            edits: self.edits.len(),
            last_message_line: self.last_message_line,
        });
    }
    fn commit(&mut self) {
        self.inner.commit();
        self.mark = None;
    }
    fn rollback(&mut self) {
        self.inner.rollback();
        if let Some(mark) = self.mark.take() {
            self.bodies.truncate(mark.bodies);
            self.generations.truncate(mark.generations);
            if let Some(current) = self.generations.last_mut() {
                current.truncate(mark.current);
            }
            self.runs.truncate(mark.runs);
            self.run_generations.truncate(mark.runs);
            self.edits.truncate(mark.edits);
            self.last_message_line = mark.last_message_line;
        }
    }

    fn write_header<'py>(
        &mut self,
        py: Python<'py>,
        seed: &str,
        time: &str,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let line = self.inner.write_header(seed, time).map_err(write_error)?;
        self.header_time = time.to_owned();
        Ok(PyBytes::new(py, &line))
    }

    /// The next message line around `message`, the message's canonical JSON, which becomes
    /// the transcript's next message.
    fn write_message<'py>(
        &mut self,
        py: Python<'py>,
        message: Bound<'py, PyBytes>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let line = self
            .inner
            .write_message(message.as_bytes())
            .map_err(write_error)?;
        self.push_message(message.unbind());
        self.last_message_line = self.inner.lines();
        Ok(PyBytes::new(py, &line))
    }

    /// Refuse, without writing, what `write_message` would refuse of the message at `index`
    /// (its canonical JSON): a message a reader would refuse, or a record over the line cap.
    fn check_message(&self, message: &[u8], index: usize) -> PyResult<()> {
        self.inner
            .check_message(message, index)
            .map_err(write_error)
    }

    /// The section lines and the run-context line of the next run with `context`, and the
    /// run; `tokens` is the canonical JSON of the run's `tokens` member, or `None`. A section
    /// the transcript holds is found by the digest the context already has: never hashed
    /// again.
    #[pyo3(signature = (context, time, messages, tokens = None))]
    fn write_run<'py>(
        &mut self,
        py: Python<'py>,
        context: &Bound<'py, RunContext>,
        time: &str,
        messages: usize,
        tokens: Option<&[u8]>,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, Run>)> {
        let tokens = tokens
            .map(|text| {
                runcontext_core::parse(text)
                    .map_err(|e| e.to_string())
                    .and_then(|value| Tokens::from_value(&value))
                    .map_err(|why| PyValueError::new_err(format!("tokens: {why}")))
            })
            .transpose()?;
        let inner = &mut self.inner;
        let (written, line, refs, facts) = context
            .get()
            .record_parts(py, |digest, sections, facts| {
                let mut written = Vec::new();
                for section in sections {
                    written.extend(inner.write_known_section(
                        section.name,
                        section.text,
                        &section.digest,
                    )?);
                }
                let refs: Vec<SectionRef> = sections
                    .iter()
                    .map(|s| SectionRef {
                        position: if s.head {
                            Position::Head
                        } else {
                            Position::Tail
                        },
                        name: s.name.to_owned(),
                        digest: s.digest.clone(),
                    })
                    .collect();
                let line =
                    inner.write_envelope(digest, &refs, &facts, time, messages, tokens.as_ref())?;
                Ok((written, line, refs, facts))
            })
            .map_err(write_error)?;
        let list = PyList::empty(py);
        for line in written.iter().chain([&line]) {
            list.append(PyBytes::new(py, line))?;
        }
        let sections = match &self.shared.sections {
            Some((held, tuple)) if *held == refs => tuple.clone_ref(py),
            _ => context
                .getattr(intern!(py, "sections"))?
                .cast_into::<PyTuple>()?
                .unbind(),
        };
        let cell = empty_cell();
        let _ = cell.set(py, context.clone().unbind());
        let run = self.make_run(py, refs, sections, facts, Some(cell), |this, py| {
            Ok((
                this.runs.len() + 1,
                PyString::new(py, time).unbind(),
                context.get().digest(py),
                messages,
                tokens_to_python(py, tokens.as_ref())?,
            ))
        })?;
        Ok((list, run))
    }
}

impl Transcript {
    fn current(&self) -> &[u32] {
        self.generations.last().expect("at least one generation")
    }

    fn push_message(&mut self, body: Py<PyBytes>) {
        let id = self.bodies.len() as u32;
        self.bodies.push(body);
        self.generations
            .last_mut()
            .expect("at least one generation")
            .push(id);
    }

    /// A new generation: the current one with [`start`, `end`) replaced by `added`.
    fn take_compaction<'py>(
        &mut self,
        py: Python<'py>,
        start: usize,
        end: usize,
        added: Vec<Py<PyBytes>>,
        record: Compaction,
    ) -> PyResult<Bound<'py, Compaction>> {
        let first = self.bodies.len() as u32;
        let count = added.len() as u32;
        let ids = first..first + count;
        self.bodies.extend(added);
        let current = self.current();
        let mut next = Vec::with_capacity(current.len() - (end - start) + ids.len());
        next.extend_from_slice(&current[..start]);
        next.extend(ids);
        next.extend_from_slice(&current[end..]);
        self.generations.push(next);
        self.last_message_line = self.inner.lines();
        let record = Bound::new(py, record)?;
        self.edits
            .push((record.clone().into_any().unbind(), first, count));
        Ok(record)
    }

    /// A new generation: the current one with each `(index, stub)` replaced.
    fn take_elision<'py>(
        &mut self,
        py: Python<'py>,
        stubs: Vec<(usize, Py<PyBytes>)>,
        record: Elision,
    ) -> PyResult<Bound<'py, Elision>> {
        let mut next = self.current().to_vec();
        let (first, count) = (self.bodies.len() as u32, stubs.len() as u32);
        for (index, stub) in stubs {
            next[index] = self.bodies.len() as u32;
            self.bodies.push(stub);
        }
        self.generations.push(next);
        self.last_message_line = self.inner.lines();
        let record = Bound::new(py, record)?;
        self.edits
            .push((record.clone().into_any().unbind(), first, count));
        Ok(record)
    }

    /// Run `number`'s generation and message count.
    fn sent(&self, py: Python<'_>, number: usize) -> PyResult<(&[u32], usize)> {
        let index = number
            .checked_sub(1)
            .filter(|&i| i < self.runs.len())
            .ok_or_else(|| PyIndexError::new_err(format!("no run {number}")))?;
        let generation = &self.generations[self.run_generations[index] as usize];
        Ok((generation, self.runs[index].bind(py).get().message_count()))
    }

    fn decode<'py>(&self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for &body in ids {
            let value = runcontext_core::parse(self.bodies[body as usize].bind(py).as_bytes())
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            list.append(to_python(py, &value)?)?;
        }
        Ok(list)
    }

    /// Read one line in the core and take in what it holds.
    fn take(&mut self, py: Python<'_>, raw: &[u8]) -> PyResult<()> {
        let item = self
            .inner
            .read_line(raw)
            .map_err(|e| transcript_error(py, &self.name, e))?;
        match item {
            Item::Message { body, .. } => {
                self.last_message_line = self.inner.lines();
                self.push_message(PyBytes::new(py, &body).unbind());
            }
            Item::Compaction(c) => {
                let record = Compaction::from_core(self.runs.len(), self.inner.lines(), &c);
                let added = c
                    .messages
                    .iter()
                    .map(|m| PyBytes::new(py, m).unbind())
                    .collect();
                self.take_compaction(py, c.start, c.end, added, record)?;
            }
            Item::Elision(e) => {
                let record = Elision::from_core(self.runs.len(), self.inner.lines(), &e);
                let stubs = e
                    .items
                    .iter()
                    .map(|(i, s)| (*i, PyBytes::new(py, s).unbind()))
                    .collect();
                self.take_elision(py, stubs, record)?;
            }
            Item::Run(e) => {
                let sections = match &self.shared.sections {
                    Some((held, tuple)) if *held == e.sections => tuple.clone_ref(py),
                    _ => self.section_tuple(py, &e.sections)?,
                };
                let tokens = tokens_to_python(py, e.tokens.as_ref())?;
                let (number, time, digest, messages) = (e.run, e.time, e.digest, e.messages);
                self.make_run(py, e.sections, sections, e.facts, None, |_, py| {
                    Ok((
                        number,
                        PyString::new(py, &time).unbind(),
                        PyString::new(py, &digest).unbind(),
                        messages,
                        tokens,
                    ))
                })?;
            }
            Item::Section { .. } => {}
            Item::Header { time, .. } => self.header_time = time,
        }
        Ok(())
    }

    /// The tuple of `Section`s an envelope names (each body verified and recorded).
    fn section_tuple(&mut self, py: Python<'_>, refs: &[SectionRef]) -> PyResult<Py<PyTuple>> {
        let mut items = Vec::with_capacity(refs.len());
        for section in refs {
            let key = (section.position, section.digest.clone());
            let object = match self.section_objects.get(&key) {
                Some(object) => object.clone_ref(py),
                None => {
                    let (name, text) = self.inner.section(&section.digest).expect("verified");
                    let text = self
                        .texts
                        .entry(section.digest.clone())
                        .or_insert_with(|| PyString::new(py, text).unbind())
                        .clone_ref(py);
                    let object = Py::new(
                        py,
                        Section::make(
                            py,
                            section.position == Position::Head,
                            PyString::new(py, name).unbind(),
                            text,
                            PyString::new(py, &section.digest).unbind(),
                        ),
                    )?;
                    self.section_objects.insert(key, object.clone_ref(py));
                    object
                }
            };
            items.push(object);
        }
        Ok(PyTuple::new(py, items)?.unbind())
    }

    /// The next run, with the sections and facts tuples shared with the run before when they
    /// are the same, and the context cell too when both are; `cell` is a context already
    /// built (a written run's).
    #[allow(clippy::type_complexity)]
    fn make_run<'py>(
        &mut self,
        py: Python<'py>,
        refs: Vec<SectionRef>,
        sections: Py<PyTuple>,
        facts: Vec<(String, String)>,
        cell: Option<ContextCell>,
        fields: impl FnOnce(
            &Self,
            Python<'py>,
        )
            -> PyResult<(usize, Py<PyString>, Py<PyString>, usize, Option<Py<PyDict>>)>,
    ) -> PyResult<Bound<'py, Run>> {
        let same_sections = matches!(&self.shared.sections, Some((held, _)) if *held == refs);
        let same_facts = matches!(&self.shared.facts, Some((held, _)) if *held == facts);
        let facts_tuple = match &self.shared.facts {
            Some((_, tuple)) if same_facts => tuple.clone_ref(py),
            _ => PyTuple::new(py, facts.iter().map(|(n, v)| (n.as_str(), v.as_str())))?.unbind(),
        };
        let cell = match cell {
            Some(cell) => cell,
            None if same_sections && same_facts => self.shared.context.clone(),
            None => empty_cell(),
        };
        let (number, time, digest, messages, tokens) = fields(self, py)?;
        let run = Bound::new(
            py,
            Run::make(
                number,
                time,
                digest,
                messages,
                tokens,
                sections.clone_ref(py),
                facts_tuple.clone_ref(py),
                cell.clone(),
            ),
        )?;
        self.shared = Shared {
            sections: Some((refs, sections)),
            facts: Some((facts, facts_tuple)),
            context: cell,
        };
        self.runs.push(run.clone().unbind());
        self.run_generations
            .push((self.generations.len() - 1) as u32);
        Ok(run)
    }
}

/// The current conversation's bodies (the last generation's), as the core's writers take
/// them.
fn bodies_of<'a>(
    py: Python<'a>,
    generations: &'a [Vec<u32>],
    bodies: &'a [Py<PyBytes>],
) -> Vec<&'a [u8]> {
    generations
        .last()
        .expect("at least one generation")
        .iter()
        .map(|&body| bodies[body as usize].bind(py).as_bytes())
        .collect()
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
