// The names the content script and the page script (page.ts) share about code blocks that are
// editors: which elements are editors, the attributes they write on them, and the events.

/// The editors whose whole text lives in their model (CodeMirror 6 and 5, Monaco, Ace).
export const EDITORS = ".cm-editor, .monaco-editor, .CodeMirror, .ace_editor";
/// Where the page script writes an editor's whole text.
export const EDITOR_TEXT = "data-keyless-code";
/// What the content script marks on an editor to read through the site's copy button.
export const WANT_COPY = "data-keyless-copy";
/// The content script asks the page script to write every editor's text.
export const READ_EDITORS = "keyless-read-editors";
/// The content script asks the page script to use the copy buttons of the editors it marked.
export const COPY_EDITORS = "keyless-copy-editors";
