//! `runcontext.RunContext`: an immutable Python mirror of the core's RunContext.
//!
//! Python values are described to the core as [`Shape`]s; the core applies every rule.
//! All Python objects a property returns are built once, at construction.

use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyByteArray, PyBytes, PyDict, PyFrozenSet, PyList, PyMapping, PySequence, PySet, PyString,
    PyTuple, PyType,
};
use runcontext_core::{ArgError, ArgNode, Shape};

use crate::errors::{runcontext_error, type_name};

/// A Python value as the core's argument rules see it.
struct PyNode<'py>(Bound<'py, PyAny>);

impl<'py> ArgNode for PyNode<'py> {
    type Error = PyErr;

    fn shape(&self, limit: usize) -> PyResult<Shape<Self>> {
        let obj = &self.0;
        let take = limit.saturating_add(1);
        Ok(if obj.is_none() {
            Shape::Null
        } else if let Ok(s) = obj.cast::<PyString>() {
            match s.to_str() {
                Ok(text) => Shape::Str(text.to_owned()),
                Err(_) => Shape::NotText,
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

type StrPair<'py> = (Bound<'py, PyString>, Bound<'py, PyString>);

fn pairs_tuple<'py>(py: Python<'py>, pairs: &[StrPair<'py>]) -> PyResult<Py<PyTuple>> {
    let items = pairs
        .iter()
        .map(|(n, v)| PyTuple::new(py, [n, v]))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyTuple::new(py, items)?.unbind())
}

fn section_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static SECTION: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    SECTION.import(py, "runcontext.section", "Section")
}

/// The refreshable half of a prompt, built fresh per run from strings the caller passes.
#[pyclass(frozen, module = "runcontext", name = "RunContext")]
pub struct RunContext {
    /// The head sections' texts joined by a blank line, or None.
    #[pyo3(get)]
    head_text: Option<Py<PyString>>,
    /// The tail block, or None when there are no facts and no tail sections.
    #[pyo3(get)]
    tail_text: Option<Py<PyString>>,
    /// `blake3:…` digest of the canonical document of the kept, normalised entries.
    #[pyo3(get)]
    digest: Py<PyString>,
    digest_text: String,
    /// Every kept section, head first, as `Section(position, name, text, digest)`.
    #[pyo3(get)]
    sections: Py<PyTuple>,
    /// The digest of each kept section, in `sections` order.
    #[pyo3(get)]
    section_digests: Py<PyTuple>,
    /// True when neither a head nor a tail message would be sent.
    #[pyo3(get)]
    is_empty: bool,
    /// Kept facts, normalised, as `(name, value)` tuples in order.
    #[pyo3(get)]
    facts: Py<PyTuple>,
    /// Kept head sections, normalised, as `(name, text)` tuples in order.
    #[pyo3(get)]
    head_sections: Py<PyTuple>,
    /// Kept tail sections, normalised, as `(name, text)` tuples in order.
    #[pyo3(get)]
    tail_sections: Py<PyTuple>,
    hash: isize,
}

impl RunContext {
    fn message<'py>(
        py: Python<'py>,
        text: &Option<Py<PyString>>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(text) = text else { return Ok(None) };
        let message = PyDict::new(py);
        message.set_item(pyo3::intern!(py, "role"), pyo3::intern!(py, "system"))?;
        message.set_item(pyo3::intern!(py, "content"), text.bind(py))?;
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
        let core =
            runcontext_core::RunContext::from_args(head.as_ref(), facts.as_ref(), tail.as_ref())
                .map_err(|e| match e {
                    ArgError::Invalid(err) => runcontext_error(py, err),
                    ArgError::Host(err) => err,
                })?;
        // One Python str per kept text, shared by `sections`, the pair tuples and, for a
        // single head section, `head_text`: an 8 KB AGENTS.md is decoded once, not thrice.
        let strings =
            |pairs: &[(String, String)]| -> Vec<(Bound<'_, PyString>, Bound<'_, PyString>)> {
                pairs
                    .iter()
                    .map(|(n, t)| (PyString::new(py, n), PyString::new(py, t)))
                    .collect()
            };
        let (head, facts, tail) = (
            strings(core.head_sections()),
            strings(core.facts()),
            strings(core.tail_sections()),
        );
        let section = section_class(py)?;
        let sections = core
            .sections()
            .iter()
            .zip(head.iter().chain(tail.iter()))
            .map(|(s, (name, text))| {
                section.call1((s.position.as_str(), name, text, s.digest.as_str()))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let head_text = match (core.head_text(), head.as_slice()) {
            (Some(_), [(_, only)]) => Some(only.clone().unbind()),
            (text, _) => text.map(|t| PyString::new(py, t).unbind()),
        };
        // Equal contexts have equal digests, so the digest's first 64 bits make a good hash.
        let hash = u64::from_str_radix(
            &core.digest()[runcontext_core::DIGEST_PREFIX.len()..][..16],
            16,
        )
        .unwrap_or(0) as isize;
        Ok(RunContext {
            head_text,
            tail_text: core.tail_text().map(|t| PyString::new(py, t).unbind()),
            digest: PyString::new(py, core.digest()).unbind(),
            digest_text: core.digest().to_owned(),
            sections: PyTuple::new(py, sections)?.unbind(),
            section_digests: PyTuple::new(py, core.section_digests())?.unbind(),
            is_empty: core.is_empty(),
            facts: pairs_tuple(py, &facts)?,
            head_sections: pairs_tuple(py, &head)?,
            tail_sections: pairs_tuple(py, &tail)?,
            hash: if hash == -1 { -2 } else { hash },
        })
    }

    /// `{"role": "system", "content": head_text}` (a new dict each call), or None.
    #[getter]
    fn head_message<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        Self::message(py, &self.head_text)
    }

    /// `{"role": "system", "content": tail_text}` (a new dict each call), or None.
    #[getter]
    fn tail_message<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        Self::message(py, &self.tail_text)
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(other) = other.cast::<RunContext>() else {
            return Ok(py.NotImplemented());
        };
        let equal = self.digest_text == other.get().digest_text;
        Ok(match op {
            CompareOp::Eq => equal.into_pyobject(py)?.to_owned().into_any().unbind(),
            CompareOp::Ne => (!equal).into_pyobject(py)?.to_owned().into_any().unbind(),
            _ => py.NotImplemented(),
        })
    }

    fn __hash__(&self) -> isize {
        self.hash
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let digest = &self.digest_text;
        Ok(format!(
            "RunContext(digest='{}…', head_sections={}, facts={}, tail_sections={})",
            &digest[..runcontext_core::DIGEST_PREFIX.len() + 12],
            self.head_sections.bind(py).len(),
            self.facts.bind(py).len(),
            self.tail_sections.bind(py).len()
        ))
    }

    /// Pickles as its kept, normalised arguments; rebuilding gives the same digest.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let this = slf.get();
        let kwargs = PyDict::new(py);
        kwargs.set_item("head_sections", this.head_sections.bind(py))?;
        kwargs.set_item("facts", this.facts.bind(py))?;
        kwargs.set_item("tail_sections", this.tail_sections.bind(py))?;
        let partial = py
            .import("functools")?
            .getattr("partial")?
            .call((slf.get_type(),), Some(&kwargs))?;
        Ok((partial, PyTuple::empty(py)))
    }
}
