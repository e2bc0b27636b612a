// Seed 002, example 12: a fragment, with the observe function it calls.
import llm Qwen from "ollama://localhost:11434/qwen3.6"

main agent Example {
    model Qwen

    main func(input) {
        done = false

        loop until done < 6 {
            observation = observe(input)
            done = observation.ok
        }
    }

    func observe(input) {
        return { ok: true }
    }
}
