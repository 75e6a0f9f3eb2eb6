//! The named records the extension hands out: `Section`, `Run`, `TornTail`, `Compaction`
//! and `Elision`.
//!
//! Frozen classes with named fields, equality, hashing, pickling and `__match_args__`, so a
//! record has one shape from the core to the command line and nobody reads one by position.
//! The transcript state (`transcript.rs`) makes `Run`s as it reads and writes; `RunContext`
//! (`runcontext.rs`) makes `Section`s.

use std::sync::Arc;

use pyo3::basic::CompareOp;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

use crate::runcontext::RunContext;

/// Equality from a comparison of the fields: `==` and `!=` only.
fn compare(py: Python<'_>, equal: PyResult<bool>, op: CompareOp) -> PyResult<Py<PyAny>> {
    let equal = equal?;
    Ok(match op {
        CompareOp::Eq => equal.into_pyobject(py)?.to_owned().into_any().unbind(),
        CompareOp::Ne => (!equal).into_pyobject(py)?.to_owned().into_any().unbind(),
        _ => py.NotImplemented(),
    })
}

/// A section of a rendered context: where it renders, its name, its normalised text and its
/// digest (`digest({"name": name, "text": text})`, under which a transcript stores its body
/// once).
#[pyclass(frozen, module = "runcontext.section", name = "Section")]
pub struct Section {
    /// `"head"` or `"tail"`.
    #[pyo3(get)]
    position: Py<PyString>,
    #[pyo3(get)]
    name: Py<PyString>,
    #[pyo3(get)]
    text: Py<PyString>,
    #[pyo3(get)]
    digest: Py<PyString>,
}

impl Section {
    pub(crate) fn make(
        py: Python<'_>,
        head: bool,
        name: Py<PyString>,
        text: Py<PyString>,
        digest: Py<PyString>,
    ) -> Self {
        let position = if head {
            pyo3::intern!(py, "head")
        } else {
            pyo3::intern!(py, "tail")
        };
        Self {
            position: position.clone().unbind(),
            name,
            text,
            digest,
        }
    }

    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(
            py,
            [&self.position, &self.name, &self.text, &self.digest].map(|f| f.bind(py)),
        )
    }
}

#[pymethods]
impl Section {
    #[new]
    fn new(
        position: Bound<'_, PyString>,
        name: Bound<'_, PyString>,
        text: Bound<'_, PyString>,
        digest: Bound<'_, PyString>,
    ) -> PyResult<Self> {
        let head = match position.to_str()? {
            "head" => true,
            "tail" => false,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "position: expected 'head' or 'tail', got {}",
                    position.repr()?
                )))
            }
        };
        Ok(Self::make(
            position.py(),
            head,
            name.unbind(),
            text.unbind(),
            digest.unbind(),
        ))
    }

    #[classattr]
    fn __match_args__() -> (&'static str, &'static str, &'static str, &'static str) {
        ("position", "name", "text", "digest")
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(other) = other.cast::<Section>() else {
            return Ok(py.NotImplemented());
        };
        compare(py, self.fields(py)?.eq(other.get().fields(py)?), op)
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        self.fields(py)?.hash()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let [position, name, text, digest] =
            [&self.position, &self.name, &self.text, &self.digest].map(|f| f.bind(py).repr());
        Ok(format!(
            "Section(position={}, name={}, text={}, digest={})",
            position?, name?, text?, digest?
        ))
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>)> {
        Ok((slf.get_type(), slf.get().fields(slf.py())?))
    }
}

/// The context cell of a run: built on first use, and shared by the consecutive runs whose
/// sections and facts are the same (a long session repeats one context many times).
pub(crate) type ContextCell = Arc<PyOnceLock<Py<RunContext>>>;

/// A context cell with nothing built yet.
pub(crate) fn empty_cell() -> ContextCell {
    Arc::new(PyOnceLock::new())
}

