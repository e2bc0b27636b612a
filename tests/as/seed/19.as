// Seed 002, example 19: a fragment, with the tool import.
import llm Qwen from "ollama://localhost:11434/qwen3.6"
import tool Sed from "sh://sed"

main agent Example {
    model Qwen

    main func(input) {
        lines = Sed.run({
            path: "src/main.as"
            start: 1
            max: 20
        })

        return lines
    }
}
