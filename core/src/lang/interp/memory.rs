//! What a run's values cost: every variable, imported file and trace value is charged against
//! [`super::MAX_VALUE_BYTES`] and [`super::MAX_NESTING`] before it is kept, so a program that would
//! exhaust the machine fails with `KA_AS_LIMIT` instead.

use super::*;

impl Interp<'_> {
    /// Makes room for `bytes` more of the run's values, or fails with `KA_AS_LIMIT`.
    pub(super) fn charge(&self, bytes: usize, what: &str) -> R<()> {
        if self.held.saturating_add(self.pending).saturating_add(bytes) > MAX_VALUE_BYTES {
            return fail(
                Code::AsLimit,
                format!(
                    "{what} would take the run's values past {} MiB, the most one run may hold",
                    MAX_VALUE_BYTES >> 20
                ),
            );
        }
        Ok(())
    }

    /// A value the run keeps (a variable, a file): counted until it is released.
    pub(super) fn hold(&mut self, bytes: usize, what: &str) -> R<()> {
        self.charge(bytes, what)?;
        self.held += bytes;
        Ok(())
    }

    /// A scope's variables are gone.
    pub(super) fn release(&mut self, frame: &Frame) {
        let freed: usize = frame.vars.iter().map(|v| v.size).sum();
        self.held = self.held.saturating_sub(freed);
    }

    /// One more part of a list or an object being built: its size (plus the slot's `extra`),
    /// counted against the limit; too deep a value is refused.
    pub(super) fn part(&self, v: &Value, extra: usize, what: &str) -> R<usize> {
        let (size, depth) = measure(v);
        if depth + 1 > MAX_NESTING {
            return fail(
                Code::AsLimit,
                format!("{what} would nest values more than {MAX_NESTING} deep"),
            );
        }
        self.charge(size + extra, what)?;
        Ok(size + extra)
    }

    /// A value an effect handed the program (a tool's result, a file): within the limits.
    pub(super) fn admit_value(&self, v: &Value, what: &str) -> R<(usize, usize)> {
        let (size, depth) = measure(v);
        if depth > MAX_NESTING {
            return fail(
                Code::AsLimit,
                format!("{what} nests more than {MAX_NESTING} deep"),
            );
        }
        self.charge(size, what)?;
        Ok((size, depth))
    }

    pub(super) fn new_var(&mut self, name: &str, value: Value) -> R<Var> {
        let (size, depth) = measure(&value);
        self.hold(size, &format!("\"{name}\""))?;
        Ok(Var {
            name: name.to_string(),
            value,
            size,
            depth,
        })
    }

    /// A value as the trace keeps it: itself, or a description when it is large; counted.
    pub(super) fn traced(&mut self, v: &Value) -> R<Value> {
        let (size, _) = measure(v);
        let kept = if size > MAX_TRACE_VALUE_BYTES {
            trace_summary(v, size)
        } else {
            v.clone()
        };
        self.hold(size.min(MAX_TRACE_VALUE_BYTES), "the trace")?;
        Ok(kept)
    }
}
