//! The one place core errors become Python exceptions.
//!
//! The exception classes live in `runcontext/errors.py` (Python can give a class two bases,
//! `ValueError` and `TypeError`); they are looked up once and cached.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};
use runcontext_core::{
    CanonicalError, CanonicalErrorKind, ParseError, ParseErrorKind, RunContextError,
};

/// The name of `obj`'s type, for messages. Read from the type's own name string, so no
/// Python code runs (a `__name__` that is a str subclass cannot intervene).
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .ok()
        .and_then(|name| name.to_str().map(str::to_owned).ok())
        .unwrap_or_else(|| "<unknown>".to_owned())
}

fn class<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &str,
) -> PyResult<&'py Bound<'py, PyType>> {
    cell.import(py, "runcontext.errors", name)
}

macro_rules! exception_class {
    ($fn_name:ident, $py_name:literal) => {
        fn $fn_name(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
            static CELL: PyOnceLock<Py<PyType>> = PyOnceLock::new();
            class(py, &CELL, $py_name)
        }
    };
}

exception_class!(unsupported_type, "UnsupportedTypeError");
exception_class!(invalid_number, "InvalidNumberError");
exception_class!(invalid_string, "InvalidStringError");
exception_class!(nesting_too_deep, "NestingTooDeepError");
exception_class!(duplicate_key, "DuplicateKeyError");
exception_class!(json_syntax, "JSONSyntaxError");
exception_class!(runcontext_type, "RunContextTypeError");
exception_class!(runcontext_value, "RunContextValueError");

fn instantiate(
    cls: &Bound<'_, PyType>,
    message: String,
    attrs: &[(&str, Bound<'_, PyAny>)],
) -> PyErr {
    let py = cls.py();
    let build = || -> PyResult<PyErr> {
        let kwargs = PyDict::new(py);
        for (key, value) in attrs {
            kwargs.set_item(key, value)?;
        }
        Ok(PyErr::from_value(cls.call((message,), Some(&kwargs))?))
    };
    build().unwrap_or_else(|e| e)
}

fn canonical_class<'py>(
    py: Python<'py>,
    kind: &CanonicalErrorKind,
) -> PyResult<&'py Bound<'py, PyType>> {
    match kind {
        CanonicalErrorKind::NonFinite(_) | CanonicalErrorKind::IntegerOutOfRange(_) => {
            invalid_number(py)
        }
        CanonicalErrorKind::LoneSurrogate => invalid_string(py),
        CanonicalErrorKind::NonStringKey(_) | CanonicalErrorKind::UnsupportedType(_) => {
            unsupported_type(py)
        }
        CanonicalErrorKind::TooDeep => nesting_too_deep(py),
        CanonicalErrorKind::DuplicateKey(_) => duplicate_key(py),
    }
}

/// A value that cannot be canonicalised: the message names the JSON path; `.path` holds it.
pub fn canonical_error(py: Python<'_>, err: CanonicalError) -> PyErr {
    match canonical_class(py, &err.kind) {
        Ok(cls) => {
            let attrs = (|| -> PyResult<Vec<(&str, Bound<'_, PyAny>)>> {
                Ok(vec![
                    ("kind", err.kind.id().into_pyobject(py)?.into_any()),
                    ("path", err.path.to_string().into_pyobject(py)?.into_any()),
                ])
            })();
            match attrs {
                Ok(attrs) => instantiate(cls, err.to_string(), &attrs),
                Err(e) => e,
            }
        }
        Err(e) => e,
    }
}

/// A JSON text that cannot be canonicalised: `.path`, `.line`, `.column` and `.offset`.
pub fn parse_error(py: Python<'_>, err: ParseError) -> PyErr {
    let cls = match &err.kind {
        ParseErrorKind::Canonical(kind) => canonical_class(py, kind),
        ParseErrorKind::NumberOverflow(_) | ParseErrorKind::InexactInteger { .. } => {
            invalid_number(py)
        }
        ParseErrorKind::InvalidUtf8 => invalid_string(py),
        _ => json_syntax(py),
    };
    let cls = match cls {
        Ok(cls) => cls,
        Err(e) => return e,
    };
    let attrs = (|| -> PyResult<Vec<(&str, Bound<'_, PyAny>)>> {
        Ok(vec![
            ("kind", err.kind.id().into_pyobject(py)?.into_any()),
            ("path", err.path.to_string().into_pyobject(py)?.into_any()),
            ("line", err.line.into_pyobject(py)?.into_any()),
            ("column", err.column.into_pyobject(py)?.into_any()),
            ("offset", err.offset.into_pyobject(py)?.into_any()),
        ])
    })();
    match attrs {
        Ok(attrs) => instantiate(cls, err.to_string(), &attrs),
        Err(e) => e,
    }
}

/// Invalid RunContext arguments: `.kind` (the rule, as in the conformance vectors),
/// `.argument` and `.index`.
pub fn runcontext_error(py: Python<'_>, err: RunContextError) -> PyErr {
    let cls = if err.is_type_error() {
        runcontext_type(py)
    } else {
        runcontext_value(py)
    };
    let cls = match cls {
        Ok(cls) => cls,
        Err(e) => return e,
    };
    let (argument, index) = (err.arg().keyword(), err.index());
    let attrs = (|| -> PyResult<Vec<(&str, Bound<'_, PyAny>)>> {
        Ok(vec![
            ("kind", err.kind().into_pyobject(py)?.into_any()),
            ("argument", argument.into_pyobject(py)?.into_any()),
            ("index", index.into_pyobject(py)?.into_any()),
        ])
    })();
    match attrs {
        Ok(attrs) => instantiate(cls, err.to_string(), &attrs),
        Err(e) => e,
    }
}
