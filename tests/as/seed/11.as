// Seed 002, example 11: a fragment, with the answer and the fallback function it names.
import llm Qwen from "ollama://localhost:11434/qwen3.6"

main agent Example {
    model Qwen

    main func(input) {
        answer = { ok: true }
        if answer.ok and not input.dry_run {
            return answer
        } else {
            return fallback(answer)
        }
    }

    func fallback(answer) {
        return answer
    }
}
