// Seed 002, example 18: a fragment, with the tool import.
import llm Qwen from "ollama://localhost:11434/qwen3.6"
import tool Grep from "sh://grep"

main agent Example {
    model Qwen

    main func(input) {
        matches = Grep.run({
            path: "src"
            pattern: "TODO"
            include: "*.ts"
            max: 100
        })

        return matches
    }
}
