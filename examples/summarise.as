// A file summariser: the imported file is context only once it is used, cut at 4,000
// characters.
//
//   keyless-host as run examples/summarise.as --mock answers.json
import llm Fast from "ollama://localhost:11434/qwen3.6"
import file Notes from "./notes.md"

main agent Summariser {
    model Fast
    role "Summariser"
    description "Summarise faithfully; never invent."

    main func(input) {
        use Notes < 4k
        return generate({
            input: "Summarise the notes in three bullet points and give them a title."
        }) {
            return {
                title string
                bullets list[string]
            }
        }
    }
}
