// Seed 002, example 08: a fragment, in a main func.
import llm Qwen from "ollama://localhost:11434/qwen3.6"

main agent Example {
    model Qwen

    main func(input) {
        return generate({ input: "Extract facts" }) {
            return {
                ok boolean
                title string
                items list[json]
                meta json
            }
        }
    }
}
