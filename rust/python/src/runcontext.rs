//! `runcontext.RunContext`: an immutable Python mirror of the core's RunContext.
//!
//! Python values are described to the core as [`Shape`]s; the core applies every rule.
//!
//! Lean by design: a context holds the caller's own `str` objects with the length
//! of each that normalisation keeps (a text is not copied to drop its trailing newline),
//! the 32-byte hashes and the digest string: nothing that grows with the text beyond the
//! caller's strings. The texts are read in place (never copied to be checked or hashed),
//! both digests are streamed in one pass with the GIL released, and every property that
//! holds text (`head_text`, `tail_text`, `sections`, the pair tuples) is built on each
//! access rather than kept (docs/FORMAT.md § 3.5, *Memory*).

use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyByteArray, PyBytes, PyDict, PyFrozenSet, PyList, PyMapping, PySequence, PySet, PyString,
    PyTuple, PyType,
};
use runcontext_core::{ArgError, ArgNode, Kept, Shape};

use crate::digest::DETACH_THRESHOLD;
use crate::errors::{runcontext_error, type_name};
use crate::ffi;
use crate::records::Section;

/// A Python str the core reads in place, through its UTF-8 form (`ffi::utf8`).
struct PyText<'py> {
    obj: Bound<'py, PyString>,
}

impl<'py> PyText<'py> {
    /// `None` when the str is not Unicode text (it holds a lone surrogate).
    fn new(obj: Bound<'py, PyString>) -> Option<Self> {
        ffi::utf8(&obj)?;
        Some(Self { obj })
    }

    /// The str to hold: the caller's own when it is exactly a `str`; a subclass's text as a
    /// plain str (whose methods nobody can override).
    fn held(&self) -> Py<PyString> {
        if self.obj.is_exact_instance_of::<PyString>() {
            self.obj.clone().unbind()
        } else {
            PyString::new(self.obj.py(), self.as_ref()).unbind()
        }
    }
}

impl AsRef<str> for PyText<'_> {
    fn as_ref(&self) -> &str {
        // Text at construction, and a str never changes: read in place again.
        ffi::utf8(&self.obj).unwrap_or("")
    }
}

/// A Python value as the core's argument rules see it.
struct PyNode<'py>(Bound<'py, PyAny>);

impl<'py> ArgNode for PyNode<'py> {
    type Error = PyErr;
    type Text = PyText<'py>;

    fn shape(&self, limit: usize) -> PyResult<Shape<Self, PyText<'py>>> {
        let obj = &self.0;
        let take = limit.saturating_add(1);
        Ok(if obj.is_none() {
            Shape::Null
        } else if let Ok(s) = obj.cast::<PyString>() {
            match PyText::new(s.clone()) {
                Some(text) => Shape::Str(text),
                None => Shape::NotText,
            }
        } else if let Ok(list) = obj.cast::<PyList>() {
            Shape::Seq {
                items: list.iter().take(take).map(PyNode).collect(),
                len: Some(list.len()),
            }
        } else if let Ok(tuple) = obj.cast::<PyTuple>() {
            Shape::Seq {
                items: tuple.iter().take(take).map(PyNode).collect(),
                len: Some(tuple.len()),
            }
        } else if obj.is_instance_of::<PyDict>() || obj.cast::<PyMapping>().is_ok() {
            Shape::Mapping
        } else if obj.is_instance_of::<PySet>()
            || obj.is_instance_of::<PyFrozenSet>()
            || is_abstract_set(obj)?
        {
            Shape::Unordered
        } else if obj.is_instance_of::<PyBytes>() || obj.is_instance_of::<PyByteArray>() {
            Shape::Other // a sequence of ints, never of pairs
        } else if let Ok(seq) = obj.cast::<PySequence>() {
            // Any other collections.abc.Sequence (a deque, a custom sequence). Iterators and
            // generators are not sequences: their order is not inspectable before use. Read
            // one item past the limit at most, so that an endless sequence is refused.
            let items = seq
                .try_iter()?
                .take(take)
                .map(|item| item.map(PyNode))
                .collect::<PyResult<Vec<_>>>()?;
            let len = (items.len() < take).then_some(items.len());
            Shape::Seq { items, len }
        } else {
            Shape::Other
        })
    }

    fn type_name(&self) -> String {
        type_name(&self.0)
    }
}

fn is_abstract_set(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    static SET: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    obj.is_instance(SET.import(obj.py(), "collections.abc", "Set")?)
}

type KeptPair<'py> = (PyText<'py>, Kept<PyText<'py>>);

/// The kept `(name, text)` of each pair, as the core reads them.
fn view<'a>(pairs: &'a [KeptPair<'_>]) -> Vec<(&'a str, &'a str)> {
    pairs
        .iter()
        .map(|(n, t)| (n.as_ref(), t.as_str()))
        .collect()
}

