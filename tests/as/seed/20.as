// Seed 002, example 20: a fragment, with the tool import and the effects it undoes.
import llm Qwen from "ollama://localhost:11434/qwen3.6"
import tool File from "file://workspace"

main agent Example {
    model Qwen

    main func(input) {
        content = File.read({ path: "README.md" })
        entries = File.list({ path: "src" })
        result = File.write({ path: "output.md", content: "# Result" })
        result = File.patch({ path: "file.as", search: "old", replace: "new" })
        effects = [result]
        result = File.undo(effects)

        return result
    }
}
