// Seed 002, example 17: a fragment, with the tool import.
import llm Qwen from "ollama://localhost:11434/qwen3.6"
import tool Find from "sh://find"

main agent Example {
    model Qwen

    main func(input) {
        files = Find.run({
            path: "."
            name: "*.ts"
            type: "file"
            max: 50
        })

        return files
    }
}