/// A section as a transcript records it (see [`RunContext::record_parts`]).
pub(crate) struct RecordSection<'a> {
    pub(crate) head: bool,
    pub(crate) name: &'a str,
    pub(crate) text: &'a str,
    pub(crate) digest: String,
}

/// A kept entry: the caller's name and text, and how many bytes of the text's UTF-8 form
/// normalisation keeps.
struct Held {
    name: Py<PyString>,
    text: Py<PyString>,
    kept: usize,
}

fn hold(pairs: &[KeptPair<'_>]) -> Box<[Held]> {
    pairs
        .iter()
        .map(|(name, text)| Held {
            name: name.held(),
            text: text.raw().held(),
            kept: text.as_str().len(),
        })
        .collect()
}

/// The UTF-8 text of a str this class holds (read as text at construction: never `None`).
fn held_text<'a>(py: Python<'a>, text: &'a Py<PyString>) -> &'a str {
    ffi::utf8(text.bind(py)).unwrap_or("")
}

/// The kept `(name, text)` of each entry, and whether all of them are ASCII.
fn read<'a>(py: Python<'a>, entries: &'a [Held]) -> (Vec<(&'a str, &'a str)>, bool) {
    let mut ascii = true;
    let pairs = entries
        .iter()
        .map(|e| {
            ascii &= ffi::is_ascii(e.name.bind(py)) && ffi::is_ascii(e.text.bind(py));
            // `kept` is a character boundary of the text (normalisation cut it there).
            let text = held_text(py, &e.text);
            (held_text(py, &e.name), text.get(..e.kept).unwrap_or(""))
        })
        .collect();
    (pairs, ascii)
}

/// The kept text of an entry as a str: the caller's own when normalisation kept all of it.
fn kept_text<'py>(py: Python<'py>, entry: &Held) -> Bound<'py, PyString> {
    let text = entry.text.bind(py);
    let whole = held_text(py, &entry.text);
    match whole.get(..entry.kept) {
        Some(kept) if kept.len() < whole.len() => PyString::new(py, kept),
        _ => text.clone(),
    }
}

fn pairs_tuple<'py>(py: Python<'py>, entries: &[Held]) -> PyResult<Bound<'py, PyTuple>> {
    let items = entries
        .iter()
        .map(|e| PyTuple::new(py, [e.name.bind(py).clone(), kept_text(py, e)]))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

/// Writes a text piece by piece into its argument; false when there is no text.
type Renderer<'a> = dyn Fn(&mut dyn FnMut(&str)) -> bool + Sync + 'a;

/// A new str of the text that `write` renders (`None` when it renders none): written
/// straight into a new ASCII str when every piece is ASCII, with the GIL released for
/// large texts (the str is this function's alone until it returns it).
fn render<'py>(
    py: Python<'py>,
    ascii: bool,
    write: &Renderer<'_>,
) -> PyResult<Option<Bound<'py, PyString>>> {
    let mut len = 0;
    if !write(&mut |piece| len += piece.len()) {
        return Ok(None);
    }
    if ascii {
        // Straight into a new ASCII str; `None` only if a piece was not ASCII after all.
        let fill = |out: &mut ffi::AsciiWriter| {
            write(&mut |piece| out.push(piece));
        };
        if let Some(text) = ffi::new_ascii_str(py, len, len > DETACH_THRESHOLD, fill)? {
            return Ok(Some(text));
        }
    }
    let mut out = String::with_capacity(len);
    write(&mut |piece| out.push_str(piece));
    Ok(Some(PyString::new(py, &out)))
}

/// The refreshable half of a prompt, built fresh per run from strings the caller passes.
#[pyclass(frozen, module = "runcontext", name = "RunContext")]
pub struct RunContext {
    /// `blake3:…` digest of the canonical document of the kept, normalised entries.
    #[pyo3(get)]
    digest: Py<PyString>,
    hash: [u8; 32],
    /// Of each kept section, head first.
    section_hashes: Box<[[u8; 32]]>,
    head: Box<[Held]>,
    facts: Box<[Held]>,
    tail: Box<[Held]>,
    /// True when neither a head nor a tail message would be sent.
    #[pyo3(get)]
    is_empty: bool,
}

impl RunContext {
    /// A context from Python values, as `RunContext(head_sections=…, facts=…, tail_sections=…)`.
    pub(crate) fn build(
        py: Python<'_>,
        head_sections: &Bound<'_, PyAny>,
        facts: &Bound<'_, PyAny>,
        tail_sections: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        Self::new(
            py,
            Some(head_sections.clone()),
            Some(facts.clone()),
            Some(tail_sections.clone()),
        )
    }