/// One recorded run of a transcript.
///
/// `number` counts from 1; `time` is the envelope's UTC timestamp (`timestamp` its text as
/// recorded); `messages` is how many conversation messages the request carried (the tail
/// followed message `messages - 1`); `sections` and `facts` are the context's, and `context`
/// is the RunContext rebuilt from them (`context.digest == digest`, verified when the record
/// was read); `tokens` is the run's recorded `tokens` member, or `None`.
#[pyclass(frozen, module = "runcontext.transcript", name = "Run")]
pub struct Run {
    #[pyo3(get)]
    number: usize,
    #[pyo3(get)]
    timestamp: Py<PyString>,
    #[pyo3(get)]
    digest: Py<PyString>,
    #[pyo3(get)]
    messages: usize,
    #[pyo3(get)]
    tokens: Option<Py<PyDict>>,
    /// `Section`s in render order, head first.
    #[pyo3(get)]
    sections: Py<PyTuple>,
    /// `(name, value)` pairs in order.
    #[pyo3(get)]
    facts: Py<PyTuple>,
    context: ContextCell,
}

impl Run {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn make(
        number: usize,
        timestamp: Py<PyString>,
        digest: Py<PyString>,
        messages: usize,
        tokens: Option<Py<PyDict>>,
        sections: Py<PyTuple>,
        facts: Py<PyTuple>,
        context: ContextCell,
    ) -> Self {
        Self {
            number,
            timestamp,
            digest,
            messages,
            tokens,
            sections,
            facts,
            context,
        }
    }

    /// How many conversation messages the run was sent.
    pub(crate) fn message_count(&self) -> usize {
        self.messages
    }

    /// The run's fields in the constructor's order: what it pickles as and is compared by.
    fn args<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(
            py,
            [
                self.number.into_pyobject(py)?.into_any(),
                self.timestamp.bind(py).clone().into_any(),
                self.digest.bind(py).clone().into_any(),
                self.messages.into_pyobject(py)?.into_any(),
                match &self.tokens {
                    Some(tokens) => tokens.bind(py).clone().into_any(),
                    None => py.None().into_bound(py),
                },
                self.sections.bind(py).clone().into_any(),
                self.facts.bind(py).clone().into_any(),
            ],
        )
    }

    fn build_context(&self, py: Python<'_>) -> PyResult<Py<RunContext>> {
        let head = pyo3::types::PyList::empty(py);
        let tail = pyo3::types::PyList::empty(py);
        for section in self.sections.bind(py).iter() {
            let section = section.cast_into::<Section>()?;
            let section = section.get();
            let pair = (section.name.bind(py), section.text.bind(py));
            if section.position.bind(py).to_str()? == "head" {
                head.append(pair)?;
            } else {
                tail.append(pair)?;
            }
        }
        let context = RunContext::build(py, &head, self.facts.bind(py), &tail)?;
        Py::new(py, context)
    }
}

#[pymethods]
impl Run {
    #[new]
    #[pyo3(signature = (number, timestamp, digest, messages, tokens, sections, facts))]
    fn new(
        number: usize,
        timestamp: Py<PyString>,
        digest: Py<PyString>,
        messages: usize,
        tokens: Option<Py<PyDict>>,
        sections: Py<PyTuple>,
        facts: Py<PyTuple>,
    ) -> Self {
        Self::make(
            number,
            timestamp,
            digest,
            messages,
            tokens,
            sections,
            facts,
            empty_cell(),
        )
    }

    #[classattr]
    fn __match_args__() -> (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    ) {
        (
            "number", "time", "digest", "messages", "tokens", "sections", "facts",
        )
    }

