// Seed 002, example 10: a fragment, in a main func.
import llm Qwen from "ollama://localhost:11434/qwen3.6"

main agent Example {
    model Qwen

    main func(input) {
        answer = generate({
            input: "Answer using the selected context."
            limit: 800
            attempts: 3
            debug: true
        }) {
            return {
                ok boolean
                answer string
                reason string
            }
        }

        return answer
    }
}