    /// The `blake3:…` digest string.
    pub(crate) fn digest(&self, py: Python<'_>) -> Py<PyString> {
        self.digest.clone_ref(py)
    }

    /// Each kept section, head first: whether it is a head section, its entry and its hash.
    fn section_entries(&self) -> impl Iterator<Item = (bool, &Held, &[u8; 32])> {
        let heads = std::iter::repeat_n(true, self.head.len())
            .chain(std::iter::repeat_n(false, self.tail.len()));
        heads
            .zip(self.head.iter().chain(self.tail.iter()))
            .zip(self.section_hashes.iter())
            .map(|((head, entry), hash)| (head, entry, hash))
    }

    /// What a transcript records of this context: its digest, each section's position, name,
    /// kept text and digest (the hashes computed when the context was built, so a recorded
    /// section is never hashed again), and the facts.
    pub(crate) fn record_parts<F, R>(&self, py: Python<'_>, with: F) -> R
    where
        F: FnOnce(&str, &[RecordSection<'_>], Vec<(String, String)>) -> R,
    {
        let (head, _) = read(py, &self.head);
        let (tail, _) = read(py, &self.tail);
        let sections: Vec<RecordSection<'_>> = self
            .section_entries()
            .zip(head.iter().chain(tail.iter()))
            .map(|((is_head, _, hash), (name, text))| RecordSection {
                head: is_head,
                name,
                text,
                digest: runcontext_core::format_digest(hash),
            })
            .collect();
        let (facts, _) = read(py, &self.facts);
        let facts = facts
            .into_iter()
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect();
        let digest = self.digest.bind(py).to_str().unwrap_or_default().to_owned();
        with(&digest, &sections, facts)
    }

    fn message<'py>(
        py: Python<'py>,
        text: Option<Bound<'py, PyString>>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(text) = text else { return Ok(None) };
        let message = PyDict::new(py);
        message.set_item(pyo3::intern!(py, "role"), pyo3::intern!(py, "system"))?;
        message.set_item(pyo3::intern!(py, "content"), text)?;
        Ok(Some(message))
    }
}

#[pymethods]
impl RunContext {
    #[new]
    #[pyo3(signature = (*, head_sections = None, facts = None, tail_sections = None))]
    fn new(
        py: Python<'_>,
        head_sections: Option<Bound<'_, PyAny>>,
        facts: Option<Bound<'_, PyAny>>,
        tail_sections: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let (head, facts, tail) = (
            head_sections.map(PyNode),
            facts.map(PyNode),
            tail_sections.map(PyNode),
        );
        let kept =
            runcontext_core::RunContext::validate(head.as_ref(), facts.as_ref(), tail.as_ref())
                .map_err(|e| match e {
                    ArgError::Invalid(err) => runcontext_error(py, err),
                    ArgError::Host(err) => err,
                })?;
        let (h, f, t) = (view(&kept.head), view(&kept.facts), view(&kept.tail));
        let size: usize = [&h, &f, &t]
            .iter()
            .flat_map(|part| part.iter())
            .map(|(n, t)| n.len() + t.len())
            .sum();
        let hash = || runcontext_core::context_digests(&h, &f, &t);
        let digests = if size > DETACH_THRESHOLD {
            // SAFETY (of reading the texts without the GIL): every &str points into a str
            // object that `kept` holds a strong reference to until after this call; str
            // objects are immutable, and their UTF-8 form (their own data when ASCII, else a
            // cache the object owns) lives as long as they do.
            py.detach(hash)
        } else {
            hash()
        };
        Ok(RunContext {
            digest: PyString::new(py, &runcontext_core::format_digest(&digests.digest)).unbind(),
            hash: digests.digest,
            section_hashes: digests.sections.into_boxed_slice(),
            is_empty: kept.head.is_empty() && kept.facts.is_empty() && kept.tail.is_empty(),
            head: hold(&kept.head),
            facts: hold(&kept.facts),
            tail: hold(&kept.tail),
        })
    }

    /// The head sections' texts joined by a blank line, or None. Rendered on each access
    /// (the text of a single head section is that section's own str).
    #[getter]
    fn head_text<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyString>>> {
        if let [only] = &*self.head {
            return Ok(Some(kept_text(py, only)));
        }
        let (pairs, ascii) = read(py, &self.head);
        render(py, ascii, &|out| runcontext_core::render_head(&pairs, out))
    }

    /// The tail block, or None when there are no facts and no tail sections. Rendered on
    /// each access.
    #[getter]
    fn tail_text<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyString>>> {
        let (facts, facts_ascii) = read(py, &self.facts);
        let (tail, tail_ascii) = read(py, &self.tail);
        render(py, facts_ascii && tail_ascii, &|out| {
            runcontext_core::render_tail(&facts, &tail, out)
        })
    }

    /// Every kept section, head first, as `Section(position, name, text, digest)` (built
    /// on each access).
    #[getter]
    fn sections<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items = self
            .section_entries()
            .map(|(head, entry, hash)| {
                let digest = PyString::new(py, &runcontext_core::format_digest(hash));
                let text = kept_text(py, entry).unbind();
                Bound::new(
                    py,
                    Section::make(py, head, entry.name.clone_ref(py), text, digest.unbind()),
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }

    /// The digest of each kept section, in `sections` order (built on each access).
    #[getter]
    fn section_digests<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(
            py,
            self.section_hashes
                .iter()
                .map(runcontext_core::format_digest),
        )
    }

    /// The keyed forms of `digest` and `section_digests`, taken in one pass over the texts:
    /// `(context digest, (section digest, …))`, each `blake3-keyed:` + 64 hex
    /// (docs/FORMAT.md § 2.1). `key` is 32 bytes.
    #[pyo3(signature = (key, /))]
    fn keyed_digests<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<(String, Bound<'py, PyTuple>)> {
        let key = crate::digest::key_of(key)?;
        let ((h, _), (f, _), (t, _)) = (
            read(py, &self.head),
            read(py, &self.facts),
            read(py, &self.tail),
        );
        let size: usize = [&h, &f, &t]
            .iter()
            .flat_map(|part| part.iter())
            .map(|(n, t)| n.len() + t.len())
            .sum();
        let hash = || runcontext_core::keyed_context_digests(&key, &h, &f, &t);
        // Reading the texts without the GIL is sound for the reason given in `new`: they are
        // the immutable strs this context holds, and `self` outlives the call.
        let digests = if size > DETACH_THRESHOLD {
            py.detach(hash)
        } else {
            hash()
        };
        let sections = PyTuple::new(
            py,
            digests
                .sections
                .iter()
                .map(runcontext_core::format_keyed_digest),
        )?;
        Ok((
            runcontext_core::format_keyed_digest(&digests.digest),
            sections,
        ))
    }

    /// Kept facts, normalised, as `(name, value)` tuples in order (built on each access).
    #[getter]
    fn facts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        pairs_tuple(py, &self.facts)
    }

    /// Kept head sections, normalised, as `(name, text)` tuples in order (built on each
    /// access).
    #[getter]
    fn head_sections<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        pairs_tuple(py, &self.head)
    }

    /// Kept tail sections, normalised, as `(name, text)` tuples in order (built on each
    /// access).
    #[getter]
    fn tail_sections<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        pairs_tuple(py, &self.tail)
    }

