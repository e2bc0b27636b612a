// Triage a bug report with the chat you already have open: no API key. Each generate goes to
// the chat tab that answers programs (keyless popup: "Answer .as programs here") while
// keyless-host serve runs; the answer is read back from the page.
//
//   keyless-host as run examples/chat/triage.as --input '{"report": "Saving a file whose name has a space crashes the app."}'
//
// Swap the import for "openai://gpt-4.1-mini" (with OPENAI_API_KEY set) and the program runs
// unchanged against the API.
import llm Chat from "keyless://chat"

main agent Triage {
    model Chat
    role "Maintainer"
    description "Triage bug reports for a small open-source project."

    main func(input {
        report string
    }) {
        use input.report
        label = generate({ input: "Classify the report.", attempts: 2 }) {
            return {
                kind string
                severity number
            }
        }
        use label.kind
        plan = generate({
            input: "List the steps to reproduce it, and a one-line title for the issue."
            attempts: 3
        }) {
            return {
                title string
                steps list[string]
            }
        }
        return {
            title: plan.title
            kind: label.kind
            severity: label.severity
            steps: plan.steps
        }
    }
}
