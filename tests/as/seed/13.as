// Seed 002, example 13: a fragment, with the attempt function it calls.
import llm Qwen from "ollama://localhost:11434/qwen3.6"

main agent Example {
    model Qwen

    main func(input) {
        repeat * 3 {
            result = attempt(input)
            if result.ok {
                return result
            }
        }

        return none
    }

    func attempt(input) {
        return { ok: true }
    }
}