    /// The envelope's time as an aware UTC `datetime`.
    #[getter]
    fn time<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        static DATETIME: PyOnceLock<Py<PyType>> = PyOnceLock::new();
        DATETIME.import(py, "datetime", "datetime")?.call_method1(
            pyo3::intern!(py, "fromisoformat"),
            (self.timestamp.bind(py),),
        )
    }

    /// The RunContext rebuilt from the transcript, built on first use.
    #[getter]
    fn context(&self, py: Python<'_>) -> PyResult<Py<RunContext>> {
        if let Some(context) = self.context.get(py) {
            return Ok(context.clone_ref(py));
        }
        let built = self.build_context(py)?;
        Ok(self.context.get_or_init(py, || built).clone_ref(py))
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(other) = other.cast::<Run>() else {
            return Ok(py.NotImplemented());
        };
        compare(py, self.args(py)?.eq(other.get().args(py)?), op)
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        // The number, time and digest identify a run; `tokens` (a dict) is left out.
        (self.number, self.timestamp.bind(py), self.digest.bind(py))
            .into_pyobject(py)?
            .hash()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Run(number={}, time={}, digest={}, messages={}, tokens={})",
            self.number,
            self.timestamp.bind(py).repr()?,
            self.digest.bind(py).repr()?,
            self.messages,
            match &self.tokens {
                Some(tokens) => tokens.bind(py).repr()?.to_string(),
                None => "None".into(),
            }
        ))
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>)> {
        Ok((slf.get_type(), slf.get().args(slf.py())?))
    }
}

/// An incomplete last record: it starts on `line`, at byte `offset`, and is `length` bytes.
#[pyclass(frozen, eq, hash, module = "runcontext.transcript", name = "TornTail")]
#[derive(PartialEq, Eq, Hash, Clone, Copy)]
pub struct TornTail {
    #[pyo3(get)]
    line: usize,
    #[pyo3(get)]
    offset: u64,
    #[pyo3(get)]
    length: u64,
}

#[pymethods]
impl TornTail {
    #[new]
    fn new(line: usize, offset: u64, length: u64) -> Self {
        Self {
            line,
            offset,
            length,
        }
    }

    #[classattr]
    fn __match_args__() -> (&'static str, &'static str, &'static str) {
        ("line", "offset", "length")
    }

    fn __repr__(&self) -> String {
        format!(
            "TornTail(line={}, offset={}, length={})",
            self.line, self.offset, self.length
        )
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, (usize, u64, u64))> {
        let this = slf.get();
        Ok((slf.get_type(), (this.line, this.offset, this.length)))
    }
}

/// A `compaction` record as read or written: positions [`start`, `end`) of the conversation
/// replaced by `messages` messages, after run `after_run` (0: before any run), on `line`.
#[pyclass(
    frozen,
    eq,
    hash,
    module = "runcontext.transcript",
    name = "Compaction"
)]
#[derive(PartialEq, Eq, Hash, Clone)]
pub struct Compaction {
    #[pyo3(get)]
    after_run: usize,
    #[pyo3(get)]
    line: usize,
    #[pyo3(get)]
    start: usize,
    #[pyo3(get)]
    end: usize,
    #[pyo3(get)]
    messages: usize,
    #[pyo3(get)]
    mode: String,
    #[pyo3(get)]
    tokens_before: Option<u64>,
    #[pyo3(get)]
    tokens_after: Option<u64>,
    #[pyo3(get)]
    quality: Option<String>,
    #[pyo3(get)]
    timestamp: String,
}

impl Compaction {
    pub(crate) fn from_core(
        after_run: usize,
        line: usize,
        c: &runcontext_core::transcript::Compaction,
    ) -> Self {
        Self {
            after_run,
            line,
            start: c.start,
            end: c.end,
            messages: c.messages.len(),
            mode: c.mode.as_str().to_owned(),
            tokens_before: c.tokens.map(|t| t.before),
            tokens_after: c.tokens.map(|t| t.after),
            quality: c.tokens.map(|t| t.quality.as_str().to_owned()),
            timestamp: c.time.clone(),
        }
    }
}

type CompactionArgs = (
    usize,
    usize,
    usize,
    usize,
    usize,
    String,
    Option<u64>,
    Option<u64>,
    Option<String>,
    String,
);

