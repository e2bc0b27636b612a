// Seed 002, example 05: a fragment, wrapped in a program with the Worker agent it calls.
import llm Qwen from "ollama://localhost:11434/qwen3.6"

agent Worker {
    main func run(input) {
        return input
    }
}

main agent Example {
    model Qwen

    main func(input) {
        result = Worker(input)
        result = Worker.run(input)
    }
}