    /// `{"role": "system", "content": head_text}` (a new dict each call), or None.
    #[getter]
    fn head_message<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        Self::message(py, self.head_text(py)?)
    }

    /// `{"role": "system", "content": tail_text}` (a new dict each call), or None.
    #[getter]
    fn tail_message<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        Self::message(py, self.tail_text(py)?)
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(other) = other.cast::<RunContext>() else {
            return Ok(py.NotImplemented());
        };
        let equal = self.hash == other.get().hash;
        Ok(match op {
            CompareOp::Eq => equal.into_pyobject(py)?.to_owned().into_any().unbind(),
            CompareOp::Ne => (!equal).into_pyobject(py)?.to_owned().into_any().unbind(),
            _ => py.NotImplemented(),
        })
    }

    fn __hash__(&self) -> isize {
        // Equal contexts have equal digests, so the digest's first 64 bits make a good hash.
        let mut first = [0; 8];
        first.copy_from_slice(&self.hash[..8]);
        match u64::from_be_bytes(first) as isize {
            -1 => -2,
            hash => hash,
        }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let digest = self.digest.bind(py).to_str()?;
        Ok(format!(
            "RunContext(digest='{}…', head_sections={}, facts={}, tail_sections={})",
            &digest[..runcontext_core::DIGEST_PREFIX.len() + 12],
            self.head.len(),
            self.facts.len(),
            self.tail.len()
        ))
    }

    /// Pickles as its kept, normalised arguments; rebuilding gives the same digest.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let this = slf.get();
        let kwargs = PyDict::new(py);
        kwargs.set_item("head_sections", this.head_sections(py)?)?;
        kwargs.set_item("facts", this.facts(py)?)?;
        kwargs.set_item("tail_sections", this.tail_sections(py)?)?;
        let partial = py
            .import("functools")?
            .getattr("partial")?
            .call((slf.get_type(),), Some(&kwargs))?;
        Ok((partial, PyTuple::empty(py)))
    }
}