#[pymethods]
impl Compaction {
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (after_run, line, start, end, messages, mode, tokens_before, tokens_after, quality, timestamp))]
    fn new(
        after_run: usize,
        line: usize,
        start: usize,
        end: usize,
        messages: usize,
        mode: String,
        tokens_before: Option<u64>,
        tokens_after: Option<u64>,
        quality: Option<String>,
        timestamp: String,
    ) -> Self {
        Self {
            after_run,
            line,
            start,
            end,
            messages,
            mode,
            tokens_before,
            tokens_after,
            quality,
            timestamp,
        }
    }

    #[classattr]
    fn __match_args__() -> (&'static str, &'static str, &'static str, &'static str) {
        ("after_run", "start", "end", "messages")
    }

    /// How many messages of the conversation it replaced (`end - start`).
    #[getter]
    fn replaced(&self) -> usize {
        self.end - self.start
    }

    /// When it was recorded (UTC).
    #[getter]
    fn time<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        parse_time(py, &self.timestamp)
    }

    fn __repr__(&self) -> String {
        format!(
            "Compaction(after_run={}, start={}, end={}, messages={}, mode={:?})",
            self.after_run, self.start, self.end, self.messages, self.mode
        )
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyType>, CompactionArgs)> {
        let t = slf.get().clone();
        Ok((
            slf.get_type(),
            (
                t.after_run,
                t.line,
                t.start,
                t.end,
                t.messages,
                t.mode,
                t.tokens_before,
                t.tokens_after,
                t.quality,
                t.timestamp,
            ),
        ))
    }
}

/// An `elision` record as read or written: the messages at `indices` replaced by stubs, after
/// run `after_run` (0: before any run), on `line`.
#[pyclass(frozen, eq, hash, module = "runcontext.transcript", name = "Elision")]
#[derive(PartialEq, Eq, Hash, Clone)]
pub struct Elision {
    #[pyo3(get)]
    after_run: usize,
    #[pyo3(get)]
    line: usize,
    indices: Vec<usize>,
    #[pyo3(get)]
    timestamp: String,
}

impl Elision {
    pub(crate) fn from_core(
        after_run: usize,
        line: usize,
        e: &runcontext_core::transcript::Elision,
    ) -> Self {
        Self {
            after_run,
            line,
            indices: e.items.iter().map(|(i, _)| *i).collect(),
            timestamp: e.time.clone(),
        }
    }
}

#[pymethods]
impl Elision {
    #[new]
    fn new(after_run: usize, line: usize, indices: Vec<usize>, timestamp: String) -> Self {
        Self {
            after_run,
            line,
            indices,
            timestamp,
        }
    }

    #[classattr]
    fn __match_args__() -> (&'static str, &'static str) {
        ("after_run", "indices")
    }

    /// The positions whose messages were replaced by stubs, increasing.
    #[getter]
    fn indices<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.indices)
    }

    /// When it was recorded (UTC).
    #[getter]
    fn time<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        parse_time(py, &self.timestamp)
    }

    fn __repr__(&self) -> String {
        // As Python shows a tuple: `(4,)`, `(4, 9)`.
        let shown: Vec<String> = self.indices.iter().map(usize::to_string).collect();
        let comma = if shown.len() == 1 { "," } else { "" };
        format!(
            "Elision(after_run={}, indices=({}{comma}))",
            self.after_run,
            shown.join(", ")
        )
    }

    #[allow(clippy::type_complexity)]
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, (usize, usize, Vec<usize>, String))> {
        let t = slf.get().clone();
        Ok((
            slf.get_type(),
            (t.after_run, t.line, t.indices, t.timestamp),
        ))
    }
}

/// A record's `time` as an aware UTC `datetime`.
fn parse_time<'py>(py: Python<'py>, timestamp: &str) -> PyResult<Bound<'py, PyAny>> {
    static DATETIME: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    DATETIME
        .import(py, "datetime", "datetime")?
        .call_method1(pyo3::intern!(py, "fromisoformat"), (timestamp,))
}
